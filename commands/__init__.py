"""The console commands (one subpackage each; `[project.scripts]` in pyproject.toml lists them) and what
only they use: the program under the SDK's mocks, stack files, and the output-folder contract. `pulumi up`
runs none of it."""
