"""What `plan` prints says how each figure was had, as plan.md does."""

from __future__ import annotations

import io
import json
import sys

import pytest

from commands.plan.command import plan_main
from commands.render.time_to_serve import time_to_serve
from tests.rendered import run_main
from tests.variants import stack_config


@pytest.mark.parametrize(
    ("stack", "counted"),
    [
        # no run at 12 nodes counted requests: the count is the per-node count at 8 nodes held
        ("prod", "the benchmark counted 963, extrapolated: no run at 12 node(s) counted requests"),
        ("dev", "the benchmark counted 83, measured (counted at 1/2/4/8 node(s))"),
    ],
)
def test_the_benchmarks_count_of_completions_says_its_basis(stack: str, counted: str) -> None:
    run = run_main(plan_main, stack)
    assert run.returncode == 0
    assert counted in run.stdout


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_plan_gives_the_time_to_serve_render_writes(stack: str) -> None:
    model = time_to_serve(stack_config(stack))
    text = run_main(plan_main, stack)
    assert f"time to serve: ~{model.planning_seconds / 60:,.0f} min for a new replica on a new node, " in text.stdout
    assert model.planning_basis in text.stdout
    as_json = json.loads(run_main(plan_main, stack, "--json").stdout)
    assert as_json["timeToServe"] == {
        "planning_seconds": model.planning_seconds,
        "planning_basis": model.planning_basis,
    }


def test_a_budget_only_a_fallback_meets_says_so() -> None:
    """prod tries Flex-start first and falls back to Spot: a budget only Spot meets is over whenever GKE gets
    Flex-start, which plan.md called "a fallback to any other source costs more"."""
    from commands.plan.assumptions import explain_sizing
    from stacks.capacity.planner import size
    from stacks.load.loader import validate

    raw = stack_config("prod").model_dump(by_alias=True, exclude_unset=True)
    raw["capacity"] = {key: value for key, value in raw["capacity"].items() if key != "nodes"}
    for budget, first in ((500, False), (5_000, True)):
        config = validate({**raw, "target": {"totalTokensPerSecond": 700_000, "budgetPerHour": budget}})
        assert config.target is not None
        line = explain_sizing(config, size(config, config.target), ()).budget_line()
        if first:
            assert line.startswith(
                "Within the budget of USD 5,000.00/h (all in): Flex-start (nodes live at most 7 days), Spot"
            )
        else:
            assert line.startswith("Over the budget of USD 500.00/h (all in) whenever GKE gets its first choice, Flex")
            assert "only Spot, a fallback, is within it" in line


def test_an_autoscaler_ceiling_above_the_node_count_is_the_plans_ceiling() -> None:
    """maxReplicas 6 over capacity.nodes 4: plan.md said "4 at most ... the autoscaler runs 1-6 pods" and priced
    "the autoscaler's ceiling (4 pods)"."""
    from commands.plan.capacity_plan import capacity_plan
    from commands.render.plan_md import _nodes_setting
    from stacks.load.loader import validate

    raw = stack_config("staging").model_dump(by_alias=True, exclude_unset=True)
    config = validate({**raw, "autoscaling": {**raw.get("autoscaling", {}), "enabled": True, "maxReplicas": 6}})
    assert config.nodes == 4 and config.max_replicas == 6
    assert _nodes_setting(config).startswith("6 at most (autoscaling.maxReplicas; capacity.nodes 4)")
    assert capacity_plan("staging", config).nodes == 6


@pytest.mark.parametrize("form", [["--json"], []])
def test_plan_is_written_in_one_write(form: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A newcomer: `plan prod --json | head -c1` exited 141 now and then (docs/commands.md says 0): print() wrote
    the 10 KB text, then its line break apart, which found the pipe closed once `head` had read its byte."""
    writes: list[str] = []

    class Recording(io.StringIO):
        def write(self, text: str) -> int:
            writes.append(text)
            return len(text)

    monkeypatch.setattr(sys, "stdout", Recording())
    assert plan_main(["prod", *form]) == 0
    assert len(writes) == 1 and writes[0].endswith("\n"), [len(text) for text in writes]
