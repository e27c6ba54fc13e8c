"""What `pulumi up` runs: the typed configuration, the capacity model, config to Args, loading and the composition."""
