"""Capacity planner: sizing from a goal, and the hourly cost a budget is compared with.

Pure Python (no cloud, no Pulumi): `stacks.load.loader` uses `size()` to turn a `target` into `capacity.nodes`; the plan
`render` and `plan STACK` show (a month's cost for the hours the schedule and autoscaler keep the nodes up, per million
tokens) is built on these figures in `commands/plan/capacity_plan.py`.

Every throughput, request and latency figure comes from the measurements of the stack's own configuration
(`stacks/capacity/measurements.yaml`, `stacks/capacity/expectation.py`); a stack whose configuration was never measured
gets None and the reason.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from components.capacity import CAPACITY_KINDS, capacity_kind
from stacks.capacity import measurements as measurement_file
from stacks.capacity.expectation import Expectation, expect
from stacks.capacity.measurements import Measurement
from stacks.config.benchmark import BENCH_CONCURRENCY_PER_VCPU
from stacks.config.capacity import MAX_NODES, CapacitySource, TargetConfig
from stacks.config.pricing import PricingConfig, ReservationBilling
from stacks.config.routing import RoutingMode
from stacks.config.stack import StackConfig

HOURS_PER_MONTH = 730
# The GKE free tier: a credit per billing account and month (Google Kubernetes Engine pricing).
FREE_TIER_CREDIT_PER_MONTH = 74.40


def known(measurements: Sequence[Measurement] | None) -> Sequence[Measurement]:
    """The given measurements, or those of the repository's file."""
    return measurement_file.load().measurements if measurements is None else measurements


# ---------------------------------------------------------------- cost


def node_price(pricing: PricingConfig, kind: str) -> float:
    """A node-hour of a kind of capacity (components/capacity.py CAPACITY_KINDS) or of a reservation billing."""
    capacity = CAPACITY_KINDS.get(kind)
    if capacity is not None and capacity.price_setting is not None:
        return float(getattr(pricing, capacity.price_setting))
    return {
        ReservationBilling.on_demand.value: pricing.on_demand_per_node_hour,
        ReservationBilling.commit_1y.value: pricing.committed_1y_per_node_hour,
        ReservationBilling.commit_3y.value: pricing.committed_3y_per_node_hour,
    }[kind]


@dataclass(frozen=True)
class Storage:
    """What the weights keep once served: one Hyperdisk ML disk per zone and the disk image they are
    made from (the fill disk, Job and snapshot of a new revision are gone after the next `up`)."""

    size_gib: int
    serving_disks: int
    serving_throughput_mibps: int

    @property
    def disk_gib(self) -> int:
        return self.size_gib * self.serving_disks

    @property
    def throughput_mibps(self) -> int:
        return self.serving_throughput_mibps * self.serving_disks


@dataclass(frozen=True)
class HourlyCost:
    """An hour of `nodes` nodes of one pricing with every node up, and of the disks, image and cluster
    fee (the prices of a month spread over its hours)."""

    node: float
    nodes: float
    autopilot_premium: float
    disk_capacity: float
    disk_throughput: float
    image: float
    cluster_fee: float

    @property
    def total(self) -> float:
        return (
            self.nodes
            + self.autopilot_premium
            + self.disk_capacity
            + self.disk_throughput
            + self.image
            + self.cluster_fee
        )


def hourly_cost(
    kind: str, nodes: int, storage: Storage, pricing: PricingConfig, owns_cluster: bool = True
) -> HourlyCost:
    """The cost of an hour of `nodes` nodes billed as `kind`. A stack in an existing cluster
    (`owns_cluster` False) pays no cluster fee: the cluster's owner does."""
    price = node_price(pricing, kind)
    nodes_per_hour = nodes * price
    fee = pricing.cluster_fee_per_hour if owns_cluster else 0.0
    if pricing.cluster_free_tier:
        fee = max(0.0, fee - FREE_TIER_CREDIT_PER_MONTH / HOURS_PER_MONTH)
    return HourlyCost(
        node=price,
        nodes=nodes_per_hour,
        autopilot_premium=nodes_per_hour * pricing.autopilot_premium_fraction,
        disk_capacity=storage.disk_gib * pricing.hyperdisk_ml_per_gib_month / HOURS_PER_MONTH,
        disk_throughput=storage.throughput_mibps * pricing.hyperdisk_ml_per_mibps_month / HOURS_PER_MONTH,
        image=storage.size_gib * pricing.image_per_gib_month / HOURS_PER_MONTH,
        cluster_fee=fee,
    )


