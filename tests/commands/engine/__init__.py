"""Tests of commands/engine."""
