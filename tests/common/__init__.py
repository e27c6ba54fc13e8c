"""Tests of stacks/: config, loading, the full-stack renders, the offline commands, preview and capacity."""
