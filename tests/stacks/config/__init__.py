"""Tests of stacks/config."""
