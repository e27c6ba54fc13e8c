"""plan.md's operations section: scaling settings, their expected reaction time, schedule and the
cost of a new replica's warm-up (its time to serve, commands/render/time_to_serve.py)."""

from __future__ import annotations

from commands.render.time_to_serve import TimeToServe, time_to_serve
from common.text import human_duration
from components.capacity import capacity_kind
from stacks.args import (
    autoscaling_metric,
    flex_start_recycling_seconds,
    pod_move_seconds,
    scale_down_stabilization_seconds,
    schedule_steps,
    source_settings,
)
from stacks.capacity.planner import budget_pricing, node_price
from stacks.capacity.time_to_serve import Phase
from stacks.config.capacity import FlexStartSource
from stacks.config.stack import StackConfig


def _pods(count: int) -> str:
    return f"{count} pod{'' if count == 1 else 's'}"


def _minutes(seconds: int) -> str:
    return f"{seconds / 60:.0f} min"


def _basis(model: TimeToServe, total: Phase) -> str:
    if not total.known:
        return "assumed, not measured"
    if any(phase.basis == "assumed" for phase in model.phases):
        return "computed from the phases, the pod phase assumed: measured on another vLLM release"
    return "computed from the measured phases"


def _serves_after(model: TimeToServe, where: str = "") -> str:
    return f"~{_minutes(model.planning_seconds)}{where} ({_basis(model, model.cold)}; see Time to serve)"


def _serves_after_held(model: TimeToServe, where: str = " on a held node") -> str:
    return f"~{_minutes(model.held_planning_seconds)}{where} ({_basis(model, model.held)})"


def _new_pod_serves(config: StackConfig, model: TimeToServe) -> str:
    """When a new pod serves: on a new node, and first on one of the held nodes where the stack holds some."""
    if not config.warm_capacity.enabled:
        return _serves_after(model)
    return f"{_serves_after_held(model)}, {_serves_after(model, ' on a new node')}"


def autoscaler_headroom(config: StackConfig) -> int:
    """The pods the autoscaler may add above its floor (0 without one, or with min = max)."""
    scaling = config.autoscaling
    return config.max_replicas - scaling.min_replicas if scaling.enabled else 0


def surge_reaction(config: StackConfig, model: TimeToServe | None = None) -> str:
    """How long a sustained surge takes to get its first extra pod serving, and all of them: the first
    `warmCapacity.nodes` new pods land on held nodes, the rest wait for a new node each."""
    model = model or time_to_serve(config)
    scaling = config.autoscaling
    headroom = config.max_replicas - scaling.min_replicas
    if headroom == 0:
        return f"none: min = max = {_pods(config.max_replicas)}"
    held = min(config.warm_capacity.nodes, headroom) if config.warm_capacity.enabled else 0
    ready = [
        pod * scaling.scale_up_period_seconds + (model.held_planning_seconds if pod < held else model.planning_seconds)
        for pod in range(headroom)
    ]
    first = _serves_after_held(model) if held else _serves_after(model)
    plural = "" if headroom == 1 else "s"
    reaction = f"first new pod ready after {first}; all {headroom} new pod{plural} serve after ~{_minutes(max(ready))}"
    if not held:
        return reaction
    if held == headroom:
        return reaction + " (each on a held node)"
    return (
        f"{reaction} (the first {held} on held nodes, the other {_pods(headroom - held)} on a new node each; a "
        "held node the buffer provisions again meanwhile is not counted)"
    )


def short_burst(config: StackConfig, model: TimeToServe) -> str:
    """What a burst that ends before a new pod serves costs: the HPA adds what the load asks for meanwhile (the
    pods it adds serve none of it), and the scale-down stabilization keeps them after it (a time-to-serve review)."""
    scaling = config.autoscaling
    return (
        f"the pods its load asks for are still added, one per {scaling.scale_up_period_seconds} s, though none serves "
        f"before ~{_minutes(model.planning_seconds)}; they stay {scale_down_stabilization_seconds(config)} s after the "
        f"load falls, each an A4 node billed meanwhile: a raised `scaleUpPeriodSeconds` adds fewer for a short burst "
        "and reacts later to a long one"
    )


def priced_sources(config: StackConfig, hours: float, premium: bool, decimals: int = 0) -> list[str]:
    """`hours` of one A4 node on each of the stack's capacity sources in fallback order, at the stack's
    own prices (with the Autopilot premium when `premium`): "USD 9.57 on Spot". A reservation's node costs
    nothing more: the reservation is billed used or not (Prices)."""
    pricing = config.pricing
    costs = []
    for source in config.capacity.sources:
        if capacity_kind(source.type).reserved:
            costs.append(f"nothing more on {source.label} (billed used or not, see Prices)")
            continue
        per_hour = node_price(pricing, budget_pricing(source, pricing))
        costs.append(
            f"USD {per_hour * (1 + pricing.autopilot_premium_fraction if premium else 1) * hours:,.{decimals}f} on "
            f"{source.label}"
        )
    return costs


def warm_up_cost(config: StackConfig, seconds: int) -> str:
    """What one node costs while its pod warms up, for each of the stack's capacity sources in fallback
    order, at the stack's own prices (pricing.*, the Autopilot premium included)."""
    pricing = config.pricing
    return (
        "the node is billed during warm-up: "
        + "; ".join(priced_sources(config, seconds / 3600, premium=True, decimals=2))
        + f" (per node: its node-hour price x {seconds / 3600:.2f} h, with the Autopilot premium of "
        f"{pricing.autopilot_premium_fraction:.0%}; the stack's pricing settings, see Prices)"
    )


