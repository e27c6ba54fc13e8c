"""plan.md's time-to-serve section: a new replica's start-up per phase with the basis of each figure,
a simultaneous wake of every node, and the goal with what each saving rests on."""

from __future__ import annotations

import math

from commands.plan.hours import held_hours_per_month
from commands.render.operations_md import autoscaler_headroom, priced_sources
from commands.render.time_to_serve import TimeToServe, WakeRead, time_to_serve
from common.gke_versions import CAPACITY_BUFFER_MIN_GKE_VERSION
from common.sources import WRITEUP_VLLM_RELEASE
from stacks.args import schedule_steps
from stacks.capacity.time_to_serve import (
    Phase,
    led_schedule_steps,
    planning_seconds,
    pod_measurement_gap,
    recorded_startup,
    wake_lead_seconds,
    wake_planning_seconds,
)
from stacks.config.stack import StackConfig


def duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:,.0f} s"
    return f"{seconds / 60:,.1f} min"


def phase_value(phase: Phase) -> str:
    if phase.seconds_min is None or phase.seconds_max is None:
        return "not measured"
    if round(phase.seconds_min) == round(phase.seconds_max):
        return duration(phase.seconds_max)
    return f"{duration(phase.seconds_min)}..{duration(phase.seconds_max)}"


def _cell(text: str) -> str:
    return text.replace("|", "/")


def section(config: StackConfig, model: TimeToServe | None = None) -> list[str]:
    model = model or time_to_serve(config)
    lines = [
        "## Time to serve",
        "",
        f"A new serving replica of profile `{model.profile}`, phase by phase (measured: a measurement of this "
        "configuration; assumed: measured on another vLLM release and carried over, or a sum with such a phase "
        "in it; computed: arithmetic on this stack's settings; held: a node already up; not measured: no figure, "
        "how to measure it is given):",
        "",
        "| phase | time | basis | source |",
        "|---|---|---|---|",
    ]
    rows: list[tuple[Phase, tuple[float, str] | None]] = [(phase, None) for phase in model.phases]
    rows += [
        (model.cold, (model.planning_seconds, model.planning_basis)),
        (model.held, (model.held_planning_seconds, model.held_planning_basis)),
    ]
    lines += [
        f"| {phase.label} | {phase_value(phase)} | {phase.basis} | {_cell(phase.source)}{_planned(phase, plan)} |"
        for phase, plan in rows
    ]
    lines += [
        "",
        f"Planning figure (the scale-down window, with an autoscaler the queue alert; with the others' reads of "
        f"the checkpoint when pods start together, the schedule's lead and the no-ready-replica alert): "
        f"{duration(model.planning_seconds)}, {model.planning_basis}.",
    ]
    every_pod = wake_planning_seconds(config, config.max_replicas)
    if every_pod > model.planning_seconds:
        lines[-1] += (
            f" Every pod at once (a fleet restart, the no-ready-replica alert): {duration(every_pod)}, "
            f"{config.nodes_per_disk} pods on one zone's disk reading the larger checkpoint together (computed, "
            "as below)."
        )
    wake = model.wake
    if wake is None:
        lines += ["", "Simultaneous wake: not computed (the checkpoint's size is not known: weights.checkpointGib)."]
    else:
        sized = (
            f", sized from weights.targetLoadSeconds {wake.sized_from_target}"
            if wake.sized_from_target is not None
            else ""
        )
        lines += [
            "",
            f"Simultaneous wake of {wake.nodes} node(s) ({_when_all_start(config, wake.nodes)}) over {wake.zones} "
            f"zone(s): up to {wake.nodes_per_disk} "
            f"node(s) read one zone's disk of {wake.disk_mibps:,} MiB/s{sized}, {wake.per_node_mibps:,.0f} MiB/s "
            f"each: the checkpoint reads in ~{duration(wake.seconds or 0)} (computed; the VM's own Hyperdisk "
            "limit for a4-highgpu-8g not verified here)." + _uneven_spread(wake),
        ]
        if wake.warning:
            lines += ["", f"**Warning**: {wake.warning}."]
    lines += ["", *warm_capacity_lines(config, model), *schedule_lead_lines(config)]
    if model.notes:
        lines += ["", "This stack's start-up settings:", "", *[f"- {_cell(note)}" for note in model.notes]]
    goal = f"{model.goal_pod_seconds / 60:g} min"
    lines += [
        "",
        f"Goal: for the recipe profile, the pod phase from ~10 min (measured on vLLM {WRITEUP_VLLM_RELEASE}) to "
        f"<= {goal}, and a replica on a held node ready in <= {goal}. Not measured yet; the levers toward it, and "
        "which this stack applies:",
        "",
        *[f"- {source}" for source in model.goal_sources],
    ]
    return lines


