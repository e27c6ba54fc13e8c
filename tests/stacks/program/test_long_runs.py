"""A long run: Flex-start nodes that reach their 7-day limit together, and GKE upgrades, must not take
the serving pods down at once."""

from __future__ import annotations

import re
from typing import Any

import pytest

from stacks.load.loader import InvalidConfig, validate
from tests.rendered import RenderedStack

MOVE_SECONDS = 35 * 60


def test_prod_recycles_flex_start_nodes_early_enough_to_move_every_pod(prod: RenderedStack) -> None:
    (compute_class,) = prod.kind("ComputeClass")
    (flex,) = [p for p in compute_class["spec"]["priorities"] if "flexStart" in p]
    # 12 pods, one at a time (the PodDisruptionBudget), a node (15 min) and a pod start (20 min) each.
    assert flex["flexStart"]["nodeRecycling"]["leadTimeSeconds"] == 12 * MOVE_SECONDS
    assert flex["maxRunDurationSeconds"] > 12 * MOVE_SECONDS


def test_the_cluster_upgrades_only_in_its_maintenance_window(prod: RenderedStack) -> None:
    cluster = prod.one("gcp:container/cluster:Cluster")["inputs"]
    assert cluster["maintenancePolicy"] == {
        "recurringWindow": {
            "startTime": "2026-01-03T00:00:00Z",
            "endTime": "2026-01-03T06:00:00Z",
            "recurrence": "FREQ=WEEKLY;BYDAY=SA,SU",
        }
    }
    assert "minMasterVersion" not in cluster, "the release channel's default version"


def test_a_custom_window_is_rendered() -> None:
    config = validate(
        {
            "environment": "prod",
            "project": "my-llm-prod",
            "weights": {"revision": "a" * 40},
            "cluster": {"maintenanceWindow": {"days": ["tue"], "start": "22:30", "hours": 12}},
        }
    )
    assert config.cluster.maintenance_window.recurring_window() == (
        "2026-01-03T22:30:00Z",
        "2026-01-04T10:30:00Z",
        "FREQ=WEEKLY;BYDAY=TU",
    )


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        (
            {"capacity": {"sources": [{"type": "flexStart", "nodeRecyclingLeadTimeSeconds": 3600}]}},
            "capacity.sources[0].nodeRecyclingLeadTimeSeconds: 3600 s; the 12 Flex-start nodes reach their run limit "
            f"together and their pods move one at a time, about {MOVE_SECONDS} s "
            f"each: allowed {12 * MOVE_SECONDS} s or more",
        ),
        (
            {"capacity": {"sources": [{"type": "flexStart", "maxRunDurationSeconds": 3600}]}},
            "capacity.sources[0]: moving 12 pods one at a time off Flex-start nodes takes about",
        ),
        ({"cluster": {"maintenanceWindow": {"days": ["sun"], "hours": 4}}}, "16 h in some 32-day period"),
        ({"cluster": {"maintenanceWindow": {"hours": 3}}}, "cluster.maintenanceWindow.hours"),
        ({"cluster": {"maintenanceWindow": {"days": ["sun", "sun"], "hours": 8}}}, "each day listed once"),
        ({"cluster": {"maintenanceWindow": {"start": "24:00"}}}, "cluster.maintenanceWindow.start"),
        ({"cluster": {"existing": True, "maintenanceWindow": {}}}, "cluster.maintenanceWindow: has no effect"),
    ],
)
def test_a_long_run_setting_that_cannot_work_is_refused(settings: dict[str, Any], expected: str) -> None:
    with pytest.raises(InvalidConfig, match=re.escape(expected)):
        validate({"environment": "prod", "project": "my-llm-prod", "weights": {"revision": "a" * 40}, **settings})
