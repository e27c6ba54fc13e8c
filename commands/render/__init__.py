"""`render`: what `pulumi up` would create, written as plain files, with plan.md and capacity.json."""
