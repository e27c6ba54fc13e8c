"""GKE Inference Gateway: queue- and KV-cache-aware routing to the vLLM pods through an Endpoint
Picker (EPP), the `gateway` routing mode.

GCP side: the proxy-only subnet of the cluster's VPC and region (unless an existing one is reused)
and two firewall rules: the proxies and Google's health checkers to the serving port, and to the
EPP's ext_proc gRPC port and its gRPC health port.
Kubernetes side: a Job that waits until GKE has installed the CRDs (components/crd_readiness.py),
then the Endpoint Picker and its InferencePool as plain objects (components/endpoint_picker.py,
translated from llm-d-router-gateway v0.10.0), a Gateway, an HTTPRoute to the pool, and the GKE
HealthCheckPolicy and GCPBackendPolicy on the pool (llm-d-router-gateway templates/gke.yaml).

The EPP firewall rule: the load balancer calls the EPP over ext_proc from the proxy-only subnet on
the pool's `endpointPickerRef.port` (9002) and health-checks it on gRPC 9003 (llm-d-router@v0.10.0:
routerlib _inferencepool.yaml, _deployment.yaml; templates/gke.yaml: "The GKE gateway controller
health-checks the EPP backend on gRPC port 9003 by default"). The pool's `failureMode` is
FailOpen, so an EPP the proxies cannot reach is bypassed silently: requests then go to any pod.
GKE's own firewall rules for Gateways cover the health checks of the backends it load-balances; the
stack does not rely on them for the EPP (which GKE documents no rule for) and declares both ports
itself. An allow rule the platform also creates is harmless; a missing one fails open.

An external GatewayClass exposes the model to the internet: the Gateway then carries
`llm-serving/allow-external-gateway: "true"` only when the stack sets `routing.gateway.allowExternal`,
and policy LLM-NET-004 refuses it otherwise.

The vLLM pods have no ClusterIP Service in this mode: the EPP reads the pods straight from the
pool's selector and the load balancer sends each request to the pod it picked, so nothing bypasses
it. (The EPP itself has one: the pool's `endpointPickerRef` names it.)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from components.crd_readiness import CrdReadiness, CrdReadinessArgs
from components.endpoint_picker import (
    EXT_PROC_PORT,
    HEALTH_PORT,
    INFERENCE_POOL_API,
    EndpointPicker,
    EndpointPickerArgs,
)
from components.routing import chat_request_curl_args, with_api_key

GATEWAY_APIS = ("networkservices.googleapis.com",)
HEALTH_CHECK_RANGES = ("35.191.0.0/16", "130.211.0.0/22")
GATEWAY_API = "gateway.networking.k8s.io"
GKE_POLICY_API_VERSION = "networking.gke.io/v1"
INTERNAL_GATEWAY_CLASS = "gke-l7-rilb"
ALLOW_EXTERNAL_GATEWAY_ANNOTATION = "llm-serving/allow-external-gateway"
# llm-d-router-gateway templates/gke.yaml: "a more aggressive health check than the default 5s for
# faster switch over during EPP rollout" (the write-up's measured runs used the same values, set by
# the inferencepool chart with provider.name=gke).
HEALTH_CHECK_SECONDS = 2
# The CRDs GKE installs that the objects below need (Gateway API standard channel, GKE policies,
# InferencePool v1, Google Managed Prometheus).
GATEWAY_CRDS = (
    "gateways.gateway.networking.k8s.io",
    "httproutes.gateway.networking.k8s.io",
    "healthcheckpolicies.networking.gke.io",
    "gcpbackendpolicies.networking.gke.io",
    "inferencepools.inference.networking.k8s.io",
    "podmonitorings.monitoring.googleapis.com",
)
LISTENER_PORT = 80
TLS_LISTENER_PORT = 443
# GKE's listener option for a Compute Engine SSL certificate the load balancer holds (GKE "Secure a Gateway"; a
# regional self-managed one on gke-l7-rilb: GoogleCloudPlatform/gke-networking-recipes gateway/grpc; "Self-managed SSL
# certificates": regional certificates serve the regional Application Load Balancers).
PRE_SHARED_CERTS_OPTION = "networking.gke.io/pre-shared-certs"
HEALTH_PATH = "/health"
GATEWAY_PROGRAMMED_TIMEOUT_SECONDS = 1200
# Names the proxy-only subnet the Gateway relies on when the stack reuses one instead of declaring it.
REUSED_PROXY_SUBNET_ANNOTATION = "llm-serving/proxy-only-subnet"


@dataclass(frozen=True)
class GatewayTls:
    """HTTPS on the Gateway's one listener, with one certificate source."""

    # The DNS name clients call (the listener's hostname), which the certificate holds.
    hostname: str | None
    # One certificate (the config takes exactly one): a kubernetes.io/tls Secret in the Gateway's namespace (Gateway
    # API tls.certificateRefs), or a regional self-managed Compute Engine SSL certificate's name.
    kubernetes_certificate: str | None = None
    pre_shared_certificate: str | None = None

    def listener(self) -> dict[str, object]:
        tls: dict[str, object] = {"mode": "Terminate"}
        if self.kubernetes_certificate is not None:
            tls["certificateRefs"] = [{"group": "", "kind": "Secret", "name": self.kubernetes_certificate}]
        if self.pre_shared_certificate is not None:
            tls["options"] = {PRE_SHARED_CERTS_OPTION: self.pre_shared_certificate}
        named = {"hostname": self.hostname} if self.hostname is not None else {}
        return {"name": "https", "protocol": "HTTPS", "port": TLS_LISTENER_PORT, **named, "tls": tls}


