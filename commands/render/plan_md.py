"""plan.md: a readable summary of a render, with the capacity and cost sheet."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from commands.plan.assumptions import COMPLETION_GAP, ExplainedExpectation, node_counts
from commands.plan.capacity_plan import CapacityPlan, Cost, capacity_plan
from commands.plan.figures import measured_on
from commands.plan.prices import NOT_PRICED_ITEMS, PRICED_ITEMS
from commands.render.capacity_report import CHART_FILE
from commands.render.operations_md import plan_section as operations_section
from commands.render.time_to_serve_md import section as time_to_serve_section
from common.sources import FLEX_START_QUOTA, cited
from components.capacity import FLEX_START, SPOT, capacity_kind
from components.hardware import B200_GPUS_PER_NODE
from stacks.args import serve_arguments
from stacks.capacity.expectation import output_from_shares
from stacks.config.routing import RoutingMode
from stacks.config.stack import StackConfig


def _control_plane_label(config: StackConfig) -> str:
    networks = config.cluster.authorized_networks
    if networks is None:
        ip_endpoint = "IP endpoint open (IAM/RBAC only)"
    else:
        ip_endpoint = f"IP endpoint limited to {', '.join(n.cidr_block for n in networks) or 'no outside range'}"
    nodes = "private nodes + Cloud NAT" if config.cluster.private_nodes else "nodes with external IPs"
    return f"DNS endpoint (IAM), {ip_endpoint}; {nodes}"


def _cluster_settings(config: StackConfig) -> list[tuple[str, str]]:
    weights = f"weights {'kept on delete (ABANDON)' if config.weights_protected else 'off'}"
    if config.cluster.existing:
        return [
            (
                "cluster",
                f"existing Autopilot cluster {config.cluster.name} in {config.region}, not managed by this stack: "
                f"looked up by `pulumi preview`/`up` and checked (Autopilot, GKE >= {config.minimum_gke_version}, "
                "Workload Identity, Managed Prometheus"
                + (", Gateway API" if config.routing.mode is RoutingMode.gateway else "")
                + "); offline the look-up returns a stand-in that passes the checks",
            ),
            ("control plane", "the existing cluster's (its Kubernetes provider comes from the look-up)"),
            ("deletion protection", f"cluster not managed here, {weights}"),
        ]
    return [
        (
            "cluster",
            f"{config.cluster.name}, {config.cluster.release_channel.value}, "
            + (
                f"created at the pinned version {config.cluster.min_master_version}"
                if config.cluster.min_master_version is not None
                else "created at the channel's default version (cluster.minMasterVersion pins one)"
            ),
        ),
        ("control plane", _control_plane_label(config)),
        ("deletion protection", f"cluster {'on' if config.protected else 'off'}, {weights}"),
    ]


def key_settings(config: StackConfig) -> list[tuple[str, str]]:
    return [
        ("environment", config.environment.value),
        ("project / region / zones", f"{config.project} / {config.region} / {', '.join(config.zones)}"),
        *_cluster_settings(config),
        ("A4 nodes (8x B200 each)", _nodes_setting(config)),
        ("capacity fallback", " -> ".join(source.label for source in config.capacity.sources)),
        ("profile", _profile_setting(config)),
        ("model", f"{config.weights.model}@{config.weights.revision} served as `{config.served_model_name}`"),
        ("weights", f"Hyperdisk ML {config.weights.size_gib} GiB, {config.serving_throughput_mibps:,} MiB/s"),
        (
            "engine",
            f"{config.engine.image}, DP {config.engine.data_parallel_size} x TP {config.engine.tensor_parallel_size}",
        ),
        (
            "vllm serve",
            (
                f"rank 0 of {config.engine.data_parallel_size} (rank i the same on port {config.engine.port}+i): "
                if config.serves_per_rank
                else ""
            )
            + " ".join(f"`{arg}`" for arg in serve_arguments(config)),
        ),
        ("routing", _routing_setting(config)),
    ]


def _routing_setting(config: StackConfig) -> str:
    """Which serving layout the routing mode uses: ClusterIP keeps the measured one."""
    engine = config.engine
    if config.routing.mode is RoutingMode.gateway and not config.serves_per_rank:
        return (
            f"gateway: one `vllm serve` per pod for its {engine.data_parallel_size} data-parallel ranks on port "
            f"{engine.port} (routing.gateway.endpointPerRank false, the pod layout the write-up measured with Qwen "
            "3.5 27B): one endpoint of the "
            f"InferencePool per pod, the picker sees one engine in {engine.data_parallel_size}"
        )
    if config.routing.mode is RoutingMode.gateway:
        last = engine.port + engine.data_parallel_size - 1
        ports = f"port {engine.port}" if last == engine.port else f"ports {engine.port}-{last}"
        return (
            f"gateway: one `vllm serve` per data-parallel rank, each in its own container on {ports} "
            f"(rank i a server of data parallel 1 on port {engine.port}+i), each port an "
            "endpoint of the InferencePool the picker scores on its own; this per-rank layout is not measured"
        )
    return (
        f"clusterip: one `vllm serve` per pod for its {engine.data_parallel_size} data-parallel ranks on port "
        f"{engine.port}, vLLM balancing between them (the layout the write-up measured with Qwen 3.5 27B)"
    )


def _profile_setting(config: StackConfig) -> str:
    profile = config.serving_profile
    if config.serves_profile_checkpoint:
        return f"{profile.name.value}: {profile.summary}"
    return (
        f"{profile.name.value}: its engine and workload defaults only; the stack serves another checkpoint than "
        f"the profile's {profile.checkpoint.model}"
    )


def _nodes_setting(config: StackConfig) -> str:
    """The node count, and who moves the pods (one per node) below it: the autoscaler, the schedule."""
    if config.target is None:
        nodes = str(config.nodes)
    else:
        goal, value = config.target.goal()
        nodes = f"{config.nodes} (the ceiling), sized by the planner from target.{goal} {value:,.0f}"
    movers = []
    if config.autoscaling.enabled:
        movers.append(f"the autoscaler runs {config.autoscaling.min_replicas}-{config.max_replicas} pods")
    if config.schedule.enabled:
        movers.append("the schedule sets the pods in and out of its windows")
    warm = config.warm_capacity
    held = (
        f"; plus {warm.nodes} held (warmCapacity.nodes, idle until a new pod lands on one: up to "
        f"{config.max_replicas + warm.nodes} A4 nodes up at once, see Time to serve)"
        if warm.enabled
        else ""
    )
    if not movers:
        return nodes + held
    if config.target is not None:
        ceiling = nodes
    elif config.max_replicas != config.nodes:  # autoscaling.maxReplicas above (or below) capacity.nodes
        ceiling = f"{config.max_replicas} at most (autoscaling.maxReplicas; capacity.nodes {nodes})"
    else:
        ceiling = f"{nodes} at most"
    return f"{ceiling}; one pod per node: {' and '.join(movers)} (see Operations){held}"


def _ms(value: float | None) -> str:
    if value is None:
        return "not measured"
    return f"{value:,.0f} ms" if value < 1000 else f"{value / 1000:,.1f} s"


def _number(value: float | None, digits: int = 0) -> str:
    return "not measured" if value is None else f"{value:,.{digits}f}"


def _usd_per_million(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _throughput_note(expected: ExplainedExpectation) -> str:
    if expected.per_node_tokens_per_second is None or expected.scaling_efficiency is None:
        return expected.null_reasons.get("total_tokens_per_second", "not measured")
    if expected.basis == "extrapolated":
        measured = node_counts(expected.measured_nodes)
        note = (
            f"{expected.per_node_tokens_per_second:,.0f} per node, extrapolated: no run at {expected.nodes} node(s); "
            f"the nearest per-node figure of the runs at {measured} node(s) held, scaling not measured here "
            f"({measured_on(expected, 'runs')})"
        )
    else:
        note = (
            f"{expected.per_node_tokens_per_second:,.0f} per node ({measured_on(expected, expected.basis)}), "
            f"scaling efficiency {expected.scaling_efficiency:.1%} (per node, against {expected.measured_nodes[0]} "
            "node(s))"
        )
    if expected.routing == RoutingMode.gateway.value and expected.routing_factor is not None:
        note += f", {expected.routing_factor:.1%} of ClusterIP"
    return note


def _output_note(expected: ExplainedExpectation) -> str:
    if expected.output_tokens_per_second is None:
        return expected.null_reasons.get("output_tokens_per_second", "not measured")
    if expected.output_basis is not None:
        reported = node_counts(expected.output_measured_nodes)
        basis = measured_on(expected, expected.output_basis, expected.output_releases)
        if output_from_shares(expected.output_measured_nodes, expected.measured_nodes):
            return f"{basis}, the total x the output share of the runs that report it (at {reported} node(s))"
        return f"{basis}, per node from the runs that report it (at {reported} node(s))"
    extrapolated = ", extrapolated as the total is" if expected.basis == "extrapolated" else ""
    return f"the total x the load's mean output share (see Assumptions){extrapolated}"


def _requests_note(expected: ExplainedExpectation) -> str:
    if expected.requests_basis is None or expected.counted_requests_per_second is None:
        return _figure_note(expected, "requests_per_second", "not measured")
    counted = node_counts(expected.requests_measured_nodes)
    count = f"{expected.requests_basis} (counted at {counted} node(s))"
    if expected.requests_basis == "extrapolated":
        count = (
            f"extrapolated: no run at {expected.nodes} node(s) counted requests (counted at {counted} node(s)); the "
            "nearest per-node count held"
        )
    count = measured_on(expected, count, expected.requests_releases)
    completes = expected.requests_per_second
    # a count within the gap of what the load completes is the count (Assumptions says no more of it)
    if completes is not None and completes < expected.counted_requests_per_second * (1 - COMPLETION_GAP):
        return (
            f"what this load completes: the total tok/s ({expected.basis}) over the load's mean request (see "
            "Assumptions); the "
            f"benchmark counted {expected.counted_requests_per_second:,.0f}, {count}"
        )
    return f"{count}, as the benchmark counted completions (see Assumptions)"


def _latency_note(expected: ExplainedExpectation, key: str) -> str:
    if expected.latency_basis is None:
        return expected.null_reasons.get(key, "not measured")
    how = {
        "measured": f"the median at {expected.nodes} node(s)",
        "interpolated": "interpolated between the medians of the nearest measured node counts",
        "extrapolated": f"extrapolated: no run at {expected.nodes} node(s), the median of the nearest measured "
        "node count held",
    }[expected.latency_basis]
    return f"{measured_on(expected, how, expected.latency_releases)}; under the full load"


def _figure_note(expected: ExplainedExpectation, key: str, measured: str) -> str:
    return expected.null_reasons.get(key, measured)


def _monthly(item: Cost) -> str:
    if round(item.total_per_month_min) == round(item.total_per_month_max):
        return f"{item.total_per_month_max:,.0f}"
    return f"{item.total_per_month_min:,.0f}..{item.total_per_month_max:,.0f}"


# workload.concurrencyPerNode is a setting; only the write-up's configuration ran it (2,000 per node).
CONCURRENCY_NOT_MEASURED = (
    ", a setting: the clients the stack sends, not a load this configuration was measured to serve (not measured)"
)


def capacity_section(capacity: CapacityPlan, chart: str) -> list[str]:
    """Expected throughput, latency and cost, every figure with the measurement it rests on or the
    reason it is not given."""
    expected = capacity.expectation
    lines = [
        f"Expected for {expected.nodes} A4 node(s) ({expected.gpus} B200) with {expected.routing} routing "
        f"([chart]({chart}): throughput and cost by node count).",
        "",
    ]
    if expected.not_measured is not None:
        lines += [
            f"**Not measured**: {expected.not_measured.reason}. No throughput, request or latency figure is given "
            "for it (the measurements of other configurations do not apply).",
            "",
            f"How to measure it: {expected.not_measured.how_to_measure}.",
            "",
        ]
    lines += [
        "| figure | expected | basis |",
        "|---|---|---|",
        f"| total tok/s (input + output) | {_number(expected.total_tokens_per_second)} "
        f"| {_throughput_note(expected)} |",
        f"| output tok/s | {_number(expected.output_tokens_per_second)} | {_output_note(expected)} |",
        f"| concurrent requests | {expected.concurrent_requests:,} | {expected.nodes} x workload.concurrencyPerNode"
        f"{'' if expected.not_measured is None else CONCURRENCY_NOT_MEASURED} |",
        f"| completed req/s | {_number(expected.requests_per_second)} | {_requests_note(expected)} |",
        f"| TPOT median (no p90/p99 measured) | {_ms(expected.tpot_median_ms)} "
        f"| {_latency_note(expected, 'tpot_median_ms')} |",
        f"| TTFT median (no p90/p99 measured) | {_ms(expected.ttft_median_ms)} "
        f"| {_latency_note(expected, 'ttft_median_ms')} |",
        "",
        *_floor_line(capacity),
        "Assumptions:",
        "",
        *[f"- {assumption}" for assumption in expected.assumptions],
        "",
        f"Running hours: {_hours(capacity)}: {capacity.running.basis}.",
        "",
        "Cost per capacity source, in fallback order (USD; per hour with every node up: nodes x price, the "
        "Autopilot premium, the weight disks and their disk image, the cluster fee"
        + (
            f", not the {capacity.running.held_nodes} held node(s), which add {capacity.running.held_nodes} x the "
            "node price and premium in the hours they are held"
            if capacity.running.held_nodes
            else ""
        )
        + "; per month for the running hours above, min..max where an autoscaler decides"
        + (
            ""
            if expected.total_tokens_per_second is None
            else f"; per million tokens at the total tok/s above, {measured_on(expected, expected.basis)}"
        )
        + "):",
        "",
        "| source | pricing | per node-hour | nodes | Autopilot premium | disks + image | cluster fee "
        "| per hour | per month | per M total tokens (input + output), nodes only | per M total tokens, all in "
        f"| per M total tokens, all in at {capacity.utilization:.0%} load | per M output tokens, all in |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for source in capacity.sources:
        for item in source.costs:
            storage = item.disk_capacity_per_hour + item.disk_throughput_per_hour + item.image_per_hour
            lines.append(
                f"| {source.source} | {item.label} | {item.node_per_hour:,.2f} | {item.nodes_per_hour:,.2f} "
                f"| {item.autopilot_premium_per_hour:,.2f} | {storage:,.2f} | {item.cluster_fee_per_hour:,.2f} "
                f"| {item.total_per_hour:,.2f} | {_monthly(item)} "
                f"| {_usd_per_million(item.usd_per_million_tokens_nodes_only)} "
                f"| {_usd_per_million(item.usd_per_million_tokens_full_load)} "
                f"| {_usd_per_million(item.usd_per_million_tokens_at_utilization)} "
                f"| {_usd_per_million(item.usd_per_million_output_tokens_full_load)} |"
            )
    lines += [
        "",
        f"All in: {PRICED_ITEMS}. Not priced, though Google Cloud bills those the stack has: {NOT_PRICED_ITEMS}.",
        "",
        "Prices:",
        "",
        *[f"- {note}" for note in capacity.pricing_notes],
    ]
    if capacity.sizing is not None:
        sizing = capacity.sizing
        lines += [
            "",
            f"Sized from target.{sizing.goal} {sizing.value:,.0f} {sizing.unit}: {sizing.nodes} node(s), the smallest "
            f"count within target.maxNodes {sizing.max_nodes} that meets it"
            + ("" if sizing.achieved is None else f" ({sizing.achieved:,.0f} {sizing.unit} expected there)")
            + f". It sized {sizing.sized}.",
            *[f"Caveat: {note}." for note in sizing.notes],
        ]
        if sizing.budget_per_hour is not None:
            lines.append(sizing.budget_line())
    return lines


CONSUMPTION_OPTIONS_SOURCE = (
    "GKE docs 'About accelerator consumption options for AI/ML workloads in GKE', "
    "https://cloud.google.com/kubernetes-engine/docs/concepts/consumption-option"
)


def _quota_line(config: StackConfig) -> str:
    """The accelerator quota the stack needs at its peak: GKE counts a custom ComputeClass's nodes against it."""
    held = config.warm_capacity.nodes if config.warm_capacity.enabled else 0
    peak = config.max_replicas + held
    unreserved = [source.label for source in config.capacity.sources if not capacity_kind(source.type).reserved]
    if not unreserved:
        return (
            f"Quota: the stack draws on reservations only, for up to {peak} A4 node(s); their capacity was set when "
            "they were made (what quota a reservation's nodes count against is not checked here)."
        )
    types = {source.type for source in config.capacity.sources}
    shared = (
        f" (Spot draws on preemptible quota, and so does Flex-start by {cited(FLEX_START_QUOTA)}, so one "
        "preemptible quota of that size may serve both; not verified for A4 on GKE here)"
        if {SPOT.type, FLEX_START.type} <= types
        else ""
    )
    return (
        f"Quota: up to {peak * B200_GPUS_PER_NODE:,} B200 GPUs ({peak} A4 node(s) at the most"
        + (f", {held} of them held" if held else "")
        + f") in {config.region}, from the quota of {', '.join(unreserved)}: each consumption option needs the quota "
        f"the page's table names for it{shared}, the nodes of a custom ComputeClass count against the project's, "
        "and a project starts with little "
        f"({CONSUMPTION_OPTIONS_SOURCE}; a reservation's nodes are not counted here, not checked). Check it before "
        "the first `pulumi up`: a request beyond it fails with 'Quota exceeded' and the pods stay Pending."
    )


