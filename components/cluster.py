"""GKE Autopilot cluster: the APIs it needs, a VPC-native network, the cluster itself, a
Kubernetes provider built from its outputs and the namespace of the serving workload."""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

PODS_RANGE = "pods"
SERVICES_RANGE = "services"
BASE_APIS = ("compute.googleapis.com", "container.googleapis.com", "monitoring.googleapis.com")


@dataclass(frozen=True)
class ClusterArgs:
    project: str
    region: str
    cluster_name: str
    release_channel: str
    min_master_version: str
    deletion_protection: bool
    namespace: str
    subnet_cidr: str
    pods_cidr: str
    services_cidr: str
    gateway_api: bool = False
    extra_apis: tuple[str, ...] = ()
    # Further monitoring packages, e.g. kube state metrics ("POD", "DEPLOYMENT", "HPA").
    extra_monitoring_components: tuple[str, ...] = ()
    kubernetes_labels: dict[str, str] = field(default_factory=dict)


def kubeconfig_for(name: str, endpoint: str, ca_certificate: str) -> str:
    """A kubeconfig that authenticates with gke-gcloud-auth-plugin (no static credentials)."""
    context = f"gke_{name}"
    return f"""apiVersion: v1
kind: Config
clusters:
- name: {context}
  cluster:
    server: https://{endpoint}
    certificate-authority-data: {ca_certificate}
contexts:
- name: {context}
  context:
    cluster: {context}
    user: {context}
current-context: {context}
users:
- name: {context}
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: gke-gcloud-auth-plugin
      installHint: Install gke-gcloud-auth-plugin, see https://cloud.google.com/kubernetes-engine/docs/how-to/cluster-access-for-kubectl
      provideClusterInfo: true
"""


class Cluster(pulumi.ComponentResource):
    apis: dict[str, gcp.projects.Service]
    network: gcp.compute.Network
    subnet: gcp.compute.Subnetwork
    cluster: gcp.container.Cluster
    provider: k8s.Provider
    namespace: k8s.core.v1.Namespace

    def __init__(self, name: str, args: ClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llm-serving:gke:Cluster", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)

        self.apis = {
            api: gcp.projects.Service(
                f"{name}-{api.split('.')[0]}-api",
                project=args.project,
                service=api,
                disable_on_destroy=False,
                opts=child,
            )
            for api in (*BASE_APIS, *args.extra_apis)
        }
        after_apis = pulumi.ResourceOptions(parent=self, depends_on=list(self.apis.values()))

        self.network = gcp.compute.Network(
            f"{name}-vpc",
            name=f"{args.cluster_name}-vpc",
            project=args.project,
            auto_create_subnetworks=False,
            routing_mode="REGIONAL",
            opts=after_apis,
        )
        self.subnet = gcp.compute.Subnetwork(
            f"{name}-subnet",
            name=f"{args.cluster_name}-subnet",
            project=args.project,
            region=args.region,
            network=self.network.id,
            ip_cidr_range=args.subnet_cidr,
            private_ip_google_access=True,
            secondary_ip_ranges=[
                gcp.compute.SubnetworkSecondaryIpRangeArgs(range_name=PODS_RANGE, ip_cidr_range=args.pods_cidr),
                gcp.compute.SubnetworkSecondaryIpRangeArgs(range_name=SERVICES_RANGE, ip_cidr_range=args.services_cidr),
            ],
            opts=child,
        )
        self.cluster = gcp.container.Cluster(
            f"{name}-gke",
            name=args.cluster_name,
            project=args.project,
            location=args.region,
            enable_autopilot=True,
            network=self.network.id,
            subnetwork=self.subnet.id,
            networking_mode="VPC_NATIVE",
            ip_allocation_policy=gcp.container.ClusterIpAllocationPolicyArgs(
                cluster_secondary_range_name=PODS_RANGE,
                services_secondary_range_name=SERVICES_RANGE,
            ),
            release_channel=gcp.container.ClusterReleaseChannelArgs(channel=args.release_channel),
            min_master_version=args.min_master_version,
            workload_identity_config=gcp.container.ClusterWorkloadIdentityConfigArgs(
                workload_pool=f"{args.project}.svc.id.goog"
            ),
            monitoring_config=gcp.container.ClusterMonitoringConfigArgs(
                enable_components=["SYSTEM_COMPONENTS", "DCGM", *args.extra_monitoring_components],
                managed_prometheus=gcp.container.ClusterMonitoringConfigManagedPrometheusArgs(enabled=True),
            ),
            gateway_api_config=(
                gcp.container.ClusterGatewayApiConfigArgs(channel="CHANNEL_STANDARD") if args.gateway_api else None
            ),
            deletion_protection=args.deletion_protection,
            opts=pulumi.ResourceOptions(
                parent=self, depends_on=list(self.apis.values()), protect=args.deletion_protection
            ),
        )

        plain_kubeconfig: pulumi.Output[str] = pulumi.Output.all(
            self.cluster.name, self.cluster.endpoint, self.cluster.master_auth.cluster_ca_certificate
        ).apply(lambda parts: kubeconfig_for(str(parts[0]), str(parts[1]), str(parts[2])))
        kubeconfig: pulumi.Output[str] = pulumi.Output.secret(plain_kubeconfig)
        self.provider = k8s.Provider(f"{name}-k8s", kubeconfig=kubeconfig, opts=child)
        self.namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=args.namespace, labels=args.kubernetes_labels),
            opts=pulumi.ResourceOptions(parent=self, provider=self.provider),
        )

        self.register_outputs(
            {
                "clusterName": self.cluster.name,
                "endpoint": self.cluster.endpoint,
                "namespace": self.namespace.metadata.name,
            }
        )
