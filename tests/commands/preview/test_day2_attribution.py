"""Several settings changed at once: a change names the settings whose new values alone change what it comes from,
asked of both renders' settings (`commands.preview.setting_sources.SettingValues`), not every changed setting that
may feed it (a held-out day-2 round: a setting turned off with its sub-settings changed, a fallback another setting
overrides, a node count beside steps that set their own)."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from commands.io.states import STATES_FILE, setting_digests, written_settings
from commands.preview.command import Preview, preview_files, preview_states
from commands.preview.command import main as preview_main
from commands.preview.setting_sources import SettingValues, _config_of
from stacks.load.loader import validate
from tests.commands.preview.test_day2 import day2
from tests.commands.preview.test_preview import render_with
from tests.conftest import RenderStack
from tests.rendered import RenderedStack, run_main, run_render
from tests.variants import stack_settings

# warmCapacity turned on by its node count alone: the stack file writes no `enabled`
WARM_TWO = {"warmCapacity": {"nodes": 2}, "cluster": {"minMasterVersion": "1.36"}}


def keys_of(result: Preview, name: str) -> set[str]:
    (change,) = [change for change in result.changes if change.record["name"] == name]
    return set(change.config_keys)


def named_anywhere(result: Preview) -> set[str]:
    return {key for change in result.changes for key in change.config_keys}


@pytest.mark.parametrize(
    ("stack", "settings", "name", "expected"),
    [
        # with autoscaling off the wake step takes the node count: the target feeds nothing
        (
            "staging",
            {"autoscaling": {"enabled": False, "targetWaitingRequestsPerPod": 50}},
            "llm-schedule-wake",
            {"autoscaling.enabled"},
        ),
        # business hours at a count of their own: the node count they would fall back to moves nothing
        (
            "dev",
            {"schedule": {"businessHours": {"replicas": 2}}, "capacity": {"nodes": 3}},
            "llm-schedule-wake",
            {"schedule.businessHours.replicas"},
        ),
        # the wake step's count is the HPA's minimum, not the node count
        (
            "staging",
            {"autoscaling": {"minReplicas": 2}, "capacity": {"nodes": 6}},
            "llm-schedule-wake",
            {"autoscaling.minReplicas"},
        ),
        # held nodes' time to serve is the same for one node or two: the switch moved it
        (
            "staging",
            {"warmCapacity": {"enabled": True, "nodes": 2}, "cluster": {"minMasterVersion": "1.36"}},
            "llm-autoscaler-hpa",
            {"warmCapacity.enabled"},
        ),
        # steps that set their own counts: the node count does not make them
        (
            "staging",
            {
                "schedule": {
                    "entries": [
                        {"name": "morning", "cron": "0 7 * * 1-5", "replicas": 2},
                        {"name": "night", "cron": "0 20 * * 1-5", "replicas": 0},
                    ]
                },
                "capacity": {"nodes": 6},
            },
            "llm-schedule-morning",
            {"schedule.entries"},
        ),
        # a lead time given: the node count only sets the default one
        (
            "prod",
            {
                "capacity": {
                    "nodes": 10,
                    "sources": [
                        {
                            "type": "flexStart",
                            "maxRunDurationSeconds": 604800,
                            "nodeRecyclingLeadTimeSeconds": 30000,
                        },
                        {"type": "spot"},
                    ],
                }
            },
            "llm-capacity-compute-class",
            {"capacity.sources"},
        ),
        # the Gateway's per-rank containers are the listed input; the schedule owns the replicas the node count sets
        (
            "dev",
            {"routing": {"mode": "gateway"}, "capacity": {"nodes": 2}},
            "llm-vllm-deployment",
            {"routing.mode"},
        ),
        # the dashboard goes with its switch; a threshold of alerts turned off feeds nothing
        (
            "prod",
            {"monitoring": {"dashboard": False, "alerts": {"enabled": False, "queueWaitingThreshold": 500}}},
            "llm-monitoring-dashboard",
            {"monitoring.dashboard"},
        ),
    ],
)
def test_a_change_names_the_settings_whose_new_values_alone_make_it(
    render_stack: RenderStack,
    tmp_path_factory: pytest.TempPathFactory,
    stack: str,
    settings: dict[str, Any],
    name: str,
    expected: set[str],
) -> None:
    label = "attribution-" + "-".join(sorted(settings))
    _, _, result = day2(render_stack, tmp_path_factory, stack, label, settings)
    assert keys_of(result, name) == expected


@pytest.mark.parametrize(
    ("stack", "label", "settings", "key"),
    [
        (
            "staging",
            "autoscaling-off-target",
            {"autoscaling": {"enabled": False, "targetWaitingRequestsPerPod": 50}},
            "autoscaling.targetWaitingRequestsPerPod",
        ),
        # it moves the monitoring component's Args, yet the component declares the same either way: it was named by
        # no change and not said to be without an effect either
        (
            "prod",
            "alerts-off-threshold",
            {"monitoring": {"alerts": {"enabled": False, "queueWaitingThreshold": 500}}},
            "monitoring.alerts.queueWaitingThreshold",
        ),
    ],
)
def test_a_setting_without_an_effect_is_said_so_and_named_by_no_change(
    render_stack: RenderStack,
    tmp_path_factory: pytest.TempPathFactory,
    stack: str,
    label: str,
    settings: dict[str, Any],
    key: str,
) -> None:
    _, _, result = day2(render_stack, tmp_path_factory, stack, label, settings)
    assert key not in named_anywhere(result)
    assert any(note.startswith(f"changed without an effect here: `{key}`") for note in result.notes), result.notes


def test_a_setting_that_moves_only_the_plan_is_said_so_and_named_by_no_change(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A day-2 tester: a stated image pull changes the time to serve (capacity.json, plan.md) and nothing `pulumi up`
    declares; the preview said nothing of the two settings, neither named nor noted."""
    settings = {"timeToServe": {"imageGib": 12, "imagePullMibps": 40}}
    _, _, result = day2(render_stack, tmp_path_factory, "dev", "stated-pull", settings)
    assert not result.changes and named_anywhere(result) == set()
    assert (
        "changed the render's plan only: `timeToServe.imageGib`, `timeToServe.imagePullMibps` (`pulumi up` declares "
        "the same" in "\n".join(result.notes)
    ), result.notes
    assert not any(note.startswith("changed without an effect here") for note in result.notes)


