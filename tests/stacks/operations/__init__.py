"""Tests of stacks/operations.py."""
