"""Pulumi entry point: validate the stack config, declare the stack, export its outputs."""

from stacks.program import deploy

deploy()
