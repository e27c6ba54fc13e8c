"""GKE Inference Gateway: queue- and KV-cache-aware routing to the vLLM pods through an Endpoint
Picker (EPP), the `gateway` routing mode.

GCP side: the proxy-only subnet of the cluster's VPC and region (unless an existing one is reused)
and two firewall rules: the proxies and Google's health checkers to the serving port, and to the
EPP's ext_proc gRPC port and its gRPC health port.
Kubernetes side: a Job that waits until GKE has installed the CRDs (components/crd_readiness.py),
then the EPP and its InferencePool from the pinned `inferencepool` chart, a Gateway, an HTTPRoute
to the pool, the GKE HealthCheckPolicy and GCPBackendPolicy on the pool, and the scrape of the
EPP's metrics.

The EPP firewall rule: the load balancer calls the EPP over ext_proc from the proxy-only subnet on
the pool's `endpointPickerRef.port` (9002, `inferenceExtension.extProcPort`) and the EPP serves gRPC
health on 9003 (gateway-api-inference-extension@v1.4.0: config/charts/inferencepool/templates/
inferencepool.yaml, config/charts/epplib/templates/_deployment.yaml). The chart's `failureMode` is
FailOpen, so an EPP the proxies cannot reach is bypassed silently: requests then go to any pod.
GKE's own firewall rules for Gateways cover the health checks of the backends it load-balances; the
stack does not rely on them for the EPP (which GKE documents no rule for) and declares both ports
itself. An allow rule the platform also creates is harmless; a missing one fails open.

An external GatewayClass exposes the model to the internet: the Gateway then carries
`llm-serving/allow-external-gateway: "true"` only when the stack sets `routing.gateway.allowExternal`,
and policy LLM-NET-004 refuses it otherwise.

Who owns what: the chart always renders the InferencePool (named after the release; v1.3-v1.5 have
no value that skips it) and, with `provider.name=gke`, its own copies of both policies (timeoutSec
fixed at 300) and its GKE monitoring. The stack sets `provider.name=none` and declares the
policies and the PodMonitoring itself, so they carry the configured timeout and show in the render.

There is no ClusterIP Service in this mode: the EPP reads the pods straight from the pool's
selector and the load balancer sends each request to the pod it picked, so nothing bypasses it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from components.crd_readiness import CrdReadiness, CrdReadinessArgs
from components.routing import chat_request_curl_args

GATEWAY_APIS = ("networkservices.googleapis.com",)
EPP_CHART = "oci://registry.k8s.io/gateway-api-inference-extension/charts/inferencepool"
HEALTH_CHECK_RANGES = ("35.191.0.0/16", "130.211.0.0/22")
GATEWAY_API = "gateway.networking.k8s.io"
INFERENCE_POOL_API = "inference.networking.k8s.io"
GKE_POLICY_API_VERSION = "networking.gke.io/v1"
INTERNAL_GATEWAY_CLASS = "gke-l7-rilb"
ALLOW_EXTERNAL_GATEWAY_ANNOTATION = "llm-serving/allow-external-gateway"
# inferencepool chart v1.4.0 defaults: ext_proc (endpointPickerRef.port) and the EPP's gRPC health port.
EPP_EXT_PROC_PORT = 9002
EPP_HEALTH_PORT = 9003
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
HEALTH_PATH = "/health"
EPP_METRICS_PORT = "metrics"
EPP_METRICS_INTERVAL = "10s"
# Autopilot provisions a node for the 10-CPU EPP before the release is ready.
EPP_INSTALL_TIMEOUT_SECONDS = 900
GATEWAY_PROGRAMMED_TIMEOUT_SECONDS = 1200
# Names the proxy-only subnet the Gateway relies on when the stack reuses one instead of declaring it.
REUSED_PROXY_SUBNET_ANNOTATION = "llm-serving/proxy-only-subnet"


@dataclass(frozen=True)
class InferenceGatewayArgs:
    project: str
    region: str
    cluster_name: str
    network: pulumi.Input[str]
    pods_cidr: str
    namespace: pulumi.Input[str]
    pool_name: str
    pod_labels: dict[str, str]
    serving_port: int
    served_model_name: str
    gateway_class: str
    proxy_subnet_cidr: str
    existing_proxy_subnet: str | None
    epp_chart_version: str
    epp_cpu: str
    epp_memory: str
    request_timeout_seconds: int
    allow_external: bool = False
    kubernetes_labels: dict[str, str] = field(default_factory=dict)


def epp_name(pool_name: str) -> str:
    """The chart's name for the EPP Deployment, Service and pod label (`<release>-epp`)."""
    return f"{pool_name}-epp"


def proxy_subnet_name(cluster_name: str) -> str:
    return f"{cluster_name}-proxy-only"


def firewall_name(cluster_name: str) -> str:
    return f"{cluster_name}-gateway-to-serving"


def epp_firewall_name(cluster_name: str) -> str:
    return f"{cluster_name}-gateway-to-epp"


def epp_chart_values(args: InferenceGatewayArgs) -> dict[str, Any]:
    """Values of the inferencepool chart v1.3-v1.5 (renamed from v1.6 on)."""
    epp_resources = {"cpu": args.epp_cpu, "memory": args.epp_memory}
    return {
        "inferencePool": {
            "modelServers": {"matchLabels": dict(args.pod_labels)},
            "targetPorts": [{"number": args.serving_port}],
            "modelServerType": "vllm",
        },
        "inferenceExtension": {
            "resources": {"requests": epp_resources, "limits": epp_resources},
            # Unauthenticated /metrics lets the stack's PodMonitoring scrape the EPP without the
            # token Secret and RBAC the chart only renders for provider gke.
            "monitoring": {"prometheus": {"auth": {"enabled": False}}},
        },
        "provider": {"name": "none"},
    }


