"""How many A4 node-hours a month the stack keeps up: its schedule, autoscaler and node count.

Each serving pod is one A4 node (Autopilot bills a GPU pod for its node and removes the node when
the pod goes). The schedule's steps (CronJobs that set the Deployment's replicas, in
schedule.timeZone) are replayed over a reference window: one week (Monday 2027-01-04, no daylight
saving change anywhere then) when every step repeats weekly, else the whole of 2027. Between two
steps the last one's count holds. With an autoscaler, a pod count above zero is the autoscaler's
range (minReplicas..maxReplicas: a schedule's count is only where it starts); zero stays zero (an
HPA does not scale a Deployment up from zero replicas). Node provisioning and model load at each
wake (~16 min, billed) are not counted.
"""

from __future__ import annotations

import datetime
import zoneinfo
from dataclasses import dataclass

from croniter import CroniterError, croniter

from stacks.config.stack import StackConfig

HOURS_PER_MONTH = 730
HOURS_PER_WEEK = 168
HOURS_PER_YEAR = HOURS_PER_MONTH * 12
REFERENCE_WEEK = datetime.datetime(2027, 1, 4)
REFERENCE_YEAR = datetime.datetime(2027, 1, 1)
MONTHLY_DESCRIPTORS = ("@yearly", "@annually", "@monthly")


@dataclass(frozen=True)
class RunningHours:
    """Node-hours per month at the floor and the ceiling of what the stack runs (equal without an
    autoscaler), with what they rest on."""

    node_hours_per_month_min: float
    node_hours_per_month_max: float
    node_hours_per_week_min: float
    node_hours_per_week_max: float
    basis: str


def _weekly(cron: str) -> bool:
    if cron.startswith("@"):
        return cron not in MONTHLY_DESCRIPTORS
    _, _, day_of_month, month, _ = cron.split()
    return day_of_month in ("*", "?") and month in ("*", "?")


def _changes(
    steps: list[tuple[str, str, int]], zone: zoneinfo.ZoneInfo, start: datetime.datetime, end: datetime.datetime
) -> tuple[int | None, list[tuple[datetime.datetime, int]]]:
    """The count in force at `start` (None when no step fired in the year before) and every change
    within the window, in time order (steps firing at the same minute: the later-listed wins)."""
    local_start, local_end = start.replace(tzinfo=zone), end.replace(tzinfo=zone)
    latest: tuple[datetime.datetime, int, int] | None = None
    changes: list[tuple[datetime.datetime, int, int]] = []
    for order, (_, cron, replicas) in enumerate(steps):
        try:
            previous = croniter(cron, local_start).get_prev(datetime.datetime)
        except CroniterError:  # a date that never comes (February 30): the step never fires
            continue
        if previous >= local_start - datetime.timedelta(days=366) and (
            latest is None or (previous, order) > (latest[0], latest[1])
        ):
            latest = (previous, order, replicas)
        times = croniter(cron, local_start - datetime.timedelta(minutes=1))
        while (moment := times.get_next(datetime.datetime)) < local_end:
            changes.append((moment, order, replicas))
    changes.sort(key=lambda change: (change[0], change[1]))
    return (None if latest is None else latest[2]), [(moment, replicas) for moment, _, replicas in changes]


def _scheduled_hours(config: StackConfig, floor: int, ceiling: int) -> tuple[float, float, float, float, str]:
    steps = config.schedule_steps()
    zone = zoneinfo.ZoneInfo(config.schedule.time_zone)
    weekly = all(_weekly(cron) for _, cron, _ in steps)
    start = REFERENCE_WEEK if weekly else REFERENCE_YEAR
    end = start + (datetime.timedelta(days=7) if weekly else datetime.timedelta(days=365))
    before, changes = _changes(steps, zone, start, end)
    count = config.initial_replicas if before is None else before
    low = high = 0.0
    moment = start.replace(tzinfo=zone)
    for when, replicas in [*changes, (end.replace(tzinfo=zone), count)]:
        hours = (when - moment).total_seconds() / 3600
        low += hours * (floor if count > 0 and config.autoscaling.enabled else count)
        high += hours * (ceiling if count > 0 and config.autoscaling.enabled else count)
        moment, count = when, replicas
    window_hours = (end - start).total_seconds() / 3600
    per_month = HOURS_PER_MONTH / window_hours
    per_week = HOURS_PER_WEEK / window_hours
    window = "a reference week" if weekly else "the year 2027"
    return low * per_month, high * per_month, low * per_week, high * per_week, window


def running_hours(config: StackConfig) -> RunningHours:
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
