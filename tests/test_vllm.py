"""The vLLM engine: exactly the recipe's flags, one pod per A4 node, pod hygiene, labels, monitoring."""

from __future__ import annotations

from typing import Any

import pytest

from components.vllm import CONTAINER_NAME, engine_args, engine_image
from stacks.config import EngineConfig, KvCacheDtype, MambaCacheMode, SpeculativeConfig
from stacks.program import kubernetes_labels, serving_selector
from tests.conftest import RenderStack
from tests.recipe import MODEL_PATH, RECIPE_ARGS, SERVED_NAME
from tests.rendered import RenderedStack
from tests.schemas import validate_manifest
from tests.variants import render_variant, stack_config, variant_config


def deployment(stack: RenderedStack) -> dict[str, Any]:
    (manifest,) = stack.kind("Deployment")
    return manifest


def container(stack: RenderedStack) -> dict[str, Any]:
    containers: list[dict[str, Any]] = deployment(stack)["spec"]["template"]["spec"]["containers"]
    (vllm,) = containers
    return vllm


def env_of(stack: RenderedStack) -> dict[str, str]:
    return {item["name"]: item["value"] for item in container(stack)["env"]}


def test_prod_runs_the_recipe_on_twelve_nodes(prod: RenderedStack) -> None:
    assert deployment(prod)["spec"]["replicas"] == 12
    vllm = container(prod)
    assert vllm["name"] == CONTAINER_NAME
    assert vllm["command"] == ["vllm", "serve"]
    assert vllm["args"] == RECIPE_ARGS
    assert vllm["image"] == "vllm/vllm-openai:v0.19.0"
    assert env_of(prod) == {"HF_HUB_OFFLINE": "1", "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS": "1"}


def test_dev_runs_one_node_with_the_same_flags(dev: RenderedStack) -> None:
    assert deployment(dev)["spec"]["replicas"] == 1
    assert container(dev)["args"] == RECIPE_ARGS


def test_defaults_are_the_recipe() -> None:
    assert engine_args(EngineConfig(), MODEL_PATH, SERVED_NAME) == RECIPE_ARGS


SINGLE_FIELD_CHANGES: list[tuple[dict[str, Any], str, str]] = [
    ({"port": 9000}, "--port=8000", "--port=9000"),
    ({"max_model_len": 4096}, "--max-model-len=2560", "--max-model-len=4096"),
    ({"max_num_batched_tokens": 8192}, "--max-num-batched-tokens=16384", "--max-num-batched-tokens=8192"),
    ({"max_num_seqs": 512}, "--max-num-seqs=8192", "--max-num-seqs=512"),
    ({"kv_cache_dtype": KvCacheDtype.auto}, "--kv-cache-dtype=fp8_e4m3", "--kv-cache-dtype=auto"),
    ({"gpu_memory_utilization": 0.9}, "--gpu-memory-utilization=0.92", "--gpu-memory-utilization=0.9"),
    ({"enable_chunked_prefill": False}, "--enable-chunked-prefill", "--no-enable-chunked-prefill"),
    ({"attention_backend": "FLASH_ATTN"}, "--attention-backend=FLASHINFER", "--attention-backend=FLASH_ATTN"),
    ({"optimization_level": 2}, "-O3", "-O2"),
    (
        {"speculative": SpeculativeConfig(num_speculative_tokens=2)},
        '--speculative-config={"method":"mtp","num_speculative_tokens":1}',
        '--speculative-config={"method":"mtp","num_speculative_tokens":2}',
    ),
    ({"mamba_cache_mode": MambaCacheMode.none}, "--mamba-cache-mode=align", "--mamba-cache-mode=none"),
    ({"mamba_block_size": 16}, "--mamba-block-size=8", "--mamba-block-size=16"),
]


@pytest.mark.parametrize(("change", "before", "after"), SINGLE_FIELD_CHANGES, ids=str)
def test_one_field_changes_exactly_its_flag(change: dict[str, Any], before: str, after: str) -> None:
    changed = engine_args(EngineConfig(**change), MODEL_PATH, SERVED_NAME)
    assert len(changed) == len(RECIPE_ARGS)
    assert [(old, new) for old, new in zip(RECIPE_ARGS, changed, strict=True) if old != new] == [(before, after)]


def test_parallelism_changes_both_flags() -> None:
    changed = engine_args(EngineConfig(data_parallel_size=4, tensor_parallel_size=2), MODEL_PATH, SERVED_NAME)
    assert [(old, new) for old, new in zip(RECIPE_ARGS, changed, strict=True) if old != new] == [
        ("--data-parallel-size=8", "--data-parallel-size=4"),
        ("--tensor-parallel-size=1", "--tensor-parallel-size=2"),
    ]


def test_prefix_caching_off_drops_the_mamba_block_size() -> None:
    changed = engine_args(EngineConfig(enable_prefix_caching=False, mamba_block_size=None), MODEL_PATH, SERVED_NAME)
    assert "--no-enable-prefix-caching" in changed
    assert "--enable-prefix-caching" not in changed
    assert not [arg for arg in changed if arg.startswith("--mamba-block-size")]


def test_unset_optionals_are_omitted_and_extra_args_come_last() -> None:
    changed = engine_args(
        EngineConfig(speculative=None, mamba_cache_mode=None, extra_args=["--enable-log-requests", "--seed=1"]),
        MODEL_PATH,
        SERVED_NAME,
    )
    assert not [arg for arg in changed if arg.startswith(("--speculative-config", "--mamba-cache-mode"))]
    assert changed[-2:] == ["--enable-log-requests", "--seed=1"]


