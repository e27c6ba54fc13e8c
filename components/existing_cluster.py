"""An existing GKE Autopilot cluster the stack does not manage: the serving layer's `ClusterTarget`
from the provider's look-up of the cluster, after checking what the look-up tells.

Nothing of the cluster is declared: no network, subnet, router, NAT, node service account or
cluster. Declared here: the GCP APIs the serving layer uses (`disable_on_destroy=False`: enabling
an enabled API changes nothing, and a `destroy` leaves them on), the namespace of the serving
objects, and a Kubernetes provider built from the look-up.

The look-up is the pulumi-gcp data source `gcp.container.getCluster` (terraform-provider-google
google/services/container/data_source_google_container_cluster.go: it reads the cluster like the
resource does and fails with "<id> not found" when there is none). Its result is checked in an
`apply`, so `pulumi preview` stops with one message before anything is created when the cluster
is not Autopilot, is older than a feature of the serving layer needs, has no Workload Identity
pool or Managed Prometheus, or (gateway routing) has the Gateway API off.

The nodes' service account is the look-up's `cluster_autoscaling.auto_provisioning_defaults.service_account`
(where Autopilot takes it from); `default` (or none) is the Compute Engine default account,
`PROJECT_NUMBER-compute@developer.gserviceaccount.com` ("Configure GKE node service accounts"). The
stack grants it read access to its own image mirrors; the project roles of an account it does not
manage (image streaming wants `roles/serviceusage.serviceUsageConsumer`) are the cluster owner's to
grant (docs/operations.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from common.gke_versions import version_at_least
from components.cluster import BASE_APIS, ClusterTarget, enabled_apis, kubeconfig_for

GATEWAY_API_CHANNELS = ("CHANNEL_STANDARD", "CHANNEL_EXPERIMENTAL")
DEFAULT_NODE_ACCOUNT = "default"


class ExistingClusterError(pulumi.RunError):
    """The named cluster cannot take the serving layer (the message says why and what to do)."""


@dataclass(frozen=True)
class ExistingClusterArgs:
    project: str
    region: str
    cluster_name: str
    namespace: str
    # The oldest GKE version that has every feature the serving layer uses (a full version).
    minimum_version: str
    gateway_api: bool = False
    # The serving layer declares firewall rules (and maybe a proxy-only subnet) in the cluster's VPC.
    declares_vpc_objects: bool = False
    extra_apis: tuple[str, ...] = ()
    # Monitoring packages the dashboards and alerts read; missing ones are a warning, not an error.
    monitoring_components: tuple[str, ...] = ()
    kubernetes_labels: dict[str, str] = field(default_factory=dict)


def _first(items: Any) -> Any:
    return items[0] if items else None


def cluster_problems(cluster: Any, args: ExistingClusterArgs) -> list[str]:
    """What keeps the looked-up cluster from taking the serving layer (empty: nothing)."""
    where = f"cluster {args.cluster_name} in {args.region}"
    problems = []
    if not cluster.enable_autopilot:
        problems.append(
            f"{where} is not an Autopilot cluster; the serving layer relies on Autopilot provisioning A4 nodes "
            "for its ComputeClass (deploy with cluster.existing false to get one)"
        )
    version = cluster.master_version or ""
    if not version_at_least(version, args.minimum_version):
        problems.append(
            f"{where} runs GKE {version or 'of an unknown version'}; the serving layer needs {args.minimum_version} "
            "or newer (upgrade the control plane: gcloud container clusters upgrade --master)"
        )
    identity = _first(cluster.workload_identity_configs)
    if not (identity and identity.workload_pool):
        problems.append(f"{where} has no Workload Identity pool; the metrics adapter authenticates through it")
    monitoring = _first(cluster.monitoring_configs)
    prometheus = _first(monitoring.managed_prometheuses) if monitoring else None
    if not (prometheus and prometheus.enabled):
        problems.append(
            f"{where} has Managed Service for Prometheus off; the engine's PodMonitoring, the dashboard, the alerts "
            "and the autoscaler read it (gcloud container clusters update --enable-managed-prometheus)"
        )
    network = str(cluster.network or "")
    host = network.split("projects/", 1)[1].split("/", 1)[0] if "projects/" in network else args.project
    if args.declares_vpc_objects and host != args.project:
        problems.append(
            f"{where} is on VPC {network}, a Shared VPC of host project {host}: gateway routing declares firewall "
            "rules and a proxy-only subnet in the cluster's VPC, and those belong to the host project, which this "
            "stack does not manage; use routing.mode clusterip"
        )
    gateway = _first(cluster.gateway_api_configs)
    if args.gateway_api and not (gateway and gateway.channel in GATEWAY_API_CHANNELS):
        problems.append(
            f"{where} has the Gateway API off; gateway routing needs it "
            "(gcloud container clusters update --gateway-api=standard)"
        )
    return problems


def node_service_account_of(cluster: Any, project_number: str) -> str:
    """The email of the account the cluster's auto-provisioned nodes run as."""
    autoscaling = _first(cluster.cluster_autoscalings)
    defaults = _first(autoscaling.auto_provisioning_defaults) if autoscaling else None
    account = defaults.service_account if defaults else ""
    if not account or account == DEFAULT_NODE_ACCOUNT:
        return f"{project_number}-compute@developer.gserviceaccount.com"
    return str(account)


