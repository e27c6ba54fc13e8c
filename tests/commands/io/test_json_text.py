"""The commands' JSON (render's files, capacity.json, plan --json, changes.json) never holds a number
JSON has not: an infinity or NaN some overlooked path computes fails the command loudly (exit 1)
instead of writing `Infinity`, which no JSON reader takes."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from commands.io import output
from commands.plan.capacity_plan import CapacityPlan
from commands.plan.command import plan_main
from tests.rendered import run_main, run_render


@pytest.mark.parametrize("number", [math.inf, -math.inf, math.nan])
def test_a_json_document_refuses_a_number_json_has_not(number: float) -> None:
    with pytest.raises(ValueError, match="not JSON compliant"):
        output.json_document({"usd": [number]})


def _infinite_figures(self: CapacityPlan) -> dict[str, Any]:
    return {"total_per_month": math.inf}


def test_plan_json_fails_loudly_on_an_infinite_figure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(CapacityPlan, "to_json", _infinite_figures)
    run = run_main(plan_main, "dev", "--json")
    assert run.returncode == 1
    assert "Infinity" not in run.stdout
    assert "not JSON compliant" in run.stderr


def test_render_writes_no_capacity_json_with_an_infinite_figure(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(CapacityPlan, "to_json", _infinite_figures)
    run = run_render("dev", "--out", str(tmp_path / "out"))
    assert run.returncode == 1
    assert "not JSON compliant" in run.stderr
    assert not (tmp_path / "out" / "capacity.json").exists()
