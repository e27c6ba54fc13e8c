"""The monthly node-hours the capacity plan prices: the schedule's steps replayed over a reference
window, the autoscaler's range, the node count (commands/plan/hours.py)."""

from __future__ import annotations

from typing import Any

import pytest

from commands.plan import hours as hours_module
from commands.plan.capacity_plan import capacity_plan
from commands.plan.hours import running_hours
from tests.stacks.capacity.test_planner import config_of
from tests.variants import stack_config, variant_config


def test_dev_pays_for_its_business_hours_only() -> None:
    config = stack_config("dev")
    hours = running_hours(config)
    week = 5 * (11 + 16 / 60)  # Mon-Fri 08:00-19:00 woken 16 min early (the time to serve), one node
    assert hours.node_hours_per_week_max == pytest.approx(week)
    assert hours.node_hours_per_month_max == pytest.approx(week * 730 / 168)
    (spot,) = capacity_plan("dev", config).sources[0].costs
    fixed = spot.disk_capacity_per_hour + spot.disk_throughput_per_hour + spot.image_per_hour
    fixed += spot.cluster_fee_per_hour
    expected = fixed * 730 + 32.61 * 1.1 * week * 730 / 168
    assert spot.total_per_month == pytest.approx(expected)
    assert spot.total_per_month < spot.total_per_hour * 730 * 0.35, "56 of 168 hours a week"


def test_staging_shows_the_autoscalers_range_within_its_hours() -> None:
    capacity = capacity_plan("staging", stack_config("staging"))
    week = 5 * (11 + 16 / 60)
    assert capacity.running.node_hours_per_week_min == pytest.approx(week)
    assert capacity.running.node_hours_per_week_max == pytest.approx(4 * week)
    (spot,) = capacity.sources[0].costs
    assert spot.total_per_month_min < spot.total_per_month_max == spot.total_per_month
    assert spot.node_hours_per_month_max == pytest.approx(4 * spot.node_hours_per_month_min)


def test_cron_entries_in_a_local_time_zone_set_the_hours() -> None:
    hours = running_hours(variant_config("dev-kv-schedule"))
    # up 07:30-20:00 Mon-Fri (the evening step runs daily), 1..2 pods under the KV-cache autoscaler
    assert (hours.node_hours_per_week_min, hours.node_hours_per_week_max) == (62.5, 125)
    assert "Europe/Amsterdam" in hours.basis


def test_a_monthly_schedule_is_replayed_over_a_year() -> None:
    config = config_of(
        "dev",
        schedule={
            "entries": [
                {"name": "first", "cron": "0 0 1 * *", "replicas": 1},
                {"name": "second", "cron": "0 0 2 * *", "replicas": 0},
            ]
        },
    )
    hours = running_hours(config)
    assert hours.node_hours_per_month_max == pytest.approx(24 * 12 * 730 / 8760)
    assert "2027" in hours.basis


def test_a_step_every_minute_costs_a_visit_per_change_not_per_minute(monkeypatch: pytest.MonkeyPatch) -> None:
    """A per-minute step beside a monthly one makes the replay a year long: it visits the changes
    (24) instead of the 525,600 minutes (37 s of render before), with the same hours."""
    steps = [
        {"name": "on", "cron": "* * * * *", "replicas": 1},
        {"name": "again", "cron": "* * * * *", "replicas": 1},
        {"name": "hourly", "cron": "0 * * * *", "replicas": 1},
        {"name": "monthly", "cron": "0 0 1 * *", "replicas": 0},
    ]
    visits: list[str] = []
    next_firing = hours_module._next_firing

    def counted(cron: str, after: Any) -> Any:
        visits.append(cron)
        return next_firing(cron, after)

    monkeypatch.setattr(hours_module, "_next_firing", counted)
    hours = running_hours(config_of("dev", schedule={"entries": steps}))
    assert hours.node_hours_per_month_max == pytest.approx(730 - 12 / 60 / 12), "off one minute a month"
    last = {**steps[0], "name": "last"}
    assert running_hours(config_of("dev", schedule={"entries": [*steps, last]})).node_hours_per_month_max == 730
    assert len(visits) < 500


def test_a_step_in_the_hour_daylight_saving_skips_is_replayed() -> None:
    """An hour a day from 02:30 Europe/Berlin over the year 2027 (the yearly step makes the replay a
    year long): on 2027-03-28, which skips 02:00-03:00, croniter fires the step at 03:00 (half an hour);
    on 2027-10-31, which repeats 02:00-03:00, 02:30 CEST to 03:30 CET is two hours, not one."""
    steps = [
        {"name": "up", "cron": "30 2 * * *", "replicas": 1},
        {"name": "down", "cron": "30 3 * * *", "replicas": 0},
        {"name": "yearly", "cron": "0 0 1 1 *", "replicas": 0},
    ]
    hours = running_hours(config_of("dev", schedule={"timeZone": "Europe/Berlin", "entries": steps}))
    assert hours.node_hours_per_month_max * 12 == pytest.approx(363 + 0.5 + 2)


def test_prod_runs_around_the_clock_and_its_autoscaled_variant_shows_a_range() -> None:
    assert running_hours(stack_config("prod")).node_hours_per_month_max == 12 * 730
    scaled = running_hours(variant_config("prod-autoscaling"))
    assert (scaled.node_hours_per_month_min, scaled.node_hours_per_month_max) == (4 * 730, 12 * 730)


# ---------------------------------------------------------------- goal sizing


def test_held_nodes_are_node_hours_of_the_serving_windows_in_every_monthly_cost() -> None:
    """warmCapacity holds spare nodes in the hours the stack wants a serving pod: the plan's monthly cost
    per source (which a preview compares) counts them as serving nodes, not only plan.md's own line."""
    config = stack_config("dev")
    warm = config.model_copy(
        update={"warm_capacity": config.warm_capacity.model_copy(update={"enabled": True, "nodes": 2})}
    )
    week = 5 * (11 + 16 / 60)  # the serving windows, woken early by the time to serve
    plain, held = running_hours(config), running_hours(warm)
    assert held.node_hours_per_week_max == pytest.approx(plain.node_hours_per_week_max + 2 * week)
    assert held.node_hours_per_month_min == pytest.approx(plain.node_hours_per_month_min + 2 * week * 730 / 168)
    assert "2 held node(s)" in held.basis
    (before,), (after,) = capacity_plan("dev", config).sources[0].costs, capacity_plan("dev", warm).sources[0].costs
    assert after.total_per_month - before.total_per_month == pytest.approx(32.61 * 1.1 * 2 * week * 730 / 168)