def kubeconfig_of(cluster: Any, name: str) -> str:
    """The DNS-based endpoint when it takes traffic from outside Google Cloud (IAM-gated, no CA),
    else the IP-based endpoint with the cluster's CA (authorized networks may gate it)."""
    endpoints = _first(cluster.control_plane_endpoints_configs)
    dns = _first(endpoints.dns_endpoint_configs) if endpoints else None
    if dns and dns.endpoint and dns.allow_external_traffic:
        return kubeconfig_for(name, dns.endpoint)
    auth = _first(cluster.master_auths)
    return kubeconfig_for(name, cluster.endpoint, auth.cluster_ca_certificate if auth else None)


class ExistingCluster(pulumi.ComponentResource):
    TYPE = "llm-serving:gke:ExistingCluster"
    apis: dict[str, gcp.projects.Service]
    provider: k8s.Provider
    namespace: k8s.core.v1.Namespace
    target: ClusterTarget

    def __init__(self, name: str, args: ExistingClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(self.TYPE, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.apis = enabled_apis(name, args.project, (*BASE_APIS, *args.extra_apis), child)
        # The provider comes from the component's own (`providers=[gcp_provider]`), as for every child.
        lookup = gcp.container.get_cluster_output(
            name=args.cluster_name,
            location=args.region,
            project=args.project,
            opts=pulumi.InvokeOutputOptions(parent=self),
        )
        checked = lookup.apply(lambda cluster: self._checked(cluster, args))
        # Waits for the APIs: on an empty project Resource Manager is enabled by this same `up`.
        project_number = gcp.organizations.get_project_output(
            project_id=args.project,
            opts=pulumi.InvokeOutputOptions(parent=self, depends_on=list(self.apis.values())),
        ).number
        kubeconfig: pulumi.Output[str] = pulumi.Output.secret(
            checked.apply(lambda cluster: kubeconfig_of(cluster, args.cluster_name))
        )
        self.provider = k8s.Provider(f"{name}-k8s", kubeconfig=kubeconfig, opts=child)
        self.namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=args.namespace, labels=args.kubernetes_labels),
            opts=pulumi.ResourceOptions(parent=self, provider=self.provider),
        )
        self.target = ClusterTarget(
            provider=self.provider,
            namespace=self.namespace.metadata.name,
            namespace_resource=self.namespace,
            cluster_name=checked.apply(lambda cluster: str(cluster.name)),
            network=checked.apply(lambda cluster: str(cluster.network)),
            pods_cidr=checked.apply(lambda cluster: str(cluster.cluster_ipv4_cidr)),
            workload_pool=checked.apply(lambda cluster: str(cluster.workload_identity_configs[0].workload_pool)),
            node_service_account=pulumi.Output.all(checked, project_number).apply(
                lambda parts: node_service_account_of(parts[0], str(parts[1]))
            ),
            apis=tuple(self.apis.values()),
        )
        self.register_outputs(
            {
                "clusterName": self.target.cluster_name,
                "masterVersion": checked.apply(lambda cluster: str(cluster.master_version)),
                "namespace": self.namespace.metadata.name,
            }
        )

    def _checked(self, cluster: Any, args: ExistingClusterArgs) -> Any:
        problems = cluster_problems(cluster, args)
        if problems:
            raise ExistingClusterError("cluster.existing: " + "; ".join(problems))
        monitoring = _first(cluster.monitoring_configs)
        missing = sorted(set(args.monitoring_components) - set(monitoring.enable_components or []))
        if missing:
            pulumi.log.warn(
                f"cluster {args.cluster_name} does not collect {', '.join(missing)}: the dashboard's charts of them "
                "stay empty (gcloud container clusters update --monitoring=...)",
                self,
            )
        return cluster
