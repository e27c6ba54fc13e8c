"""Model weights on Hyperdisk ML: downloaded once per model revision, served read-only to every
serving node.

Every object of a revision carries the revision's id (a short hash of `model@revision`) in its
Pulumi logical name and in its cloud name, so a new revision declares new objects beside the old
ones instead of replacing them; an unchanged revision declares exactly the same objects.

The path follows GKE's "Accelerate AI/ML data loading with Hyperdisk ML" (populate a disk, take a
disk image, create the READ_ONLY_MANY Hyperdisk ML volumes from it). Two phases, decided at every
`pulumi up` by looking up the revision's disk image (`gcp.compute.get_images`, a list that is empty
when the image does not exist yet):

* Fill (no image yet): a Hyperdisk Balanced scratch disk in the first zone (a Hyperdisk type C4A
  attaches; Hyperdisk ML attachment by C4A is not documented), its static PersistentVolume and
  ReadWriteOnce claim, a download Job on a C4A node that clones the checkpoint with Git LFS, and a
  snapshot of the filled disk (a snapshot may be taken while the disk is still attached).
* Serve (always): a disk image made from that snapshot, stored in the stack's region
  (`storage_locations`), one READ_ONLY_MANY Hyperdisk ML disk per serving zone created from the
  image, one static PersistentVolume (multi-zone handle for several zones) and one ReadOnlyMany
  claim that the Deployment mounts.

The image takes its source snapshot by name, not by reference, so its inputs are the same in both
phases: the `pulumi up` after the one that created the image no longer declares the scratch disk,
its volume, claim, Job and snapshot, and the engine deletes them (Job first, disk last). No paid
scratch storage outlives that next `up`; the image (billed per GB stored, in the region) stays as
the source for the serving disks and for a zone added later.

A failed download does not wedge later ups: the Job carries `pulumi.com/replaceUnready: "true"`
(pulumi-kubernetes provider.go Diff: an unready Job is scheduled for replacement), so the next `up`
replaces a Failed Job; the scratch disk keeps finished Git LFS objects and the new Job resumes.

Protection (`keep_on_delete`, on in prod): the image and the serving disks carry the pulumi-gcp
`deletionPolicy: ABANDON` ("When set to ABANDON, the command will remove the resource from
Terraform management without updating or deleting the resource in the API", pulumi-gcp 10.2.0
`compute/disk.py`, `compute/image.py`). A revision change or `pulumi destroy` therefore removes
them from the stack without deleting them (the engine never refuses, unlike `protect` or
`PREVENT`), and the serving revision's data survives any Pulumi operation. Old revisions are then
cleaned up by hand: `gcloud compute disks list --filter=labels.weights=<old id>` and
`gcloud compute images list --filter=labels.weights=<old id>`, then `delete` (docs/weights.md).
Without protection they are deleted with the stack.
"""

from __future__ import annotations

import hashlib
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from components.hardening import restricted_container_context

SERVING_DISK_TYPE = "hyperdisk-ml"
# C4A attaches Hyperdisk types only, not Persistent Disk (nextflow-io/nextflow#6841: "C4, C4A, C4D
# ... do not support pd-balanced"); Hyperdisk Balanced is the general-purpose type and C4A's boot
# disk. The Compute Engine "C4A machine series" disk table itself could not be read here.
FILL_DISK_TYPE = "hyperdisk-balanced"
PD_CSI_DRIVER = "pd.csi.storage.gke.io"
CSI_ZONE_KEY = "topology.gke.io/zone"
NODE_ZONE_KEY = "topology.kubernetes.io/zone"
MULTI_ZONE_LABEL = "goog-gke-multi-zone"
READ_AHEAD_MOUNT_OPTION = "read_ahead_kb=4096"
# pulumi-kubernetes (metadata/annotations.go AnnotationReplaceUnready, "Add replaceUnready
# annotation for Jobs" since 3.2.0): the next update replaces a Job that is not Complete.
REPLACE_UNREADY_ANNOTATION = "pulumi.com/replaceUnready"
DOWNLOAD_TIMEOUT = "3h"
DOWNLOAD_DEADLINE_SECONDS = 3 * 3600
COMPLETE_MARKER = ".download-complete"
TOKEN_DIRECTORY = "/var/run/secrets/huggingface"
SCRATCH_DIRECTORY = "/tmp"
# The downloader image's user is irrelevant: the Job runs as this unprivileged id (above 10000,
# no clash with host users) with HOME on an emptyDir, and fsGroup makes the disk writable.
DOWNLOAD_USER_ID = 10001
KEEP_DELETION_POLICY = "ABANDON"

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