def curl_example(address_command: str, namespace: str, model: str, internal: bool) -> str:
    request = chat_request_curl_args(f"http://$({address_command})", model)
    if internal:
        # An internal Gateway's address is reachable only from the VPC: send the request from a pod.
        return f"kubectl run gateway-curl -n {namespace} --rm -i --restart=Never --image=curlimages/curl -- {request}"
    return f"curl {request}"


class InferenceGateway(pulumi.ComponentResource):
    proxy_subnet: gcp.compute.Subnetwork | None
    firewall: gcp.compute.Firewall
    epp_firewall: gcp.compute.Firewall
    crds: CrdReadiness
    endpoint_picker: k8s.helm.v3.Release
    gateway: k8s.apiextensions.CustomResource
    route: k8s.apiextensions.CustomResource
    health_check_policy: k8s.apiextensions.CustomResource
    backend_policy: k8s.apiextensions.CustomResource
    epp_monitoring: k8s.apiextensions.CustomResource
    address_command: pulumi.Output[str]
    try_it: pulumi.Output[str]

    def __init__(self, name: str, args: InferenceGatewayArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llm-serving:routing:InferenceGateway", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        # Fixed GCP names: replace by deleting first, or GCP refuses the new one (409 alreadyExists).
        named = pulumi.ResourceOptions(parent=self, delete_before_replace=True)

        declared_proxy_subnet = proxy_subnet_name(args.cluster_name)
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
                f"{args.proxy_subnet_cidr}) and Google health checks to the vLLM pods on port {args.serving_port}"
            ),
            direction="INGRESS",
            source_ranges=[args.proxy_subnet_cidr, *HEALTH_CHECK_RANGES],
            destination_ranges=[args.pods_cidr],
            allows=[gcp.compute.FirewallAllowArgs(protocol="tcp", ports=[str(args.serving_port)])],
            opts=named,
        )
        self.epp_firewall = gcp.compute.Firewall(
            f"{name}-epp-firewall",
            name=epp_firewall_name(args.cluster_name),
            project=args.project,
            network=args.network,
            description=(
                f"Inference Gateway proxies ({args.proxy_subnet_cidr}) to the Endpoint Picker's ext_proc port "
                f"{EPP_EXT_PROC_PORT} and Google health checks to its gRPC health port {EPP_HEALTH_PORT}; "
                "without it the pool's FailOpen bypasses the EPP"
            ),
            direction="INGRESS",
            source_ranges=[args.proxy_subnet_cidr, *HEALTH_CHECK_RANGES],
            destination_ranges=[args.pods_cidr],
            allows=[
                gcp.compute.FirewallAllowArgs(protocol="tcp", ports=[str(EPP_EXT_PROC_PORT), str(EPP_HEALTH_PORT)])
            ],
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
        after_crds = pulumi.ResourceOptions(parent=self, depends_on=[self.crds.job])

        def metadata(object_name: str) -> k8s.meta.v1.ObjectMetaArgs:
            return k8s.meta.v1.ObjectMetaArgs(name=object_name, namespace=args.namespace, labels=args.kubernetes_labels)

        self.endpoint_picker = k8s.helm.v3.Release(
            f"{name}-epp",
            name=args.pool_name,
            chart=EPP_CHART,
            version=args.epp_chart_version,
            namespace=args.namespace,
            values=epp_chart_values(args),
            timeout=EPP_INSTALL_TIMEOUT_SECONDS,
            opts=after_crds,
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
                "listeners": [{"name": "http", "protocol": "HTTP", "port": LISTENER_PORT}],
            },
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=[self.crds.job, self.epp_firewall, *([self.proxy_subnet] if self.proxy_subnet else [])],
            ),
        )
        pool_ref = {"group": INFERENCE_POOL_API, "kind": "InferencePool", "name": args.pool_name}
        after_pool = pulumi.ResourceOptions(parent=self, depends_on=[self.crds.job, self.endpoint_picker])
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
        self.health_check_policy = k8s.apiextensions.CustomResource(
            f"{name}-health-check",
            api_version=GKE_POLICY_API_VERSION,
            kind="HealthCheckPolicy",
            metadata=metadata(args.pool_name),
            spec={
                "targetRef": pool_ref,
                "default": {
                    "config": {
                        "type": "HTTP",
                        "httpHealthCheck": {
                            "requestPath": HEALTH_PATH,
                            "portSpecification": "USE_FIXED_PORT",
                            "port": args.serving_port,
                        },
                    }
                },
            },
            opts=after_pool,
        )
        # GKE rejects HTTPRoute timeouts; the backend service timeout must outlast a whole generation.
        self.backend_policy = k8s.apiextensions.CustomResource(
            f"{name}-backend-policy",
            api_version=GKE_POLICY_API_VERSION,
            kind="GCPBackendPolicy",
            metadata=metadata(args.pool_name),
            spec={"targetRef": pool_ref, "default": {"timeoutSec": args.request_timeout_seconds}},
            opts=after_pool,
        )
        self.epp_monitoring = k8s.apiextensions.CustomResource(
            f"{name}-epp-monitoring",
            api_version="monitoring.googleapis.com/v1",
            kind="PodMonitoring",
            metadata=metadata(epp_name(args.pool_name)),
            spec={
                "selector": {"matchLabels": {"inferencepool": epp_name(args.pool_name)}},
                "endpoints": [{"port": EPP_METRICS_PORT, "path": "/metrics", "interval": EPP_METRICS_INTERVAL}],
            },
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
            )
        )
        self.register_outputs(
            {
                "gatewayName": self.gateway.metadata.apply(lambda meta: meta["name"]),
                "addressCommand": self.address_command,
                "tryIt": self.try_it,
            }
        )
