"""Time to serve: the planning figure a new replica's start-up is held to (the recipe's measured
figures, or assumed from them), and the settings it reads refused in one line when hostile (every
phase as plan.md reports it: tests/commands/render/test_time_to_serve.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from stacks.args import image_pull_allowance, no_ready_replica_seconds, pod_move_seconds
from stacks.capacity import measurements
from stacks.capacity.time_to_serve import (
    checkpoint_mib,
    held_planning_seconds,
    planning_seconds,
    recorded_startup,
    startup_probe_seconds,
    wake_lead_seconds,
)
from stacks.config.stack import StackConfig
from stacks.load.loader import InvalidConfig, validate
from tests.variants import VARIANTS, stack_config, stack_settings, variant_config

BASE: dict[str, Any] = {
    "environment": "dev",
    "project": "my-llm-dev",
    "region": "us-central1",
    "zones": ["us-central1-b"],
}


def test_the_planning_figure_is_the_recipes_measured_one_or_assumed_from_it() -> None:
    assert planning_seconds(stack_config("dev")) == 960  # node ~6 min + pod ~10 min, the write-up's
    assert planning_seconds(variant_config("prod-397b")) > 960  # assumed, plus the larger checkpoint's read


def test_a_computed_image_pull_longer_than_the_pod_phase_lengthens_it() -> None:
    """A platform review: a 41 min pull printed beside a 10 min pod phase that holds it, and the wake led by 16 min.
    The pod phase is then at least the pull and at most the pull plus the phase; a pull that fits changes nothing."""
    slow = validate({**BASE, "timeToServe": {"imageGib": 12, "imagePullMibps": 5}})
    assert image_pull_allowance(slow) == round(12 * 1024 / 5)
    assert planning_seconds(slow) == round(360 + 12 * 1024 / 5 + 600)
    assert wake_lead_seconds(slow) == planning_seconds(slow)
    fits = validate({**BASE, "timeToServe": {"imageGib": 12, "imagePullMibps": 100}})
    assert planning_seconds(fits) == planning_seconds(validate(BASE)) == 960


@pytest.mark.parametrize(
    "settings",
    [
        {"routing": {"mode": "gateway"}},  # a container per rank: the pod phase is not measured
        {"profile": "qwen3.5-35b-a3b-fp8"},  # another model: the pod phase is not measured
    ],
)
def test_a_stated_pull_lengthens_the_planning_figure_where_the_pod_phase_is_not_measured(
    settings: dict[str, Any],
) -> None:
    """A platform review: with the pod phase not measured the planning figure fell back to the recipe's node and pod
    (16 min) without the 20.5 min pull plan.md printed, so the wake step, the HPA's time to serve and the
    no-ready-replica alert left it out while the pending alert held it. The fallback holds the pull as the recipe's
    pod phase would."""
    pull = 12 * 1024 / 10
    plain = validate({**BASE, **settings})
    slow = validate({**BASE, **settings, "timeToServe": {"imageGib": 12, "imagePullMibps": 10}})
    assert planning_seconds(slow) == planning_seconds(plain) + round(pull)
    assert wake_lead_seconds(slow) == planning_seconds(slow)
    assert held_planning_seconds(slow) == held_planning_seconds(plain) + round(pull)
    fits = validate({**BASE, **settings, "timeToServe": {"imageGib": 1, "imagePullMibps": 100}})
    assert planning_seconds(fits) == planning_seconds(plain)


def test_the_same_disk_gives_the_same_planning_figure_however_it_is_sized() -> None:
    """A platform review: a disk of 400 MiB/s set as throughputMibps and one sized to it by targetLoadSeconds gave
    16.0 and 17.0 min ("~62 s more checkpoint to read") for the same checkpoint."""
    weights = stack_settings("staging").get("weights", {})
    given = validate({**stack_settings("staging"), "weights": {**weights, "throughputMibps": 400}})
    sized = validate({**stack_settings("staging"), "weights": {**weights, "targetLoadSeconds": 3600}})
    assert given.serving_throughput_mibps == sized.serving_throughput_mibps == 400
    assert planning_seconds(given) == planning_seconds(sized)


def _with_startup(
    config: StackConfig,
    path: Path,
    scheduled: float,
    ready: float,
    cold_pods: int | None = 1,
    spans: dict[str, float] | None = None,
    slowest: float | None = None,
    longest: dict[str, float] | None = None,
) -> Path:
    """The repository's measurements with a start-up report of `config`'s configuration (as `bench-compare
    --record` adds one): the node after `scheduled` s, the pod ready `ready` s after the scale-up; `cold_pods`
    of its one pod started cold (None: recorded before the report told them apart); `spans`, the median of each
    pod's own span (None: recorded before spans were kept); `slowest`, the largest readySeconds (else `ready`);
    `longest`, the largest of each pod's own span."""
    document = yaml.safe_load(measurements.MEASUREMENTS_FILE.read_text())
    configuration = measurements.configuration_of(config).model_dump(mode="json", by_alias=True)
    phases = {"scheduledSeconds": scheduled, "readySeconds": ready}
    conditions = measurements.startup_conditions(config).model_dump(mode="json", by_alias=True)
    document["measurements"].append(
        {
            "id": "slow-startup",
            "source": "an own run",
            "date": "2026-11-20",
            "measuredRelease": configuration["vllmRelease"],
            "configuration": configuration,
            "runs": [{"nodes": 1, "totalTokensPerSecond": 90000}],
            "startup": {
                "pods": 1,
                "coldPods": cold_pods,
                "medianSeconds": phases,
                "maxSeconds": {**phases, "readySeconds": ready if slowest is None else slowest},
                "conditions": conditions,
                **({} if spans is None else {"medianSpanSeconds": spans}),
                **({} if longest is None else {"maxSpanSeconds": longest}),
            },
        }
    )
    path.write_text(yaml.safe_dump(document))
    return path


