"""The capacity plan `render` (capacity.json, plan.md), `plan` and `bench-compare` show: the expected
throughput, latency and cost per capacity source of a stack at its node count, the floor an autoscaler
keeps, the monthly node-hours (`commands/plan/hours.py`) and where each price comes from
(`commands/plan/prices.py`). Sizing and the hourly cost are the stack's: stacks/capacity/planner.py."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from commands.plan.assumptions import ExplainedExpectation, ExplainedSizing, explain, explain_sizing
from commands.plan.hours import RunningHours, running_hours
from commands.plan.prices import pricing_notes
from components.capacity import CAPACITY_KINDS, capacity_kind
from stacks.capacity.measurements import Measurement
from stacks.capacity.planner import (
    HOURS_PER_MONTH,
    Storage,
    hourly_cost,
    known,
    size,
    storage_of,
)
from stacks.config.capacity import CapacitySource
from stacks.config.pricing import PricingConfig, ReservationBilling
from stacks.config.stack import StackConfig

PRICING_LABELS = {
    **{kind.type: kind.label for kind in CAPACITY_KINDS.values() if kind.price_setting},
    ReservationBilling.on_demand.value: "reservation, on-demand-equivalent",
    ReservationBilling.commit_1y.value: "reservation, 1-year commitment",
    ReservationBilling.commit_3y.value: "reservation, 3-year commitment",
}


@dataclass(frozen=True)
class Cost:
    """One pricing of the stack's nodes. Per hour: with every node up. Per month: for the node-hours
    the schedule and autoscaler keep up (`_min`/`_max` the floor and ceiling; `total_per_month` is
    the ceiling), the disks, image and cluster fee all month. Per million tokens: at full load, None
    where the throughput was not measured."""

    pricing: str
    label: str
    node_per_hour: float
    nodes_per_hour: float
    autopilot_premium_per_hour: float
    disk_capacity_per_hour: float
    disk_throughput_per_hour: float
    image_per_hour: float
    cluster_fee_per_hour: float
    total_per_hour: float
    total_per_month: float
    total_per_month_min: float
    total_per_month_max: float
    node_hours_per_month_min: float
    node_hours_per_month_max: float
    usd_per_million_tokens_nodes_only: float | None
    usd_per_million_tokens_full_load: float | None
    usd_per_million_tokens_at_utilization: float | None
    # All in at full load per million OUTPUT tokens (the tokens a client is billed for by most APIs).
    usd_per_million_output_tokens_full_load: float | None = None


def cost(
    kind: str,
    nodes: int,
    total_tokens_per_second: float | None,
    storage: Storage,
    pricing: PricingConfig,
    hours: RunningHours | None = None,
    output_tokens_per_second: float | None = None,
    owns_cluster: bool = True,
) -> Cost:
    """The cost of `nodes` nodes: an hour as goal sizing prices it (stacks/capacity/planner.py
    `hourly_cost`), a month at `hours` (every node around the clock when None). Per million tokens:
    total (input + output) and output."""
    hour = hourly_cost(kind, nodes, storage, pricing, owns_cluster)
    total = hour.total
    node_hour_all_in = hour.node * (1 + pricing.autopilot_premium_fraction)
    always = (hour.disk_capacity + hour.disk_throughput + hour.image + hour.cluster_fee) * HOURS_PER_MONTH
    low_hours = nodes * HOURS_PER_MONTH if hours is None else hours.node_hours_per_month_min
    high_hours = nodes * HOURS_PER_MONTH if hours is None else hours.node_hours_per_month_max
    per_million: tuple[float | None, float | None, float | None] = (None, None, None)
    if total_tokens_per_second is not None:
        million_tokens_per_hour = total_tokens_per_second * 3600 / 1e6
        per_million = (
            hour.nodes / million_tokens_per_hour,
            total / million_tokens_per_hour,
            total / (million_tokens_per_hour * pricing.utilization),
        )
    return Cost(
        pricing=kind,
        label=PRICING_LABELS[kind],
        node_per_hour=hour.node,
        nodes_per_hour=hour.nodes,
        autopilot_premium_per_hour=hour.autopilot_premium,
        disk_capacity_per_hour=hour.disk_capacity,
        disk_throughput_per_hour=hour.disk_throughput,
        image_per_hour=hour.image,
        cluster_fee_per_hour=hour.cluster_fee,
        total_per_hour=total,
        total_per_month=always + node_hour_all_in * high_hours,
        total_per_month_min=always + node_hour_all_in * low_hours,
        total_per_month_max=always + node_hour_all_in * high_hours,
        node_hours_per_month_min=low_hours,
        node_hours_per_month_max=high_hours,
        usd_per_million_tokens_nodes_only=per_million[0],
        usd_per_million_tokens_full_load=per_million[1],
        usd_per_million_tokens_at_utilization=per_million[2],
        usd_per_million_output_tokens_full_load=None
        if not output_tokens_per_second
        else total / (output_tokens_per_second * 3600 / 1e6),
    )


def pricings_of(source: CapacitySource) -> list[str]:
    """The ways the nodes of one capacity source can be billed."""
    if capacity_kind(source.type).reserved:
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
    expectation: ExplainedExpectation
    # With an autoscaler whose floor is below the ceiling: what the floor's pods should do.
    floor: ExplainedExpectation | None
    sources: tuple[SourcePlan, ...]
    sizing: ExplainedSizing | None
    running: RunningHours
    utilization: float
    pricing: dict[str, Any]
    pricing_notes: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def capacity_plan(
    stack: str, config: StackConfig, nodes: int | None = None, measurements: Sequence[Measurement] | None = None
) -> CapacityPlan:
    runs = known(measurements)
    count = nodes if nodes is not None else config.max_replicas  # the ceiling: the autoscaler's where it has one
    expectation = explain(config, count, runs)
    storage = storage_of(config)
    hours = running_hours(config)
    sources = tuple(
        SourcePlan(
            source=source.label,
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
    sizing = explain_sizing(config, size(config, config.target, runs), runs) if config.target is not None else None
    scaling = config.autoscaling
    floor = explain(config, scaling.min_replicas, runs) if scaling.enabled and scaling.min_replicas < count else None
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
        pricing_notes=pricing_notes(
            config.pricing,
            owns_cluster=not config.cluster.existing,
            reserved=any(capacity_kind(source.type).reserved for source in config.capacity.sources),
        ),
    )