# Git reads the token through this credential helper from the mounted Secret file: never a URL,
# an argument, an environment variable or a file the Job writes.
CREDENTIAL_HELPER = (
    '!f() { test "$1" = get || exit 0; echo username=hf; printf "password="; cat "$HF_TOKEN_FILE"; echo; }; f'
)


def weights_id(model: str, revision: str) -> str:
    """A short, stable hash of what is on the disk: it names every object of one revision."""
    return hashlib.sha256(f"{model}@{revision}".encode()).hexdigest()[:10]


def weights_object_name(model: str, revision: str) -> str:
    """The name of the Kubernetes objects (volumes, claims, Job prefix) of one revision."""
    return f"weights-{weights_id(model, revision)}"


def serving_volume_name(model: str, revision: str, zones: Sequence[str], size_gib: int) -> str:
    """The name of the serving PersistentVolume and claim: the revision, and a short hash of the zones
    and size. A static volume's handle, node affinity and capacity cannot change in place (a bound
    volume is not deleted while pods use it, and a claim without a StorageClass is not resized), so a
    new set of zones or size makes a new volume and claim, the Deployment rolls onto it, and the old
    pair is deleted once no pod uses it."""
    layout = hashlib.sha256(f"{','.join(zones)}|{size_gib}".encode()).hexdigest()[:6]
    return f"{weights_object_name(model, revision)}-{layout}"


def download_job_name(model: str, revision: str) -> str:
    return f"{weights_object_name(model, revision)}-download"


def weights_disk_name(cluster_name: str, model: str, revision: str) -> str:
    """The serving disks, the disk image and the snapshot (Compute Engine names: RFC 1035, <= 63)."""
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


class WeightsImageError(pulumi.RunError):
    """The serving disks would be smaller than the revision's existing image, or whether the image exists could
    not be told (the message says what to do)."""


# What the image look-up says on a project whose Compute Engine API is still off, the first `up` of an empty
# project: googleapi's 403 "Compute Engine API has not been used in project N before or it is disabled. ...,
# accessNotConfigured", with the ErrorInfo reason SERVICE_DISABLED in newer replies; the API is named.
COMPUTE_API_OFF = ("accessNotConfigured", "SERVICE_DISABLED", "it is disabled")
COMPUTE_API_NAMES = ("Compute Engine", "compute.googleapis.com")


@dataclass(frozen=True)
class DownloaderArgs:
    """The one-off Job that copies the checkpoint from Hugging Face onto the scratch disk."""

    image: str
    machine_family: str
    arch: str
    cpu: str
    memory: str
    retries: int


@dataclass(frozen=True)
class ModelWeightsArgs:
    project: str
    region: str
    zones: Sequence[str]
    cluster_name: str
    namespace: pulumi.Input[str]
    model: str
    revision: str
    size_gib: int
    throughput_mibps: int
    mount_path: str
    downloader: DownloaderArgs
    token_secret_name: pulumi.Input[str]
    token_secret_key: str
    keep_on_delete: bool
    labels: dict[str, str] = field(default_factory=dict)


