"""The console scripts' first code: Ctrl-C is one line and exit status 130 from the first instant.

A console script imports its command's module before `main` runs, and that import (pulumi, the SDK's
mocks, pydantic, the stack) takes seconds: a Ctrl-C there printed a traceback, and one that cut a lazy
import short left a half-initialised module that failed later with a misleading error ("render failed:
AttributeError: module 'pulumi_gcp.compute' has no attribute 'Network'"). So the handler is installed
first thing, before the command's module is imported, with the interpreter's built-in `_signal` (the `signal` module
itself takes milliseconds to import): it writes `NAME: interrupted` and ends the process at once
(os._exit, exit status 130 as the commands' own handler gives), whatever is being imported or run. An
output folder interrupted mid-write stays recoverable (commands/io/output.py). Only the interpreter's
start-up before this module runs (a few milliseconds) is not covered.
"""

import _signal  # type: ignore[import-not-found,unused-ignore]
import gc
import os
import sys

# Nothing here imports a module the interpreter's start-up has not (an attacker: Ctrl-C 15 ms after the start, while
# `typing` was being imported here, printed a traceback): Any is for the type checker only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

EXIT_INTERRUPTED = 128 + _signal.SIGINT
_NAME = ["command"]
# This package's own name: `commands` in the repository, `gke_b200_serving.commands` in the wheel, whose
# build hook (hatch_build.py) rewrites import statements but not the module names in strings below.
_PACKAGE = __name__.rpartition(".")[0]


def _interrupted(signum: int, frame: object) -> None:
    try:
        os.write(2, f"{_NAME[0]}: interrupted\n".encode())
    finally:
        os._exit(EXIT_INTERRUPTED)


def invoked_as(name: str) -> str:
    """The command's name as the user typed it: the console script's own when it is this command's, as
    the installed package's prefixed `gke-b200-plan` (hatch_build.py), else `name` (`python -m ...`)."""
    script = os.path.basename(sys.argv[0]) if sys.argv else ""
    script = script[: -len(".exe")] if script.lower().endswith(".exe") else script  # pip's Windows launchers
    return script if script == name or script.endswith(f"-{name}") else name


def _run(name: str, module: str, function: str) -> None:
    _NAME[0] = invoked_as(name)
    # An interrupt the caller chose to ignore (a background job of a script, nohup) stays ignored, as
    # Python itself leaves it (it installs its KeyboardInterrupt handler only over the default).
    if _signal.getsignal(_signal.SIGINT) is not _signal.SIG_IGN:
        _signal.signal(_signal.SIGINT, _interrupted)
    sys.exit(_imported(f"{_PACKAGE}.{module}", function)())


def _imported(module: str, name: str) -> "Any":
    """`name` of `module`, imported with the garbage collector paused. An import makes objects that live
    as long as the process (the SDK, pydantic's models, the stack's config classes); collections while it
    runs rescan them over and over, for nothing. What the import made is then frozen, out of the
    collector's view, as the `gc.freeze` documentation advises for objects made at start-up and kept."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return getattr(__import__(module, fromlist=[name]), name)
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()


def render() -> None:
    _run("render", "render.command", "main")


def preview() -> None:
    _run("preview", "preview.command", "main")


def check_policies() -> None:
    _run("check-policies", "check_policies.runner", "main")


def plan() -> None:
    _run("plan", "plan.command", "plan_main")


def bench_compare() -> None:
    _run("bench-compare", "bench_compare.command", "bench_compare_main")
