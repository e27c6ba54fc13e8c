"""The capacity model: expected throughput, latency and cost, goal sizing, its report and the `plan` command."""
