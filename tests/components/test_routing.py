"""ClusterIP routing: the Service in front of the vLLM pods and the endpoint outputs."""

from __future__ import annotations

from typing import Any

import pytest

from stacks.program import serving_selector
from tests.conftest import RenderStack
from tests.rendered import RenderedStack
from tests.variants import stack_config


def service(stack: RenderedStack, name: str) -> dict[str, Any]:
    (manifest,) = [item for item in stack.kind("Service") if item["metadata"]["name"] == name]
    return manifest


@pytest.mark.parametrize("name", ["dev", "prod"])
def test_cluster_ip_service_fronts_the_pods(name: str, render_stack: RenderStack) -> None:
    stack = render_stack(name)
    config = stack_config(name)
    manifest = service(stack, config.routing.service_name)
    assert manifest["metadata"]["name"] != "vllm"
    spec = manifest["spec"]
    assert spec["type"] == "ClusterIP"
    assert spec["selector"] == serving_selector(config)
    assert spec["ports"] == [{"name": "http", "port": 8000, "protocol": "TCP", "targetPort": "http"}]
    (deployment,) = stack.kind("Deployment")
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert spec["selector"].items() <= pod_labels.items()
    (vllm,) = deployment["spec"]["template"]["spec"]["containers"]
    assert {"name": "http", "containerPort": 8000} in vllm["ports"]


@pytest.mark.parametrize("name", ["dev", "prod"])
def test_outputs_give_the_endpoint_and_a_ready_example(name: str, render_stack: RenderStack) -> None:
    outputs = render_stack(name).outputs
    assert outputs["endpoint"] == "http://qwen-serving.llm-serving.svc.cluster.local:8000/v1"
    assert outputs["servedModelName"] == "Qwen/Qwen3.5-27B-FP8"
    assert outputs["tryIt"].startswith("kubectl -n llm-serving port-forward service/qwen-serving 8000:8000")
    assert "curl -sS http://localhost:8000/v1/chat/completions" in outputs["tryIt"]
    assert '"model":"Qwen/Qwen3.5-27B-FP8"' in outputs["tryIt"]


def test_gateway_mode_declares_no_cluster_ip_routing(staging: RenderedStack) -> None:
    assert not staging.of_type("llm-serving:routing:ClusterIpRouting")
