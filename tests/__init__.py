"""The test suite, by package (components/, stacks/, policies/, vendored/); shared helpers at this level."""
