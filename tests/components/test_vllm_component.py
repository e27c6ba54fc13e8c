"""VllmEngine on its own: the serving Deployment, its disruption budget and metrics scrape."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from components.vllm import ENGINE_FIELDS, EngineFlags, Speculative, VllmEngine, VllmEngineArgs
from tests.construct import ANY, Built, build, children_are_parented, has_resource, match
from tests.recipe import with_drain

DEPLOYMENT = "kubernetes:apps/v1:Deployment"
FLAGS = EngineFlags(
    image="vllm/vllm-openai:v0.19.0",
    image_digest="sha256:" + "a" * 64,
    port=8000,
    data_parallel_size=8,
    tensor_parallel_size=1,
    enable_expert_parallel=False,
    max_model_len=2560,
    max_num_batched_tokens=16384,
    max_num_seqs=8192,
    kv_cache_dtype="fp8_e4m3",
    gpu_memory_utilization=0.92,
    enable_prefix_caching=True,
    enable_chunked_prefill=True,
    attention_backend="FLASHINFER",
    optimization_level=3,
    speculative=Speculative("mtp", 1),
    mamba_cache_mode="align",
    mamba_block_size=8,
    language_model_only=False,
    moe_backend=None,
    max_cudagraph_capture_size=None,
    reasoning_parser="qwen3",
    estimate_cudagraphs=True,
    stream_interval=None,
    extra_args=("--enable-log-requests",),
    extra_env={"EXTRA": "1"},
    cpu="200",
    memory="1800Gi",
    ephemeral_storage="200Gi",
)
ARGS = VllmEngineArgs(
    name="qwen",
    namespace="serving",
    engine=FLAGS,
    served_model_name="Qwen/Qwen3.5-27B-FP8",
    model_path="/models/Qwen/Qwen3.5-27B-FP8",
    weights_claim="weights-abc",
    weights_mount_path="/models",
    replicas=2,
    capacity_sources=2,
    node_selector={"cloud.google.com/compute-class": "b200"},
    zones=["us-central1-b"],
    spot_only=False,
    concurrency_per_pod=2000,
    max_request_tokens=2304,
    model_revision="main",
    selector={"app": "qwen"},
    labels={"env": "test"},
)


def build_engine(**changes: object) -> Built:
    args = dataclasses.replace(ARGS, **changes)  # type: ignore[arg-type]
    return build(lambda: VllmEngine("vllm", args))


def test_deployment_runs_the_recipe_on_eight_b200() -> None:
    records = build_engine()
    deployment = has_resource(
        records,
        DEPLOYMENT,
        {
            "metadata": {
                "name": "qwen",
                "namespace": "serving",
                "labels": {"env": "test", "app": "qwen"},
                "annotations": {"llm-serving/concurrency-per-pod": "2000", "llm-serving/max-request-tokens": "2304"},
            },
            "spec": {
                "replicas": 2,
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}},
                "template": {
                    "spec": {
                        "nodeSelector": {"cloud.google.com/compute-class": "b200"},
                        "terminationGracePeriodSeconds": 600,
                        "enableServiceLinks": False,
                        "containers": [
                            {
                                "image": "vllm/vllm-openai:v0.19.0@sha256:" + "a" * 64,
                                "command": ["vllm", "serve"],
                                # not Spot-only: the recipe line draining 600 - 10 s, then the extra flag
                                "args": [*with_drain(590), "--enable-log-requests"],
                                "resources": {
                                    "requests": {"nvidia.com/gpu": "8", "cpu": "200", "memory": "1800Gi"},
                                    "limits": {"nvidia.com/gpu": "8", "ephemeral-storage": "200Gi"},
                                },
                                "ports": [{"name": "http", "containerPort": 8000}],
                                "startupProbe": {"httpGet": {"path": "/health", "port": "http"}},
                            }
                        ],
                        "volumes": [
                            {
                                "name": "weights",
                                "persistentVolumeClaim": {"claimName": "weights-abc", "readOnly": True},
                            },
                            {"name": "dshm", "emptyDir": {"medium": "Memory"}},
                            ANY,
                            ANY,
                        ],
                    }
                },
            },
        },
    )
    env = {
        item["name"]: item["value"] for item in deployment.inputs["spec"]["template"]["spec"]["containers"][0]["env"]
    }
    assert env["HF_HUB_OFFLINE"] == "1" and env["VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS"] == "1"
    assert env["EXTRA"] == "1"
    # Two capacity sources of up to 15 min each, the image pull (10 min), the startup probe (30 min): 70 min a pod.
    # The delete waits for the pods' grace (600 s with a source other than Spot) and a margin.
    assert match(
        deployment.options,
        {"customTimeouts": {"create": "140m", "update": "140m", "delete": "15m"}, "ignoreChanges": []},
    )
    has_resource(
        records,
        "kubernetes:policy/v1:PodDisruptionBudget",
        {"spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "qwen"}}}},
    )
    has_resource(
        records,
        "kubernetes:monitoring.googleapis.com/v1:PodMonitoring",
        {"spec": {"endpoints": [{"port": 8000, "path": "/metrics", "interval": "30s"}]}},
    )
    children_are_parented(records, "llm-serving:serving:VllmEngine", "vllm")


def test_spot_only_pods_drain_within_the_25_second_notice() -> None:
    has_resource(
        build_engine(spot_only=True),
        DEPLOYMENT,
        {"spec": {"template": {"spec": {"terminationGracePeriodSeconds": 25}}}},
    )


def test_pods_that_may_land_on_longer_lived_capacity_get_its_grace() -> None:
    """Spot among other sources: the grace of the longest-lived one; vLLM drains within it."""
    (deployment,) = [r for r in build_engine(spot_only=False) if r.type == DEPLOYMENT]
    spec = deployment.inputs["spec"]["template"]["spec"]
    assert spec["terminationGracePeriodSeconds"] == 600
    assert "--shutdown-timeout=590" in spec["containers"][0]["args"]


def test_each_ranks_server_compiles_into_a_cache_of_its_own() -> None:
    """Each rank's server is rank 0 of its own: on one emptyDir cache the eight would write
    torch_compile_cache/<hash>/rank_0_0 at once. The one server keeps the cache root."""
    (per_rank,) = [r for r in build_engine(per_rank=True) if r.type == DEPLOYMENT]
    containers = per_rank.inputs["spec"]["template"]["spec"]["containers"]
    roots = [{env["name"]: env["value"] for env in container["env"]}["VLLM_CACHE_ROOT"] for container in containers]
    assert roots == [f"/var/cache/engine/rank-{rank}/vllm" for rank in range(8)]
    for container in containers:
        env = {item["name"]: item.get("value") for item in container["env"]}
        assert env["HOME"] == "/var/cache/engine"  # only the compile caches move
        rank = container["name"].removeprefix("vllm-")
        assert {env[key] for key in ("TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR")} == {
            f"/var/cache/engine/rank-{rank}/triton",
            f"/var/cache/engine/rank-{rank}/torchinductor",
        }
    (one,) = [r for r in build_engine() if r.type == DEPLOYMENT]
    (container,) = one.inputs["spec"]["template"]["spec"]["containers"]
    assert {env["name"]: env["value"] for env in container["env"] if "value" in env}["VLLM_CACHE_ROOT"] == (
        "/var/cache/engine/vllm"
    )


def test_pods_name_the_ports_they_serve_to_the_picker_in_gateway_mode() -> None:
    """llm-d-router's picker makes an endpoint of every pool target port of a pod that names none: while a change of
    layout rolls, the old pods would get requests on ports they do not serve."""

    def annotations(**changes: object) -> Any:
        (deployment,) = [r for r in build_engine(**changes) if r.type == DEPLOYMENT]
        return deployment.inputs["spec"]["template"].get("metadata", {}).get("annotations")

    assert annotations(announce_ports=True, per_rank=True) == {
        "llm-d.ai/active-ports": "8000,8001,8002,8003,8004,8005,8006,8007"
    }
    assert annotations(announce_ports=True) == {"llm-d.ai/active-ports": "8000"}
    assert annotations() is None  # clusterip mode: no reader, and no roll of the pods that serve there


def test_a_longer_startup_probe_gives_the_rollout_as_much_more_time() -> None:
    """The kubelet waits startup_probe_seconds for /health; the Deployment's progress deadline and
    `pulumi up`'s wait must not give up on a pod before it does."""
    (default,) = [r for r in build_engine() if r.type == DEPLOYMENT]
    (longer,) = [r for r in build_engine(startup_probe_seconds=4764) if r.type == DEPLOYMENT]
    probe = longer.inputs["spec"]["template"]["spec"]["containers"][0]["startupProbe"]
    assert (
        probe["periodSeconds"] * probe["failureThreshold"]
        >= 4764
        > probe["periodSeconds"] * (probe["failureThreshold"] - 1)
    )
    assert default.inputs["spec"]["template"]["spec"]["containers"][0]["startupProbe"]["failureThreshold"] == 180
    more = longer.inputs["spec"]["progressDeadlineSeconds"] - default.inputs["spec"]["progressDeadlineSeconds"]
    assert more == 50 * 60  # (4,764 - 1,800) s, in whole minutes
    assert longer.options["customTimeouts"]["create"] != default.options["customTimeouts"]["create"]


