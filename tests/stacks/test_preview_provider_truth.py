"""What the provider really does, on small hand-made states (the helpers of test_preview): a resource
whose provider moved to another URN, one cloud object under two URNs, a cluster deleted under the
objects that stay on it."""

from __future__ import annotations

import copy
from typing import Any

from stacks.offline.preview import preview
from tests.stacks.test_preview import base_state, changed, one, record

KUBECONFIG_A = {"kubeconfig": "value sha256:aaaaaaaaaaaa"}
KUBECONFIG_B = {"kubeconfig": "value sha256:bbbbbbbbbbbb"}


def with_digest(state: list[dict[str, Any]], name: str, digests: dict[str, str]) -> list[dict[str, Any]]:
    state = copy.deepcopy(state)
    (target,) = [item for item in state if item["name"] == name]
    target["secretDigests"] = digests
    return state


def provider_moved(digests: dict[str, str]) -> list[dict[str, Any]]:
    """`cluster.existing`: no cluster any more, the Kubernetes provider under another component."""
    state = [item for item in copy.deepcopy(base_state()) if item["name"] not in ("gke", "vpc")]
    state.insert(0, record("llm-serving:gke:ExistingCluster", "existing", {}))
    for item in state:
        if item["name"] == "k8s":
            item["parent"], item["options"]["dependsOn"] = "existing", []
    return with_digest(state, "k8s", digests)


# ---------------------------------------------------------------- a provider that moved


def test_objects_whose_provider_moves_to_another_cluster_are_replaced_created_first() -> None:
    """pulumi/pulumi step_generator.go providerChanged: the new provider's DiffConfig decides."""
    old = with_digest(changed(base_state(), "gke", "options.protect", False), "k8s", KUBECONFIG_A)
    result = preview(old, provider_moved(KUBECONFIG_B))
    deployment = one(result, "deploy")
    assert deployment.action == "replace" and deployment.delete_before_replace is False
    assert "its provider moved from" in deployment.replaced_because[0]
    assert deployment.replaced_because[0].endswith("whose DiffConfig replaces on kubeconfig")


def test_objects_whose_provider_moves_but_points_at_the_same_cluster_stay() -> None:
    old = with_digest(changed(base_state(), "gke", "options.protect", False), "k8s", KUBECONFIG_A)
    result = preview(old, provider_moved(KUBECONFIG_A))
    assert "deploy" not in {change.record["name"] for change in result.changes}


# ---------------------------------------------------------------- one cloud object, two URNs


def test_an_object_created_under_a_new_urn_while_its_old_urn_is_deleted_is_refused() -> None:
    namespace = record("kubernetes:core/v1:Namespace", "ns", {"metadata": {"name": "serving"}}, parent="llm")
    old = with_digest([*base_state(), {**namespace, "provider": "k8s"}], "k8s", KUBECONFIG_A)
    moved = copy.deepcopy(old)
    moved.insert(0, record("llm-serving:gke:Other", "other", {}))
    moved[-1]["parent"] = "other"
    result = preview(old, moved)
    (refusal,) = result.refusals
    assert "pulumi-kubernetes refuses to create" in refusal and "'serving'" in refusal and "alias" in refusal
    # on another cluster it is another object
    elsewhere = with_digest(moved, "k8s", KUBECONFIG_B)
    assert not any("refuses to create" in refusal for refusal in preview(old, elsewhere).refusals)


def test_a_named_gcp_resource_under_a_new_urn_is_refused_409_and_a_project_api_is_not() -> None:
    api = record("gcp:projects/service:Service", "api", {"project": "p", "service": "x.googleapis.com"})
    old = [*base_state(), {**api, "inputs": {**api["inputs"], "disableOnDestroy": False}}]
    new = copy.deepcopy(old)
    new.insert(0, record("llm-serving:gke:Other", "other", {}))
    for item in new:
        if item["name"] in ("api", "vpc"):
            item["parent"] = "other"
    result = preview(old, new)
    assert [refusal for refusal in result.refusals if "409" in refusal and "'vpc'" in refusal]
    assert not any("x.googleapis.com" in refusal for refusal in result.refusals)


def test_a_cluster_deleted_while_the_new_program_keeps_objects_on_it_is_refused() -> None:
    old = with_digest(changed(base_state(), "gke", "options.protect", False), "k8s", KUBECONFIG_A)
    result = preview(old, provider_moved(KUBECONFIG_A))
    (refusal,) = [refusal for refusal in result.refusals if "deletes the cluster" in refusal]
    assert "'c'" in refusal and "cluster.existing" in refusal
    assert not any("deletes the cluster" in r for r in preview(old, provider_moved(KUBECONFIG_B)).refusals)
