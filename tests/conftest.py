from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.rendered import RenderedStack, run_render

STACKS = ("dev", "staging", "prod")

RenderStack = Callable[..., RenderedStack]


@pytest.fixture(scope="session")
def render_stack(tmp_path_factory: pytest.TempPathFactory) -> RenderStack:
    """Render a stack (or a stack file) once per session through the real `render` command."""
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


@pytest.fixture(scope="session", params=STACKS)
def stack(request: pytest.FixtureRequest, render_stack: RenderStack) -> RenderedStack:
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