@pytest.mark.parametrize(
    ("sources", "probe", "pull", "wait"),
    [(1, 1800, 600, 0), (2, 1800, 600, 0), (1, 4764, 600, 0), (3, 1800, 5000, 0), (2, 1800, 600, 3600)],
)
def test_the_rollout_waits_at_least_as_long_as_the_kubelet_for_a_pod(
    sources: int, probe: int, pull: int, wait: int
) -> None:
    """A pod is Pending while each source is tried for a node (as long as a source that bounds it says) and while
    its image is pulled, then the kubelet gives /health the startup probe's budget: a progress deadline shorter
    than that calls a slow, healthy pod failed."""
    built = build_engine(
        capacity_sources=sources, startup_probe_seconds=probe, image_pull_seconds=pull, capacity_wait_seconds=wait
    )
    (deployment,) = [r for r in built if r.type == DEPLOYMENT]
    container = deployment.inputs["spec"]["template"]["spec"]["containers"][0]
    kubelet = container["startupProbe"]["periodSeconds"] * container["startupProbe"]["failureThreshold"]
    assert deployment.inputs["spec"]["progressDeadlineSeconds"] >= sources * 15 * 60 + wait + pull + kubelet


def test_replicas_owned_by_an_autoscaler_are_left_alone() -> None:
    (deployment,) = [r for r in build_engine(replicas_managed_elsewhere=True, most_replicas=4) if r.type == DEPLOYMENT]
    assert deployment.options["ignoreChanges"] == ["spec.replicas"]
    # An update may roll four pods, one at a time.
    assert deployment.options["customTimeouts"]["update"] == "280m"


