"""Tests of stacks/capacity."""