def budget_pricing(source: CapacitySource, pricing: PricingConfig) -> str:
    """The one pricing of a source that goal sizing compares with the budget."""
    return source.type if capacity_kind(source.type).price_setting is not None else pricing.reservation_billing.value


# ---------------------------------------------------------------- goal sizing


class SizingError(ValueError):
    """The goal cannot be met within the limits; the message starts with the config key to change."""


@dataclass(frozen=True)
class Sizing:
    """A goal turned into the node count: the ceiling, what runs when every pod is up."""

    goal: str
    value: float
    max_nodes: int
    nodes: int
    budget_per_hour: float | None
    sources_within_budget: tuple[str, ...]
    # The goal's figure expected at `nodes`, in the goal's own unit (GOAL_UNITS), as the count was sized.
    achieved: float | None = None


GOAL_UNITS = {
    "totalTokensPerSecond": "total tok/s",
    "outputTokensPerSecond": "output tok/s",
    "concurrentRequests": "concurrent requests",
    "requestsPerSecond": "req/s",
}
GOAL_FIGURES = {
    "totalTokensPerSecond": "total_tokens_per_second",
    "outputTokensPerSecond": "output_tokens_per_second",
    "concurrentRequests": "concurrent_requests",
    "requestsPerSecond": "requests_per_second",
}


def _achieved(goal: str, expectation: Expectation) -> float | None:
    """The goal's figure at the expectation's node count, in the goal's unit. A req/s goal is met by
    what a run of the load completes (`Expectation.requests_per_second`: the lower of the benchmark's
    count and the measured tok/s over the load's mean request), the figure plan.md shows."""
    value = getattr(expectation, GOAL_FIGURES[goal])
    return None if value is None else float(value)


