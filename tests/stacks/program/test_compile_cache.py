"""The shared compile cache: its bucket, identity and access, the pod that mounts it, and its key."""

from __future__ import annotations

import json
import re

import pytest

from commands.engine.mocks import offline_project_number
from common.compile_cache import compile_cache_key
from components.compile_cache import CSI_DRIVER
from components.vllm import CACHE_ROOT, ENGINE_USER_ID, SHARED_CACHE_ROOT
from policies.rules.startup import compile_cache_key as policy_key
from tests.common.test_compile_cache import engine_with_cache
from tests.conftest import RenderStack
from tests.rendered import RenderedStack
from tests.variants import render_variant


def test_the_pod_mounts_its_configuration_folder() -> None:
    engine, deployment = engine_with_cache()
    template = deployment["spec"]["template"]
    pod, (container,) = template["spec"], template["spec"]["containers"]
    assert template["metadata"]["annotations"] == {"gke-gcsfuse/volumes": "true"}
    assert pod["serviceAccountName"] == "qwen"
    assert pod["automountServiceAccountToken"] is False
    volume = next(volume for volume in pod["volumes"] if volume["name"] == "compile-cache")
    key = engine.compile_cache_key
    assert key is not None and re.fullmatch(r"cfg-[0-9a-f]{16}", key)
    assert volume["csi"] == {
        "driver": CSI_DRIVER,
        "volumeAttributes": {
            "bucketName": "cache-bucket",
            "mountOptions": f"only-dir={key},uid={ENGINE_USER_ID},gid={ENGINE_USER_ID}",
        },
    }
    assert {"name": "compile-cache", "mountPath": SHARED_CACHE_ROOT} in container["volumeMounts"]
    env = {item["name"]: item["value"] for item in container["env"]}
    assert env["VLLM_CACHE_ROOT"] == f"{SHARED_CACHE_ROOT}/vllm"
    assert env["TRITON_CACHE_DIR"] == f"{SHARED_CACHE_ROOT}/triton"
    assert env["TORCHINDUCTOR_CACHE_DIR"] == f"{SHARED_CACHE_ROOT}/torchinductor"
    # HOME stays on the pod's own emptyDir.
    assert env["HOME"] == CACHE_ROOT
    # The key is the pod's own image, arguments and environment, as the policy computes it.
    assert (
        key
        == compile_cache_key(container["image"], container["args"], env)
        == policy_key(container["image"], container["args"], env)
    )


def test_an_existing_cluster_gets_the_mirrors_and_the_cache(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The whole program: the node account the look-up names reads the mirrors, the engine's account
    uses the bucket through the existing cluster's Workload Identity pool, the pods mount it."""
    rendered: RenderedStack = render_variant("existing-startup", render_stack, tmp_path_factory)
    records = {record["name"]: record for record in rendered.resources}
    number = offline_project_number("my-llm-staging")
    reader = records["llm-image-mirror-dockerhub-reader-0"]["inputs"]
    assert reader["member"] == f"serviceAccount:{number}-compute@developer.gserviceaccount.com"
    member = records["llm-compile-cache-object-user"]["inputs"]["member"]
    assert member == (
        f"principal://iam.googleapis.com/projects/{number}/locations/global/workloadIdentityPools/"
        "my-llm-staging.svc.id.goog/subject/ns/llm-serving/sa/qwen-serving"
    )
    services = {
        record["inputs"]["service"] for record in rendered.resources if record["type"] == "gcp:projects/service:Service"
    }
    assert {
        "storage.googleapis.com",
        "artifactregistry.googleapis.com",
        "containerfilesystem.googleapis.com",
    } <= services
    deployment = next(
        item
        for item in rendered.manifests
        if item["kind"] == "Deployment" and item["metadata"]["name"] == "qwen-serving"
    )
    pod = deployment["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "qwen-serving"
    assert any(volume.get("csi", {}).get("driver") == CSI_DRIVER for volume in pod["volumes"])
    policy = json.loads((rendered.directory / "policy.json").read_text())
    assert "LLM-VLLM-015" not in json.dumps(policy.get("violations", policy))
