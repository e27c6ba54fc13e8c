"""The in-cluster benchmark Job as the stack declares it: opt-in, clients, command line, hardening,
ordering, its target and its network policy; invalid settings."""

from __future__ import annotations

import json
import re
import shlex
from typing import Any

import pytest

from components import startup_report
from components.benchmark import client_command
from stacks.args import benchmark_args
from stacks.load.loader import InvalidConfig, validate
from tests.conftest import RenderStack
from tests.rendered import RenderedStack
from tests.variants import render_variant, stack_settings

BASE = {"project": "my-llm-dev", "region": "us-central1", "zones": ["us-central1-b"]}


@pytest.fixture(scope="module")
def prod_benchmark(render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory) -> RenderedStack:
    return render_variant("prod-benchmark", render_stack, tmp_path_factory)


def job_of(rendered: RenderedStack) -> dict[str, Any]:
    (job,) = [job for job in rendered.kind("Job") if job["metadata"]["name"].endswith("-bench")]
    return job


def test_benchmark_is_opt_in(prod: RenderedStack) -> None:
    assert not [job for job in prod.kind("Job") if job["metadata"]["name"].endswith("-bench")]
    assert "benchmarkLogs" not in prod.outputs


def test_clients_split_the_stack_concurrency(prod_benchmark: RenderedStack) -> None:
    script = job_of(prod_benchmark)["spec"]["template"]["spec"]["containers"][0]["command"][2]
    clients = [shlex.split(line.split(" > ")[0]) for line in script.splitlines() if line.startswith("vllm bench serve")]
    assert len(clients) == 24, "12 nodes x 2,000 concurrent requests at 1,000 per client"
    assert {arg for client in clients for arg in client if arg.startswith("--max-concurrency")} == {
        "--max-concurrency=1000"
    }
    assert sorted(arg for client in clients for arg in client if arg.startswith("--seed=")) == sorted(
        f"--seed={index}" for index in range(1, 25)
    ), "every client draws its own prompts"
    assert 'wait "$pid" || status=1' in script
    assert 'python3 -c "$SUMMARY_SCRIPT" /results' in script


def test_client_command_line_is_the_inferencemax_method(prod_benchmark: RenderedStack) -> None:
    script = job_of(prod_benchmark)["spec"]["template"]["spec"]["containers"][0]["command"][2]
    first = next(line for line in script.splitlines() if line.startswith("vllm bench serve"))
    assert shlex.split(first.split(" > ")[0]) == [
        "vllm",
        "bench",
        "serve",
        "--backend=openai",
        "--base-url=http://qwen-serving.llm-serving.svc.cluster.local:8000",
        "--endpoint=/v1/completions",
        "--model=Qwen/Qwen3.5-27B-FP8",
        "--served-model-name=Qwen/Qwen3.5-27B-FP8",
        "--tokenizer=Qwen/Qwen3.5-27B-FP8",
        "--dataset-name=random",
        "--random-input-len=1024",
        "--random-output-len=512",
        "--random-range-ratio=0.5",
        "--ignore-eos",
        "--request-rate=inf",
        "--max-concurrency=1000",
        "--num-prompts=10000",
        "--percentile-metrics=ttft,tpot,itl,e2el",
        "--metric-percentiles=50,99",
        "--seed=1",
        "--ready-check-timeout-sec=3600",
        "--save-result",
        "--result-dir=/results",
        "--result-filename=client-1.json",
        "--disable-tqdm",
    ]


def test_job_runs_hardened_on_a_dedicated_c4_node_with_the_engine_image(prod_benchmark: RenderedStack) -> None:
    job = job_of(prod_benchmark)
    pod = job["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    (engine,) = prod_benchmark.kind("Deployment")
    assert container["image"] == engine["spec"]["template"]["spec"]["containers"][0]["image"]
    assert pod["nodeSelector"] == {
        "cloud.google.com/compute-class": "Performance",
        "cloud.google.com/machine-family": "c4",
        "kubernetes.io/arch": "amd64",
    }
    assert container["resources"]["requests"]["cpu"] == "15"
    assert container["resources"]["requests"] == container["resources"]["limits"]
    # the token of a service account that may only read pods, their logs and events (the start-up report)
    assert pod["serviceAccountName"] == job["metadata"]["name"]
    (role,) = [role for role in prod_benchmark.kind("Role") if role["metadata"]["name"] == job["metadata"]["name"]]
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]},
        {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
        {"apiGroups": [""], "resources": ["events"], "verbs": ["list"]},
    ]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    assert job["spec"]["backoffLimit"] == 0
    assert job["metadata"]["annotations"]["pulumi.com/skipAwait"] == "true"


def test_job_starts_after_the_engine_and_the_service(prod_benchmark: RenderedStack) -> None:
    job = next(record for record in prod_benchmark.resources if record["name"] == "llm-benchmark-job")
    component = prod_benchmark.named("llm-benchmark")
    assert job["parent"] == "llm-benchmark"
    assert {"llm-vllm-deployment", "llm-routing-service"} <= set(component["options"]["dependsOn"])
    assert prod_benchmark.outputs["benchmarkCompare"].endswith("| .venv/bin/bench-compare prod-benchmark -")


def test_gateway_target_uses_the_gateway_address() -> None:
    config = validate(
        {
            "environment": "staging",
            **BASE,
            "benchmark": {"enabled": True, "gatewayAddress": "10.128.0.42"},
        }
    )
    args = benchmark_args(config)
    assert "--base-url=http://10.128.0.42:80" in client_command(args, 1)
    assert args.clients == 8


