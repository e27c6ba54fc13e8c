"""Checkpoint traps: what a model's format and architecture forbid, learned serving Qwen 3.5 on B200."""

from __future__ import annotations

import re

from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from policies.graph import compute_classes, pod_gpu_types, pod_templates
from policies.settings import Setting, config_schema
from policies.values import number_text
from policies.vllm_command import VllmServer, vllm_servers

NVFP4_KV_MODELS = Setting(
    "noNvfp4KvCacheModels",
    ["qwen3.5", "qwen3_5"],
    "name fragments of models whose answers an NVFP4 KV cache breaks "
    "(https://github.com/vllm-project/vllm/issues/55673: Qwen3.5-397B on B200)",
    may_be_empty=True,  # a team that serves none of them
)
# GKE accelerator label values of Blackwell GPUs: nvidia-b200 (A4) and
# nvidia-gb200 (A4X); not verified here for B300 or RTX PRO 6000, so they are left to the config.
BLACKWELL_GPUS = Setting(
    "blackwellGpuTypes", ["nvidia-b200", "nvidia-gb200"], "GKE accelerator types with NVFP4 (FP4) tensor cores"
)
MTP_MODELS = Setting(
    "mtpModels",
    ["qwen3.5", "qwen3_5"],
    "name fragments of checkpoints that carry multi-token-prediction heads (all Qwen 3.5 checkpoints)",
    may_be_empty=True,
)
MOE_MODELS = Setting(
    "moeModels",
    [],
    "name fragments of mixture-of-experts models besides those named <total>B-A<active>B (Qwen3.5-35B-A3B)",
    may_be_empty=True,
)
NVFP4_MARKERS = ("nvfp4", "modelopt_fp4")
# Qwen's naming of mixture-of-experts checkpoints: total and active parameters, "35B-A3B".
ACTIVE_PARAMETERS = re.compile(r"\d+(?:\.\d+)?b-a\d+(?:\.\d+)?b(?![a-z0-9])")


def _servers(args: ResourceValidationArgs) -> list[VllmServer]:
    return vllm_servers(args.resource_type, args.props)


def _named(server: VllmServer, fragments: list[str]) -> bool:
    names = server.model_names
    return any(str(fragment).lower() in names for fragment in fragments)


def _no_nvfp4_kv_cache(args: ResourceValidationArgs, report: ReportViolation) -> None:
    fragments = list(NVFP4_KV_MODELS.read(args.get_config()))
    for server in _servers(args):
        dtype = (server.value("kv-cache-dtype") or "").lower()
        if dtype.startswith("nvfp4") and _named(server, fragments):
            report(f"container {server.container_name}: --kv-cache-dtype={dtype} for {server.model}; use fp8_e4m3")


NO_NVFP4_KV_CACHE = ResourceValidationPolicy(
    name="LLM-VLLM-011",
    display_name="No NVFP4 KV cache for Qwen 3.5",
    description=(
        "--kv-cache-dtype nvfp4 (accepted from vLLM 0.33: vllm/config/cache.py CacheDType) for a Qwen 3.5 model: on "
        "B200 the FlashInfer TRT-LLM NVFP4 KV cache gave 93-95% invalid GSM8K answers on Qwen3.5-397B-A17B, FP8 KV "
        "96.7% valid (https://github.com/vllm-project/vllm/issues/55673). Keep the KV cache in FP8."
    ),
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_no_nvfp4_kv_cache,
    config_schema=config_schema(NVFP4_KV_MODELS),
)


def _nvfp4(server: VllmServer) -> bool:
    quantization = (server.value("quantization") or "").lower()
    return any(marker in server.model_names or marker in quantization for marker in NVFP4_MARKERS)