def size(config: StackConfig, target: TargetConfig, measurements: Sequence[Measurement] | None = None) -> Sizing:
    """The smallest node count that meets the goal, and the capacity sources whose price fits the
    budget at that count. Raises `SizingError` naming the key when nothing fits, and when the goal
    is a throughput or req/s that the stack's configuration has no measurement of (concurrent
    requests are nodes x workload.concurrencyPerNode: no measurement needed)."""
    goal, value = target.goal()
    limit = min(target.max_nodes, MAX_NODES)
    runs = known(measurements)
    routing = config.routing.mode
    probe = expect(config, 1, runs)
    if _achieved(goal, probe) is None:
        why = probe.null_reasons.get(GOAL_FIGURES[goal], "not measured")
        clusterip = config.model_copy(
            update={"routing": config.routing.model_copy(update={"mode": RoutingMode.clusterip})}
        )
        measured = routing is not RoutingMode.clusterip and _achieved(goal, expect(clusterip, 1, runs)) is not None
        raise SizingError(
            f"target.{goal}: cannot size without a measurement ({why} for profile {config.profile.value} on "
            f"{config.engine.image}, {routing.value} routing); set capacity.nodes, run the benchmark Job and record "
            "it with bench-compare --record"
            + ("; this stack with routing.mode clusterip is measured and sizes from it" if measured else "")
        )
    expectations = (expect(config, count, runs) for count in range(1, limit + 1))
    met = next((item for item in expectations if (_achieved(goal, item) or 0.0) >= value), None)
    if met is None:
        best = expect(config, limit, runs)
        others = {
            "totalTokensPerSecond": _shown(best.total_tokens_per_second),
            "concurrentRequests": _shown(best.concurrent_requests),
        }
        figures = [f"{_shown(_achieved(goal, best))} {GOAL_UNITS[goal]} there as sized"]
        figures += [f"{shown} {GOAL_UNITS[name]}" for name, shown in others.items() if name != goal]
        raise SizingError(
            f"target.{goal}: {value:,.0f} {GOAL_UNITS[goal]} is out of reach within target.maxNodes {limit} "
            f"({routing.value} routing gives {', '.join(figures)}); raise target.maxNodes or lower the goal"
        )
    nodes = met.nodes
    within: tuple[str, ...] = ()
    if target.budget_per_hour is not None:
        storage = storage_of(config)
        prices = {
            source.label: hourly_cost(
                budget_pricing(source, config.pricing),
                nodes,
                storage,
                config.pricing,
                owns_cluster=not config.cluster.existing,
            ).total
            for source in config.capacity.sources
        }
        within = tuple(label for label, per_hour in prices.items() if per_hour <= target.budget_per_hour)
        if not within:
            cheapest = min(prices, key=prices.__getitem__)
            source = next(item for item in config.capacity.sources if item.label == cheapest)
            price = budget_pricing(source, config.pricing)
            cost = {
                n: hourly_cost(price, n, storage, config.pricing, not config.cluster.existing).total
                for n in range(1, nodes)
            }
            affords = max((n for n in cost if cost[n] <= target.budget_per_hour), default=0)
            remedy = (
                f"it affords {affords} node(s) there: raise the budget or lower the goal to what {affords} node(s) give"
                if affords
                else f"it affords no node there (1 costs USD {cost.get(1, prices[cheapest]):,.2f}/h): raise the budget"
            )
            raise SizingError(
                f"target.budgetPerHour: USD {target.budget_per_hour:,.2f}/h is below the cheapest capacity source for "
                f"the {nodes} node(s) the goal needs ({cheapest}, USD {prices[cheapest]:,.2f}/h all in); {remedy}"
            )
    return Sizing(
        goal=goal,
        value=value,
        max_nodes=limit,
        nodes=nodes,
        budget_per_hour=target.budget_per_hour,
        sources_within_budget=within,
        achieved=_achieved(goal, met),
    )


def _shown(value: float | None) -> str:
    return "not measured" if value is None else f"{value:,.0f}"


def storage_of(config: StackConfig) -> Storage:
    return Storage(
        size_gib=config.weights.size_gib,
        serving_disks=len(config.zones),
        serving_throughput_mibps=config.serving_throughput_mibps,
    )


def benchmark_clients(total_concurrency: int, concurrency_per_client: int) -> int:
    return math.ceil(total_concurrency / concurrency_per_client)


def benchmark_concurrency(config: StackConfig) -> int:
    return config.benchmark.concurrency or config.nodes * config.workload.concurrency_per_node


def resolve(config: StackConfig, measurements: Sequence[Measurement] | None = None) -> StackConfig:
    """The config `pulumi up` deploys: a `target` turned into `capacity.nodes`, and the benchmark's
    client count checked against its CPU. Raises `SizingError` naming the key."""
    if config.target is not None:
        nodes = size(config, config.target, measurements).nodes
        config = config.model_copy(update={"capacity": config.capacity.model_copy(update={"nodes": nodes})})
    if config.benchmark.enabled:
        concurrency = benchmark_concurrency(config)
        needed = math.ceil(concurrency / BENCH_CONCURRENCY_PER_VCPU)
        if needed > config.benchmark.cpu:
            raise SizingError(
                f"benchmark.cpu: {config.benchmark.cpu} vCPU cannot drive {concurrency:,} concurrent requests without "
                f"CPU-bound clients (at most {BENCH_CONCURRENCY_PER_VCPU:,} per vCPU); allowed: {needed} or more"
            )
    return config
