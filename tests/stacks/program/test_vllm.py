"""The vLLM engine: exactly the recipe's flags, one pod per A4 node, pod hygiene, labels, monitoring."""

from __future__ import annotations

from typing import Any

import pytest

from components.image_mirror import MirrorAddresses
from components.vllm import (
    CACHE_ROOT,
    CONTAINER_NAME,
    ENGINE_USER_ID,
    GRACE_SECONDS,
    SPOT_GRACE_SECONDS,
    EngineFlags,
    drain_seconds,
    engine_args,
    engine_env,
    engine_image,
    rollout_wait,
)
from schemas.vllm_args import check_serve_args
from schemas.vllm_releases import MEASURED_RELEASE, RELEASES, image_release
from stacks.args import engine_flags, kubernetes_labels, serving_selector
from stacks.config.engine import EngineConfig, KvCacheDtype, MambaCacheMode, SpeculativeConfig, WorkloadConfig
from stacks.config.profiles import ProfileName, profile_of
from stacks.load.loader import InvalidConfig, validate
from tests.conftest import RenderStack
from tests.manifest_schemas import validate_manifest
from tests.recipe import MODEL_PATH, RECIPE_ARGS, SERVED_NAME, with_drain
from tests.rendered import RenderedStack
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


SPOT_DRAIN = drain_seconds(SPOT_GRACE_SECONDS)


def args_of(**change: Any) -> list[str]:
    return engine_args(flags(**change), MODEL_PATH, SERVED_NAME, SPOT_DRAIN)


def flags(**change: Any) -> EngineFlags:
    return engine_flags(EngineConfig(**change), WorkloadConfig().concurrency_per_node)


def test_prod_runs_the_recipe_on_twelve_nodes(prod: RenderedStack) -> None:
    assert deployment(prod)["spec"]["replicas"] == 12
    vllm = container(prod)
    assert vllm["name"] == CONTAINER_NAME
    assert vllm["command"] == ["vllm", "serve"]
    # Flex-start first: the grace of the longest-lived capacity, and vLLM's drain within it
    assert vllm["args"] == with_drain(drain_seconds(GRACE_SECONDS))
    # Through the stack's Docker Hub mirror in the region, pinned by digest, pulled only when absent.
    mirror = MirrorAddresses.of("my-llm-prod", "us-central1", "llm-serving").docker_hub
    assert vllm["image"] == f"{mirror}/vllm/vllm-openai:v0.19.0@{RELEASES[MEASURED_RELEASE].image_digest}"
    assert vllm["imagePullPolicy"] == "IfNotPresent"
    assert env_of(prod) == {
        "HF_HUB_OFFLINE": "1",
        "VLLM_NO_USAGE_STATS": "1",
        # getpass.getuser() under a UID without a passwd entry (vLLM 0.20+)
        "USER": "vllm",
        "LOGNAME": "vllm",
        "HOME": CACHE_ROOT,
        "XDG_CACHE_HOME": CACHE_ROOT,
        "VLLM_CACHE_ROOT": f"{CACHE_ROOT}/vllm",
        "TRITON_CACHE_DIR": f"{CACHE_ROOT}/triton",
        "FLASHINFER_WORKSPACE_BASE": CACHE_ROOT,
        "TORCHINDUCTOR_CACHE_DIR": f"{CACHE_ROOT}/torchinductor",
        "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS": "1",
    }


def test_model_is_the_positional_argument(prod: RenderedStack) -> None:
    args = container(prod)["args"]
    assert args[0] == MODEL_PATH
    assert not [arg for arg in args if arg.startswith("--model")]


def test_dev_runs_one_node_with_the_same_flags(dev: RenderedStack) -> None:
    assert deployment(dev)["spec"]["replicas"] == 1
    assert container(dev)["args"] == RECIPE_ARGS


def test_defaults_are_the_recipe() -> None:
    assert args_of() == RECIPE_ARGS


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
    changed = args_of(**change)
    assert len(changed) == len(RECIPE_ARGS)
    assert [(old, new) for old, new in zip(RECIPE_ARGS, changed, strict=True) if old != new] == [(before, after)]


def test_parallelism_changes_both_flags() -> None:
    changed = args_of(data_parallel_size=4, tensor_parallel_size=2)
    assert [(old, new) for old, new in zip(RECIPE_ARGS, changed, strict=True) if old != new] == [
        ("--data-parallel-size=8", "--data-parallel-size=4"),
        ("--tensor-parallel-size=1", "--tensor-parallel-size=2"),
    ]