def test_flags_turned_off() -> None:
    flags = dataclasses.replace(
        FLAGS,
        speculative=None,
        mamba_cache_mode=None,
        mamba_block_size=None,
        enable_prefix_caching=False,
        image_digest=None,
        estimate_cudagraphs=False,
        extra_args=(),
    )
    (deployment,) = [r for r in build_engine(engine=flags) if r.type == DEPLOYMENT]
    container = deployment.inputs["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "vllm/vllm-openai:v0.19.0"
    assert "--no-enable-prefix-caching" in container["args"]
    assert not [arg for arg in container["args"] if arg.startswith(("--speculative", "--mamba"))]
    # off is stated, not left out: vLLM's default flips to on from 0.21
    assert match(
        {item["name"]: item["value"] for item in container["env"]}, {"VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS": "0"}
    )


# Another value of each engine setting than FLAGS holds: a setting added to EngineFlags needs its entry here.
ANOTHER: dict[str, Any] = {
    "image": "vllm/vllm-openai:v0.33.0",
    "image_digest": "sha256:" + "b" * 64,
    "port": 8100,
    "data_parallel_size": 4,
    "tensor_parallel_size": 2,
    "enable_expert_parallel": True,
    "max_model_len": 4096,
    "max_num_batched_tokens": 8192,
    "max_num_seqs": 1024,
    "kv_cache_dtype": "auto",
    "gpu_memory_utilization": 0.9,
    "enable_prefix_caching": False,
    "enable_chunked_prefill": False,
    "attention_backend": None,
    "optimization_level": 2,
    "speculative": Speculative("mtp", 2),
    "mamba_cache_mode": None,
    "mamba_block_size": None,
    "language_model_only": True,
    "moe_backend": "flashinfer_trtllm",
    "max_cudagraph_capture_size": 512,
    "reasoning_parser": None,
    "estimate_cudagraphs": False,
    "stream_interval": 4,
    "extra_args": (),
    "extra_env": {},
    "cpu": "100",
    "memory": "900Gi",
    "ephemeral_storage": "100Gi",
}


@pytest.mark.parametrize("name", ENGINE_FIELDS)
def test_every_engine_setting_reaches_the_serving_container(name: str) -> None:
    """A setting the component ignores would be accepted and never run: each one changes the container's
    serve line, environment, image, ports or resources."""

    def container(flags: EngineFlags) -> dict[str, object]:
        (deployment,) = [r for r in build_engine(engine=flags) if r.type == DEPLOYMENT]
        return dict(deployment.inputs["spec"]["template"]["spec"]["containers"][0])

    assert ANOTHER[name] != getattr(FLAGS, name), f"ANOTHER[{name!r}] must differ from FLAGS"
    assert container(dataclasses.replace(FLAGS, **{name: ANOTHER[name]})) != container(FLAGS)