@pytest.mark.parametrize(
    ("environment", "settings", "message"),
    [
        ("staging", {"enabled": True}, "invalid stack config: benchmark.gatewayAddress: required"),
        ("staging", {"enabled": True, "target": "service"}, "invalid stack config: benchmark.target: 'service'"),
        ("dev", {"enabled": True, "target": "gateway"}, "invalid stack config: benchmark.target: 'gateway'"),
        ("prod", {"enabled": True, "cpu": 4}, "invalid stack config: benchmark.cpu: 4 vCPU cannot drive 24,000"),
        ("dev", {"enabled": True, "gatewayAddress": "gw"}, "invalid stack config: benchmark.gatewayAddress"),
        ("dev", {"enabled": True, "rangeRatio": 1.5}, "invalid stack config: benchmark.rangeRatio"),
    ],
)
def test_invalid_benchmark_settings_are_one_line_errors(
    environment: str, settings: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidConfig) as error:
        validate({**stack_settings(environment), "benchmark": settings})
    assert str(error.value).startswith(message)


def test_benchmark_pod_reaches_only_dns_https_and_the_endpoint(prod_benchmark: RenderedStack) -> None:
    (policy,) = [item for item in prod_benchmark.kind("NetworkPolicy") if item["metadata"]["name"].endswith("-bench")]
    job = job_of(prod_benchmark)
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= job["spec"]["template"]["metadata"]["labels"].items()
    assert policy["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert "ingress" not in policy["spec"]
    endpoint = policy["spec"]["egress"][-1]
    assert endpoint["to"] == [{"podSelector": {"matchLabels": {"app": "qwen-serving"}}}]
    assert endpoint["ports"] == [{"protocol": "TCP", "port": 8000}]
    assert [rule["ports"][0]["port"] for rule in policy["spec"]["egress"][:-1]] == [53, 443]


def test_gateway_benchmark_may_reach_only_the_gateway_address() -> None:
    config = validate(
        {"environment": "staging", **BASE, "benchmark": {"enabled": True, "gatewayAddress": "10.128.0.42"}}
    )
    args = benchmark_args(config)
    assert (args.gateway_address, args.gateway_port) == ("10.128.0.42", 80)


def test_a_log_based_metric_and_a_panel_show_each_serving_pods_time_to_ready(
    prod_benchmark: RenderedStack, prod: RenderedStack
) -> None:
    metric = prod_benchmark.one("gcp:logging/metric:Metric")["inputs"]
    namespace = job_of(prod_benchmark)["metadata"]["namespace"]
    assert metric["filter"] == (
        f'resource.type="k8s_container" AND resource.labels.namespace_name="{namespace}" '
        'AND resource.labels.container_name="bench" AND textPayload:"STARTUP_PHASES "'
    )
    assert metric["metricDescriptor"]["valueType"] == "DISTRIBUTION"
    assert metric["metricDescriptor"]["labels"] == [
        {"key": "serving_pod", "valueType": "STRING", "description": "The serving pod reported."}
    ]
    # the extractors find the values of a real report line
    line = startup_report.line({"pod": "qwen-serving-1", "phases": {"scheduledSeconds": 330.0, "readySeconds": 900.5}})
    value = re.fullmatch(r'REGEXP_EXTRACT\(textPayload, "(.*)"\)', metric["valueExtractor"])
    label = re.fullmatch(r'REGEXP_EXTRACT\(textPayload, "(.*)"\)', metric["labelExtractors"]["serving_pod"])
    assert value and label
    found_value = re.search(value.group(1).replace('\\"', '"'), line)
    found_label = re.search(label.group(1).replace('\\"', '"'), line)
    assert found_value and found_value.group(1) == "900.5"
    assert found_label and found_label.group(1) == "qwen-serving-1"
    dashboard = json.loads(prod_benchmark.one("gcp:monitoring/dashboard:Dashboard")["inputs"]["dashboardJson"])
    (panel,) = [tile for tile in dashboard["mosaicLayout"]["tiles"] if "Time to ready" in tile["widget"]["title"]]
    query = panel["widget"]["xyChart"]["dataSets"][0]["timeSeriesQuery"]["timeSeriesFilter"]
    assert query["filter"] == f'metric.type="logging.googleapis.com/user/{metric["name"]}"'
    assert query["aggregation"]["groupByFields"] == ["metric.label.serving_pod"]
    # without the benchmark Job nothing reports it: no metric
    assert not prod.of_type("gcp:logging/metric:Metric")


def test_clients_read_the_api_key_from_the_secret_the_engine_reads() -> None:
    """engine.secretEnv.VLLM_API_KEY puts a key on the engine: the clients need it, or every request is a 401."""
    dev = {"environment": "dev", **BASE, "benchmark": {"enabled": True}}
    assert benchmark_args(validate(dev)).api_key_secret is None
    other = validate({**dev, "engine": {"secretEnv": {"OPENAI_API_KEY": "openaiApiKey"}}})
    assert benchmark_args(other).api_key_secret is None, "a key the engine does not check"
    keyed = validate({**dev, "engine": {"secretEnv": {"VLLM_API_KEY": "vllmApiKey"}}})
    assert benchmark_args(keyed).api_key_secret == "qwen-serving-engine-env"