def test_a_recorded_slow_start_gives_the_probe_and_a_flex_start_move_its_time(tmp_path: Path) -> None:
    # A pod phase of 39 min, recorded: a probe of the recipe's 30 min would restart every load before it ends.
    config = variant_config("staging-122b")
    before = startup_probe_seconds(config), pod_move_seconds(config)
    with measurements.using(_with_startup(config, tmp_path / "measurements.yaml", scheduled=360, ready=2700)):
        assert startup_probe_seconds(config) >= 3 * (2700 - 360) > before[0]
        assert pod_move_seconds(config) == 15 * 60 + 2 * (2700 - 360) > before[1]
    # a report of pods that did not start cold (or recorded before it said so) times no pod phase
    for cold_pods in (0, None):
        with measurements.using(_with_startup(config, tmp_path / "warm.yaml", 360, 2700, cold_pods)):
            assert (startup_probe_seconds(config), pod_move_seconds(config)) == before
    assert pod_move_seconds(stack_config("prod")) == 35 * 60  # a node, and twice the write-up's ~10 min pod


def test_a_phase_is_the_median_of_each_pods_span_and_an_older_report_says_it_is_a_difference(tmp_path: Path) -> None:
    """Pods scheduled at 300/400/500 s and ready at 1,100/900/1,000 s: each pod's span is 800/500/500 s, median 500;
    the difference of the medians (1,000 - 400) says 600, no pod's. The phase takes the recorded span; a report
    recorded before spans were kept (or a span none of its pods had both ends of) still reads, as that difference,
    and says so. The cold total, the planning figure and the wake lead are the median pod's time to ready (1,000 s):
    a platform review found them the sum of two medians (400 + 500), ready before two of the three pods."""
    from commands.render.time_to_serve import time_to_serve

    config = stack_config("dev")
    kept = _with_startup(config, tmp_path / "spans.yaml", 400, 1000, spans={"node": 400, "pod": 500}, slowest=1100)
    with measurements.using(kept):
        report = time_to_serve(config)
        pod = {phase.key: phase for phase in report.phases}["pod"]
        assert (pod.seconds_max, pod.basis) == (500, "measured") and pod.source.endswith(": median of each pod's span")
        assert (report.cold.seconds_max, report.cold.basis) == (1000, "measured")
        assert report.cold.source.endswith(": median of each pod's time from its creation to ready")
        assert planning_seconds(config) == wake_lead_seconds(config) == 1000
    fallbacks: list[tuple[str, dict[str, float] | None]] = [("older", None), ("empty", {}), ("partial", {"node": 400})]
    for label, spans in fallbacks:
        with measurements.using(_with_startup(config, tmp_path / f"{label}.yaml", 400, 1000, spans=spans)):
            pod = {phase.key: phase for phase in time_to_serve(config).phases}["pod"]
            assert (pod.seconds_max, pod.basis) == (600, "measured"), label
            assert pod.source.endswith(": difference of the phases' medians (no pod's own span recorded)"), label
            assert planning_seconds(config) == wake_lead_seconds(config) == 1000, label


