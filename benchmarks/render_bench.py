"""Render and test-suite benchmark: what a render costs beyond importing what it needs.

Floor: a fresh process that imports exactly the third-party modules a render of every stack loads
(pulumi, the provider submodules it really executes, pulumi_policy, pydantic, yaml, ...), and
nothing of the project. Render: a fresh process running `render dev staging prod` (every stack in
one process). The two run interleaved (floor, render, floor, render, ...) so that a noisy machine
biases neither side; the ratio of the medians is the figure (target: at most 1.3x). Then the whole
`make test`, warm (after one untimed run), against its target of 30 s.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STACKS = ("dev", "staging", "prod")
RENDER_TARGET_RATIO = 1.3
SUITE_TARGET_SECONDS = 30.0


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


def timed(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, cwd=ROOT, check=True, capture_output=True, timeout=1800)
    return time.perf_counter() - start


def interleaved(commands: list[list[str]], runs: int) -> list[list[float]]:
    """Times of each command, in turn A B C A B C ..., after one untimed run of each."""
    for command in commands:
        timed(command)
    times: list[list[float]] = [[] for _ in commands]
    for _ in range(runs):
        for command, command_times in zip(commands, times, strict=True):
            command_times.append(timed(command))
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=5, help="timed floor/render pairs")
    parser.add_argument("--suite-runs", type=int, default=3, help="timed `make test` runs (0: skip)")
    args = parser.parse_args()

    modules = loaded_modules(STACKS)
    imports = "".join(f"importlib.import_module({name!r})\n" for name in modules)
    floor_command = [sys.executable, "-c", "import importlib\n" + imports]
    # The render imports with the garbage collector paused (commands/engine/mocks.py): the same for the floor.
    paused_floor_command = [sys.executable, "-c", "import gc, importlib\ngc.disable()\n" + imports]
    with tempfile.TemporaryDirectory() as out:
        render_command = [sys.executable, "-m", "commands.render.command", *STACKS, "--out", out]
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
        suite = ["make", "test"]
        timed(suite)
        suite_time = statistics.median(timed(suite) for _ in range(args.suite_runs))
        verdict = "meets" if suite_time <= SUITE_TARGET_SECONDS else "misses"
        print(
            f"make test (warm): median {suite_time:.1f} s of {args.suite_runs} "
            f"({verdict} the {SUITE_TARGET_SECONDS:.0f} s target)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