def test_prefix_caching_off_drops_the_mamba_block_size() -> None:
    changed = args_of(enable_prefix_caching=False, mamba_block_size=None)
    assert "--no-enable-prefix-caching" in changed
    assert "--enable-prefix-caching" not in changed
    assert not [arg for arg in changed if arg.startswith("--mamba-block-size")]


def test_unset_optionals_are_omitted_and_extra_args_come_last() -> None:
    changed = args_of(speculative=None, mamba_cache_mode=None, extra_args=["--enable-log-requests", "--seed=1"])
    assert not [arg for arg in changed if arg.startswith(("--speculative-config", "--mamba-cache-mode"))]
    assert changed[-2:] == ["--enable-log-requests", "--seed=1"]


def test_image_digest_pins_the_image() -> None:
    digest = "sha256:" + "ab" * 32
    assert engine_image(flags(image_digest=digest)) == f"vllm/vllm-openai:v0.19.0@{digest}"
    assert engine_image(flags()) == f"vllm/vllm-openai:v0.19.0@{RELEASES[MEASURED_RELEASE].image_digest}"
    assert engine_image(flags(image="vllm/vllm-openai:v0.33.0")) == "vllm/vllm-openai:v0.33.0", (
        "no digest of the v0.33.0 image could be verified: none is filled in"
    )


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
    # Node-billed on Autopilot: most of the A4 node's 224 vCPU / 3,968 GB for the same bill.
    assert (resources["limits"]["cpu"], resources["limits"]["memory"]) == ("200", "1800Gi")
    assert resources["limits"]["ephemeral-storage"] == "200Gi"


@pytest.mark.parametrize("name", ["dev", "prod"])
def test_pod_hygiene(name: str, render_stack: RenderStack) -> None:
    stack = render_stack(name)
    spec = deployment(stack)["spec"]
    pod = spec["template"]["spec"]
    vllm = container(stack)
    assert pod["enableServiceLinks"] is False
    assert pod["automountServiceAccountToken"] is False
    startup = vllm["startupProbe"]
    assert startup["httpGet"]["path"] == "/health"
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 20 * 60
    for probe in ("readinessProbe", "livenessProbe"):
        assert vllm[probe]["httpGet"] == {"path": "/health", "port": "http"}
    shm = next(volume for volume in pod["volumes"] if volume["name"] == "dshm")
    assert shm["emptyDir"]["medium"] == "Memory"
    assert {"mountPath": "/dev/shm", "name": "dshm"} in vllm["volumeMounts"]
    assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}


