"""Ctrl-C at any moment of a console script is one line and exit status 130 (commands/entry.py): during
the command's imports (before `main`, where it printed a traceback) and while the program runs.

The interrupt is sent when the process has loaded a given extension module (read from /proc/PID/maps),
so each case hits the same phase whatever the machine's load: `_yaml` and `cygrpc` (gRPC, imported by
pulumi) load while the command's modules import, `_pydantic_core` once the stack model is imported. A render
of three stacks is interrupted once the first stack's files are being written (pygal, imported for its capacity
chart, loads `_elementtree`): the other two stacks' programs are still to run under the SDK's mocks, whatever the
machine's speed (a fixed wait after the imports had let a fast machine finish first)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.rendered import ROOT

pytestmark = pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs /proc (Linux)")


# Starts the command with SIGINT at its default, as a terminal's shell does: a test run launched in the
# background without job control (`pytest &` in a script) passes SIGINT on ignored, and Python keeps
# ignoring it. (Not preexec_fn: unsafe while the session's background render thread runs.) exec keeps the PID.
def started_with(disposition: str) -> list[str]:
    return [
        sys.executable,
        "-c",
        f"import os, signal, sys; signal.signal(signal.SIGINT, signal.{disposition}); "
        "os.execv(sys.argv[1], sys.argv[1:])",
    ]


INTERRUPTIBLE = started_with("SIG_DFL")
# As `nohup` or a shell's background job without job control starts it: SIGINT ignored.
NOT_INTERRUPTIBLE = started_with("SIG_IGN")


def interrupted_when_loaded(command: list[str], library: str, start: list[str] = INTERRUPTIBLE) -> tuple[int, str]:
    process = subprocess.Popen(
        [*start, *command], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    maps = Path(f"/proc/{process.pid}/maps")
    deadline = time.monotonic() + 120
    while process.poll() is None and time.monotonic() < deadline:
        try:
            if library in maps.read_text():
                break
        except OSError:
            break
        time.sleep(0.005)
    assert process.poll() is None, "the command ended before the interrupt"
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    return process.returncode, stderr


BIN = Path(sys.executable).parent


@pytest.mark.parametrize(
    ("command", "library"),
    [
        (["render", "dev", "--out", "{out}"], "_yaml"),
        (["render", "dev", "--out", "{out}"], "cygrpc"),
        (["render", "dev", "--out", "{out}"], "_pydantic_core"),
        (["plan", "dev"], "cygrpc"),
        (["check-policies", "{out}"], "_yaml"),
    ],
    ids=["render-imports", "render-pulumi-import", "render-model-import", "plan-imports", "check-policies-imports"],
)
def test_an_interrupt_is_one_line_and_130(command: list[str], library: str, tmp_path: Path) -> None:
    argv = [str(BIN / command[0]), *(part.format(out=tmp_path / "out") for part in command[1:])]
    status, stderr = interrupted_when_loaded(argv, library)
    assert (status, stderr) == (130, f"{command[0]}: interrupted\n")


def test_an_interrupt_while_the_programs_run_is_one_line_and_130(tmp_path: Path) -> None:
    argv = [str(BIN / "render"), "dev", "staging", "prod", "--out", str(tmp_path / "out")]
    status, stderr = interrupted_when_loaded(argv, "_elementtree")
    # dev's lines (its policy advisories) came before; the interrupt is the last line and the only new one
    assert status == 130, stderr
    assert stderr.endswith("render: interrupted\n") and stderr.count("interrupted") == 1, stderr
    assert "Traceback" not in stderr, stderr
    assert not (tmp_path / "out" / "prod").exists()


def test_the_entry_module_imports_only_what_the_interpreter_holds_before_its_handler() -> None:
    """An attacker: Ctrl-C 15 ms after the start printed a traceback from commands/entry.py, which imported `typing`
    (milliseconds) before the handler was in place. Importing it now loads only the package, itself and built-in
    modules (compiled into the interpreter: nothing to read or run), so the handler follows at once."""
    # the snapshot before anything else is imported (json would bring re, enum, functools and collections)
    script = (
        "import sys; before = set(sys.modules); import commands.entry; loaded = sorted(set(sys.modules) - before); "
        "import json; print(json.dumps(loaded))"
    )
    completed = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True)
    loaded = set(json.loads(completed.stdout))
    assert loaded - {"commands", "commands.entry"} <= set(sys.builtin_module_names), loaded


def test_an_ignored_interrupt_stays_ignored() -> None:
    # started with SIGINT ignored, the command keeps ignoring it (commands/entry.py), as Python itself does
    status, stderr = interrupted_when_loaded([str(BIN / "plan"), "dev"], "cygrpc", start=NOT_INTERRUPTIBLE)
    assert status == 0, stderr
    assert "interrupted" not in stderr and "Traceback" not in stderr
