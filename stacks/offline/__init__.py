"""The offline commands: the program under the SDK mocks, render, preview, plan, bench-compare and their files."""
