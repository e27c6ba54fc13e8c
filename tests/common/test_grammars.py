"""The identifier grammars the config model enforces, on examples from their specifications."""

from __future__ import annotations

import pytest

from common.grammars import (
    hf_repo_problem,
    image_problem,
    mount_path_problem,
    project_id_problem,
    revision_problem,
)

SHA = "sha256:" + "0123456789abcdef" * 4


@pytest.mark.parametrize(
    "image",
    [
        "vllm/vllm-openai:v0.19.0",
        "docker.io/vllm/vllm-openai:v0.19.0",
        "localhost:5000/vllm:v1",
        "us-docker.pkg.dev/my-proj/repo/vllm-openai:v0.19.0",
        f"python@{SHA}",
        f"python:3.12@{SHA}",
        "[::1]:5000/vllm:latest",
        "a__b/c---d.e:1",
    ],
)
def test_valid_image_references(image: str) -> None:
    assert image_problem(image) == ""


@pytest.mark.parametrize(
    "image",
    ["vllm/VLLM:v1", "vllm", "vllm/vllm-openai:", "vllm/vllm-openai:v1 x", "-vllm:v1", "vllm:.v1", "vllm@sha256:12"],
)
def test_invalid_image_references(image: str) -> None:
    assert image_problem(image)


def test_engine_image_needs_a_tag_and_no_inline_digest() -> None:
    assert "digest" in image_problem(f"vllm/vllm-openai:v0.19.0@{SHA}", tag_required=True, digest_allowed=False)
    assert "tag" in image_problem(f"vllm/vllm-openai@{SHA}", tag_required=True)


@pytest.mark.parametrize("model", ["Qwen/Qwen3.5-27B-FP8", "meta-llama/Llama-3.1-8B", "a/b", "org_1/m.v2"])
def test_valid_model_ids(model: str) -> None:
    assert hf_repo_problem(model) == ""


@pytest.mark.parametrize(
    "model", ["gpt2", "a/b/c", "-org/m", "org/m-", "org/m--x", "org/..", "org/m.git", "org/m\u00e9"]
)
def test_invalid_model_ids(model: str) -> None:
    assert hf_repo_problem(model)


@pytest.mark.parametrize("revision", ["main", "v1.0", "refs/pr/1", "0123456789abcdef0123456789abcdef01234567"])
def test_valid_revisions(revision: str) -> None:
    assert revision_problem(revision) == ""


@pytest.mark.parametrize("revision", ["-main", "--upload-pack=x", "a..b", "a//b", "x.lock", "m\u00e4in", "a b"])
def test_invalid_revisions(revision: str) -> None:
    assert revision_problem(revision)


@pytest.mark.parametrize(("project", "valid"), [("my-llm-dev", True), ("my-google-x", False), ("ab-1", False)])
def test_project_ids(project: str, valid: bool) -> None:
    assert (project_id_problem(project) == "") is valid


@pytest.mark.parametrize(("path", "valid"), [("/models", True), ("/mnt/w-1", True), ("/a/./b", False), ("/a/", False)])
def test_mount_paths(path: str, valid: bool) -> None:
    assert (mount_path_problem(path) == "") is valid