def _floor_line(capacity: CapacityPlan) -> list[str]:
    floor = capacity.floor
    if floor is None:
        return []
    return [
        f"These are the autoscaler's ceiling ({capacity.nodes} pods). At its floor of {floor.nodes} pod(s): "
        + (
            "total tok/s not measured"
            if floor.total_tokens_per_second is None
            else f"{floor.total_tokens_per_second:,.0f} total tok/s ({floor.basis})"
        )
        + f", {floor.concurrent_requests:,} concurrent requests.",
        "",
    ]


def _hours(capacity: CapacityPlan) -> str:
    running = capacity.running
    low, high = running.node_hours_per_month_min, running.node_hours_per_month_max
    weekly_low, weekly_high = running.node_hours_per_week_min, running.node_hours_per_week_max
    if round(low) == round(high):
        return f"{high:,.0f} node-hours a month ({weekly_high:,.1f} a week)"
    return f"{low:,.0f}..{high:,.0f} node-hours a month ({weekly_low:,.1f}..{weekly_high:,.1f} a week)"


def policy_section(policy: dict[str, Any]) -> list[str]:
    """The verdicts of the policy pack (`policy.json`) as a table."""
    lines = [
        "## Policy verdicts",
        "",
        f"{policy['policies']} policies of pack `{policy['pack']}`: {policy['mandatory']} mandatory, "
        f"{policy['advisory']} advisory violation(s).",
    ]
    if policy["violations"]:
        lines += ["", "| level | policy | resource | message |", "|---|---|---|---|"]
        lines += [
            f"| {item['level']} | {item['policy']} | {item['resource']} | {item['message'].replace('|', '/')} |"
            for item in policy["violations"]
        ]
    return lines


