"""ExistingCluster on its own: what the look-up of the platform's cluster must show, and what the
component declares (APIs, namespace, provider; no cluster) or why it stops."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pulumi
import pytest

from components.cluster import BASE_APIS
from components.existing_cluster import (
    ExistingCluster,
    ExistingClusterArgs,
    ExistingClusterError,
    cluster_problems,
    kubeconfig_of,
    node_service_account_of,
)
from tests.construct import (
    STAND_IN_PODS_CIDR,
    Built,
    build,
    children_are_parented,
    has_resource,
    is_secret,
    offline_project_number,
    stand_in_cluster,
)

ARGS = ExistingClusterArgs(
    project="my-llm-staging",
    region="us-central1",
    cluster_name="platform-autopilot",
    namespace="llm-serving",
    minimum_version="1.34.0-gke.1626000",
    gateway_api=True,
)


def build_existing(
    args: ExistingClusterArgs = ARGS,
    found: Callable[[str, str, str], dict[str, Any]] = stand_in_cluster,
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
    assert is_secret(kubeconfig)
    assert "server: https://gke-" in kubeconfig["value"] and "certificate-authority" not in kubeconfig["value"]
    children_are_parented(built, "llm-serving:gke:ExistingCluster", "shared")
    assert built.outputs == {
        "network": "projects/my-llm-staging/global/networks/default",
        "podsCidr": STAND_IN_PODS_CIDR,
        "workloadPool": "my-llm-staging.svc.id.goog",
        # The stand-in names no node account: the Compute Engine default account of the project.
        "nodeServiceAccount": f"{offline_project_number('my-llm-staging')}-compute@developer.gserviceaccount.com",
    }


def test_the_nodes_account_is_the_one_autopilot_provisions_with() -> None:
    def with_custom_account(name: str, location: str, project: str) -> dict[str, Any]:
        found = stand_in_cluster(name, location, project)
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
        found = stand_in_cluster(name, location, project)
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


def test_the_ip_endpoint_carries_the_cluster_ca() -> None:
    assert "certificate-authority-data: Q0E=" in kubeconfig_of(cluster(), "c")
    dns = [SimpleNamespace(endpoint="gke-x.us-central1.gke.goog", allow_external_traffic=True)]
    config = kubeconfig_of(cluster(control_plane_endpoints_configs=[SimpleNamespace(dns_endpoint_configs=dns)]), "c")
    assert "server: https://gke-x.us-central1.gke.goog" in config and "certificate-authority" not in config
