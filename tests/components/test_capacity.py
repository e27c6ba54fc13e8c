"""B200 capacity's ComputeClass priorities on their own: what each capacity source sets."""

from __future__ import annotations

from typing import Any

import pytest

from components.capacity import (
    FlexStartCapacity,
    ReservationCapacity,
    SpotCapacity,
    priority_for,
)


def provisioning(priority: dict[str, Any]) -> dict[str, Any]:
    """A priority without the A4 node shape and the zones: what makes the capacity source."""
    return {key: value for key, value in priority.items() if key not in {"machineType", "gpu", "location"}}


def test_reservation_without_project_names_only_the_reservation() -> None:
    priority = priority_for(ReservationCapacity(name="mine"), ["us-central1-b"], "default")
    assert priority["reservations"] == {"affinity": "Specific", "specific": [{"name": "mine"}]}
    assert priority["gpu"]["driverVersion"] == "default"


@pytest.mark.parametrize(
    ("source", "key"),
    [
        (SpotCapacity(), "spot"),
        (FlexStartCapacity(3600, 604800), "flexStart"),
        (ReservationCapacity(name="r"), "reservations"),
    ],
)
def test_each_source_sets_only_its_own_provisioning(source: Any, key: str) -> None:
    keys = set(provisioning(priority_for(source, ["us-central1-b"], "latest")))
    assert key in keys
    assert not keys & ({"spot", "flexStart", "reservations"} - {key})
