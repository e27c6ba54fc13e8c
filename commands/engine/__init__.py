"""The program run under the Pulumi SDK's mocks (the one difference from `pulumi up`), secrets, property paths."""
