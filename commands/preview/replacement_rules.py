"""Which input changes make the engine replace a resource instead of updating it in place.

One rule per resource type the stacks declare, taken from the provider that diffs that type:

* GCP types: the fields terraform-provider-google marks `ForceNew` in the resource schema (plus its
  `customdiff.ForceNewIfChange` hooks), which pulumi-gcp's bridge turns into replacements. Source:
  hashicorp/terraform-provider-google@e03b7622 (2026-08-21), `google/services/<service>/resource_*.go`;
  field names are the Pulumi camelCase spellings of the Terraform ones.
* Kubernetes types: pulumi-kubernetes' `forceNewProperties` table (provider/pkg/provider/diff.go):
  `.metadata.name` and `.metadata.namespace` for every kind, plus the per-kind fields below. Source:
  pulumi/pulumi-kubernetes@94977969 (master, 2026-07-01; the project pins 4.34.2, whose table is the
  same shape). The Helm Release diff forces new on `.name` and `.namespace` only
  (provider/pkg/provider/helm_release.go).
* Providers: pulumi-kubernetes `DiffConfig` (provider/pkg/provider/provider.go) replaces the provider,
  and with it every resource it manages, when `kubeconfig`, `context` or `cluster` is unknown at
  preview or points at another cluster. pulumi-gcp sets no `ForcesProviderReplace` on its provider
  config (pulumi/pulumi-gcp provider/resources.go, read at an older revision than the pinned 10.2.0;
  the bridge's `configDiffer.DiffConfig` replaces only on that flag), so a gcp provider change is an
  update; resources that carry `project` or `region` themselves are replaced by their own rules.

Paths use the engine's property-path syntax (`spec.template`, `spec.containers[*].image`); `[*]` is
any list index. A change matches a rule path when either is a prefix of the other: a change inside a
force-new field, or a whole value (a list, a replaced scalar) that holds one. Objects added or removed
are diffed field by field (`commands/preview/update_plan.py`), so only the fields they really set are matched.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from commands.engine.property_paths import path_touches

ShrinkTest = Callable[[Any, Any], bool]


def _is_smaller(old: Any, new: Any) -> bool:
    return isinstance(old, (int, float)) and isinstance(new, (int, float)) and new < old


def _cidr_shrinks(old: Any, new: Any) -> bool:
    """terraform-provider-google IsShrinkageIpCidr: an update only when the new range contains the old."""
    try:
        old_net, new_net = ipaddress.ip_network(str(old)), ipaddress.ip_network(str(new))
    except ValueError:
        return True
    return not (old_net.version == new_net.version and old_net.subnet_of(new_net))  # type: ignore[arg-type]


def _turned_off(old: Any, new: Any) -> bool:
    return old is True and new is False


@dataclass(frozen=True)
class ReplacementRule:
    type: str
    replace_on: tuple[str, ...]
    source: str
    # paths that force replacement only for some transitions (ForceNewIfChange in the Terraform provider)
    replace_if: dict[str, ShrinkTest] = field(default_factory=dict)

    def forces_replacement(self, path: str, old: Any, new: Any) -> bool:
        if any(path_touches(rule_path, path) for rule_path in self.replace_on):
            return True
        return any(path_touches(rule_path, path) and test(old, new) for rule_path, test in self.replace_if.items())


def _tf(service: str, resource: str) -> str:
    return f"hashicorp/terraform-provider-google@e03b7622:google/services/{service}/resource_{resource}.go ForceNew"


K8S_DIFF = "pulumi/pulumi-kubernetes@94977969:provider/pkg/provider/diff.go forceNew"
K8S_IDENTITY = ("metadata.name", "metadata.namespace")
LABEL_SELECTOR = ("spec.selector",)

_K8S_KIND_FIELDS: dict[str, tuple[str, ...]] = {
    # every kind: the object's identity
    "core/v1:Namespace": (),
    "core/v1:ServiceAccount": (),
    "core/v1:Secret": ("type", "stringData", "data"),  # enableSecretMutable is off by default
    "core/v1:ConfigMap": ("binaryData", "data"),  # enableConfigMapMutable is off by default
    # Service: only clusterIP; type transitions (ClusterIP <-> LoadBalancer) are in-place updates
    "core/v1:Service": ("spec.clusterIP",),
    # PV: the volume source only; capacity, claimRef, mountOptions, nodeAffinity are updates here
    "core/v1:PersistentVolume": (
        "spec.awsElasticBlockStore",
        "spec.azureDisk",
        "spec.azureFile",
        "spec.cephfs",
        "spec.cinder",
        "spec.csi",
        "spec.fc",
        "spec.flexVolume",
        "spec.flocker",
        "spec.gcePersistentDisk",
        "spec.glusterfs",
        "spec.hostPath",
        "spec.iscsi",
        "spec.local",
        "spec.nfs",
        "spec.photonPersistentDisk",
        "spec.portworxVolume",
        "spec.quobyte",
        "spec.rbd",
        "spec.scaleIO",
        "spec.storageos",
        "spec.vsphereVolume",
    ),
    # PVC: everything but resources.requests
    "core/v1:PersistentVolumeClaim": ("spec.accessModes", "spec.selector", "spec.storageClassName", "spec.volumeName"),
    "apps/v1:Deployment": LABEL_SELECTOR,
    "apps/v1:DaemonSet": LABEL_SELECTOR,
    "apps/v1:StatefulSet": (
        "spec.podManagementPolicy",
        "spec.revisionHistoryLimit",
        "spec.selector",
        "spec.serviceName",
        "spec.volumeClaimTemplates",
    ),
    "batch/v1:Job": ("spec.completions", "spec.parallelism", "spec.selector", "spec.template"),
    "batch/v1:CronJob": (),
    # the table lists PodDisruptionBudget for policy/v1beta1 only: a policy/v1 PDB updates in place
    "policy/v1:PodDisruptionBudget": (),
    "networking.k8s.io/v1:NetworkPolicy": (),
    "autoscaling/v2:HorizontalPodAutoscaler": (),
    "rbac.authorization.k8s.io/v1:Role": (),
    "rbac.authorization.k8s.io/v1:ClusterRole": (),
    "rbac.authorization.k8s.io/v1:RoleBinding": ("roleRef",),
    "rbac.authorization.k8s.io/v1:ClusterRoleBinding": ("roleRef",),
    "storage.k8s.io/v1:StorageClass": ("parameters", "provisioner"),
    # custom resources: no kind entry in the table, so identity only
    "cloud.google.com/v1:ComputeClass": (),
    "monitoring.googleapis.com/v1:PodMonitoring": (),
    "monitoring.googleapis.com/v1:ClusterPodMonitoring": (),
    "gateway.networking.k8s.io/v1:Gateway": (),
    "gateway.networking.k8s.io/v1:HTTPRoute": (),
    "networking.gke.io/v1:GCPBackendPolicy": (),
    "networking.gke.io/v1:HealthCheckPolicy": (),
    "inference.networking.k8s.io/v1:InferencePool": (),
    "inference.networking.x-k8s.io/v1alpha2:InferenceObjective": (),
    "apiregistration.k8s.io/v1:APIService": (),
    "keda.sh/v1alpha1:ScaledObject": (),
    "keda.sh/v1alpha1:TriggerAuthentication": (),
    "autoscaling.x-k8s.io/v1beta1:CapacityBuffer": (),
}

_GCP_RULES = (
    ReplacementRule(
        "gcp:projects/service:Service", ("project", "service"), _tf("resourcemanager", "google_project_service")
    ),
    ReplacementRule(
        "gcp:compute/network:Network",
        ("autoCreateSubnetworks", "description", "internalIpv6Range", "name", "networkProfile", "params", "project"),
        _tf("compute", "compute_network"),
    ),
    ReplacementRule(
        "gcp:compute/subnetwork:Subnetwork",
        (
            "description",
            "externalIpv6Prefix",
            "internalIpv6Prefix",
            "name",
            "network",
            "params",
            "project",
            "region",
            "reservedInternalRange",
            "resolveSubnetMask",
        ),
        _tf("compute", "compute_subnetwork") + "; ipCidrRange only when it shrinks (IsShrinkageIpCidr)",
        {"ipCidrRange": _cidr_shrinks},
    ),
    # `network` is not ForceNew on a firewall (it carries a DiffSuppressFunc only)
    ReplacementRule(
        "gcp:compute/firewall:Firewall", ("direction", "name", "params", "project"), _tf("compute", "compute_firewall")
    ),
    ReplacementRule(
        "gcp:compute/disk:Disk",
        (
            "architecture",
            "asyncPrimaryDisk",
            "description",
            "diskEncryptionKey",
            "enableConfidentialCompute",
            "guestOsFeatures",
            "image",
            "licenses",
            "name",
            "params",
            "physicalBlockSizeBytes",
            "project",
            "snapshot",
            "sourceDisk",
            "sourceImageEncryptionKey",
            "sourceInstantSnapshot",
            "sourceSnapshotEncryptionKey",
            "sourceStorageObject",
            "storagePool",
            "type",
            "zone",
        ),
        _tf("compute", "compute_disk") + "; size only when it shrinks (IsDiskShrinkage); accessMode, "
        "provisionedThroughput, provisionedIops update in place",
        {"size": _is_smaller},
    ),
    ReplacementRule(
        "gcp:compute/snapshot:Snapshot",
        (
            "chainName",
            "description",
            "name",
            "params",
            "project",
            "snapshotEncryptionKey",
            "snapshotType",
            "sourceDisk",
            "sourceDiskEncryptionKey",
            "sourceInstantSnapshot",
            "storageLocations",
            "zone",
        ),
        _tf("compute", "compute_snapshot"),
    ),
    ReplacementRule(
        "gcp:compute/image:Image",
        (
            "description",
            "diskSizeGb",
            "family",
            "guestOsFeatures",
            "imageEncryptionKey",
            "licenses",
            "name",
            "params",
            "project",
            "rawDisk",
            "shieldedInstanceInitialState",
            "sourceDisk",
            "sourceDiskEncryptionKey",
            "sourceImage",
            "sourceImageEncryptionKey",
            "sourceSnapshot",
            "sourceSnapshotEncryptionKey",
            "storageLocations",
        ),
        _tf("compute", "compute_image"),
    ),
    ReplacementRule(
        "gcp:compute/router:Router",
        ("encryptedInterconnectRouter", "name", "nccGateway", "network", "params", "project", "region"),
        _tf("compute", "compute_router"),
    ),
    ReplacementRule(
        "gcp:compute/routerNat:RouterNat",
        ("endpointTypes", "initialNatIps", "name", "project", "region", "router", "type"),
        _tf("compute", "compute_router_nat"),
    ),
    ReplacementRule(
        "gcp:container/cluster:Cluster",
        (
            "clusterAutoscaling.autoProvisioningDefaults.bootDiskKmsKey",
            "clusterIpv4Cidr",
            "confidentialNodes",
            "datapathProvider",
            "dataplaneOptimizationMode",
            "defaultMaxPodsPerNode",
            "description",
            "enableAutopilot",
            "enableKubernetesAlpha",
            "enableTpu",
            "initialNodeCount",
            "ipAllocationPolicy.clusterIpv4CidrBlock",
            "ipAllocationPolicy.clusterSecondaryRangeName",
            "ipAllocationPolicy.podCidrOverprovisionConfig",
            "ipAllocationPolicy.servicesIpv4CidrBlock",
            "ipAllocationPolicy.servicesSecondaryRangeName",
            "location",
            "masterAuth.clientCertificateConfig",
            "name",
            "network",
            "networkingMode",
            "privateClusterConfig.masterIpv4CidrBlock",
            "privateClusterConfig.privateEndpointSubnetwork",
            "project",
            "subnetwork",
            "userManagedKeysConfig",
        ),
        "hashicorp/terraform-provider-google@e03b7622:google/services/container/resource_container_cluster.go "
        "ForceNew (node pool and node config fields left out: Autopilot declares none); "
        "enableL4IlbSubsetting and enableFqdnNetworkPolicy only when turned off (isBeenEnabled)",
        {"enableL4IlbSubsetting": _turned_off, "enableFqdnNetworkPolicy": _turned_off},
    ),
    ReplacementRule(
        "gcp:serviceaccount/account:Account", ("accountId", "project"), _tf("resourcemanager", "google_service_account")
    ),
    ReplacementRule(
        "gcp:projects/iAMMember:IAMMember",
        ("project", "role", "member", "condition"),
        "hashicorp/terraform-provider-google@e03b7622:google/tpgiamresource/resource_iam_member.go and "
        "google/services/resourcemanager/iam_project.go ForceNew",
    ),
    ReplacementRule(
        "gcp:serviceaccount/iAMMember:IAMMember",
        ("serviceAccountId", "role", "member", "condition"),
        "hashicorp/terraform-provider-google@e03b7622:google/tpgiamresource/resource_iam_member.go and "
        "google/services/resourcemanager/iam_service_account.go ForceNew",
    ),
    ReplacementRule(
        "gcp:artifactregistry/repository:Repository",
        ("format", "repositoryId", "kmsKeyName", "location", "mode", "remoteRepositoryConfig", "project"),
        "hashicorp/terraform-provider-google@07fc8657:google/services/artifactregistry/"
        "resource_artifact_registry_repository.go ForceNew (remote_repository_config as a whole)",
    ),
    ReplacementRule(
        "gcp:artifactregistry/repositoryIamMember:RepositoryIamMember",
        ("project", "location", "repository", "role", "member", "condition"),
        "hashicorp/terraform-provider-google@e03b7622:google/tpgiamresource/resource_iam_member.go ForceNew "
        "(the parent's identifiers and the binding)",
    ),
    ReplacementRule(
        "gcp:storage/bucket:Bucket",
        ("name", "location", "project", "hierarchicalNamespace"),
        "hashicorp/terraform-provider-google google/services/storage/resource_storage_bucket.go ForceNew on name, "
        "location and project; hierarchicalNamespace because Cloud Storage cannot change it on an existing bucket "
        "('Hierarchical namespace'), not read in the provider source",
    ),
    ReplacementRule(
        "gcp:storage/bucketIAMMember:BucketIAMMember",
        ("bucket", "role", "member", "condition"),
        "hashicorp/terraform-provider-google@e03b7622:google/tpgiamresource/resource_iam_member.go ForceNew",
    ),
    ReplacementRule("gcp:monitoring/dashboard:Dashboard", ("project",), _tf("monitoring", "monitoring_dashboard")),
    ReplacementRule(
        "gcp:monitoring/alertPolicy:AlertPolicy", ("project",), _tf("monitoring", "monitoring_alert_policy")
    ),
    ReplacementRule(
        "gcp:monitoring/notificationChannel:NotificationChannel",
        ("project",),
        _tf("monitoring", "monitoring_notification_channel"),
    ),
    # `name` is not immutable: the update writes to the new name (risks.py: the old metric stays)
    ReplacementRule(
        "gcp:logging/metric:Metric",
        ("project", "metricDescriptor.labels"),
        "GoogleCloudPlatform/magic-modules@068cc456:mmv1/products/logging/Metric.yaml (which generates "
        "resource_logging_metric.go): immutable a label's key and value type, and the project of the base URL",
    ),
)

_KUBERNETES_RULES = tuple(
    ReplacementRule(f"kubernetes:{kind}", (*K8S_IDENTITY, *fields), K8S_DIFF)
    for kind, fields in _K8S_KIND_FIELDS.items()
)

_OTHER_RULES = (
    ReplacementRule(
        "kubernetes:helm.sh/v3:Release",
        ("name", "namespace"),
        "pulumi/pulumi-kubernetes@94977969:provider/pkg/provider/helm_release.go Diff forceNewFields",
    ),
    ReplacementRule(
        "pulumi:providers:kubernetes",
        ("kubeconfig", "context", "cluster", "clusterIdentifier", "renderYamlToDirectory"),
        "pulumi/pulumi-kubernetes@94977969:provider/pkg/provider/provider.go DiffConfig (replaces when kubeconfig, "
        "context or cluster is computed or names another active cluster)",
    ),
    ReplacementRule(
        "pulumi:providers:gcp",
        (),
        "pulumi/pulumi-terraform-bridge pkg/tfbridge configDiffer.DiffConfig: replacement only for "
        "ForcesProviderReplace config, which pulumi-gcp provider/resources.go does not set",
    ),
)

RULES: dict[str, ReplacementRule] = {rule.type: rule for rule in (*_GCP_RULES, *_KUBERNETES_RULES, *_OTHER_RULES)}


VOLUME_TYPE = "kubernetes:core/v1:PersistentVolume"
CLAIM_TYPE = "kubernetes:core/v1:PersistentVolumeClaim"


def rule_for(resource_type: str) -> ReplacementRule | None:
    return RULES.get(resource_type)


def is_kubernetes_object(resource_type: str) -> bool:
    """A Kubernetes API object diffed by the provider's object Diff (not a Helm release, not the provider)."""
    return resource_type.startswith("kubernetes:") and not resource_type.startswith("kubernetes:helm.sh/")
