"""Model weights on Hyperdisk ML: downloaded once per model revision, served read-only to every
serving node.

The path is fully declarative and every object has a name known at preview, so one `pulumi up`
takes an empty project to a mounted, read-only checkpoint:

1. a Hyperdisk ML disk (`READ_WRITE_SINGLE`) in the first serving zone, exposed by a static
   PersistentVolume and a ReadWriteOnce claim;
2. a Job on a cheap CPU node (C4A by default) that clones the checkpoint from Hugging Face with
   Git LFS, retrying and resuming (`git lfs pull` keeps finished objects), and writes a marker file
   last; a re-run finds the marker and exits at once. The Pulumi Kubernetes provider waits for the
   Job to complete before anything that depends on it. During the download the disk holds the
   checkpoint twice (Git LFS objects and the checkout), so `weights.sizeGib` must allow for that;
3. a Compute Engine snapshot of the filled disk, taken after the Job;
4. one Hyperdisk ML disk per serving zone restored from the snapshot in `READ_ONLY_MANY` mode (up
   to 2,500 nodes attach it read-only), exposed by one static PersistentVolume and one ReadOnlyMany
   claim that the Deployment mounts.

Every name carries a short hash of model and revision: a new revision declares new disks, Job,
snapshot, volumes and claims (and the Deployment rolls onto the new claim); an unchanged one
declares exactly the same objects, so nothing is downloaded again. With protection on (prod), the
read-only disks and the snapshot carry Pulumi `protect` and `deletionPolicy: PREVENT`: after a
revision change the old ones stay until released with `pulumi state unprotect`.

More than one zone: the serving disks share one name, carry the label `goog-gke-multi-zone`, and
the PersistentVolume uses the Persistent Disk CSI driver's multi-zone handle
`projects/P/zones/multi-zone/disks/NAME`; the driver attaches the copy in the zone of the node
(the same handle GKE's `enable-multi-zone-provisioning` StorageClasses produce). The snapshot was
taken while the download node may still have had the file system mounted; the CSI driver mounts
such a read-only ext4 volume with `noload`, and the Job syncs before it writes the marker.
"""

from __future__ import annotations

import hashlib
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from stacks.config import DownloaderConfig

DISK_TYPE = "hyperdisk-ml"
# The Hyperdisk ML minimum; a Hugging Face download never writes faster.
FILL_DISK_THROUGHPUT_MIBPS = 400
PD_CSI_DRIVER = "pd.csi.storage.gke.io"
CSI_ZONE_KEY = "topology.gke.io/zone"
NODE_ZONE_KEY = "topology.kubernetes.io/zone"
MULTI_ZONE_LABEL = "goog-gke-multi-zone"
READ_AHEAD_MOUNT_OPTION = "read_ahead_kb=4096"
DOWNLOAD_TIMEOUT = "3h"
DOWNLOAD_DEADLINE_SECONDS = 3 * 3600
COMPLETE_MARKER = ".download-complete"

DOWNLOAD_SCRIPT = f"""set -eu
marker="$WEIGHTS_ROOT/{COMPLETE_MARKER}"
if [ -f "$marker" ]; then
  echo "$(cat "$marker") is already on the disk"
  exit 0
fi
retry() {{
  attempt=1
  until "$@"; do
    if [ "$attempt" -ge "$ATTEMPTS" ]; then return 1; fi
    echo "attempt $attempt of '$*' failed; retrying in $((attempt * 30)) s" >&2
    sleep $((attempt * 30))
    attempt=$((attempt + 1))
  done
}}
retry apt-get update -qq
retry apt-get install -y -qq --no-install-recommends ca-certificates git git-lfs
# The token reaches git only through this helper, never a URL, an argument or a file.
git config --global credential.helper '!f() {{ echo username=hf; echo "password=$HF_TOKEN"; }}; f'
git lfs install --skip-smudge
checkout="$WEIGHTS_ROOT/$MODEL"
clone() {{
  rm -rf "$checkout.partial"
  git clone --no-checkout "https://huggingface.co/$MODEL" "$checkout.partial"
  mv "$checkout.partial" "$checkout"
}}
if [ ! -d "$checkout/.git" ]; then
  rm -rf "$checkout"
  mkdir -p "$(dirname "$checkout")"
  retry clone
fi
cd "$checkout"
git checkout -q "$REVISION"
# Large files over plain Git LFS (Xet downloads stall on big checkpoints); finished objects survive a retry.
retry git lfs pull
rm -rf "$checkout/.git"
sync
echo "$MODEL@$REVISION" > "$marker"
sync
"""