def test_two_settings_that_each_give_the_same_value_are_both_named(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """An unset maximum follows the node count: 4 -> 6 by both, neither alone moves it, so both are named."""
    settings = {"autoscaling": {"maxReplicas": 6}, "capacity": {"nodes": 6}}
    _, _, result = day2(render_stack, tmp_path_factory, "staging", "max-and-nodes", settings)
    assert keys_of(result, "llm-autoscaler-hpa") == {"autoscaling.maxReplicas", "capacity.nodes"}


def test_renders_without_settings_name_every_setting_that_may_feed_a_change(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A render made before states.json held the settings (or one whose settings this version cannot read): the
    changed settings that may feed the change are named, as before."""
    settings = {"autoscaling": {"enabled": False, "targetWaitingRequestsPerPod": 50}}
    base, changed, _ = day2(render_stack, tmp_path_factory, "staging", "autoscaling-off-target", settings)
    for old_settings in (None, {"unknownSetting": 1}):
        old = dataclasses.replace(base.states, settings=old_settings)
        result = preview_states(old, changed.states)
        assert "autoscaling.targetWaitingRequestsPerPod" in named_anywhere(result)
        assert not any(note.startswith("changed without an effect") for note in result.notes)
    assert SettingValues.of(dataclasses.replace(base.states, settings={"unknownSetting": 1}), changed.states) is None
    # settings that do not read as the render's digests say (another render's pasted in): not read either
    other = dataclasses.replace(base.states, settings=render_stack("prod").states.settings)
    assert SettingValues.of(other, changed.states) is None


@pytest.mark.parametrize(
    "settings",
    [
        {"environment": "staging", "project": "my-llm-staging", "target": {"concurrentRequests": 12000}},
        {"environment": "dev", "project": "my-llm-dev", "weights": {"targetLoadSeconds": 60}},
        *({**stack_settings(stack), "project": f"my-llm-{stack}"} for stack in ("dev", "staging", "prod")),
        {"environment": "staging", "project": "my-llm-staging", "engine": {"speculative": None}},
        {"environment": "staging", "project": "my-llm-staging", **WARM_TWO},
    ],
)
def test_the_settings_a_render_writes_read_back_as_the_config_it_was_made_from(settings: dict[str, Any]) -> None:
    """A review: a goal's node count and a disk sized by targetLoadSeconds wrote settings the model refused on reading
    (a node count beside a goal, a throughput beside targetLoadSeconds), and the preview fell back without a word."""
    config = validate(settings)
    assert _config_of(written_settings(config, settings), setting_digests(config)) == config


def test_a_switch_a_group_turns_on_by_its_other_keys_names_those_keys_too(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A newcomer's day 2: `warmCapacity: {nodes: 2}` named only `warmCapacity.enabled`, a key the file does not hold,
    and said `warmCapacity.nodes` changed without an effect when the group went again."""
    _, warm, result = day2(render_stack, tmp_path_factory, "staging", "warm-two", WARM_TWO)
    assert keys_of(result, "llm-warm-capacity-buffer") == {"warmCapacity.enabled", "warmCapacity.nodes"}
    assert warm.states.settings is not None and "enabled" not in warm.states.settings["warmCapacity"]
    # and back: the group removed
    cold, _, _ = day2(render_stack, tmp_path_factory, "staging", "warm-two-min", {"cluster": WARM_TWO["cluster"]})
    back = preview_states(warm.states, cold.states)
    deleted = [change for change in back.changes if change.record["name"] == "llm-warm-capacity-buffer"]
    assert [set(change.config_keys) for change in deleted] == [{"warmCapacity.enabled", "warmCapacity.nodes"}]
    assert not any(note.startswith("changed without an effect") for note in back.notes), back.notes
    # a switch the file writes (`enabled: true`) is itself the setting: the parametrized case above names it alone


def test_render_against_reads_its_new_states_as_preview_reads_them(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """An attacker: a value the loader takes but the render folder's reader hides (`{"password": 1}` in an extraEnv
    value) made `render --against` compare its own unhidden states with OLD's hidden ones: an update of the serving
    Deployment for the same stack file (`preview OLD NEW` said no change), and other names for the same pair."""
    settings = {"engine": {"extraEnv": {"X": '{"password": 1}'}}}
    old = render_with(render_stack, tmp_path_factory, "dev", "reader-hides", settings)
    stack_file = tmp_path_factory.getbasetemp() / "day2" / "Pulumi.dev-reader-hides.yaml"
    run = run_render(
        "dev", "--config-file", str(stack_file), "--out", str(tmp_path / "again"), "--against", str(old.directory)
    )
    assert run.returncode == 0, run.stderr
    against = json.loads((tmp_path / "again" / "changes.json").read_text())
    assert against["changes"] == [] and against == preview_files_json(old, RenderedStack(tmp_path / "again"))


def preview_files_json(old: RenderedStack, new: RenderedStack) -> Any:
    return json.loads(preview_files(preview_states(old.states, new.states))["changes.json"])


def test_states_whose_digests_leave_out_a_setting_they_hold_are_refused(dev: RenderedStack, tmp_path: Path) -> None:
    """An attacker: an OLD render with `engine` and `engine.maxNumSeqs` taken out of its settingDigests gave "no
    stack setting differs" for a new maxNumSeqs (only the digests both sides hold were compared)."""
    forged = tmp_path / "old"
    shutil.copytree(dev.directory, forged)
    document = json.loads((forged / STATES_FILE).read_text())
    del document["settingDigests"]["engine"], document["settingDigests"]["engine.maxNumSeqs"]
    (forged / STATES_FILE).write_text(json.dumps(document))
    run = run_main(preview_main, str(forged), str(dev.directory), "--out", str(tmp_path / "preview"))
    assert run.returncode == 2
    assert run.stderr.endswith(
        "states.json: settings hold engine.maxNumSeqs, of which settingDigests hold no digest: not as a render writes "
        "them; render it again\n"
    )


def test_a_created_component_names_the_changed_settings_it_comes_with(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A review: `warmCapacity: {enabled: true, nodes: 2}` named only the switch, and `warmCapacity.nodes` (the new
    buffer's two nodes) was neither named nor said to be without an effect."""
    settings = {"warmCapacity": {"enabled": True, "nodes": 2}, "cluster": {"minMasterVersion": "1.36"}}
    _, _, result = day2(render_stack, tmp_path_factory, "staging", "attribution-cluster-warmCapacity", settings)
    assert keys_of(result, "llm-warm-capacity-buffer") == {"warmCapacity.enabled", "warmCapacity.nodes"}
    assert keys_of(result, "llm-autoscaler-hpa") == {"warmCapacity.enabled"}
