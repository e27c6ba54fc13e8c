from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.rendered import RENDER_TIMEOUT_SECONDS, ROOT, STACK_FILES, RenderedStack, RenderRun, run_render

# The shipped environments, for tests that assert what a preset gives.
STACKS = ("dev", "staging", "prod")

RenderStack = Callable[..., RenderedStack]


def pytest_report_header() -> str:
    return "stack files checked: " + ", ".join(f"Pulumi.{name}.yaml" for name in STACK_FILES)


CHECKOV = ROOT / ".tools" / "checkov" / "bin" / "checkov"
CHECKOV_TIMEOUT_SECONDS = 300


class CommandLineRender:
    """`render` of every stack file plus one that violates a mandatory policy, as a real process,
    then checkov over the stack files' manifests (from its own environment, `make checkov`).

    Started as soon as the tests are collected: both run on the second core while the suite
    imports the providers and renders in-process. The in-process renders are byte-identical to
    this one (test_render checks), so checkov scans exactly what the suite asserts on."""

    VIOLATING = "violating"

    def __init__(self) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="render-cli-"))
        violating = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
        violating["config"]["gke-b200-serving:engine"] = {"gpuMemoryUtilization": 0.95}
        violating_file = self.directory / f"Pulumi.{self.VIOLATING}.yaml"
        violating_file.write_text(yaml.safe_dump(violating))
        command = [sys.executable, "-m", "stacks.render", *STACK_FILES, str(violating_file), "--out", str(self.out)]
        self.process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.render_run: RenderRun | None = None
        self.checkov_run: subprocess.CompletedProcess[str] | None = None
        self.worker = threading.Thread(target=self._render_then_scan, daemon=True)
        self.worker.start()

    @property
    def out(self) -> Path:
        return self.directory / "out"

    def _render_then_scan(self) -> None:
        stdout, stderr = self.process.communicate(timeout=RENDER_TIMEOUT_SECONDS)
        self.render_run = RenderRun(self.process.returncode, stdout, stderr)
        if CHECKOV.exists():
            scan = ["--directory", str(self.out), "--skip-path", self.VIOLATING, "--framework", "kubernetes"]
            self.checkov_run = subprocess.run(
                [str(CHECKOV), *scan, "--skip-download", "--output", "json"],
                capture_output=True,
                text=True,
                timeout=CHECKOV_TIMEOUT_SECONDS,
                check=False,
            )

    def finished(self) -> CommandLineRender:
        self.worker.join(RENDER_TIMEOUT_SECONDS + CHECKOV_TIMEOUT_SECONDS)
        assert not self.worker.is_alive(), "the command-line render or checkov did not finish"
        return self

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.worker.join(CHECKOV_TIMEOUT_SECONDS)
        shutil.rmtree(self.directory, ignore_errors=True)


COMMAND_LINE_RENDER = pytest.StashKey[CommandLineRender]()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Start the background render if a test needs it, and run those tests last: by then it is done."""
    background = {"command_line_render", "checkov_report"}
    waiting = [item for item in items if background & set(getattr(item, "fixturenames", ()))]
    if waiting:
        config.stash[COMMAND_LINE_RENDER] = CommandLineRender()
        items[:] = [item for item in items if item not in waiting] + waiting


def pytest_unconfigure(config: pytest.Config) -> None:
    if COMMAND_LINE_RENDER in config.stash:
        config.stash[COMMAND_LINE_RENDER].stop()


@pytest.fixture(scope="session")
def command_line_render(pytestconfig: pytest.Config) -> Iterator[tuple[RenderRun, Path]]:
    """The finished command-line render and its output directory (one folder per stack)."""
    background = pytestconfig.stash[COMMAND_LINE_RENDER].finished()
    assert background.render_run is not None
    yield background.render_run, background.out


@pytest.fixture(scope="session")
def checkov_report(pytestconfig: pytest.Config) -> list[dict[str, Any]]:
    """checkov's JSON reports on the manifests of every stack file (file paths start /STACK/)."""
    background = pytestconfig.stash[COMMAND_LINE_RENDER].finished()
    if background.checkov_run is None:
        pytest.fail(f"{CHECKOV.relative_to(ROOT)} is missing: run `make checkov` (make test does)")
    report = json.loads(background.checkov_run.stdout)
    return report if isinstance(report, list) else [report]


@pytest.fixture(scope="session")
def render_stack(tmp_path_factory: pytest.TempPathFactory) -> RenderStack:
    """Render a stack (or a stack file) once per session, in this process, through `render`'s main()."""
    cache: dict[tuple[str, str | None], RenderedStack] = {}

    def render(stack: str, config_file: Path | None = None) -> RenderedStack:
        key = (stack, str(config_file) if config_file else None)
        if key not in cache:
            out = tmp_path_factory.mktemp(f"render-{stack}")
            args = [stack, "--out", str(out)]
            if config_file is not None:
                args += ["--config-file", str(config_file)]
            run = run_render(*args)
            assert run.returncode == 0, f"render {stack} failed ({run.returncode}): {run.stderr}"
            cache[key] = RenderedStack(out)
        return cache[key]

    return render


@pytest.fixture(scope="session", params=STACK_FILES)
def stack(request: pytest.FixtureRequest, render_stack: RenderStack) -> RenderedStack:
    """Every stack file in the repository, rendered."""
    return render_stack(request.param)


@pytest.fixture(scope="session")
def dev(render_stack: RenderStack) -> RenderedStack:
    return render_stack("dev")


@pytest.fixture(scope="session")
def staging(render_stack: RenderStack) -> RenderedStack:
    return render_stack("staging")


@pytest.fixture(scope="session")
def prod(render_stack: RenderStack) -> RenderedStack:
    return render_stack("prod")
