"""How every console script names a stack and an output folder, tells its version and lists its exit
statuses in `--help` (the errors, pipes and interrupts are `commands/io/console.py`'s)."""

from __future__ import annotations

import argparse
import re
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from commands.entry import invoked_as
from commands.io.console import EXIT_CLOSED_PIPE, EXIT_FAILURE, EXIT_INTERRUPTED, OneLineParser
from common.input_files import InputError
from policies.redaction import secret_kinds

DISTRIBUTION = "b200-serving"
STACK_FILE = re.compile(r"^Pulumi\.(?P<stack>.+)\.ya?ml$")
# The CLI's rule for a stack name (pulumi/pulumi sdk/go/common/tokens/stack_name.go ParseStackName);
# a fully qualified reference is `[ORG/[PROJECT/]]NAME` and its stack file is named after NAME
# (sdk/go/common/workspace/paths.go ProjectStackPath, called with the reference's Name()).
STACK_NAME_PATTERN = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")
QUALIFIED_PARTS_MAX = 3
STACK_HELP = "a stack name (reads Pulumi.STACK.yaml; ORG/PROJECT/STACK also works) or the path of a stack file"
EPILOG_WIDTH = 79


class StackNameError(InputError):
    """A command-line STACK that names no stack (exit status 2, one line)."""


@dataclass(frozen=True)
class StackRef:
    """A stack named on the command line: its name, and the stack file when a path was given
    (None: `Pulumi.NAME.yaml` beside `Pulumi.yaml`)."""

    name: str
    file: Path | None = None
    # the PROJECT of `ORG/PROJECT/NAME`, which must be this project's (the CLI refuses another)
    project: str | None = None


def _only_dots(name: str) -> bool:
    """`.` and `..` fit the CLI's pattern, but a stack's name is a folder of the output (`--out DIR/STACK`):
    they would name the folder itself or its parent."""
    return set(name) == {"."}


def stack_ref(text: str) -> StackRef:
    """The one way every command reads a STACK argument: `prod`, `my-org/gke-b200-serving/prod`,
    `Pulumi.prod.yaml` or `path/to/Pulumi.prod.yaml` (the stack is named after the file), or another
    `.yaml` file (named after its stem)."""
    path = Path(text)
    if text.endswith((".yaml", ".yml")):
        match = STACK_FILE.match(path.name)
        name = match["stack"] if match else path.stem
        if not STACK_NAME_PATTERN.fullmatch(name) or _only_dots(name):
            raise StackNameError(
                f"stack file {text!r}: {name!r} is not a stack name; name the file Pulumi.NAME.yaml with NAME of "
                "letters, digits, '-', '_' or '.' (not of periods only)"
            )
        _refuse_a_secret(name)
        return StackRef(name, path)
    parts = text.split("/")
    if len(parts) > QUALIFIED_PARTS_MAX or not all(
        STACK_NAME_PATTERN.fullmatch(part) and not _only_dots(part) for part in parts
    ):
        raise StackNameError(
            f"stack {text!r}: a stack name may only contain alphanumerics, hyphens, underscores or periods "
            "(at most 100, as ORG/PROJECT/NAME at most), and not of periods only; or give the path of a stack file "
            "Pulumi.NAME.yaml"
        )
    _refuse_a_secret(parts[-1])
    return StackRef(parts[-1], project=parts[1] if len(parts) == QUALIFIED_PARTS_MAX else None)


def _refuse_a_secret(name: str) -> None:
    """A stack's name is in every output (plan.md, the labels, the folder): one shaped like a secret would be refused
    only as the render writes it, exit 1, without naming the argument (an attacker)."""
    kinds = secret_kinds(name)
    if kinds:
        raise StackNameError(
            f"stack name: holds {kinds[0]}, which every output of the stack would show; allowed: a name that is no "
            "secret (rename the stack file, `pulumi stack rename`)"
        )


def path_argument(text: str) -> Path:
    """A FILE or DIR argument: any path but the empty one (`--measurements=` read `.`, the working folder,
    and said only that it was a directory)."""
    if not text:
        raise argparse.ArgumentTypeError("an empty path; allowed: the path of a file or folder")
    return Path(text)


def output_folder(text: str) -> Path:
    """An `--out DIR` argument: a folder path. `-` is refused, as a command-line user reads it as standard
    output, which a folder of files cannot be written to (it made a folder named `-`)."""
    path_argument(text)
    if text == "-":
        raise argparse.ArgumentTypeError(
            "'-' (standard output) cannot hold a folder of files; allowed: a folder path (./- for a folder named -)"
        )
    return Path(text)


def package_version() -> str:
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "unknown (the project is not installed; run `make setup`)"


def exit_codes_epilog(exit_codes: Mapping[int, str]) -> str:
    lines = ["exit status:"]
    codes = {
        EXIT_FAILURE: "an unexpected failure, in one line naming it (a defect to report)",
        **exit_codes,
        EXIT_INTERRUPTED: "interrupted (Ctrl-C)",
        EXIT_CLOSED_PIPE: "standard output closed early (`| head`): the command stops quietly, as a Unix "
        "tool killed by SIGPIPE",
    }
    for code, meaning in sorted(codes.items()):
        lines += textwrap.wrap(meaning, EPILOG_WIDTH, initial_indent=f"  {code:<3}  ", subsequent_indent=" " * 7)
    return "\n".join(lines)


def command_parser(prog: str, description: str, exit_codes: Mapping[int, str]) -> argparse.ArgumentParser:
    """A one-line-error argument parser with the project's `--version` and the exit statuses at the
    end of `--help`."""
    prog = invoked_as(prog)
    parser = OneLineParser(
        prog=prog,
        description=description,
        epilog=exit_codes_epilog(exit_codes),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--version", action="version", version=f"{prog} {package_version()} ({DISTRIBUTION})", help="print the version"
    )
    return parser
