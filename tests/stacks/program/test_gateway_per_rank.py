"""Gateway mode: every data-parallel rank is an endpoint of its own (a container, a port, a target
port of the InferencePool), so the picker's queue, KV-cache and prefix-cache scores are one engine's.
ClusterIP mode keeps the measured layout: one server per pod for all ranks on one port."""

from __future__ import annotations

import re
from typing import Any

import pytest

from commands.render.plan_md import key_settings
from schemas.vllm_args import check_serve_args
from stacks.load.loader import InvalidConfig, validate
from tests.conftest import RenderStack
from tests.rendered import RenderedStack
from tests.variants import render_variant

PORTS = list(range(8000, 8008))


def serving_pod(stack: RenderedStack) -> dict[str, Any]:
    (deployment,) = [m for m in stack.kind("Deployment") if m["metadata"]["name"] == "qwen-serving"]
    pod: dict[str, Any] = deployment["spec"]["template"]["spec"]
    return pod


def one(stack: RenderedStack, kind: str, name: str) -> dict[str, Any]:
    (found,) = [m for m in stack.kind(kind) if m["metadata"]["name"] == name]
    return found


def test_a_target_port_and_a_server_per_rank(staging: RenderedStack) -> None:
    assert one(staging, "InferencePool", "qwen-serving")["spec"]["targetPorts"] == [{"number": p} for p in PORTS]
    containers = serving_pod(staging)["containers"]
    assert len(containers) == 8
    for rank, container in enumerate(containers):
        args = container["args"]
        assert container["command"] == ["vllm", "serve"]
        assert f"--port={8000 + rank}" in args
        # a server of its own (data parallel 1): no rank checks in with another, so one restarts alone
        assert "--data-parallel-size=1" in args
        assert not [arg for arg in args if arg.startswith(("--data-parallel-rank", "--data-parallel-address"))]
        assert container["ports"] == [{"name": f"http-{rank}", "containerPort": 8000 + rank}]
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            assert container[probe]["httpGet"]["port"] == f"http-{rank}", probe
        assert container["resources"]["limits"]["nvidia.com/gpu"] == "1"
        assert container["resources"]["requests"] == container["resources"]["limits"]
        for version in ("0.19.0", "0.33.0"):
            assert check_serve_args(args, version) == [], f"rank {rank}: vLLM {version}'s parser"
    # The pod as a whole keeps the node's shape: 8 GPUs, 200 CPU, 1800Gi.
    limits = [c["resources"]["limits"] for c in containers]
    assert sum(int(limit["nvidia.com/gpu"]) for limit in limits) == 8
    assert {limit["cpu"] for limit in limits} == {"25"}
    assert {limit["memory"] for limit in limits} == {"225Gi"}


def test_monitoring_policies_firewall_and_health_checks_follow_the_ports(staging: RenderedStack) -> None:
    endpoints = one(staging, "PodMonitoring", "qwen-serving")["spec"]["endpoints"]
    assert [endpoint["port"] for endpoint in endpoints] == PORTS
    ingress = one(staging, "NetworkPolicy", "qwen-serving-ingress")["spec"]["ingress"]
    assert [rule["ports"] for rule in ingress] == [[{"protocol": "TCP", "port": 8000, "endPort": 8007}]]
    picker_egress = one(staging, "NetworkPolicy", "qwen-serving-epp")["spec"]["egress"]
    assert [{"protocol": "TCP", "port": 8000, "endPort": 8007}] in [rule.get("ports") for rule in picker_egress]
    check = one(staging, "HealthCheckPolicy", "qwen-serving")["spec"]["default"]["config"]["httpHealthCheck"]
    assert check == {"requestPath": "/health", "portSpecification": "USE_SERVING_PORT"}
    (firewall,) = [
        r for r in staging.of_type("gcp:compute/firewall:Firewall") if r["name"].endswith("serving-firewall")
    ]
    assert firewall["inputs"]["allows"] == [{"protocol": "tcp", "ports": ["8000-8007"]}]
    assert "per data-parallel rank" in staging.plan and "not measured" in staging.plan


