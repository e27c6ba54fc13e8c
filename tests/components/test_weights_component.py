"""ModelWeights on its own: the fill path on a first up, the serving disks always, protection."""

from __future__ import annotations

import dataclasses

import pytest

from components.weights import DownloaderArgs, ModelWeights, ModelWeightsArgs, WeightsImageError, weights_disk_name
from tests.construct import (
    ABSENT,
    Built,
    build,
    children_are_parented,
    has_resource,
    of_type,
    resource_count_is,
)

MODEL, REVISION = "Qwen/Qwen3.5-27B-FP8", "main"
DISK = weights_disk_name("c1", MODEL, REVISION)
ARGS = ModelWeightsArgs(
    project="my-proj",
    region="us-central1",
    zones=["us-central1-b"],
    cluster_name="c1",
    namespace="serving",
    model=MODEL,
    revision=REVISION,
    size_gib=100,
    throughput_mibps=2400,
    mount_path="/models",
    downloader=DownloaderArgs(
        image="alpine/git:v2.49.1", machine_family="c4a", arch="arm64", cpu="4", memory="16Gi", retries=5
    ),
    token_secret_name="hf-token",
    token_secret_key="token",
    keep_on_delete=False,
)
DISK_TYPE = "gcp:compute/disk:Disk"
JOB = "kubernetes:batch/v1:Job"


def build_weights(
    existing_images: frozenset[str] = frozenset(),
    image_sizes: dict[str, int] | None = None,
    image_look_up_error: str | None = None,
    **changes: object,
) -> Built:
    args = dataclasses.replace(ARGS, **changes)  # type: ignore[arg-type]
    return build(
        lambda: ModelWeights("weights", args),
        existing_images,
        image_sizes=image_sizes,
        image_look_up_error=image_look_up_error,
    )


