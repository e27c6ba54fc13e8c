"""Time the offline render of each stack against the floor of importing the SDK modules it uses.

Each measurement is a fresh process (median of --runs). The floor imports pulumi and exactly the
pulumi_gcp / pulumi_kubernetes submodules that a prod render loads. Target: prod <= 1.5x floor.
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
TARGET_RATIO = 1.5
PROVIDER_PACKAGES = ("pulumi_gcp", "pulumi_kubernetes")


def touched_modules(stack: str) -> list[str]:
    """The provider modules a render of `stack` really loads. The providers import their submodules
    lazily, so a module that is only a lazy stub in sys.modules was never executed and is left out."""
    script = f"""
import json, sys, tempfile, types
from pathlib import Path
from stacks import render
render.render({stack!r}, out=Path(tempfile.mkdtemp()))
loaded = [name for name, module in list(sys.modules.items())
          if name.startswith({PROVIDER_PACKAGES!r}) and type(module) is types.ModuleType]
print(json.dumps(sorted(loaded)))
"""
    completed = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True, timeout=300
    )
    return list(json.loads(completed.stdout.strip().splitlines()[-1]))


def timed(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, cwd=ROOT, check=True, capture_output=True, timeout=300)
    return time.perf_counter() - start


def median_seconds(command: list[str], runs: int) -> float:
    timed(command)  # warm the file cache
    return statistics.median(timed(command) for _ in range(runs))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    modules = touched_modules("prod")
    floor_script = "import importlib, pulumi\n" + "".join(
        f"importlib.import_module({name!r}).__dict__\n" for name in modules
    )
    floor_command = [sys.executable, "-c", floor_script]
    floor = median_seconds(floor_command, args.runs)
    print(f"import floor (pulumi + the {len(modules)} provider modules a prod render loads): {floor:.2f} s")
    results = {}
    with tempfile.TemporaryDirectory() as out:
        for stack in STACKS:
            command = [sys.executable, "-m", "stacks.render", stack, "--out", f"{out}/{stack}"]
            results[stack] = median_seconds(command, args.runs)
            print(f"render {stack:8s} {results[stack]:6.2f} s  = {results[stack] / floor:4.2f}x floor")
    ratio = results["prod"] / floor
    verdict = "meets" if ratio <= TARGET_RATIO else "misses"
    print(f"prod render / import floor = {ratio:.2f} ({verdict} the {TARGET_RATIO}x target)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