def plan_markdown(
    stack: str,
    config: StackConfig,
    records: list[dict[str, Any]],
    outputs: dict[str, Any],
    manifests: list[str],
    placeholders: list[str],
    policy: dict[str, Any],
    notes: Sequence[str] = (),
    warnings: Sequence[str] = (),
) -> str:
    """plan.md; `warnings`: what the program warned of, which `pulumi up` shows as warnings."""
    lines = [f"# Plan for stack `{stack}`", ""]
    if placeholders:
        lines += [
            "Offline placeholders (secrets that cannot be decrypted here): "
            + ", ".join(f"`{key}`" for key in placeholders),
            "",
        ]
    if notes:
        lines += ["From the stack file:", "", *[f"- {note}" for note in notes], ""]
    if warnings:
        lines += [
            "The program warns (`pulumi up` shows these as warnings):",
            "",
            *[f"- {line}" for line in warnings],
            "",
        ]
    lines += ["## Key settings", "", "| setting | value |", "|---|---|"]
    lines += [f"| {name} | {value} |" for name, value in key_settings(config)]
    lines += [
        "",
        "## Capacity and cost",
        "",
        *capacity_section(capacity_plan(stack, config), CHART_FILE),
        "",
        _quota_line(config),
    ]
    lines += ["", *time_to_serve_section(config)]
    lines += ["", *operations_section(config)]
    lines += ["", *policy_section(policy)]

    children: dict[str | None, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        children[record["parent"]].append(record)
    components = [record for record in records if not record["custom"]]
    lines += ["", f"## Resources ({len(records)})", ""]
    for component in components:
        lines += [f"### {component['name']} ({component['type']})", ""]
        members = [record for record in children[component["name"]] if record["custom"]]
        lines += [f"- `{record['type']}` {record['name']}" for record in members] or ["- (components only)"]
        lines.append("")
    top_level = [record for record in children[None] if record["custom"]]
    if top_level:
        lines += ["### stack-level", ""] + [f"- `{record['type']}` {record['name']}" for record in top_level] + [""]
    lines += [f"## Kubernetes manifests ({len(manifests)})", ""] + [f"- manifests/{name}" for name in manifests]
    lines += ["", "## Stack outputs", ""] + [f"- `{key}`: `{value}`" for key, value in sorted(outputs.items())]
    return "\n".join(lines) + "\n"
