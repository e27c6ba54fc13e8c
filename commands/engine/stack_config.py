"""A console command's stack: the STACK argument (or --config-file) and its validated config, read
through the same engine settings `render` uses."""

from __future__ import annotations

import argparse
import sys

from commands.engine import mocks
from commands.io.cli import STACK_HELP, StackRef, path_argument, stack_ref
from commands.stackfile import stack_settings
from stacks.config.stack import StackConfig
from stacks.load.loader import raw_project_config, validate


def load_config(stack: StackRef, command: str) -> StackConfig:
    """The stack's validated config; what the stack file leaves unknown offline (ESC) is said on stderr."""
    stack_settings.check_project(stack.project)
    settings = stack_settings.load_stack_settings(stack.name, stack.file)
    mocks.apply_settings(settings)
    config = validate(raw_project_config(settings.project))
    for note in stack_settings.stack_file_notes(settings):
        print(f"{command}: note: {note}", file=sys.stderr)
    return config


def add_stack_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("stack", metavar="STACK", help=STACK_HELP)
    parser.add_argument(
        "--config-file", type=path_argument, metavar="FILE", help="read the stack's settings from this file instead"
    )


def stack_of(args: argparse.Namespace) -> StackRef:
    """The STACK argument, with --config-file in place of its stack file when given."""
    stack = stack_ref(args.stack)
    return StackRef(stack.name, args.config_file, stack.project) if args.config_file is not None else stack
