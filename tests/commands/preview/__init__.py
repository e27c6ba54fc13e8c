"""Tests of commands/preview."""
