"""The capacity plan `render` (capacity.json, plan.md), `plan` and `bench-compare` show: the expected
throughput, latency and cost per capacity source of a stack at its node count, the floor an autoscaler
keeps, the monthly node-hours (`commands/plan/hours.py`) and where each price comes from
(`commands/plan/prices.py`). Sizing and the prices themselves are the stack's: stacks/capacity/planner.py."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from commands.plan.hours import running_hours
from commands.plan.prices import pricing_notes
from components.capacity import capacity_kind
from stacks.capacity.expectation import Expectation, expect
from stacks.capacity.measurements import Measurement
from stacks.capacity.planner import (
    Cost,
    RunningHours,
    Sizing,
    cost,
    known,
    size,
    source_label,
    storage_of,
)
from stacks.config.capacity import CapacitySource
from stacks.config.pricing import ReservationBilling
from stacks.config.stack import StackConfig


def pricings_of(source: CapacitySource) -> list[str]:
    """The ways the nodes of one capacity source can be billed."""
    if capacity_kind(source.type).price_setting is None:
        return [billing.value for billing in ReservationBilling]
    return [source.type]


@dataclass(frozen=True)
class SourcePlan:
    source: str
    type: str
    costs: tuple[Cost, ...]


@dataclass(frozen=True)
class CapacityPlan:
    stack: str
    nodes: int
    profile: str
    expectation: Expectation
    # With an autoscaler whose floor is below the ceiling: what the floor's pods should do.
    floor: Expectation | None
    sources: tuple[SourcePlan, ...]
    sizing: Sizing | None
    running: RunningHours
    utilization: float
    pricing: dict[str, Any]
    pricing_notes: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def plan(
    stack: str, config: StackConfig, nodes: int | None = None, measurements: Sequence[Measurement] | None = None
) -> CapacityPlan:
    runs = known(measurements)
    count = nodes if nodes is not None else config.nodes
    expectation = expect(config, count, runs)
    storage = storage_of(config)
    hours = running_hours(config)
    sources = tuple(
        SourcePlan(
            source=source_label(source),
            type=source.type,
            costs=tuple(
                cost(
                    kind,
                    count,
                    expectation.total_tokens_per_second,
                    storage,
                    config.pricing,
                    hours,
                    expectation.output_tokens_per_second,
                    owns_cluster=not config.cluster.existing,
                )
                for kind in pricings_of(source)
            ),
        )
        for source in config.capacity.sources
    )
    sizing = size(config, config.target, runs) if config.target is not None else None
    scaling = config.autoscaling
    floor = expect(config, scaling.min_replicas, runs) if scaling.enabled and scaling.min_replicas < count else None
    return CapacityPlan(
        stack=stack,
        nodes=count,
        profile=config.profile.value,
        expectation=expectation,
        floor=floor,
        sources=sources,
        sizing=sizing,
        running=hours,
        utilization=config.pricing.utilization,
        pricing=config.pricing.model_dump(mode="json", by_alias=True),
        pricing_notes=pricing_notes(config.pricing, owns_cluster=not config.cluster.existing),
    )
