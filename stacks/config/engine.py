"""The vLLM engine: image, parallelism, memory, speculative decoding, flags and environment, and the workload shape."""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, field_validator, model_validator

from common.cuda_graphs import workload_capture_size
from common.grammars import image_problem
from components.hardware import B200_GPUS_PER_NODE
from schemas.vllm_releases import MEASURED_RELEASE, RELEASES, release_problem
from stacks.config.base import EXTRA_ARGS_MAX, ConfigModel, Quantity, checked, checked_printable
from stacks.config.quoting import quote


class KvCacheDtype(StrEnum):
    auto = "auto"
    fp8 = "fp8"
    fp8_e4m3 = "fp8_e4m3"
    fp8_e5m2 = "fp8_e5m2"


class MambaCacheMode(StrEnum):
    none = "none"
    align = "align"
    all = "all"


# 0.19.0's default largest size: min(max_num_seqs x tokens per decode step x 2, 512), at most max_num_batched_tokens
# (vllm/config/vllm.py `_set_cudagraph_sizes`; the grid: common/cuda_graphs.py). 0.33.0 raises the cap to 1024 on
# Blackwell (`is_device_capability_family(100)`) and adds the uniform decode sizes of speculative decoding, so there an
# explicit size is never the same as the default.
V0_19_DEFAULT_CAPTURE_CAP = 512
WORKLOAD = "workload"


def capture_size(engine: EngineConfig, concurrency_per_node: int) -> int | None:
    """engine.maxCudagraphCaptureSize as a number (`workload`: matched to the node's concurrency)."""
    size = engine.max_cudagraph_capture_size
    if size is None or isinstance(size, int):
        return size
    return workload_capture_size(
        concurrency_per_node,
        engine.data_parallel_size,
        engine.speculative.num_speculative_tokens if engine.speculative else 0,
        engine.max_num_batched_tokens,
    )


def default_capture_size(engine: EngineConfig, release: str | None) -> int | None:
    """vLLM's own largest capture size for this engine where it is a plain grid (0.19.0), else None."""
    if release != "0.19.0":
        return None
    decode_tokens = 1 + (engine.speculative.num_speculative_tokens if engine.speculative else 0)
    return min(engine.max_num_seqs * decode_tokens * 2, V0_19_DEFAULT_CAPTURE_CAP, engine.max_num_batched_tokens)


class SpeculativeConfig(ConfigModel):
    """Speculative decoding (`--speculative-config`): the recipe's MTP-1."""

    method: Literal["mtp"] = Field(
        default="mtp", description="`mtp`: the model's own multi-token-prediction layer drafts the tokens."
    )
    num_speculative_tokens: Annotated[int, Field(ge=1, le=8)] = Field(
        default=1,
        description="Tokens drafted per step, 1-8. Recipe: 1 (~90% accepted); 2 was slower, 5 crashed (https://github.com/vllm-project/vllm/issues/37035).",
    )

    @property
    def label(self) -> str:
        """`mtp-1`: how measurements name the setting."""
        return f"{self.method}-{self.num_speculative_tokens}"


ENGINE_IMAGE = RELEASES[MEASURED_RELEASE].image
KNOWN_DIGESTS = {release.image: release.image_digest for release in RELEASES.values() if release.image_digest}