def weights_id(model: str, revision: str) -> str:
    """A short, stable hash of what is on the disk: it names every object of one revision."""
    return hashlib.sha256(f"{model}@{revision}".encode()).hexdigest()[:10]


def weights_object_name(model: str, revision: str) -> str:
    """The name of the Kubernetes objects (volumes, claims, Job prefix) of one revision."""
    return f"weights-{weights_id(model, revision)}"


def download_job_name(model: str, revision: str) -> str:
    return f"{weights_object_name(model, revision)}-download"


def weights_disk_name(cluster_name: str, model: str, revision: str) -> str:
    """The read-only serving disks and the snapshot (Compute Engine names: RFC 1035, <= 63)."""
    return f"{cluster_name}-{weights_object_name(model, revision)}"


def weights_fill_disk_name(cluster_name: str, model: str, revision: str) -> str:
    return f"{weights_disk_name(cluster_name, model, revision)}-fill"


def local_model_path(mount_path: str, model: str) -> str:
    """Where the checkpoint sits on the volume: vLLM loads it from here, not from the Hub."""
    return posixpath.join(mount_path, model)


def volume_handle(project: str, zones: Sequence[str], disk_name: str) -> str:
    location = zones[0] if len(zones) == 1 else "multi-zone"
    return f"projects/{project}/zones/{location}/disks/{disk_name}"


def zone_affinity(key: str, zones: Sequence[str]) -> k8s.core.v1.VolumeNodeAffinityArgs:
    return k8s.core.v1.VolumeNodeAffinityArgs(
        required=k8s.core.v1.NodeSelectorArgs(
            node_selector_terms=[
                k8s.core.v1.NodeSelectorTermArgs(
                    match_expressions=[
                        k8s.core.v1.NodeSelectorRequirementArgs(key=key, operator="In", values=list(zones))
                    ]
                )
            ]
        )
    )


@dataclass(frozen=True)
class ModelWeightsArgs:
    project: str
    zones: Sequence[str]
    cluster_name: str
    namespace: pulumi.Input[str]
    model: str
    revision: str
    size_gib: int
    throughput_mibps: int
    mount_path: str
    downloader: DownloaderConfig
    token_secret_name: pulumi.Input[str]
    token_secret_key: str
    protect: bool
    labels: dict[str, str] = field(default_factory=dict)


