"""Tests of commands/stackfile."""
