"""vLLM engine flags: each rule is a mistake of the published tuning, with what it cost."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from policies.graph import B200, compute_classes, pod_gpu_types, pod_templates
from policies.settings import Setting, config_schema
from policies.values import as_number, number_text
from policies.vllm_command import (
    DEFAULT_GPU_MEMORY_UTILIZATION,
    DEFAULT_MAX_NUM_SEQS,
    VllmServer,
    human_readable_int,
    vllm_servers,
)

CONCURRENCY_ANNOTATION = "llm-serving/concurrency-per-pod"
MAX_REQUEST_TOKENS_ANNOTATION = "llm-serving/max-request-tokens"
# The longest context any setting may name: 16M tokens, 16x the stack's longest engine.maxModelLen.
CONTEXT_TOKENS_MAX = 16_777_216

GPU_MEMORY_GB = Setting("gpuMemoryGb", 180, "memory of one GPU in GB (B200: 180)", minimum=1, maximum=1024)
MAX_WEIGHTS_SHARE = Setting(
    "maxWeightsShareOfGpu",
    0.5,
    "a model fits one GPU when its weights take at most this share of its memory",
    minimum=0,
    maximum=1,
)
MAX_MTP_MEMORY_UTILIZATION = Setting(
    "maxGpuMemoryUtilization",
    0.92,
    "highest --gpu-memory-utilization that ran with MTP",
    minimum=0.01,
    maximum=1,  # the flag's own range is (0, 1]
)
CONCURRENCY_PER_POD = Setting(
    "concurrencyPerPod",
    0,
    f"concurrent requests per pod when a workload has no {CONCURRENCY_ANNOTATION} annotation (0: not known)",
    minimum=0,
    maximum=65536,  # the stack's largest workload.concurrencyPerNode
)
MAX_REQUEST_TOKENS = Setting(
    "maxRequestTokens",
    0,
    f"longest request (prompt + output) when a workload has no {MAX_REQUEST_TOKENS_ANNOTATION} (0: not known)",
    minimum=0,
    maximum=CONTEXT_TOKENS_MAX,
)
MAX_OVERALLOCATION = Setting(
    "maxOverallocation", 2, "largest --max-model-len as a multiple of the longest request", minimum=1, maximum=1024
)
NATIVE_CONTEXT = Setting(
    "nativeContextTokens",
    262144,
    "the model's native context, vLLM's --max-model-len default",
    minimum=256,
    maximum=CONTEXT_TOKENS_MAX,
)
HYBRID_MODELS = Setting(
    "hybridModels",
    ["qwen3.5", "qwen3_5"],
    "name fragments of hybrid (Gated DeltaNet) models that need the mamba flags",
    may_be_empty=True,  # a team that serves none
)
FIRST_FIXED_VERSION = Setting(
    "firstFixedVersion",
    "0.18.1",
    "first vLLM release with the B200 FP8-KV accuracy fix, like 0.18.1",
    pattern=r"^v?[0-9]{1,6}(\.[0-9]{1,6}){0,3}$",
)


def _servers(args: ResourceValidationArgs) -> list[VllmServer]:
    return vllm_servers(args.resource_type, args.props)


def _b200_servers(args: StackValidationArgs) -> Iterator[tuple[Any, VllmServer]]:
    classes = compute_classes(args.resources)
    for resource, template in pod_templates(args.resources):
        if B200 in (pod_gpu_types(template, classes) or set()):
            for server in vllm_servers(resource.resource_type, resource.props):
                yield resource, server


def _parallelism_matches_gpus(args: ResourceValidationArgs, report: ReportViolation) -> None:
    for server in _servers(args):
        if server.gpus and server.parallel_gpus != server.gpus:
            data, tensor = server.number("data-parallel-size", 1), server.number("tensor-parallel-size", 1)
            pipeline = server.number("pipeline-parallel-size", 1)
            product = f"data parallel {number_text(data)} x tensor parallel {number_text(tensor)}"
            if "data-parallel-rank" in server.flags:
                product = f"one data-parallel rank x tensor parallel {number_text(tensor)}"
            if pipeline != 1:
                product += f" x pipeline parallel {number_text(pipeline)}"
            report(
                f"container {server.container_name}: {product} = {number_text(server.parallel_gpus)}, "
                f"but the container requests {number_text(server.gpus)} GPUs"
            )


PARALLELISM_MATCHES_GPUS = ResourceValidationPolicy(
    name="LLM-VLLM-001",
    display_name="Data parallel x tensor parallel equals the GPUs of the pod",
    description=(
        "--data-parallel-size x --tensor-parallel-size (x --pipeline-parallel-size) must equal the nvidia.com/gpu "
        "the vLLM container requests (a server with --data-parallel-rank runs one rank: --tensor-parallel-size x "
        "--pipeline-parallel-size): a smaller product leaves paid GPUs idle, a larger one fails at start-up."
    ),
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_parallelism_matches_gpus,
)


def _no_tensor_parallel_when_one_gpu_fits(args: ResourceValidationArgs, report: ReportViolation) -> None:
    config = args.get_config()
    fits_below = float(GPU_MEMORY_GB.read(config)) * float(MAX_WEIGHTS_SHARE.read(config))
    for server in _servers(args):
        tensor_parallel = server.number("tensor-parallel-size", 1)
        weights = server.weights_gb_estimate()
        if tensor_parallel > 1 and weights is not None and weights <= fits_below:
            report(
                f"container {server.container_name}: tensor parallel {number_text(tensor_parallel)} for a model of "
                f"~{number_text(weights)} GB that fits one GPU; use data parallel (one copy per GPU)"
            )


NO_TENSOR_PARALLEL_WHEN_ONE_GPU_FITS = ResourceValidationPolicy(
    name="LLM-VLLM-002",
    display_name="No tensor parallel for a model that fits one GPU",
    description=(
        "--tensor-parallel-size above 1 for a model whose weights (estimated from the parameter count and "
        "FP8/FP4 in its name) take at most half a GPU: a full copy per GPU with data parallel needs no inter-GPU "
        "traffic. Measured per A4 node in the benchmark write-up: TP=8 ~22,300 tok/s, DP=8 74,848 tok/s."
    ),
    enforcement_level=EnforcementLevel.ADVISORY,
    validate=_no_tensor_parallel_when_one_gpu_fits,
    config_schema=config_schema(GPU_MEMORY_GB, MAX_WEIGHTS_SHARE),
)


def _fp8_kv_cache_on_b200(args: StackValidationArgs, report: ReportViolation) -> None:
    for resource, server in _b200_servers(args):
        if not server.fp8_kv_cache:
            kv_dtype = server.value("kv-cache-dtype") or "auto (unset)"
            report(f"container {server.container_name} on B200 keeps the KV cache in {kv_dtype}", resource.urn)


FP8_KV_CACHE_ON_B200 = StackValidationPolicy(
    name="LLM-VLLM-003",
    display_name="FP8 KV cache on B200",
    description=(
        "vLLM on B200 should run --kv-cache-dtype=fp8_e4m3 (or fp8): in the benchmark write-up FP8 KV tripled the "
        "KV capacity (959K tokens per engine vs 288K) and, with MTP-1, lifted a node from 85,509 to ~96,000 tok/s."
    ),
    enforcement_level=EnforcementLevel.ADVISORY,
    validate=_fp8_kv_cache_on_b200,
)


def _speculative_tokens_at_most_two(args: ResourceValidationArgs, report: ReportViolation) -> None:
    for server in _servers(args):
        speculative = server.speculative
        if speculative and speculative.tokens > 2:
            report(f"container {server.container_name}: num_speculative_tokens {speculative.tokens}; use 1")


SPECULATIVE_TOKENS_AT_MOST_TWO = ResourceValidationPolicy(
    name="LLM-VLLM-004",
    display_name="Speculative decoding proposes at most 2 tokens",
    description=(
        "num_speculative_tokens above 2 in --speculative-config: MTP-5 crashed with cudaErrorIllegalAddress "
        "(https://github.com/vllm-project/vllm/issues/37035), and acceptance falls with every position "
        "(84.7/58.7/49.3/44.1/41.2% in the benchmark write-up)."
    ),
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_speculative_tokens_at_most_two,
)


def _one_speculative_token(args: ResourceValidationArgs, report: ReportViolation) -> None:
    for server in _servers(args):
        speculative = server.speculative
        if speculative and speculative.tokens == 2:
            report(f"container {server.container_name}: num_speculative_tokens 2; 1 was faster")


ONE_SPECULATIVE_TOKEN = ResourceValidationPolicy(
    name="LLM-VLLM-005",
    display_name="One speculative token, not two",
    description=(
        "num_speculative_tokens = 2 in --speculative-config: in the benchmark write-up's runs at "
        "--gpu-memory-utilization=0.95, MTP-2 gave 90,567 tok/s per node and MTP-1 95,391 (~90% acceptance)."
    ),
    enforcement_level=EnforcementLevel.ADVISORY,
    validate=_one_speculative_token,
)


def _memory_headroom_for_mtp(args: ResourceValidationArgs, report: ReportViolation) -> None:
    limit = float(MAX_MTP_MEMORY_UTILIZATION.read(args.get_config()))
    for server in _servers(args):
        utilization = server.number("gpu-memory-utilization", DEFAULT_GPU_MEMORY_UTILIZATION)
        given = server.flags.get("gpu-memory-utilization")
        if server.speculative and server.speculative.is_mtp and given is not None and as_number(given) is None:
            # `nan` or `inf` (argparse's float() takes both) read as the default: the rule passed on them
            report(
                f"container {server.container_name}: --gpu-memory-utilization={str(given)[:20]} is not a finite "
                f"number; with MTP at most {number_text(limit)}"
            )
        elif server.speculative and server.speculative.is_mtp and utilization > limit:
            report(
                f"container {server.container_name}: --gpu-memory-utilization={number_text(utilization)} "
                f"with MTP; at most {number_text(limit)}"
            )


MEMORY_HEADROOM_FOR_MTP = ResourceValidationPolicy(
    name="LLM-VLLM-006",
    display_name="GPU memory utilization at most 0.92 with MTP",
    description=(
        "--gpu-memory-utilization above 0.92 with MTP speculative decoding: in the benchmark write-up at 0.95 the "
        "MTP draft weights (~29 GB), the KV cache and the CUDA graphs did not fit and 908 requests failed; 0.95 gave "
        "no gain either."
    ),
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_memory_headroom_for_mtp,
    config_schema=config_schema(MAX_MTP_MEMORY_UTILIZATION),
)


def _workload_number(server: VllmServer, annotation: str, fallback: Setting, config: Any) -> float:
    declared = as_number(server.template.annotations.get(annotation))
    # a count: a negative or zero annotation (a hand edit) is none, as one that is no number
    return declared if declared is not None and declared > 0 else float(fallback.read(config))


def _scheduler_fits_concurrency(args: ResourceValidationArgs, report: ReportViolation) -> None:
    for server in _servers(args):
        target = _workload_number(server, CONCURRENCY_ANNOTATION, CONCURRENCY_PER_POD, args.get_config())
        max_num_seqs = server.number("max-num-seqs", DEFAULT_MAX_NUM_SEQS)
        if max_num_seqs < target:
            shown = number_text(max_num_seqs)
            if not server.has("max-num-seqs"):
                shown = f"unset (vLLM default {shown})"
            report(
                f"container {server.container_name}: --max-num-seqs {shown} is below the "
                f"{number_text(target)} concurrent requests the pod is sized for"
            )


SCHEDULER_FITS_CONCURRENCY = ResourceValidationPolicy(
    name="LLM-VLLM-007",
    display_name="max-num-seqs is not below the per-pod concurrency target",
    description=(
        "--max-num-seqs below the concurrent requests a pod is sized for (annotation "
        f"{CONCURRENCY_ANNOTATION}, else policy config): in the benchmark write-up at 512 the scheduler was full "
        "and throughput stayed flat from 500 to 1,000 concurrent requests; the recipe runs 8192 for ~2,000 requests "
        "per node."
    ),
    enforcement_level=EnforcementLevel.ADVISORY,
    validate=_scheduler_fits_concurrency,
    config_schema=config_schema(CONCURRENCY_PER_POD),
)


def _context_sized_to_workload(args: ResourceValidationArgs, report: ReportViolation) -> None:
    config = args.get_config()
    for server in _servers(args):
        need = _workload_number(server, MAX_REQUEST_TOKENS_ANNOTATION, MAX_REQUEST_TOKENS, config)
        max_model_len = server.number("max-model-len", float(NATIVE_CONTEXT.read(config)))
        factor = float(MAX_OVERALLOCATION.read(config))
        if need and max_model_len > factor * need:
            shown = number_text(max_model_len)
            if not server.has("max-model-len"):
                shown = f"unset ({shown})"
            elif as_number(given := str(server.value("max-model-len"))) is None:
                read = "" if human_readable_int(given) is not None else "no finite number, read as "
                shown = f"{given[:20]} ({read}{shown})"
            report(
                f"container {server.container_name}: --max-model-len {shown} is "
                f"{max_model_len / need:.1f}x the longest request ({number_text(need)} tokens)"
            )


CONTEXT_SIZED_TO_WORKLOAD = ResourceValidationPolicy(
    name="LLM-VLLM-008",
    display_name="max-model-len sized to the workload",
    description=(
        "--max-model-len more than twice the longest request (annotation "
        f"{MAX_REQUEST_TOKENS_ANNOTATION}, else policy config; unset means the native 262,144): it is the biggest "
        "KV-cache knob. In the benchmark write-up 131,072 over-allocated 85x; cutting it to 4K lifted a node from "
        "74,848 to 85,509 tok/s."
    ),
    enforcement_level=EnforcementLevel.ADVISORY,
    validate=_context_sized_to_workload,
    config_schema=config_schema(MAX_REQUEST_TOKENS, MAX_OVERALLOCATION, NATIVE_CONTEXT),
)


def _hybrid_mamba_settings(args: ResourceValidationArgs, report: ReportViolation) -> None:
    fragments = [str(fragment).lower() for fragment in HYBRID_MODELS.read(args.get_config())]
    for server in _servers(args):
        if not any(fragment in server.model_names for fragment in fragments):
            continue
        problems = []
        mode = server.value("mamba-cache-mode")
        if mode != "align":
            problems.append(f"--mamba-cache-mode is {mode or 'unset'}, not align")
        block_size = as_number(server.value("mamba-block-size"))
        if block_size is None:
            problems.append("--mamba-block-size is unset")
        elif block_size % 8:
            problems.append(f"--mamba-block-size={number_text(block_size)} is not a multiple of 8")
        prefix_caching = server.has("enable-prefix-caching") and not server.has("no-enable-prefix-caching")
        if not prefix_caching:
            # said whether or not a block size is set: with prefix caching off the stack refuses one, and a reader
            # told only "--mamba-block-size is unset" turned the block size on and off again (a day-2 review)
            problems.append("--enable-prefix-caching is off, which the block size needs")
        if problems:
            report(f"container {server.container_name} serves a hybrid Qwen 3.5 model: {'; '.join(problems)}")


HYBRID_MAMBA_SETTINGS = ResourceValidationPolicy(
    name="LLM-VLLM-009",
    display_name="Hybrid Qwen 3.5: mamba-cache-mode align, mamba-block-size a multiple of 8",
    description=(
        "Qwen 3.5 (48 Gated DeltaNet + 16 full-attention layers) needs --mamba-cache-mode=align and "
        "--mamba-block-size a multiple of 8 with --enable-prefix-caching: without them the engine re-processes the "
        "whole prompt on every response and throughput falls by an order of magnitude; vLLM 0.18 refuses other "
        "block sizes, a block size without prefix caching and mode all."
    ),
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_hybrid_mamba_settings,
    config_schema=config_schema(HYBRID_MODELS),
)


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.lstrip("v").split("."))


def _image_has_fp8_kv_fix(args: StackValidationArgs, report: ReportViolation) -> None:
    first_fixed = str(FIRST_FIXED_VERSION.read(args.get_config()))
    for resource, server in _b200_servers(args):
        version = server.image_version
        if server.fp8_kv_cache and version is not None and version < _version_tuple(first_fixed):
            report(
                f"container {server.container_name} runs {server.image} with an FP8 KV cache on B200; "
                f"pin vLLM {first_fixed} or later",
                resource.urn,
            )


IMAGE_HAS_FP8_KV_FIX = StackValidationPolicy(
    name="LLM-VLLM-010",
    display_name="No vLLM image with the B200 FP8-KV accuracy bug",
    description=(
        "vLLM 0.18.0 or older with an FP8 KV cache on B200: the v0.18.0 release notes list degraded accuracy "
        "serving Qwen3.5 with FP8 KV cache on B200; the fix (https://github.com/vllm-project/vllm/pull/38083) "
        "shipped after 0.18.0. Pin an image with the fix."
    ),
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_image_has_fp8_kv_fix,
    config_schema=config_schema(FIRST_FIXED_VERSION),
)
