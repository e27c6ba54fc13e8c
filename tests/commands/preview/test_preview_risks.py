"""The preview's model of who orders a replacement, values a provider keeps, secrets and global
names, on small hand-made states (the helpers of test_preview)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from commands.preview import risks
from commands.preview.command import main as preview_main
from commands.preview.command import preview, preview_states
from commands.preview.update_plan import index_by_urn, update_plan
from tests.commands.preview.test_preview import base_state, changed, one, record
from tests.rendered import RenderedStack, run_main


def test_a_gcp_replacement_without_a_name_is_created_first() -> None:
    state = changed(base_state(), "disk", "inputs", {"size": 100, "zone": "us-central1-b", "project": "p"})
    change = one(preview(state, changed(state, "disk", "inputs.zone", "us-central1-c")), "disk")
    assert change.action == "replace" and change.delete_before_replace is False


def test_a_dropped_optional_computed_block_is_no_change_unless_the_resource_is_replaced() -> None:
    authorized = {"cidrBlocks": [{"cidrBlock": "203.0.113.0/24"}], "gcpPublicCidrsAccessEnabled": False}
    old = changed(base_state(), "gke", "inputs.masterAuthorizedNetworksConfig", authorized)
    result = preview(old, base_state())
    assert result.changes == []
    (kept,) = result.kept
    assert kept.path == "masterAuthorizedNetworksConfig" and kept.old == authorized
    assert kept.by_hand == (
        "gcloud container clusters update c --location us-central1 --no-enable-master-authorized-networks, "
        "then pulumi refresh"
    )
    assert any("no change: the old value stays" in warning for warning in result.warnings)
    renamed = preview(changed(old, "gke", "options.protect", False), changed(base_state(), "gke", "inputs.name", "c2"))
    assert renamed.kept == [] and "masterAuthorizedNetworksConfig" in {
        entry.path for entry in one(renamed, "gke").inputs
    }


def test_a_secret_is_compared_by_its_digest_and_never_shown() -> None:
    secret = record(
        "kubernetes:core/v1:Secret",
        "token",
        {"metadata": {"name": "hf-token", "namespace": "ns"}, "stringData": {"token": "[secret]"}},
    )
    old = [*base_state(), {**secret, "secretDigests": {"stringData.token": "ciphertext sha256:aaaaaaaaaaaa"}}]
    new = [*base_state(), {**secret, "secretDigests": {"stringData.token": "ciphertext sha256:bbbbbbbbbbbb"}}]
    result = preview(old, new)
    change = one(result, "token")
    assert change.action == "replace" and change.delete_before_replace is True
    assert [entry.as_json() for entry in change.inputs] == [
        {
            "path": "stringData.token",
            "old": "[secret, ciphertext sha256:aaaaaaaaaaaa]",
            "new": "[secret, ciphertext sha256:bbbbbbbbbbbb]",
            "replaces": True,
        }
    ]
    assert any("cannot decrypt" in warning for warning in result.warnings)
    assert preview(old, old).changes == []


def test_a_rotated_secret_names_the_pods_that_read_it() -> None:
    """Kubernetes reads a variable from a Secret when the container starts: a rotated key reaches the running
    serving pods only when they restart; a Secret no pod reads (the token, after its download) needs nothing."""
    secret = record(
        "kubernetes:core/v1:Secret",
        "engine-env",
        {"metadata": {"name": "engine-env", "namespace": "ns"}, "stringData": {"API_KEY": "[secret]"}},
    )
    reader = record(
        "kubernetes:apps/v1:Deployment",
        "serving",
        {
            "metadata": {"name": "qwen-serving", "namespace": "ns"},
            "spec": {
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "vllm",
                                "env": [
                                    {
                                        "name": "API_KEY",
                                        "valueFrom": {"secretKeyRef": {"name": "engine-env", "key": "API_KEY"}},
                                    }
                                ],
                            }
                        ]
                    }
                }
            },
        },
    )
    old = [*base_state(), reader, {**secret, "secretDigests": {"stringData.API_KEY": "ciphertext sha256:aaaaaaaaaaaa"}}]
    new = [*base_state(), reader, {**secret, "secretDigests": {"stringData.API_KEY": "ciphertext sha256:bbbbbbbbbbbb"}}]
    (warning,) = [warning for warning in preview(old, new).warnings if "cannot decrypt" in warning]
    assert "the pods of qwen-serving read it when they start" in warning and "rollout restart" in warning
    alone = [item for item in old if item["name"] != "serving"], [item for item in new if item["name"] != "serving"]
    (warning,) = [warning for warning in preview(*alone).warnings if "cannot decrypt" in warning]
    assert "no pod of this stack reads it now" in warning


def test_a_global_name_is_replaced_delete_first_and_says_so() -> None:
    """Networks, firewalls, images and snapshots are global: the bridge deletes the old one first
    (a create-first would fail 409 on the name), so it is gone until the new one exists."""
    result = preview(base_state(), changed(base_state(), "vpc", "inputs.description", "x"))
    assert one(result, "vpc").delete_before_replace is True
    assert any("global name" in warning and "vpc" in warning for warning in result.warnings)
    assert not any("409" in refusal for refusal in result.refusals)


def test_a_create_first_replacement_under_the_same_global_name_is_refused() -> None:
    """Only possible when something overrides the bridge (the engine honors an explicit option)."""
    state = [*base_state(), record("gcp:compute/firewall:Firewall", "fw", {"name": "f", "project": "p"})]
    planned = update_plan(
        index_by_urn(state, "old"), index_by_urn(changed(state, "fw", "inputs.direction", "EGRESS"), "new")
    )
    (change,) = planned.changes
    change.delete_before_replace, change.delete_first_by = False, ""
    (refusal,) = risks.risk_refusals(index_by_urn(state, "old"), {}, planned)[:1]
    assert "409 alreadyExists" in refusal and "deleteBeforeReplace" in refusal and "suffix" in refusal


def test_a_replacement_whose_old_object_is_abandoned_under_the_same_name_is_refused() -> None:
    """deletionPolicy ABANDON (prod's weights) leaves the old object: the create under its name fails."""
    abandoned = changed(base_state(), "disk", "inputs.deletionPolicy", "ABANDON")
    result = preview(abandoned, changed(abandoned, "disk", "inputs.type", "hyperdisk-balanced"))
    (refusal,) = [refusal for refusal in result.refusals if "409" in refusal]
    assert "deletionPolicy ABANDON" in refusal and "by hand" in refusal


def test_a_subnet_a_nat_lists_is_not_deleted_first_under_it() -> None:
    """The engine deletes a subnet replaced delete-first before it updates the NAT that lists it, and GCP
    refuses to delete a subnet a NAT uses: refused (the preview used to show an update of the NAT)."""
    subnet = record(
        "gcp:compute/subnetwork:Subnetwork",
        "subnet",
        {"name": "s", "ipCidrRange": "10.0.0.0/20", "network": "vpc-id", "region": "us-central1", "project": "p"},
        parent="llm",
        provider="gcp",
        dependsOn=["vpc"],
        deleteBeforeReplace=True,
    )
    nat = record(
        "gcp:compute/routerNat:RouterNat",
        "nat",
        {
            "name": "n",
            "router": "r",
            "region": "us-central1",
            "project": "p",
            "sourceSubnetworkIpRangesToNat": "LIST_OF_SUBNETWORKS",
            "subnetworks": [{"name": "subnet-id", "sourceIpRangesToNats": ["ALL_IP_RANGES"]}],
        },
        parent="llm",
        provider="gcp",
        dependsOn=["subnet"],
    )
    old = [*base_state(), subnet, nat]
    result = preview(old, changed(old, "subnet", "inputs.ipCidrRange", "10.16.0.0/22"))
    assert one(result, "subnet").action == "replace" and one(result, "nat").action == "update"
    assert any("replaced delete-first while Cloud NAT n lists it" in refusal for refusal in result.refusals)
    grown = preview(old, changed(old, "subnet", "inputs.ipCidrRange", "10.0.0.0/19"))
    assert not any("Cloud NAT" in refusal for refusal in grown.refusals)


def test_a_new_gateway_class_breaks_clients() -> None:
    """gke-l7-rilb -> gke-l7-regional-external-managed is an update of the Gateway, and its address is
    another load balancer's: it was shown as a plain update."""
    gateway = record(
        "kubernetes:gateway.networking.k8s.io/v1:Gateway",
        "gateway",
        {"metadata": {"name": "g", "namespace": "ns"}, "spec": {"gatewayClassName": "gke-l7-rilb"}},
        parent="llm",
        provider="k8s",
    )
    old = [*base_state(), gateway]
    result = preview(old, changed(old, "gateway", "inputs.spec.gatewayClassName", "gke-l7-regional-external-managed"))
    (warning,) = [warning for warning in result.warnings if warning.startswith("clients break:")]
    assert "the Gateway's address changes: its class goes from 'gke-l7-rilb'" in warning


def test_https_or_a_reserved_address_on_the_gateway_breaks_clients() -> None:
    """routing.gateway.tls moves the one listener from http on 80 to https on 443 for a host name, an in-place update
    of the Gateway; routing.gateway.address moves it to the reserved address: clients of the old one break."""
    listener = {"name": "http", "protocol": "HTTP", "port": 80}
    spec = {"gatewayClassName": "gke-l7-rilb", "listeners": [listener]}
    gateway = record(
        "kubernetes:gateway.networking.k8s.io/v1:Gateway",
        "gateway",
        {"metadata": {"name": "g", "namespace": "ns"}, "spec": spec},
        parent="llm",
        provider="k8s",
    )
    old = [*base_state(), gateway]
    https = {"name": "https", "protocol": "HTTPS", "port": 443, "hostname": "llm.example.com", "tls": {}}
    result = preview(old, changed(old, "gateway", "inputs.spec.listeners", [https]))
    (warning,) = [warning for warning in result.warnings if warning.startswith("clients break:")]
    assert "what the Gateway listens on changes from http://*:80 to https://llm.example.com:443" in warning
    reserved = [{"type": "NamedAddress", "value": "llm-ip"}]
    result = preview(old, changed(old, "gateway", "inputs.spec.addresses", reserved))
    (warning,) = [warning for warning in result.warnings if warning.startswith("clients break:")]
    assert "spec.addresses goes from none (ephemeral) to [{'type': 'NamedAddress', 'value': 'llm-ip'}]" in warning
    assert not [warning for warning in preview(old, old).warnings if warning.startswith("clients break:")]


def test_a_cluster_no_longer_declared_says_it_goes_with_its_workloads_and_how_to_keep_it() -> None:
    """cluster.existing on a stack that made its cluster: the managed cluster is deleted (dev: with no word of it;
    prod: refused with "set deletionProtection false", which LLM-PROD-001 forbids there). A platform review."""
    without = [item for item in base_state() if item["name"] != "gke"]
    protected = preview(base_state(), without)
    assert any(
        refusal.startswith("unable to delete protected") and "pulumi state delete --force URN" in refusal
        for refusal in protected.refusals
    )
    unprotected = preview(changed(base_state(), "gke", "options.protect", False), without)
    (warning,) = [warning for warning in unprotected.warnings if "the GKE cluster 'c' is deleted" in warning]
    assert "every workload on it" in warning and "take it out of the state, not the cloud" in warning


def test_a_new_model_with_the_same_pinned_commit_says_the_download_fails() -> None:
    """A profile change kept the 27B's pinned commit: `git checkout` of it fails in the 35B's repository (a platform
    review: nothing said so). A branch is in every repository, and a new commit is the user's to check."""
    commit = "ab" * 20
    env = [{"name": "MODEL", "value": "Qwen/Qwen3.5-35B-A3B-FP8"}, {"name": "REVISION", "value": commit}]
    spec = {"template": {"spec": {"containers": [{"name": "download", "env": env}]}}}
    new = {"urn:job": record("kubernetes:batch/v1:Job", "llm-weights-1-download", {"spec": spec})}
    (warning,) = risks.revision_of_another_model(new, frozenset({"weights.model", "profile"}))
    assert f"weights.revision stays the commit {commit}" in warning and "git ls-remote" in warning
    assert risks.revision_of_another_model(new, frozenset({"weights.model", "weights.revision"})) == []
    assert risks.revision_of_another_model(new, None) == []
    env[1]["value"] = "main"
    assert risks.revision_of_another_model(new, frozenset({"weights.model"})) == []


def test_a_parent_chain_a_thousand_records_long_is_read() -> None:
    """An edited render whose records chain 1,500 parents deep was 'the input is nested too deeply', naming no file
    (an attacker): the URNs are built without recursion, and a cycle still stops."""
    chain = [
        record("llm-serving:x:Y", f"n{index}", {}, parent=f"n{index - 1}" if index else None) for index in range(1500)
    ]
    result = preview(base_state(), [*base_state(), *chain])
    assert len(result.of("create")) == 1500
    looped = [record("llm-serving:x:Y", "a", {}, parent="b"), record("llm-serving:x:Y", "b", {}, parent="a")]
    assert len(preview(base_state(), [*base_state(), *looped]).of("create")) == 2


def test_a_new_render_that_violates_a_mandatory_policy_says_the_update_stops_there(
    prod: RenderedStack, tmp_path: Path
) -> None:
    """A day-2 tester: `render --against` exited 1 on a mandatory violation (LLM-PROD-001), while changes.md and
    `preview OLD NEW` on the same folders said nothing of it (exit 0)."""
    new = tmp_path / "new"
    shutil.copytree(prod.directory, new)
    violation = {"level": "mandatory", "policy": "LLM-PROD-001", "resource": "llm-weights-disk", "type": "t"}
    policy = json.loads((new / "policy.json").read_text())
    (new / "policy.json").write_text(json.dumps({**policy, "violations": [{**violation, "message": "unprotected"}]}))
    run = run_main(preview_main, str(prod.directory), str(new), "--out", str(tmp_path / "preview"))
    assert run.returncode == 0, run.stderr
    warning = "the new render violates 1 mandatory policy of this stack's pack (its policy.json): LLM-PROD-001 on "
    assert warning + "llm-weights-disk: unprotected" in run.stderr
    assert warning in (tmp_path / "preview" / "changes.md").read_text()
    assert "violates" not in "".join(preview_states(prod.states, prod.states).warnings)
    # a policy.json not shaped as a render writes it is bad input, one line
    (new / "policy.json").write_text(json.dumps({"violations": [{"level": "mandatory"}]}))
    refused = run_main(preview_main, str(prod.directory), str(new), "--out", str(tmp_path / "again"))
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "policy.json" in refused.stderr


def test_an_abandoned_object_says_its_name_stays_taken() -> None:
    """A day-2 review: prod's weights disk left in a zone (ABANDON) keeps its name there; moving back to that zone
    later fails with 'already exists', and that preview cannot know the disk is there."""
    disk = {"name": "weights-1", "zone": "us-central1-b", "size": 100, "project": "p", "deletionPolicy": "ABANDON"}
    state = changed(base_state(), "disk", "inputs", disk)
    moved = changed(state, "disk", "inputs.zone", "us-central1-c")
    (warning,) = [warning for warning in preview(state, moved).warnings if "deletionPolicy ABANDON" in warning]
    assert "keeps the name weights-1 in us-central1-b" in warning and "'already exists'" in warning
    left = [item for item in base_state() if item["name"] != "disk"]
    (gone,) = [warning for warning in preview(state, left).warnings if "deletionPolicy ABANDON" in warning]
    assert "keeps the name weights-1 in us-central1-b" in gone
    renamed = changed(state, "disk", "inputs.name", "weights-2")
    (warning,) = [warning for warning in preview(state, renamed).warnings if "deletionPolicy ABANDON" in warning]
    assert "keeps the name weights-1" in warning


def test_a_replaced_subnet_is_no_range_changed_under_the_cluster() -> None:
    """A day-2 review: a new cluster name with a new pods range replaces the subnet (a new name) and the cluster; the
    range GCP refuses to change under a cluster is only ever changed by an update."""
    subnet = {
        "name": "s1",
        "region": "us-central1",
        "project": "p",
        "secondaryIpRanges": [{"rangeName": "pods", "ipCidrRange": "10.4.0.0/14"}],
    }
    old = changed(
        [*base_state(), record("gcp:compute/subnetwork:Subnetwork", "subnet", subnet, provider="gcp")],
        "gke",
        "inputs.ipAllocationPolicy",
        {"clusterSecondaryRangeName": "pods"},
    )
    new_range = changed(
        old, "subnet", "inputs.secondaryIpRanges", [{"rangeName": "pods", "ipCidrRange": "10.16.0.0/14"}]
    )
    updated = preview(old, new_range)
    assert one(updated, "subnet").action == "update"
    assert [refusal for refusal in updated.refusals if "secondary range 'pods'" in refusal]
    replaced = preview(old, changed(new_range, "subnet", "inputs.name", "s2"))
    assert one(replaced, "subnet").action == "replace"
    assert not [refusal for refusal in replaced.refusals if "secondary range" in refusal]


def test_a_network_replaced_delete_first_under_its_firewall_rules_is_refused() -> None:
    """A day-2 review: a new cluster name in gateway mode replaces the network delete-first, but the Gateway's firewall
    rules (whose network is not ForceNew) are replaced only when they register, after the old network's delete,
    which GCP refuses while they use it: `pulumi up` stopped with the cluster already gone."""
    firewall = {"name": "to-epp", "network": "vpc-id", "project": "p", "direction": "INGRESS"}
    old = changed(
        [*base_state(), record("gcp:compute/firewall:Firewall", "fw", firewall, provider="gcp", dependsOn=["vpc"])],
        "vpc",
        "options.deleteBeforeReplace",
        True,
    )
    renamed = changed(changed(old, "vpc", "inputs.name", "vpc2"), "fw", "inputs.name", "to-epp-2")
    (refusal,) = [refusal for refusal in preview(old, renamed).refusals if "firewall rule(s)" in refusal]
    assert "to-epp still use it" in refusal and "'is already being used by'" in refusal
    assert "pulumi destroy --target" in refusal and "fw" in refusal
    # a rule the update deletes goes at its end, after the network: refused too; no rule on the network, no refusal
    dropped = [item for item in renamed if item["name"] != "fw"]
    assert [refusal for refusal in preview(old, dropped).refusals if "firewall rule(s)" in refusal]
    bare = [item for item in old if item["name"] != "fw"]
    assert not [refusal for refusal in preview(bare, dropped).refusals if "firewall rule(s)" in refusal]


@pytest.mark.parametrize(
    ("path", "value", "said"),
    [
        ("inputs.autoCreateSubnetworks", True, "'vpc' is a global name, so the new one is created only once"),
        ("inputs.name", "vpc-2", "the new one ('vpc-2') is created only once"),
    ],
    ids=["same-name", "renamed"],
)
def test_a_global_object_replaced_delete_first_says_why_only_where_the_name_is_the_same(
    path: str, value: Any, said: str
) -> None:
    """A day-2 review: a renamed network was said to wait for its old "global name", which it does not share."""
    old = changed(changed(base_state(), "gke", "options.protect", False), "vpc", "inputs.autoCreateSubnetworks", False)
    result = preview(old, changed(old, "vpc", path, value))
    (warning,) = [
        warning for warning in result.warnings if "::vpc: replaced delete-first" in warning and "only once" in warning
    ]
    assert said in warning and "the delete fails while anything still uses it" in warning