class ModelWeights(pulumi.ComponentResource):
    fill_disk: gcp.compute.Disk
    fill_volume: k8s.core.v1.PersistentVolume
    fill_claim: k8s.core.v1.PersistentVolumeClaim
    download: k8s.batch.v1.Job
    snapshot: gcp.compute.Snapshot
    disks: dict[str, gcp.compute.Disk]
    volume: k8s.core.v1.PersistentVolume
    claim: k8s.core.v1.PersistentVolumeClaim

    def __init__(self, name: str, args: ModelWeightsArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llm-serving:weights:ModelWeights", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        revision_id = weights_id(args.model, args.revision)
        self.object_name = weights_object_name(args.model, args.revision)
        disk_name = weights_disk_name(args.cluster_name, args.model, args.revision)
        fill_zone = args.zones[0]
        capacity = {"storage": f"{args.size_gib}Gi"}
        gcp_labels = {"weights": revision_id}
        labels = {**args.labels, "llm-serving/weights": revision_id}
        deletion_policy = "PREVENT" if args.protect else "DELETE"
        self.model_path = local_model_path(args.mount_path, args.model)

        self.fill_disk = gcp.compute.Disk(
            f"{name}-fill-disk",
            name=weights_fill_disk_name(args.cluster_name, args.model, args.revision),
            project=args.project,
            zone=fill_zone,
            type=DISK_TYPE,
            size=args.size_gib,
            provisioned_throughput=FILL_DISK_THROUGHPUT_MIBPS,
            access_mode="READ_WRITE_SINGLE",
            labels=gcp_labels,
            opts=child,
        )
        fill_object_name = f"{self.object_name}-fill"
        self.fill_volume = k8s.core.v1.PersistentVolume(
            f"{name}-fill-pv",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=fill_object_name, labels=labels),
            spec=k8s.core.v1.PersistentVolumeSpecArgs(
                access_modes=["ReadWriteOnce"],
                capacity=capacity,
                storage_class_name="",
                persistent_volume_reclaim_policy="Retain",
                volume_mode="Filesystem",
                claim_ref=k8s.core.v1.ObjectReferenceArgs(namespace=args.namespace, name=fill_object_name),
                csi=k8s.core.v1.CSIPersistentVolumeSourceArgs(
                    driver=PD_CSI_DRIVER,
                    volume_handle=self.fill_disk.name.apply(
                        lambda disk: volume_handle(args.project, [fill_zone], disk)
                    ),
                    fs_type="ext4",
                ),
                node_affinity=zone_affinity(CSI_ZONE_KEY, [fill_zone]),
            ),
            opts=child,
        )
        self.fill_claim = k8s.core.v1.PersistentVolumeClaim(
            f"{name}-fill-pvc",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=fill_object_name, namespace=args.namespace, labels=labels),
            spec=k8s.core.v1.PersistentVolumeClaimSpecArgs(
                access_modes=["ReadWriteOnce"],
                storage_class_name="",
                volume_name=self.fill_volume.metadata.name,
                resources=k8s.core.v1.VolumeResourceRequirementsArgs(requests=capacity),
            ),
            opts=child,
        )
        self.download = self._download_job(name, args, labels, fill_zone)

        self.snapshot = gcp.compute.Snapshot(
            f"{name}-snapshot",
            name=disk_name,
            project=args.project,
            zone=fill_zone,
            source_disk=self.fill_disk.name,
            labels=gcp_labels,
            deletion_policy=deletion_policy,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.download], protect=args.protect),
        )
        serving_labels = {**gcp_labels, MULTI_ZONE_LABEL: "true"} if len(args.zones) > 1 else gcp_labels
        self.disks = {
            zone: gcp.compute.Disk(
                f"{name}-disk-{zone}",
                name=disk_name,
                project=args.project,
                zone=zone,
                type=DISK_TYPE,
                size=args.size_gib,
                provisioned_throughput=args.throughput_mibps,
                access_mode="READ_ONLY_MANY",
                snapshot=self.snapshot.name,
                labels=serving_labels,
                deletion_policy=deletion_policy,
                opts=pulumi.ResourceOptions(parent=self, protect=args.protect),
            )
            for zone in args.zones
        }
        serving_disk_name = pulumi.Output.all(*(disk.name for disk in self.disks.values())).apply(
            lambda names: str(names[0])
        )
        self.volume = k8s.core.v1.PersistentVolume(
            f"{name}-pv",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=self.object_name, labels=labels),
            spec=k8s.core.v1.PersistentVolumeSpecArgs(
                access_modes=["ReadOnlyMany"],
                capacity=capacity,
                storage_class_name="",
                persistent_volume_reclaim_policy="Retain",
                volume_mode="Filesystem",
                mount_options=[READ_AHEAD_MOUNT_OPTION],
                claim_ref=k8s.core.v1.ObjectReferenceArgs(namespace=args.namespace, name=self.object_name),
                csi=k8s.core.v1.CSIPersistentVolumeSourceArgs(
                    driver=PD_CSI_DRIVER,
                    volume_handle=serving_disk_name.apply(lambda disk: volume_handle(args.project, args.zones, disk)),
                    fs_type="ext4",
                    read_only=True,
                ),
                node_affinity=zone_affinity(CSI_ZONE_KEY, args.zones),
            ),
            opts=child,
        )
        self.claim = k8s.core.v1.PersistentVolumeClaim(
            f"{name}-pvc",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=self.object_name, namespace=args.namespace, labels=labels),
            spec=k8s.core.v1.PersistentVolumeClaimSpecArgs(
                access_modes=["ReadOnlyMany"],
                storage_class_name="",
                volume_name=self.volume.metadata.name,
                resources=k8s.core.v1.VolumeResourceRequirementsArgs(requests=capacity),
            ),
            opts=child,
        )
        self.register_outputs(
            {
                "claimName": self.claim.metadata.name,
                "modelPath": self.model_path,
                "snapshot": self.snapshot.name,
            }
        )

    def _download_job(self, name: str, args: ModelWeightsArgs, labels: dict[str, str], zone: str) -> k8s.batch.v1.Job:
        downloader = args.downloader
        compute = {"cpu": downloader.cpu, "memory": downloader.memory}
        return k8s.batch.v1.Job(
            f"{name}-download",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=download_job_name(args.model, args.revision), namespace=args.namespace, labels=labels
            ),
            spec=k8s.batch.v1.JobSpecArgs(
                backoff_limit=downloader.retries,
                active_deadline_seconds=DOWNLOAD_DEADLINE_SECONDS,
                template=k8s.core.v1.PodTemplateSpecArgs(
                    metadata=k8s.meta.v1.ObjectMetaArgs(labels=labels),
                    spec=k8s.core.v1.PodSpecArgs(
                        restart_policy="Never",
                        automount_service_account_token=False,
                        enable_service_links=False,
                        node_selector={
                            "cloud.google.com/machine-family": downloader.machine_family,
                            "kubernetes.io/arch": downloader.arch,
                            NODE_ZONE_KEY: zone,
                        },
                        security_context=k8s.core.v1.PodSecurityContextArgs(
                            seccomp_profile=k8s.core.v1.SeccompProfileArgs(type="RuntimeDefault")
                        ),
                        containers=[
                            k8s.core.v1.ContainerArgs(
                                name="download",
                                image=downloader.image,
                                command=["/bin/sh", "-c", DOWNLOAD_SCRIPT],
                                env=[
                                    k8s.core.v1.EnvVarArgs(
                                        name="HF_TOKEN",
                                        value_from=k8s.core.v1.EnvVarSourceArgs(
                                            secret_key_ref=k8s.core.v1.SecretKeySelectorArgs(
                                                name=args.token_secret_name, key=args.token_secret_key
                                            )
                                        ),
                                    ),
                                    k8s.core.v1.EnvVarArgs(name="MODEL", value=args.model),
                                    k8s.core.v1.EnvVarArgs(name="REVISION", value=args.revision),
                                    k8s.core.v1.EnvVarArgs(name="WEIGHTS_ROOT", value=args.mount_path),
                                    k8s.core.v1.EnvVarArgs(name="ATTEMPTS", value=str(downloader.retries + 1)),
                                    k8s.core.v1.EnvVarArgs(name="GIT_TERMINAL_PROMPT", value="0"),
                                ],
                                resources=k8s.core.v1.ResourceRequirementsArgs(requests=compute, limits=compute),
                                security_context=k8s.core.v1.SecurityContextArgs(allow_privilege_escalation=False),
                                volume_mounts=[k8s.core.v1.VolumeMountArgs(name="weights", mount_path=args.mount_path)],
                            )
                        ],
                        volumes=[
                            k8s.core.v1.VolumeArgs(
                                name="weights",
                                persistent_volume_claim=k8s.core.v1.PersistentVolumeClaimVolumeSourceArgs(
                                    claim_name=self.fill_claim.metadata.name
                                ),
                            )
                        ],
                    ),
                ),
            ),
            opts=pulumi.ResourceOptions(
                parent=self,
                custom_timeouts=pulumi.CustomTimeouts(create=DOWNLOAD_TIMEOUT, update=DOWNLOAD_TIMEOUT),
            ),
        )
