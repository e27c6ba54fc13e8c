"""Render stacks through the `render` command and read back what it wrote.

`run_render` runs the command's `main()` in this process (each render resets the Pulumi runtime, so
it writes exactly what a fresh process writes); `run_render_subprocess` runs it as a new process,
for the few tests of the command-line contract itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import filecmp
import io
import json
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import yaml

if TYPE_CHECKING:
    from commands.engine import mocks
    from commands.io.states import RenderStates
    from commands.stackfile import stack_settings

ROOT = Path(__file__).resolve().parent.parent
RENDER_TIMEOUT_SECONDS = 240
T = TypeVar("T")
STACK_FILES = sorted(path.name.removeprefix("Pulumi.").removesuffix(".yaml") for path in ROOT.glob("Pulumi.*.yaml"))


@dataclass(frozen=True)
class CommandRun:
    returncode: int
    stdout: str
    stderr: str


def as_a_new_process(function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Call `function` in a thread of its own, as the program runs in a new process: a fresh context
    (the SDK keeps its settings in context variables), its own event loop, and the command's
    shallow stack (the SDK records a stack trace per resource; under pytest's frames that is
    several times the work). What it raises is raised here."""
    result: list[T] = []
    failure: list[BaseException] = []

    def call() -> None:
        asyncio.set_event_loop(loop := asyncio.new_event_loop())
        try:
            result.append(function(*args, **kwargs))
        except BaseException as error:
            failure.append(error)
        finally:
            loop.close()

    thread = threading.Thread(target=call, name=getattr(function, "__name__", "program"), daemon=True)
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return result[0]


def run_main(main: Callable[[list[str]], int], *args: str) -> CommandRun:
    """A command's `main(ARGS)` (what its console script calls) in this process: exit status and output."""
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            status = main(list(args))
        except SystemExit as exit_:  # argparse refusing the arguments
            status = exit_.code if isinstance(exit_.code, int) else 2
    return CommandRun(status, stdout.getvalue(), stderr.getvalue())


def run_render(*args: str) -> CommandRun:
    """`render ARGS` in this process (`run_main`), run `as_a_new_process`."""
    # Imported here, not with this module: the pytest-xdist controller loads conftest.py (and so this
    # module) but runs no test, and need not import the providers.
    from commands.render import command as render

    return run_main(lambda argv: as_a_new_process(render.main, argv), *args)


def run_program(
    settings: stack_settings.StackSettings, monitor: mocks.RecordingMonitor | None = None
) -> mocks.RunResult:
    """`mocks.run_program` in this process (`as_a_new_process`)."""
    from commands.engine import mocks

    return as_a_new_process(mocks.run_program, settings, monitor=monitor)


def run_render_subprocess(*args: str, timeout: float = RENDER_TIMEOUT_SECONDS) -> CommandRun:
    completed = subprocess.run(
        [sys.executable, "-m", "commands.render.command", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return CommandRun(completed.returncode, completed.stdout, completed.stderr)


@dataclass(frozen=True)
class RenderedStack:
    directory: Path

    @cached_property
    def resources(self) -> list[dict[str, Any]]:
        records: list[dict[str, Any]] = json.loads((self.directory / "resources.json").read_text())
        return records

    @cached_property
    def manifests(self) -> list[dict[str, Any]]:
        return [
            yaml.load(path.read_text(), Loader=yaml.CSafeLoader)
            for path in sorted((self.directory / "manifests").glob("*.yaml"))
        ]

    @cached_property
    def outputs(self) -> dict[str, Any]:
        outputs: dict[str, Any] = json.loads((self.directory / "outputs.json").read_text())
        return outputs

    @cached_property
    def states(self) -> RenderStates:
        """Its states as `preview` reads them (`commands.io.states.load_states`), read once: a preview
        reads them and changes nothing."""
        from commands.io.states import load_states

        return load_states(self.directory)

    @cached_property
    def plan(self) -> str:
        return (self.directory / "plan.md").read_text()

    def of_type(self, type_: str) -> list[dict[str, Any]]:
        return [record for record in self.resources if record["type"] == type_]

    def one(self, type_: str) -> dict[str, Any]:
        matches = self.of_type(type_)
        assert len(matches) == 1, f"expected one {type_}, found {[record['name'] for record in matches]}"
        return matches[0]

    def named(self, name: str) -> dict[str, Any]:
        matches = [record for record in self.resources if record["name"] == name]
        assert len(matches) == 1, f"expected one resource named {name}, found {len(matches)}"
        return matches[0]

    def kind(self, kind: str) -> list[dict[str, Any]]:
        return [manifest for manifest in self.manifests if manifest["kind"] == kind]

    def all_text(self) -> str:
        return "\n".join(path.read_text() for path in sorted(self.directory.rglob("*")) if path.is_file())


def assert_same_files(first: Path, second: Path, ignore: tuple[str, ...] = ()) -> None:
    """Two render directories hold the same files, byte for byte (but the names in `ignore`)."""
    for directory in ("", "manifests"):
        left, right = first / directory, second / directory
        comparison = filecmp.dircmp(left, right, ignore=list(ignore))
        assert not comparison.left_only and not comparison.right_only, (comparison.left_only, comparison.right_only)
        files = sorted(path.name for path in left.iterdir() if path.is_file() and path.name not in ignore)
        _, mismatch, errors = filecmp.cmpfiles(left, right, files, shallow=False)
        assert not mismatch and not errors, f"{directory or '.'}: {mismatch}"
