"""Time to serve: the planning figure a new replica's start-up is held to (the recipe's measured
figures, or assumed from them), and the settings it reads refused in one line when hostile (every
phase as plan.md reports it: tests/commands/render/test_time_to_serve.py)."""

from __future__ import annotations

from typing import Any

import pytest

from stacks.capacity.time_to_serve import planning_seconds
from stacks.load.loader import InvalidConfig, validate
from tests.variants import stack_config, variant_config

BASE: dict[str, Any] = {
    "environment": "dev",
    "project": "my-llm-dev",
    "region": "us-central1",
    "zones": ["us-central1-b"],
}


def test_the_planning_figure_is_the_recipes_measured_one_or_assumed_from_it() -> None:
    assert planning_seconds(stack_config("dev")) == 960  # node ~6 min + pod ~10 min, the write-up's
    assert planning_seconds(variant_config("prod-397b")) > 960  # assumed, plus the larger checkpoint's read


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"weights": {"targetLoadSeconds": 5}}, "weights.targetLoadSeconds"),
        ({"weights": {"targetLoadSeconds": "60"}}, "weights.targetLoadSeconds"),
        ({"weights": {"targetLoadSeconds": 60, "throughputMibps": 2400}}, "not both"),
        ({"timeToServe": {"boundSeconds": 0}}, "timeToServe.boundSeconds"),
        ({"timeToServe": {"imageGib": -1}}, "timeToServe.imageGib"),
        ({"timeToServe": {"imagePullMibps": float("nan")}}, "timeToServe.imagePullMibps"),
        ({"timeToServe": {"weightsReadBoundSeconds": 10**9}}, "timeToServe.weightsReadBoundSeconds"),
    ],
)
def test_hostile_settings_are_refused_in_one_line(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidConfig) as error:
        validate({**BASE, **settings})
    assert message in str(error.value)
    assert "\n" not in str(error.value)