def listener(tls: GatewayTls | None) -> dict[str, object]:
    """The Gateway's one listener: HTTPS with `tls`, else plain HTTP on port 80."""
    return tls.listener() if tls is not None else {"name": "http", "protocol": "HTTP", "port": LISTENER_PORT}


@dataclass(frozen=True)
class InferenceGatewayArgs:
    project: str
    region: str
    cluster_name: str
    network: pulumi.Input[str]
    pods_cidr: pulumi.Input[str]
    namespace: pulumi.Input[str]
    pool_name: str
    pod_labels: dict[str, str]
    # One per data-parallel rank (consecutive): each is an endpoint of the InferencePool.
    serving_ports: tuple[int, ...]
    served_model_name: str
    gateway_class: str
    proxy_subnet_cidr: str
    existing_proxy_subnet: str | None
    epp_image: str
    epp_replicas: int
    epp_cpu: str
    epp_memory: str
    request_timeout_seconds: int
    # The termination grace of the serving pods: the endpoint picker's is at least as long
    pool_grace_seconds: int
    allow_external: bool = False
    kubernetes_labels: dict[str, str] = field(default_factory=dict)
    # the Secret holding the engine's API key (VLLM_API_KEY); None: the engine takes no key
    api_key_secret: str | None = None
    # HTTPS on the listener; None: plain HTTP on port 80
    tls: GatewayTls | None = None
    # a reserved regional address's name (spec.addresses NamedAddress); None: an ephemeral one
    address: str | None = None


# A VPC has at most one ACTIVE proxy-only subnet per region ("Proxy-only subnets for Envoy-based load
# balancers"); declaring a second fails `pulumi up`. The Compute API's list filter syntax:
# compute/docs/reference/rest/v1/subnetworks/list.
ACTIVE_PROXY_ONLY_FILTER = '(purpose = "REGIONAL_MANAGED_PROXY") AND (role = "ACTIVE")'


def network_path(network: str) -> str:
    """`projects/P/global/networks/N` of a network's self link, relative name or id."""
    start = network.find("projects/")
    return network[start:] if start >= 0 else network