def test_the_probe_is_three_pod_phases_and_never_shorter_than_the_slowest_pod(tmp_path: Path) -> None:
    """The probe is 3x the pod phase, in half hours: a span of 590 s where the medians' difference is 1,340 s. A
    platform review: one pod of three that took 1,950 s from scheduled to ready beside a median span of 600 s had a
    probe of 1,800 s, which restarts that pod's load every time: the slowest pod's span is its floor. Not its time
    from creation (a diff review): a pod that waited 2,400 s for Flex-start capacity and then took 560 s would have
    doubled the probe and rolled every pod, and the probe's clock starts with the container."""
    config = stack_config("dev")
    with measurements.using(_with_startup(config, tmp_path / "probe.yaml", 360, 1700, spans={"pod": 590})):
        assert startup_probe_seconds(config) == 1800
    with measurements.using(_with_startup(config, tmp_path / "probe-older.yaml", 360, 1700)):
        assert startup_probe_seconds(config) == 3 * 1800  # 3 x 1,340 s, up to whole half hours
    slow = _with_startup(
        config, tmp_path / "slow.yaml", 300, 900, spans={"pod": 600}, slowest=2100, longest={"pod": 1950}
    )
    with measurements.using(slow):
        assert startup_probe_seconds(config) == 2 * 1800
    waited = _with_startup(
        config, tmp_path / "waited.yaml", 300, 900, spans={"pod": 600}, slowest=2960, longest={"pod": 600}
    )
    with measurements.using(waited):
        assert startup_probe_seconds(config) == 1800


def test_the_cold_total_is_never_shorter_than_the_pod_phase(tmp_path: Path) -> None:
    """A diff review: readySeconds' median counts every cold pod that has it, the pod span only those that have both
    ends; pods ready at 1,000, 300 and 350 s, one of them with its scheduled time, made a cold total of 350 s beside a
    pod phase of 950 s."""
    from commands.render.time_to_serve import time_to_serve

    config = stack_config("dev")
    with measurements.using(_with_startup(config, tmp_path / "m.yaml", 50, 350, spans={"pod": 950}, slowest=1000)):
        report = time_to_serve(config)
        assert report.cold.seconds_max == 950 and report.held.seconds_max == 950 == planning_seconds(config)


@pytest.mark.parametrize(
    ("setting", "other"),
    [
        ("startup", {"compileCache": {"enabled": True}}),
        ("startup", {"imageMirror": {"enabled": False}}),
        ("capacity", {"sources": [{"type": "flexStart"}, {"type": "spot"}]}),
        ("weights", {"throughputMibps": 4800}),
    ],
)
def test_a_start_up_report_stands_only_for_the_conditions_it_was_taken_under(
    tmp_path: Path, setting: str, other: dict[str, Any]
) -> None:
    """A platform review: a report of a dev pod that read its compiled kernels from the shared cache timed 2.8 min and
    was read as measured for a stack without the cache, and for prod's Flex-start nodes (its wake, its no-ready
    alert and its nodes' recycling lead followed)."""
    config = stack_config("dev")
    changed = validate({**stack_settings("dev"), setting: {**stack_settings("dev").get(setting, {}), **other}})
    assert measurements.startup_conditions(changed) != measurements.startup_conditions(config)
    recorded = _with_startup(config, tmp_path / "m.yaml", scheduled=200, ready=368)
    with measurements.using(recorded):
        assert recorded_startup(config) is not None and recorded_startup(changed) is None
        assert planning_seconds(config) == 368
    with measurements.using(_with_startup(changed, tmp_path / "changed.yaml", scheduled=200, ready=368)):
        assert recorded_startup(changed) is not None and recorded_startup(config) is None
    # a report recorded before it held its conditions stands for no stack
    document = yaml.safe_load(recorded.read_text())
    del document["measurements"][-1]["startup"]["conditions"]
    (tmp_path / "older.yaml").write_text(yaml.safe_dump(document))
    with measurements.using(tmp_path / "older.yaml"):
        assert recorded_startup(config) is None


