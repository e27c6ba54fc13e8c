"""B200Capacity on its own: the ComputeClass it declares from typed capacity sources."""

from __future__ import annotations

import pytest

from components.capacity import (
    B200Capacity,
    B200CapacityArgs,
    FlexStartCapacity,
    ReservationCapacity,
    SpotCapacity,
)
from tests.construct import ABSENT, Built, build, children_are_parented, has_resource, resource_count_is

COMPUTE_CLASS = "kubernetes:cloud.google.com/v1:ComputeClass"
A4 = {"machineType": "a4-highgpu-8g", "gpu": {"type": "nvidia-b200", "count": 8, "driverVersion": "default"}}


def build_capacity(*sources: SpotCapacity | FlexStartCapacity | ReservationCapacity) -> Built:
    return build(
        lambda: B200Capacity(
            "cap",
            B200CapacityArgs(
                compute_class_name="b200",
                sources=sources,
                zones=["us-central1-b", "us-central1-c"],
                gpu_driver_version="default",
                labels={"app": "test"},
            ),
        )
    )


def test_one_compute_class_with_the_sources_in_order() -> None:
    records = build_capacity(
        ReservationCapacity(name="a4-res", project="shared-proj"),
        FlexStartCapacity(node_recycling_lead_time_seconds=1800, max_run_duration_seconds=86400),
        SpotCapacity(),
    )
    resource_count_is(records, COMPUTE_CLASS, 1)
    zones = {"location": {"zones": ["us-central1-b", "us-central1-c"]}}
    has_resource(
        records,
        COMPUTE_CLASS,
        {
            "apiVersion": "cloud.google.com/v1",
            "kind": "ComputeClass",
            "metadata": {"name": "b200", "labels": {"app": "test"}},
            "spec": {
                "priorities": [
                    {
                        **A4,
                        **zones,
                        "reservations": {
                            "affinity": "Specific",
                            "specific": [{"name": "a4-res", "project": "shared-proj"}],
                        },
                        "spot": ABSENT,
                    },
                    {
                        **A4,
                        **zones,
                        "flexStart": {"enabled": True, "nodeRecycling": {"leadTimeSeconds": 1800}},
                        "maxRunDurationSeconds": 86400,
                        "spot": ABSENT,
                    },
                    {**A4, **zones, "spot": True, "flexStart": ABSENT, "reservations": ABSENT},
                ],
                "nodePoolAutoCreation": {"enabled": True},
                "whenUnsatisfiable": "DoNotScaleUp",
            },
        },
    )
    children_are_parented(records, "llm-serving:capacity:B200Capacity", "cap")


def test_a_reservation_in_this_project_names_no_project() -> None:
    records = build_capacity(ReservationCapacity(name="own"))
    has_resource(
        records,
        COMPUTE_CLASS,
        {
            "spec": {
                "priorities": [
                    {"reservations": {"affinity": "Specific", "specific": [{"name": "own", "project": ABSENT}]}}
                ]
            }
        },
    )


def test_the_helper_fails_on_a_mismatch() -> None:
    records = build_capacity(SpotCapacity())
    with pytest.raises(AssertionError, match=r"\.spec\.priorities\[0\]\.spot: expected False, got True"):
        has_resource(records, COMPUTE_CLASS, {"spec": {"priorities": [{"spot": False}]}})
