"""`cluster.existing`: the serving layer in an Autopilot cluster the stack does not manage."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from commands.engine import mocks
from commands.stackfile import stack_settings
from components.existing_cluster import ExistingClusterError
from stacks.load.loader import InvalidConfig, validate
from tests.conftest import RenderStack
from tests.rendered import ROOT, RenderedStack
from tests.variants import render_variant, variant_config

NOT_DECLARED = (
    "gcp:container/cluster:Cluster",
    "gcp:compute/network:Network",
    "gcp:compute/router:Router",
    "gcp:compute/routerNat:RouterNat",
    "gcp:serviceaccount/account:Account",
)


@pytest.fixture(scope="module")
def existing(render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory) -> RenderedStack:
    return render_variant("staging-existing", render_stack, tmp_path_factory)


@pytest.fixture(scope="module")
def existing_prod(render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory) -> RenderedStack:
    return render_variant("prod-existing", render_stack, tmp_path_factory)


def test_nothing_of_the_cluster_is_declared(existing: RenderedStack, existing_prod: RenderedStack) -> None:
    for rendered in (existing, existing_prod):
        types = {record["type"] for record in rendered.resources}
        assert not types & set(NOT_DECLARED)
        subnets = rendered.of_type("gcp:compute/subnetwork:Subnetwork")
        assert all(subnet["inputs"]["purpose"] == "REGIONAL_MANAGED_PROXY" for subnet in subnets)


def test_the_serving_layer_goes_into_the_looked_up_cluster(existing: RenderedStack) -> None:
    component = existing.named("llm")
    assert component["type"] == "llm-serving:gke:ExistingCluster"
    provider = existing.one("pulumi:providers:kubernetes")
    assert provider["parent"] == "llm"
    assert provider["inputs"]["kubeconfig"] == "[secret]"
    namespace = existing.named("llm-namespace")
    assert (namespace["parent"], namespace["provider"]) == ("llm", provider["name"])
    for record in existing.resources:
        if record["type"].startswith("kubernetes:") and record["custom"]:
            assert record["provider"] == provider["name"]
    assert existing.outputs["clusterName"] == "platform-autopilot"
    assert existing.outputs["getCredentials"].startswith(
        "gcloud container clusters get-credentials platform-autopilot "
    )


def test_every_resource_names_its_provider(existing: RenderedStack, existing_prod: RenderedStack) -> None:
    for rendered in (existing, existing_prod):
        for record in rendered.resources:
            if record["custom"] and not record["type"].startswith("pulumi:providers:"):
                assert record["provider"], f"{record['type']} {record['name']} uses a default provider"


def test_the_gateway_uses_the_clusters_network_and_pod_range(existing: RenderedStack) -> None:
    """Offline, the look-up's network and pod range are the stand-in's (mocks.stand_in_cluster)."""
    network = "projects/my-llm-staging/global/networks/default"
    for firewall in existing.of_type("gcp:compute/firewall:Firewall"):
        assert firewall["inputs"]["network"] == network
        assert firewall["inputs"]["destinationRanges"] == [mocks.STAND_IN_PODS_CIDR]
    # The stand-in VPC has its proxy-only subnet already: reused, none declared
    # (tests/stacks/program/test_existing_cluster_shared.py).
    assert existing.of_type("gcp:compute/subnetwork:Subnetwork") == []


def test_policies_hold_without_a_cluster_resource(existing: RenderedStack, existing_prod: RenderedStack) -> None:
    for rendered in (existing, existing_prod):
        policy = yaml.safe_load((rendered.directory / "policy.json").read_text())
        assert policy["mandatory"] == 0, policy["violations"]


def test_plan_says_the_cluster_is_looked_up(existing_prod: RenderedStack) -> None:
    assert "existing Autopilot cluster platform-autopilot in us-central1, not managed by this stack" in (
        existing_prod.plan
    )
    assert "stand-in" in existing_prod.plan
    assert existing_prod.outputs["namespace"] == "llm-prod"


def test_an_unfit_cluster_stops_the_program(tmp_path: Path) -> None:
    def standard_cluster(name: str, location: str, project: str) -> dict[str, Any]:
        return {**mocks.stand_in_cluster(name, location, project), "enableAutopilot": False}

    document = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    document["config"]["gke-b200-serving:cluster"] = {"existing": True, "name": "standard"}
    path = tmp_path / "Pulumi.standard.yaml"
    path.write_text(yaml.safe_dump(document))
    monitor = mocks.RecordingMonitor(mocks.OfflineMocks(existing_cluster=standard_cluster))
    with pytest.raises(ExistingClusterError, match="cluster standard in us-central1 is not an Autopilot cluster"):
        mocks.run_program(stack_settings.load_stack_settings("standard", path), monitor=monitor)


def test_the_offline_stand_in_meets_every_feature_the_stack_turns_on(tmp_path: Path) -> None:
    """Held nodes need a CapacityBuffer (GKE 1.35.2-gke.1842000), newer than InferencePool's minimum: an
    existing cluster with warmCapacity renders offline, where the stand-in once failed the version check."""
    document = yaml.safe_load((ROOT / "Pulumi.staging.yaml").read_text())
    document["config"]["gke-b200-serving:cluster"] = {"existing": True, "name": "platform"}
    document["config"]["gke-b200-serving:warmCapacity"] = {"nodes": 1}
    document["config"]["gke-b200-serving:autoscaling"] = {"metricsAdapter": "existing"}
    path = tmp_path / "Pulumi.held.yaml"
    path.write_text(yaml.safe_dump(document))
    run = mocks.run_program(stack_settings.load_stack_settings("held", path))
    assert any(entry.type.endswith("CapacityBuffer") for entry in run.registrations)


@pytest.mark.parametrize(
    ("cluster_settings", "key"),
    [
        ({"privateNodes": False}, "cluster.privateNodes"),
        ({"network": {"podsCidr": "10.8.0.0/14"}}, "cluster.network"),
        ({"releaseChannel": "RAPID"}, "cluster.releaseChannel"),
    ],
)
def test_settings_of_a_managed_cluster_are_refused(cluster_settings: dict[str, Any], key: str) -> None:
    raw = {"environment": "dev", "project": "my-llm-dev", "cluster": {"existing": True, **cluster_settings}}
    with pytest.raises(InvalidConfig, match=f"{key}: has no effect with cluster.existing"):
        validate(raw)


def test_presets_of_a_managed_cluster_do_not_count() -> None:
    """prod's preset sets deletion protection and authorized networks: with existing they are unused,
    and the version the look-up must show is the newest minimum of the features in use."""
    config = variant_config("prod-existing")
    assert config.cluster.existing and config.cluster.authorized_networks == []
    assert config.minimum_gke_version == "1.32.2-gke.1422000"
    assert variant_config("staging-existing").minimum_gke_version == "1.34.0-gke.1626000"
