"""Capacity planner: expected throughput, latency and cost of a stack, and sizing from a goal.

Pure Python (no cloud, no Pulumi): `render` writes its plan as `capacity.json` and a plan.md section,
`plan STACK` prints it, `stacks.load.loader` uses `size()` to turn a `target` into `capacity.nodes`.

The model is the published measurements (RECIPE sections 1, 6, 8; write-up of March 2026, vLLM
v0.18.0, InferenceMAX input 1024 / output 512 tokens, range ratio 0.5, unique prompts):
- per-node total tok/s by node count, interpolated linearly between the measured 1/2/4/8/12 nodes
  and extrapolated beyond 12 with the 8->12 slope;
- through the Inference Gateway, the measured gateway/ClusterIP ratio at 2/4/8 nodes (31/35/37%
  overhead), held at the nearest measured point outside 2..8 nodes; measured with one Endpoint
  Picker, EPP v1.4.0: with any other picker image the figure is that estimate and says so;
- completed requests/s from the measured requests per total token at 1/2/4/8 nodes;
- TPOT/TTFT medians of the nearest measured node counts (ClusterIP only: the gateway runs
  published no latencies).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from itertools import pairwise
from typing import Any

from components.hardware import B200_GPUS_PER_NODE
from stacks.config.benchmark import BENCH_CONCURRENCY_PER_VCPU
from stacks.config.capacity import MAX_NODES, CapacitySource, TargetConfig
from stacks.config.pricing import PricingConfig, ReservationBilling
from stacks.config.routing import RoutingMode
from stacks.config.stack import StackConfig

HOURS_PER_MONTH = 730
FREE_TIER_CREDIT_PER_MONTH = 74.40
MEASURED_INPUT_TOKENS = 1024
MEASURED_OUTPUT_TOKENS = 512
OUTPUT_SHARE = MEASURED_OUTPUT_TOKENS / (MEASURED_INPUT_TOKENS + MEASURED_OUTPUT_TOKENS)


@dataclass(frozen=True)
class MeasuredRun:
    nodes: int
    total_tokens_per_second: float
    tpot_median_ms: float
    ttft_median_ms: float


# RECIPE section 1: ClusterIP round robin, one vLLM pod (DP 8) per A4 node.
SCALING: tuple[MeasuredRun, ...] = (
    MeasuredRun(1, 95_317, 44, 8_065),
    MeasuredRun(2, 190_000, 47, 6_744),
    MeasuredRun(4, 376_074, 46, 7_331),
    MeasuredRun(8, 740_192, 46, 5_580),
    MeasuredRun(12, 1_103_941, 46, 5_600),
)
# RECIPE section 6: the same runs through the GKE Inference Gateway, with the picker of the
# inferencepool chart v1.4.0 (10 CPU / 16Gi).
GATEWAY_TOTAL_TOKENS_PER_SECOND: dict[int, float] = {2: 131_303, 4: 245_009, 8: 469_433}
MEASURED_PICKER = "registry.k8s.io/gateway-api-inference-extension/epp:v1.4.0"
HOW_TO_MEASURE_GATEWAY = (
    "measure it: benchmark.enabled with benchmark.target gateway and benchmark.gatewayAddress, then "
    "bench-compare the result (docs/gateway.md)"
)
# Issue 12 / RECIPE section 1: ~2,000 concurrent requests per node gave these completed req/s.
MEASURED_REQUESTS_PER_SECOND: dict[int, float] = {1: 83, 2: 165, 4: 326, 8: 642}


def _interpolate(points: Sequence[tuple[float, float]], x: float, *, extrapolate: bool) -> float:
    """Piecewise linear through sorted points; outside them the edge segment continues
    (`extrapolate`) or the edge value holds."""
    if x <= points[0][0]:
        if not extrapolate or len(points) == 1:
            return points[0][1]
        (x0, y0), (x1, y1) = points[0], points[1]
        return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    for (x0, y0), (x1, y1) in pairwise(points):
        if x <= x1:
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    if not extrapolate:
        return points[-1][1]
    (x0, y0), (x1, y1) = points[-2], points[-1]
    return y0 + (y1 - y0) * (x - x0) / (x1 - x0)


def clusterip_per_node(nodes: int) -> float:
    points = [(run.nodes, run.total_tokens_per_second / run.nodes) for run in SCALING]
    return _interpolate(points, nodes, extrapolate=True)


def gateway_ratio(nodes: int) -> float:
    """Gateway throughput as a fraction of ClusterIP throughput at the same node count."""
    points = [
        (count, total / (clusterip_per_node(count) * count))
        for count, total in sorted(GATEWAY_TOTAL_TOKENS_PER_SECOND.items())
    ]
    return _interpolate(points, nodes, extrapolate=False)


def picker_measured(image: str) -> bool:
    """Whether the gateway overhead was measured with this picker image (its digest aside)."""
    return image.partition("@")[0] == MEASURED_PICKER


def requests_per_token(nodes: int) -> float:
    points = [
        (count, rate / (clusterip_per_node(count) * count))
        for count, rate in sorted(MEASURED_REQUESTS_PER_SECOND.items())
    ]
    return _interpolate(points, nodes, extrapolate=False)


def _latency(nodes: int, attribute: str) -> float:
    return _interpolate([(run.nodes, getattr(run, attribute)) for run in SCALING], nodes, extrapolate=False)


@dataclass(frozen=True)
class Expectation:
    """What a stack of `nodes` A4 nodes should do under the InferenceMAX load."""

    nodes: int
    gpus: int
    routing: str
    total_tokens_per_second: float
    output_tokens_per_second: float
    per_node_tokens_per_second: float
    scaling_efficiency: float
    routing_factor: float
    concurrent_requests: int
    requests_per_second: float
    tpot_median_ms: float
    ttft_median_ms: float
    assumptions: tuple[str, ...]
    # Gateway mode with a known picker: the picker image and whether the overhead was measured with it.
    picker: str | None = None
    gateway_overhead_measured: bool | None = None


def expect(nodes: int, routing: RoutingMode, concurrency_per_node: int, picker: str | None = None) -> Expectation:
    per_node = clusterip_per_node(nodes)
    factor = gateway_ratio(nodes) if routing is RoutingMode.gateway else 1.0
    total = per_node * nodes * factor
    measured_nodes = [run.nodes for run in SCALING]
    assumptions = [
        "InferenceMAX load: random prompts, input 1024 / output 512 tokens (range ratio 0.5), ignore EOS, "
        "0% prefix-cache hits; other request shapes are not modelled",
        "the published engine recipe (vLLM DP 8, FP8 KV cache, MTP-1) on every node",
    ]
    if nodes in measured_nodes:
        assumptions.append(f"per-node throughput measured at {nodes} node(s)")
    elif nodes < measured_nodes[-1]:
        assumptions.append("per-node throughput interpolated between the measured 1/2/4/8/12 nodes")
    else:
        assumptions.append("per-node throughput extrapolated beyond the measured 12 nodes with the 8->12 slope")
    measured_picker = None if picker is None or routing is not RoutingMode.gateway else picker_measured(picker)
    if measured_picker is False:
        assumptions.append(
            f"Inference Gateway overhead not measured for this version (picker {picker}): the {1 - factor:.0%} "
            f"applied is the one measured with {MEASURED_PICKER} (31/35/37% at 2/4/8 nodes), an estimate; "
            + HOW_TO_MEASURE_GATEWAY
        )
    if routing is RoutingMode.gateway and measured_picker is not False:
        if nodes in GATEWAY_TOTAL_TOKENS_PER_SECOND:
            assumptions.append(f"Inference Gateway overhead measured at {nodes} nodes ({1 - factor:.0%})")
        else:
            assumptions.append(
                f"Inference Gateway overhead {1 - factor:.0%}: measured 31/35/37% at 2/4/8 nodes, interpolated, "
                "held at the nearest measured point outside 2-8 nodes"
            )
    if routing is RoutingMode.gateway:
        assumptions.append("latencies: ClusterIP medians (no latency was published through the gateway)")
    assumptions.append("output tok/s = total x 512/1536 (the mean output share of the load)")
    assumptions.append("req/s from the measured 83/165/326/642 req/s at 1/2/4/8 nodes per total token")
    return Expectation(
        nodes=nodes,
        gpus=nodes * B200_GPUS_PER_NODE,
        routing=routing.value,
        total_tokens_per_second=total,
        output_tokens_per_second=total * OUTPUT_SHARE,
        per_node_tokens_per_second=per_node * factor,
        scaling_efficiency=per_node / clusterip_per_node(1),
        routing_factor=factor,
        concurrent_requests=nodes * concurrency_per_node,
        requests_per_second=total * requests_per_token(nodes),
        tpot_median_ms=_latency(nodes, "tpot_median_ms"),
        ttft_median_ms=_latency(nodes, "ttft_median_ms"),
        assumptions=tuple(assumptions),
        picker=picker if measured_picker is not None else None,
        gateway_overhead_measured=measured_picker,
    )


# ---------------------------------------------------------------- cost


PRICING_LABELS = {
    "spot": "Spot",
    "flexStart": "Flex-start (DWS)",
    ReservationBilling.on_demand.value: "reservation, on-demand-equivalent",
    ReservationBilling.commit_1y.value: "reservation, 1-year commitment",
    ReservationBilling.commit_3y.value: "reservation, 3-year commitment",
}


def node_price(pricing: PricingConfig, kind: str) -> float:
    return {
        "spot": pricing.spot_per_node_hour,
        "flexStart": pricing.flex_start_per_node_hour,
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
class Cost:
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
    usd_per_million_tokens_nodes_only: float
    usd_per_million_tokens_full_load: float
    usd_per_million_tokens_at_utilization: float


def cost(kind: str, nodes: int, total_tokens_per_second: float, storage: Storage, pricing: PricingConfig) -> Cost:
    price = node_price(pricing, kind)
    nodes_per_hour = nodes * price
    premium = nodes_per_hour * pricing.autopilot_premium_fraction
    capacity = storage.disk_gib * pricing.hyperdisk_ml_per_gib_month / HOURS_PER_MONTH
    throughput = storage.throughput_mibps * pricing.hyperdisk_ml_per_mibps_month / HOURS_PER_MONTH
    image = storage.size_gib * pricing.image_per_gib_month / HOURS_PER_MONTH
    fee = pricing.cluster_fee_per_hour
    if pricing.cluster_free_tier:
        fee = max(0.0, fee - FREE_TIER_CREDIT_PER_MONTH / HOURS_PER_MONTH)
    total = nodes_per_hour + premium + capacity + throughput + image + fee
    million_tokens_per_hour = total_tokens_per_second * 3600 / 1e6
    return Cost(
        pricing=kind,
        label=PRICING_LABELS[kind],
        node_per_hour=price,
        nodes_per_hour=nodes_per_hour,
        autopilot_premium_per_hour=premium,
        disk_capacity_per_hour=capacity,
        disk_throughput_per_hour=throughput,
        image_per_hour=image,
        cluster_fee_per_hour=fee,
        total_per_hour=total,
        total_per_month=total * HOURS_PER_MONTH,
        usd_per_million_tokens_nodes_only=nodes_per_hour / million_tokens_per_hour,
        usd_per_million_tokens_full_load=total / million_tokens_per_hour,
        usd_per_million_tokens_at_utilization=total / (million_tokens_per_hour * pricing.utilization),
    )


def pricings_of(source: CapacitySource) -> list[str]:
    """The ways the nodes of one capacity source can be billed."""
    if source.type == "reservation":
        return [billing.value for billing in ReservationBilling]
    return [source.type]


def budget_pricing(source: CapacitySource, pricing: PricingConfig) -> str:
    """The one pricing of a source that goal sizing compares with the budget."""
    return pricing.reservation_billing.value if source.type == "reservation" else source.type


def source_label(source: CapacitySource) -> str:
    if source.type == "reservation":
        owner = f" (project {source.project})" if source.project else ""
        return f"reservation `{source.name}`{owner}"
    if source.type == "flexStart":
        return f"Flex-start (nodes live at most {human_duration(source.max_run_duration_seconds)})"
    return "Spot"


@dataclass(frozen=True)
class SourcePlan:
    source: str
    type: str
    costs: tuple[Cost, ...]


# ---------------------------------------------------------------- goal sizing


class SizingError(ValueError):
    """The goal cannot be met within the limits; the message starts with the config key to change."""


@dataclass(frozen=True)
class Sizing:
    goal: str
    value: float
    max_nodes: int
    nodes: int
    budget_per_hour: float | None
    sources_within_budget: tuple[str, ...]


GOAL_UNITS = {
    "totalTokensPerSecond": "total tok/s",
    "outputTokensPerSecond": "output tok/s",
    "concurrentRequests": "concurrent requests",
    "requestsPerSecond": "req/s",
}


def _goal_met(goal: str, value: float, expectation: Expectation) -> bool:
    achieved = {
        "totalTokensPerSecond": expectation.total_tokens_per_second,
        "outputTokensPerSecond": expectation.output_tokens_per_second,
        "concurrentRequests": float(expectation.concurrent_requests),
        "requestsPerSecond": expectation.requests_per_second,
    }[goal]
    return achieved >= value


def size(config: StackConfig, target: TargetConfig) -> Sizing:
    """The smallest node count that meets the goal, and the capacity sources whose price fits the
    budget at that count. Raises `SizingError` naming the key when nothing fits."""
    goal, value = target.goal()
    limit = min(target.max_nodes, MAX_NODES)
    routing = config.routing.mode
    concurrency = config.workload.concurrency_per_node
    nodes = next(
        (count for count in range(1, limit + 1) if _goal_met(goal, value, expect(count, routing, concurrency))), None
    )
    if nodes is None:
        best = expect(limit, routing, concurrency)
        raise SizingError(
            f"target.{goal}: {value:,.0f} {GOAL_UNITS[goal]} is out of reach within target.maxNodes {limit} "
            f"({routing.value} routing gives {best.total_tokens_per_second:,.0f} total tok/s, "
            f"{best.requests_per_second:,.0f} req/s, {best.concurrent_requests:,} concurrent requests there); "
            "raise target.maxNodes or lower the goal"
        )
    within: tuple[str, ...] = ()
    if target.budget_per_hour is not None:
        total = expect(nodes, routing, concurrency).total_tokens_per_second
        storage = storage_of(config)
        prices = {
            source_label(source): cost(
                budget_pricing(source, config.pricing), nodes, total, storage, config.pricing
            ).total_per_hour
            for source in config.capacity.sources
        }
        within = tuple(label for label, per_hour in prices.items() if per_hour <= target.budget_per_hour)
        if not within:
            cheapest = min(prices.values())
            raise SizingError(
                f"target.budgetPerHour: USD {target.budget_per_hour:,.2f}/h is below the cheapest capacity source for "
                f"the {nodes} node(s) the goal needs (USD {cheapest:,.2f}/h all in); raise the budget, lower the goal "
                "or add a cheaper capacity source"
            )
    return Sizing(
        goal=goal,
        value=value,
        max_nodes=limit,
        nodes=nodes,
        budget_per_hour=target.budget_per_hour,
        sources_within_budget=within,
    )


# ---------------------------------------------------------------- the plan


@dataclass(frozen=True)
class CapacityPlan:
    stack: str
    nodes: int
    expectation: Expectation
    sources: tuple[SourcePlan, ...]
    sizing: Sizing | None
    utilization: float
    pricing: dict[str, Any]
    pricing_notes: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


PRICING_NOTES = (
    "Spot USD 32.61 and 1-year commitment USD 88.93 per A4 node-hour: the write-up (March 2026), "
    "RECIPE section 9; Spot prices move",
    "on-demand-equivalent (reservation without commitment) = 1-year price / (1 - 37%): derived, not verified",
    "3-year commitment = on-demand-equivalent x (1 - 55%): derived, not verified",
    "Flex-start = on-demand-equivalent x (1 - 53%), the 'up to 53%' discount: derived, not verified",
    "Autopilot premium on node-based (accelerator) billing: a configurable fraction, 10% an estimate",
    "Hyperdisk ML USD 0.08/GiB-month and USD 0.12 per MiB/s-month (one serving disk per zone), the weights' "
    "disk image USD 0.05/GiB-month: estimates, not verified",
    "cluster fee USD 0.10/h (GKE pricing, 'Cluster management fee and free tier'); the USD 74.40/month "
    "free-tier credit counts only with pricing.clusterFreeTier",
    f"USD per month = USD per hour x {HOURS_PER_MONTH} h",
)


def storage_of(config: StackConfig) -> Storage:
    return Storage(
        size_gib=config.weights.size_gib,
        serving_disks=len(config.zones),
        serving_throughput_mibps=config.weights.throughput_mibps,
    )


def plan(stack: str, config: StackConfig, nodes: int | None = None) -> CapacityPlan:
    count = nodes if nodes is not None else config.nodes
    expectation = expect(
        count, config.routing.mode, config.workload.concurrency_per_node, picker=config.routing.gateway.epp_image
    )
    storage = storage_of(config)
    sources = tuple(
        SourcePlan(
            source=source_label(source),
            type=source.type,
            costs=tuple(
                cost(kind, count, expectation.total_tokens_per_second, storage, config.pricing)
                for kind in pricings_of(source)
            ),
        )
        for source in config.capacity.sources
    )
    sizing = size(config, config.target) if config.target is not None else None
    return CapacityPlan(
        stack=stack,
        nodes=count,
        expectation=expectation,
        sources=sources,
        sizing=sizing,
        utilization=config.pricing.utilization,
        pricing=config.pricing.model_dump(mode="json", by_alias=True),
        pricing_notes=PRICING_NOTES,
    )


def human_duration(seconds: float) -> str:
    """604800 -> '7 days', 5400 -> '1 h 30 min', 45 -> '45 s'."""
    remaining = round(seconds)
    parts = []
    for unit, size_seconds in (("day", 86_400), ("h", 3_600), ("min", 60), ("s", 1)):
        count, remaining = divmod(remaining, size_seconds)
        if count:
            plural = "s" if unit == "day" and count > 1 else ""
            parts.append(f"{count} {unit}{plural}")
    return " ".join(parts) or "0 s"


def benchmark_clients(total_concurrency: int, concurrency_per_client: int) -> int:
    return math.ceil(total_concurrency / concurrency_per_client)


def benchmark_concurrency(config: StackConfig) -> int:
    return config.benchmark.concurrency or config.nodes * config.workload.concurrency_per_node


def resolve(config: StackConfig) -> StackConfig:
    """The config `pulumi up` deploys: a `target` turned into `capacity.nodes`, and the benchmark's
    client count checked against its CPU. Raises `SizingError` naming the key."""
    if config.target is not None:
        nodes = size(config, config.target).nodes
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
