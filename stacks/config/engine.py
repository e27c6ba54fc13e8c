"""The vLLM engine: image, parallelism, memory, speculative decoding, flags and environment, and the workload shape."""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, field_validator, model_validator

from components.hardware import B200_GPUS_PER_NODE
from stacks.config.base import EXTRA_ARGS_MAX, ConfigModel, Quantity, checked, checked_printable
from stacks.config.grammars import (
    image_problem,
)
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


class SpeculativeConfig(ConfigModel):
    method: Literal["mtp"] = "mtp"
    num_speculative_tokens: Annotated[int, Field(ge=1, le=8)] = 1


ENGINE_IMAGE = "vllm/vllm-openai:v0.19.0"
# The linux/amd64 manifest of vllm/vllm-openai:v0.19.0 as a public project pins it (A4 nodes are
# x86-64); confirm with `docker buildx imagetools inspect vllm/vllm-openai:v0.19.0`.
ENGINE_IMAGE_DIGEST = "sha256:7a0f0fdd2771464b6976625c2b2d5dd46f566aa00fbc53eceab86ef50883da90"


class EngineConfig(ConfigModel):
    """vLLM engine arguments; defaults are exactly the published recipe (vLLM 0.18+)."""

    image: str = ENGINE_IMAGE
    image_digest: Annotated[str | None, Field(pattern=r"^sha256:[0-9a-f]{64}$")] = Field(
        default=None, description="Defaults to the known digest of the default image; prod requires one."
    )
    served_model_name: str | None = Field(default=None, description="Defaults to weights.model.")
    port: Annotated[int, Field(ge=1024, le=65535)] = 8000
    data_parallel_size: Annotated[int, Field(ge=1, le=B200_GPUS_PER_NODE)] = 8
    tensor_parallel_size: Annotated[int, Field(ge=1, le=B200_GPUS_PER_NODE)] = 1
    max_model_len: Annotated[int, Field(ge=256, le=1_048_576)] = 2560
    max_num_batched_tokens: Annotated[int, Field(ge=256, le=1_048_576)] = 16384
    max_num_seqs: Annotated[int, Field(ge=1, le=65536)] = 8192
    kv_cache_dtype: KvCacheDtype = KvCacheDtype.fp8_e4m3
    gpu_memory_utilization: Annotated[float, Field(gt=0.0, le=1.0)] = 0.92
    enable_prefix_caching: bool = True
    enable_chunked_prefill: bool = True
    attention_backend: Annotated[str, Field(pattern=r"^[A-Z_0-9]+$")] = "FLASHINFER"
    optimization_level: Annotated[int, Field(ge=0, le=3)] = 3
    speculative: SpeculativeConfig | None = SpeculativeConfig()
    mamba_cache_mode: MambaCacheMode | None = MambaCacheMode.align
    mamba_block_size: Annotated[int | None, Field(ge=8, le=4096)] = 8
    estimate_cudagraphs: bool = Field(default=True, description="VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1")
    extra_args: Annotated[list[Annotated[str, AfterValidator(checked_printable)]], Field(max_length=EXTRA_ARGS_MAX)] = (
        Field(default=[], description="More `vllm serve` flags; none may repeat or contradict a typed key.")
    )
    extra_env: Annotated[
        dict[
            Annotated[str, Field(pattern=r"^[A-Z_][A-Z0-9_]{0,127}$")],
            Annotated[str, AfterValidator(checked_printable)],
        ],
        Field(max_length=EXTRA_ARGS_MAX),
    ] = Field(default={}, description="More environment variables; none may override one the stack sets.")
    # Autopilot bills a GPU pod for its whole node (node-based billing of accelerator Pods: the
    # a4-highgpu-8g price plus the Autopilot premium), so requests below the node cost the same:
    # take most of the 224 vCPU (8 API servers, tokenization and 8 engine cores) and half the
    # 3,968 GB (host memory and page cache), leaving room for system reservations and DaemonSets.
    # The per-GPU-type maximums of "Resource requests in Autopilot" could not be read here; these
    # stay below the node's allocatable.
    cpu: Annotated[Quantity, Field(description="Per serving pod (A4: 224 vCPU).")] = "200"
    memory: Annotated[Quantity, Field(description="Per serving pod (A4: 3,968 GB).")] = "1800Gi"
    ephemeral_storage: Annotated[Quantity, Field(description="torch.compile, FlashInfer and Triton caches.")] = "200Gi"

    @model_validator(mode="before")
    @classmethod
    def _known_digest_of_default_image(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        image = data.get("image", ENGINE_IMAGE)
        if image == ENGINE_IMAGE and "imageDigest" not in data and "image_digest" not in data:
            return {**data, "imageDigest": ENGINE_IMAGE_DIGEST}
        return data

    @field_validator("image")
    @classmethod
    def _engine_image(cls, value: str) -> str:
        return checked(image_problem(value, tag_required=True, digest_allowed=False), value)

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
        return self


class WorkloadConfig(ConfigModel):
    """The traffic the stack is sized for; policies and the cost sheet compare against it."""

    concurrency_per_node: Annotated[int, Field(ge=1, le=65536)] = 2000
    max_prompt_tokens: Annotated[int, Field(ge=1, le=1_048_576)] = 1536
    max_output_tokens: Annotated[int, Field(ge=1, le=1_048_576)] = 768
