"""GKE Autopilot cluster: the APIs it needs, a VPC-native network with Cloud NAT, a dedicated node
service account, the cluster itself, a Kubernetes provider built from its outputs and the namespace
of the serving workload. What the serving layer needs of a cluster is its `ClusterTarget`, which
`components/existing_cluster.py` gives for a cluster this stack does not manage.

Evidence for the settings (checked at the source):
- `min_master_version` is sent only as `initialClusterVersion` at creation and never read back; on
  update the provider asks for a master upgrade only when the running version is older
  (hashicorp/terraform-provider-google@v7.9.0:google/services/container/resource_container_cluster.go,
  `InitialClusterVersion: d.Get("min_master_version")` and `if cur.LessThan(des)`), so GKE's
  auto-upgrades never cause a diff. A version the release channel no longer offers (a retired patch,
  or a minor the channel has moved past) fails the creation, so by default the stack sends none and
  the cluster starts at the channel's default version; `cluster.minMasterVersion` pins one.
- Node service account: Autopilot nodes take it from
  `cluster_autoscaling.auto_provisioning_defaults.service_account` (terraform-provider-google
  https://github.com/hashicorp/terraform-provider-google/pull/13024 "Allow passing node
  service_account when autopilot enabled"); its least role is
  `roles/container.defaultNodeServiceAccount` (GKE "Use least privilege IAM service accounts").
  Without it nodes run as the Compute Engine default account, which organisations often strip of
  roles, and logs and metrics vanish.
- Image streaming (GKE "Use Image streaming to pull container images", requirements; Autopilot streams
  eligible images automatically): the Container File System API enabled (`BASE_APIS`, in both cluster
  modes), Private Google Access on the node subnet (the subnet below; policy LLM-GKE-005 checks it),
  and for a custom node service account `roles/serviceusage.serviceUsageConsumer` in the project that
  holds the images, granted below. Whether `roles/container.defaultNodeServiceAccount` already carries
  its permission `serviceusage.services.use` could not be read here (the IAM role reference's list of
  that role's permissions was not reachable); the grant is what the image streaming page asks for a
  custom node account, and it adds nothing when the permission is already there.
- Private nodes are updated in place (`DesiredDefaultEnablePrivateNodes` in the same provider file);
  with them nodes have no external IP, so a Cloud Router + Cloud NAT gives the download Job and
  image pulls their way to Hugging Face and Docker Hub. Off is stated, never left out:
  `private_cluster_config` is Optional+Computed, so a dropped block keeps private nodes on without a
  diff, while `enable_private_nodes=False` is a real diff the provider sends
  (terraform-provider-google-beta@93c65b2d resource_container_cluster.go:2314-2341, :4122-4136,
  :9073-9104; commands/preview/computed_fields.py).
- Authorized networks have no explicit off: `master_authorized_networks_config` is Optional+Computed
  with no `enabled` field (same file :1790, expandMasterAuthorizedNetworksConfig :6909), so dropping
  it on a running cluster changes nothing; the preview says so and gives the gcloud command.
- Control-plane access (GKE "About network isolation in GKE"): the DNS-based endpoint is reachable
  from anywhere Google Cloud APIs are, gated by IAM (`container.clusters.connect`), and authorized
  networks do not apply to it; they restrict the IP-based endpoints only. The Kubernetes provider
  therefore connects through the DNS endpoint, so `pulumi up` works from any runner with IAM access
  while authorized networks close the IP endpoint (every preset: no outside range at all).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

PODS_RANGE = "pods"
SERVICES_RANGE = "services"
BASE_APIS = (
    "compute.googleapis.com",
    "container.googleapis.com",
    "monitoring.googleapis.com",
    "iam.googleapis.com",
    # projects.get (the project number of a Workload Identity principal) is a Resource Manager call.
    "cloudresourcemanager.googleapis.com",
    # Image streaming's backend (GKE "Use Image streaming", requirements).
    "containerfilesystem.googleapis.com",
)
NODE_SERVICE_ACCOUNT_ROLE = "roles/container.defaultNodeServiceAccount"
# A custom node service account needs it for image streaming (same requirements list).
IMAGE_STREAMING_ROLE = "roles/serviceusage.serviceUsageConsumer"
SERVICE_ACCOUNT_ID_MAX = 30
NODE_ACCOUNT_SUFFIX = "-nodes"


@dataclass(frozen=True)
class ClusterTarget:
    """What the serving layer needs of a cluster, whoever manages it: a Kubernetes provider for it,
    the namespace of the serving objects (and the resource to wait for, when this stack declares
    it), the GCP APIs to wait for, and what the gateway and the metrics adapter read of it."""

    provider: pulumi.ProviderResource
    namespace: pulumi.Input[str]
    namespace_resource: pulumi.Resource | None
    cluster_name: pulumi.Input[str]
    network: pulumi.Input[str]
    pods_cidr: pulumi.Input[str]
    workload_pool: pulumi.Input[str]
    # The Google service account the nodes run as (its email): the one that pulls images.
    node_service_account: pulumi.Input[str]
    apis: tuple[pulumi.Resource, ...] = ()

    @property
    def waits_for(self) -> list[pulumi.Resource]:
        return [self.namespace_resource] if self.namespace_resource is not None else []


@dataclass(frozen=True)
class AuthorizedNetwork:
    cidr_block: str
    display_name: str


@dataclass(frozen=True)
class ClusterArgs:
    project: str
    region: str
    cluster_name: str
    release_channel: str
    # None: the release channel's default version at creation
    min_master_version: str | None
    # (start_time, end_time, RRULE) of the recurring maintenance window GKE upgrades in
    maintenance_window: tuple[str, str, str]
    deletion_protection: bool
    namespace: str
    subnet_cidr: str
    pods_cidr: str
    services_cidr: str
    private_nodes: bool = True
    # None: authorized networks off; a list (even empty): on, with these outside ranges only.
    authorized_networks: tuple[AuthorizedNetwork, ...] | None = None
    gateway_api: bool = False
    extra_apis: tuple[str, ...] = ()
    # Further monitoring packages, e.g. kube state metrics ("POD", "DEPLOYMENT", "HPA").
    extra_monitoring_components: tuple[str, ...] = ()
    kubernetes_labels: dict[str, str] = field(default_factory=dict)


def network_name(cluster_name: str) -> str:
    return f"{cluster_name}-vpc"


def subnet_name(cluster_name: str) -> str:
    return f"{cluster_name}-subnet"


def router_name(cluster_name: str) -> str:
    return f"{cluster_name}-router"


def nat_name(cluster_name: str) -> str:
    return f"{cluster_name}-nat"


def node_service_account_id(cluster_name: str) -> str:
    """`<cluster>-nodes`, cut to the 30 characters a service account id may have."""
    base = cluster_name[: SERVICE_ACCOUNT_ID_MAX - len(NODE_ACCOUNT_SUFFIX)].rstrip("-")
    return f"{base}{NODE_ACCOUNT_SUFFIX}"


def enabled_apis(
    name: str, project: str, apis: tuple[str, ...], opts: pulumi.ResourceOptions
) -> dict[str, gcp.projects.Service]:
    """The GCP APIs the stack's objects use, enabled in `project`; `destroy` leaves them on
    (`disable_on_destroy=False`: other stacks may use them, and enabling an enabled API changes nothing)."""
    return {
        api: gcp.projects.Service(
            f"{name}-{api.split('.')[0]}-api", project=project, service=api, disable_on_destroy=False, opts=opts
        )
        for api in apis
    }


def workload_identity_principal(project_number: str, workload_pool: str, namespace: str, service_account: str) -> str:
    """The IAM principal of a Kubernetes service account under GKE Workload Identity Federation
    ("Authenticate to Google Cloud APIs from GKE workloads": principal://.../workloadIdentityPools/
    PROJECT_ID.svc.id.goog/subject/ns/NAMESPACE/sa/KSA)."""
    return (
        f"principal://iam.googleapis.com/projects/{project_number}/locations/global/workloadIdentityPools/"
        f"{workload_pool}/subject/ns/{namespace}/sa/{service_account}"
    )


def kubeconfig_for(name: str, endpoint: str, ca_certificate: str | None = None) -> str:
    """A kubeconfig for the cluster that authenticates with gke-gcloud-auth-plugin (no static
    credentials). The DNS-based endpoint serves a publicly trusted certificate, so its kubeconfig
    carries no cluster CA (as `gcloud container clusters get-credentials --dns-endpoint` writes it);
    the IP-based endpoint needs the cluster's CA (base64, as the cluster reports it)."""
    context = f"gke_{name}"
    authority = f"\n    certificate-authority-data: {ca_certificate}" if ca_certificate else ""
    return f"""apiVersion: v1
kind: Config
clusters:
- name: {context}
  cluster:
    server: https://{endpoint}{authority}
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
    TYPE = "llm-serving:gke:Cluster"
    apis: dict[str, gcp.projects.Service]
    network: gcp.compute.Network
    subnet: gcp.compute.Subnetwork
    router: gcp.compute.Router
    nat: gcp.compute.RouterNat
    node_service_account: gcp.serviceaccount.Account
    node_service_account_role: gcp.projects.IAMMember
    image_streaming_role: gcp.projects.IAMMember
    cluster: gcp.container.Cluster
    provider: k8s.Provider
    namespace: k8s.core.v1.Namespace
    target: ClusterTarget

    def __init__(self, name: str, args: ClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(self.TYPE, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)

        self.apis = enabled_apis(name, args.project, (*BASE_APIS, *args.extra_apis), child)
        # Every GCP object below has a fixed name, unique in the project (or region / location): a
        # replacement created before the old one is deleted would be refused (409 alreadyExists), so
        # the engine deletes first (Pulumi `deleteBeforeReplace`; `preview` flags the case).
        after_apis = pulumi.ResourceOptions(
            parent=self, depends_on=list(self.apis.values()), delete_before_replace=True
        )
        named = pulumi.ResourceOptions(parent=self, delete_before_replace=True)

        self.network = gcp.compute.Network(
            f"{name}-vpc",
            name=network_name(args.cluster_name),
            project=args.project,
            auto_create_subnetworks=False,
            routing_mode="REGIONAL",
            opts=after_apis,
        )
        self.subnet = gcp.compute.Subnetwork(
            f"{name}-subnet",
            name=subnet_name(args.cluster_name),
            project=args.project,
            region=args.region,
            network=self.network.id,
            ip_cidr_range=args.subnet_cidr,
            private_ip_google_access=True,
            secondary_ip_ranges=[
                gcp.compute.SubnetworkSecondaryIpRangeArgs(range_name=PODS_RANGE, ip_cidr_range=args.pods_cidr),
                gcp.compute.SubnetworkSecondaryIpRangeArgs(range_name=SERVICES_RANGE, ip_cidr_range=args.services_cidr),
            ],
            opts=named,
        )
        self.router = gcp.compute.Router(
            f"{name}-router",
            name=router_name(args.cluster_name),
            project=args.project,
            region=args.region,
            network=self.network.id,
            opts=named,
        )
        # Private nodes have no external IP: NAT is their only way to Hugging Face and public registries.
        self.nat = gcp.compute.RouterNat(
            f"{name}-nat",
            name=nat_name(args.cluster_name),
            project=args.project,
            region=args.region,
            router=self.router.name,
            nat_ip_allocate_option="AUTO_ONLY",
            source_subnetwork_ip_ranges_to_nat="LIST_OF_SUBNETWORKS",
            subnetworks=[
                gcp.compute.RouterNatSubnetworkArgs(name=self.subnet.id, source_ip_ranges_to_nats=["ALL_IP_RANGES"])
            ],
            log_config=gcp.compute.RouterNatLogConfigArgs(enable=True, filter="ERRORS_ONLY"),
            opts=named,
        )
        self.node_service_account = gcp.serviceaccount.Account(
            f"{name}-node-sa",
            account_id=node_service_account_id(args.cluster_name),
            project=args.project,
            display_name=f"GKE nodes of {args.cluster_name}",
            opts=after_apis,
        )
        node_member = self.node_service_account.email.apply(lambda email: f"serviceAccount:{email}")
        self.node_service_account_role = gcp.projects.IAMMember(
            f"{name}-node-sa-role",
            project=args.project,
            role=NODE_SERVICE_ACCOUNT_ROLE,
            member=node_member,
            opts=child,
        )
        self.image_streaming_role = gcp.projects.IAMMember(
            f"{name}-node-sa-image-streaming",
            project=args.project,
            role=IMAGE_STREAMING_ROLE,
            member=node_member,
            opts=child,
        )
        authorized = args.authorized_networks
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
            # Automatic upgrades (control plane and nodes) start only inside this window, so no A4 node
            # is replaced for one mid-week (google_container_cluster maintenance_policy.recurring_window).
            maintenance_policy=gcp.container.ClusterMaintenancePolicyArgs(
                recurring_window=gcp.container.ClusterMaintenancePolicyRecurringWindowArgs(
                    start_time=args.maintenance_window[0],
                    end_time=args.maintenance_window[1],
                    recurrence=args.maintenance_window[2],
                )
            ),
            workload_identity_config=gcp.container.ClusterWorkloadIdentityConfigArgs(
                workload_pool=f"{args.project}.svc.id.goog"
            ),
            monitoring_config=gcp.container.ClusterMonitoringConfigArgs(
                enable_components=["SYSTEM_COMPONENTS", "DCGM", *args.extra_monitoring_components],
                managed_prometheus=gcp.container.ClusterMonitoringConfigManagedPrometheusArgs(enabled=True),
            ),
            # Always explicit: the provider's field is Optional+Computed, so leaving it out after a
            # gateway -> clusterip switch would keep the Gateway API on without a diff.
            gateway_api_config=gcp.container.ClusterGatewayApiConfigArgs(
                channel="CHANNEL_STANDARD" if args.gateway_api else "CHANNEL_DISABLED"
            ),
            cluster_autoscaling=gcp.container.ClusterClusterAutoscalingArgs(
                auto_provisioning_defaults=gcp.container.ClusterClusterAutoscalingAutoProvisioningDefaultsArgs(
                    service_account=self.node_service_account.email,
                    # The broad scope with a narrow account: the account's IAM roles decide (GKE's advice
                    # for custom node service accounts, as the provider's oauth_scopes docs repeat).
                    oauth_scopes=["https://www.googleapis.com/auth/cloud-platform"],
                )
            ),
            private_cluster_config=gcp.container.ClusterPrivateClusterConfigArgs(
                enable_private_nodes=args.private_nodes
            ),
            control_plane_endpoints_config=gcp.container.ClusterControlPlaneEndpointsConfigArgs(
                dns_endpoint_config=gcp.container.ClusterControlPlaneEndpointsConfigDnsEndpointConfigArgs(
                    allow_external_traffic=True
                ),
            ),
            master_authorized_networks_config=(
                gcp.container.ClusterMasterAuthorizedNetworksConfigArgs(
                    cidr_blocks=[
                        gcp.container.ClusterMasterAuthorizedNetworksConfigCidrBlockArgs(
                            cidr_block=network.cidr_block, display_name=network.display_name
                        )
                        for network in authorized
                    ],
                    gcp_public_cidrs_access_enabled=False,
                )
                if authorized is not None
                else None
            ),
            deletion_protection=args.deletion_protection,
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=[*self.apis.values(), self.node_service_account_role, self.image_streaming_role, self.nat],
                protect=args.deletion_protection,
                delete_before_replace=True,
            ),
        )

        dns_endpoint = self.cluster.control_plane_endpoints_config.apply(
            lambda config: str(config.dns_endpoint_config.endpoint) if config and config.dns_endpoint_config else ""
        )
        plain_kubeconfig: pulumi.Output[str] = pulumi.Output.all(self.cluster.name, dns_endpoint).apply(
            lambda parts: kubeconfig_for(str(parts[0]), str(parts[1]))
        )
        kubeconfig: pulumi.Output[str] = pulumi.Output.secret(plain_kubeconfig)
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
            cluster_name=self.cluster.name,
            network=self.network.id,
            pods_cidr=args.pods_cidr,
            workload_pool=self.cluster.workload_identity_config.apply(
                lambda identity: identity.workload_pool if identity else f"{args.project}.svc.id.goog"
            ),
            node_service_account=self.node_service_account.email,
            apis=tuple(self.apis.values()),
        )
        self.register_outputs(
            {
                "clusterName": self.cluster.name,
                "dnsEndpoint": dns_endpoint,
                "nodeServiceAccount": self.node_service_account.email,
                "namespace": self.namespace.metadata.name,
            }
        )