class ModelWeights(pulumi.ComponentResource):
    TYPE = "llm-serving:weights:ModelWeights"
    fill_disk: gcp.compute.Disk | None
    fill_volume: k8s.core.v1.PersistentVolume | None
    fill_claim: k8s.core.v1.PersistentVolumeClaim | None
    download: k8s.batch.v1.Job | None
    snapshot: gcp.compute.Snapshot | None
    image: gcp.compute.Image
    disks: dict[str, gcp.compute.Disk]
    volume: k8s.core.v1.PersistentVolume
    claim: k8s.core.v1.PersistentVolumeClaim

    def __init__(self, name: str, args: ModelWeightsArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(self.TYPE, name, None, opts)
        self.revision_id = weights_id(args.model, args.revision)
        self.object_name = weights_object_name(args.model, args.revision)
        revision_name = f"{name}-{self.revision_id}"
        disk_name = weights_disk_name(args.cluster_name, args.model, args.revision)
        fill_disk_name = weights_fill_disk_name(args.cluster_name, args.model, args.revision)
        fill_zone = args.zones[0]
        capacity = {"storage": f"{args.size_gib}Gi"}
        gcp_labels = {"weights": self.revision_id}
        labels = {**args.labels, "llm-serving/weights": self.revision_id}
        deletion_policy = KEEP_DELETION_POLICY if args.keep_on_delete else "DELETE"
        self.model_path = local_model_path(args.mount_path, args.model)
        self.image_name = disk_name

        self.fill_disk = self.fill_volume = self.fill_claim = self.download = self.snapshot = None
        fill_steps: list[pulumi.Resource] = []
        image_gib = self._existing_image_gib(args.project)
        if image_gib is not None and args.size_gib < image_gib:
            raise WeightsImageError(
                f"weights.sizeGib: {args.size_gib} GiB is smaller than the weights image {self.image_name} "
                f"({image_gib} GiB, made from a disk of the size this setting had when it was downloaded), and GCP "
                "makes no disk smaller than its source image; allowed: "
                f"{image_gib} or more, or download again at the new size: delete the image (`gcloud compute images "
                f"delete {self.image_name} --project {args.project}`), then run `pulumi up --refresh`"
            )
        if image_gib is None:
            fill_steps = self._declare_fill(
                revision_name, args, fill_disk_name, fill_zone, capacity, gcp_labels, labels
            )

        self.image = gcp.compute.Image(
            f"{revision_name}-image",
            name=self.image_name,
            project=args.project,
            # By name, so that the inputs stay the same once the snapshot is gone.
            source_snapshot=f"projects/{args.project}/global/snapshots/{disk_name}",
            storage_locations=[args.region],
            labels=gcp_labels,
            deletion_policy=deletion_policy,
            opts=pulumi.ResourceOptions(parent=self, depends_on=fill_steps),
        )
        serving_labels = {**gcp_labels, MULTI_ZONE_LABEL: "true"} if len(args.zones) > 1 else gcp_labels
        self.disks = {
            zone: gcp.compute.Disk(
                f"{revision_name}-disk-{zone}",
                name=disk_name,
                project=args.project,
                zone=zone,
                type=SERVING_DISK_TYPE,
                size=args.size_gib,
                provisioned_throughput=args.throughput_mibps,
                access_mode="READ_ONLY_MANY",
                image=self.image.self_link,
                labels=serving_labels,
                deletion_policy=deletion_policy,
                opts=pulumi.ResourceOptions(parent=self),
            )
            for zone in args.zones
        }
        serving_disk_name = pulumi.Output.all(*(disk.name for disk in self.disks.values())).apply(
            lambda names: str(names[0])
        )
        volume_name = serving_volume_name(args.model, args.revision, args.zones, args.size_gib)
        volume_logical_name = f"{name}-{volume_name.removeprefix('weights-')}"
        self.volume, self.claim = self._static_volume(
            volume_logical_name,
            volume_name,
            args,
            disk_name=serving_disk_name,
            zones=args.zones,
            read_only=True,
            capacity=capacity,
            labels=labels,
        )
        self.download_logs_command: pulumi.Output[str] | None = (
            None
            if self.download is None
            else pulumi.Output.concat(
                "kubectl logs --namespace ", args.namespace, " job/", self.download.metadata.name, " --all-containers"
            )
        )
        self.register_outputs(
            {
                "claimName": self.claim.metadata.name,
                "modelPath": self.model_path,
                "image": self.image.name,
                "downloadLogs": self.download_logs_command,
            }
        )

    def _static_volume(
        self,
        logical_prefix: str,
        object_name: str,
        args: ModelWeightsArgs,
        disk_name: pulumi.Input[str],
        zones: Sequence[str],
        read_only: bool,
        capacity: dict[str, str],
        labels: dict[str, str],
    ) -> tuple[k8s.core.v1.PersistentVolume, k8s.core.v1.PersistentVolumeClaim]:
        """A static PersistentVolume on an existing Compute Engine disk and the claim bound to it:
        ReadWriteOnce for the scratch disk the download writes, ReadOnlyMany (read-only, with read-ahead)
        for the serving disks every node attaches.

        The volume is reserved for its claim (`claimRef`, as Kubernetes' "Reserving a PersistentVolume" asks, so no
        other claim binds it first) and the claim names it (`volumeName`). Binding, the volume controller adds the
        claim's uid to `claimRef` and owns that field alone (`claimRef` is `+structType=granular`): a claim in another
        namespace, applied in place, would keep the old uid, and the volume would stay bound to the old claim with the
        new one Pending. So the namespace is the volume's replacement trigger. The engine then skips the provider's
        Diff (pulumi `step_generator.go`), so the delete-first that a fixed name needs is set here, and the claim is
        replaced with its volume (`replace_with`: deleted before it, `findDependentCascadeReplacements`), since a
        volume is not deleted while a claim is bound to it (the `kubernetes.io/pv-protection` finalizer)."""
        access_mode = "ReadOnlyMany" if read_only else "ReadWriteOnce"
        volume = k8s.core.v1.PersistentVolume(
            f"{logical_prefix}-pv",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=object_name, labels=labels),
            spec=k8s.core.v1.PersistentVolumeSpecArgs(
                access_modes=[access_mode],
                capacity=capacity,
                storage_class_name="",
                persistent_volume_reclaim_policy="Retain",
                volume_mode="Filesystem",
                mount_options=[READ_AHEAD_MOUNT_OPTION] if read_only else None,
                claim_ref=k8s.core.v1.ObjectReferenceArgs(namespace=args.namespace, name=object_name),
                csi=k8s.core.v1.CSIPersistentVolumeSourceArgs(
                    driver=PD_CSI_DRIVER,
                    volume_handle=pulumi.Output.from_input(disk_name).apply(
                        lambda disk: volume_handle(args.project, zones, disk)
                    ),
                    fs_type="ext4",
                    read_only=True if read_only else None,
                ),
                node_affinity=zone_affinity(CSI_ZONE_KEY, zones),
            ),
            opts=pulumi.ResourceOptions(parent=self, replacement_trigger=args.namespace, delete_before_replace=True),
        )
        claim = k8s.core.v1.PersistentVolumeClaim(
            f"{logical_prefix}-pvc",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=object_name, namespace=args.namespace, labels=labels),
            spec=k8s.core.v1.PersistentVolumeClaimSpecArgs(
                access_modes=[access_mode],
                storage_class_name="",
                volume_name=volume.metadata.name,
                resources=k8s.core.v1.VolumeResourceRequirementsArgs(requests=capacity),
            ),
            opts=pulumi.ResourceOptions(parent=self, replace_with=[volume]),
        )
        return volume, claim

    def _existing_image_gib(self, project: str) -> int | None:
        """The size of this revision's image when an earlier `up` already made it (then nothing is downloaded), else
        None. A disk made from the image is at least that large: GCP refuses a smaller one (terraform-provider-google
        `google_compute_disk` `size`: "must not be less than the size of the image"), and this `up` would delete the
        old serving disk, its volume and claim before that create fails, so a smaller `weights.sizeGib` stops the
        program before any step.

        The look-up runs when the program runs, before any resource of this `up` exists: on an empty
        project the Compute Engine API this stack enables is still off and the call fails; that means
        "not made yet", and the fill path is declared. Any other failure (a quota, a 5xx, a permission)
        stops the program: on a stack that made its image, declaring the fill path again would download
        the checkpoint again (a new scratch disk, up to the Job's timeout, a new snapshot)."""
        try:
            found = gcp.compute.get_images(
                project=project,
                filter=f"name = {self.image_name}",
                opts=pulumi.InvokeOptions(parent=self),
            )
        except Exception as error:  # the invoke's error type is the provider's
            said = " ".join(str(error).split())
            if not (any(mark in said for mark in COMPUTE_API_OFF) and any(name in said for name in COMPUTE_API_NAMES)):
                raise WeightsImageError(
                    f"cannot look up the weights image {self.image_name} ({said}); the program stopped before it "
                    "declared the weights: run `pulumi up` again once the look-up works (without it this `up` would "
                    "download the checkpoint again)"
                ) from None
            pulumi.log.warn(
                f"cannot look up image {self.image_name}: Compute Engine is off in this project ({said}); "
                "declaring the fill path",
                self,
            )
            return None
        sizes = [image.disk_size_gb for image in found.images or [] if image.name == self.image_name]
        return sizes[0] if sizes else None

    def _declare_fill(
        self,
        revision_name: str,
        args: ModelWeightsArgs,
        fill_disk_name: str,
        fill_zone: str,
        capacity: dict[str, str],
        gcp_labels: dict[str, str],
        labels: dict[str, str],
    ) -> list[pulumi.Resource]:
        """Declare the scratch disk, its volume and claim, the download Job and the snapshot;
        return what the image waits for."""
        child = pulumi.ResourceOptions(parent=self)
        fill_disk = gcp.compute.Disk(
            f"{revision_name}-fill-disk",
            name=fill_disk_name,
            project=args.project,
            zone=fill_zone,
            type=FILL_DISK_TYPE,
            size=args.size_gib,
            labels=gcp_labels,
            opts=child,
        )
        fill_object_name = f"{self.object_name}-fill"
        fill_volume, fill_claim = self._static_volume(
            f"{revision_name}-fill",
            fill_object_name,
            args,
            disk_name=fill_disk.name,
            zones=[fill_zone],
            read_only=False,
            capacity=capacity,
            labels=labels,
        )
        download = self._download_job(revision_name, args, labels, fill_zone, fill_claim)
        snapshot = gcp.compute.Snapshot(
            f"{revision_name}-snapshot",
            name=self.image_name,
            project=args.project,
            zone=fill_zone,
            source_disk=fill_disk.name,
            storage_locations=[args.region],
            labels=gcp_labels,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[download]),
        )
        self.fill_disk, self.fill_volume, self.fill_claim = fill_disk, fill_volume, fill_claim
        self.download, self.snapshot = download, snapshot
        return [download, snapshot]

    def _download_job(
        self,
        revision_name: str,
        args: ModelWeightsArgs,
        labels: dict[str, str],
        zone: str,
        fill_claim: k8s.core.v1.PersistentVolumeClaim,
    ) -> k8s.batch.v1.Job:
        downloader = args.downloader
        compute = {"cpu": downloader.cpu, "memory": downloader.memory}
        token_file = posixpath.join(TOKEN_DIRECTORY, args.token_secret_key)
        return k8s.batch.v1.Job(
            f"{revision_name}-download",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=download_job_name(args.model, args.revision),
                namespace=args.namespace,
                labels=labels,
                annotations={REPLACE_UNREADY_ANNOTATION: "true"},
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
                            run_as_non_root=True,
                            run_as_user=DOWNLOAD_USER_ID,
                            run_as_group=DOWNLOAD_USER_ID,
                            fs_group=DOWNLOAD_USER_ID,
                            seccomp_profile=k8s.core.v1.SeccompProfileArgs(type="RuntimeDefault"),
                        ),
                        containers=[
                            k8s.core.v1.ContainerArgs(
                                name="download",
                                image=downloader.image,
                                image_pull_policy="IfNotPresent",
                                command=["/bin/sh", "-c", DOWNLOAD_SCRIPT],
                                env=[
                                    k8s.core.v1.EnvVarArgs(name="HF_TOKEN_FILE", value=token_file),
                                    k8s.core.v1.EnvVarArgs(name="MODEL", value=args.model),
                                    k8s.core.v1.EnvVarArgs(name="REVISION", value=args.revision),
                                    k8s.core.v1.EnvVarArgs(name="WEIGHTS_ROOT", value=args.mount_path),
                                    k8s.core.v1.EnvVarArgs(name="ATTEMPTS", value=str(downloader.retries + 1)),
                                    k8s.core.v1.EnvVarArgs(name="HOME", value=SCRATCH_DIRECTORY),
                                    k8s.core.v1.EnvVarArgs(name="GIT_TERMINAL_PROMPT", value="0"),
                                    k8s.core.v1.EnvVarArgs(name="GIT_LFS_SKIP_SMUDGE", value="1"),
                                    k8s.core.v1.EnvVarArgs(name="GIT_CONFIG_COUNT", value="1"),
                                    k8s.core.v1.EnvVarArgs(name="GIT_CONFIG_KEY_0", value="credential.helper"),
                                    k8s.core.v1.EnvVarArgs(name="GIT_CONFIG_VALUE_0", value=CREDENTIAL_HELPER),
                                ],
                                resources=k8s.core.v1.ResourceRequirementsArgs(requests=compute, limits=compute),
                                security_context=restricted_container_context(),
                                volume_mounts=[
                                    k8s.core.v1.VolumeMountArgs(name="weights", mount_path=args.mount_path),
                                    k8s.core.v1.VolumeMountArgs(
                                        name="hf-token", mount_path=TOKEN_DIRECTORY, read_only=True
                                    ),
                                    k8s.core.v1.VolumeMountArgs(name="scratch", mount_path=SCRATCH_DIRECTORY),
                                ],
                            )
                        ],
                        volumes=[
                            k8s.core.v1.VolumeArgs(
                                name="weights",
                                persistent_volume_claim=k8s.core.v1.PersistentVolumeClaimVolumeSourceArgs(
                                    claim_name=fill_claim.metadata.name
                                ),
                            ),
                            k8s.core.v1.VolumeArgs(
                                name="hf-token",
                                secret=k8s.core.v1.SecretVolumeSourceArgs(
                                    secret_name=args.token_secret_name,
                                    items=[
                                        k8s.core.v1.KeyToPathArgs(key=args.token_secret_key, path=args.token_secret_key)
                                    ],
                                    # read by the Job's group (fsGroup) only
                                    default_mode=0o440,
                                ),
                            ),
                            k8s.core.v1.VolumeArgs(
                                name="scratch", empty_dir=k8s.core.v1.EmptyDirVolumeSourceArgs(size_limit="1Gi")
                            ),
                        ],
                    ),
                ),
            ),
            opts=pulumi.ResourceOptions(
                parent=self,
                custom_timeouts=pulumi.CustomTimeouts(create=DOWNLOAD_TIMEOUT, update=DOWNLOAD_TIMEOUT),
            ),
        )
