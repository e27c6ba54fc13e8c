"""The compile cache's bucket on its own: private, used by the engine's account through workload
identity, validly named for any cluster; without a cache the pod compiles into its emptyDir."""

from __future__ import annotations

import re

import pytest

from components.compile_cache import CompileCache, CompileCacheArgs, bucket_name
from components.vllm import VllmEngine
from tests.components.test_vllm_component import ARGS
from tests.construct import build, children_are_parented, has_resource

PROJECT = "my-proj"


def test_a_private_bucket_the_engine_account_uses_through_workload_identity() -> None:
    built = build(
        lambda: CompileCache(
            "cache",
            CompileCacheArgs(
                project=PROJECT,
                region="europe-west4",
                cluster_name="llm",
                namespace="serving",
                service_account_name="qwen",
                project_number="123456789012",
                workload_pool=f"{PROJECT}.svc.id.goog",
                max_age_days=30,
                gcp_labels={"app": "llm-serving"},
                kubernetes_labels={"env": "test"},
            ),
        )
    )
    bucket = has_resource(
        built,
        "gcp:storage/bucket:Bucket",
        {
            "name": bucket_name(PROJECT, "llm"),
            "location": "europe-west4",
            "uniformBucketLevelAccess": True,
            "publicAccessPrevention": "enforced",
            "hierarchicalNamespace": {"enabled": True},
            "softDeletePolicy": {"retentionDurationSeconds": 0},
            "lifecycleRules": [{"action": {"type": "Delete"}, "condition": {"age": 30}}],
            "forceDestroy": True,
        },
    )
    assert bucket.options["deleteBeforeReplace"] is True
    has_resource(
        built,
        "kubernetes:core/v1:ServiceAccount",
        {"metadata": {"name": "qwen", "namespace": "serving"}, "automountServiceAccountToken": False},
    )
    has_resource(
        built,
        "gcp:storage/bucketIAMMember:BucketIAMMember",
        {
            "bucket": bucket_name(PROJECT, "llm"),
            "role": "roles/storage.objectUser",
            "member": "principal://iam.googleapis.com/projects/123456789012/locations/global/workloadIdentityPools/"
            f"{PROJECT}.svc.id.goog/subject/ns/serving/sa/qwen",
        },
    )
    children_are_parented(built, "llm-serving:serving:CompileCache", "cache")


@pytest.mark.parametrize("cluster", ["llm-serving", "google-llm", "a" * 40])
def test_the_bucket_name_is_valid_for_any_cluster(cluster: str) -> None:
    name = bucket_name(PROJECT, cluster)
    # Cloud Storage "Bucket naming": 3-63 of [a-z0-9-_.], no "google", not "goog" first.
    assert re.fullmatch(r"[a-z0-9][a-z0-9_-]{1,61}[a-z0-9]", name) and "google" not in name
    assert bucket_name("other-proj", cluster) != name


def test_without_a_cache_the_pod_compiles_into_its_emptydir() -> None:
    def declare() -> None:
        VllmEngine("vllm", ARGS)

    (deployment,) = build(declare).kind("Deployment")
    pod = deployment["spec"]["template"]["spec"]
    assert "serviceAccountName" not in pod
    assert "annotations" not in deployment["spec"]["template"]["metadata"]
    assert all(volume["name"] != "compile-cache" for volume in pod["volumes"])
