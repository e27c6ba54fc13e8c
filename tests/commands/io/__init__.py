"""Tests of commands/io."""