def _nvfp4_on_blackwell(args: StackValidationArgs, report: ReportViolation) -> None:
    blackwell = set(BLACKWELL_GPUS.read(args.get_config()))
    classes = compute_classes(args.resources)
    for resource, template in pod_templates(args.resources):
        gpu_types = pod_gpu_types(template, classes)
        if not gpu_types or gpu_types <= blackwell:
            continue
        for server in vllm_servers(resource.resource_type, resource.props):
            if _nvfp4(server):
                others = ", ".join(sorted(gpu_types - blackwell))
                report(
                    f"container {server.container_name} serves the NVFP4 checkpoint {server.model} on {others}; "
                    "NVFP4 needs Blackwell GPUs",
                    resource.urn,
                )


NVFP4_ON_BLACKWELL = StackValidationPolicy(
    name="LLM-VLLM-012",
    display_name="NVFP4 weights only on Blackwell GPUs",
    description=(
        "An NVFP4 checkpoint (ModelOpt FP4, e.g. nvidia/Qwen3.5-397B-A17B-NVFP4) on a pod that may land on a GPU "
        "without FP4 tensor cores: NVIDIA's model card lists Blackwell as the supported hardware; elsewhere vLLM "
        "only has weight-only (Marlin) or emulation kernels for it (vllm 0.33.0 "
        "model_executor/layers/fused_moe/oracle/nvfp4.py), not the FP4 tensor cores the checkpoint is made for."
    ),
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_nvfp4_on_blackwell,
    config_schema=config_schema(BLACKWELL_GPUS),
)


def _mtp_with_mtp_heads(args: ResourceValidationArgs, report: ReportViolation) -> None:
    fragments = list(MTP_MODELS.read(args.get_config()))
    for server in _servers(args):
        if server.speculative and server.speculative.is_mtp and not _named(server, fragments):
            report(
                f"container {server.container_name}: MTP speculative decoding for {server.model}, which is not known "
                "to carry MTP heads"
            )


MTP_WITH_MTP_HEADS = ResourceValidationPolicy(
    name="LLM-VLLM-013",
    display_name="MTP speculative decoding only for checkpoints with MTP heads",
    description=(
        "--speculative-config with method mtp drafts with the checkpoint's own multi-token-prediction layers: a "
        "checkpoint without them fails at start-up ('MTP speculative decoding layer N weights missing from "
        "checkpoint', https://github.com/vllm-project/vllm/pull/35548). Name the model's family in the policy "
        "config when it has MTP heads."
    ),
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_mtp_with_mtp_heads,
    config_schema=config_schema(MTP_MODELS),
)


def _moe_data_parallel_uses_expert_parallel(args: ResourceValidationArgs, report: ReportViolation) -> None:
    fragments = list(MOE_MODELS.read(args.get_config()))
    for server in _servers(args):
        moe = ACTIVE_PARAMETERS.search(server.model_names) is not None or _named(server, fragments)
        data_parallel = server.number("data-parallel-size", 1)
        expert_parallel = server.has("enable-expert-parallel") and not server.has("no-enable-expert-parallel")
        if moe and data_parallel > 1 and not expert_parallel:
            report(
                f"container {server.container_name}: data parallel {number_text(data_parallel)} for the MoE model "
                f"{server.model} without --enable-expert-parallel"
            )


MOE_DATA_PARALLEL_USES_EXPERT_PARALLEL = ResourceValidationPolicy(
    name="LLM-VLLM-014",
    display_name="Data parallel on a MoE model with expert parallel",
    description=(
        "--data-parallel-size above 1 for a mixture-of-experts model without --enable-expert-parallel: the DP ranks "
        "of a MoE model are not independent copies; they step together and, without expert parallel, the expert "
        "layers form one tensor parallel group of DP x TP (vLLM docs, 'Data Parallel Deployment'). The vLLM recipes "
        "serve the Qwen 3.5 MoE models with -dp N --enable-expert-parallel."
    ),
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_moe_data_parallel_uses_expert_parallel,
    config_schema=config_schema(MOE_MODELS),
)
