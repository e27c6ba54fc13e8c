"""Held nodes (a GKE CapacityBuffer of the serving Deployment's pods) and the schedule's wake led by
the time to serve."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from stacks.capacity.time_to_serve import led_schedule_steps
from stacks.load.loader import InvalidConfig, validate
from tests.conftest import RenderStack
from tests.manifest_schemas import validate_custom
from tests.rendered import RenderedStack

BASE: dict[str, Any] = {
    "environment": "dev",
    "project": "my-llm-dev",
    "region": "us-central1",
    "zones": ["us-central1-b"],
}


WARM = {
    "environment": "staging",
    "project": "my-llm-staging",
    "cluster": {"minMasterVersion": "1.36"},
    "warmCapacity": {"nodes": 2},
    "autoscaling": {"minReplicas": 1, "maxReplicas": 4},
    "schedule": {"businessHours": {"start": "00:10", "end": "19:00"}},
}


@pytest.fixture(scope="module")
def warm(render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory) -> RenderedStack:
    path = tmp_path_factory.mktemp("warm") / "Pulumi.warm.yaml"
    path.write_text(yaml.safe_dump({"config": {f"gke-b200-serving:{key}": value for key, value in WARM.items()}}))
    return render_stack("warm", path)


def test_the_buffer_holds_nodes_of_the_serving_pods_shape_and_fits_its_crd(warm: RenderedStack) -> None:
    (buffer,) = warm.kind("CapacityBuffer")
    validate_custom(buffer)
    assert buffer["apiVersion"] == "autoscaling.x-k8s.io/v1beta1"
    assert buffer["spec"]["scalableRef"] == {"apiGroup": "apps", "kind": "Deployment", "name": "qwen-serving"}
    assert buffer["spec"]["provisioningStrategy"] == "buffer.x-k8s.io/active-capacity"
    # the schedule sets the replicas: created with none, a later up leaves them alone
    assert buffer["spec"]["replicas"] == 0
    record = warm.one("kubernetes:autoscaling.x-k8s.io/v1beta1:CapacityBuffer")
    assert record["options"]["ignoreChanges"] == ["spec.replicas"]
    assert warm.outputs["capacityBuffer"] == "qwen-serving-held"


def test_the_schedule_wakes_early_and_sets_the_held_nodes(warm: RenderedStack) -> None:
    jobs = {job["metadata"]["name"]: job for job in warm.kind("CronJob")}
    wake, sleep = jobs["serving-schedule-wake"], jobs["serving-schedule-sleep"]
    # 00:10 less the recipe's 16 min: 23:54 the day before (Sunday..Thursday)
    assert wake["spec"]["schedule"] == "54 23 * * 0,1,2,3,4"
    assert sleep["spec"]["schedule"] == "0 19 * * 1,2,3,4,5"

    def buffer_patch(job: dict[str, Any]) -> list[str]:
        (init,) = job["spec"]["jobTemplate"]["spec"]["template"]["spec"]["initContainers"]
        return list(init["args"])

    assert buffer_patch(wake)[-1] == '--patch={"spec":{"replicas":2}}'
    assert buffer_patch(sleep)[-1] == '--patch={"spec":{"replicas":0}}'
    (role,) = [role for role in warm.kind("Role") if role["metadata"]["name"] == "serving-schedule"]
    assert {
        "apiGroups": ["autoscaling.x-k8s.io"],
        "resources": ["capacitybuffers"],
        "resourceNames": ["qwen-serving-held"],
        "verbs": ["get", "patch"],
    } in role["rules"]
    section = warm.plan.split("## Time to serve", 1)[1].split("\n## ", 1)[0]
    assert "Held nodes: 2 A4 node(s) in the schedule's serving windows" in section
    # the buffer is created holding none (the steps own its count): `pulumi up` at noon holds nothing until a step
    assert "the first node is held from the next step that sets them" in section
    assert "the wake step fires at 23:54 (UTC), 16.0 min earlier" in section
    # the lead is the planning figure, with no margin: the line says so (a time-to-serve review)
    assert "it holds no margin" in section and "`schedule.wakeLeadSeconds`" in section


def test_the_node_count_and_the_policy_count_the_held_nodes(warm: RenderedStack) -> None:
    """Held nodes are A4 nodes up besides the pods' (the settings table counts them); a pod on one still
    serves a pod phase later, over the default bound, so LLM-OPS-005 still warns (with the held figure)."""
    (nodes,) = [line for line in warm.plan.splitlines() if line.startswith("| A4 nodes (8x B200 each) |")]
    assert "4 at most" in nodes and "plus 2 held (warmCapacity.nodes" in nodes and "up to 6 A4 nodes" in nodes
    # the hourly cost is of the serving nodes; the held ones are in the monthly figures (their node-hours)
    assert "the cluster fee, not the 2 held node(s), which add 2 x the node price" in warm.plan
    (hpa,) = warm.kind("HorizontalPodAutoscaler")
    annotations = hpa["metadata"]["annotations"]
    assert annotations["llm-serving/held-time-to-serve-seconds"] == "600"
    assert annotations["llm-serving/time-to-serve-seconds"] == "960"
    policy = json.loads((warm.directory / "policy.json").read_text())
    (warning,) = [item for item in policy["violations"] if item["policy"] == "LLM-OPS-005"]
    assert (
        "~600 s (the stack's planning figure" in warning["message"]
        and "on a held node, still over" in warning["message"]
    )


def test_without_warm_capacity_there_is_no_buffer_and_plan_says_so(dev: RenderedStack) -> None:
    assert not dev.kind("CapacityBuffer")
    assert "Held nodes: none." in dev.plan


def test_a_stated_lead_wins_and_cron_entries_are_not_moved() -> None:
    config = validate({**BASE, "schedule": {"businessHours": {"start": "08:00"}, "wakeLeadSeconds": 0}})
    assert led_schedule_steps(config)[0][1] == "0 8 * * 1,2,3,4,5"
    entries = validate({**BASE, "schedule": {"entries": [{"name": "up", "cron": "0 8 * * *", "replicas": 1}]}})
    assert led_schedule_steps(entries) == [("up", "0 8 * * *", 1)]


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"warmCapacity": {"nodes": 0}}, "warmCapacity.nodes"),
        ({"warmCapacity": {"nodes": "2"}}, "warmCapacity.nodes"),
        ({"warmCapacity": {"nodes": 65}}, "warmCapacity.nodes"),
        ({"warmCapacity": {"nodes": 1}}, "cluster.minMasterVersion: warmCapacity needs GKE >= 1.35.2-gke.1842000"),
        (
            {"warmCapacity": {"nodes": 1}, "cluster": {"minMasterVersion": "1.35"}},
            "allowed: a minor newer than 1.35 (a channel may give that minor an older patch)",
        ),
        ({"schedule": {"businessHours": {}, "wakeLeadSeconds": -1}}, "schedule.wakeLeadSeconds"),
        ({"schedule": {"businessHours": {}, "wakeLeadSeconds": 7201}}, "schedule.wakeLeadSeconds"),
    ],
)
def test_hostile_settings_are_one_line(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidConfig) as error:
        validate({**BASE, **settings})
    assert message in str(error.value) and "\n" not in str(error.value)