class EngineConfig(ConfigModel):
    """vLLM engine arguments. The defaults are the published recipe (the default profile,
    `qwen3.5-27b-fp8`); another `profile` sets its own, and every key here overrides the profile."""

    image: str = Field(
        default=ENGINE_IMAGE,
        description=(
            "vLLM OpenAI server image with a release tag (`:vX.Y.Z`; the digest goes in imageDigest). Only pinned "
            "releases, each with its vendored `vllm serve` argument table: v0.19.0 (the default, the fix for "
            "degraded FP8-KV accuracy of Qwen 3.5 on B200 in 0.18.0, https://github.com/vllm-project/vllm/pull/38083) "
            "and v0.33.0."
        ),
    )
    image_digest: Annotated[str | None, Field(pattern=r"^sha256:[0-9a-f]{64}$")] = Field(
        default=None,
        description="`sha256:<64 hex>` of engine.image; the pod runs `image@digest`. Defaults to the known digest "
        "of a pinned release's image (v0.19.0; none verified for v0.33.0); prod requires one.",
    )
    served_model_name: str | None = Field(
        default=None, description="`--served-model-name`, the model name clients send; defaults to weights.model."
    )
    port: Annotated[int, Field(ge=1024, le=65535)] = Field(
        default=8000,
        description=(
            "`--port`: the serving container's port, probed by Kubernetes and targeted by the Service "
            "or InferencePool (1024-65535)."
        ),
    )
    data_parallel_size: Annotated[int, Field(ge=1, le=B200_GPUS_PER_NODE)] = Field(
        default=8,
        description=(
            "`--data-parallel-size`: model copies per node. Recipe: 8, one per GPU; dataParallelSize "
            "x tensorParallelSize must equal the node's 8 GPUs."
        ),
    )
    tensor_parallel_size: Annotated[int, Field(ge=1, le=B200_GPUS_PER_NODE)] = Field(
        default=1,
        description=(
            "`--tensor-parallel-size`: GPUs per model copy. Recipe: 1 (TP=8 gave ~22K tok/s per node, DP=8 ~75K)."
        ),
    )
    enable_expert_parallel: bool = Field(
        default=False,
        description="`--enable-expert-parallel`: a MoE model's experts are split over the DP x TP ranks instead of "
        "tensor-sharded over all of them (vLLM 'Data Parallel Deployment'); policy LLM-VLLM-014 requires it for "
        "MoE data parallel.",
    )
    max_model_len: Annotated[int, Field(ge=256, le=1_048_576)] = Field(
        default=2560,
        description=(
            "`--max-model-len`, tokens (prompt + output) per request. Recipe: 2560, sized to the "
            "workload; 131072 over-allocated the KV cache 85x. Must be at least "
            "workload.maxPromptTokens + maxOutputTokens."
        ),
    )
    max_num_batched_tokens: Annotated[int, Field(ge=256, le=1_048_576)] = Field(
        default=16384, description="`--max-num-batched-tokens`: tokens scheduled per engine step. Recipe: 16384."
    )
    max_num_seqs: Annotated[int, Field(ge=1, le=65536)] = Field(
        default=8192,
        description=(
            "`--max-num-seqs`: sequences per engine. Recipe: 8192 (at 512 the scheduler was full and throughput flat)."
        ),
    )
    kv_cache_dtype: KvCacheDtype = Field(
        default=KvCacheDtype.fp8_e4m3,
        description="`--kv-cache-dtype`. Recipe: fp8_e4m3 (triples KV-cache capacity over auto).",
    )
    gpu_memory_utilization: Annotated[float, Field(gt=0.0, le=1.0)] = Field(
        default=0.92,
        description=(
            "`--gpu-memory-utilization`, fraction of each GPU's memory vLLM may use (0-1]. Recipe: "
            "0.92 with MTP; 0.95 crashed (policy LLM-VLLM-006 refuses more than 0.92 with MTP)."
        ),
    )
    enable_prefix_caching: bool = Field(
        default=True,
        description=(
            "`--enable-prefix-caching` (false renders `--no-enable-prefix-caching`). Recipe: on; "
            "mambaBlockSize needs it."
        ),
    )
    enable_chunked_prefill: bool = Field(
        default=True,
        description=(
            "`--enable-chunked-prefill` (false renders `--no-enable-chunked-prefill`). Recipe: on; "
            "needed while maxNumBatchedTokens is below maxModelLen."
        ),
    )
    attention_backend: Annotated[str | None, Field(pattern=r"^[A-Z_0-9]+$")] = Field(
        default="FLASHINFER",
        description=(
            "`--attention-backend` (upper-case name; VLLM_ATTENTION_BACKEND is gone since 0.18); null omits the "
            "flag and leaves the choice to vLLM. Recipe: FLASHINFER."
        ),
    )
    optimization_level: Annotated[int, Field(ge=0, le=3)] = Field(
        default=3, description="`-O<n>`, vLLM's compilation level 0-3. Recipe: 3 (equal to the default 2 today)."
    )
    speculative: SpeculativeConfig | None = Field(
        default=SpeculativeConfig(),
        description=(
            "Speculative decoding; null turns it off (the recipe measured a third less throughput without MTP)."
        ),
    )
    mamba_cache_mode: MambaCacheMode | None = Field(
        default=MambaCacheMode.align,
        description=(
            "`--mamba-cache-mode`: none, align or all; null omits the flag. Recipe: align, which Qwen "
            "3.5 (a hybrid model) needs or it re-processes whole prompts; `all` is refused for Qwen 3.5."
        ),
    )
    mamba_block_size: Annotated[int | None, Field(ge=8, le=4096)] = Field(
        default=8,
        description=(
            "`--mamba-block-size`: a multiple of 8 (8-4096), only with prefix caching on; null omits "
            "the flag. Recipe: 8. With mambaCacheMode align vLLM replaces it with the attention block size, so "
            "there it has no effect (docs/operations.md)."
        ),
    )
    language_model_only: bool = Field(
        default=False,
        description="`--language-model-only`: serve text only, without loading the vision encoder (the vLLM "
        "recipes' throughput mode for the Qwen 3.5 MoE models).",
    )
    moe_backend: Annotated[str | None, Field(pattern=r"^[a-z0-9_]+$")] = Field(
        default=None,
        description="`--moe-backend`: the MoE expert kernels (e.g. flashinfer_trtllm for NVFP4 on Blackwell); null "
        "omits the flag and leaves vLLM's automatic choice.",
    )
    max_cudagraph_capture_size: Annotated[int, Field(ge=1, le=1_048_576)] | Literal["workload"] | None = Field(
        default=None,
        description="`--max-cudagraph-capture-size`: the largest batch, in tokens, vLLM captures a CUDA graph for; "
        "fewer graphs is a shorter start-up. null (the recipe) omits the flag: vLLM's default, "
        "min(2 x maxNumSeqs x tokens per decode step, 512) in 0.19.0 (512 for the recipe), up to 1024 on B200 "
        "in 0.33.0 (vllm/config/vllm.py _set_cudagraph_sizes). `workload`: what one engine carries, "
        "workload.concurrencyPerNode / dataParallelSize requests x (1 + speculative tokens), rounded up to vLLM's "
        "capture grid (1, 2, 4, multiples of 8 below 256, then of 16); a batch above it runs without a graph. The "
        "planner shows throughput only for a capture set that was measured (the recipe's 512 on 0.19.0 is).",
    )
    stream_interval: Annotated[int | None, Field(ge=1, le=1024)] = Field(
        default=None,
        description="`--stream-interval`: tokens the engine buffers per streamed chunk, 1-1024 "
        "(vllm-project/vllm#27869; both pinned releases' parsers take it). Each chunk is one more ext_proc "
        "message through the gateway's Endpoint Picker, so a larger value lowers its per-request work at a "
        "coarser stream. null omits the flag (vLLM's default, 1: every token, what the measured runs used).",
    )
    reasoning_parser: Annotated[str | None, Field(pattern=r"^[a-z0-9_]+$")] = Field(
        default="qwen3",
        description="`--reasoning-parser`: splits the model's thinking from its answer in chat completions "
        "(`reasoning` beside `content`); null omits the flag and the thinking stays inside `content`. The "
        "Qwen 3.5 profiles: qwen3, as vLLM's recipes for these models set it (docs/profiles.md). A name the "
        "image's release does not register is refused (its API server would refuse it at start-up): the names per "
        "release are in schemas/vllm/reasoning-parsers.json.",
    )
    estimate_cudagraphs: bool = Field(
        default=True,
        description="VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1 in the engine's environment, as the recipe does, "
        "or =0 when false: always stated, since vLLM's own default flips from off (0.19) to on (0.21+).",
    )
    extra_args: Annotated[list[Annotated[str, AfterValidator(checked_printable)]], Field(max_length=EXTRA_ARGS_MAX)] = (
        Field(default=[], description="More `vllm serve` flags; none may repeat or contradict a typed key.")
    )
    extra_env: Annotated[
        dict[
            Annotated[str, Field(pattern=r"^[A-Z_][A-Z0-9_]{0,127}$")],
            Annotated[str, AfterValidator(checked_printable)],
        ],
        Field(max_length=EXTRA_ARGS_MAX),
    ] = Field(
        default={},
        description="More environment variables; none may override one the stack sets. Plain text (the manifests, "
        "the state, plan.md): a secret-looking value or a variable named like one (`*_API_KEY`, `*_PASSWORD`, "
        "`*_TOKEN`, `*_SECRET`...) is refused; put it in secretEnv.",
    )
    secret_env: Annotated[
        dict[
            Annotated[str, Field(pattern=r"^[A-Z_][A-Z0-9_]{0,127}$")],
            Annotated[str, Field(pattern=r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")],
        ],
        Field(max_length=EXTRA_ARGS_MAX),
    ] = Field(
        default={},
        description="Secret environment variables of the engine: each names a secret config key of the stack "
        "(`OPENAI_API_KEY: openaiApiKey`, set with `pulumi config set --secret openaiApiKey VALUE`, or an ESC "
        "secret). The values go into the Kubernetes Secret `<routing.serviceName>-engine-env` as Pulumi secrets "
        "and reach the pod through `valueFrom.secretKeyRef`, never a manifest, plan.md or the state in plain text.",
    )
    # Autopilot bills a GPU pod for its whole node (node-based billing of accelerator Pods: the a4-highgpu-8g price plus
    # the Autopilot premium), so requests below the node cost the same: take most of the 224 vCPU (8 API servers,
    # tokenization and 8 engine cores) and half the 3,968 GB (host memory and page cache), leaving room for system
    # reservations and DaemonSets. The per-GPU-type maximums of "Resource requests in Autopilot" could not be read here;
    # these stay below the node's allocatable.
    cpu: Annotated[
        Quantity, Field(description="CPU request and limit of each serving pod (an A4 node has 224 vCPU).")
    ] = "200"
    memory: Annotated[
        Quantity, Field(description="Memory request and limit of each serving pod (an A4 node has 3,968 GB).")
    ] = "1800Gi"
    ephemeral_storage: Annotated[
        Quantity,
        Field(description="Ephemeral storage of each serving pod: the torch.compile, FlashInfer and Triton caches."),
    ] = "200Gi"

    @model_validator(mode="before")
    @classmethod
    def _known_digest_of_default_image(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        image = data.get("image", ENGINE_IMAGE)
        if (
            isinstance(image, str)
            and image in KNOWN_DIGESTS
            and "imageDigest" not in data
            and "image_digest" not in data
        ):
            return {**data, "imageDigest": KNOWN_DIGESTS[image]}
        return data

    @field_validator("max_cudagraph_capture_size", mode="before")
    @classmethod
    def _capture_size(cls, value: Any) -> Any:
        if value is None or value == WORKLOAD or (isinstance(value, int) and not isinstance(value, bool)):
            return value
        raise ValueError(f"{quote(value)} is not a capture size; allowed: a number of tokens, 'workload' or null")

    @field_validator("image")
    @classmethod
    def _engine_image(cls, value: str) -> str:
        return checked(image_problem(value, tag_required=True, digest_allowed=False) or release_problem(value), value)

    @field_validator("served_model_name")
    @classmethod
    def _served_name(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_./:-]{0,127}", value):
            raise ValueError(
                f"{quote(value)} is not a model name (ASCII letters, digits, '_', '.', '/', ':', '-'; <= 128)"
            )
        return value

    @model_validator(mode="after")
    def _parallelism_fits_node(self) -> EngineConfig:
        if self.data_parallel_size * self.tensor_parallel_size != B200_GPUS_PER_NODE:
            raise ValueError(
                f"dataParallelSize x tensorParallelSize = "
                f"{self.data_parallel_size * self.tensor_parallel_size}; it must equal the "
                f"{B200_GPUS_PER_NODE} GPUs of an A4 node"
            )
        if self.mamba_block_size is not None:
            if self.mamba_block_size % 8:
                raise ValueError(f"mambaBlockSize {self.mamba_block_size} is not a multiple of 8")
            if not self.enable_prefix_caching:
                raise ValueError("mambaBlockSize may only be set with enablePrefixCaching on (vLLM 0.18)")
        if self.max_num_batched_tokens < self.max_model_len and not self.enable_chunked_prefill:
            raise ValueError("maxNumBatchedTokens below maxModelLen needs enableChunkedPrefill on")
        size = self.max_cudagraph_capture_size
        if isinstance(size, int) and size > self.max_num_batched_tokens:
            raise ValueError(
                f"maxCudagraphCaptureSize {size} is above maxNumBatchedTokens {self.max_num_batched_tokens}, the "
                "largest batch vLLM schedules (it would cut the size to that); allowed: 1 to maxNumBatchedTokens"
            )
        return self


class WorkloadConfig(ConfigModel):
    """The traffic the stack is sized for; policies and the cost sheet compare against it."""

    concurrency_per_node: Annotated[int, Field(ge=1, le=65536)] = Field(
        default=2000,
        description=(
            "Requests in flight per A4 node the stack is sized for. Recipe: ~2,000 per node; the "
            "planner and the benchmark's default concurrency use it."
        ),
    )
    max_prompt_tokens: Annotated[int, Field(ge=1, le=1_048_576)] = Field(
        default=1536, description="Longest prompt in tokens. Recipe: prompts ~1,500 tokens."
    )
    max_output_tokens: Annotated[int, Field(ge=1, le=1_048_576)] = Field(
        default=768,
        description="Longest response in tokens; maxPromptTokens + maxOutputTokens must fit engine.maxModelLen.",
    )