def test_image_digest_pins_the_image() -> None:
    digest = "sha256:" + "ab" * 32
    assert engine_image(EngineConfig(image_digest=digest)) == f"vllm/vllm-openai:v0.19.0@{digest}"


def test_rendered_variant_changes_exactly_one_flag(
    dev: RenderedStack, render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    variant = render_variant("dev-engine", render_stack, tmp_path_factory)
    before, after = container(dev)["args"], container(variant)["args"]
    assert [(old, new) for old, new in zip(before, after, strict=True) if old != new] == [
        ("--max-num-seqs=8192", "--max-num-seqs=4096")
    ]


@pytest.mark.parametrize("name", ["dev", "prod"])
def test_one_pod_per_a4_node(name: str, render_stack: RenderStack) -> None:
    resources = container(render_stack(name))["resources"]
    assert resources["limits"]["nvidia.com/gpu"] == "8"
    assert resources["requests"] == resources["limits"]
    assert {"cpu", "memory"} <= set(resources["limits"])


@pytest.mark.parametrize("name", ["dev", "prod"])
def test_pod_hygiene(name: str, render_stack: RenderStack) -> None:
    stack = render_stack(name)
    spec = deployment(stack)["spec"]
    pod = spec["template"]["spec"]
    vllm = container(stack)
    assert pod["enableServiceLinks"] is False
    assert pod["automountServiceAccountToken"] is False
    assert pod["terminationGracePeriodSeconds"] <= 25, "Spot-capable stacks get at most 25 s on preemption"
    assert vllm["lifecycle"]["preStop"]["exec"]["command"][-2:] == ["20", "8000"]
    assert vllm["securityContext"]["allowPrivilegeEscalation"] is False
    startup = vllm["startupProbe"]
    assert startup["httpGet"]["path"] == "/health"
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 20 * 60
    for probe in ("readinessProbe", "livenessProbe"):
        assert vllm[probe]["httpGet"] == {"path": "/health", "port": "http"}
    shm = next(volume for volume in pod["volumes"] if volume["name"] == "dshm")
    assert shm["emptyDir"]["medium"] == "Memory"
    assert {"mountPath": "/dev/shm", "name": "dshm"} in vllm["volumeMounts"]
    assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}
    assert spec["progressDeadlineSeconds"] >= 1800


def test_grace_without_spot_allows_a_longer_drain(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    variant = render_variant("reserved", render_stack, tmp_path_factory)
    pod = deployment(variant)["spec"]["template"]["spec"]
    assert pod["terminationGracePeriodSeconds"] == 60
    assert container(variant)["lifecycle"]["preStop"]["exec"]["command"][-2] == "55"


def test_rollout_is_awaited_long_enough(prod: RenderedStack) -> None:
    record = prod.one("kubernetes:apps/v1:Deployment")
    assert record["options"]["customTimeouts"] == {"create": "90m", "update": "90m"}


@pytest.mark.parametrize("name", ["dev", "prod"])
def test_weights_mounted_read_only_from_the_claim(name: str, render_stack: RenderStack) -> None:
    stack = render_stack(name)
    config = stack_config(name)
    pod = deployment(stack)["spec"]["template"]["spec"]
    (claim,) = [volume for volume in pod["volumes"] if "persistentVolumeClaim" in volume]
    (rox,) = [pvc for pvc in stack.kind("PersistentVolumeClaim") if pvc["spec"]["accessModes"] == ["ReadOnlyMany"]]
    assert claim["persistentVolumeClaim"] == {"claimName": rox["metadata"]["name"], "readOnly": True}
    mount = next(item for item in container(stack)["volumeMounts"] if item["name"] == claim["name"])
    assert mount == {"mountPath": config.weights.mount_path, "name": claim["name"], "readOnly": True}
    assert container(stack)["args"][0] == f"--model={config.weights.mount_path}/{config.weights.model}"


def test_policy_annotations(prod: RenderedStack) -> None:
    workload = stack_config("prod").workload
    assert deployment(prod)["metadata"]["annotations"] == {
        "llm-serving/concurrency-per-pod": str(workload.concurrency_per_node),
        "llm-serving/max-request-tokens": str(workload.max_prompt_tokens + workload.max_output_tokens),
    }


@pytest.mark.parametrize("name", ["dev", "prod"])
def test_labels_and_names_agree(name: str, render_stack: RenderStack) -> None:
    stack = render_stack(name)
    config = stack_config(name)
    selector = serving_selector(config)
    manifest = deployment(stack)
    assert manifest["metadata"]["name"] == config.routing.service_name
    assert manifest["spec"]["selector"] == {"matchLabels": selector}
    assert manifest["spec"]["template"]["metadata"]["labels"] == {**kubernetes_labels(config), **selector}
    (budget,) = stack.kind("PodDisruptionBudget")
    assert budget["apiVersion"] == "policy/v1"
    assert budget["metadata"]["name"] == config.routing.service_name
    assert budget["spec"] == {"maxUnavailable": 1, "selector": {"matchLabels": selector}}
    (monitoring,) = stack.kind("PodMonitoring")
    assert monitoring["metadata"]["name"] == config.routing.service_name
    assert monitoring["spec"]["selector"] == {"matchLabels": selector}
    assert monitoring["spec"]["endpoints"] == [{"port": 8000, "path": "/metrics", "interval": "30s"}]
    validate_manifest(monitoring)


def test_pods_pinned_to_every_weight_zone(render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory) -> None:
    variant = render_variant("reserved", render_stack, tmp_path_factory)
    affinity = deployment(variant)["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
    (term,) = affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert term["matchExpressions"] == [
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": variant_config("reserved").zones}
    ]
