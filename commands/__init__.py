"""The console commands (render, preview, plan, bench-compare, check-policies) and what only they use:
the program under the SDK's mocks, stack files, and the output-folder contract. `pulumi up` runs none of it."""
