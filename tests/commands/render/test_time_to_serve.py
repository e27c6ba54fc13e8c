"""Time to serve per phase and per profile as plan.md and capacity.json report it (commands/render/
time_to_serve.py): measured only where measured, computed with its basis, not measured elsewhere;
the simultaneous wake and the disk throughput sized for it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from commands.render.command import render
from commands.render.time_to_serve import goal_sources, time_to_serve, wake_read_note
from commands.render.time_to_serve_md import schedule_lead_lines, section
from common.sources import WRITEUP_VLLM_RELEASE
from stacks.capacity import measurements
from stacks.capacity.time_to_serve import (
    COLD,
    node_phase,
    planning_seconds,
    pod_measurement_gap,
    pod_phase,
    total_phase,
)
from stacks.config.time_to_serve import HYPERDISK_ML_MAX_MIBPS
from stacks.load.loader import validate
from tests.stacks.capacity.test_time_to_serve import _with_startup
from tests.variants import stack_config, variant_config

BASE: dict[str, Any] = {
    "environment": "dev",
    "project": "my-llm-dev",
    "region": "us-central1",
    "zones": ["us-central1-b"],
}


def phases(config: Any) -> dict[str, Any]:
    return {phase.key: phase for phase in time_to_serve(config).phases}


def test_recipe_profile_shows_the_write_ups_node_and_pod_and_computes_the_read() -> None:
    model = time_to_serve(stack_config("dev"))
    found = {phase.key: phase for phase in model.phases}
    assert (found["node"].seconds_min, found["node"].seconds_max, found["node"].basis) == (300, 360, "measured")
    # the write-up measured the pod on vLLM 0.18.0; the stack runs 0.19.0: carried over, so assumed
    assert (found["pod"].seconds_max, found["pod"].basis) == (600, "assumed")
    assert "on vLLM 0.18.0; carried over to 0.19.0: assumed, not measured on 0.19.0" in found["pod"].source
    assert found["weightsRead"].basis == "computed"
    assert found["weightsRead"].seconds_max == pytest.approx(29 * 1024 / 2400)
    assert "29 GiB / 2,400 MiB/s" in found["weightsRead"].source
    # nothing was published of the pod's parts: they stay unmeasured, with how to measure them
    assert found["engineStart"].seconds_max is None and "STARTUP_PHASES" in found["engineStart"].source
    assert found["imagePull"].seconds_max is None
    # a sum with the carried-over pod phase in it is as assumed as that phase, and its planning figure says so
    assert (model.cold.seconds_min, model.cold.seconds_max, model.cold.basis) == (900, 960, "assumed")
    assert (model.held.seconds_max, model.held.basis) == (600, "assumed")
    assert "its pod phase measured on another vLLM release" in model.cold.source
    assert model.planning_seconds == 960 and model.planning_basis.startswith("assumed (the sum of the node and pod")


@pytest.mark.parametrize(
    ("load", "name"), [(stack_config, "dev"), (stack_config, "prod"), (variant_config, "prod-397b")]
)
def test_the_report_states_the_planning_figure_the_stack_holds_to(load: Any, name: str) -> None:
    config = load(name)
    assert time_to_serve(config).planning_seconds == planning_seconds(config)


def test_other_profiles_are_not_measured_and_never_share_the_recipes_figure() -> None:
    """Another model's pod phase was never measured; the node is the same A4 node whatever it serves, so
    the write-up's node time holds, said as measured serving the recipe's model."""
    recipe = time_to_serve(stack_config("dev"))
    big = variant_config("prod-397b")
    model = time_to_serve(big)
    found = {phase.key: phase for phase in model.phases}
    for key in ("pod", "engineStart"):
        assert found[key].basis == "not measured" and found[key].seconds_max is None
    node = found["node"]
    assert (node.basis, node.seconds_max) == ("measured", recipe.phases[0].seconds_max), node
    assert "serving qwen3.5-27b-fp8 on the same A4 node" in node.source
    assert model.cold.seconds_max is None and model.held.seconds_max is None
    assert found["weightsRead"].seconds_max == pytest.approx(222 * 1024 / 2400)
    # the planning figure is labelled assumed and grows with the checkpoint
    assert model.planning_basis.startswith("assumed, not measured")
    assert model.planning_seconds > recipe.planning_seconds
    text = "\n".join(section(big))
    assert "| pod: scheduled to ready | not measured |" in text


def test_the_compile_cache_lever_cites_the_stacks_own_vllm_release() -> None:
    """prod-397b runs vLLM 0.33.0: its goal cites 0.33.0's backends.py, not the 0.19.0 file dev's cites."""
    cache = "vllm/compilation/backends.py"
    dev = [source for source in time_to_serve(stack_config("dev")).goal_sources if cache in source]
    current = [source for source in time_to_serve(variant_config("prod-397b")).goal_sources if cache in source]
    assert len(dev) == len(current) == 1
    assert "blob/v0.19.0/" in dev[0] and "v0.33.0" not in dev[0]
    assert "blob/v0.33.0/" in current[0] and "v0.19.0" not in current[0] and "not read" not in current[0]
    dev_config = stack_config("dev")
    newer = dev_config.model_copy(update={"engine": dev_config.engine.model_copy(update={"image": "vllm:v0.99.0"})})
    unread = [source for source in goal_sources(newer) if cache in source]
    assert "blob/v0.19.0/" in unread[0] and "not read in v0.99.0's code" in unread[0]


def test_each_lever_of_the_goal_says_whether_this_stack_applies_it() -> None:
    """A time-to-serve review: every stack's goal listed the compile cache and a held node as "the savings it counts
    on", with only the boot disk marked not applied, while every shipped stack has both off."""
    levers = {
        "compile": "vLLM's compile cache",
        "graphs": "fewer CUDA graphs",
        "held": "a held node",
        "mirror": "a registry mirror",
    }

    def states(config: Any) -> dict[str, str]:
        sources = goal_sources(config)
        return {key: next(source for source in sources if text in source).split(":")[0] for key, text in levers.items()}

    assert states(stack_config("dev")) == {
        "compile": "not applied here (startup.compileCache is off)",
        "graphs": "not applied here (engine.maxCudagraphCaptureSize unset",
        "held": "not applied here (warmCapacity is off)",
        "mirror": "applied here (startup.imageMirror)",
    }
    changed = validate(
        {
            **BASE,
            "startup": {"compileCache": {"enabled": True}, "imageMirror": {"enabled": False}},
            "engine": {"maxCudagraphCaptureSize": 256},
            "warmCapacity": {"nodes": 2},
            "cluster": {"minMasterVersion": "1.36"},
        }
    )
    assert states(changed) == {
        "compile": "applied here (startup.compileCache)",
        "graphs": "set here (engine.maxCudagraphCaptureSize 256",
        "held": "applied here (warmCapacity.nodes 2)",
        "mirror": "not applied here (startup.imageMirror is off)",
    }
    plan = "\n".join(section(changed))
    assert "the levers toward it, and which this stack applies:" in plan and "savings it counts on" not in plan


