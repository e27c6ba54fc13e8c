"""`cluster.existing`: the serving layer in an Autopilot cluster the stack does not manage."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pulumi
import pytest
import yaml

from commands.engine import mocks
from commands.engine.mocks import SECRET_MARK, SECRET_SIG
from commands.stackfile import stack_settings
from components.cluster import BASE_APIS
from components.existing_cluster import (
    ExistingCluster,
    ExistingClusterArgs,
    ExistingClusterError,
    cluster_problems,
    kubeconfig_of,
    node_service_account_of,
    version_at_least,
)
from stacks.load.loader import InvalidConfig, validate
from tests.conftest import RenderStack
from tests.construct import Built, build, children_are_parented, has_resource
from tests.rendered import ROOT, RenderedStack
from tests.variants import render_variant, variant_config

NOT_DECLARED = (
    "gcp:container/cluster:Cluster",
    "gcp:compute/network:Network",
    "gcp:compute/router:Router",
    "gcp:compute/routerNat:RouterNat",
    "gcp:serviceaccount/account:Account",
)
ARGS = ExistingClusterArgs(
    project="my-llm-staging",
    region="us-central1",
    cluster_name="platform-autopilot",
    namespace="llm-serving",
    minimum_version="1.34.0-gke.1626000",
    gateway_api=True,
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
    # (tests/components/test_existing_cluster_shared.py).
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


def build_existing(
    args: ExistingClusterArgs = ARGS,
    found: Callable[[str, str, str], dict[str, Any]] = mocks.stand_in_cluster,
) -> Built:
    """The component on its own, the look-up answered by `found`; exports what it hands the serving layer."""

    def declare() -> None:
        target = ExistingCluster("shared", args).target
        pulumi.export("network", target.network)
        pulumi.export("podsCidr", target.pods_cidr)
        pulumi.export("workloadPool", target.workload_pool)
        pulumi.export("nodeServiceAccount", target.node_service_account)

    return build(declare, existing_cluster=found)


def test_the_component_declares_apis_namespace_and_provider_and_no_cluster() -> None:
    built = build_existing(replace(ARGS, extra_apis=("networkservices.googleapis.com",), kubernetes_labels={"a": "b"}))
    assert {record.type for record in built if record.custom} == {
        "gcp:projects/service:Service",
        "pulumi:providers:kubernetes",
        "kubernetes:core/v1:Namespace",
    }
    for api in (*BASE_APIS, "networkservices.googleapis.com"):
        has_resource(
            built,
            "gcp:projects/service:Service",
            {"service": api, "project": "my-llm-staging", "disableOnDestroy": False},
        )
    has_resource(built, "kubernetes:core/v1:Namespace", {"metadata": {"name": "llm-serving", "labels": {"a": "b"}}})
    kubeconfig = has_resource(built, "pulumi:providers:kubernetes").inputs["kubeconfig"]
    assert kubeconfig[SECRET_SIG] == SECRET_MARK
    assert "server: https://gke-" in kubeconfig["value"] and "certificate-authority" not in kubeconfig["value"]
    children_are_parented(built, "llm-serving:gke:ExistingCluster", "shared")
    assert built.outputs == {
        "network": "projects/my-llm-staging/global/networks/default",
        "podsCidr": mocks.STAND_IN_PODS_CIDR,
        "workloadPool": "my-llm-staging.svc.id.goog",
        # The stand-in names no node account: the Compute Engine default account of the project.
        "nodeServiceAccount": f"{mocks.offline_project_number('my-llm-staging')}-compute@developer.gserviceaccount.com",
    }


def test_the_nodes_account_is_the_one_autopilot_provisions_with() -> None:
    def with_custom_account(name: str, location: str, project: str) -> dict[str, Any]:
        found = mocks.stand_in_cluster(name, location, project)
        defaults = {"autoProvisioningDefaults": [{"serviceAccount": f"nodes@{project}.iam.gserviceaccount.com"}]}
        return {**found, "clusterAutoscalings": [defaults]}

    built = build_existing(found=with_custom_account)
    assert built.outputs["nodeServiceAccount"] == "nodes@my-llm-staging.iam.gserviceaccount.com"
    defaults = SimpleNamespace(auto_provisioning_defaults=[SimpleNamespace(service_account="default")])
    assert node_service_account_of(cluster(cluster_autoscalings=[defaults]), "123") == (
        "123-compute@developer.gserviceaccount.com"
    )


def test_the_component_stops_on_a_cluster_that_cannot_take_the_layer() -> None:
    def old_standard_cluster(name: str, location: str, project: str) -> dict[str, Any]:
        found = mocks.stand_in_cluster(name, location, project)
        return {**found, "enableAutopilot": False, "masterVersion": "1.33.5-gke.1000"}

    with pytest.raises(ExistingClusterError) as stopped:
        build_existing(found=old_standard_cluster)
    message = str(stopped.value)
    assert message.startswith("cluster.existing: cluster platform-autopilot in us-central1 is not an Autopilot cluster")
    assert "runs GKE 1.33.5-gke.1000; the serving layer needs 1.34.0-gke.1626000" in message


def cluster(**overrides: Any) -> SimpleNamespace:
    fields: dict[str, Any] = {
        "enable_autopilot": True,
        "master_version": "1.34.1-gke.1829001",
        "workload_identity_configs": [SimpleNamespace(workload_pool="my-llm-staging.svc.id.goog")],
        "monitoring_configs": [
            SimpleNamespace(managed_prometheuses=[SimpleNamespace(enabled=True)], enable_components=["DCGM"])
        ],
        "gateway_api_configs": [SimpleNamespace(channel="CHANNEL_STANDARD")],
        "control_plane_endpoints_configs": [],
        "endpoint": "203.0.113.10",
        "master_auths": [SimpleNamespace(cluster_ca_certificate="Q0E=")],
        "network": "projects/my-llm-staging/global/networks/default",
    }
    return SimpleNamespace(**{**fields, **overrides})


def test_a_fitting_cluster_has_no_problem() -> None:
    assert cluster_problems(cluster(), ARGS) == []


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"enable_autopilot": False}, "is not an Autopilot cluster"),
        ({"master_version": "1.33.5-gke.1000"}, "runs GKE 1.33.5-gke.1000; the serving layer needs 1.34.0-gke.1626000"),
        ({"workload_identity_configs": []}, "has no Workload Identity pool"),
        (
            {"monitoring_configs": [SimpleNamespace(managed_prometheuses=[SimpleNamespace(enabled=False)])]},
            "Prometheus",
        ),
        ({"gateway_api_configs": [SimpleNamespace(channel="CHANNEL_DISABLED")]}, "has the Gateway API off"),
    ],
)
def test_what_the_look_up_tells_is_checked(overrides: dict[str, Any], expected: str) -> None:
    problems = cluster_problems(cluster(**overrides), ARGS)
    assert len(problems) == 1 and expected in problems[0]


def test_versions_compare_number_by_number() -> None:
    assert version_at_least("1.34.10-gke.100", "1.34.2-gke.1000")
    assert not version_at_least("1.34.0-gke.1625999", "1.34.0-gke.1626000")


def test_the_ip_endpoint_carries_the_cluster_ca() -> None:
    assert "certificate-authority-data: Q0E=" in kubeconfig_of(cluster(), "c")
    dns = [SimpleNamespace(endpoint="gke-x.us-central1.gke.goog", allow_external_traffic=True)]
    config = kubeconfig_of(cluster(control_plane_endpoints_configs=[SimpleNamespace(dns_endpoint_configs=dns)]), "c")
    assert "server: https://gke-x.us-central1.gke.goog" in config and "certificate-authority" not in config


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
