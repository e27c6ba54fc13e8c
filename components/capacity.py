"""B200 capacity: one GKE ComputeClass that lists, in order, where A4 nodes may come from.

A4 (8x B200) has no on-demand capacity, so every priority is a specific reservation, Flex-start
or Spot, and `whenUnsatisfiable: DoNotScaleUp` stops the autoscaler from falling back to anything
else. Every priority is pinned to the zones of the weight disks. The serving pods select the class
with the node selector `cloud.google.com/compute-class: <name>` and carry no Spot or Flex-start
selectors of their own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.hardware import A4_MACHINE_TYPE, B200_ACCELERATOR, B200_GPUS_PER_NODE

COMPUTE_CLASS_SELECTOR = "cloud.google.com/compute-class"
# The ComputeClass priority field of Flex-start capacity (`priorities[].flexStart.enabled`).
FLEX_START_PRIORITY_FIELD = "flexStart"


@dataclass(frozen=True)
class SpotCapacity:
    """Spot A4 nodes: preemptible, at most 25 s of graceful termination on Autopilot."""

    def priority_fields(self) -> dict[str, Any]:
        """What a ComputeClass priority says of this source (besides the machine, GPUs and zones)."""
        return {"spot": True}


@dataclass(frozen=True)
class FlexStartCapacity:
    """Flex-start (Dynamic Workload Scheduler) A4 nodes, which live at most `max_run_duration_seconds`."""

    node_recycling_lead_time_seconds: int
    max_run_duration_seconds: int
    # How long GKE tries Flex-start before it moves on to the next priority (None: GKE's default).
    capacity_check_wait_time_seconds: int | None = None

    def priority_fields(self) -> dict[str, Any]:
        wait = self.capacity_check_wait_time_seconds
        return {
            FLEX_START_PRIORITY_FIELD: {
                "enabled": True,
                "nodeRecycling": {"leadTimeSeconds": self.node_recycling_lead_time_seconds},
            },
            "maxRunDurationSeconds": self.max_run_duration_seconds,
            **({"capacityCheckWaitTimeSeconds": wait} if wait is not None else {}),
        }


@dataclass(frozen=True)
class ReservationCapacity:
    """A specific reservation, `project` set when another project owns (and shares) it."""

    name: str
    project: str | None = None

    def priority_fields(self) -> dict[str, Any]:
        reservation = {"name": self.name, **({"project": self.project} if self.project else {})}
        return {"reservations": {"affinity": "Specific", "specific": [reservation]}}


CapacitySource = SpotCapacity | FlexStartCapacity | ReservationCapacity


@dataclass(frozen=True)
class CapacityKind:
    """One kind of A4 capacity source: the registry the config, the Args, the loader and the planner read.

    `type` is how a stack file names it (`capacity.sources[].type`), `source` the component's own
    source type (its ComputeClass priority: `priority_fields`), `preemptible` whether GKE may take a
    node back at short notice (the pods' grace and drain follow it), `price_setting` the pricing
    setting that bills a node-hour of it (none: a reservation is billed as `pricing.reservationBilling`
    says), `label` the kind's name (the price rows of plan.md and `plan`; a configured source's own
    `label` in stacks/config/capacity.py names it with its settings)."""

    type: str
    source: Callable[..., CapacitySource]
    preemptible: bool
    price_setting: str | None
    label: str

    @property
    def reserved(self) -> bool:
        """A reservation: billed from its creation to its deletion, used or not (no node-hour price of its own)."""
        return self.price_setting is None


SPOT = CapacityKind("spot", SpotCapacity, preemptible=True, price_setting="spot_per_node_hour", label="Spot")
FLEX_START = CapacityKind(
    "flexStart",
    FlexStartCapacity,
    preemptible=False,
    price_setting="flex_start_per_node_hour",
    label="Flex-start (DWS)",
)
RESERVATION = CapacityKind(
    "reservation", ReservationCapacity, preemptible=False, price_setting=None, label="reservation"
)
CAPACITY_KINDS: dict[str, CapacityKind] = {kind.type: kind for kind in (SPOT, FLEX_START, RESERVATION)}
# A kind's type as a pattern (a measurements file's start-up conditions name them).
CAPACITY_KIND_PATTERN = f"^({'|'.join(CAPACITY_KINDS)})$"


def capacity_kind(kind: str) -> CapacityKind:
    """The kind a stack file names; an unknown one is an error, never another kind by default."""
    if kind not in CAPACITY_KINDS:
        raise ValueError(f"unknown capacity source type {kind!r}; known: {', '.join(CAPACITY_KINDS)}")
    return CAPACITY_KINDS[kind]


def capacity_source(kind: str, settings: dict[str, Any]) -> CapacitySource:
    """The component's source of a kind from its settings (the config's fields but `type`)."""
    return capacity_kind(kind).source(**settings)


def priority_for(source: CapacitySource, zones: Sequence[str], driver_version: str) -> dict[str, Any]:
    """One ComputeClass priority: an A4 node with 8 B200 from one capacity source."""
    priority = {
        "machineType": A4_MACHINE_TYPE,
        "gpu": {"type": B200_ACCELERATOR, "count": B200_GPUS_PER_NODE, "driverVersion": driver_version},
        "location": {"zones": list(zones)},
    }
    return {**priority, **source.priority_fields()}


def compute_class_spec(sources: Sequence[CapacitySource], zones: Sequence[str], driver_version: str) -> dict[str, Any]:
    return {
        "priorities": [priority_for(source, zones, driver_version) for source in sources],
        "nodePoolAutoCreation": {"enabled": True},
        "whenUnsatisfiable": "DoNotScaleUp",
    }


@dataclass(frozen=True)
class B200CapacityArgs:
    compute_class_name: str
    sources: Sequence[CapacitySource]
    zones: Sequence[str]
    gpu_driver_version: str
    labels: dict[str, str] = field(default_factory=dict)
    # What must exist first: the wait for GKE to serve the ComputeClass CRD on a new cluster.
    after: Sequence[pulumi.Resource] = ()


class B200Capacity(pulumi.ComponentResource):
    TYPE = "llm-serving:capacity:B200Capacity"
    compute_class: k8s.apiextensions.CustomResource

    def __init__(self, name: str, args: B200CapacityArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(self.TYPE, name, None, opts)
        self.compute_class = k8s.apiextensions.CustomResource(
            f"{name}-compute-class",
            api_version="cloud.google.com/v1",
            kind="ComputeClass",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=args.compute_class_name, labels=args.labels),
            spec=compute_class_spec(args.sources, args.zones, args.gpu_driver_version),
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.after)),
        )
        # Read back from the object so that pods selecting the class wait until it exists.
        self.compute_class_name: pulumi.Output[str] = self.compute_class.metadata.apply(
            lambda metadata: str(metadata["name"])
        )
        self.node_selector: dict[str, pulumi.Input[str]] = {COMPUTE_CLASS_SELECTOR: self.compute_class_name}
        self.register_outputs({"computeClassName": self.compute_class_name})
