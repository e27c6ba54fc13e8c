"""The Autopilot cluster, its network, APIs, Kubernetes provider and namespace."""

from __future__ import annotations

from tests.rendered import RenderedStack


def test_apis_enabled_before_the_cluster(stack: RenderedStack) -> None:
    services = {record["inputs"]["service"]: record for record in stack.of_type("gcp:projects/service:Service")}
    assert {"compute.googleapis.com", "container.googleapis.com", "monitoring.googleapis.com"} <= set(services)
    cluster = stack.one("gcp:container/cluster:Cluster")
    for service in services.values():
        assert service["inputs"]["disableOnDestroy"] is False
    assert {services[api]["name"] for api in ("compute.googleapis.com", "container.googleapis.com")} <= set(
        cluster["options"]["dependsOn"]
    )


def test_vpc_native_network(stack: RenderedStack) -> None:
    network = stack.one("gcp:compute/network:Network")
    assert network["inputs"]["autoCreateSubnetworks"] is False
    subnet = stack.named("llm-subnet")
    ranges = {item["rangeName"]: item["ipCidrRange"] for item in subnet["inputs"]["secondaryIpRanges"]}
    cluster = stack.one("gcp:container/cluster:Cluster")["inputs"]
    assert cluster["networkingMode"] == "VPC_NATIVE"
    policy = cluster["ipAllocationPolicy"]
    assert set(ranges) == {policy["clusterSecondaryRangeName"], policy["servicesSecondaryRangeName"]}
    assert cluster["subnetwork"] == f"{subnet['name']}-id"


def test_autopilot_cluster_settings(stack: RenderedStack) -> None:
    cluster = stack.one("gcp:container/cluster:Cluster")["inputs"]
    assert cluster["enableAutopilot"] is True
    assert cluster["location"] == "us-central1", "regional cluster"
    assert cluster["releaseChannel"] == {"channel": "RAPID"}
    assert cluster["minMasterVersion"] >= "1.32.2-gke.1422000"
    assert cluster["workloadIdentityConfig"]["workloadPool"].endswith(".svc.id.goog")
    assert cluster["monitoringConfig"]["managedPrometheus"] == {"enabled": True}


def test_deletion_protection_by_environment(dev: RenderedStack, prod: RenderedStack) -> None:
    dev_cluster = dev.one("gcp:container/cluster:Cluster")
    prod_cluster = prod.one("gcp:container/cluster:Cluster")
    assert dev_cluster["inputs"]["deletionProtection"] is False and dev_cluster["options"]["protect"] is False
    assert prod_cluster["inputs"]["deletionProtection"] is True and prod_cluster["options"]["protect"] is True


def test_kubernetes_provider_from_cluster_outputs(stack: RenderedStack) -> None:
    provider = stack.one("pulumi:providers:kubernetes")
    assert provider["inputs"]["kubeconfig"] == "[secret]"
    assert "llm-gke" in provider["options"]["dependsOn"]


def test_serving_namespace(stack: RenderedStack) -> None:
    # With autoscaling on, the metrics adapter brings its own namespace (custom-metrics).
    names = sorted(namespace["metadata"]["name"] for namespace in stack.kind("Namespace"))
    assert names in (["llm-serving"], ["custom-metrics", "llm-serving"])


def test_gcp_provider_carries_project_and_region(stack: RenderedStack) -> None:
    provider = stack.one("pulumi:providers:gcp")["inputs"]
    assert provider["project"].startswith("my-llm-")
    assert provider["region"] == "us-central1"
