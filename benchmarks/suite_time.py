"""Where the test suite's CPU goes: a pytest plugin `render_bench.py` loads into its untimed suite run.

Each test's CPU (its process's, and its subprocesses' apart), and every run of a program under the SDK's
mocks (`commands.engine.mocks.run_under_mocks`: a render runs the stack's program twice, the preview's
setting tracer declares one component at a time, a component test declares its one component), sorted
by who asked for it; and every in-process render whole (`commands.render.command.render`: its runs, the
policy check, the secret scan, the files), which bounds what the suite would cost were every render free.
Under pytest-xdist each worker writes its own file into $SUITE_TIME_DIR; `summary` reads them all.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

import pytest

DIRECTORY_VARIABLE = "SUITE_TIME_DIR"
# Who asked for a program run, by the module of the first caller frame that is one of these.
CALLERS = {"commands.render.command": "renders", "commands.preview.setting_sources": "the setting tracer"}
OTHER_CALLER = "single components and other programs"


def _caller_kind() -> str:
    frame = sys._getframe(2)
    while frame is not None:
        kind = CALLERS.get(frame.f_globals.get("__name__", ""))
        if kind is not None:
            return kind
        frame = frame.f_back  # type: ignore[assignment]
    return OTHER_CALLER


class SuiteTime:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.test_cpu: defaultdict[str, float] = defaultdict(float)
        self.child_cpu: defaultdict[str, float] = defaultdict(float)
        self.runs: Counter[str] = Counter()
        self.run_cpu: defaultdict[str, float] = defaultdict(float)
        self.renders = 0
        self.render_cpu = 0.0

    def counted_render(self, render: Callable[..., Any]) -> Callable[..., Any]:
        """`render` whole: its program runs plus the policy check, the secret scan, plan.md and the files."""

        def counted(*args: Any, **kwargs: Any) -> Any:
            start = time.process_time()
            try:
                return render(*args, **kwargs)
            finally:
                self.renders += 1
                self.render_cpu += time.process_time() - start

        return counted

    def counted(self, run: Callable[..., Any]) -> Callable[..., Any]:
        def counted_run(*args: Any, **kwargs: Any) -> Any:
            kind, start = _caller_kind(), time.process_time()
            try:
                return run(*args, **kwargs)
            finally:
                self.runs[kind] += 1
                self.run_cpu[kind] += time.process_time() - start

        return counted_run

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, None, None]:
        before = os.times()
        yield
        after = os.times()
        test_file = item.nodeid.split("::")[0]
        self.test_cpu[test_file] += after.user - before.user + after.system - before.system
        self.child_cpu[test_file] += (
            after.children_user - before.children_user + after.children_system - before.children_system
        )

    def pytest_sessionfinish(self) -> None:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        document = {
            "testCpu": self.test_cpu,
            "childCpu": self.child_cpu,
            "runs": self.runs,
            "runCpu": self.run_cpu,
            "renders": self.renders,
            "renderCpu": self.render_cpu,
        }
        (self.directory / f"{worker}.json").write_text(json.dumps(document))


def pytest_configure(config: pytest.Config) -> None:
    directory = os.environ.get(DIRECTORY_VARIABLE)
    controller = getattr(config, "workerinput", None) is None and config.getoption("dist", "no") != "no"
    if not directory or controller:
        return  # not asked for, or the pytest-xdist controller (its workers run the tests)
    from commands.engine import mocks
    from commands.render import command

    plugin = SuiteTime(Path(directory))
    mocks.run_under_mocks = plugin.counted(mocks.run_under_mocks)  # type: ignore[method-assign]
    command.render = plugin.counted_render(command.render)  # type: ignore[method-assign]
    config.pluginmanager.register(plugin, "suite_time.counting")


def _largest(item: tuple[str, float]) -> tuple[float, str]:
    return -item[1], item[0]


def summary(directory: Path, cores: int) -> list[str]:
    """The breakdown of the files the workers wrote, as lines to print."""
    test_cpu: defaultdict[str, float] = defaultdict(float)
    child_cpu: defaultdict[str, float] = defaultdict(float)
    runs: defaultdict[str, float] = defaultdict(float)
    run_cpu: defaultdict[str, float] = defaultdict(float)
    renders, render_cpu = 0, 0.0
    for path in sorted(directory.glob("*.json")):
        document = json.loads(path.read_text())
        renders, render_cpu = renders + document["renders"], render_cpu + document["renderCpu"]
        for total, key in ((test_cpu, "testCpu"), (child_cpu, "childCpu"), (runs, "runs"), (run_cpu, "runCpu")):
            for name, value in document[key].items():
                total[name] += value
    all_runs = sum(run_cpu.values())
    lines = [
        f"where the suite's CPU went (its untimed run): the tests {sum(test_cpu.values()):.0f} s, "
        f"their subprocesses {sum(child_cpu.values()):.0f} s",
        f"  program runs under the mocks: {sum(runs.values()):.0f}, {all_runs:.0f} s of CPU, so at least "
        f"{all_runs / cores:.0f} s on {cores} cores before any test's own work",
    ]
    lines += [f"    {kind}: {runs[kind]:.0f} runs, {cpu:.1f} s" for kind, cpu in sorted(run_cpu.items(), key=_largest)]
    outside = sum(test_cpu.values()) + sum(child_cpu.values()) - all_runs
    lines.append(
        f"  the tests' CPU outside those runs (their subprocesses' included): {outside:.0f} s, so at least "
        f"{outside / cores:.0f} s on {cores} cores were every program run in a test free"
    )
    without_renders = sum(test_cpu.values()) + sum(child_cpu.values()) - render_cpu
    lines.append(
        f"  in-process renders (`render` whole: its two program runs, the policy check, the secret scan, the "
        f"files): {renders}, {render_cpu:.0f} s; the tests' CPU outside them {without_renders:.0f} s, so at least "
        f"{without_renders / cores:.0f} s on {cores} cores were every render free"
    )
    lines.append("  the heaviest test files (CPU with their subprocesses'):")
    with_children = {name: test_cpu[name] + child_cpu[name] for name in test_cpu}
    lines += [f"    {cpu:6.1f} s  {name}" for name, cpu in sorted(with_children.items(), key=_largest)[:8]]
    return lines
