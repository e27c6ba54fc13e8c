from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.rendered import RENDER_TIMEOUT_SECONDS, ROOT, STACK_FILES, RenderedStack, RenderRun, run_render

# The shipped environments, for tests that assert what a preset gives.
STACKS = ("dev", "staging", "prod")

RenderStack = Callable[..., RenderedStack]


def pytest_report_header() -> str:
    return "stack files checked: " + ", ".join(f"Pulumi.{name}.yaml" for name in STACK_FILES)


@dataclass
class CommandLineRender:
    """`render` of every stack file plus one that violates a mandatory policy, as a real process.

    Started as soon as the tests are collected, so its own imports run on the second core while
    the suite imports the providers in-process."""

    directory: Path
    process: subprocess.Popen[str]

    VIOLATING = "violating"

    @classmethod
    def start(cls) -> CommandLineRender:
        directory = Path(tempfile.mkdtemp(prefix="render-cli-"))
        violating = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
        violating["config"]["gke-b200-serving:engine"] = {"gpuMemoryUtilization": 0.95}
        violating_file = directory / f"Pulumi.{cls.VIOLATING}.yaml"
        violating_file.write_text(yaml.safe_dump(violating))
        out = directory / "out"
        command = [sys.executable, "-m", "stacks.render", *STACK_FILES, str(violating_file), "--out", str(out)]
        process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        return cls(directory, process)

    def result(self) -> RenderRun:
        stdout, stderr = self.process.communicate(timeout=RENDER_TIMEOUT_SECONDS)
        return RenderRun(self.process.returncode, stdout, stderr)

    def stop(self) -> None:
        self.process.kill()
        self.process.communicate()
        shutil.rmtree(self.directory, ignore_errors=True)


COMMAND_LINE_RENDER = pytest.StashKey[CommandLineRender]()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if any("command_line_render" in getattr(item, "fixturenames", ()) for item in items):
        config.stash[COMMAND_LINE_RENDER] = CommandLineRender.start()


def pytest_unconfigure(config: pytest.Config) -> None:
    if COMMAND_LINE_RENDER in config.stash:
        config.stash[COMMAND_LINE_RENDER].stop()


@pytest.fixture(scope="session")
def command_line_render(pytestconfig: pytest.Config) -> Iterator[tuple[RenderRun, Path]]:
    """The finished command-line render and its output directory (one folder per stack)."""
    background = pytestconfig.stash[COMMAND_LINE_RENDER]
    yield background.result(), background.directory / "out"


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
