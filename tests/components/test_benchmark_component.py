"""BenchmarkJob on its own: N parallel `vllm bench serve` clients in one pod, and where they may connect."""

from __future__ import annotations

import dataclasses

from components.benchmark import BenchmarkJob, BenchmarkJobArgs
from tests.construct import Built, build, children_are_parented, has_resource

ARGS = BenchmarkJobArgs(
    job_name="qwen-bench",
    namespace="serving",
    image="vllm/vllm-openai:v0.19.0",
    base_url="http://qwen.serving.svc.cluster.local:8000",
    served_model_name="m",
    tokenizer="Qwen/Qwen3.5-27B-FP8",
    clients=3,
    concurrency_per_client=1000,
    prompts_per_concurrency=10,
    input_len=1024,
    output_len=512,
    range_ratio=0.5,
    ignore_eos=True,
    ready_timeout_seconds=3600,
    deadline_seconds=14400,
    machine_family="c4",
    cpu=15,
    memory="48Gi",
    serving_selector={"app": "qwen"},
    serving_port=8000,
    serving_container="vllm",
)


def build_benchmark(**changes: object) -> Built:
    args = dataclasses.replace(ARGS, **changes)  # type: ignore[arg-type]
    return build(lambda: BenchmarkJob("bench", args))


def test_one_pod_runs_every_client() -> None:
    records = build_benchmark()
    job = has_resource(
        records,
        "kubernetes:batch/v1:Job",
        {
            "metadata": {"name": "qwen-bench", "annotations": {"pulumi.com/skipAwait": "true"}},
            "spec": {
                "backoffLimit": 0,
                "activeDeadlineSeconds": 14400,
                "template": {
                    "spec": {
                        "nodeSelector": {"cloud.google.com/machine-family": "c4", "kubernetes.io/arch": "amd64"},
                        "containers": [{"resources": {"requests": {"cpu": "15", "memory": "48Gi"}}}],
                    }
                },
            },
        },
    )
    script = job.inputs["spec"]["template"]["spec"]["containers"][0]["command"][2]
    clients = [line for line in script.splitlines() if line.startswith("vllm bench serve")]
    assert len(clients) == 3
    for index, line in enumerate(clients, start=1):
        for flag in (
            "--max-concurrency=1000",
            "--num-prompts=10000",
            "--random-input-len=1024",
            "--random-range-ratio=0.5",
            "--ignore-eos",
            f"--seed={index}",
        ):
            assert flag in line.split(), (index, flag)
    children_are_parented(records, "llm-serving:benchmark:BenchmarkJob", "bench")


def endpoint_rule(records: Built) -> dict[str, object]:
    """The egress rule besides DNS and public HTTPS: where the clients send their load."""
    policy = has_resource(
        records,
        "kubernetes:networking.k8s.io/v1:NetworkPolicy",
        {
            "metadata": {"name": "qwen-bench"},
            "spec": {"podSelector": {"matchLabels": {"llm-serving/benchmark": "qwen-bench"}}},
        },
    )
    rule: dict[str, object] = policy.inputs["spec"]["egress"][-1]
    return rule


def test_clients_may_reach_the_serving_pods_or_only_the_gateway() -> None:
    assert endpoint_rule(build_benchmark()) == {
        "to": [{"podSelector": {"matchLabels": {"app": "qwen"}}}],
        "ports": [{"protocol": "TCP", "port": 8000}],
    }
    assert endpoint_rule(build_benchmark(gateway_address="10.1.2.3", gateway_port=80)) == {
        "to": [{"ipBlock": {"cidr": "10.1.2.3/32"}}],
        "ports": [{"protocol": "TCP", "port": 80}],
    }


def test_no_eos_flag_when_responses_may_stop_early() -> None:
    (job,) = [r for r in build_benchmark(ignore_eos=False) if r.type == "kubernetes:batch/v1:Job"]
    assert "--ignore-eos" not in job.inputs["spec"]["template"]["spec"]["containers"][0]["command"][2]


def test_the_pod_reports_the_serving_pods_start_up_after_the_clients() -> None:
    (job,) = [r for r in build_benchmark() if r.type == "kubernetes:batch/v1:Job"]
    spec = job.inputs["spec"]["template"]["spec"]
    script = spec["containers"][0]["command"][2]
    lines = script.splitlines()
    report = next(index for index, line in enumerate(lines) if "$STARTUP_SCRIPT" in line)
    assert report > max(index for index, line in enumerate(lines) if line.startswith("vllm bench serve"))
    assert '"$POD_NAMESPACE" app=qwen vllm' in lines[report]
    env = {item["name"]: item for item in spec["containers"][0]["env"]}
    assert "STARTUP_PHASES" in env["STARTUP_SCRIPT"]["value"]
    assert env["POD_NAMESPACE"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}


def test_the_report_may_get_nodes_and_nothing_more_of_the_cluster() -> None:
    """The report tells a node made for the pod from one that was up by the node's creation time: a ClusterRole
    that only gets nodes, bound to the Job's service account, named per namespace (cluster-wide names)."""
    built = build_benchmark()
    role = has_resource(built, "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole")
    assert role.inputs["rules"] == [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}]
    assert role.inputs["metadata"]["name"] == "serving-qwen-bench-nodes"
    binding = has_resource(
        built,
        "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding",
        {"roleRef": {"kind": "ClusterRole", "name": "serving-qwen-bench-nodes"}},
    )
    assert binding.inputs["subjects"] == [{"kind": "ServiceAccount", "name": "qwen-bench", "namespace": "serving"}]
    children_are_parented(built, "llm-serving:benchmark:BenchmarkJob", "bench")


def test_clients_send_the_engines_api_key_from_its_secret_never_its_value() -> None:
    """vLLM's OpenAI request functions send `Authorization: Bearer $OPENAI_API_KEY`
    (vllm/benchmarks/lib/endpoint_request_func.py _get_headers, vllm 0.19.0)."""

    def env_of(built: Built) -> dict[str, dict[str, object]]:
        (job,) = [r for r in built if r.type == "kubernetes:batch/v1:Job"]
        return {item["name"]: item for item in job.inputs["spec"]["template"]["spec"]["containers"][0]["env"]}

    assert "OPENAI_API_KEY" not in env_of(build_benchmark())
    keyed = env_of(build_benchmark(api_key_secret="qwen-engine-env"))["OPENAI_API_KEY"]
    assert keyed == {
        "name": "OPENAI_API_KEY",
        "valueFrom": {"secretKeyRef": {"name": "qwen-engine-env", "key": "VLLM_API_KEY"}},
    }
