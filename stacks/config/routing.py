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
    """The GKE Inference Gateway (routing.mode gateway): Gateway class, proxy-only subnet and the endpoint picker."""

    gateway_class: GatewayClass = Field(
        default=GatewayClass.internal,
        description=(
            "`gke-l7-rilb` (internal, the default) or `gke-l7-regional-external-managed` (external; "
            "needs allowExternal)."
        ),
    )
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
        description="Version of the inferencepool Helm chart that installs the endpoint picker (recipe: v1.4.0); the "
        "value names the stack sets are those of v1.3-v1.5 (v1.6 moved to llm-d/llm-d-router and renamed them).",
    )
    epp_cpu: Quantity = Field(
        default="10",
        description=(
            "CPU of the endpoint picker (inferencepool chart inferenceExtension.resources). Recipe: "
            "10 (500m crashed at 8K connections)."
        ),
    )
    epp_memory: Quantity = Field(default="16Gi", description="Memory of the endpoint picker. Recipe: 16Gi.")
    request_timeout_seconds: Annotated[int, Field(ge=30, le=86400)] = Field(
        default=300,
        description=(
            "Backend timeout of the Gateway in seconds (GCPBackendPolicy timeoutSec; GKE rejects "
            "HTTPRoute timeouts), 30-86400. Default 300, the chart's."
        ),
    )
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
    """How clients reach the engines: `clusterip` (round robin, the recipe's) or `gateway` (GKE Inference Gateway)."""

    mode: RoutingMode = Field(
        default=RoutingMode.clusterip,
        description=(
            "`clusterip`: a ClusterIP Service, round robin (96.5% scaling efficiency at 12 nodes). "
            "`gateway`: the GKE Inference Gateway with KV-cache-aware routing (cost ~35% throughput "
            "on the recipe's uniform load). The presets set clusterip in dev and prod, gateway in "
            "staging."
        ),
    )
    service_name: Annotated[str, Field(pattern=DNS_1035_LABEL)] = Field(
        default="qwen-serving",
        description=(
            "Name of the serving Deployment and Service, and of the InferencePool in gateway mode (at "
            "most 40 characters there): an RFC 1035 label (a letter first); not `vllm`, which injects "
            "VLLM_PORT and crashes vLLM."
        ),
    )
    gateway: GatewayConfig = Field(
        default=GatewayConfig(), description="The Inference Gateway's settings (used in gateway mode)."
    )

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