def test_first_up_fills_a_scratch_disk_with_a_download_job() -> None:
    records = build_weights()
    has_resource(records, DISK_TYPE, {"name": f"{DISK}-fill", "type": "hyperdisk-balanced", "zone": "us-central1-b"})
    job = has_resource(
        records,
        JOB,
        {
            "metadata": {"annotations": {"pulumi.com/replaceUnready": "true"}},
            "spec": {
                "backoffLimit": 5,
                "template": {
                    "spec": {
                        "nodeSelector": {"cloud.google.com/machine-family": "c4a", "kubernetes.io/arch": "arm64"},
                        "containers": [
                            {
                                "image": "alpine/git:v2.49.1",
                                "resources": {"requests": {"cpu": "4", "memory": "16Gi"}},
                            }
                        ],
                    }
                },
            },
        },
    )
    env = {item["name"]: item.get("value") for item in job.inputs["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["ATTEMPTS"] == "6" and "HF_TOKEN" not in env
    snapshot = has_resource(
        records, "gcp:compute/snapshot:Snapshot", {"name": DISK, "storageLocations": ["us-central1"]}
    )
    assert any(JOB in urn for urn in snapshot.options["dependsOn"])
    children_are_parented(records, "llm-serving:weights:ModelWeights", "weights")


def test_serving_disks_come_from_the_image_read_only_in_every_zone() -> None:
    records = build_weights(zones=["us-central1-b", "us-central1-c"])
    has_resource(
        records,
        "gcp:compute/image:Image",
        {"name": DISK, "sourceSnapshot": f"projects/my-proj/global/snapshots/{DISK}", "deletionPolicy": "DELETE"},
    )
    for zone in ("us-central1-b", "us-central1-c"):
        has_resource(
            records,
            DISK_TYPE,
            {
                "name": DISK,
                "zone": zone,
                "type": "hyperdisk-ml",
                "size": 100,
                "provisionedThroughput": 2400,
                "accessMode": "READ_ONLY_MANY",
                "labels": {"goog-gke-multi-zone": "true"},
            },
        )
    volume = has_resource(
        records,
        "kubernetes:core/v1:PersistentVolume",
        {
            "spec": {
                "accessModes": ["ReadOnlyMany"],
                "mountOptions": ["read_ahead_kb=4096"],
                "csi": {"volumeHandle": f"projects/my-proj/zones/multi-zone/disks/{DISK}", "readOnly": True},
            }
        },
    )
    has_resource(
        records,
        "kubernetes:core/v1:PersistentVolumeClaim",
        {"spec": {"accessModes": ["ReadOnlyMany"], "volumeName": volume.inputs["metadata"]["name"]}},
    )


@pytest.mark.parametrize("existing_images", [frozenset(), frozenset({DISK})], ids=["fill", "serve"])
def test_a_volume_is_reserved_for_its_claim_and_a_new_namespace_replaces_both(existing_images: frozenset[str]) -> None:
    """Kubernetes keeps the bound claim's uid in claimRef, so a claim in another namespace is a new volume (the
    trigger), delete-first under its fixed name, and the claim goes before it (replaceWith)."""
    records = build_weights(existing_images)
    volumes = of_type(records, "kubernetes:core/v1:PersistentVolume")
    assert len(volumes) == (1 if existing_images else 2)
    for volume in volumes:
        name = volume.inputs["metadata"]["name"]
        has_resource([volume], volume.type, {"spec": {"claimRef": {"namespace": "serving", "name": name}}})
        assert volume.options["replacementTrigger"] == "serving" and volume.options["deleteBeforeReplace"] is True
        (claim,) = [
            claim
            for claim in of_type(records, "kubernetes:core/v1:PersistentVolumeClaim")
            if claim.inputs["spec"]["volumeName"] == name
        ]
        assert claim.inputs["metadata"]["namespace"] == "serving"
        assert claim.options["replaceWith"] == [volume.urn]


def test_once_the_image_exists_nothing_is_downloaded() -> None:
    records = build_weights(existing_images=frozenset({DISK}))
    resource_count_is(records, JOB, 0)
    resource_count_is(records, "gcp:compute/snapshot:Snapshot", 0)
    assert [record.inputs["type"] for record in of_type(records, DISK_TYPE)] == ["hyperdisk-ml"]
    has_resource(records, "gcp:compute/image:Image", {"name": DISK})


def test_disks_smaller_than_the_existing_image_stop_the_program_before_any_step() -> None:
    """GCP makes no disk smaller than its source image; the image keeps the size of the disk it was downloaded to,
    so a later, smaller `weights.sizeGib` would fail the disks' create after the old ones were deleted."""
    with pytest.raises(WeightsImageError) as refused:
        build_weights(existing_images=frozenset({DISK}), image_sizes={DISK: 100}, size_gib=80)
    message = str(refused.value)
    assert message.startswith(f"weights.sizeGib: 80 GiB is smaller than the weights image {DISK} (100 GiB")
    assert "allowed: 100 or more" in message and f"gcloud compute images delete {DISK} --project my-proj" in message
    for size in (100, 150):  # as large as the image or larger: made from it
        records = build_weights(existing_images=frozenset({DISK}), image_sizes={DISK: 100}, size_gib=size)
        has_resource(records, DISK_TYPE, {"name": DISK, "size": size})


API_OFF = (
    "googleapi: Error 403: Compute Engine API has not been used in project 123 before or it is disabled. Enable it by "
    "visiting https://console.developers.google.com/apis/api/compute.googleapis.com/overview?project=123 then retry., "
    "accessNotConfigured"
)


def test_only_a_compute_api_still_off_reads_as_no_image_yet() -> None:
    """A destroy/failure review: every failed look-up declared the fill path, so on a stack that made its image a
    transient error (a 5xx, a quota) downloaded the checkpoint again (a new scratch disk, Job and snapshot)."""
    first_up = build_weights(image_look_up_error=API_OFF)
    resource_count_is(first_up, JOB, 1)
    assert any("Compute Engine is off in this project" in line for line in first_up.warnings)
    for message in (
        "googleapi: Error 503: Backend Error, backendError",
        "Quota exceeded for quota metric 'Read'",
        "googleapi: Error 403: Cloud Resource Manager API has not been used in project 123 before or it is disabled.",
    ):
        with pytest.raises(WeightsImageError) as refused:
            build_weights(image_look_up_error=message)
        said = str(refused.value)
        assert said.startswith(f"cannot look up the weights image {DISK} (") and message in said, said
        assert "the program stopped before it declared the weights: run `pulumi up` again" in said


def test_protected_weights_are_abandoned_not_deleted() -> None:
    records = build_weights(keep_on_delete=True, existing_images=frozenset({DISK}))
    has_resource(records, "gcp:compute/image:Image", {"deletionPolicy": "ABANDON"})
    has_resource(records, DISK_TYPE, {"deletionPolicy": "ABANDON", "labels": {"goog-gke-multi-zone": ABSENT}})
