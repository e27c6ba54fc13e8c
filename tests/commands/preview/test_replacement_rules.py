"""The replacement rules table: one case per rule (a field that forces replacement and one that does
not), the conditional ForceNew hooks, and coverage of every type the stacks declare."""

from __future__ import annotations

from typing import Any

import pytest

from commands.engine.property_paths import format_path, parse_path, path_touches
from commands.preview.replacement_rules import RULES, rule_for
from tests.rendered import RenderedStack

# (type, changed path, old, new, replaces?)
CASES: list[tuple[str, str, Any, Any, bool]] = [
    ("gcp:projects/service:Service", "service", "compute.googleapis.com", "container.googleapis.com", True),
    ("gcp:projects/service:Service", "disableOnDestroy", False, True, False),
    ("gcp:compute/network:Network", "name", "a-vpc", "b-vpc", True),
    ("gcp:compute/network:Network", "routingMode", "REGIONAL", "GLOBAL", False),
    ("gcp:compute/subnetwork:Subnetwork", "network", "a-id", "b-id", True),
    ("gcp:compute/subnetwork:Subnetwork", "ipCidrRange", "10.0.0.0/20", "10.0.0.0/19", False),
    ("gcp:compute/subnetwork:Subnetwork", "ipCidrRange", "10.0.0.0/20", "10.16.0.0/20", True),
    ("gcp:compute/subnetwork:Subnetwork", "secondaryIpRanges[0].ipCidrRange", "10.4.0.0/14", "10.8.0.0/14", False),
    ("gcp:compute/firewall:Firewall", "direction", "INGRESS", "EGRESS", True),
    ("gcp:compute/firewall:Firewall", "sourceRanges[0]", "10.0.0.0/23", "10.2.0.0/23", False),
    ("gcp:compute/disk:Disk", "zone", "us-central1-b", "us-central1-c", True),
    ("gcp:compute/disk:Disk", "snapshot", "weights-a", "weights-b", True),
    ("gcp:compute/disk:Disk", "size", 100, 200, False),
    ("gcp:compute/disk:Disk", "size", 200, 100, True),
    ("gcp:compute/disk:Disk", "provisionedThroughput", 2400, 4800, False),
    ("gcp:compute/disk:Disk", "accessMode", "READ_WRITE_SINGLE", "READ_ONLY_MANY", False),
    ("gcp:compute/snapshot:Snapshot", "sourceDisk", "fill-a", "fill-b", True),
    ("gcp:compute/snapshot:Snapshot", "labels.weights", "a", "b", False),
    ("gcp:compute/image:Image", "sourceDisk", "fill-a", "fill-b", True),
    ("gcp:compute/image:Image", "labels.weights", "a", "b", False),
    ("gcp:compute/router:Router", "network", "a-id", "b-id", True),
    ("gcp:compute/router:Router", "bgp.asn", 64514, 64515, False),
    ("gcp:compute/routerNat:RouterNat", "router", "a", "b", True),
    ("gcp:compute/routerNat:RouterNat", "natIpAllocateOption", "AUTO_ONLY", "MANUAL_ONLY", False),
    ("gcp:container/cluster:Cluster", "name", "llm-serving", "llm-serving-b", True),
    ("gcp:container/cluster:Cluster", "location", "us-central1", "us-east1", True),
    ("gcp:container/cluster:Cluster", "subnetwork", "a-id", "b-id", True),
    ("gcp:container/cluster:Cluster", "ipAllocationPolicy.clusterSecondaryRangeName", "pods", "pods-b", True),
    ("gcp:container/cluster:Cluster", "releaseChannel.channel", "RAPID", "REGULAR", False),
    ("gcp:container/cluster:Cluster", "gatewayApiConfig.channel", None, "CHANNEL_STANDARD", False),
    ("gcp:container/cluster:Cluster", "deletionProtection", True, False, False),
    ("gcp:container/cluster:Cluster", "enableL4IlbSubsetting", False, True, False),
    ("gcp:container/cluster:Cluster", "enableL4IlbSubsetting", True, False, True),
    ("gcp:serviceaccount/account:Account", "accountId", "nodes-a", "nodes-b", True),
    ("gcp:serviceaccount/account:Account", "displayName", "a", "b", False),
    ("gcp:projects/iAMMember:IAMMember", "role", "roles/a", "roles/b", True),
    ("gcp:artifactregistry/repository:Repository", "remoteRepositoryConfig.commonRepository.uri", "a", "b", True),
    ("gcp:artifactregistry/repository:Repository", "labels.app", "a", "b", False),
    ("gcp:artifactregistry/repositoryIamMember:RepositoryIamMember", "member", "a", "b", True),
    ("gcp:storage/bucket:Bucket", "name", "a", "b", True),
    ("gcp:storage/bucket:Bucket", "lifecycleRules[0].condition.age", 30, 60, False),
    ("gcp:storage/bucketIAMMember:BucketIAMMember", "member", "a", "b", True),
    ("gcp:projects/iAMMember:IAMMember", "member", "serviceAccount:a", "serviceAccount:b", True),
    ("gcp:serviceaccount/iAMMember:IAMMember", "serviceAccountId", "projects/p/sa/a", "projects/p/sa/b", True),
    ("gcp:serviceaccount/iAMMember:IAMMember", "role", "roles/iam.workloadIdentityUser", "roles/b", True),
    ("gcp:monitoring/dashboard:Dashboard", "project", "p-a", "p-b", True),
    ("gcp:monitoring/dashboard:Dashboard", "dashboardJson", "{}", '{"a": 1}', False),
    ("gcp:monitoring/alertPolicy:AlertPolicy", "conditions[0].displayName", "a", "b", False),
    ("gcp:monitoring/alertPolicy:AlertPolicy", "project", "p-a", "p-b", True),
    ("gcp:monitoring/notificationChannel:NotificationChannel", "labels.email_address", "a@x", "b@x", False),
    ("gcp:monitoring/notificationChannel:NotificationChannel", "project", "p-a", "p-b", True),
    ("kubernetes:core/v1:Namespace", "metadata.name", "a", "b", True),
    ("kubernetes:core/v1:Namespace", "metadata.labels.team", "a", "b", False),
    ("kubernetes:core/v1:ServiceAccount", "metadata.namespace", "a", "b", True),
    ("kubernetes:core/v1:ServiceAccount", "metadata.annotations.x", "a", "b", False),
    ("kubernetes:core/v1:Secret", "stringData.token", "[secret]", "[secret]", True),
    ("kubernetes:core/v1:Secret", "metadata.labels.x", "a", "b", False),
    ("kubernetes:core/v1:ConfigMap", "data.key", "a", "b", True),
    ("kubernetes:core/v1:ConfigMap", "metadata.labels.x", "a", "b", False),
    ("kubernetes:core/v1:Service", "spec.clusterIP", "None", "10.8.0.10", True),
    ("kubernetes:core/v1:Service", "spec.type", "ClusterIP", "LoadBalancer", False),
    ("kubernetes:core/v1:PersistentVolume", "spec.csi.volumeHandle", "disks/a", "disks/b", True),
    ("kubernetes:core/v1:PersistentVolume", "spec.capacity.storage", "100Gi", "200Gi", False),
    ("kubernetes:core/v1:PersistentVolumeClaim", "spec.volumeName", "a", "b", True),
    ("kubernetes:core/v1:PersistentVolumeClaim", "spec.resources.requests.storage", "100Gi", "200Gi", False),
    ("kubernetes:apps/v1:Deployment", "spec.selector.matchLabels.app", "a", "b", True),
    ("kubernetes:apps/v1:Deployment", "spec.template.spec.containers[0].args[3]", "--a", "--b", False),
    ("kubernetes:apps/v1:DaemonSet", "spec.selector.matchLabels.app", "a", "b", True),
    ("kubernetes:apps/v1:DaemonSet", "spec.template.spec.containers[0].image", "a", "b", False),
    ("kubernetes:apps/v1:StatefulSet", "spec.volumeClaimTemplates[0].spec", {}, {"a": 1}, True),
    ("kubernetes:apps/v1:StatefulSet", "spec.replicas", 1, 2, False),
    ("kubernetes:batch/v1:Job", "spec.template.spec.containers[0].args[0]", "a", "b", True),
    ("kubernetes:batch/v1:Job", "spec.backoffLimit", 5, 6, False),
    ("kubernetes:batch/v1:CronJob", "metadata.name", "a", "b", True),
    ("kubernetes:batch/v1:CronJob", "spec.jobTemplate.spec.template.spec.containers[0].image", "a", "b", False),
    ("kubernetes:policy/v1:PodDisruptionBudget", "spec.maxUnavailable", 1, 2, False),
    ("kubernetes:policy/v1:PodDisruptionBudget", "metadata.name", "a", "b", True),
    ("kubernetes:networking.k8s.io/v1:NetworkPolicy", "spec.ingress[0]", {}, {"a": 1}, False),
    ("kubernetes:networking.k8s.io/v1:NetworkPolicy", "metadata.namespace", "a", "b", True),
    ("kubernetes:autoscaling/v2:HorizontalPodAutoscaler", "spec.maxReplicas", 12, 16, False),
    ("kubernetes:autoscaling/v2:HorizontalPodAutoscaler", "metadata.name", "a", "b", True),
    ("kubernetes:rbac.authorization.k8s.io/v1:Role", "rules[0].verbs[0]", "get", "list", False),
    ("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole", "metadata.name", "a", "b", True),
    ("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding", "roleRef.name", "a", "b", True),
    ("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding", "subjects[0].name", "a", "b", False),
    ("kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding", "roleRef.name", "a", "b", True),
    ("kubernetes:storage.k8s.io/v1:StorageClass", "parameters.type", "hyperdisk-ml", "pd-ssd", True),
    ("kubernetes:storage.k8s.io/v1:StorageClass", "allowVolumeExpansion", False, True, False),
    ("kubernetes:cloud.google.com/v1:ComputeClass", "spec.priorities[0].spot", True, False, False),
    ("kubernetes:cloud.google.com/v1:ComputeClass", "metadata.name", "a", "b", True),
    ("kubernetes:autoscaling.x-k8s.io/v1beta1:CapacityBuffer", "spec.replicas", 2, 3, False),
    ("kubernetes:autoscaling.x-k8s.io/v1beta1:CapacityBuffer", "metadata.name", "a", "b", True),
    ("gcp:logging/metric:Metric", "name", "a_time_to_ready", "b_time_to_ready", False),
    ("gcp:logging/metric:Metric", "filter", "a", "b", False),
    ("gcp:logging/metric:Metric", "metricDescriptor.labels[0].key", "pod", "serving_pod", True),
    ("kubernetes:monitoring.googleapis.com/v1:PodMonitoring", "spec.endpoints[0].interval", "30s", "15s", False),
    ("kubernetes:monitoring.googleapis.com/v1:ClusterPodMonitoring", "metadata.name", "a", "b", True),
    ("kubernetes:gateway.networking.k8s.io/v1:Gateway", "spec.gatewayClassName", "a", "b", False),
    ("kubernetes:gateway.networking.k8s.io/v1:HTTPRoute", "metadata.name", "a", "b", True),
    ("kubernetes:networking.gke.io/v1:GCPBackendPolicy", "spec.default.timeoutSec", 300, 600, False),
    ("kubernetes:networking.gke.io/v1:HealthCheckPolicy", "metadata.namespace", "a", "b", True),
    ("kubernetes:inference.networking.k8s.io/v1:InferencePool", "spec.targetPorts[0].number", 8000, 8001, False),
    ("kubernetes:inference.networking.x-k8s.io/v1alpha2:InferenceObjective", "metadata.name", "a", "b", True),
    ("kubernetes:apiregistration.k8s.io/v1:APIService", "spec.service.name", "a", "b", False),
    ("kubernetes:apiregistration.k8s.io/v1:APIService", "metadata.name", "a", "b", True),
    ("kubernetes:keda.sh/v1alpha1:ScaledObject", "spec.maxReplicaCount", 12, 16, False),
    ("kubernetes:keda.sh/v1alpha1:TriggerAuthentication", "metadata.name", "a", "b", True),
    ("kubernetes:helm.sh/v3:Release", "name", "a", "b", True),
    ("kubernetes:helm.sh/v3:Release", "values.inferenceExtension.replicas", 1, 2, False),
    ("pulumi:providers:kubernetes", "kubeconfig", "[secret]", "(known after llm-gke is replaced)", True),
    ("pulumi:providers:kubernetes", "enableServerSideApply", True, False, False),
    ("pulumi:providers:gcp", "project", "a", "b", False),
]


