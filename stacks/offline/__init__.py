"""The program run without the Pulumi engine: mocks, render, written outputs, plan.md and the preview."""
