"""Model weights: the fill path (scratch disk, download Job, snapshot), the regional image, the
read-only disks and claims, their revision-scoped names, the lifecycle across ups and protection."""

from __future__ import annotations

from typing import Any

import pytest

from commands.engine import mocks
from commands.stackfile import stack_settings
from components.image_mirror import MirrorAddresses, through_mirror
from components.weights import (
    COMPLETE_MARKER,
    DOWNLOAD_USER_ID,
    REPLACE_UNREADY_ANNOTATION,
    TOKEN_DIRECTORY,
    weights_id,
)
from stacks.config.weights import IMAGE_DIGEST
from stacks.load.loader import InvalidConfig, validate
from tests.conftest import RenderStack
from tests.construct import ImageLookUpFails
from tests.manifest_schemas import validate_manifest
from tests.rendered import RenderedStack, run_program
from tests.variants import render_variant, stack_config, variant_config

WEIGHTS_TYPES = (
    "gcp:compute/disk:Disk",
    "gcp:compute/snapshot:Snapshot",
    "gcp:compute/image:Image",
    "kubernetes:core/v1:PersistentVolume",
    "kubernetes:core/v1:PersistentVolumeClaim",
    "kubernetes:batch/v1:Job",
)


FILL_PHASE_TYPES = {"gcp:compute/snapshot:Snapshot", "kubernetes:batch/v1:Job"}


@pytest.fixture(scope="module")
def reserved(render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory) -> RenderedStack:
    return render_variant("reserved", render_stack, tmp_path_factory)


def job(stack: RenderedStack) -> dict[str, Any]:
    """The download Job (the stack also runs a Job that waits for GKE's CRDs)."""
    (manifest,) = [manifest for manifest in stack.kind("Job") if manifest["metadata"]["name"].endswith("-download")]
    return manifest


def by_access_mode(stack: RenderedStack, kind: str, mode: str) -> dict[str, Any]:
    (manifest,) = [item for item in stack.kind(kind) if item["spec"]["accessModes"] == [mode]]
    return manifest


def serving_disks(stack: RenderedStack) -> list[dict[str, Any]]:
    return [
        record
        for record in stack.of_type("gcp:compute/disk:Disk")
        if record["inputs"].get("accessMode") == "READ_ONLY_MANY"
    ]


def fill_disk(stack: RenderedStack) -> dict[str, Any]:
    (record,) = [
        record for record in stack.of_type("gcp:compute/disk:Disk") if record["inputs"].get("accessMode") is None
    ]
    return record


def weights_records(stack: RenderedStack) -> list[dict[str, Any]]:
    return [
        record
        for record in stack.resources
        if record["type"] in WEIGHTS_TYPES and record["name"].startswith("llm-weights-")
    ]


def object_names(stack: RenderedStack) -> list[str]:
    """Every weights object's name, Kubernetes and Compute Engine alike."""
    return sorted(
        record["inputs"].get("name") or record["inputs"]["metadata"]["name"] for record in weights_records(stack)
    )


def test_download_runs_on_c4a_in_the_fill_zone(dev: RenderedStack) -> None:
    config = stack_config("dev")
    pod = job(dev)["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {
        "cloud.google.com/machine-family": "c4a",
        "kubernetes.io/arch": "arm64",
        "topology.kubernetes.io/zone": config.zones[0],
    }
    (download,) = pod["containers"]
    # Docker Hub's alpine/git through the stack's mirror in the region.
    mirror = MirrorAddresses.of(config.project, config.region, config.cluster.name)
    assert download["image"] == through_mirror(config.weights.downloader.image, mirror)
    assert download["image"].startswith(f"{mirror.docker_hub}/alpine/git:")
    assert IMAGE_DIGEST.search(download["image"]), "the downloader image is pinned by digest"
    assert download["resources"]["requests"] == download["resources"]["limits"] == {"cpu": "4", "memory": "16Gi"}
    assert pod["restartPolicy"] == "Never"
    assert job(dev)["spec"]["backoffLimit"] == config.weights.downloader.retries


