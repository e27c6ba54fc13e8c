"""Queue-depth autoscaling: the Custom Metrics Stackdriver Adapter and the serving pods' HPA.

GKE documents autoscaling LLM servers on GPUs with the Horizontal Pod Autoscaler fed by Managed
Service for Prometheus through the Custom Metrics Stackdriver Adapter ("Configure autoscaling for
LLM workloads on GPUs with GKE"); KEDA is not a GKE-managed or GKE-documented path on Autopilot,
and the adapter needs no CRDs. The adapter objects are those of
GoogleCloudPlatform/k8s-stackdriver custom-metrics-stackdriver-adapter/deploy/production/
adapter_new_resource_model.yaml (commit 673c7dd8), declared here so that the render shows them.

The adapter sums the time series of one pod (`translator/response_translator.go`,
getMetricValuesFromResponse), so with data parallel 8 a pod's `vllm:num_requests_waiting` is the
sum over its eight engines and its `vllm:kv_cache_usage_perc` the sum of eight fractions.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from components.cluster import workload_identity_principal

ADAPTER_NAMESPACE = "custom-metrics"
ADAPTER_NAME = "custom-metrics-stackdriver-adapter"
# The tag of the upstream manifest; the manifest publishes no digest and none can be resolved offline.
ADAPTER_IMAGE = "gcr.io/gke-release/custom-metrics-stackdriver-adapter:v0.16.9-gke.0"
ADAPTER_ROLE = "roles/monitoring.viewer"
ADAPTER_LABELS = {"run": ADAPTER_NAME, "k8s-app": ADAPTER_NAME}
# checkov findings the upstream adapter cannot avoid, annotated on its objects (tests/policies/test_checkov.py).
ADAPTER_SKIPS = (
    "CKV_K8S_38=the adapter reads pods and nodes and delegates authentication with its service account token",
    "CKV_K8S_23=the upstream image (gcr.io/distroless/static) runs as root: it binds 443, the port the GKE "
    "control plane reaches on nodes, and writes its self-signed serving certificate in its working directory",
    "CKV_K8S_40=runs as root, see CKV_K8S_23",
    "CKV_K8S_22=writes its self-signed serving certificate in its working directory on the root filesystem",
    "CKV_K8S_37=keeps only NET_BIND_SERVICE, to bind 443",
    "CKV_K8S_25=adds back NET_BIND_SERVICE alone, to bind 443",
    "CKV_K8S_43=the upstream manifest pins a tag only; no digest could be resolved offline",
)
EXTERNAL_METRICS_SKIPS = (
    "CKV_K8S_49=upstream role: the HPA controller reads external metrics, whose resource names are metric names",
    "CKV2_K8S_5=grants only external.metrics.k8s.io (metric values) to the HPA controller, no secrets",
)
ADAPTER_PORT = 443
METRICS_API_GROUPS = (
    ("v1beta1", "custom.metrics.k8s.io", 100),
    ("v1beta2", "custom.metrics.k8s.io", 200),
    ("v1beta1", "external.metrics.k8s.io", 100),
)


def checkov_skips(skips: tuple[str, ...]) -> dict[str, str]:
    return {f"checkov.io/skip{index}": skip for index, skip in enumerate(skips, start=1)}


@dataclass(frozen=True)
class MetricsAdapterArgs:
    project: str
    project_number: pulumi.Input[str]
    # The cluster's pool (<project>.svc.id.goog): taking it from the cluster orders the binding after
    # the cluster, before which IAM refuses the principal.
    workload_pool: pulumi.Input[str]
    labels: dict[str, str] = field(default_factory=dict)
    # `destroy` leaves every object (a cluster the stack does not manage: others may read the adapter).
    retain_on_delete: bool = False


class MetricsAdapter(pulumi.ComponentResource):
    """Serves custom.metrics.k8s.io and external.metrics.k8s.io from Cloud Monitoring."""

    TYPE = "llm-serving:operations:MetricsAdapter"

    namespace: k8s.core.v1.Namespace
    service_account: k8s.core.v1.ServiceAccount
    iam_member: gcp.projects.IAMMember
    deployment: k8s.apps.v1.Deployment
    network_policy: k8s.networking.v1.NetworkPolicy
    service: k8s.core.v1.Service
    api_services: list[k8s.apiregistration.v1.APIService]

    def __init__(self, name: str, args: MetricsAdapterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(self.TYPE, name, None, opts)
        # The engine does not pass retainOnDelete from a component to its children: each child states it.
        retain = args.retain_on_delete or None
        child = pulumi.ResourceOptions(parent=self, retain_on_delete=retain)
        labels = {**args.labels, **ADAPTER_LABELS}
        subject = k8s.rbac.v1.SubjectArgs(kind="ServiceAccount", name=ADAPTER_NAME, namespace=ADAPTER_NAMESPACE)

        self.namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=ADAPTER_NAMESPACE, labels=args.labels),
            opts=child,
        )
        in_namespace = pulumi.ResourceOptions(parent=self, depends_on=[self.namespace], retain_on_delete=retain)
        self.service_account = k8s.core.v1.ServiceAccount(
            f"{name}-sa",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=ADAPTER_NAME, namespace=ADAPTER_NAMESPACE, labels=labels),
            opts=in_namespace,
        )
        # Workload Identity Federation: the KSA itself is the principal; no Google service account.
        self.iam_member = gcp.projects.IAMMember(
            f"{name}-monitoring-viewer",
            project=args.project,
            role=ADAPTER_ROLE,
            member=pulumi.Output.all(args.project_number, args.workload_pool).apply(
                lambda parts: workload_identity_principal(str(parts[0]), str(parts[1]), ADAPTER_NAMESPACE, ADAPTER_NAME)
            ),
            opts=child,
        )
        self.rbac = [
            k8s.rbac.v1.ClusterRoleBinding(
                f"{name}-auth-delegator",
                metadata=k8s.meta.v1.ObjectMetaArgs(name="custom-metrics:system:auth-delegator", labels=labels),
                role_ref=k8s.rbac.v1.RoleRefArgs(
                    api_group="rbac.authorization.k8s.io", kind="ClusterRole", name="system:auth-delegator"
                ),
                subjects=[subject],
                opts=child,
            ),
            k8s.rbac.v1.RoleBinding(
                f"{name}-auth-reader",
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name="custom-metrics-auth-reader", namespace="kube-system", labels=labels
                ),
                role_ref=k8s.rbac.v1.RoleRefArgs(
                    api_group="rbac.authorization.k8s.io", kind="Role", name="extension-apiserver-authentication-reader"
                ),
                subjects=[subject],
                opts=child,
            ),
        ]
        resource_reader = k8s.rbac.v1.ClusterRole(
            f"{name}-resource-reader",
            metadata=k8s.meta.v1.ObjectMetaArgs(name="custom-metrics-resource-reader", labels=labels),
            rules=[
                k8s.rbac.v1.PolicyRuleArgs(
                    api_groups=[""], resources=["pods", "nodes", "nodes/stats"], verbs=["get", "list", "watch"]
                )
            ],
            opts=child,
        )
        self.rbac.append(
            k8s.rbac.v1.ClusterRoleBinding(
                f"{name}-resource-reader-binding",
                metadata=k8s.meta.v1.ObjectMetaArgs(name="custom-metrics-resource-reader", labels=labels),
                role_ref=k8s.rbac.v1.RoleRefArgs(
                    api_group="rbac.authorization.k8s.io", kind="ClusterRole", name=resource_reader.metadata.name
                ),
                subjects=[subject],
                opts=child,
            )
        )
        external_reader = k8s.rbac.v1.ClusterRole(
            f"{name}-external-metrics-reader",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name="external-metrics-reader", labels=labels, annotations=checkov_skips(EXTERNAL_METRICS_SKIPS)
            ),
            rules=[
                k8s.rbac.v1.PolicyRuleArgs(
                    api_groups=["external.metrics.k8s.io"], resources=["*"], verbs=["list", "get", "watch"]
                )
            ],
            opts=child,
        )
        self.rbac.append(
            k8s.rbac.v1.ClusterRoleBinding(
                f"{name}-external-metrics-reader-binding",
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name="external-metrics-reader", labels=labels, annotations=checkov_skips(EXTERNAL_METRICS_SKIPS)
                ),
                role_ref=k8s.rbac.v1.RoleRefArgs(
                    api_group="rbac.authorization.k8s.io", kind="ClusterRole", name=external_reader.metadata.name
                ),
                subjects=[
                    k8s.rbac.v1.SubjectArgs(
                        kind="ServiceAccount", name="horizontal-pod-autoscaler", namespace="kube-system"
                    )
                ],
                opts=child,
            )
        )
        health = k8s.core.v1.HTTPGetActionArgs(path="/healthz", port=ADAPTER_PORT, scheme="HTTPS")
        self.deployment = k8s.apps.v1.Deployment(
            f"{name}-deployment",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=ADAPTER_NAME,
                namespace=ADAPTER_NAMESPACE,
                labels=labels,
                annotations=checkov_skips(ADAPTER_SKIPS),
            ),
            spec=k8s.apps.v1.DeploymentSpecArgs(
                replicas=1,
                selector=k8s.meta.v1.LabelSelectorArgs(match_labels=ADAPTER_LABELS),
                template=k8s.core.v1.PodTemplateSpecArgs(
                    metadata=k8s.meta.v1.ObjectMetaArgs(
                        labels={**labels, "kubernetes.io/cluster-service": "true"},
                    ),
                    spec=k8s.core.v1.PodSpecArgs(
                        service_account_name=self.service_account.metadata.name,
                        security_context=k8s.core.v1.PodSecurityContextArgs(
                            seccomp_profile=k8s.core.v1.SeccompProfileArgs(type="RuntimeDefault")
                        ),
                        containers=[
                            k8s.core.v1.ContainerArgs(
                                name="pod-custom-metrics-stackdriver-adapter",
                                image=ADAPTER_IMAGE,
                                image_pull_policy="Always",
                                command=[
                                    "/adapter",
                                    "--use-new-resource-model=true",
                                    "--fallback-for-container-metrics=true",
                                ],
                                resources=k8s.core.v1.ResourceRequirementsArgs(
                                    requests={"cpu": "250m", "memory": "200Mi"},
                                    limits={"cpu": "250m", "memory": "200Mi"},
                                ),
                                ports=[k8s.core.v1.ContainerPortArgs(name="https", container_port=ADAPTER_PORT)],
                                readiness_probe=k8s.core.v1.ProbeArgs(
                                    http_get=health,
                                    initial_delay_seconds=40,
                                    period_seconds=10,
                                    timeout_seconds=5,
                                ),
                                liveness_probe=k8s.core.v1.ProbeArgs(
                                    http_get=health,
                                    initial_delay_seconds=60,
                                    period_seconds=20,
                                    timeout_seconds=5,
                                    failure_threshold=3,
                                ),
                                security_context=k8s.core.v1.SecurityContextArgs(
                                    allow_privilege_escalation=False,
                                    capabilities=k8s.core.v1.CapabilitiesArgs(drop=["ALL"], add=["NET_BIND_SERVICE"]),
                                ),
                            )
                        ],
                    ),
                ),
            ),
            # The adapter reads Cloud Monitoring as soon as it serves: grant the role first.
            opts=pulumi.ResourceOptions(
                parent=self, depends_on=[self.namespace, self.iam_member], retain_on_delete=retain
            ),
        )
        # The aggregation layer calls the adapter from the control plane, which no pod or namespace
        # selector can name: admit the serving port from anywhere, nothing else.
        self.network_policy = k8s.networking.v1.NetworkPolicy(
            f"{name}-network-policy",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=ADAPTER_NAME, namespace=ADAPTER_NAMESPACE, labels=labels),
            spec=k8s.networking.v1.NetworkPolicySpecArgs(
                pod_selector=k8s.meta.v1.LabelSelectorArgs(match_labels=ADAPTER_LABELS),
                policy_types=["Ingress"],
                ingress=[
                    k8s.networking.v1.NetworkPolicyIngressRuleArgs(
                        ports=[k8s.networking.v1.NetworkPolicyPortArgs(protocol="TCP", port=ADAPTER_PORT)]
                    )
                ],
            ),
            opts=in_namespace,
        )
        self.service = k8s.core.v1.Service(
            f"{name}-service",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=ADAPTER_NAME,
                namespace=ADAPTER_NAMESPACE,
                labels={**labels, "kubernetes.io/cluster-service": "true", "kubernetes.io/name": "Adapter"},
            ),
            spec=k8s.core.v1.ServiceSpecArgs(
                type="ClusterIP",
                selector=ADAPTER_LABELS,
                ports=[k8s.core.v1.ServicePortArgs(port=443, protocol="TCP", target_port=ADAPTER_PORT)],
            ),
            opts=in_namespace,
        )
        self.api_services = [
            k8s.apiregistration.v1.APIService(
                f"{name}-{version}-{group.split('.')[0]}",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=f"{version}.{group}", labels=labels),
                spec=k8s.apiregistration.v1.APIServiceSpecArgs(
                    group=group,
                    version=version,
                    group_priority_minimum=100,
                    version_priority=priority,
                    insecure_skip_tls_verify=True,
                    service=k8s.apiregistration.v1.ServiceReferenceArgs(
                        name=self.service.metadata.name, namespace=ADAPTER_NAMESPACE
                    ),
                ),
                opts=pulumi.ResourceOptions(parent=self, depends_on=[self.deployment], retain_on_delete=retain),
            )
            for version, group, priority in METRICS_API_GROUPS
        ]
        self.register_outputs({"serviceAccount": self.service_account.metadata.name, "member": self.iam_member.member})


@dataclass(frozen=True)
class ServingAutoscalerArgs:
    name: str
    namespace: pulumi.Input[str]
    deployment: pulumi.Input[str]
    min_replicas: int
    max_replicas: int
    metric_name: str
    target_average_value: str
    scale_up_period_seconds: int
    scale_down_stabilization_seconds: int
    scale_down_period_seconds: int
    labels: dict[str, str] = field(default_factory=dict)
    # What the stack states about the pods it adds (e.g. their time to serve, read by policy LLM-OPS-005).
    annotations: dict[str, str] = field(default_factory=dict)


class ServingAutoscaler(pulumi.ComponentResource):
    """An autoscaling/v2 HPA on a per-pod custom metric; one pod (one A4 node) per step."""

    TYPE = "llm-serving:operations:ServingAutoscaler"

    autoscaler: k8s.autoscaling.v2.HorizontalPodAutoscaler

    def __init__(self, name: str, args: ServingAutoscalerArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(self.TYPE, name, None, opts)
        self.autoscaler = k8s.autoscaling.v2.HorizontalPodAutoscaler(
            f"{name}-hpa",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=args.name, namespace=args.namespace, labels=args.labels, annotations=args.annotations or None
            ),
            spec=k8s.autoscaling.v2.HorizontalPodAutoscalerSpecArgs(
                scale_target_ref=k8s.autoscaling.v2.CrossVersionObjectReferenceArgs(
                    api_version="apps/v1", kind="Deployment", name=args.deployment
                ),
                min_replicas=args.min_replicas,
                max_replicas=args.max_replicas,
                metrics=[
                    k8s.autoscaling.v2.MetricSpecArgs(
                        type="Pods",
                        pods=k8s.autoscaling.v2.PodsMetricSourceArgs(
                            metric=k8s.autoscaling.v2.MetricIdentifierArgs(name=args.metric_name),
                            target=k8s.autoscaling.v2.MetricTargetArgs(
                                type="AverageValue", average_value=args.target_average_value
                            ),
                        ),
                    )
                ],
                behavior=k8s.autoscaling.v2.HorizontalPodAutoscalerBehaviorArgs(
                    # Each new pod is a new A4 node: add one per period and let it arrive.
                    scale_up=k8s.autoscaling.v2.HPAScalingRulesArgs(
                        stabilization_window_seconds=0,
                        select_policy="Max",
                        policies=[
                            k8s.autoscaling.v2.HPAScalingPolicyArgs(
                                type="Pods", value=1, period_seconds=args.scale_up_period_seconds
                            )
                        ],
                    ),
                    # A pod removed too early costs a ~16 min cold start to get back.
                    scale_down=k8s.autoscaling.v2.HPAScalingRulesArgs(
                        stabilization_window_seconds=args.scale_down_stabilization_seconds,
                        select_policy="Min",
                        policies=[
                            k8s.autoscaling.v2.HPAScalingPolicyArgs(
                                type="Pods", value=1, period_seconds=args.scale_down_period_seconds
                            )
                        ],
                    ),
                ),
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.register_outputs({"autoscaler": self.autoscaler.metadata.name})