def test_plan_md_shows_the_server_a_rank_runs() -> None:
    """A review: plan.md's `vllm serve` row showed one server of data parallel 8 on port 8000 where each container
    runs a server of data parallel 1 on port 8000+i; with data parallel 1 the routing row read "ports 8000-8000"."""
    staging = dict(key_settings(validate({"environment": "staging", "project": "my-llm-staging"})))
    assert staging["vllm serve"].startswith("rank 0 of 8 (rank i the same on port 8000+i): ")
    assert "`--data-parallel-size=1`" in staging["vllm serve"] and "`--port=8000`" in staging["vllm serve"]
    single = validate(
        {
            "environment": "staging",
            "project": "my-llm-staging",
            "engine": {"dataParallelSize": 1, "tensorParallelSize": 8},
        }
    )
    assert "on port 8000 (" in dict(key_settings(single))["routing"]
    dev = dict(key_settings(validate({"environment": "dev", "project": "my-llm-dev"})))
    assert dev["vllm serve"].startswith("`") and "`--data-parallel-size=8`" in dev["vllm serve"]


def test_the_picker_shape_has_no_cpu_limit(staging: RenderedStack) -> None:
    (container,) = one(staging, "Deployment", "qwen-serving-epp")["spec"]["template"]["spec"]["containers"]
    assert "cpu" not in container["resources"]["limits"]
    assert container["resources"]["requests"] == {"cpu": "10", "memory": "24Gi"}


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_clusterip_keeps_one_server_on_one_port(stack: str, request: pytest.FixtureRequest) -> None:
    rendered: RenderedStack = request.getfixturevalue(stack)
    (container,) = serving_pod(rendered)["containers"]
    assert container["name"] == "vllm"
    assert "--port=8000" in container["args"]
    assert not [arg for arg in container["args"] if arg.startswith("--data-parallel-rank")]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == "8"
    assert [e["port"] for e in one(rendered, "PodMonitoring", "qwen-serving")["spec"]["endpoints"]] == [8000]
    assert "the layout the write-up measured with Qwen 3.5 27B" in rendered.plan


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        (
            {"profile": "qwen3.5-122b-a10b-fp8"},
            "engine.enableExpertParallel: routing.mode gateway runs each data-parallel rank in a container of its own",
        ),
        (
            {"engine": {"port": 65530}},
            "engine.port: routing.mode gateway serves rank i on engine.port + i, up to 65537",
        ),
        ({"engine": {"extraArgs": ["--data-parallel-rank=2"]}}, "routing.mode (gateway runs one vllm serve per"),
        ({"engine": {"extraArgs": ["--headless"]}}, "routing.mode"),
        (
            {"startup": {"compileCache": {"enabled": True}}},
            "startup.compileCache: routing.mode gateway runs one vllm serve per data-parallel rank (each on its own "
            "--port)",
        ),
    ],
)
def test_a_per_rank_layout_that_cannot_work_is_refused(settings: dict[str, Any], expected: str) -> None:
    with pytest.raises(InvalidConfig, match=re.escape(expected)):
        validate({"environment": "staging", "project": "my-llm-staging", **settings})


@pytest.fixture(scope="module")
def one_server(render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory) -> RenderedStack:
    return render_variant("staging-one-server", render_stack, tmp_path_factory)


def test_the_gateway_can_keep_the_measured_layout(one_server: RenderedStack) -> None:
    """routing.gateway.endpointPerRank false: one server for all ranks on one port, the pool's one target port
    per pod, and everything that follows the ports with it (a cluster whose InferencePool takes one port)."""
    (container,) = serving_pod(one_server)["containers"]
    assert container["name"] == "vllm" and "--data-parallel-size=8" in container["args"]
    assert "--port=8000" in container["args"]
    assert one(one_server, "InferencePool", "qwen-serving")["spec"]["targetPorts"] == [{"number": 8000}]
    ingress = one(one_server, "NetworkPolicy", "qwen-serving-ingress")["spec"]["ingress"]
    assert [rule["ports"] for rule in ingress] == [[{"protocol": "TCP", "port": 8000}]]
    endpoints = one(one_server, "PodMonitoring", "qwen-serving")["spec"]["endpoints"]
    assert [endpoint["port"] for endpoint in endpoints] == [8000]
    assert "-c vllm" in one_server.outputs["tailLogs"]
    assert (
        "routing.gateway.endpointPerRank false, the pod layout the write-up measured with Qwen 3.5 27B"
        in one_server.plan
    )


def test_the_measured_layout_in_gateway_mode_takes_what_the_per_rank_one_refuses() -> None:
    """Expert parallel and the shared compile cache need the ranks in one server: with one, gateway mode takes them."""
    settings = {"routing": {"mode": "gateway", "gateway": {"endpointPerRank": False}}}
    config = validate(
        {"environment": "staging", "project": "my-llm-staging", **settings, "engine": {"enableExpertParallel": True}}
    )
    assert config.routing.mode.value == "gateway" and not config.serves_per_rank