def test_a_later_warm_report_keeps_the_cold_one_and_the_plan_agrees_with_the_stack(tmp_path: Path) -> None:
    """A diff review: a later re-run against running pods (no cold pod) dropped the cold pod phase and the probe's
    3x margin; and with a stated image pull, plan.md held the pull against the measured one while the wake lead
    held it against the stated one. A cold start's measured pod phase stands, in both."""
    from commands.render.time_to_serve import time_to_serve

    config = validate(
        {
            **stack_settings("staging"),
            **VARIANTS["staging-122b"][1],
            "timeToServe": {"imageGib": 12, "imagePullMibps": 5},
        }
    )
    cold = _with_startup(config, tmp_path / "cold.yaml", scheduled=360, ready=2700)
    document = yaml.safe_load(cold.read_text())
    warm = {**document["measurements"][-1], "id": "warm-rerun", "date": "2026-11-21"}
    warm["startup"] = {**warm["startup"], "coldPods": 0, "medianSeconds": {"scheduledSeconds": 5, "readySeconds": 600}}
    document["measurements"].append(warm)
    (tmp_path / "both.yaml").write_text(yaml.safe_dump(document))
    for path in (cold, tmp_path / "both.yaml"):
        with measurements.using(path):
            assert startup_probe_seconds(config) >= 3 * (2700 - 360)
            assert planning_seconds(config) == (360 + 2700 - 360)  # the measured node and pod, no stated pull
            assert time_to_serve(config).planning_seconds == planning_seconds(config)


def test_a_wake_led_past_the_sleep_before_it_is_refused(tmp_path: Path) -> None:
    """An attacker: a recorded pod phase of 15 h led dev's 08:00 wake to 16:55 the day before, two hours before the
    19:00 sleep, and plan.md said the pods serve at opening. A lead set by hand is bounded (0-7200); the derived one
    must fit the 13 h from sleep to wake."""
    config = stack_config("dev")
    with measurements.using(_with_startup(config, tmp_path / "slow.yaml", scheduled=300, ready=54_300)):
        with pytest.raises(
            InvalidConfig, match=r"schedule: the wake step, led by 54,300 s .* at most 46,740 s"
        ) as lead:
            validate(stack_settings("dev"))
        # an attacker: the line blamed wakeLeadSeconds, which the user never set, not the recorded report
        assert "(the wake's time to serve, from the start-up report of " in str(lead.value)
        assert "slow.yaml" in str(lead.value) and "wakeLeadSeconds" not in str(lead.value)
        assert validate({**stack_settings("dev"), "schedule": {"wakeLeadSeconds": 3600}}).schedule.wake_lead_seconds
        # a diff review: the gap is from the sleep of the business day before (Monday, Wednesday, Friday: two days)
        three_days = {"businessHours": {"start": "08:00", "end": "19:00", "days": ["mon", "wed", "fri"]}}
        assert validate({**stack_settings("dev"), "schedule": three_days}).schedule.business_hours is not None
    # ... and a lead set by hand is held to it too: 00:05-23:55 leaves 10 min from sleep to wake
    late = {"businessHours": {"start": "00:05", "end": "23:55"}, "wakeLeadSeconds": 3600}
    with pytest.raises(InvalidConfig, match=r"led by 3,600 s \(wakeLeadSeconds, .* at most 540 s"):
        validate({**stack_settings("dev"), "schedule": late})
    # a diff review: a lead a second short of the gap rounds up to the sleep's own minute (led_cron: whole minutes)
    every_day = {"start": "00:00", "end": "22:30", "days": ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]}
    with pytest.raises(InvalidConfig, match=r"led by 5,341 s .* at most 5,340 s"):
        validate({**stack_settings("dev"), "schedule": {"businessHours": every_day, "wakeLeadSeconds": 5341}})
    assert validate({**stack_settings("dev"), "schedule": {"businessHours": every_day, "wakeLeadSeconds": 5340}})
    with measurements.using(_with_startup(config, tmp_path / "odd.yaml", scheduled=300, ready=600)):
        document = yaml.safe_load((tmp_path / "odd.yaml").read_text())
        document["measurements"][-1]["startup"]["maxSeconds"] = {"readySeconds": 0}
        (tmp_path / "odd.yaml").write_text(yaml.safe_dump(document))
        with pytest.raises(measurements.MeasurementsError, match="the median of readySeconds is above its largest"):
            measurements.load(tmp_path / "odd.yaml")