@pytest.mark.parametrize("name", ["dev", "prod"])
def test_pod_is_hardened_and_caches_are_writable(name: str, render_stack: RenderStack) -> None:
    stack = render_stack(name)
    pod = deployment(stack)["spec"]["template"]["spec"]
    vllm = container(stack)
    assert pod["securityContext"] == {
        "runAsNonRoot": True,
        "runAsUser": ENGINE_USER_ID,
        "runAsGroup": ENGINE_USER_ID,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert vllm["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    empty_dirs = {volume["name"] for volume in pod["volumes"] if "emptyDir" in volume}
    writable = {mount["mountPath"] for mount in vllm["volumeMounts"] if mount["name"] in empty_dirs}
    assert {CACHE_ROOT, "/tmp", "/dev/shm"} <= writable
    cache_paths = [value for key, value in env_of(stack).items() if key not in {"HF_HUB_OFFLINE"} and "/" in value]
    assert cache_paths and all(path.startswith(CACHE_ROOT) for path in cache_paths)
    assert env_of(stack)["VLLM_NO_USAGE_STATS"] == "1"


def test_spot_only_pods_drain_within_25_seconds(dev: RenderedStack) -> None:
    """Endpoint removal runs with preStop; vLLM then finishes requests for --shutdown-timeout."""
    stack = dev
    pod = deployment(stack)["spec"]["template"]["spec"]
    vllm = container(stack)
    assert pod["terminationGracePeriodSeconds"] == SPOT_GRACE_SECONDS == 25
    assert vllm["lifecycle"]["preStop"] == {"sleep": {"seconds": 5}}
    assert f"--shutdown-timeout={SPOT_GRACE_SECONDS - 10}" in vllm["args"]


def test_pods_that_may_land_on_flex_start_get_its_grace(prod: RenderedStack) -> None:
    """Prod falls back to Spot, but Flex-start comes first: the grace is Flex-start's (GKE honors up to
    10 minutes on scale-down); on a Spot preemption Autopilot cuts it to 25 s whatever the pod asks."""
    pod = deployment(prod)["spec"]["template"]["spec"]
    assert pod["terminationGracePeriodSeconds"] == GRACE_SECONDS == 600
    assert f"--shutdown-timeout={drain_seconds(GRACE_SECONDS)}" in container(prod)["args"]


def test_the_cuda_graph_estimate_is_always_stated() -> None:
    """vLLM's default flips from off (0.19) to on (0.21+): off is rendered =0, never left out."""
    assert engine_env(flags())["VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS"] == "1"
    assert engine_env(flags(estimate_cudagraphs=False))["VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS"] == "0"


def test_grace_without_spot_lets_a_recipe_request_finish(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    variant = render_variant("reserved", render_stack, tmp_path_factory)
    pod = deployment(variant)["spec"]["template"]["spec"]
    assert pod["terminationGracePeriodSeconds"] == GRACE_SECONDS
    drain = drain_seconds(GRACE_SECONDS)
    assert f"--shutdown-timeout={drain}" in container(variant)["args"]
    assert drain >= 2 * 30, "twice a ~30 s recipe request"


def test_rollout_wait_is_sized_to_the_stack(prod: RenderedStack) -> None:
    """12 nodes from Flex-start then Spot: a create waits for one (parallel) round of node
    provisioning per source, the image pull and the startup probe's budget, an update for 12 sequential rounds."""
    record = prod.one("kubernetes:apps/v1:Deployment")
    wait = rollout_wait(replicas=12, capacity_sources=2, max_unavailable=1)
    assert record["options"]["customTimeouts"] == {
        "create": f"{wait.create_minutes}m",
        "update": f"{wait.update_minutes}m",
        "delete": "15m",
    }
    assert wait.update_minutes == 12 * (2 * 15 + 10 + 30)
    assert deployment(prod)["spec"]["progressDeadlineSeconds"] == wait.progress_deadline_seconds == 70 * 60


def test_a_delete_waits_for_the_pods_grace(dev: RenderedStack, prod: RenderedStack) -> None:
    """A destroy review: pulumi-kubernetes waits minutes by default for a foreground delete, prod's pods may take 600 s
    to stop after SIGTERM; Spot-only dev's take 25 s."""
    delete = {
        name: stack.one("kubernetes:apps/v1:Deployment")["options"]["customTimeouts"]["delete"]
        for name, stack in (("dev", dev), ("prod", prod))
    }
    grace = {
        name: deployment(stack)["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
        for name, stack in (("dev", dev), ("prod", prod))
    }
    assert (delete, grace) == ({"dev": "6m", "prod": "15m"}, {"dev": 25, "prod": 600})


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
    assert container(stack)["args"][0] == f"{config.weights.mount_path}/{config.weights.model}"


def test_policy_annotations(prod: RenderedStack) -> None:
    workload = stack_config("prod").workload
    assert deployment(prod)["metadata"]["annotations"] == {
        "llm-serving/concurrency-per-pod": str(workload.concurrency_per_node),
        "llm-serving/max-request-tokens": str(workload.max_prompt_tokens + workload.max_output_tokens),
        "llm-serving/model-revision": stack_config("prod").weights.revision,
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


def test_prod_refuses_an_engine_image_without_digest() -> None:
    prod = {"environment": "prod", "project": "my-llm-prod", "weights": {"revision": "ab" * 20}}
    with pytest.raises(InvalidConfig, match=r"engine\.imageDigest: prod pins the engine image by digest"):
        validate({**prod, "engine": {"image": "vllm/vllm-openai:v0.33.0"}})
    assert validate({**prod, "engine": {"image": "vllm/vllm-openai:v0.33.0", "imageDigest": "sha256:" + "cd" * 32}})


@pytest.mark.parametrize("value", ["1", "0"])
def test_deep_gemm_override_is_refused_in_one_line(value: str) -> None:
    """VLLM_USE_DEEP_GEMM set at all overrides vLLM's own DeepGEMM choice for Qwen 3.5 on Blackwell."""
    dev = {"environment": "dev", "project": "my-llm-dev"}
    with pytest.raises(InvalidConfig) as raised:
        validate({**dev, "engine": {"extraEnv": {"VLLM_USE_DEEP_GEMM": value}}})
    message = str(raised.value)
    assert message.startswith("invalid stack config: engine.extraEnv.VLLM_USE_DEEP_GEMM: refused")
    assert "https://github.com/vllm-project/vllm/pull/38083" in message and "\n" not in message
    assert validate({**dev, "engine": {"extraEnv": {"VLLM_LOGGING_LEVEL": "DEBUG"}}})


def test_the_cuda_graph_estimate_cannot_be_overridden_through_extra_env() -> None:
    engine = {"estimateCudagraphs": False, "extraEnv": {"VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS": "1"}}
    with pytest.raises(InvalidConfig, match="VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS"):
        validate({"environment": "dev", "project": "my-llm-dev", "engine": engine})


@pytest.mark.parametrize("version", ["0.19.0", "0.33.0"])
def test_stream_interval_is_a_typed_engine_setting_both_releases_parse(version: str) -> None:
    assert not [arg for arg in args_of() if arg.startswith("--stream-interval")], "null leaves vLLM's default"
    args = args_of(stream_interval=8)
    assert "--stream-interval=8" in args
    assert check_serve_args(args, version) == []


@pytest.mark.parametrize(
    ("engine", "expected"),
    [
        ({"streamInterval": 0}, "engine.streamInterval"),
        ({"streamInterval": "fast"}, "engine.streamInterval"),
        ({"extraArgs": ["--stream-interval=4"]}, "engine.streamInterval"),
        ({"extraEnv": {"USER": "root"}}, "USER"),
        ({"extraEnv": {"LOGNAME": "root"}}, "LOGNAME"),
    ],
)
def test_stream_interval_and_user_refused_elsewhere(engine: dict[str, Any], expected: str) -> None:
    with pytest.raises(InvalidConfig, match=expected):
        validate({"environment": "dev", "project": "my-llm-dev", "engine": engine})


@pytest.mark.parametrize(
    ("extra_args", "refusal"),
    [
        (["--ssl-keyfile", "/certs/tls.key"], "'--ssl-keyfile' sets --ssl-keyfile, which no setting may give: probes"),
        (["--ssl-certfile=/certs/tls.crt"], "sets --ssl-certfile, which no setting may give"),
        (["--grpc"], "'--grpc' sets --grpc, which no setting may give: clients, probes and routing speak the OpenAI"),
        (["--ssl-k=/x"], "abbreviates --ssl-keyfile .argparse expands unique prefixes., which no setting may give"),
        (["--uds", "/tmp/v.sock"], "sets --uds, which no setting may give: probes and routing need TCP"),
        (["--help"], "sets --help, which no setting may give: vLLM would print help and exit"),
        (["--port", "9000"], "sets --port, which the stack sets from engine.port; set that instead"),
    ],
)
def test_flags_that_take_the_server_off_plain_http_are_refused(extra_args: list[str], refusal: str) -> None:
    """TLS or gRPC instead of the OpenAI HTTP API: the probes, the Service and the Gateway reach the pods over
    plain HTTP, so the first new pod would never be ready (vllm/entrypoints/cli/serve.py: --grpc serves gRPC
    and returns; the ssl flags make uvicorn serve HTTPS)."""
    with pytest.raises(InvalidConfig, match=refusal):
        validate({"environment": "dev", "project": "my-llm-dev", "engine": {"extraArgs": extra_args}})


@pytest.mark.parametrize("profile", [name for name in ProfileName if "/Qwen3.5-" in profile_of(name).checkpoint.model])
def test_every_qwen_3_5_profile_separates_the_thinking_from_the_answer(profile: ProfileName) -> None:
    """The checkpoints think before answering: without the parser the thinking lands in `content`."""
    config = validate({"environment": "dev", "project": "my-llm-dev", "profile": profile.value})
    assert config.engine.reasoning_parser == "qwen3", "vLLM's recipes for Qwen 3.5 set --reasoning-parser qwen3"
    args = engine_args(
        engine_flags(config.engine, config.workload.concurrency_per_node), MODEL_PATH, SERVED_NAME, SPOT_DRAIN
    )
    assert args.count("--reasoning-parser=qwen3") == 1
    release = image_release(config.engine.image)
    assert release is not None and check_serve_args(args, release) == []


def test_the_reasoning_parser_can_be_turned_off_but_not_given_twice() -> None:
    assert not [arg for arg in args_of(reasoning_parser=None) if arg.startswith("--reasoning-parser")]
    dev = {"environment": "dev", "project": "my-llm-dev"}
    with pytest.raises(InvalidConfig) as raised:
        validate({**dev, "engine": {"extraArgs": ["--reasoning-parser=deepseek_r1"]}})
    assert "engine.reasoningParser" in str(raised.value) and "\n" not in str(raised.value)
    with pytest.raises(InvalidConfig) as raised:
        validate({**dev, "engine": {"reasoningParser": "qwen3 --x"}})
    assert str(raised.value).startswith("invalid stack config: engine.reasoningParser")


@pytest.mark.parametrize("name", ["qwen35", "qwen3_5", "nonexistent"])
def test_a_reasoning_parser_the_release_does_not_register_is_refused(name: str) -> None:
    """vLLM's API server refuses it at start-up (api_server.py validate_api_server_args: KeyError
    'invalid reasoning parser'), so the pods would crash-loop."""
    with pytest.raises(InvalidConfig) as raised:
        validate({"environment": "dev", "project": "my-llm-dev", "engine": {"reasoningParser": name}})
    message = str(raised.value)
    assert message.startswith(f"invalid stack config: engine.reasoningParser: '{name}' is not a reasoning parser")
    assert "vLLM 0.19.0" in message and "allowed: deepseek_r1, " in message and "qwen3," in message
    assert "\n" not in message


def test_the_release_of_the_image_decides_which_names_are_registered() -> None:
    """deepseek_v4 is registered in 0.33.0 (the MoE profiles' image), not in 0.19.0."""
    dev = {"environment": "dev", "project": "my-llm-dev"}
    moe = validate({**dev, "profile": "qwen3.5-35b-a3b-fp8", "engine": {"reasoningParser": "deepseek_v4"}})
    assert moe.engine.reasoning_parser == "deepseek_v4"
    with pytest.raises(InvalidConfig, match=r"'deepseek_v4' is not a reasoning parser vLLM 0\.19\.0 registers"):
        validate({**dev, "engine": {"reasoningParser": "deepseek_v4"}})
    with pytest.raises(InvalidConfig, match=r"'qwen35' is not a reasoning parser vLLM 0\.33\.0 registers"):
        validate({**dev, "profile": "qwen3.5-35b-a3b-fp8", "engine": {"reasoningParser": "qwen35"}})


def test_a_registered_or_plugin_reasoning_parser_is_accepted() -> None:
    dev = {"environment": "dev", "project": "my-llm-dev"}
    assert validate({**dev, "engine": {"reasoningParser": "deepseek_r1"}}).engine.reasoning_parser == "deepseek_r1"
    # a --reasoning-parser-plugin file may register any name: left to vLLM
    plugin = {"reasoningParser": "my_parser", "extraArgs": ["--reasoning-parser-plugin=/plugins/my_parser.py"]}
    assert validate({**dev, "engine": plugin}).engine.reasoning_parser == "my_parser"


@pytest.mark.parametrize("name", ["prod-397b", "staging-122b"])
def test_a_larger_checkpoint_gets_a_startup_probe_that_outlasts_a_simultaneous_wake(name: str) -> None:
    """The recipe's 30 min probe is 3x its ~10 min pod phase; 12 nodes reading the 397B checkpoint from
    one zone's disk at once take ~19 min to read it alone, and a probe that gives up restarts the load."""
    from commands.render.time_to_serve import wake_read
    from stacks.capacity.time_to_serve import startup_probe_seconds

    config = variant_config(name)
    wake = wake_read(config)
    assert wake is not None and wake.seconds is not None
    assert startup_probe_seconds(config) >= 3 * 600 + wake.seconds
    assert all(startup_probe_seconds(stack_config(stack)) == 1800 for stack in ("dev", "staging", "prod"))
    # nothing spreads the pods over the zones: a second zone's disk does not shorten the probe
    raw = config.model_dump(by_alias=True, exclude_unset=True)
    two_zones = validate({**raw, "zones": [*config.zones, "us-central1-c"]})
    assert startup_probe_seconds(two_zones) == startup_probe_seconds(config)


def test_a_node_more_or_less_keeps_the_startup_probe_and_so_the_pods() -> None:
    """A platform review: the 397B profile's probe counts every pod reading the checkpoint at once, so adding a 13th
    node changed failureThreshold 477 -> 502, a new pod template: all 12 pods rolled, 2.3-3.5 h. In whole half hours,
    a node more or less moves it only past a step, and it still outlasts the simultaneous read."""
    from stacks.capacity.time_to_serve import startup_probe_seconds

    config = variant_config("prod-397b")
    raw = config.model_dump(by_alias=True, exclude_unset=True)
    probes = {
        nodes: startup_probe_seconds(validate({**raw, "capacity": {**raw["capacity"], "nodes": nodes}}))
        for nodes in (11, 12, 13)
    }
    assert len(set(probes.values())) == 1 and probes[12] % 1800 == 0, probes
