"""ClusterIP routing: a plain Service that round-robins over the vLLM pods (96.5% scaling
efficiency at 12 nodes in the published benchmark; the default routing mode), and optionally an
internal load balancer in front of the same pods for clients elsewhere in the VPC.

The internal load balancer is a Service of type LoadBalancer with GKE's annotation
`networking.gke.io/load-balancer-type: "Internal"`: GKE creates an internal passthrough Network
Load Balancer, reachable only from the VPC and networks connected to it (GKE "LoadBalancer Service
parameters"; "About LoadBalancer Services": internal when "clients are located in the same VPC
network or in a network connected to the cluster's VPC network"). `loadBalancerSourceRanges`
"configures optional firewall rules in GKE and in the VPC network to only allow certain source
ranges" (same parameters page): GKE writes the VPC firewall rule from them, so the stack declares
no rule of its own for this path (its target is the load balancer's nodes, which GKE knows and the
stack does not). `externalTrafficPolicy: Local` keeps the client's address on the packets ("use
externalTrafficPolicy: Local if ... preserving the original client IP address", "About LoadBalancer
Services"), so the serving NetworkPolicy admits exactly the same ranges
(components/network_policy.py); every A4 node runs one vLLM pod, so Local also balances evenly.
The load balancer's health checks need no place in that policy: with Local they go to the node's
healthCheckNodePort, which the node answers, and GKE writes their firewall rule itself
(kubernetes/ingress-gce pkg/healthchecksl4/healthchecksl4.go EnsureHealthCheckWithFirewall;
pkg/loadbalancers/l4.go ensureIPv4NodesFirewall writes the traffic rule from loadBalancerSourceRanges).
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from components.engine_env_secret import API_KEY_ENV, read_api_key


def chat_request_curl_args(base_url: str, model: str, api_key: bool = False) -> str:
    """curl arguments of a small chat completion against an OpenAI-compatible `base_url`; with
    `api_key`, the bearer token vLLM asks for from $VLLM_API_KEY (see read_api_key)."""
    body = json.dumps(
        {"model": model, "messages": [{"role": "user", "content": "Say hello in one sentence."}], "max_tokens": 64},
        separators=(",", ":"),
    )
    auth = f' -H "Authorization: Bearer ${API_KEY_ENV}"' if api_key else ""
    return f"-sS {base_url}/v1/chat/completions -H 'Content-Type: application/json'{auth} -d {shlex.quote(body)}"


def with_api_key(command: str, namespace: str, api_key_secret: str | None) -> str:
    """`command`, first reading the engine's API key from its Secret when the engine takes one."""
    return command if api_key_secret is None else f"{read_api_key(namespace, api_key_secret)}; {command}"


INTERNAL_LOAD_BALANCER_ANNOTATION = "networking.gke.io/load-balancer-type"
ALLOW_LOAD_BALANCER_ANNOTATION = "llm-serving/allow-load-balancer"


def internal_service_name(service_name: str) -> str:
    return f"{service_name}-internal"


def ingress_ip(status: k8s.core.v1.outputs.ServiceStatus | None) -> str | None:
    """The load balancer's address from a Service's status; None until GKE has assigned one (an
    offline render never has one: `pulumi up` waits for it, pulumi-kubernetes await/service.go)."""
    ingress = status.load_balancer.ingress if status is not None and status.load_balancer is not None else None
    return ingress[0].ip if ingress else None


@dataclass(frozen=True)
class ClusterIpRoutingArgs:
    service_name: str
    namespace: str
    port: int
    target_port: str
    selector: dict[str, str]
    served_model_name: str
    # Client ranges of the internal load balancer; empty: no internal load balancer.
    internal_load_balancer_ranges: tuple[str, ...] = ()
    labels: dict[str, str] = field(default_factory=dict)
    # the Secret holding the engine's API key (VLLM_API_KEY); None: the engine takes no key
    api_key_secret: str | None = None


class ClusterIpRouting(pulumi.ComponentResource):
    TYPE = "llm-serving:routing:ClusterIpRouting"
    service: k8s.core.v1.Service
    internal_service: k8s.core.v1.Service | None
    endpoint: pulumi.Output[str]
    internal_address: pulumi.Output[str | None] | None
    internal_address_command: str | None
    try_it: str

    def __init__(self, name: str, args: ClusterIpRoutingArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(self.TYPE, name, None, opts)
        self.service = k8s.core.v1.Service(
            f"{name}-service",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=args.service_name, namespace=args.namespace, labels={**args.labels, **args.selector}
            ),
            spec=k8s.core.v1.ServiceSpecArgs(
                type="ClusterIP",
                selector=args.selector,
                ports=[
                    k8s.core.v1.ServicePortArgs(
                        name="http", port=args.port, target_port=args.target_port, protocol="TCP"
                    )
                ],
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.internal_service = None
        self.internal_address = None
        self.internal_address_command = None
        if args.internal_load_balancer_ranges:
            internal_name = internal_service_name(args.service_name)
            self.internal_service = k8s.core.v1.Service(
                f"{name}-internal-service",
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=internal_name,
                    namespace=args.namespace,
                    labels={**args.labels, **args.selector},
                    annotations={INTERNAL_LOAD_BALANCER_ANNOTATION: "Internal", ALLOW_LOAD_BALANCER_ANNOTATION: "true"},
                ),
                spec=k8s.core.v1.ServiceSpecArgs(
                    type="LoadBalancer",
                    selector=args.selector,
                    external_traffic_policy="Local",
                    load_balancer_source_ranges=list(args.internal_load_balancer_ranges),
                    ports=[
                        k8s.core.v1.ServicePortArgs(
                            name="http", port=args.port, target_port=args.target_port, protocol="TCP"
                        )
                    ],
                ),
                opts=pulumi.ResourceOptions(parent=self),
            )
            self.internal_address = self.internal_service.status.apply(ingress_ip)
            self.internal_address_command = (
                f"kubectl get service {internal_name} -n {args.namespace} "
                "-o jsonpath='{.status.loadBalancer.ingress[0].ip}'"
            )
        self.endpoint = pulumi.Output.concat(
            "http://",
            self.service.metadata.name,
            ".",
            self.service.metadata.namespace,
            f".svc.cluster.local:{args.port}/v1",
        )
        local = f"http://localhost:{args.port}"
        self.try_it = with_api_key(
            f"kubectl -n {args.namespace} port-forward service/{args.service_name} {args.port}:{args.port} "
            f"& sleep 3; curl {chat_request_curl_args(local, args.served_model_name, args.api_key_secret is not None)}",
            args.namespace,
            args.api_key_secret,
        )
        self.register_outputs(
            {
                "endpoint": self.endpoint,
                "tryIt": self.try_it,
                **({"internalAddress": self.internal_address} if self.internal_address is not None else {}),
            }
        )
