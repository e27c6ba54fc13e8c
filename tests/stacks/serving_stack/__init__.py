"""Tests of stacks/serving_stack.py."""
