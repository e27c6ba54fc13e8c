"""NetworkPolicies of the serving namespace: who may reach the vLLM pods, and where the weight
download Job may go.

- vLLM pods accept connections on the serving ports only from pods of their own namespace (the
  clients the stack runs there, the EPP that scrapes them) and from the Google Managed Prometheus
  collectors (`<name>-ingress`), and from the VPC ranges the routing admits, each group in a policy of
  its own: in gateway mode the load balancer's proxy-only subnet and Google's health checkers
  (`<name>-ingress-gateway`), in clusterip mode with the internal load balancer its client ranges (the
  Service's loadBalancerSourceRanges; externalTrafficPolicy Local keeps the client address,
  components/routing.py; `<name>-ingress-load-balancer`). NetworkPolicies that select a pod add up
  (Kubernetes "Network Policies": "Network policies do not conflict; they are additive"), so a routing
  switch admits both fronts until the old one is deleted at the end of the update. Nothing else in the
  cluster or the VPC reaches them.
- The download Job (it holds the Hugging Face token) may only resolve names and open HTTPS
  connections outside the private ranges: Hugging Face and its LFS CDN, nothing inside the VPC.

Enforcement: every new Autopilot cluster runs GKE Dataplane V2 (1.22.7-gke.1500 and later), and
with Dataplane V2 "Kubernetes NetworkPolicy is always on", no add-on needed (GKE docs "About GKE
Dataplane V2", "Use GKE Dataplane V2").
Collectors: on Autopilot the managed collectors run in `gke-gmp-system`, on Standard in `gmp-system`
(gateway-api-inference-extension@v1.4.0: config/charts/epplib/templates/_gke.yaml picks
`gke-gmp-system` when `provider.gke.autopilot`); both are allowed so the scrape survives either.
Kubelet probes come from the node and are not subject to these rules on Dataplane V2.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

METRICS_COLLECTOR_NAMESPACES = ("gke-gmp-system", "gmp-system")
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
PRIVATE_RANGES = ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16")
DNS_PORT = 53
HTTPS_PORT = 443


@dataclass(frozen=True)
class ServingNetworkPoliciesArgs:
    namespace: pulumi.Input[str]
    name: str
    serving_selector: dict[str, str]
    # The vLLM servers' ports: engine.port, or one per data-parallel rank (consecutive) in gateway mode.
    serving_ports: tuple[int, ...]
    download_selector: dict[str, str]
    # VPC ranges admitted to the serving ports, each group in a NetworkPolicy of its own (NetworkPolicies add up): the
    # gateway's proxies and health checkers (gateway mode), the internal load balancer's clients (clusterip mode with
    # one). A routing switch creates the new group's policy at once and deletes the old one at the end of the update,
    # with the load balancer it admits (the engine deletes last): one policy whose sources changed had shut the old
    # front's traffic out at once, for the whole roll.
    gateway_source_ranges: tuple[str, ...] = ()
    load_balancer_source_ranges: tuple[str, ...] = ()
    labels: dict[str, str] = field(default_factory=dict)


def port_range(ports: tuple[int, ...]) -> k8s.networking.v1.NetworkPolicyPortArgs:
    """One NetworkPolicy port entry for consecutive ports: `port`, and `endPort` above one port."""
    first, last = min(ports), max(ports)
    assert list(ports) == list(range(first, last + 1)), "serving ports are consecutive"
    return k8s.networking.v1.NetworkPolicyPortArgs(protocol="TCP", port=first, end_port=last if last > first else None)


def dns_and_https_egress(https_except: tuple[str, ...]) -> list[k8s.networking.v1.NetworkPolicyEgressRuleArgs]:
    """Egress to DNS anywhere (Cloud DNS answers from the node's metadata server) and to HTTPS
    outside `https_except`."""
    return [
        k8s.networking.v1.NetworkPolicyEgressRuleArgs(
            ports=[
                k8s.networking.v1.NetworkPolicyPortArgs(protocol="UDP", port=DNS_PORT),
                k8s.networking.v1.NetworkPolicyPortArgs(protocol="TCP", port=DNS_PORT),
            ]
        ),
        k8s.networking.v1.NetworkPolicyEgressRuleArgs(
            to=[
                k8s.networking.v1.NetworkPolicyPeerArgs(
                    ip_block=k8s.networking.v1.IPBlockArgs(cidr="0.0.0.0/0", except_=list(https_except) or None)
                )
            ],
            ports=[k8s.networking.v1.NetworkPolicyPortArgs(protocol="TCP", port=HTTPS_PORT)],
        ),
    ]


class ServingNetworkPolicies(pulumi.ComponentResource):
    TYPE = "llm-serving:serving:NetworkPolicies"
    serving: k8s.networking.v1.NetworkPolicy
    vpc_sources: list[k8s.networking.v1.NetworkPolicy]
    download: k8s.networking.v1.NetworkPolicy

    def __init__(self, name: str, args: ServingNetworkPoliciesArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(self.TYPE, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)

        def metadata(object_name: str) -> k8s.meta.v1.ObjectMetaArgs:
            return k8s.meta.v1.ObjectMetaArgs(name=object_name, namespace=args.namespace, labels=args.labels)

        def ingress(
            resource: str,
            object_name: str,
            peers: list[k8s.networking.v1.NetworkPolicyPeerArgs],
            options: pulumi.ResourceOptions,
        ) -> k8s.networking.v1.NetworkPolicy:
            return k8s.networking.v1.NetworkPolicy(
                resource,
                metadata=metadata(object_name),
                spec=k8s.networking.v1.NetworkPolicySpecArgs(
                    pod_selector=k8s.meta.v1.LabelSelectorArgs(match_labels=args.serving_selector),
                    policy_types=["Ingress"],
                    ingress=[
                        k8s.networking.v1.NetworkPolicyIngressRuleArgs(
                            from_=peers, ports=[port_range(args.serving_ports)]
                        )
                    ],
                ),
                opts=options,
            )

        groups = {"gateway": args.gateway_source_ranges, "load-balancer": args.load_balancer_source_ranges}
        self.vpc_sources = [
            ingress(
                f"{name}-{group}",
                f"{args.name}-ingress-{group}",
                [
                    k8s.networking.v1.NetworkPolicyPeerArgs(ip_block=k8s.networking.v1.IPBlockArgs(cidr=cidr))
                    for cidr in ranges
                ],
                child,
            )
            for group, ranges in groups.items()
            if ranges
        ]
        in_cluster = [
            k8s.networking.v1.NetworkPolicyPeerArgs(pod_selector=k8s.meta.v1.LabelSelectorArgs()),
            k8s.networking.v1.NetworkPolicyPeerArgs(
                namespace_selector=k8s.meta.v1.LabelSelectorArgs(
                    match_expressions=[
                        k8s.meta.v1.LabelSelectorRequirementArgs(
                            key=NAMESPACE_NAME_LABEL, operator="In", values=list(METRICS_COLLECTOR_NAMESPACES)
                        )
                    ]
                )
            ),
        ]
        # after the VPC sources' policies: a stack that had them in this one admits them throughout the update
        self.serving = ingress(
            f"{name}-serving",
            f"{args.name}-ingress",
            in_cluster,
            pulumi.ResourceOptions(parent=self, depends_on=self.vpc_sources),
        )
        self.download = k8s.networking.v1.NetworkPolicy(
            f"{name}-download",
            metadata=metadata(f"{args.name}-weights-download"),
            spec=k8s.networking.v1.NetworkPolicySpecArgs(
                pod_selector=k8s.meta.v1.LabelSelectorArgs(match_labels=args.download_selector),
                policy_types=["Ingress", "Egress"],
                egress=dns_and_https_egress(PRIVATE_RANGES),
            ),
            opts=child,
        )
        self.register_outputs({})