def _with_the_autoscaler(config: StackConfig) -> str:
    """What the HPA does with a step's count (Kubernetes 'Horizontal Pod Autoscaling': a target scaled to 0
    pauses it; it keeps the count within its bounds and scales down only after its stabilization window)."""
    if not autoscaler_headroom(config):
        return ""
    return (
        f"; a step to 0 pauses the autoscaler, any other count is where it starts from: it raises a step below "
        f"{config.autoscaling.min_replicas} at once, and takes one above what the load needs back down after "
        f"{scale_down_stabilization_seconds(config)} s of lower demand"
    )


def held_beyond_headroom(config: StackConfig) -> str | None:
    """What the held nodes no scale-up can use are for (None: every held node may take a new pod)."""
    # Without an autoscaler, or with a schedule, pods are added by hand or by the schedule's steps: not counted.
    if not config.warm_capacity.enabled or not config.autoscaling.enabled or config.schedule.enabled:
        return None
    held = config.warm_capacity.nodes
    headroom = autoscaler_headroom(config)
    if held <= headroom:
        return None
    spare = held - headroom
    return (
        f"{held} held, and the autoscaler adds {f'at most {_pods(headroom)}' if headroom else 'no pod (min = max)'}: "
        f"{spare} of them only ever "
        f"take{'s' if spare == 1 else ''} a pod that replaces one (a Spot preemption, a node repair or upgrade), "
        "billed all the same (see the monthly cost)"
    )


def flex_start_recycling(config: StackConfig, model: TimeToServe) -> str | None:
    """When Flex-start nodes are replaced, and what a pod's move costs (None: no Flex-start source)."""
    source = next((item for item in config.capacity.sources if isinstance(item, FlexStartSource)), None)
    if source is None:
        return None
    lead = source_settings(source, flex_start_recycling_seconds(config))["node_recycling_lead_time_seconds"]
    reason = (
        f"nodeRecyclingLeadTimeSeconds {lead:,} s"
        if source.node_recycling_lead_time_seconds is not None
        else f"{lead:,} s: left null, the most pods, {config.max_replicas}, x "
        f"{human_duration(pod_move_seconds(config))}, the margin a move is given: 15 min for a node (a margin chosen "
        f"here, not measured), twice the pod's planning figure of {human_duration(model.held_planning_seconds)} for "
        "its start"
    )
    fewest = config.autoscaling.min_replicas if config.autoscaling.enabled else config.nodes
    fewer = "none serving while the only pod moves" if fewest == 1 else "one pod fewer serving during each move"
    return (
        f"a Flex-start node runs at most {human_duration(source.max_run_duration_seconds)}, so each pod on one "
        f"moves at least that often; GKE requests its "
        f"replacement {human_duration(lead)} before the end ({reason}), and the pods move one at a time as the "
        f"PodDisruptionBudget allows, {fewer}: {_serves_after_held(model, ' where the replacement node is already up')}"
        f", {_serves_after(model, ' where it is not')}; a move itself is not measured, nor is how GKE drains the "
        "node onto its replacement"
    )


def plan_section(config: StackConfig) -> list[str]:
    """plan.md: scaling settings, their expected reaction time, schedule and warm-up cost."""
    model = time_to_serve(config)
    cold = model.planning_seconds
    lines = ["## Operations", "", "| setting | value |", "|---|---|"]
    scaling = config.autoscaling
    if scaling.enabled:
        metric, target = autoscaling_metric(config)
        # GitHub tables split cells on every unescaped pipe, code spans included.
        shown_metric = metric.replace("|", "\\|")
        lines.append(
            f"| autoscaling | HPA `{shown_metric}` target {target} per pod, "
            f"{scaling.min_replicas}-{config.max_replicas} pods |"
        )
        if autoscaler_headroom(config):
            lines += [
                f"| scale up | +1 pod (one A4 node) per {scaling.scale_up_period_seconds} s; a new pod serves after "
                f"{_new_pod_serves(config, model)} |",
                f"| scale down | after {scale_down_stabilization_seconds(config)} s of lower demand, -1 pod per "
                f"{scaling.scale_down_period_seconds} s |",
            ]
        else:
            lines.append(f"| scale up, scale down | none: min = max = {_pods(config.max_replicas)}, the count holds |")
        lines.append(f"| reaction to a sustained surge | {surge_reaction(config, model)} |")
        if autoscaler_headroom(config):
            lines.append(f"| a burst shorter than the warm-up | {short_burst(config, model)} |")
    else:
        lines.append(f"| autoscaling | off: {_pods(config.nodes)}, scale by hand (`scaleByHand` output) |")
    if config.schedule.enabled:
        steps = schedule_steps(config)
        lines += [
            f"| schedule ({config.schedule.time_zone}) | "
            + "; ".join(f"`{step.cron}` -> {_pods(step.replicas)}" for step in steps)
            + _with_the_autoscaler(config)
            + " |",
        ]
    else:
        lines.append("| schedule | none (pods run around the clock) |")
    held = (
        f"; a pod on a held node warms up for {_serves_after_held(model, '')} on a node "
        "already up and billed (Time to serve, held nodes)"
        if config.warm_capacity.enabled
        else ""
    )
    lines.append(f"| warm-up per new pod | {_serves_after(model)}; {warm_up_cost(config, cold)}{held} |")
    spare = held_beyond_headroom(config)
    if spare is not None:
        lines.append(f"| held nodes | {spare} |")
    recycling = flex_start_recycling(config, model)
    if recycling is not None:
        lines.append(f"| Flex-start recycling | {recycling} |")
    alerts = config.monitoring.alerts
    channel = alerts.notification_channel or (f"email {alerts.email}" if alerts.email else "none (console only)")
    lines += [
        f"| dashboard | {'on' if config.monitoring.dashboard else 'off'} |",
        f"| alerts | {'on' if alerts.enabled else 'off'}, notify: {channel} |",
    ]
    return lines
