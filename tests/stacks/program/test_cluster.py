"""The Autopilot cluster, its network, APIs, Kubernetes provider and namespace."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from components.cluster import NODE_SERVICE_ACCOUNT_ROLE
from stacks.load.loader import InvalidConfig, validate
from tests.conftest import RenderStack
from tests.rendered import ROOT, RenderedStack

CLUSTER = "gcp:container/cluster:Cluster"
PROJECT = "gke-b200-serving"
STACK = {"environment": "dev", "project": "my-llm-dev"}


def test_apis_enabled_before_the_cluster(stack: RenderedStack) -> None:
    services = {record["inputs"]["service"]: record for record in stack.of_type("gcp:projects/service:Service")}
    assert {
        "compute.googleapis.com",
        "container.googleapis.com",
        "monitoring.googleapis.com",
        "iam.googleapis.com",
    } <= set(services)
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
    assert cluster["location"] == stack.outputs["region"], "regional cluster"
    # The channel's default version: a floor the channel no longer offers would fail the creation.
    assert "minMasterVersion" not in cluster
    assert "created at the channel's default version" in stack.plan
    assert cluster["workloadIdentityConfig"]["workloadPool"].endswith(".svc.id.goog")
    assert cluster["monitoringConfig"]["managedPrometheus"] == {"enabled": True}


def test_release_channel_by_environment(dev: RenderedStack, staging: RenderedStack, prod: RenderedStack) -> None:
    channels = {
        name: stack.one(CLUSTER)["inputs"]["releaseChannel"]["channel"]
        for name, stack in (("dev", dev), ("staging", staging), ("prod", prod))
    }
    assert channels == {"dev": "RAPID", "staging": "REGULAR", "prod": "REGULAR"}


@pytest.mark.parametrize("version", ["1.34", "1.35", "1.34.1-gke.1829001", "1.35.0-gke.3047001"])
def test_version_floor_accepts_minors_and_full_versions(version: str) -> None:
    config = validate({**STACK, "cluster": {"minMasterVersion": version}, "routing": {"mode": "gateway"}})
    assert config.cluster.min_master_version == version


@pytest.mark.parametrize(
    ("version", "routing", "reason"),
    [
        ("1.31", "clusterip", "B200"),
        ("1.32", "clusterip", "B200"),
        ("1.32.1-gke.1729000", "clusterip", "B200"),
        ("1.33", "gateway", "InferencePool"),
        ("1.34.0-gke.1000000", "gateway", "InferencePool"),
        ("latest", "clusterip", "not a GKE version"),
        ("1.34.x", "clusterip", "not a GKE version"),
    ],
)
def test_version_floor_refuses_what_a_feature_lacks(version: str, routing: str, reason: str) -> None:
    with pytest.raises(InvalidConfig, match=reason):
        validate({**STACK, "cluster": {"minMasterVersion": version}, "routing": {"mode": routing}})


def test_dedicated_node_service_account(stack: RenderedStack) -> None:
    account = stack.one("gcp:serviceaccount/account:Account")["inputs"]
    binding = stack.named("llm-node-sa-role")["inputs"]  # the metrics adapter has its own IAM member
    email = f"{account['accountId']}@{account['project']}.iam.gserviceaccount.com"
    assert binding == {
        "project": account["project"],
        "role": NODE_SERVICE_ACCOUNT_ROLE,
        "member": f"serviceAccount:{email}",
    }
    cluster = stack.one(CLUSTER)
    assert cluster["inputs"]["clusterAutoscaling"]["autoProvisioningDefaults"]["serviceAccount"] == email
    assert "llm-node-sa-role" in cluster["options"]["dependsOn"], "nodes never start without their role"


def test_private_nodes_egress_through_cloud_nat(stack: RenderedStack) -> None:
    cluster = stack.one(CLUSTER)
    assert cluster["inputs"]["privateClusterConfig"] == {"enablePrivateNodes": True}
    router = stack.one("gcp:compute/router:Router")["inputs"]
    nat = stack.one("gcp:compute/routerNat:RouterNat")["inputs"]
    assert router["network"] == cluster["inputs"]["network"] and router["region"] == stack.outputs["region"]
    assert nat["router"] == router["name"]
    assert nat["subnetworks"] == [{"name": cluster["inputs"]["subnetwork"], "sourceIpRangesToNats": ["ALL_IP_RANGES"]}]
    assert "llm-nat" in cluster["options"]["dependsOn"], "the first pods need egress"


def test_control_plane_access(dev: RenderedStack, staging: RenderedStack, prod: RenderedStack) -> None:
    """Every preset closes the IP endpoint to outside ranges; kubectl and the provider use the DNS endpoint."""
    for stack in (dev, staging, prod):
        cluster = stack.one(CLUSTER)["inputs"]
        assert cluster["controlPlaneEndpointsConfig"] == {"dnsEndpointConfig": {"allowExternalTraffic": True}}
        assert cluster["masterAuthorizedNetworksConfig"] == {"cidrBlocks": [], "gcpPublicCidrsAccessEnabled": False}
        assert stack.outputs["getCredentials"].endswith(" --dns-endpoint")


def test_private_nodes_off_is_stated_to_the_provider(tmp_path: Path, render_stack: RenderStack) -> None:
    """privateClusterConfig is Optional+Computed: left out, the cluster would keep private nodes."""
    document = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    document["config"][f"{PROJECT}:cluster"] = {"privateNodes": False, "authorizedNetworks": None}
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(yaml.safe_dump(document))
    cluster = render_stack("dev", path).one(CLUSTER)["inputs"]
    assert cluster["privateClusterConfig"] == {"enablePrivateNodes": False}
    assert "masterAuthorizedNetworksConfig" not in cluster


def test_authorized_networks_from_config(tmp_path: Path, render_stack: RenderStack) -> None:
    networks = [{"cidrBlock": "203.0.113.0/24", "displayName": "ci runners"}]
    document = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    document["config"][f"{PROJECT}:cluster"] = {"authorizedNetworks": networks}
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(yaml.safe_dump(document))
    cluster = render_stack("dev", path).one(CLUSTER)["inputs"]
    assert cluster["masterAuthorizedNetworksConfig"]["cidrBlocks"] == networks


@pytest.mark.parametrize(
    "networks", [[{"cidrBlock": "203.0.113.0/33", "displayName": "x"}], [{"cidrBlock": "10.0.0.0/8"}]]
)
def test_authorized_networks_are_validated(networks: list[dict[str, str]]) -> None:
    with pytest.raises(InvalidConfig, match="authorizedNetworks"):
        validate({**STACK, "cluster": {"authorizedNetworks": networks}})


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
    assert provider["project"] == stack.outputs["project"]
    assert provider["region"] == stack.outputs["region"]


FIXED_NAME_TYPES = {
    "gcp:compute/network:Network",
    "gcp:compute/subnetwork:Subnetwork",
    "gcp:compute/router:Router",
    "gcp:compute/routerNat:RouterNat",
    "gcp:compute/firewall:Firewall",
    "gcp:serviceaccount/account:Account",
    "gcp:container/cluster:Cluster",
}


def test_fixed_name_gcp_objects_are_replaced_by_deleting_first(stack: RenderedStack) -> None:
    """Their names are unique in the project, region or location: a replacement created before the
    old object is deleted would be refused by GCP (409 alreadyExists)."""
    named = [record for record in stack.resources if record["type"] in FIXED_NAME_TYPES]
    assert {record["type"] for record in named} >= FIXED_NAME_TYPES - {"gcp:compute/firewall:Firewall"}
    for record in named:
        assert record["options"]["deleteBeforeReplace"], record["name"]