def test_a_changed_engine_is_not_the_measured_one() -> None:
    config = validate({**BASE, "engine": {"optimizationLevel": 0}})
    assert pod_measurement_gap(config) == (
        "the stack's engine differs from the recipe's measured one in engine.optimizationLevel"
    )
    assert phases(config)["pod"].basis == "not measured"
    # a digest pin or a mirror of the same release is the same engine
    pinned = validate({**BASE, "engine": {"image": "europe-docker.pkg.dev/p/mirror/vllm/vllm-openai:v0.19.0"}})
    assert pod_measurement_gap(pinned) is None


def test_simultaneous_wake_shares_the_zone_disk_and_warns_past_the_bound() -> None:
    prod = stack_config("prod")
    wake = time_to_serve(prod).wake
    assert wake is not None and wake.nodes == 12 and wake.nodes_per_disk == 12
    assert wake.per_node_mibps == pytest.approx(200)
    assert wake.seconds == pytest.approx(29 * 1024 / 200)
    assert wake.warning is not None and "weightsReadBoundSeconds 120" in wake.warning
    assert "**Warning**" in "\n".join(section(prod))
    assert time_to_serve(stack_config("dev")).wake.warning is None  # type: ignore[union-attr]


def test_target_load_seconds_sizes_the_disk_within_hyperdisk_ml_limits() -> None:
    config = validate({**BASE, "capacity": {"nodes": 12}, "weights": {"targetLoadSeconds": 60}})
    assert config.serving_throughput_mibps == -(-12 * 29 * 1024 // 60)
    wake = time_to_serve(config).wake
    assert wake is not None and wake.seconds is not None and wake.seconds <= 60
    small = validate({**BASE, "capacity": {"nodes": 1}, "weights": {"targetLoadSeconds": 3600}})
    assert small.serving_throughput_mibps == 400  # the volume's minimum
    huge = validate(
        {
            **BASE,
            "capacity": {"nodes": 256},
            "weights": {"checkpointGib": 29000, "sizeGib": 65536, "targetLoadSeconds": 10, "model": "org/custom"},
            "profile": "qwen3.5-27b-fp8",
            "engine": {"speculative": None, "mambaCacheMode": None, "mambaBlockSize": None, "reasoningParser": None},
        }
    )
    assert huge.serving_throughput_mibps == HYPERDISK_ML_MAX_MIBPS
    assert "add a zone" in (time_to_serve(huge).wake.warning or "")  # type: ignore[union-attr]


def test_the_pod_figure_is_measured_only_on_the_release_the_write_up_ran() -> None:
    on_its_release = pod_phase(None, WRITEUP_VLLM_RELEASE)
    assert on_its_release.basis == "measured" and "carried over" not in on_its_release.source
    assert pod_phase(None, "0.19.0").basis == "assumed"


def test_a_sum_of_measured_phases_is_computed_and_one_with_an_assumed_phase_is_assumed() -> None:
    node = node_phase(stack_config("dev"))
    measured = total_phase(node, pod_phase(None, WRITEUP_VLLM_RELEASE), COLD)
    assert (measured.basis, measured.source) == ("computed", "the sum of the node and pod phases")
    carried = total_phase(node, pod_phase(None, "0.19.0"), COLD)
    assert carried.basis == "assumed" and carried.source.endswith("its pod phase measured on another vLLM release")


def test_image_pull_is_computed_with_its_basis_when_stated() -> None:
    config = validate({**BASE, "timeToServe": {"imageGib": 10, "imagePullMibps": 100}})
    pull = phases(config)["imagePull"]
    assert pull.basis == "computed" and pull.seconds_max == pytest.approx(10 * 1024 / 100)
    assert "10 GiB / 100 MiB/s" in pull.source


def test_the_start_up_settings_are_named_and_their_savings_not_claimed() -> None:
    default = time_to_serve(validate(BASE))
    (mirror,) = default.notes
    assert "Artifact Registry remote repository of Docker Hub in us-central1" in mirror
    assert "Saving not measured" in mirror
    assert "(by digest, IfNotPresent)" in mirror
    # an image by tag (no digest known for it) is pulled again at each start: the note says so
    by_tag = validate({**BASE, "engine": {"image": "vllm/vllm-openai:v0.33.0"}})
    (tagged,) = time_to_serve(by_tag).notes
    assert "by tag, so imagePullPolicy Always" in tagged and "by digest" not in tagged
    assert default.phases[-1].basis == "assumed"  # the write-up's pod figure still stands for the recipe
    tuned = validate(
        {
            **BASE,
            "startup": {"imageMirror": {"enabled": False}, "compileCache": {"enabled": True}},
            "engine": {"maxCudagraphCaptureSize": "workload"},
            "workload": {"concurrencyPerNode": 256},
        }
    )
    notes = time_to_serve(tuned).notes
    assert notes[0] == "image pull: from the upstream registries (startup.imageMirror off)"
    assert "shared compile cache" in notes[1] and "Saving not measured" in notes[1]
    assert "captured up to 64 tokens" in notes[2]
    # Other CUDA graphs: the measured pod figure is another configuration's.
    gap = pod_measurement_gap(validate({**BASE, "engine": {"maxCudagraphCaptureSize": 256}}))
    assert gap is not None and "engine.maxCudagraphCaptureSize" in gap
    # The recipe's workload size captures 0.19.0's default graphs: still the measured engine.
    assert pod_measurement_gap(validate({**BASE, "engine": {"maxCudagraphCaptureSize": "workload"}})) is None
    assert "This stack's start-up settings:" in "\n".join(section(tuned))


def test_the_gateways_container_per_rank_is_not_the_layout_the_write_up_measured() -> None:
    """The Gateway's pod runs each data-parallel engine in a container of its own: the write-up's pod
    figure (eight engines in one container) is not carried over to it, the planning figure is assumed."""
    gateway = validate({**BASE, "routing": {"mode": "gateway"}})
    gap = pod_measurement_gap(gateway)
    assert gap is not None and "a container each" in gap and "8 data-parallel engines" in gap
    assert phases(gateway)["pod"].basis == "not measured"
    assert pod_measurement_gap(validate(BASE)) is None  # ClusterIP routing: one container, the recipe's layout


@pytest.mark.parametrize(
    ("stack", "when"),
    [
        ("dev", "(the worst case: every pod at once, as after a fleet restart; or the schedule's step to 1)"),
        (
            "staging",
            "(the worst case: every pod at once, as after a fleet restart; the schedule's largest step starts 1; "
            "the autoscaler adds 1 pod per 360 s)",
        ),
        ("prod", "(the worst case: every pod at once, as after a fleet restart)"),
    ],
)
def test_the_simultaneous_wake_says_when_every_pod_starts_at_once(stack: str, when: str) -> None:
    """The read is sized for the replica ceiling starting together; a schedule that wakes fewer pods and an
    autoscaler that adds one at a time are said, not read as that wake."""
    (line,) = [line for line in section(stack_config(stack)) if line.startswith("Simultaneous wake")]
    assert when in line, line


def test_a_wake_over_several_zones_also_gives_the_read_with_every_pod_in_one() -> None:
    """The even spread over the zones is an assumption nothing enforces: plan.md gives the crowded read too."""
    config = variant_config("prod-397b")
    raw = config.model_dump(by_alias=True, exclude_unset=True)
    text = "\n".join(section(validate({**raw, "zones": [*config.zones, "us-central1-c"]})))
    assert "up to 6 node(s) read one zone's disk" in text
    assert "all 12 on one zone's disk read it in ~" in text and "which nothing makes them do" in text
    assert "which nothing makes them do" not in "\n".join(section(config))


def test_a_report_without_conditions_is_said_to_be_unread(tmp_path: Path) -> None:
    """A diff review: upgrading dropped a report recorded by the release before (no conditions) in silence, and the
    probe, the deadlines, the wake and the alerts fell back to the write-up's figures; the render now says so."""
    config = stack_config("dev")
    recorded = _with_startup(config, tmp_path / "m.yaml", scheduled=200, ready=2700)
    document = yaml.safe_load(recorded.read_text())
    del document["measurements"][-1]["startup"]["conditions"]
    (tmp_path / "older.yaml").write_text(yaml.safe_dump(document))
    with measurements.using(tmp_path / "older.yaml"):
        rendered = render("dev", out=tmp_path / "out")
    (note,) = [note for note in rendered.notes if note.startswith("start-up report(s) slow-startup")]
    assert "not read" in note and "bench-compare --record" in note
    assert "slow-startup" in (tmp_path / "out" / "plan.md").read_text()
    with measurements.using(recorded):
        assert not [note for note in render("dev", out=tmp_path / "out2").notes if "start-up report(s)" in note]


def test_a_new_start_up_report_is_named_as_what_moves_the_probe(tmp_path: Path) -> None:
    """A platform review: a start-up report recorded again (each pod's span kept) moved the probe, the progress
    deadline, the wake and the alerts, and the preview said that the program itself declares them otherwise
    (another version of it), where a measurement changed."""
    from commands.io.states import load_states
    from commands.preview.command import preview_states

    config = stack_config("dev")
    with measurements.using(_with_startup(config, tmp_path / "old.yaml", 360, 2700)):
        render("dev", out=tmp_path / "old")
    with measurements.using(_with_startup(config, tmp_path / "new.yaml", 360, 2700, spans={"pod": 590})):
        render("dev", out=tmp_path / "new")
    changes = preview_states(load_states(tmp_path / "old"), load_states(tmp_path / "new")).changes
    (deployment,) = [change for change in changes if change.record["type"] == "kubernetes:apps/v1:Deployment"]
    assert "failureThreshold" in str([entry.path for entry in deployment.inputs])
    assert "capacity.json holds other figures for the time to serve" in deployment.no_config_keys
    assert not [change for change in changes if "another version of it" in change.no_config_keys]


def test_a_wake_lead_from_a_figure_never_measured_for_the_stack_says_it_is_a_guess(tmp_path: Path) -> None:
    """A time-to-serve review: one measured configuration's figure sets the wake lead of every profile; for one the
    write-up never ran, the lead is a guess, until a start-up report of it is recorded or the lead is set."""
    recipe = validate({"environment": "dev", "project": "my-llm-dev"})
    assert "never measured" not in schedule_lead_lines(recipe)[-1]
    other = validate({"environment": "dev", "project": "my-llm-dev", "profile": "qwen3.5-35b-a3b-fp8"})
    (line,) = [line for line in schedule_lead_lines(other) if line.startswith("Schedule:")]
    assert line.endswith(
        "That figure was never measured for this stack, the lead is a guess until a start-up report of it is recorded "
        "(docs/time-to-serve.md): profile qwen3.5-35b-a3b-fp8 was not measured (the write-up measured qwen3.5-27b-fp8)."
    )
    with measurements.using(_with_startup(other, tmp_path / "m.yaml", scheduled=300, ready=900)):
        assert "never measured" not in schedule_lead_lines(other)[-1]
    led = validate(
        {
            "environment": "dev",
            "project": "my-llm-dev",
            "profile": "qwen3.5-35b-a3b-fp8",
            "schedule": {"wakeLeadSeconds": 1800},
        }
    )
    assert "never measured" not in schedule_lead_lines(led)[-1]


def test_an_unmeasured_replica_row_names_the_figure_the_stack_plans_with() -> None:
    """A newcomer: staging's table said "not measured" for a new replica while the planning figure, the Operations
    table and a policy all said 16 min; the row now says which figure is planned with, and on what basis."""
    staging = time_to_serve(stack_config("staging"))
    rows = {
        line.split(" | ")[0]: line for line in section(stack_config("staging"), staging) if line.startswith("| a new")
    }
    cold = rows["| a new replica on a new node"]
    assert "| not measured | not measured |" in cold and "; planned with 16.0 min, assumed, not measured" in cold
    assert "; planned with 10.0 min" in rows["| a new replica on a held node"]
    dev = [line for line in section(stack_config("dev")) if line.startswith("| a new")]
    assert dev and not any("planned with" in line for line in dev), "a figure of its own needs no second one"


def test_a_wake_read_over_its_bound_is_a_render_note(prod: Any) -> None:
    """A newcomer: the shipped prod stack's 12-node wake reads the checkpoint in ~148 s, over its 120 s bound, and only
    a line inside plan.md's Time to serve said so (exit 0, nothing on stderr, nothing among the notes at the top)."""
    note = wake_read_note(stack_config("prod"))
    assert note is not None and note.startswith("time to serve: 12 node(s) waking at once") and "~148 s" in note
    assert f"- {note}" in prod.plan.split("## ")[0], "among the notes at the top of plan.md"
    assert wake_read_note(stack_config("dev")) is None
