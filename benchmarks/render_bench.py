"""Render and test-suite benchmark: what a render costs beyond importing what it needs.

Floor: a fresh process that imports exactly the third-party modules a render of every stack loads
(pulumi, the provider submodules it really executes, pulumi_policy, pydantic, yaml, ...), and
nothing of the project. Render: a fresh process running `render dev staging prod` (every stack in
one process). The two run interleaved (floor, render, floor, render, ...) so that a noisy machine
biases neither side; the ratio of the medians is the figure (target: at most 1.3x). Then the suite:
the pytest run `make test` ends with, warm (after one untimed run), paired with a fresh process's
`render dev` (one render) in turn, suite, render, suite, render, ...: the suite's median against its
target of 30 s, and the median of the pairs' ratios against its target of 20x one render (a ratio
from the same minutes holds on a machine that other work slows down). The load average is printed
before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import suite_time  # beside this script

ROOT = Path(__file__).resolve().parent.parent
STACKS = ("dev", "staging", "prod")
RENDER_TARGET_RATIO = 1.3
SUITE_TARGET_SECONDS = 30.0
SUITE_TARGET_RATIO = 20.0
# The pytest line of `make test` (Makefile), after its lint and type check.
SUITE = [str(ROOT / ".venv" / "bin" / "pytest"), "--numprocesses", "auto", "--dist", "worksteal", "-q"]
# The console script a user runs (commands/entry.py, then the command's module).
RENDER = str(ROOT / ".venv" / "bin" / "render")
# Every command here runs as `make` runs it: the Makefile unexports PYTHONDONTWRITEBYTECODE, so the project's
# modules and pytest's rewritten test modules come from their bytecode caches; with it set (this machine
# sets it), each process compiles them again (pytest's collection alone: 7.9 s against 3.2 s).
ENVIRONMENT = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}


def loaded_modules(stacks: tuple[str, ...]) -> list[str]:
    """The third-party modules a render of `stacks` executes. The providers import submodules
    lazily: a module that is only a lazy stub in sys.modules was never executed and is left out."""
    script = f"""
import json, sys, sysconfig, tempfile, types
from pathlib import Path
from commands.render import command as render
render.main([*{list(stacks)!r}, "--out", tempfile.mkdtemp()])
site = sysconfig.get_paths()["purelib"]
loaded = [name for name, module in list(sys.modules.items())
          if type(module) is types.ModuleType and (getattr(module, "__file__", None) or "").startswith(site)]
print(json.dumps(sorted(loaded)))
"""
    completed = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True, timeout=600
    )
    return list(json.loads(completed.stdout.strip().splitlines()[-1]))


class CommandFailedError(Exception):
    """A timed command ended with an error: its time means nothing."""


def timed(command: list[str], environment: dict[str, str] = ENVIRONMENT) -> float:
    start = time.perf_counter()
    completed = subprocess.run(command, cwd=ROOT, env=environment, capture_output=True, timeout=1800, check=False)
    if completed.returncode != 0:
        lines = (completed.stdout + completed.stderr).decode(errors="replace").strip().splitlines()
        raise CommandFailedError(
            f"{' '.join(command[:2])} ... ended with exit status {completed.returncode} "
            f"({lines[-1] if lines else 'no output'}): nothing is timed; run it alone to see why"
        )
    return time.perf_counter() - start


def interleaved(
    commands: list[list[str]], runs: int, warm_ups: list[tuple[list[str], dict[str, str]]] | None = None
) -> list[list[float]]:
    """Times of each command, in turn A B C A B C ..., after one untimed run of each (or the `warm_ups`)."""
    for command, environment in warm_ups or [(command, ENVIRONMENT) for command in commands]:
        timed(command, environment)
    times: list[list[float]] = [[] for _ in commands]
    for _ in range(runs):
        for command, command_times in zip(commands, times, strict=True):
            command_times.append(timed(command))
    return times


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.1f} / {five:.1f} / {fifteen:.1f} (1 / 5 / 15 min) on {os.cpu_count()} cores"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=5, help="timed floor/render pairs")
    parser.add_argument("--suite-runs", type=int, default=3, help="timed suite/render pairs (0: skip)")
    args = parser.parse_args()

    print(f"before: {load()}")
    modules = loaded_modules(STACKS)
    imports = "".join(f"importlib.import_module({name!r})\n" for name in modules)
    floor_command = [sys.executable, "-c", "import importlib\n" + imports]
    # The render imports with the garbage collector paused (commands/entry.py, then its first program run in
    # commands/engine/mocks.py): the same for the floor.
    paused_floor_command = [sys.executable, "-c", "import gc, importlib\ngc.disable()\n" + imports]
    with tempfile.TemporaryDirectory() as out:
        render_command = [RENDER, *STACKS, "--out", out]
        floor_times, paused_times, render_times = interleaved(
            [floor_command, paused_floor_command, render_command], args.runs
        )
    floor, paused, rendered = (statistics.median(times) for times in (floor_times, paused_times, render_times))
    print(f"import floor ({len(modules)} third-party modules a render loads): median {floor:.2f} s of {args.runs}")
    print(f"import floor, garbage collector paused as the render does: median {paused:.2f} s of {args.runs}")
    print(f"render {' '.join(STACKS)} (one process): median {rendered:.2f} s of {args.runs}")
    for label, base in (("import floor", floor), ("paused import floor", paused)):
        ratio = rendered / base
        verdict = "meets" if ratio <= RENDER_TARGET_RATIO else "misses"
        print(f"render of {len(STACKS)} stacks / {label} = {ratio:.2f}x ({verdict} the {RENDER_TARGET_RATIO}x target)")

    if args.suite_runs:
        with tempfile.TemporaryDirectory() as out, tempfile.TemporaryDirectory() as counts:
            one_render = [RENDER, "dev", "--out", out]
            # The untimed run counts where the suite's CPU goes (benchmarks/suite_time.py), the timed ones are plain.
            counted = {
                **ENVIRONMENT,
                suite_time.DIRECTORY_VARIABLE: counts,
                "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(__file__).parent), os.environ.get("PYTHONPATH")])),
            }
            warm_ups = [([*SUITE, "-p", "suite_time"], counted), (one_render, ENVIRONMENT)]
            suite_times, render_times = interleaved([SUITE, one_render], args.suite_runs, warm_ups)
            breakdown = suite_time.summary(Path(counts), os.cpu_count() or 1)
        suite_seconds, render_time = statistics.median(suite_times), statistics.median(render_times)
        ratio = statistics.median(suite / render for suite, render in zip(suite_times, render_times, strict=True))
        verdict = "meets" if suite_seconds <= SUITE_TARGET_SECONDS else "misses"
        print(
            f"suite (make test's pytest, warm): median {suite_seconds:.1f} s of {args.suite_runs} "
            f"({verdict} the {SUITE_TARGET_SECONDS:.0f} s target)"
        )
        print(f"one render (render dev, fresh process), paired with each suite run: median {render_time:.2f} s")
        verdict = "meets" if ratio <= SUITE_TARGET_RATIO else "misses"
        print(
            f"suite / one render = {ratio:.1f}x, median of the {args.suite_runs} pairs "
            f"({verdict} the {SUITE_TARGET_RATIO:.0f}x target)"
        )
        print("\n".join(breakdown))
    print(f"after: {load()}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except CommandFailedError as error:
        sys.exit(f"bench: {error}")
