"""Cluster on its own: APIs, the VPC-native network, the node account, the Autopilot cluster and
the Kubernetes provider and namespace it hands to the rest of the stack."""

from __future__ import annotations

from components.cluster import AuthorizedNetwork, Cluster, ClusterArgs
from tests.construct import (
    ABSENT,
    Built,
    build,
    children_are_parented,
    has_resource,
    is_secret,
    match,
    of_type,
)

GKE = "gcp:container/cluster:Cluster"


def build_cluster(**changes: object) -> Built:
    args = {
        "project": "my-proj",
        "region": "us-central1",
        "cluster_name": "c1",
        "release_channel": "REGULAR",
        "min_master_version": "1.34",
        "maintenance_window": ("2026-01-03T00:00:00Z", "2026-01-03T06:00:00Z", "FREQ=WEEKLY;BYDAY=SA,SU"),
        "deletion_protection": True,
        "namespace": "serving",
        "subnet_cidr": "10.0.0.0/20",
        "pods_cidr": "10.4.0.0/14",
        "services_cidr": "10.8.0.0/20",
        "kubernetes_labels": {"app": "test"},
        **changes,
    }
    return build(lambda: Cluster("llm", ClusterArgs(**args)))  # type: ignore[arg-type]


def test_autopilot_cluster_on_its_own_vpc() -> None:
    records = build_cluster(authorized_networks=(AuthorizedNetwork("203.0.113.0/24", "office"),))
    has_resource(records, "gcp:compute/network:Network", {"name": "c1-vpc", "autoCreateSubnetworks": False})
    has_resource(
        records,
        "gcp:compute/subnetwork:Subnetwork",
        {
            "name": "c1-subnet",
            "ipCidrRange": "10.0.0.0/20",
            "privateIpGoogleAccess": True,
            "secondaryIpRanges": [
                {"rangeName": "pods", "ipCidrRange": "10.4.0.0/14"},
                {"rangeName": "services", "ipCidrRange": "10.8.0.0/20"},
            ],
        },
    )
    has_resource(records, "gcp:compute/routerNat:RouterNat", {"name": "c1-nat", "natIpAllocateOption": "AUTO_ONLY"})
    has_resource(records, "gcp:serviceaccount/account:Account", {"accountId": "c1-nodes"})
    has_resource(
        records,
        "gcp:projects/iAMMember:IAMMember",
        {
            "role": "roles/container.defaultNodeServiceAccount",
            "member": "serviceAccount:c1-nodes@my-proj.iam.gserviceaccount.com",
        },
    )
    # Image streaming: a custom node account needs Service Usage Consumer; the API is on.
    has_resource(
        records,
        "gcp:projects/iAMMember:IAMMember",
        {
            "role": "roles/serviceusage.serviceUsageConsumer",
            "member": "serviceAccount:c1-nodes@my-proj.iam.gserviceaccount.com",
        },
    )
    has_resource(records, "gcp:projects/service:Service", {"service": "containerfilesystem.googleapis.com"})
    cluster = has_resource(
        records,
        GKE,
        {
            "name": "c1",
            "location": "us-central1",
            "enableAutopilot": True,
            "networkingMode": "VPC_NATIVE",
            "releaseChannel": {"channel": "REGULAR"},
            "minMasterVersion": "1.34",
            "workloadIdentityConfig": {"workloadPool": "my-proj.svc.id.goog"},
            "monitoringConfig": {
                "enableComponents": ["SYSTEM_COMPONENTS", "DCGM"],
                "managedPrometheus": {"enabled": True},
            },
            "gatewayApiConfig": {"channel": "CHANNEL_DISABLED"},
            "privateClusterConfig": {"enablePrivateNodes": True},
            "masterAuthorizedNetworksConfig": {
                "cidrBlocks": [{"cidrBlock": "203.0.113.0/24", "displayName": "office"}],
                "gcpPublicCidrsAccessEnabled": False,
            },
            "clusterAutoscaling": {
                "autoProvisioningDefaults": {"serviceAccount": "c1-nodes@my-proj.iam.gserviceaccount.com"}
            },
            "deletionProtection": True,
        },
    )
    assert match(cluster.options, {"protect": True, "deleteBeforeReplace": True})
    has_resource(records, "kubernetes:core/v1:Namespace", {"metadata": {"name": "serving", "labels": {"app": "test"}}})
    children_are_parented(records, "llm-serving:gke:Cluster", "llm")


def test_kubeconfig_is_a_secret_for_the_dns_endpoint() -> None:
    (provider,) = of_type(build_cluster(), "pulumi:providers:kubernetes")
    kubeconfig = provider.inputs["kubeconfig"]
    assert is_secret(kubeconfig)
    assert "server: https://gke-" in kubeconfig["value"] and "gke-gcloud-auth-plugin" in kubeconfig["value"]
    assert "certificate-authority-data" not in kubeconfig["value"]


def test_switches_off_and_on() -> None:
    records = build_cluster(
        private_nodes=False,
        authorized_networks=None,
        gateway_api=True,
        extra_apis=("networkservices.googleapis.com",),
        extra_monitoring_components=("POD",),
        deletion_protection=False,
    )
    cluster = has_resource(
        records,
        GKE,
        {
            # stated, not left out: the provider keeps a dropped (Optional+Computed) block as it is
            "privateClusterConfig": {"enablePrivateNodes": False},
            # the provider has no explicit off for authorized networks: left out (docs/preview.md)
            "masterAuthorizedNetworksConfig": ABSENT,
            "gatewayApiConfig": {"channel": "CHANNEL_STANDARD"},
            "monitoringConfig": {"enableComponents": ["SYSTEM_COMPONENTS", "DCGM", "POD"]},
            "deletionProtection": False,
        },
    )
    assert cluster.options["protect"] is False
    has_resource(
        records,
        "gcp:projects/service:Service",
        {"service": "networkservices.googleapis.com", "disableOnDestroy": False},
    )


def test_an_empty_authorized_list_allows_no_outside_range() -> None:
    has_resource(
        build_cluster(authorized_networks=()),
        GKE,
        {"masterAuthorizedNetworksConfig": {"cidrBlocks": [], "gcpPublicCidrsAccessEnabled": False}},
    )


def test_a_long_cluster_name_keeps_the_service_account_id_within_30() -> None:
    records = build_cluster(cluster_name="a-cluster-name-of-forty-characters-long")
    (account,) = of_type(records, "gcp:serviceaccount/account:Account")
    assert len(account.inputs["accountId"]) <= 30 and account.inputs["accountId"].endswith("-nodes")
