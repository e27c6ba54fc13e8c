"""What the provider really does, on small hand-made states (the helpers of test_preview): a resource
whose provider moved to another URN, one cloud object under two URNs, a cluster deleted under the
objects that stay on it, inputs that live only in the state, proxy-only subnets, a disk deleted first
under its volume."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from commands.preview.changes_md import changes_markdown
from commands.preview.command import preview
from commands.preview.provider_effects import STATE_ONLY
from tests.commands.preview.test_preview import base_state, changed, one, record

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
    deleted_api = [change for change in result.of("delete") if change.record["name"] == "api"]
    assert deleted_api[0].effect is not None and "stays enabled" in deleted_api[0].effect.says


def test_a_cluster_deleted_while_the_new_program_keeps_objects_on_it_is_refused() -> None:
    old = with_digest(changed(base_state(), "gke", "options.protect", False), "k8s", KUBECONFIG_A)
    result = preview(old, provider_moved(KUBECONFIG_A))
    (refusal,) = [refusal for refusal in result.refusals if "deletes the cluster" in refusal]
    assert "'c'" in refusal and "cluster.existing" in refusal
    assert not any("deletes the cluster" in r for r in preview(old, provider_moved(KUBECONFIG_B)).refusals)


# ---------------------------------------------------------------- what the provider does


def test_a_lower_version_floor_changes_only_the_state_and_a_higher_one_may_upgrade() -> None:
    old = changed(base_state(), "gke", "inputs.minMasterVersion", "1.35")
    (lower,) = one(preview(old, changed(old, "gke", "inputs.minMasterVersion", "1.34")), "gke").inputs
    assert lower.effect is not None and lower.effect.says.startswith(STATE_ONLY)
    assert "resource_container_cluster.go:4916" in lower.effect.source
    (higher,) = one(preview(old, changed(old, "gke", "inputs.minMasterVersion", "1.36.1-gke.100")), "gke").inputs
    assert higher.effect is not None and higher.effect.says.startswith("upgrades the control plane to 1.36.1-gke.100")
    # GKE runs `1.35` as some 1.35.x-gke.N, which go-version orders below 1.35: a build of it may be above
    (build,) = one(preview(old, changed(old, "gke", "inputs.minMasterVersion", "1.35.0-gke.9")), "gke").inputs
    assert build.effect is not None and build.effect.says.startswith("upgrades the control plane")
    full = changed(base_state(), "gke", "inputs.minMasterVersion", "1.35.2-gke.100")
    (lower,) = one(preview(full, changed(full, "gke", "inputs.minMasterVersion", "1.35.1-gke.900")), "gke").inputs
    assert lower.effect is not None and lower.effect.says.startswith(STATE_ONLY)


def test_a_value_quoted_in_changes_md_prose_opens_no_link_nor_html() -> None:
    """A diff review: a hand-edited render's minMasterVersion reached the provider's line and the rollout's as
    markdown, with a link of its own; in prose, outside code spans, `[` and `<` are escaped."""
    forged = "1.99 **Reviewed by SRE** [details](https://attacker.example/approve) <img src=x>"
    text = changes_markdown(preview(base_state(), changed(base_state(), "gke", "inputs.minMasterVersion", forged)))
    assert "upgrades the control plane to 1.99 **Reviewed by SRE** \\[details](https" in text
    prose = [line for line in text.splitlines() if not line.startswith(("    + ", "    - "))]  # the diff is fenced
    assert not [line for line in prose if "[details](" in line.replace("\\[details](", "") or " <img" in line]


def test_a_cluster_whose_protect_goes_off_says_so() -> None:
    """A platform review: prod's deletionProtection set false (the documented destroy path) also drops Pulumi's
    protect, and only the [protect] tag went away."""
    old = changed(changed(base_state(), "gke", "options.protect", True), "gke", "inputs.deletionProtection", True)
    new = changed(changed(old, "gke", "options.protect", False), "gke", "inputs.deletionProtection", False)
    assert any("no longer protected" in warning for warning in preview(old, new).warnings)
    assert not any("no longer protected" in warning for warning in preview(old, old).warnings)


def test_guards_and_deletion_policies_are_state_only_and_say_so_in_both_files() -> None:
    old = changed(base_state(), "disk", "inputs.deletionPolicy", "DELETE")
    result = preview(old, changed(old, "disk", "inputs.deletionPolicy", "ABANDON"))
    (entry,) = one(result, "disk").inputs
    assert entry.as_json()["providerEffect"] == STATE_ONLY
    assert "resource_compute_disk.go" in entry.as_json()["providerEffectSource"]
    assert f"the provider: {STATE_ONLY}" in changes_markdown(result)
    protected = preview(base_state(), changed(base_state(), "gke", "inputs.deletionProtection", True))
    assert one(protected, "gke").inputs[0].effect.says == STATE_ONLY


# ---------------------------------------------------------------- proxy-only subnets and disks


def proxy_subnet(cidr: str) -> dict[str, Any]:
    inputs = {"name": "proxy", "project": "p", "region": "r", "purpose": "REGIONAL_MANAGED_PROXY", "ipCidrRange": cidr}
    return record("gcp:compute/subnetwork:Subnetwork", "proxy", inputs, parent="llm", provider="gcp")


def gateway() -> dict[str, Any]:
    inputs = {"metadata": {"name": "gw", "namespace": "ns"}, "spec": {"gatewayClassName": "gke-l7-rilb"}}
    return record("kubernetes:gateway.networking.k8s.io/v1:Gateway", "gw", inputs, parent="llm", provider="k8s")


def test_growing_or_moving_a_proxy_only_subnet_under_the_gateway_is_refused() -> None:
    old = [*base_state(), proxy_subnet("10.129.0.0/23"), gateway()]
    grown = preview(old, [*base_state(), proxy_subnet("10.129.0.0/22"), gateway()])
    assert one(grown, "proxy").action == "update"
    (refusal,) = grown.refusals
    assert "cannot be expanded" in refusal and "BACKUP" in refusal and "existingProxySubnet" in refusal
    moved = preview(old, [*base_state(), proxy_subnet("10.130.0.0/23"), gateway()])
    assert one(moved, "proxy").action == "replace"
    (refusal,) = moved.refusals
    assert "proxy-only subnet is deleted before its replacement" in refusal
    # without the Gateway nothing uses it
    assert (
        preview([*base_state(), proxy_subnet("10.129.0.0/23")], [*base_state(), proxy_subnet("10.130.0.0/23")]).refusals
        == []
    )
    # an ordinary subnet grows in place
    plain = proxy_subnet("10.0.0.0/20")
    plain["inputs"].pop("purpose")
    assert preview([*base_state(), plain], [*base_state(), {**plain, "inputs": {**plain["inputs"]}}]).refusals == []


def test_a_disk_replaced_delete_first_under_its_volume_warns_about_the_claim_and_the_detach() -> None:
    volume = record(
        "kubernetes:core/v1:PersistentVolume",
        "pv",
        {"metadata": {"name": "w-1"}, "spec": {"csi": {"volumeHandle": "projects/p/zones/us-central1-b/disks/d"}}},
        parent="llm",
        provider="k8s",
    )
    old = [*changed(base_state(), "disk", "options.retainOnDelete", False), volume]
    new_volume = {**volume, "name": "pv2", "inputs": {**volume["inputs"], "metadata": {"name": "w-2"}}}
    new = [*changed(changed(old[:-1], "disk", "inputs.size", 50), "disk", "options.retainOnDelete", False), new_volume]
    result = preview(old, new)
    (warning,) = [warning for warning in result.warnings if "replaced delete-first (size changed)" in warning]
    assert "::pv" in warning and "Terminating" in warning and "detaches" in warning and "zero" in warning


# ---------------------------------------------------------------- a replacement trigger, replaceWith


def volume_and_claim(trigger: str | None) -> list[dict[str, Any]]:
    """A volume replaced by its trigger, delete-first under its fixed name, and a claim replaced with it."""
    triggered = {} if trigger is None else {"replacementTrigger": trigger}
    return [
        *base_state(),
        record(
            "kubernetes:core/v1:PersistentVolume",
            "pv",
            {"metadata": {"name": "w"}, "spec": {"csi": {"volumeHandle": "projects/p/zones/us-central1-b/disks/d"}}},
            parent="llm-weights",
            provider="k8s",
            deleteBeforeReplace=True,
            **triggered,
        ),
        record(
            "kubernetes:core/v1:PersistentVolumeClaim",
            "pvc",
            {"metadata": {"name": "w", "namespace": "a"}, "spec": {"volumeName": "w"}},
            parent="llm-weights",
            provider="k8s",
            dependsOn=["pv"],
            replaceWith=["pv"],
        ),
    ]


def test_a_changed_trigger_replaces_as_its_option_orders_and_what_is_replaced_with_it_first() -> None:
    """pulumi step_generator.go shouldTriggerReplace, findDependentCascadeReplacements: the claim's own inputs are
    unchanged, yet it is replaced with the volume and deleted before it."""
    result = preview(volume_and_claim("a"), volume_and_claim("b"))
    volume, claim = one(result, "pv"), one(result, "pvc")
    assert volume.action == "replace" and volume.replaced_because == ["its replacementTrigger changed"]
    assert volume.delete_before_replace and volume.inputs == []
    assert claim.action == "replace" and claim.replaced_because == ["it is replaced with pv (its replaceWith option)"]
    assert claim.delete_before_replace and claim.deleted_first_with == volume.urn


def test_a_trigger_on_one_side_only_is_no_change() -> None:
    """A state from before the trigger (null) against one with it, and back: the engine compares only two values."""
    assert preview(volume_and_claim(None), volume_and_claim("a")).changes == []
    assert preview(volume_and_claim("a"), volume_and_claim(None)).changes == []
    assert preview(volume_and_claim("a"), volume_and_claim("a")).changes == []


@pytest.mark.parametrize(
    ("old", "new"),
    [(1, True), ([0], [False]), ("[secret]", "[secret]")],
    ids=["one-and-true", "zero-and-false-in-a-list", "secret-digests-differ"],
)
def test_triggers_compare_as_the_engine_compares_property_values(old: Any, new: Any) -> None:
    """A bool is not a number to the engine (property.Value kinds); a secret trigger is told apart by its digests."""
    before, after = volume_and_claim(old), volume_and_claim(new)
    if old == "[secret]":
        before[-2]["options"]["replacementTriggerSecretDigests"] = {"": "value sha256:aaaaaaaaaaaa"}
        after[-2]["options"]["replacementTriggerSecretDigests"] = {"": "value sha256:bbbbbbbbbbbb"}
    assert one(preview(before, after), "pv").replaced_because == ["its replacementTrigger changed"]


def test_a_resource_is_not_replaced_with_itself() -> None:
    old, new = volume_and_claim("a"), volume_and_claim("b")
    new[-1]["options"]["replaceWith"] = ["pv", "pvc", "no-such-resource"]
    claim = one(preview(old, new), "pvc")
    assert claim.replaced_because == ["it is replaced with pv (its replaceWith option)"]


def test_a_chain_replaced_with_a_volume_is_deleted_first_link_by_link_and_a_component_has_no_trigger() -> None:
    """replaceWith followed transitively from the root replaced delete-first; a component is never replaced."""
    old, new = volume_and_claim("a"), volume_and_claim("b")
    for state in (old, new):
        for index in range(3):
            state.append(
                record(
                    "kubernetes:core/v1:ConfigMap",
                    f"link-{index}",
                    {"metadata": {"name": f"link-{index}", "namespace": "a"}},
                    parent="llm-weights",
                    provider="k8s",
                    replaceWith=["pvc" if index == 0 else f"link-{index - 1}"],
                )
            )
        (volume_record,) = [item for item in state if item["name"] == "pv"]
        state[0]["options"]["replacementTrigger"] = "component-" + volume_record["options"]["replacementTrigger"]
    result = preview(old, new)
    volume = one(result, "pv")
    assert all(one(result, f"link-{index}").deleted_first_with == volume.urn for index in range(3))
    assert "llm" not in {change.record["name"] for change in result.changes}
