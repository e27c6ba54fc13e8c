"""The suite's background run (every stack file rendered as a process, then checkov) starts only for
runs that may collect a test waiting for it, and stopping it never leaves a scan running."""

from __future__ import annotations

import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests import conftest
from tests.rendered import ROOT


def _run_of(*arguments: str) -> Any:
    return SimpleNamespace(args=list(arguments), invocation_params=SimpleNamespace(dir=ROOT))


@pytest.mark.parametrize(
    ("arguments", "starts"),
    [
        (("tests",), True),
        (("tests/policies",), True),
        (("tests/policies/test_checkov.py::test_every_stack_file_passes_checkov",), True),
        (("tests/components", "tests/commands/render/test_render.py"), True),
        (("tests/components",), False),
        (("tests/schemas", "tests/common"), False),
        (("tests/components/test_vllm.py::test_x",), False),
        (("tests/no-such-folder",), True),
    ],
)
def test_the_background_run_starts_for_a_run_that_may_wait_for_it(arguments: tuple[str, ...], starts: bool) -> None:
    assert conftest._may_select_a_waiting_test(_run_of(*arguments)) is starts


def test_a_stop_before_checkov_starts_means_it_never_starts(tmp_path: Path) -> None:
    background = conftest.CommandLineRender.__new__(conftest.CommandLineRender)
    background.checkov_cache = None
    background.scanner = None
    background.stopping = False
    background.starting = threading.Lock()
    background.process = None  # type: ignore[assignment]
    background.worker = threading.Thread(target=lambda: None)
    background.directory = tmp_path / "background"
    background.worker.start()
    background.stop()
    (tmp_path / "out").mkdir()
    with pytest.raises(RuntimeError, match="before checkov started"):
        background._scan(tmp_path / "out")
    assert background.scanner is None
