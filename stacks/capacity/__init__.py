"""The capacity model: expected throughput, latency and cost, goal sizing, and its report and chart."""
