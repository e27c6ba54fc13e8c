"""When the serving pods follow an update (commands/preview/rollouts.py), on records built by hand."""

from __future__ import annotations

import copy
from typing import Any

from commands.preview.changes import InputChange, Preview, ResourceChange
from commands.preview.rollouts import ServeTimes, rollouts

URN = "urn:serving"
TIMES = ServeTimes(new_node=(900, 960), same_node=(600, 600), source="the test's figures")
ZONE = "topology.kubernetes.io/zone"


def serving(replicas: int, zones: list[str], **pod_spec: Any) -> dict[str, Any]:
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": ZONE, "operator": "In", "values": zones}]}]
            }
        }
    }
    container = {"name": "vllm", "args": ["--max-num-seqs=1024"], "resources": {"limits": {"nvidia.com/gpu": 8}}}
    spec = {"containers": [container], "affinity": affinity, **pod_spec}
    return {
        "type": "kubernetes:apps/v1:Deployment",
        "name": "serving",
        "inputs": {"spec": {"replicas": replicas, "template": {"spec": spec}}},
        "options": {},
    }


def rolled(before: dict[str, Any], after: dict[str, Any], *paths: str) -> list[str]:
    change = ResourceChange(URN, after, "update", [InputChange(path, 0, 1, replaces=False) for path in paths])
    return [rollout.what for rollout in rollouts({URN: before}, {URN: after}, Preview([change], 0, [], []), TIMES)]


AFFINITY = "spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
ZONES = f"{AFFINITY}.nodeSelectorTerms[0].matchExpressions[0].values"


def test_a_zone_added_leaves_the_old_nodes_usable() -> None:
    """b -> b, c: the old pods' nodes in b still match, so a rolled pod may take the node its old self freed (a
    day-2 review: previewed as every pod moving to new nodes, and a possible stall for capacity)."""
    (what,) = rolled(serving(12, ["us-central1-b"]), serving(12, ["us-central1-b", "us-central1-c"]), ZONES)
    assert what.startswith("the serving pods roll: 12 pod(s), 1 at a time, each a model load (and a node, when")


def test_a_zone_taken_away_moves_the_pods_there_and_a_new_selector_every_pod() -> None:
    narrowed = rolled(serving(12, ["us-central1-b", "us-central1-c"]), serving(12, ["us-central1-c"]), ZONES)
    assert narrowed[0].startswith(
        "the serving pods roll: 12 pod(s), 1 at a time, each a model load; the pods' node affinity no longer admits "
        "us-central1-b, so a pod on a node there needs a new A4 node in the others"
    )
    selector = rolled(
        serving(12, ["us-central1-b"]),
        serving(12, ["us-central1-b"], nodeSelector={"cloud.google.com/compute-class": "other"}),
        "spec.template.spec.nodeSelector",
    )
    assert selector[0].startswith("every serving pod moves to new nodes (the pods' nodeSelector change)")


def test_more_tolerations_or_fewer_selector_pairs_widen() -> None:
    toleration = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    (what,) = rolled(
        serving(4, ["us-central1-b"], nodeSelector={"a": "1", "b": "2"}),
        serving(4, ["us-central1-b"], nodeSelector={"a": "1"}, tolerations=[toleration]),
        "spec.template.spec.nodeSelector",
        "spec.template.spec.tolerations",
    )
    assert what.startswith("the serving pods roll: 4 pod(s)")


def test_a_new_template_with_more_replicas_rolls_only_the_old_count() -> None:
    """12 -> 16 with a new flag: the 4 added start on the new template at once; 12 roll one after the other (a
    day-2 review: 16 rounds were counted)."""
    before = serving(12, ["us-central1-b"])
    after = copy.deepcopy(before)
    after["inputs"]["spec"]["replicas"] = 16
    after["inputs"]["spec"]["template"]["spec"]["containers"][0]["args"] = ["--max-num-seqs=4096"]
    roll, more = rolled(before, after, "spec.template.spec.containers[0].args[0]", "spec.replicas")
    assert roll.startswith("the serving pods roll: 12 pod(s), 1 at a time") and "11 of 12 serve" in roll
    assert more.startswith("4 more serving pod(s), all at once")
    fewer = copy.deepcopy(after)
    fewer["inputs"]["spec"]["replicas"] = 8
    assert rolled(before, fewer, "spec.template.spec.containers[0].args[0]", "spec.replicas")[0].startswith(
        "the serving pods roll: 8 pod(s), 1 at a time"
    )


def test_a_count_the_autoscaler_owned_rolls_as_many_as_run() -> None:
    """Autoscaling turned off with a new template: the old record's count is only the one it was created with
    (1) while the HPA owned it, and with the template the provider sends the whole object, the new declared count with
    it, so the roll counts those pods (a diff review: "1 pod(s)"; where the old owner still holds the field the apply
    fails instead, which `_replicas_taken_back` says)."""
    before = serving(1, ["us-central1-b"])
    before["options"] = {"ignoreChanges": ["spec.replicas"]}
    after = copy.deepcopy(serving(4, ["us-central1-b"]))
    after["inputs"]["spec"]["template"]["spec"]["containers"][0]["args"] = ["--max-num-seqs=4096"]
    assert rolled(before, after, "spec.template.spec.containers[0].args[0]", "spec.replicas")[0].startswith(
        "the serving pods roll: 4 pod(s), 1 at a time"
    )


def test_a_schedule_turned_on_is_said_when_the_deployment_is_replaced_too() -> None:
    sleep = {
        "spec": {
            "schedule": "0 19 * * 1-5",
            "jobTemplate": {
                "spec": {
                    "template": {
                        "spec": {
                            "containers": [
                                {"name": "scale", "command": ["kubectl", "scale", "deployment/qwen", "--replicas=0"]}
                            ]
                        }
                    }
                }
            },
        }
    }
    cronjob = {"type": "kubernetes:batch/v1:CronJob", "name": "sleep", "inputs": sleep, "options": {}}
    old, new = serving(2, ["us-central1-b"]), serving(2, ["us-central1-b"])
    change = ResourceChange(URN, new, "replace", [InputChange("metadata.name", "a", "b", replaces=True)])
    found = rollouts({URN: old}, {URN: new, "urn:sleep": cronjob}, Preview([change], 0, [], []), TIMES)
    assert any(rollout.what.startswith("a scale schedule starts owning the serving replicas") for rollout in found)
