"""The Endpoint Picker (EPP) of the Inference Gateway and the InferencePool it serves, declared as
plain Kubernetes objects translated from llm-d-router's `llm-d-router-gateway` chart.

Source: github.com/llm-d/llm-d-router tag v0.10.0 (commit 71f4f099), `config/charts/
llm-d-router-gateway/templates/*` and its library `config/charts/routerlib/templates/*` (Apache-2.0),
rendered for the values this stack would set: `router.modelServers.{matchLabels, targetPorts,
type: vllm, protocol: http}`, `router.epp.{replicas, resources}`, `router.monitoring.prometheus.auth.
enabled: false`. The release workflow (hack/push-chart.sh) publishes the chart as
oci://ghcr.io/llm-d/charts/llm-d-router-gateway:v0.10.0 with the image
ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.10.0. Each object below names the template it comes
from. Deliberate differences from the chart, each for a reason given where it is made:

- the pods are placed on C4 (the chart has no nodeSelector value, only affinity and tolerations)
  and hardened (non-root, read-only root filesystem, no capabilities; the chart sets none);
- the stack's own NetworkPolicy and PodMonitoring (the chart's GKE monitoring renders only with
  metrics authentication on, routerlib `_gke.yaml`; the stack scrapes /metrics without a token);
- `pulumi up` waits for one Ready pod, not for every replica (leader election: see below);
- the ConfigMap holds the one plugins file the picker reads (`default-plugins.yaml`), not the
  chart's alternative `payload-agnostic.yaml`.

One active picker, the others standby. With more than one replica the chart passes
`--ha-enable-leader-election` (routerlib `_deployment.yaml`): the replicas contend for the Lease
`epp-<namespace>-<pool>.llm-d.ai` (pkg/epp/server/controller_manager.go) and only the leader
answers the gRPC readiness check (cmd/epp/runner/health.go: `readiness`, the empty service name and
the ext_proc service pass only on the leader), so only the leader is in the Service's endpoints
and passes the load balancer's health check on 9003. A standby holds no traffic and shares no
load: it takes over when the leader's lease lapses (it releases it at once on SIGTERM,
`--drain-timeout` 30 s). Every request and streamed token still goes through one pod.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s
import yaml

from components.hardening import non_root_pod_context, restricted_container_context
from components.network_policy import (
    METRICS_COLLECTOR_NAMESPACES,
    NAMESPACE_NAME_LABEL,
    dns_and_https_egress,
    port_range,
)

# The pod annotation naming the ports a pod serves: the picker makes an endpoint of each InferencePool target port
# of a pod that it lists, and of every target port of a pod without it (llm-d-router v0.10.0
# pkg/epp/datastore/datastore.go: activePortsAnnotation, "a comma-separated list of port numbers", and
# extractActivePorts; the legacy key inference.networking.k8s.io/active-ports is read when it is absent).
ACTIVE_PORTS_ANNOTATION = "llm-d.ai/active-ports"
LEGACY_ACTIVE_PORTS_ANNOTATION = "inference.networking.k8s.io/active-ports"

ROUTER_RELEASE = "v0.10.0"
# The release's multi-arch index as one public pin list records it (with its amd64 digest
# sha256:9862ae38...); not pulled here, so unverified: `docker buildx imagetools inspect` confirms it.
EPP_IMAGE = (
    f"ghcr.io/llm-d/llm-d-router-endpoint-picker:{ROUTER_RELEASE}"
    "@sha256:2e516fa1310da7be59b82beb1445362139597d6d553ef04d546716abe3aaaa70"
)
INFERENCE_POOL_API = "inference.networking.k8s.io"
# routerlib _helpers.tpl `llm-d-router.name`: the release name, lower-cased and cut to 40 characters.
RELEASE_NAME_MAX = 40
EXT_PROC_PORT = 9002
HEALTH_PORT = 9003
METRICS_PORT = 9090
METRICS_PORT_NAME = "metrics"
METRICS_INTERVAL = "10s"
CONFIG_DIR = "/config"
PLUGINS_FILE = "default-plugins.yaml"
# distroless/static:nonroot, the image's USER 65532:65532 (Dockerfile.epp at v0.10.0).
RUN_AS_USER = 65532
# routerlib _deployment.yaml (llm-d-router@ebab6879 config/charts/routerlib/templates/_deployment.yaml:13-14):
# "Conservatively, this timeout should mirror the longest grace period of the pods within the pool",
# with 130 s, the grace of the chart's example vLLM pods. The picker takes the chart's 130 s or the
# serving pods' grace when that is longer (600 s on Flex-start or reserved capacity, components/vllm.py).
TERMINATION_GRACE_SECONDS = 130
# Autopilot's Performance class puts each pod on a node of its own, of the machine family the pod
# selects (GKE "Choose compute classes for Autopilot Pods": with Performance a Compute Engine
# machine series may be selected in the same nodeSelector). C4: the write-up's next step for the
# per-token, single-thread ext_proc path was the picker "on faster compute".
PERFORMANCE_COMPUTE_CLASS = "Performance"
MACHINE_FAMILY = "c4"
# A new C4 node per replica comes up before the picker can be ready.
READY_TIMEOUT_SECONDS = 900
# checkov CKV_K8S_38: the picker watches pods, the InferencePool and (with standbys) its Lease through the API.
TOKEN_SKIP = "CKV_K8S_38=the picker watches pods, its InferencePool and its Lease through the API"
CPU_LIMIT_SKIP = "CKV_K8S_11=no CPU limit: a CFS quota would throttle the one active picker, as llm-d-router's chart"


def epp_name(pool_name: str) -> str:
    """routerlib _helpers.tpl `llm-d-router.name`: the EPP's Deployment, Service, ConfigMap and
    ServiceAccount name."""
    return f"{pool_name.lower().strip()[:RELEASE_NAME_MAX]}-epp"


def selector_labels(pool_name: str) -> dict[str, str]:
    """routerlib _helpers.tpl `llm-d-router.selectorLabels` (gateway mode): the pods' and Service's selector."""
    return {"llm-d-router-gateway": epp_name(pool_name)}


def chart_labels(pool_name: str) -> dict[str, str]:
    """routerlib _helpers.tpl `llm-d-router.labels` (the chart's appVersion, set by the release)."""
    return {"app.kubernetes.io/name": epp_name(pool_name), "app.kubernetes.io/version": ROUTER_RELEASE}


MODE_LABELS = {"llm-d.ai/igw-mode": "llm-d-router-gateway"}


def plugins_config() -> str:
    """routerlib _config.yaml `default-plugins.yaml` for `type: vllm`, `protocol: http`, no
    parsers and no latency predictor."""
    return yaml.safe_dump(
        {
            "apiVersion": "llm-d.ai/v1alpha1",
            "kind": "EndpointPickerConfig",
            "plugins": [
                {"type": "queue-scorer"},
                {"type": "kv-cache-utilization-scorer"},
                {"type": "prefix-cache-scorer"},
                {
                    "type": "metrics-data-source",
                    "parameters": {"scheme": "http", "path": "/metrics", "insecureSkipVerify": True},
                },
                {"type": "core-metrics-extractor"},
            ],
            "schedulingProfiles": [
                {
                    "name": "default",
                    "plugins": [
                        {"pluginRef": "queue-scorer", "weight": 2},
                        {"pluginRef": "kv-cache-utilization-scorer", "weight": 2},
                        {"pluginRef": "prefix-cache-scorer", "weight": 3},
                    ],
                }
            ],
        },
        sort_keys=False,
    )


def leader_election(replicas: int) -> bool:
    """routerlib _deployment.yaml: the chart turns leader election on above one replica."""
    return replicas > 1


def picker_args(pool_name: str, namespace: pulumi.Input[str], replicas: int) -> list[pulumi.Input[str]]:
    """routerlib _deployment.yaml `epp` container args (InferencePool mode)."""
    return [
        "--pool-name",
        pool_name,
        "--pool-namespace",
        namespace,
        "--pool-group",
        INFERENCE_POOL_API,
        "--zap-encoder",
        "json",
        "--config-file",
        f"{CONFIG_DIR}/{PLUGINS_FILE}",
        *(["--ha-enable-leader-election"] if leader_election(replicas) else []),
        "--grpc-health-port",
        str(HEALTH_PORT),
        "--tracing=false",
        "--metrics-endpoint-auth=false",
    ]


def ready_condition(replicas: int) -> str:
    """`pulumi.com/waitFor` for the Deployment: every pod on the current template and one Ready.

    The provider's own Deployment await wants every replica Available, which a standby never is
    (only the leader passes readiness): `pulumi up` would wait until its timeout. A waitFor
    annotation replaces that await, and a JSON list must hold in full; a JSONPath condition is
    checked only once the status' observedGeneration is current (pulumi/pulumi-kubernetes@94977969
    (v4.32.0 +27): provider/pkg/metadata/overrides.go ReadyCondition, provider/pkg/await/await.go
    "built-in await logic only if the user hasn't specified any await overrides",
    provider/pkg/await/condition/jsonpath.go). Under the Recreate strategy the old pods are gone
    before the new ReplicaSet exists, so a Ready pod counted here is a new one. Not checked at
    the pinned v4.34.2 itself (the stored snapshot ends before it).
    """
    return json.dumps([f"jsonpath={{.status.updatedReplicas}}={replicas}", "jsonpath={.status.readyReplicas}=1"])


@dataclass(frozen=True)
class EndpointPickerArgs:
    namespace: pulumi.Input[str]
    pool_name: str
    pod_labels: dict[str, str]
    # The vLLM servers' ports, one per data-parallel rank: each is an endpoint of the pool.
    serving_ports: tuple[int, ...]
    image: str
    replicas: int
    cpu: str
    memory: str
    # The load balancer's proxies and health checkers: ext_proc and gRPC health come from them.
    load_balancer_ranges: tuple[str, ...]
    # The termination grace of the pool's pods (the serving pods)
    pool_grace_seconds: int
    # The objects are created after these (the Job that waits for GKE's CRDs).
    after: Sequence[pulumi.Resource] = ()
    labels: dict[str, str] = field(default_factory=dict)


class EndpointPicker(pulumi.ComponentResource):
    TYPE = "llm-serving:routing:EndpointPicker"
    service_account: k8s.core.v1.ServiceAccount
    roles: list[k8s.rbac.v1.Role]
    role_bindings: list[k8s.rbac.v1.RoleBinding]
    config: k8s.core.v1.ConfigMap
    deployment: k8s.apps.v1.Deployment
    service: k8s.core.v1.Service
    network_policy: k8s.networking.v1.NetworkPolicy
    pool: k8s.apiextensions.CustomResource
    monitoring: k8s.apiextensions.CustomResource

    def __init__(self, name: str, args: EndpointPickerArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(self.TYPE, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        picker = epp_name(args.pool_name)
        labels = {**args.labels, **chart_labels(args.pool_name)}
        selector = selector_labels(args.pool_name)

        def metadata(object_name: str) -> k8s.meta.v1.ObjectMetaArgs:
            return k8s.meta.v1.ObjectMetaArgs(name=object_name, namespace=args.namespace, labels=labels)

        # routerlib _rbac.yaml
        self.service_account = k8s.core.v1.ServiceAccount(f"{name}-sa", metadata=metadata(picker), opts=child)
        subject = k8s.rbac.v1.SubjectArgs(kind="ServiceAccount", name=picker, namespace=args.namespace)
        rules = {
            # routerlib _rbac.yaml: the picker watches the pool's pods.
            f"{picker}-sa": [
                k8s.rbac.v1.PolicyRuleArgs(api_groups=[""], resources=["pods"], verbs=["get", "watch", "list"])
            ],
            # llm-d-router-gateway templates/rbac.yaml
            f"{picker}-non-sa": [
                k8s.rbac.v1.PolicyRuleArgs(
                    api_groups=["inference.networking.x-k8s.io"],
                    resources=["inferenceobjectives", "inferencemodelrewrites"],
                    verbs=["get", "watch", "list"],
                ),
                k8s.rbac.v1.PolicyRuleArgs(
                    api_groups=["llm-d.ai"],
                    resources=["inferenceobjectives", "inferencemodelrewrites"],
                    verbs=["get", "watch", "list"],
                ),
                k8s.rbac.v1.PolicyRuleArgs(
                    api_groups=[INFERENCE_POOL_API], resources=["inferencepools"], verbs=["get", "watch", "list"]
                ),
            ],
        }
        if leader_election(args.replicas):
            # routerlib _leader-election-rbac.yaml
            rules[f"{picker}-leader-election"] = [
                k8s.rbac.v1.PolicyRuleArgs(
                    api_groups=["coordination.k8s.io"],
                    resources=["leases"],
                    verbs=["get", "list", "watch", "create", "update", "patch", "delete"],
                ),
                k8s.rbac.v1.PolicyRuleArgs(api_groups=[""], resources=["events"], verbs=["create", "patch"]),
            ]
        self.roles, self.role_bindings = [], []
        for role_name, role_rules in rules.items():
            suffix = role_name.removeprefix(picker)
            role = k8s.rbac.v1.Role(f"{name}-role{suffix}", metadata=metadata(role_name), rules=role_rules, opts=child)
            # The chart names the leader-election binding `-leader-election-binding` and leaves its
            # subject's namespace out (a RoleBinding's own namespace then applies); set here explicitly.
            binding_name = f"{role_name}-binding" if suffix == "-leader-election" else role_name
            self.roles.append(role)
            self.role_bindings.append(
                k8s.rbac.v1.RoleBinding(
                    f"{name}-binding{suffix}",
                    metadata=metadata(binding_name),
                    role_ref=k8s.rbac.v1.RoleRefArgs(
                        api_group="rbac.authorization.k8s.io", kind="Role", name=role_name
                    ),
                    subjects=[subject],
                    opts=child,
                )
            )

        # routerlib _config.yaml
        self.config = k8s.core.v1.ConfigMap(
            f"{name}-config", metadata=metadata(picker), data={PLUGINS_FILE: plugins_config()}, opts=child
        )

        # No CPU limit: the picker's per-request ext_proc work comes in bursts, and a CFS quota would
        # throttle the one active leader in them; memory stays capped. llm-d-router's chart sets the same
        # ("EPP container resources: CPU limits unset for burst capacity, memory capped at 16Gi",
        # config/charts/routerlib/values.yaml at llm-d-router@17a368a5). The CPU request still sizes the node.
        requests = {"cpu": args.cpu, "memory": args.memory}
        limits = {"memory": args.memory}
        # A digest never moves: IfNotPresent as the released chart sets; a bare tag is pulled each time.
        pull_policy = "IfNotPresent" if "@sha256:" in args.image else "Always"
        grpc_probe_services = (
            ("liveness", "readiness") if leader_election(args.replicas) else ("inference-extension",) * 2
        )
        # routerlib _deployment.yaml (Deployment, strategy Recreate: a rolling update could never
        # take the old leader down with one Ready pod of two)
        self.deployment = k8s.apps.v1.Deployment(
            f"{name}-deployment",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=picker,
                namespace=args.namespace,
                labels={**labels, **MODE_LABELS},
                annotations={
                    "pulumi.com/waitFor": ready_condition(args.replicas),
                    "pulumi.com/timeoutSeconds": str(READY_TIMEOUT_SECONDS),
                    "checkov.io/skip1": TOKEN_SKIP,
                    "checkov.io/skip2": CPU_LIMIT_SKIP,
                },
            ),
            spec=k8s.apps.v1.DeploymentSpecArgs(
                replicas=args.replicas,
                strategy=k8s.apps.v1.DeploymentStrategyArgs(type="Recreate"),
                selector=k8s.meta.v1.LabelSelectorArgs(match_labels=selector),
                template=k8s.core.v1.PodTemplateSpecArgs(
                    metadata=k8s.meta.v1.ObjectMetaArgs(labels={**args.labels, **selector, **MODE_LABELS}),
                    spec=k8s.core.v1.PodSpecArgs(
                        service_account_name=picker,
                        termination_grace_period_seconds=max(TERMINATION_GRACE_SECONDS, args.pool_grace_seconds),
                        node_selector={
                            "cloud.google.com/compute-class": PERFORMANCE_COMPUTE_CLASS,
                            "cloud.google.com/machine-family": MACHINE_FAMILY,
                        },
                        security_context=non_root_pod_context(RUN_AS_USER),
                        containers=[
                            k8s.core.v1.ContainerArgs(
                                name="epp",
                                image=args.image,
                                image_pull_policy=pull_policy,
                                args=picker_args(args.pool_name, args.namespace, args.replicas),
                                resources=k8s.core.v1.ResourceRequirementsArgs(requests=requests, limits=limits),
                                ports=[
                                    k8s.core.v1.ContainerPortArgs(name="grpc", container_port=EXT_PROC_PORT),
                                    k8s.core.v1.ContainerPortArgs(name="grpc-health", container_port=HEALTH_PORT),
                                    k8s.core.v1.ContainerPortArgs(name=METRICS_PORT_NAME, container_port=METRICS_PORT),
                                ],
                                liveness_probe=k8s.core.v1.ProbeArgs(
                                    grpc=k8s.core.v1.GRPCActionArgs(port=HEALTH_PORT, service=grpc_probe_services[0]),
                                    initial_delay_seconds=5,
                                    period_seconds=10,
                                ),
                                readiness_probe=k8s.core.v1.ProbeArgs(
                                    grpc=k8s.core.v1.GRPCActionArgs(port=HEALTH_PORT, service=grpc_probe_services[1]),
                                    period_seconds=2,
                                ),
                                env=[
                                    k8s.core.v1.EnvVarArgs(
                                        name="NAMESPACE",
                                        value_from=k8s.core.v1.EnvVarSourceArgs(
                                            field_ref=k8s.core.v1.ObjectFieldSelectorArgs(
                                                field_path="metadata.namespace"
                                            )
                                        ),
                                    ),
                                    k8s.core.v1.EnvVarArgs(
                                        name="POD_NAME",
                                        value_from=k8s.core.v1.EnvVarSourceArgs(
                                            field_ref=k8s.core.v1.ObjectFieldSelectorArgs(field_path="metadata.name")
                                        ),
                                    ),
                                ],
                                volume_mounts=[
                                    k8s.core.v1.VolumeMountArgs(
                                        name="plugins-config-volume", mount_path=CONFIG_DIR, read_only=True
                                    )
                                ],
                                # The picker writes no file: its TLS certificate is made in memory
                                # (internal/tls/tls.go), nothing under cmd/epp or pkg/epp writes to disk.
                                security_context=restricted_container_context(),
                            )
                        ],
                        volumes=[
                            k8s.core.v1.VolumeArgs(
                                name="plugins-config-volume",
                                config_map=k8s.core.v1.ConfigMapVolumeSourceArgs(name=picker),
                            )
                        ],
                    ),
                ),
            ),
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=[*args.after, self.config, self.service_account, *self.role_bindings],
            ),
        )

        # routerlib _service.yaml: the pool's endpointPickerRef names this Service; only the leader
        # is Ready, so only the leader is behind it.
        self.service = k8s.core.v1.Service(
            f"{name}-service",
            metadata=metadata(picker),
            spec=k8s.core.v1.ServiceSpecArgs(
                type="ClusterIP",
                selector=selector,
                ports=[
                    k8s.core.v1.ServicePortArgs(
                        name="grpc-ext-proc", protocol="TCP", port=EXT_PROC_PORT, app_protocol="kubernetes.io/h2c"
                    ),
                    k8s.core.v1.ServicePortArgs(name="http-metrics", protocol="TCP", port=METRICS_PORT),
                ],
            ),
            opts=child,
        )

        # Ingress: ext_proc and gRPC health from the load balancer (the same sources and ports as
        # the EPP firewall rule), /metrics from the managed collectors. Egress: DNS, the API server
        # (HTTPS) and the vLLM pods' /metrics on the serving port.
        self.network_policy = k8s.networking.v1.NetworkPolicy(
            f"{name}-network-policy",
            metadata=metadata(picker),
            spec=k8s.networking.v1.NetworkPolicySpecArgs(
                pod_selector=k8s.meta.v1.LabelSelectorArgs(match_labels=selector),
                policy_types=["Ingress", "Egress"],
                ingress=[
                    k8s.networking.v1.NetworkPolicyIngressRuleArgs(
                        from_=[
                            k8s.networking.v1.NetworkPolicyPeerArgs(ip_block=k8s.networking.v1.IPBlockArgs(cidr=cidr))
                            for cidr in args.load_balancer_ranges
                        ],
                        ports=[
                            k8s.networking.v1.NetworkPolicyPortArgs(protocol="TCP", port=EXT_PROC_PORT),
                            k8s.networking.v1.NetworkPolicyPortArgs(protocol="TCP", port=HEALTH_PORT),
                        ],
                    ),
                    k8s.networking.v1.NetworkPolicyIngressRuleArgs(
                        from_=[
                            k8s.networking.v1.NetworkPolicyPeerArgs(
                                namespace_selector=k8s.meta.v1.LabelSelectorArgs(
                                    match_expressions=[
                                        k8s.meta.v1.LabelSelectorRequirementArgs(
                                            key=NAMESPACE_NAME_LABEL,
                                            operator="In",
                                            values=list(METRICS_COLLECTOR_NAMESPACES),
                                        )
                                    ]
                                )
                            )
                        ],
                        ports=[k8s.networking.v1.NetworkPolicyPortArgs(protocol="TCP", port=METRICS_PORT)],
                    ),
                ],
                egress=[
                    *dns_and_https_egress(()),
                    k8s.networking.v1.NetworkPolicyEgressRuleArgs(
                        to=[
                            k8s.networking.v1.NetworkPolicyPeerArgs(
                                pod_selector=k8s.meta.v1.LabelSelectorArgs(match_labels=args.pod_labels)
                            )
                        ],
                        ports=[port_range(args.serving_ports)],
                    ),
                ],
            ),
            opts=child,
        )

        # routerlib _inferencepool.yaml (GKE installs the CRD from 1.34.0-gke.1626000)
        self.pool = k8s.apiextensions.CustomResource(
            f"{name}-pool",
            api_version=f"{INFERENCE_POOL_API}/v1",
            kind="InferencePool",
            metadata=metadata(args.pool_name),
            spec={
                # One endpoint per port: the picker names them <pod>-rank-<index>, reads each one's
                # /metrics on its own port and scores each on its own (llm-d-router
                # pkg/epp/.../pod_discovery `podToEndpointMetadata`: MetricsHost podIP:port), so queue,
                # KV-cache and prefix-cache scores are those of one engine. InferencePool v1 allows 1-8.
                "targetPorts": [{"number": port} for port in args.serving_ports],
                "appProtocol": "http",
                "selector": {"matchLabels": dict(args.pod_labels)},
                "endpointPickerRef": {"name": picker, "port": {"number": EXT_PROC_PORT}, "failureMode": "FailOpen"},
            },
            opts=pulumi.ResourceOptions(parent=self, depends_on=[*args.after]),
        )

        # In place of routerlib _gke.yaml's PodMonitoring (rendered only with metrics authentication).
        self.monitoring = k8s.apiextensions.CustomResource(
            f"{name}-monitoring",
            api_version="monitoring.googleapis.com/v1",
            kind="PodMonitoring",
            metadata=metadata(picker),
            spec={
                "selector": {"matchLabels": selector},
                "endpoints": [{"port": METRICS_PORT_NAME, "path": "/metrics", "interval": METRICS_INTERVAL}],
            },
            opts=pulumi.ResourceOptions(parent=self, depends_on=[*args.after]),
        )
        self.register_outputs({"pool": self.pool.metadata.apply(lambda meta: meta["name"])})
