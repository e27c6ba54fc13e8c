"""`bench-compare`: a benchmark run next to the plan; `--record` adds it to the measurements."""
