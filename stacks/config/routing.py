"""How clients reach the engines: a ClusterIP Service or the GKE Inference Gateway."""

from __future__ import annotations

import ipaddress
from enum import StrEnum
from typing import Annotated

from pydantic import Field, field_validator, model_validator

from stacks.config.base import ConfigModel, Quantity
from stacks.config.grammars import DNS_1035_LABEL
from stacks.config.quoting import quote

PROXY_SUBNET_REFERENCE = (
    r"^(https://www\.googleapis\.com/compute/v1/)?(projects/[a-z][-a-z0-9]+/regions/[a-z]+-[a-z]+[0-9]+/subnetworks/)?"
    r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?$"
)
EPP_RELEASE_NAME_MAX = 40


class RoutingMode(StrEnum):
    clusterip = "clusterip"
    gateway = "gateway"


class GatewayClass(StrEnum):
    internal = "gke-l7-rilb"
    external = "gke-l7-regional-external-managed"


class GatewayConfig(ConfigModel):
    gateway_class: GatewayClass = GatewayClass.internal
    proxy_subnet_cidr: str = Field(
        default="10.129.0.0/23",
        description="Range of the proxy-only subnet: the one created, or that of existingProxySubnet. "
        "The firewall rule to the serving pods allows it.",
    )
    existing_proxy_subnet: Annotated[str | None, Field(pattern=PROXY_SUBNET_REFERENCE)] = Field(
        default=None,
        description="Name or self link of a REGIONAL_MANAGED_PROXY subnet that already exists in the "
        "cluster's VPC and region (one per VPC and region); then the stack declares none.",
    )
    epp_chart_version: Annotated[str, Field(pattern=r"^v1\.[3-5]\.[0-9]+$")] = Field(
        default="v1.4.0",
        description="inferencepool chart; the value names the stack sets are those of v1.3-v1.5 "
        "(v1.6 moved to llm-d/llm-d-router and renamed them).",
    )
    epp_cpu: Quantity = "10"
    epp_memory: Quantity = "16Gi"
    request_timeout_seconds: Annotated[int, Field(ge=30, le=86400)] = 300
    allow_external: bool = Field(
        default=False,
        description="Sets llm-serving/allow-external-gateway on the Gateway; without it policy LLM-NET-004 refuses "
        "the external class gke-l7-regional-external-managed.",
    )

    @field_validator("proxy_subnet_cidr")
    @classmethod
    def _proxy_subnet_size(cls, value: str) -> str:
        try:
            network = ipaddress.IPv4Network(value)
        except ValueError as error:
            raise ValueError(f"{quote(value)} is not an IPv4 CIDR block ({error})") from None
        if network.prefixlen > 26:
            raise ValueError(f"{quote(value)} is smaller than /26, the minimum proxy-only subnet")
        return value


class RoutingConfig(ConfigModel):
    mode: RoutingMode = RoutingMode.clusterip
    service_name: Annotated[str, Field(pattern=DNS_1035_LABEL)] = "qwen-serving"
    gateway: GatewayConfig = GatewayConfig()

    @field_validator("service_name")
    @classmethod
    def _not_vllm(cls, value: str) -> str:
        if value == "vllm":
            raise ValueError("a Service named 'vllm' injects VLLM_PORT into pods and crashes vLLM")
        return value

    @model_validator(mode="after")
    def _pool_name_fits_chart(self) -> RoutingConfig:
        if self.mode is RoutingMode.gateway and len(self.service_name) > EPP_RELEASE_NAME_MAX:
            raise ValueError(
                f"serviceName '{self.service_name}' names the InferencePool in gateway mode; the "
                f"inferencepool chart truncates it to {EPP_RELEASE_NAME_MAX} characters, use at most that many"
            )
        return self