def _business_hours(settings: dict[str, Any], replicas: int) -> StackConfig:
    return validate(
        {**settings, "schedule": {"businessHours": {"start": "08:00", "end": "19:00", "replicas": replicas}}}
    )


def test_a_wake_of_many_pods_leads_by_their_shared_read_of_a_larger_checkpoint() -> None:
    settings = {**stack_settings("prod"), **VARIANTS["prod-397b"][1]}
    base = validate(settings)
    config = _business_hours(settings, 12)
    assert config.nodes_per_disk > 1
    shared_read = checkpoint_mib(config) * config.nodes_per_disk / config.serving_throughput_mibps  # type: ignore[operator]
    # the node (~6 min), then the checkpoint read by every pod of the wake on the zone's disk, before any GPU load
    assert wake_lead_seconds(config) >= 360 + shared_read
    assert no_ready_replica_seconds(config) > wake_lead_seconds(config) > planning_seconds(config)
    # a wake step of one pod reads alone; the alert still allows for every pod starting at once (a fleet restart)
    assert wake_lead_seconds(_business_hours(settings, 1)) == planning_seconds(base)
    assert no_ready_replica_seconds(_business_hours(settings, 1)) == no_ready_replica_seconds(config)
    recipe = _business_hours(stack_settings("prod"), 12)  # the write-up's pods started together: nothing more to read
    assert wake_lead_seconds(recipe) == planning_seconds(recipe) == 960


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"weights": {"targetLoadSeconds": 5}}, "weights.targetLoadSeconds"),
        ({"weights": {"targetLoadSeconds": "60"}}, "weights.targetLoadSeconds"),
        ({"weights": {"targetLoadSeconds": 60, "throughputMibps": 2400}}, "not both"),
        ({"timeToServe": {"boundSeconds": 0}}, "timeToServe.boundSeconds"),
        ({"timeToServe": {"imageGib": -1}}, "timeToServe.imageGib"),
        ({"timeToServe": {"imagePullMibps": float("nan")}}, "timeToServe.imagePullMibps"),
        ({"timeToServe": {"weightsReadBoundSeconds": 10**9}}, "timeToServe.weightsReadBoundSeconds"),
    ],
)
def test_hostile_settings_are_refused_in_one_line(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidConfig) as error:
        validate({**BASE, **settings})
    assert message in str(error.value)
    assert "\n" not in str(error.value)


def test_a_report_as_bench_compare_first_wrote_its_read_stands() -> None:
    """A diff review: `weightsReadMibps: N` (the key --record wrote before the read became a target or a throughput)
    was refused as an extra key; it is N MiB/s."""
    config = stack_config("dev")
    conditions = measurements.startup_conditions(config).model_dump(mode="json", by_alias=True)
    mibps = int(conditions.pop("weightsRead").removesuffix(" MiB/s"))
    first = measurements.StartupConditions.model_validate(
        {**conditions, "weightsReadMibps": mibps}, by_alias=True, by_name=False
    )
    assert first == measurements.startup_conditions(config)
