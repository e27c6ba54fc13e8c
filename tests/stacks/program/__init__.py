"""Tests of stacks/program.py."""
