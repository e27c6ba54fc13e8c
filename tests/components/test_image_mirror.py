"""The registry mirrors on their own, and the image references the pods pull through them."""

from __future__ import annotations

import pytest

from components.image_mirror import (
    ImageMirror,
    ImageMirrorArgs,
    MirrorAddresses,
    pull_policy,
    split_domain,
    through_mirror,
)
from tests.construct import ABSENT, build, children_are_parented, has_resource, of_type

DIGEST = "sha256:" + "ab" * 32
MIRROR = MirrorAddresses.of("my-proj", "europe-west4", "llm")
HUB = "europe-west4-docker.pkg.dev/my-proj/llm-dockerhub"
GHCR = "europe-west4-docker.pkg.dev/my-proj/llm-ghcr"


@pytest.mark.parametrize(
    ("image", "pulled"),
    [
        (f"vllm/vllm-openai:v0.19.0@{DIGEST}", f"{HUB}/vllm/vllm-openai:v0.19.0@{DIGEST}"),
        ("docker.io/vllm/vllm-openai:v0.33.0", f"{HUB}/vllm/vllm-openai:v0.33.0"),
        ("index.docker.io/alpine/git:v2.49.1", f"{HUB}/alpine/git:v2.49.1"),
        # An official image lives under library/ on Docker Hub.
        (f"alpine@{DIGEST}", f"{HUB}/library/alpine@{DIGEST}"),
        ("alpine:3.20", f"{HUB}/library/alpine:3.20"),
        (
            f"ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.10.0@{DIGEST}",
            f"{GHCR}/llm-d/llm-d-router-endpoint-picker:v0.10.0@{DIGEST}",
        ),
        # Registries without a mirror stay as they are.
        ("registry.k8s.io/kubectl:v1.34.1", "registry.k8s.io/kubectl:v1.34.1"),
        (
            "gcr.io/gke-release/custom-metrics-stackdriver-adapter:v0.16.9-gke.0",
            "gcr.io/gke-release/custom-metrics-stackdriver-adapter:v0.16.9-gke.0",
        ),
        ("registry.example.com:5000/vllm/vllm-openai:v0.19.0", "registry.example.com:5000/vllm/vllm-openai:v0.19.0"),
        ("localhost/vllm:v1", "localhost/vllm:v1"),
    ],
)
def test_images_go_through_their_registry_mirror(image: str, pulled: str) -> None:
    assert through_mirror(image, MIRROR) == pulled
    assert through_mirror(image, None) == image


def test_the_registry_of_a_reference_is_read_as_docker_reads_it() -> None:
    assert split_domain("vllm/vllm-openai:v1") == ("docker.io", "vllm/vllm-openai:v1")
    assert split_domain("localhost:5000/x") == ("localhost:5000", "x")
    assert split_domain("my.registry/x/y:1") == ("my.registry", "x/y:1")


def test_a_pinned_image_is_pulled_only_when_absent() -> None:
    assert pull_policy(f"{HUB}/vllm/vllm-openai:v0.19.0@{DIGEST}") == "IfNotPresent"
    assert pull_policy(f"{HUB}/vllm/vllm-openai:v0.33.0") == "Always"


def test_two_remote_repositories_in_the_region_readable_by_the_nodes() -> None:
    built = build(
        lambda: ImageMirror(
            "mirror",
            ImageMirrorArgs(
                project="my-proj",
                region="europe-west4",
                cluster_name="llm",
                node_members=("serviceAccount:llm-nodes@my-proj.iam.gserviceaccount.com",),
                labels={"app": "llm-serving"},
            ),
        )
    )
    common = {"project": "my-proj", "location": "europe-west4", "format": "DOCKER", "mode": "REMOTE_REPOSITORY"}
    has_resource(
        built,
        "gcp:artifactregistry/repository:Repository",
        {
            **common,
            "repositoryId": "llm-dockerhub",
            "remoteRepositoryConfig": {
                "dockerRepository": {"publicRepository": "DOCKER_HUB"},
                "commonRepository": ABSENT,
            },
        },
    )
    has_resource(
        built,
        "gcp:artifactregistry/repository:Repository",
        {
            **common,
            "repositoryId": "llm-ghcr",
            "remoteRepositoryConfig": {"commonRepository": {"uri": "https://ghcr.io"}, "dockerRepository": ABSENT},
        },
    )
    readers = of_type(built, "gcp:artifactregistry/repositoryIamMember:RepositoryIamMember")
    assert sorted(reader.inputs["repository"] for reader in readers) == ["llm-dockerhub", "llm-ghcr"]
    for reader in readers:
        assert reader.inputs["role"] == "roles/artifactregistry.reader"
        assert reader.inputs["member"] == "serviceAccount:llm-nodes@my-proj.iam.gserviceaccount.com"
        assert reader.inputs["location"] == "europe-west4"
    for repository in of_type(built, "gcp:artifactregistry/repository:Repository"):
        assert repository.options["deleteBeforeReplace"] is True
    children_are_parented(built, "llm-serving:images:ImageMirror", "mirror")
