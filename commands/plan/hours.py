"""How many A4 node-hours a month the stack keeps up: its schedule, autoscaler and node count.

Each serving pod is one A4 node (Autopilot bills a GPU pod for its node and removes the node when
the pod goes). The schedule's steps (CronJobs that set the Deployment's replicas, in
schedule.timeZone) are replayed over a reference window: one week (Monday 2027-01-04, no daylight
saving change anywhere then) when every step repeats weekly, else the whole of 2027. Between two
steps the last one's count holds. With an autoscaler, a pod count above zero is the autoscaler's
range (minReplicas..maxReplicas: a schedule's count is only where it starts); zero stays zero (an
HPA does not scale a Deployment up from zero replicas). Business hours wake early by the stack's
time to serve (stacks/capacity/time_to_serve.py), so the warm-up before the window is counted.
"""

from __future__ import annotations

import datetime
import zoneinfo
from collections.abc import Iterator
from dataclasses import dataclass

from croniter import CroniterError, croniter

from stacks.capacity.planner import HOURS_PER_MONTH
from stacks.capacity.time_to_serve import led_schedule_steps
from stacks.config.stack import StackConfig

HOURS_PER_WEEK = 168
REFERENCE_WEEK = datetime.datetime(2027, 1, 4)
REFERENCE_YEAR = datetime.datetime(2027, 1, 1)
MONTHLY_DESCRIPTORS = ("@yearly", "@annually", "@monthly")
# A count and the moment it takes effect.
Changes = list[tuple[datetime.datetime, int]]


@dataclass(frozen=True)
class RunningHours:
    """Node-hours per month at the floor and the ceiling of what the stack runs (equal without an
    autoscaler), with what they rest on."""

    node_hours_per_month_min: float
    node_hours_per_month_max: float
    node_hours_per_week_min: float
    node_hours_per_week_max: float
    basis: str
    # warmCapacity.nodes: A4 nodes up besides the serving ones (in the node-hours above)
    held_nodes: int = 0


def _weekly(cron: str) -> bool:
    if cron.startswith("@"):
        return cron not in MONTHLY_DESCRIPTORS
    _, _, day_of_month, month, _ = cron.split()
    return day_of_month in ("*", "?") and month in ("*", "?")


def _next_firing(cron: str, after: datetime.datetime) -> datetime.datetime | None:
    """The step's first firing after `after`; None for a date that never comes (February 30)."""
    try:
        moment: datetime.datetime = croniter(cron, after).get_next(datetime.datetime)
    except CroniterError:
        return None
    return moment


def _changes(
    steps: list[tuple[str, str, int]],
    zone: zoneinfo.ZoneInfo,
    start: datetime.datetime,
    end: datetime.datetime,
    initial: int,
) -> tuple[int, Changes]:
    """The count in force at `start` (the last step that fired in the year before, else `initial`)
    and every change of it within the window, in time order (steps firing at the same minute: the
    later-listed wins).

    Only firings that can change the count are visited: the next change is the next firing of a step
    that sets another count (unless a later-listed step that sets the current count fires in the
    same minute), so a step that fires every minute costs a visit per change, not one per minute."""
    local_start, local_end = start.replace(tzinfo=zone), end.replace(tzinfo=zone)
    latest: tuple[datetime.datetime, int, int] | None = None
    for order, (_, cron, replicas) in enumerate(steps):
        try:
            previous = croniter(cron, local_start).get_prev(datetime.datetime)
        except CroniterError:  # a date that never comes (February 30): the step never fires
            continue
        if previous >= local_start - datetime.timedelta(days=366) and (
            latest is None or (previous, order) > (latest[0], latest[1])
        ):
            latest = (previous, order, replicas)
    count = initial if latest is None else latest[2]
    # A step with the same cron as a later-listed one never wins a minute: leave it out.
    live = sorted({cron: order for order, (_, cron, _) in enumerate(steps)}.values())
    changes: list[tuple[datetime.datetime, int]] = []
    current, cursor = count, local_start - datetime.timedelta(minutes=1)
    while True:
        upcoming = [
            (when, order)
            for order in live
            if steps[order][2] != current and (when := _next_firing(steps[order][1], cursor)) is not None
        ]
        if not upcoming:
            break
        moment = min(upcoming)[0]
        if moment >= local_end:
            break
        just_before = moment - datetime.timedelta(minutes=1)
        winner = max(
            [order for when, order in upcoming if when == moment]
            + [
                order
                for order in live
                if steps[order][2] == current and _next_firing(steps[order][1], just_before) == moment
            ]
        )
        if steps[winner][2] != current:
            current = steps[winner][2]
            changes.append((moment, current))
        cursor = moment
    return count, changes


def replay(
    config: StackConfig, steps: list[tuple[str, str, int]], initial: int
) -> tuple[zoneinfo.ZoneInfo, datetime.datetime, datetime.datetime, int, Changes]:
    """`steps` replayed in schedule.timeZone over a reference week when every step repeats weekly, else
    over the year 2027: the zone, the window's start and end, the count at its start, its changes."""
    zone = zoneinfo.ZoneInfo(config.schedule.time_zone)
    weekly = all(_weekly(cron) for _, cron, _ in steps)
    start = REFERENCE_WEEK if weekly else REFERENCE_YEAR
    end = start + (datetime.timedelta(days=7) if weekly else datetime.timedelta(days=365))
    return (zone, start, end, *_changes(steps, zone, start, end, initial))