def test_token_reaches_the_job_only_as_a_mounted_file(dev: RenderedStack) -> None:
    pod = job(dev)["spec"]["template"]["spec"]
    (download,) = pod["containers"]
    env = {item["name"]: item for item in download["env"]}
    assert all("valueFrom" not in item for item in download["env"]), "no secret in the environment"
    assert env["HF_TOKEN_FILE"]["value"] == f"{TOKEN_DIRECTORY}/token"
    assert env["GIT_CONFIG_KEY_0"]["value"] == "credential.helper"
    assert '"$HF_TOKEN_FILE"' in env["GIT_CONFIG_VALUE_0"]["value"]
    token_volume = next(volume for volume in pod["volumes"] if "secret" in volume)
    assert token_volume["secret"] == {
        "secretName": "hf-token",
        "items": [{"key": "token", "path": "token"}],
        "defaultMode": 0o440,
    }
    assert {"name": token_volume["name"], "mountPath": TOKEN_DIRECTORY, "readOnly": True} in download["volumeMounts"]
    assert "apt-get" not in download["command"][-1], "nothing is installed at run time"


def test_download_pod_is_hardened(dev: RenderedStack) -> None:
    pod = job(dev)["spec"]["template"]["spec"]
    (download,) = pod["containers"]
    assert pod["securityContext"] == {
        "runAsNonRoot": True,
        "runAsUser": DOWNLOAD_USER_ID,
        "runAsGroup": DOWNLOAD_USER_ID,
        "fsGroup": DOWNLOAD_USER_ID,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert download["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    env = {item["name"]: item["value"] for item in download["env"]}
    home = next(mount for mount in download["volumeMounts"] if mount["mountPath"] == env["HOME"])
    assert any(volume["name"] == home["name"] and "emptyDir" in volume for volume in pod["volumes"])


def test_download_is_robust_and_idempotent(dev: RenderedStack) -> None:
    (download,) = job(dev)["spec"]["template"]["spec"]["containers"]
    script = download["command"][-1]
    assert script.index(COMPLETE_MARKER) < script.index("git clone"), "a finished disk is never downloaded again"
    assert "retry git lfs pull" in script
    assert script.rindex("sync") > script.rindex("git lfs pull")


def test_a_failed_download_is_replaced_on_the_next_up(dev: RenderedStack) -> None:
    assert job(dev)["metadata"]["annotations"] == {REPLACE_UNREADY_ANNOTATION: "true"}
    (record,) = [item for item in dev.of_type("kubernetes:batch/v1:Job") if item["name"].endswith("-download")]
    assert record["options"]["customTimeouts"] == {"create": "3h", "update": "3h"}
    assert "llm-hf-token-secret" in record["options"]["dependsOn"]


def test_the_logs_of_the_download_are_an_output(dev: RenderedStack) -> None:
    name = job(dev)["metadata"]["name"]
    assert dev.outputs["weightsDownloadLogs"] == f"kubectl logs --namespace llm-serving job/{name} --all-containers"


def test_fill_path_uses_a_disk_c4a_attaches(dev: RenderedStack) -> None:
    config = stack_config("dev")
    scratch = fill_disk(dev)["inputs"]
    assert scratch["type"] == "hyperdisk-balanced"
    assert scratch["zone"] == config.zones[0]
    volume = by_access_mode(dev, "PersistentVolume", "ReadWriteOnce")
    claim = by_access_mode(dev, "PersistentVolumeClaim", "ReadWriteOnce")
    assert volume["spec"]["csi"]["volumeHandle"] == (
        f"projects/{config.project}/zones/{config.zones[0]}/disks/{scratch['name']}"
    )
    assert volume["spec"]["claimRef"] == {"name": claim["metadata"]["name"], "namespace": "llm-serving"}
    assert claim["spec"]["volumeName"] == volume["metadata"]["name"]
    weights_volume = next(v for v in job(dev)["spec"]["template"]["spec"]["volumes"] if "persistentVolumeClaim" in v)
    assert weights_volume["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]


def test_snapshot_then_regional_image_then_serving_disks(dev: RenderedStack) -> None:
    config = stack_config("dev")
    snapshot = dev.one("gcp:compute/snapshot:Snapshot")
    assert snapshot["inputs"]["sourceDisk"] == fill_disk(dev)["inputs"]["name"]
    assert snapshot["inputs"]["storageLocations"] == [config.region]
    assert "llm-weights-" in snapshot["name"] and any(
        "download" in dependency for dependency in snapshot["options"]["dependsOn"]
    )
    image = dev.one("gcp:compute/image:Image")
    assert image["inputs"]["sourceSnapshot"] == (
        f"projects/{config.project}/global/snapshots/{snapshot['inputs']['name']}"
    )
    assert image["inputs"]["storageLocations"] == [config.region]
    assert snapshot["name"] in image["options"]["dependsOn"]
    (serving,) = serving_disks(dev)
    assert serving["inputs"]["image"].endswith(f"/{image['inputs']['name']}"), "created from the image's self link"
    assert image["name"] in serving["options"]["dependsOn"]
    assert serving["inputs"]["type"] == "hyperdisk-ml"


@pytest.mark.parametrize("name", ["dev", "prod"])
def test_read_only_volume_chain(name: str, render_stack: RenderStack) -> None:
    stack = render_stack(name)
    config = stack_config(name)
    (serving,) = [record["inputs"] for record in serving_disks(stack)]
    assert (serving["size"], serving["provisionedThroughput"]) == (
        config.weights.size_gib,
        config.weights.throughput_mibps,
    )
    volume = by_access_mode(stack, "PersistentVolume", "ReadOnlyMany")
    claim = by_access_mode(stack, "PersistentVolumeClaim", "ReadOnlyMany")
    assert volume["spec"]["csi"] == {
        "driver": "pd.csi.storage.gke.io",
        "fsType": "ext4",
        "readOnly": True,
        "volumeHandle": f"projects/{config.project}/zones/{config.zones[0]}/disks/{serving['name']}",
    }
    assert volume["spec"]["mountOptions"] == ["read_ahead_kb=4096"]
    assert volume["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    assert claim["spec"]["volumeName"] == volume["metadata"]["name"]
    assert claim["spec"]["resources"]["requests"]["storage"] == volume["spec"]["capacity"]["storage"]


def test_one_read_only_disk_per_zone_behind_one_claim(reserved: RenderedStack) -> None:
    config = variant_config("reserved")
    serving = [record["inputs"] for record in serving_disks(reserved)]
    assert sorted(disk["zone"] for disk in serving) == config.zones
    assert len({disk["name"] for disk in serving}) == 1
    assert all(disk["labels"]["goog-gke-multi-zone"] == "true" for disk in serving)
    volume = by_access_mode(reserved, "PersistentVolume", "ReadOnlyMany")
    assert volume["spec"]["csi"]["volumeHandle"] == (
        f"projects/{config.project}/zones/multi-zone/disks/{serving[0]['name']}"
    )
    (term,) = volume["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
    assert term["matchExpressions"] == [{"key": "topology.gke.io/zone", "operator": "In", "values": config.zones}]
    assert len(reserved.kind("PersistentVolumeClaim")) == 2


def test_variant_manifests_validate(reserved: RenderedStack) -> None:
    for manifest in reserved.manifests:
        validate_manifest(manifest)


@pytest.mark.parametrize(("name", "policy"), [("dev", "DELETE"), ("prod", "ABANDON")])
def test_serving_data_is_kept_without_blocking_a_revision_change(
    name: str, policy: str, render_stack: RenderStack
) -> None:
    """prod keeps the image and the serving disks when Pulumi deletes them (ABANDON); nothing
    carries `protect` or PREVENT, which would make the engine refuse a revision change."""
    stack = render_stack(name)
    kept = [*stack.of_type("gcp:compute/image:Image"), *serving_disks(stack)]
    assert kept and all(record["inputs"]["deletionPolicy"] == policy for record in kept)
    for record in weights_records(stack):
        assert not record["options"]["protect"], record["name"]
        assert record["inputs"].get("deletionPolicy") != "PREVENT", record["name"]
    scratch = [fill_disk(stack), stack.one("gcp:compute/snapshot:Snapshot")]
    assert all("deletionPolicy" not in record["inputs"] for record in scratch), "scratch storage is always deleted"


def test_every_logical_and_cloud_name_carries_the_revision_id(dev: RenderedStack) -> None:
    config = stack_config("dev")
    revision_id = weights_id(config.weights.model, config.weights.revision)
    records = weights_records(dev)
    assert len(records) == 9
    assert all(record["name"].startswith(f"llm-weights-{revision_id}-") for record in records)
    assert all(f"weights-{revision_id}" in name for name in object_names(dev))


def test_new_revision_declares_new_objects_and_rolls_the_deployment(
    dev: RenderedStack, render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    revised = render_variant("dev-revision", render_stack, tmp_path_factory)
    assert not {record["name"] for record in weights_records(dev)} & {
        record["name"] for record in weights_records(revised)
    }, "no logical name is shared, so the engine creates the new revision instead of replacing the old one"
    assert not set(object_names(dev)) & set(object_names(revised))
    env = {item["name"]: item["value"] for item in job(revised)["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["REVISION"] == "0123456789abcdef0123456789abcdef01234567"
    (deployment,) = revised.kind("Deployment")
    claim = by_access_mode(revised, "PersistentVolumeClaim", "ReadOnlyMany")
    volumes = deployment["spec"]["template"]["spec"]["volumes"]
    assert {"claimName": claim["metadata"]["name"], "readOnly": True} in [
        volume.get("persistentVolumeClaim") for volume in volumes
    ]


def test_same_revision_declares_the_same_weights_objects(
    dev: RenderedStack, render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    unchanged = render_variant("dev-engine", render_stack, tmp_path_factory)
    assert [(record["type"], record["name"], record["inputs"]) for record in weights_records(unchanged)] == [
        (record["type"], record["name"], record["inputs"]) for record in weights_records(dev)
    ]


def test_the_up_after_the_fill_releases_the_scratch_storage(dev: RenderedStack) -> None:
    """Once the revision's image exists, the program declares neither the scratch disk nor its
    volume, claim, Job and snapshot (the engine deletes them), and the image and serving objects
    keep exactly the inputs of the first up (no replacement)."""
    image_name = dev.outputs["weightsImage"]
    monitor = mocks.RecordingMonitor(mocks.OfflineMocks(existing_images=frozenset({image_name})))
    result = run_program(stack_settings.load_stack_settings("dev"), monitor=monitor)
    after = {
        (registration.type, registration.name): registration.inputs
        for registration in result.registrations
        if registration.type in WEIGHTS_TYPES and registration.name.startswith("llm-weights-")
    }
    first_up = {(record["type"], record["name"]): record for record in weights_records(dev)}
    released = {key for key in first_up if key not in after}
    assert {kind for kind, _ in released} == FILL_PHASE_TYPES | {
        "gcp:compute/disk:Disk",
        "kubernetes:core/v1:PersistentVolume",
        "kubernetes:core/v1:PersistentVolumeClaim",
    }
    assert len(released) == 5
    assert "weightsDownloadLogs" not in result.outputs
    for key, inputs in after.items():
        assert key in first_up, key
        if key[0].startswith("gcp:"):
            assert inputs == first_up[key]["inputs"], key


# An empty project whose Compute Engine API this `up` has yet to enable: the image look-up fails.
COMPUTE_API_OFF = "Compute Engine API has not been used in project my-llm-dev or it is disabled"


def test_a_failed_image_look_up_declares_the_fill_path(dev: RenderedStack) -> None:
    """First `up` on an empty project: the look-up runs before the API is on; the program must still
    declare exactly what a successful look-up that found nothing declares, and say why."""
    monitor = mocks.RecordingMonitor(ImageLookUpFails(COMPUTE_API_OFF))
    result = run_program(stack_settings.load_stack_settings("dev"), monitor=monitor)
    declared = sorted((registration.type, registration.name) for registration in result.registrations)
    assert declared == sorted((record["type"], record["name"]) for record in dev.resources)
    assert any("cannot look up image" in line for line in result.logs)


PROD = {"environment": "prod", "project": "my-llm-prod", "weights": {"revision": "ab" * 20}}


def test_prod_refuses_a_moving_revision() -> None:
    with pytest.raises(InvalidConfig, match=r"weights\.revision: 'main' can move; prod needs an immutable 40-hex"):
        validate({**PROD, "weights": {"revision": "main"}})
    assert validate(PROD).weights.pinned
    assert not validate({"environment": "dev", "project": "my-llm-dev"}).weights.pinned, "dev may follow main"


def test_prod_refuses_a_downloader_image_without_digest() -> None:
    with pytest.raises(InvalidConfig, match=r"weights\.downloader\.image: prod pins the downloader image by digest"):
        validate({**PROD, "weights": {"revision": "ab" * 20, "downloader": {"image": "alpine/git:v2.49.1"}}})
