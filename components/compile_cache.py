"""A compile cache the serving pods share: a Cloud Storage bucket, the engine's Kubernetes service
account, and that account's access to the bucket through Workload Identity.

The pods mount the bucket with the Cloud Storage FUSE CSI driver as a CSI ephemeral volume (GKE
"Mount Cloud Storage buckets as CSI ephemeral volumes": driver `gcsfuse.csi.storage.gke.io`, volume
attributes `bucketName` and `mountOptions`, pod annotation `gke-gcsfuse/volumes: "true"`, which has GKE
inject the FUSE sidecar; the driver is on by default on Autopilot). Each configuration reads and writes
only its own folder (`only-dir=<key>`, common/compile_cache.py), owned by the engine's user
(`uid`/`gid`). The driver gets the pod's service account token from the kubelet (its CSIDriver object
asks for one with the Workload Identity audience: GoogleCloudPlatform/gcs-fuse-csi-driver
deploy/base/setup/csi_driver.yaml `tokenRequests`), so the engine container keeps
`automountServiceAccountToken: false`.

Access: the Kubernetes service account itself is the IAM principal (Workload Identity Federation for
GKE, `principal://iam.googleapis.com/projects/NUMBER/locations/global/workloadIdentityPools/POOL/subject/ns/NS/sa/KSA`),
granted `roles/storage.objectUser` (read, write, list, delete objects) on this bucket only.

The bucket: uniform bucket-level access, a hierarchical namespace, public access prevention enforced,
no soft delete (a cache
is rebuilt, never restored), a lifecycle rule that deletes objects after `max_age_days`, and
`force_destroy` (a `destroy` deletes the cached kernels with it). Its name is a hash of the project and
cluster (`vllm-compile-cache-<12 hex>`): bucket names are global, at most 63 characters, and may not
contain "google" (Cloud Storage "Bucket naming"), which a cluster name could.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from components.cluster import workload_identity_principal

OBJECT_ROLE = "roles/storage.objectUser"
CSI_DRIVER = "gcsfuse.csi.storage.gke.io"
SIDECAR_ANNOTATION = "gke-gcsfuse/volumes"
API = "storage.googleapis.com"


def bucket_name(project: str, cluster_name: str) -> str:
    return f"vllm-compile-cache-{hashlib.sha256(f'{project}/{cluster_name}'.encode()).hexdigest()[:12]}"


@dataclass(frozen=True)
class CacheMount:
    """What the engine's pod needs to mount the cache: the bucket and the service account (the pod
    computes its folder's key from its own image, arguments and environment)."""

    bucket: str
    service_account: str


def mount_options(key: str, user_id: int) -> str:
    """gcsfuse flags: only the configuration's folder, files owned by the engine's user."""
    return f"only-dir={key},uid={user_id},gid={user_id}"


@dataclass(frozen=True)
class CompileCacheArgs:
    project: str
    region: str
    cluster_name: str
    namespace: pulumi.Input[str]
    service_account_name: str
    project_number: pulumi.Input[str]
    # The cluster's pool (<project>.svc.id.goog), taken from the cluster so the binding follows it.
    workload_pool: pulumi.Input[str]
    max_age_days: int
    gcp_labels: dict[str, str] = field(default_factory=dict)
    kubernetes_labels: dict[str, str] = field(default_factory=dict)
    # What the bucket waits for: the Cloud Storage API of this `up`.
    after: tuple[pulumi.Resource, ...] = ()


class CompileCache(pulumi.ComponentResource):
    TYPE = "llm-serving:serving:CompileCache"
    bucket: gcp.storage.Bucket
    service_account: k8s.core.v1.ServiceAccount
    object_user: gcp.storage.BucketIAMMember

    def __init__(self, name: str, args: CompileCacheArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(self.TYPE, name, None, opts)
        self.bucket_name = bucket_name(args.project, args.cluster_name)
        self.bucket = gcp.storage.Bucket(
            f"{name}-bucket",
            name=self.bucket_name,
            project=args.project,
            location=args.region,
            storage_class="STANDARD",
            uniform_bucket_level_access=True,
            # Folders are real objects and a folder rename is one atomic call (Cloud Storage "Hierarchical
            # namespace"), which compile caches that write a folder and then rename it rely on.
            hierarchical_namespace=gcp.storage.BucketHierarchicalNamespaceArgs(enabled=True),
            public_access_prevention="enforced",
            soft_delete_policy=gcp.storage.BucketSoftDeletePolicyArgs(retention_duration_seconds=0),
            lifecycle_rules=[
                gcp.storage.BucketLifecycleRuleArgs(
                    action=gcp.storage.BucketLifecycleRuleActionArgs(type="Delete"),
                    condition=gcp.storage.BucketLifecycleRuleConditionArgs(age=args.max_age_days),
                )
            ],
            force_destroy=True,
            labels=args.gcp_labels,
            # The name is global: the engine deletes the old bucket before it creates its replacement.
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.after), delete_before_replace=True),
        )
        self.service_account = k8s.core.v1.ServiceAccount(
            f"{name}-service-account",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=args.service_account_name, namespace=args.namespace, labels=args.kubernetes_labels
            ),
            automount_service_account_token=False,
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.object_user = gcp.storage.BucketIAMMember(
            f"{name}-object-user",
            bucket=self.bucket.name,
            role=OBJECT_ROLE,
            member=pulumi.Output.all(args.project_number, args.workload_pool, args.namespace).apply(
                lambda parts: workload_identity_principal(
                    str(parts[0]), str(parts[1]), str(parts[2]), args.service_account_name
                )
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.register_outputs({"bucket": self.bucket.name, "serviceAccount": self.service_account.metadata.name})