@pytest.mark.parametrize(("type_", "path", "old", "new", "replaces"), CASES, ids=[f"{c[0]}:{c[1]}" for c in CASES])
def test_rule(type_: str, path: str, old: Any, new: Any, replaces: bool) -> None:
    rule = rule_for(type_)
    assert rule is not None, f"no rule for {type_}"
    assert rule.forces_replacement(path, old, new) is replaces


def test_every_rule_has_a_case_and_a_source() -> None:
    covered = {case[0] for case in CASES}
    assert set(RULES) <= covered, f"rules without a test case: {sorted(set(RULES) - covered)}"
    assert all(rule.source for rule in RULES.values())


def test_every_declared_type_has_a_rule(stack: RenderedStack) -> None:
    custom_types = {record["type"] for record in stack.resources if record["custom"]}
    assert {type_ for type_ in custom_types if rule_for(type_) is None} == set()


def test_unknown_type_has_no_rule() -> None:
    assert rule_for("kubernetes:example.com/v1:Widget") is None


@pytest.mark.parametrize(
    ("rule_path", "changed", "touches"),
    [
        ("spec.template", "spec.template.spec.containers[0].args[2]", True),
        ("spec.selector", "spec", True),  # a whole new spec touches the selector
        ("spec.containers[*].image", "spec.containers[3].image", True),
        ("spec.selector", "spec.replicas", False),
        ("metadata.name", "metadata.namespace", False),
        ('metadata.labels["app.kubernetes.io/name"]', 'metadata.labels["app.kubernetes.io/name"]', True),
    ],
)
def test_path_touches(rule_path: str, changed: str, touches: bool) -> None:
    assert path_touches(rule_path, changed) is touches


def test_paths_round_trip() -> None:
    for path in ('metadata.labels["llm-serving/environment"]', "spec.template.spec.containers[0].args[3]", "name"):
        assert format_path(parse_path(path)) == path
