"""Tests of commands/render."""
