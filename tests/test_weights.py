"""Model weights: the download Job, the snapshot, the read-only disks and the claims, their names,
zones and protection."""

from __future__ import annotations

from typing import Any

import pytest

from components.weights import COMPLETE_MARKER, weights_id
from tests.conftest import RenderStack
from tests.rendered import RenderedStack
from tests.schemas import validate_manifest
from tests.variants import render_variant, stack_config, variant_config

WEIGHTS_TYPES = (
    "gcp:compute/disk:Disk",
    "gcp:compute/snapshot:Snapshot",
    "kubernetes:core/v1:PersistentVolume",
    "kubernetes:core/v1:PersistentVolumeClaim",
    "kubernetes:batch/v1:Job",
)


@pytest.fixture(scope="module")
def reserved(render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory) -> RenderedStack:
    return render_variant("reserved", render_stack, tmp_path_factory)


def job(stack: RenderedStack) -> dict[str, Any]:
    (manifest,) = stack.kind("Job")
    return manifest


def by_access_mode(stack: RenderedStack, kind: str, mode: str) -> dict[str, Any]:
    (manifest,) = [item for item in stack.kind(kind) if item["spec"]["accessModes"] == [mode]]
    return manifest


def disks(stack: RenderedStack) -> dict[str, dict[str, Any]]:
    return {record["name"]: record for record in stack.of_type("gcp:compute/disk:Disk")}


def object_names(stack: RenderedStack) -> list[str]:
    """Every weights object's name, Kubernetes and Compute Engine alike."""
    return sorted(
        record["inputs"].get("name") or record["inputs"]["metadata"]["name"] for record in weights_records(stack)
    )


def weights_records(stack: RenderedStack) -> list[dict[str, Any]]:
    return [record for record in stack.resources if record["type"] in WEIGHTS_TYPES]


def test_download_runs_on_c4a_in_the_fill_zone(dev: RenderedStack) -> None:
    config = stack_config("dev")
    pod = job(dev)["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {
        "cloud.google.com/machine-family": "c4a",
        "kubernetes.io/arch": "arm64",
        "topology.kubernetes.io/zone": config.zones[0],
    }
    (download,) = pod["containers"]
    assert download["image"] == config.weights.downloader.image
    assert download["resources"]["requests"] == download["resources"]["limits"] == {"cpu": "4", "memory": "16Gi"}
    assert pod["restartPolicy"] == "Never"
    assert job(dev)["spec"]["backoffLimit"] == config.weights.downloader.retries


def test_token_comes_only_from_the_secret(dev: RenderedStack) -> None:
    (download,) = job(dev)["spec"]["template"]["spec"]["containers"]
    env = {item["name"]: item for item in download["env"]}
    assert env["HF_TOKEN"] == {
        "name": "HF_TOKEN",
        "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token"}},
    }
    assert env["MODEL"]["value"] == "Qwen/Qwen3.5-27B-FP8"
    assert "hf_" not in str(download["command"])


def test_download_is_robust_and_idempotent(dev: RenderedStack) -> None:
    (download,) = job(dev)["spec"]["template"]["spec"]["containers"]
    script = download["command"][-1]
    assert script.index(COMPLETE_MARKER) < script.index("git clone"), "a finished disk is never downloaded again"
    assert "retry git lfs pull" in script
    assert script.rindex("sync") > script.rindex("git lfs pull")


def test_pulumi_waits_for_the_download(dev: RenderedStack) -> None:
    record = dev.one("kubernetes:batch/v1:Job")
    assert record["options"]["customTimeouts"] == {"create": "3h", "update": "3h"}
    assert "llm-hf-token-secret" in record["options"]["dependsOn"]
    snapshot = dev.one("gcp:compute/snapshot:Snapshot")
    assert "llm-weights-download" in snapshot["options"]["dependsOn"]


def test_fill_volume_chain(dev: RenderedStack) -> None:
    config = stack_config("dev")
    fill_disk = disks(dev)["llm-weights-fill-disk"]["inputs"]
    assert fill_disk["accessMode"] == "READ_WRITE_SINGLE"
    assert fill_disk["type"] == "hyperdisk-ml"
    assert fill_disk["zone"] == config.zones[0]
    volume = by_access_mode(dev, "PersistentVolume", "ReadWriteOnce")
    claim = by_access_mode(dev, "PersistentVolumeClaim", "ReadWriteOnce")
    assert volume["spec"]["csi"]["volumeHandle"] == (
        f"projects/{config.project}/zones/{config.zones[0]}/disks/{fill_disk['name']}"
    )
    assert volume["spec"]["claimRef"] == {"name": claim["metadata"]["name"], "namespace": "llm-serving"}
    assert claim["spec"]["volumeName"] == volume["metadata"]["name"]
    (weights_volume,) = job(dev)["spec"]["template"]["spec"]["volumes"]
    assert weights_volume["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]


@pytest.mark.parametrize("name", ["dev", "prod"])
def test_read_only_volume_chain(name: str, render_stack: RenderStack) -> None:
    stack = render_stack(name)
    config = stack_config(name)
    snapshot = stack.one("gcp:compute/snapshot:Snapshot")["inputs"]
    (serving,) = [record["inputs"] for record in disks(stack).values() if record["inputs"].get("snapshot")]
    assert serving["snapshot"] == snapshot["name"]
    assert snapshot["sourceDisk"] == disks(stack)["llm-weights-fill-disk"]["inputs"]["name"]
    assert serving["accessMode"] == "READ_ONLY_MANY"
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
    serving = [record["inputs"] for record in disks(reserved).values() if record["inputs"].get("snapshot")]
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


@pytest.mark.parametrize(("name", "protected"), [("dev", False), ("prod", True)])
def test_weight_disks_protected_in_prod(name: str, protected: bool, render_stack: RenderStack) -> None:
    stack = render_stack(name)
    for record in [*stack.of_type("gcp:compute/snapshot:Snapshot"), *stack.of_type("gcp:compute/disk:Disk")]:
        if record["name"] == "llm-weights-fill-disk":
            assert not record["options"]["protect"]
            continue
        assert record["options"]["protect"] is protected, record["name"]
        assert record["inputs"]["deletionPolicy"] == ("PREVENT" if protected else "DELETE")


def test_every_name_carries_the_revision_hash(dev: RenderedStack) -> None:
    config = stack_config("dev")
    revision_id = weights_id(config.weights.model, config.weights.revision)
    names = object_names(dev)
    assert len(names) == 8
    assert all(f"weights-{revision_id}" in name for name in names)


def test_new_revision_renames_every_weights_object(
    dev: RenderedStack, render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    revised = render_variant("dev-revision", render_stack, tmp_path_factory)
    assert not set(object_names(dev)) & set(object_names(revised))
    (job_before,), (job_after,) = dev.kind("Job"), revised.kind("Job")
    assert job_after["spec"]["template"]["spec"]["containers"][0]["env"][2] == {
        "name": "REVISION",
        "value": "0123456789abcdef0123456789abcdef01234567",
    }
    assert job_before["metadata"]["name"] != job_after["metadata"]["name"]
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


def test_weights_id_is_stable_and_revision_specific() -> None:
    assert weights_id("Qwen/Qwen3.5-27B-FP8", "main") == weights_id("Qwen/Qwen3.5-27B-FP8", "main")
    assert weights_id("Qwen/Qwen3.5-27B-FP8", "main") != weights_id("Qwen/Qwen3.5-27B-FP8", "v2")
