"""The opt-in in-cluster benchmark Job."""

from __future__ import annotations

import ipaddress
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import Field, field_validator

from stacks.config.base import ConfigModel, Quantity
from stacks.config.quoting import quote

# One `vllm bench serve` process saturates one core at ~16K connections (the benchmark write-up); a
# quarter of that per vCPU keeps every client far from CPU-bound.
BENCH_CONCURRENCY_PER_VCPU = 4000
MAX_CPU = 192
# The longest engine.maxModelLen: a prompt or an output cannot be longer.
MAX_REQUEST_TOKENS = 1_048_576


class BenchmarkTarget(StrEnum):
    service = "service"
    gateway = "gateway"


class BenchmarkConfig(ConfigModel):
    """The opt-in in-cluster benchmark Job: N parallel `vllm bench serve` clients (InferenceMAX)."""

    enabled: bool = Field(
        default=False,
        description=(
            "Declare the in-cluster benchmark Job (one pod of parallel `vllm bench serve` clients on a CPU node)."
        ),
    )
    target: BenchmarkTarget | None = Field(
        default=None, description="`service` (the ClusterIP Service) or `gateway`; defaults to the routing mode."
    )
    gateway_address: str | None = Field(
        default=None, description="The Gateway's IP (output gatewayAddressCommand) when target is gateway."
    )

    machine_family: Annotated[str, Field(pattern=r"^[a-z][a-z0-9]+$")] = Field(
        default="c4",
        description=(
            "Compute Engine machine family of the client node (nodeSelector "
            "cloud.google.com/machine-family); the benchmark write-up ran its clients on a C4 node."
        ),
    )
    cpu: Annotated[int, Field(ge=2, le=MAX_CPU)] = Field(
        default=15, description="vCPU request: Autopilot sizes the C4 node from it (16 vCPU node by default)."
    )
    memory: Quantity = Field(
        default="48Gi",
        description="Fits a 16 vCPU / 60 GB C4 node, the client node of the write-up; each client process imports "
        "vLLM (its memory per process is not measured here).",
    )
    concurrency_per_client: Annotated[int, Field(ge=1, le=4000)] = Field(
        default=1000,
        description=(
            "Requests in flight per client process (`--max-concurrency`); the total concurrency is "
            "split over ceil(concurrency / this) clients. One client saturates a core at ~16K "
            "connections in the write-up, which used ~1K per client."
        ),
    )
    concurrency: Annotated[int | None, Field(ge=1, le=MAX_CPU * BENCH_CONCURRENCY_PER_VCPU)] = Field(
        default=None,
        description="Total concurrency; defaults to nodes x workload.concurrencyPerNode. At most what the largest "
        "client pod drives (cpu's most x 4,000 per vCPU).",
    )
    prompts_per_concurrency: Annotated[int, Field(ge=1, le=100)] = Field(
        default=10, description="`--num-prompts` = this x each client's concurrency (InferenceMAX: 10)."
    )
    dataset: Literal["random"] = Field(
        default="random", description="`--dataset-name`: random prompts (InferenceMAX; 0% prefix-cache hits)."
    )
    input_len: Annotated[int, Field(ge=1, le=MAX_REQUEST_TOKENS)] = Field(
        default=1024, description="`--random-input-len`, tokens per prompt (InferenceMAX: 1024)."
    )
    output_len: Annotated[int, Field(ge=1, le=MAX_REQUEST_TOKENS)] = Field(
        default=512, description="`--random-output-len`, tokens per response (InferenceMAX: 512)."
    )
    range_ratio: Annotated[float, Field(ge=0, lt=1)] = Field(
        default=0.5,
        description=(
            "`--random-range-ratio`: lengths vary uniformly by this fraction around input/outputLen "
            "(InferenceMAX: 0.5)."
        ),
    )
    ignore_eos: bool = Field(
        default=True, description="`--ignore-eos`: every response runs to outputLen tokens (InferenceMAX)."
    )
    ready_timeout_seconds: Annotated[int, Field(ge=60, le=86400)] = Field(
        default=3600,
        description=(
            "`--ready-check-timeout-sec`: how long each client waits for the endpoint to answer "
            "(default 1 h: node provisioning plus model load, as the benchmark write-up saw them)."
        ),
    )
    deadline_seconds: Annotated[int, Field(ge=600, le=86400)] = Field(
        default=14400,
        description="The Job's activeDeadlineSeconds: the whole run, readiness wait included, is stopped after this.",
    )

    @field_validator("gateway_address")
    @classmethod
    def _ip_address(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                ipaddress.ip_address(value)
            except ValueError:
                raise ValueError(f"{quote(value)} is not an IP address") from None
        return value
