"""The test suite, one folder per package (commands/, common/, components/, policies/, schemas/,
stacks/; product/ for the repository as a whole); shared helpers at this level."""