def _planned(phase: Phase, plan: tuple[float, str] | None) -> str:
    """A sum nobody measured still has the figure the stack plans with: said beside it, so that the table and the
    planning figure below do not read as two answers."""
    if plan is None or phase.known:
        return ""
    return f"; planned with {duration(plan[0])}, {_cell(plan[1])}"


def _uneven_spread(wake: WakeRead) -> str:
    """Over several zones the figure assumes the pods spread evenly, which nothing makes them do."""
    if wake.zones == 1 or wake.seconds is None:
        return ""
    crowded = wake.seconds * wake.nodes / wake.nodes_per_disk
    return (
        f" That is if the pods spread evenly over the zones, which nothing makes them do (a zone with free capacity "
        f"may take them all): all {wake.nodes} on one zone's disk read it in ~{duration(crowded)}, the figure the "
        "startup probe allows for."
    )


def _when_all_start(config: StackConfig, nodes: int) -> str:
    """When `nodes` pods, the replica ceiling, start at once: a fleet restart, and a schedule's step to that many;
    a schedule whose largest step is smaller says so, as does an autoscaler that adds one pod at a time."""
    when = ["the worst case: every pod at once, as after a fleet restart"]
    largest = max((step.replicas for step in schedule_steps(config)), default=0) if config.schedule.enabled else 0
    if largest >= nodes:
        when.append(f"or the schedule's step to {largest}")
    elif largest:
        when.append(f"the schedule's largest step starts {largest}")
    if autoscaler_headroom(config):
        when.append(f"the autoscaler adds 1 pod per {config.autoscaling.scale_up_period_seconds} s")
    return "; ".join(when)


def warm_capacity_lines(config: StackConfig, model: TimeToServe) -> list[str]:
    warm = config.warm_capacity
    if not warm.enabled:
        return [
            "Held nodes: none. A new replica waits for a node first; `warmCapacity.nodes` holds spare A4 nodes "
            f"(a GKE CapacityBuffer, GKE >= {CAPACITY_BUFFER_MIN_GKE_VERSION}), billed while held.",
        ]
    hours = held_hours_per_month(config)
    when = "in the schedule's serving windows" if config.schedule.enabled else "around the clock"
    return [
        f"Held nodes: {warm.nodes} A4 node(s) {when} (CapacityBuffer `{config.routing.service_name}-held` of the "
        f"serving Deployment's pods): {hours:,.0f} node-hours a month, "
        + "; ".join(priced_sources(config, hours, premium=False))
        + " a month (the stack's capacity sources in fallback order at their VM prices, before the Autopilot "
        "premium; the monthly costs per source count them as serving nodes). A replica that lands on "
        f"one serves after {_held_serves(model)}."
        + (
            " The schedule's steps set how many are held: `pulumi up` creates the buffer holding none, and the first "
            "node is held from the next step that sets them (until then a new replica waits for a node)."
            if config.schedule.enabled
            else ""
        ),
    ]


def _held_serves(model: TimeToServe) -> str:
    if model.held.known:
        return f"{phase_value(model.held)} ({model.held.basis})"
    return f"~{duration(model.held_planning_seconds)} (planning figure, {model.held_planning_basis})"


def schedule_lead_lines(config: StackConfig) -> list[str]:
    schedule = config.schedule
    if not schedule.enabled or schedule.entries or schedule.business_hours is None:
        return []
    wake = next(cron for name, cron, _ in led_schedule_steps(config) if name == "wake")
    minute, hour = wake.split()[:2]
    lead = wake_lead_seconds(config)
    together = lead - planning_seconds(config)
    if schedule.wake_lead_seconds is not None:
        basis = "schedule.wakeLeadSeconds"
    elif together > 0:
        pods = next(replicas for name, _, replicas in config.schedule_steps() if name == "wake")
        basis = (
            f"the planning figure above plus {duration(together)} for the larger checkpoint read by "
            f"{math.ceil(pods / len(config.zones))} pods on one zone's disk at once, of the step's {pods}"
        )
    else:
        basis = "the planning figure above"
    gap = pod_measurement_gap(config) if schedule.wake_lead_seconds is None and not recorded_startup(config) else None
    guess = (
        f" That figure was never measured for this stack, the lead is a guess until a start-up report of it is "
        f"recorded (docs/time-to-serve.md): {gap}."
        if gap
        else ""
    )
    return [
        "",
        f"Schedule: business hours open at {schedule.business_hours.start}; the wake step fires at "
        f"{int(hour):02d}:{int(minute):02d} ({schedule.time_zone}), {duration(lead)} earlier ({basis}), so that "
        "pods serve when the window opens if they start as fast as that figure says: it holds no margin (a slower "
        "start, or a node the capacity sources do not give at once, opens the window late; set "
        f"a longer lead: `schedule.wakeLeadSeconds`).{guess}",
    ]