def active_proxy_subnet(
    project: str, region: str, cluster_name: str, provider: pulumi.ProviderResource
) -> tuple[str, str] | None:
    """The name and range of the ACTIVE proxy-only subnet in the VPC of an existing cluster, in its
    region, or None. Plain invokes (the provider's data sources google_container_cluster and
    google_compute_subnetworks), run by `pulumi preview` and `up` alike and answered by the offline
    mocks: the decision to declare a subnet or not has to be made before any resource is. The subnet the
    stack itself declares (`proxy_subnet_name`) is not another's to reuse: after the `up` that made it the
    look-up finds it, and reusing it would stop declaring it, so the next `up` would delete it under the
    Gateway."""
    invoke = pulumi.InvokeOptions(provider=provider)
    cluster = gcp.container.get_cluster(name=cluster_name, location=region, project=project, opts=invoke)
    found = gcp.compute.get_subnetworks(filter=ACTIVE_PROXY_ONLY_FILTER, project=project, region=region, opts=invoke)
    network = network_path(str(cluster.network))
    for subnet in found.subnetworks:
        # `network` is the subnet's network self link; the deprecated `network_self_link` is only its
        # name, despite its name (terraform-provider-google data_source_google_compute_subnetworks.go:
        # "network_self_link": filepath.Base(subnet.Network)), so it never matched a real cluster's VPC
        if network_path(subnet.network) == network and subnet.name != proxy_subnet_name(cluster_name):
            return subnet.name, subnet.ip_cidr_range
    return None


def proxy_subnet_name(cluster_name: str) -> str:
    return f"{cluster_name}-proxy-only"


def firewall_name(cluster_name: str) -> str:
    return f"{cluster_name}-gateway-to-serving"


def epp_firewall_name(cluster_name: str) -> str:
    return f"{cluster_name}-gateway-to-epp"


def curl_example(
    address_command: str,
    namespace: str,
    model: str,
    internal: bool,
    api_key_secret: str | None = None,
    hostname: str | None = None,
) -> str:
    """A chat request to the Gateway: over HTTPS to `hostname` (resolved to the Gateway's address, so it works
    before DNS does and checks the certificate for that name) when given, else plain HTTP to the address."""
    if hostname is None:
        request = chat_request_curl_args(f"http://$({address_command})", model, api_key_secret is not None)
    else:
        resolve = f"--resolve {hostname}:{TLS_LISTENER_PORT}:$({address_command})"
        request = f"{resolve} {chat_request_curl_args(f'https://{hostname}', model, api_key_secret is not None)}"
    if internal:
        # An internal Gateway's address is reachable only from the VPC: send the request from a pod.
        command = (
            f"kubectl run gateway-curl -n {namespace} --rm -i --restart=Never --image=curlimages/curl -- {request}"
        )
    else:
        command = f"curl {request}"
    return with_api_key(command, namespace, api_key_secret)