def _spans(
    zone: zoneinfo.ZoneInfo, start: datetime.datetime, end: datetime.datetime, count: int, changes: Changes
) -> Iterator[tuple[float, int]]:
    """The hours of each stretch of a replayed window and the count that holds in it. Elapsed time goes
    through UTC: Python subtracts two times of the same zone as wall-clock times, which loses (or adds)
    the hour a daylight-saving change adds (or skips) in between."""
    moment = start.replace(tzinfo=zone)
    for when, replicas in [*changes, (end.replace(tzinfo=zone), count)]:
        yield (when.astimezone(datetime.UTC) - moment.astimezone(datetime.UTC)).total_seconds() / 3600, count
        moment, count = when, replicas


def _window_hours(zone: zoneinfo.ZoneInfo, start: datetime.datetime, end: datetime.datetime) -> float:
    local_start, local_end = start.replace(tzinfo=zone), end.replace(tzinfo=zone)
    return (local_end.astimezone(datetime.UTC) - local_start.astimezone(datetime.UTC)).total_seconds() / 3600


def _scheduled_hours(config: StackConfig, floor: int, ceiling: int) -> tuple[float, float, float, float, str]:
    zone, start, end, count, changes = replay(config, led_schedule_steps(config), config.initial_replicas)
    spans = list(_spans(zone, start, end, count, changes))
    scaled = config.autoscaling.enabled
    low = sum(hours * (floor if count > 0 and scaled else count) for hours, count in spans)
    high = sum(hours * (ceiling if count > 0 and scaled else count) for hours, count in spans)
    window_hours = _window_hours(zone, start, end)
    per_month = HOURS_PER_MONTH / window_hours
    per_week = HOURS_PER_WEEK / window_hours
    window = "a reference week" if start == REFERENCE_WEEK else "the year 2027"
    return low * per_month, high * per_month, low * per_week, high * per_week, window


def wanted_hours_per_month(config: StackConfig) -> float:
    """Hours a month the stack wants any serving pod (the schedule's windows, with their lead; all
    of them without a schedule): the hours held nodes are kept."""
    if not config.schedule.enabled:
        return float(HOURS_PER_MONTH)
    steps = [(name, cron, min(replicas, 1)) for name, cron, replicas in led_schedule_steps(config)]
    zone, start, end, count, changes = replay(config, steps, min(config.initial_replicas, 1))
    wanted = sum(hours * count for hours, count in _spans(zone, start, end, count, changes))
    return wanted * HOURS_PER_MONTH / _window_hours(zone, start, end)


def held_hours_per_month(config: StackConfig) -> float:
    """Node-hours a month of the held nodes (warmCapacity): each kept in every hour the stack wants a
    serving pod, and billed as a serving node."""
    warm = config.warm_capacity
    return wanted_hours_per_month(config) * warm.nodes if warm.enabled else 0.0


def running_hours(config: StackConfig) -> RunningHours:
    """The node-hours of the serving pods (`_serving_hours`) and of the held nodes."""
    serving = _serving_hours(config)
    held = held_hours_per_month(config)
    if not held:
        return serving
    per_week = held * HOURS_PER_WEEK / HOURS_PER_MONTH
    return RunningHours(
        node_hours_per_month_min=serving.node_hours_per_month_min + held,
        node_hours_per_month_max=serving.node_hours_per_month_max + held,
        node_hours_per_week_min=serving.node_hours_per_week_min + per_week,
        node_hours_per_week_max=serving.node_hours_per_week_max + per_week,
        basis=f"{serving.basis}; and {config.warm_capacity.nodes} held node(s) (warmCapacity.nodes), "
        f"{held:,.0f} node-hours a month, billed as serving nodes",
        held_nodes=config.warm_capacity.nodes,
    )


def _serving_hours(config: StackConfig) -> RunningHours:
    autoscaling = config.autoscaling
    floor = autoscaling.min_replicas if autoscaling.enabled else config.nodes
    ceiling = config.max_replicas if autoscaling.enabled else config.nodes
    if not config.schedule.enabled:
        pods = f"{floor}..{ceiling} pods (autoscaler)" if autoscaling.enabled else f"{ceiling} pod(s)"
        return RunningHours(
            node_hours_per_month_min=floor * HOURS_PER_MONTH,
            node_hours_per_month_max=ceiling * HOURS_PER_MONTH,
            node_hours_per_week_min=floor * HOURS_PER_WEEK,
            node_hours_per_week_max=ceiling * HOURS_PER_WEEK,
            basis=f"{pods} around the clock, {HOURS_PER_MONTH} h a month",
        )
    month_low, month_high, week_low, week_high, window = _scheduled_hours(config, floor, ceiling)
    scaling = f"; while up, the autoscaler runs {floor}..{ceiling} pods" if autoscaling.enabled else ""
    return RunningHours(
        node_hours_per_month_min=month_low,
        node_hours_per_month_max=month_high,
        node_hours_per_week_min=week_low,
        node_hours_per_week_max=week_high,
        basis=(
            f"the schedule ({config.schedule.time_zone}) replayed over {window}{scaling}; "
            f"a month = {HOURS_PER_MONTH} h = {HOURS_PER_MONTH / HOURS_PER_WEEK:.3f} weeks"
        ),
    )
