"""Every container that runs the vLLM image names its user in the environment: vLLM images from 0.20 on
call `getpass.getuser()` at start, which fails under a UID without a passwd entry unless LOGNAME or USER
is set (CPython Lib/getpass.py), and the stack runs them under such a UID."""

from __future__ import annotations

from typing import Any

import pytest

from components.vllm import PROCESS_USER
from schemas.vllm_releases import IMAGE_REPOSITORY
from tests.conftest import RenderStack
from tests.rendered import RenderedStack
from tests.variants import render_variant


def vllm_containers(stack: RenderedStack) -> list[tuple[str, dict[str, Any]]]:
    found = []
    for manifest in stack.manifests:
        spec = manifest.get("spec", {})
        template = spec.get("template") or spec.get("jobTemplate", {}).get("spec", {}).get("template") or {}
        for container in template.get("spec", {}).get("containers", []):
            if IMAGE_REPOSITORY in str(container.get("image")):
                found.append((f"{manifest['kind']}/{manifest['metadata']['name']}/{container['name']}", container))
    return found


@pytest.mark.parametrize("variant", ["dev", "staging", "prod-benchmark", "dev-35b"])
def test_every_vllm_container_names_its_user(
    variant: str, render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    if variant in ("dev", "staging"):
        stack = render_stack(variant)
    else:
        stack = render_variant(variant, render_stack, tmp_path_factory)
    containers = vllm_containers(stack)
    kinds = {name.split("/", 1)[0] for name, _ in containers}
    assert "Deployment" in kinds
    if variant == "prod-benchmark":
        assert "Job" in kinds, "the benchmark runs the vLLM image too"
    for name, container in containers:
        env = {item["name"]: item.get("value") for item in container.get("env", [])}
        assert env.get("USER") == PROCESS_USER, name
        assert env.get("LOGNAME") == PROCESS_USER, name
        assert container.get("securityContext", {}).get("runAsNonRoot", True)