class InferenceGateway(pulumi.ComponentResource):
    TYPE = "llm-serving:routing:InferenceGateway"
    proxy_subnet: gcp.compute.Subnetwork | None
    firewall: gcp.compute.Firewall
    epp_firewall: gcp.compute.Firewall
    crds: CrdReadiness
    endpoint_picker: EndpointPicker
    gateway: k8s.apiextensions.CustomResource
    route: k8s.apiextensions.CustomResource
    health_check_policy: k8s.apiextensions.CustomResource
    backend_policy: k8s.apiextensions.CustomResource
    address_command: pulumi.Output[str]
    try_it: pulumi.Output[str]

    def __init__(self, name: str, args: InferenceGatewayArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(self.TYPE, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        # Fixed GCP names: replace by deleting first, or GCP refuses the new one (409 alreadyExists).
        named = pulumi.ResourceOptions(parent=self, delete_before_replace=True)

        declared_proxy_subnet = proxy_subnet_name(args.cluster_name)
        first_port, last_port = min(args.serving_ports), max(args.serving_ports)
        serving_ports = f"{first_port}-{last_port}" if last_port > first_port else str(first_port)
        self.proxy_subnet = None
        if args.existing_proxy_subnet is None:
            self.proxy_subnet = gcp.compute.Subnetwork(
                f"{name}-proxy-subnet",
                name=declared_proxy_subnet,
                project=args.project,
                region=args.region,
                network=args.network,
                ip_cidr_range=args.proxy_subnet_cidr,
                purpose="REGIONAL_MANAGED_PROXY",
                role="ACTIVE",
                opts=named,
            )
        self.firewall = gcp.compute.Firewall(
            f"{name}-serving-firewall",
            name=firewall_name(args.cluster_name),
            project=args.project,
            network=args.network,
            description=(
                f"Inference Gateway proxies ({args.existing_proxy_subnet or declared_proxy_subnet}, "
                f"{args.proxy_subnet_cidr}) and Google health checks to the vLLM pods on ports {serving_ports}"
            ),
            direction="INGRESS",
            source_ranges=[args.proxy_subnet_cidr, *HEALTH_CHECK_RANGES],
            destination_ranges=[args.pods_cidr],
            allows=[gcp.compute.FirewallAllowArgs(protocol="tcp", ports=[serving_ports])],
            opts=named,
        )
        self.epp_firewall = gcp.compute.Firewall(
            f"{name}-epp-firewall",
            name=epp_firewall_name(args.cluster_name),
            project=args.project,
            network=args.network,
            description=(
                f"Inference Gateway proxies ({args.proxy_subnet_cidr}) to the Endpoint Picker's ext_proc port "
                f"{EXT_PROC_PORT} and Google health checks to its gRPC health port {HEALTH_PORT}; "
                "without it the pool's FailOpen bypasses the EPP"
            ),
            direction="INGRESS",
            source_ranges=[args.proxy_subnet_cidr, *HEALTH_CHECK_RANGES],
            destination_ranges=[args.pods_cidr],
            allows=[gcp.compute.FirewallAllowArgs(protocol="tcp", ports=[str(EXT_PROC_PORT), str(HEALTH_PORT)])],
            opts=named,
        )
        self.crds = CrdReadiness(
            f"{name}-crds",
            CrdReadinessArgs(
                namespace=args.namespace,
                name=f"{args.pool_name}-crds-ready",
                crds=GATEWAY_CRDS,
                labels=args.kubernetes_labels,
            ),
            opts=child,
        )

        def metadata(object_name: str) -> k8s.meta.v1.ObjectMetaArgs:
            return k8s.meta.v1.ObjectMetaArgs(name=object_name, namespace=args.namespace, labels=args.kubernetes_labels)

        self.endpoint_picker = EndpointPicker(
            f"{name}-epp",
            EndpointPickerArgs(
                namespace=args.namespace,
                pool_name=args.pool_name,
                pod_labels=args.pod_labels,
                serving_ports=args.serving_ports,
                image=args.epp_image,
                replicas=args.epp_replicas,
                cpu=args.epp_cpu,
                memory=args.epp_memory,
                load_balancer_ranges=(args.proxy_subnet_cidr, *HEALTH_CHECK_RANGES),
                pool_grace_seconds=args.pool_grace_seconds,
                after=[self.crds.job],
                labels=args.kubernetes_labels,
            ),
            opts=child,
        )
        # Without its prerequisites a Gateway stays PROGRAMMED False, silently: make `pulumi up`
        # wait for the condition, so a missing one fails the deployment instead.
        self.gateway = k8s.apiextensions.CustomResource(
            f"{name}-gateway",
            api_version=f"{GATEWAY_API}/v1",
            kind="Gateway",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=args.pool_name,
                namespace=args.namespace,
                labels=args.kubernetes_labels,
                annotations={
                    "pulumi.com/waitFor": "condition=Programmed",
                    "pulumi.com/timeoutSeconds": str(GATEWAY_PROGRAMMED_TIMEOUT_SECONDS),
                    **(
                        {REUSED_PROXY_SUBNET_ANNOTATION: args.existing_proxy_subnet}
                        if args.existing_proxy_subnet
                        else {}
                    ),
                    **({ALLOW_EXTERNAL_GATEWAY_ANNOTATION: "true"} if args.allow_external else {}),
                },
            ),
            spec={
                "gatewayClassName": args.gateway_class,
                "listeners": [listener(args.tls)],
                **({"addresses": [{"type": "NamedAddress", "value": args.address}]} if args.address else {}),
            },
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=[self.crds.job, self.epp_firewall, *([self.proxy_subnet] if self.proxy_subnet else [])],
            ),
        )
        pool_ref = {"group": INFERENCE_POOL_API, "kind": "InferencePool", "name": args.pool_name}
        after_pool = pulumi.ResourceOptions(parent=self, depends_on=[self.crds.job, self.endpoint_picker.pool])
        self.route = k8s.apiextensions.CustomResource(
            f"{name}-route",
            api_version=f"{GATEWAY_API}/v1",
            kind="HTTPRoute",
            metadata=metadata(args.pool_name),
            spec={
                "parentRefs": [{"group": GATEWAY_API, "kind": "Gateway", "name": args.pool_name}],
                "rules": [
                    {
                        "matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
                        "backendRefs": [pool_ref],
                    }
                ],
            },
            opts=after_pool,
        )
        # templates/gke.yaml's timeout and interval; the chart checks a fixed port (httpHealthCheck.port, the
        # pool's first target port), the stack each rank's own (USE_SERVING_PORT, no port)
        self.health_check_policy = k8s.apiextensions.CustomResource(
            f"{name}-health-check",
            api_version=GKE_POLICY_API_VERSION,
            kind="HealthCheckPolicy",
            metadata=metadata(args.pool_name),
            spec={
                "targetRef": pool_ref,
                "default": {
                    "timeoutSec": HEALTH_CHECK_SECONDS,
                    "checkIntervalSec": HEALTH_CHECK_SECONDS,
                    "config": {
                        "type": "HTTP",
                        # Each endpoint (one data-parallel rank) is checked on its own port: with
                        # USE_SERVING_PORT a network endpoint group's health check uses "the port
                        # specified for each network endpoint" (the HealthCheckPolicy CRD's description).
                        "httpHealthCheck": {"requestPath": HEALTH_PATH, "portSpecification": "USE_SERVING_PORT"},
                    },
                },
            },
            opts=after_pool,
        )
        # templates/gke.yaml. GKE rejects HTTPRoute timeouts; the backend service timeout must outlast
        # a whole generation. The chart fixes timeoutSec at 300 and logs every request (`logging.enabled: true`); the
        # stack takes the timeout from config and leaves request logging at its default, off (the
        # CRD's description): at the benchmark's ~640 req/s that is ~55 million log entries a day.
        self.backend_policy = k8s.apiextensions.CustomResource(
            f"{name}-backend-policy",
            api_version=GKE_POLICY_API_VERSION,
            kind="GCPBackendPolicy",
            metadata=metadata(args.pool_name),
            spec={"targetRef": pool_ref, "default": {"timeoutSec": args.request_timeout_seconds}},
            opts=after_pool,
        )

        self.address_command = pulumi.Output.all(self.gateway.metadata, args.namespace).apply(
            lambda parts: (
                f"kubectl get gateway {parts[0]['name']} -n {parts[1]} -o jsonpath='{{.status.addresses[0].value}}'"
            )
        )
        self.try_it = pulumi.Output.all(self.address_command, args.namespace).apply(
            lambda parts: curl_example(
                str(parts[0]),
                str(parts[1]),
                args.served_model_name,
                internal=args.gateway_class == INTERNAL_GATEWAY_CLASS,
                api_key_secret=args.api_key_secret,
                hostname=args.tls.hostname if args.tls is not None else None,
            )
        )
        self.register_outputs(
            {
                "gatewayName": self.gateway.metadata.apply(lambda meta: meta["name"]),
                "addressCommand": self.address_command,
                "tryIt": self.try_it,
            }
        )
