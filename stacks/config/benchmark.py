"""The opt-in in-cluster benchmark Job."""

from __future__ import annotations

import ipaddress
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import Field, field_validator

from stacks.config.base import ConfigModel, Quantity
from stacks.config.quoting import quote

# One `vllm bench serve` process saturates one core at ~16K connections (RECIPE section 8); a
# quarter of that per vCPU keeps every client far from CPU-bound.
BENCH_CONCURRENCY_PER_VCPU = 4000


class BenchmarkTarget(StrEnum):
    service = "service"
    gateway = "gateway"


class BenchmarkConfig(ConfigModel):
    """The opt-in in-cluster benchmark Job: N parallel `vllm bench serve` clients (InferenceMAX)."""

    enabled: bool = False
    target: BenchmarkTarget | None = Field(
        default=None, description="Defaults to the routing mode: the ClusterIP Service or the Gateway."
    )
    gateway_address: str | None = Field(
        default=None, description="The Gateway's IP (output gatewayAddressCommand) when target is gateway."
    )

    machine_family: Annotated[str, Field(pattern=r"^[a-z][a-z0-9]+$")] = "c4"
    cpu: Annotated[int, Field(ge=2, le=192)] = Field(
        default=15, description="vCPU request: Autopilot sizes the C4 node from it (16 vCPU node by default)."
    )
    memory: Quantity = Field(
        default="48Gi", description="Fits a 16 vCPU / 60 GB C4 node; each client process imports vLLM (~1-1.5 GB)."
    )
    concurrency_per_client: Annotated[int, Field(ge=1, le=4000)] = 1000
    concurrency: Annotated[int | None, Field(ge=1)] = Field(
        default=None, description="Total concurrency; defaults to nodes x workload.concurrencyPerNode."
    )
    prompts_per_concurrency: Annotated[int, Field(ge=1, le=100)] = 10
    dataset: Literal["random"] = "random"
    input_len: Annotated[int, Field(ge=1)] = 1024
    output_len: Annotated[int, Field(ge=1)] = 512
    range_ratio: Annotated[float, Field(ge=0, lt=1)] = 0.5
    ignore_eos: bool = True
    ready_timeout_seconds: Annotated[int, Field(ge=60, le=86400)] = 3600
    deadline_seconds: Annotated[int, Field(ge=600, le=86400)] = 14400

    @field_validator("gateway_address")
    @classmethod
    def _ip_address(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                ipaddress.ip_address(value)
            except ValueError:
                raise ValueError(f"{quote(value)} is not an IP address") from None
        return value
