"""How clients reach the engines: a ClusterIP Service or the GKE Inference Gateway."""

from __future__ import annotations

from decimal import Decimal
from enum import StrEnum
from typing import Annotated, Any

from pydantic import Field, field_validator, model_validator

from common.grammars import DNS_1035_LABEL, DNS_1123_SUBDOMAIN, DNS_SUBDOMAIN_MAX, HOSTNAME
from common.quantities import quantity_value
from components.endpoint_picker import EPP_IMAGE, RELEASE_NAME_MAX, ROUTER_RELEASE
from policies.vpc_ranges import ALLOWED_RANGES_TEXT, is_vpc_range
from stacks.config.base import ConfigModel, Image, Quantity, SwitchedGroup
from stacks.config.quoting import ipv4_network, quote

PROXY_SUBNET_REFERENCE = (
    r"^(https://www\.googleapis\.com/compute/v1/)?(projects/[a-z][-a-z0-9]+/regions/[a-z]+-[a-z]+[0-9]+/subnetworks/)?"
    r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?$"
)


# C4 machine shapes, memory per vCPU: c4-highcpu 2, c4-standard 3.75, c4-highmem 7.75 (Compute Engine
# "General-purpose machine family": C4 machine types, where GB means GiB). The picker's Performance-class
# pod gets a C4 node of its own, so its CPU:memory must fall in a shape's range. Autopilot's own rows for
# Performance on C4 ("Resource requests in Autopilot") could not be read here: unverified beyond the shapes.
C4_MIN_GIB_PER_CPU = Decimal(2)
C4_MAX_GIB_PER_CPU = Decimal("7.75")
GIB = Decimal(2**30)

# The picker of gateway-api-inference-extension's inferencepool chart (registry.k8s.io/...), by its repository path.
GIE_PICKER_REPOSITORY = "gateway-api-inference-extension/epp"


class RoutingMode(StrEnum):
    clusterip = "clusterip"
    gateway = "gateway"


class GatewayClass(StrEnum):
    internal = "gke-l7-rilb"
    external = "gke-l7-regional-external-managed"


class GatewayTlsConfig(SwitchedGroup):
    """HTTPS on the Gateway: its one listener becomes HTTPS on 443 for `hostname`, with one certificate."""

    enabled: bool = Field(default=False, description="On as soon as the group sets another key; off: plain HTTP on 80.")
    hostname: Annotated[str | None, Field(pattern=HOSTNAME, max_length=DNS_SUBDOMAIN_MAX)] = Field(
        default=None, description="The DNS name clients call, which the certificate holds (the listener's hostname)."
    )
    kubernetes_certificate: Annotated[str | None, Field(pattern=DNS_1123_SUBDOMAIN, max_length=DNS_SUBDOMAIN_MAX)] = (
        Field(default=None, description="A kubernetes.io/tls Secret in the serving namespace (tls.certificateRefs).")
    )
    pre_shared_certificate: Annotated[str | None, Field(pattern=DNS_1035_LABEL)] = Field(
        default=None, description="A regional self-managed Compute Engine SSL certificate in the stack's region."
    )

    @model_validator(mode="after")
    def _a_name_and_one_certificate(self) -> GatewayTlsConfig:
        certificates = (self.kubernetes_certificate, self.pre_shared_certificate)
        if self.enabled and (self.hostname is None or certificates.count(None) != 1):
            raise ValueError("needs a hostname and exactly one of kubernetesCertificate and preSharedCertificate")
        return self


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
        description="Range of the proxy-only subnet: the one created, or that of existingProxySubnet (then "
        "required: the default is the created subnet's range). The firewall rules to the serving pods and the picker "
        "allow it.",
    )
    existing_proxy_subnet: Annotated[str | None, Field(pattern=PROXY_SUBNET_REFERENCE)] = Field(
        default=None,
        description="Name or self link of a REGIONAL_MANAGED_PROXY subnet that already exists in the "
        "cluster's VPC and region (one per VPC and region); then the stack declares none.",
    )
    endpoint_per_rank: bool = Field(
        default=True,
        description="One `vllm serve` per data-parallel rank, each in its own container on engine.port + rank and "
        "an InferencePool target port the picker scores on its own. false: one server for all ranks on engine.port, "
        "the layout the write-up measured, whose pool has one endpoint per pod (the picker sees one engine in "
        "engine.dataParallelSize): for a cluster whose InferencePool takes one target port, or to compare.",
    )
    epp_image: Image = Field(
        default=EPP_IMAGE,
        description="Endpoint Picker image, by tag and digest (prod needs the digest). The stack declares the "
        f"picker's objects as llm-d-router-gateway {ROUTER_RELEASE} renders them (components/endpoint_picker.py); "
        "another release may need other flags. A gateway-api-inference-extension picker "
        "(.../gateway-api-inference-extension/epp, the one the planner's gateway overhead was measured with) is "
        "refused: it cannot read that config.",
    )
    epp_replicas: Annotated[int, Field(ge=1, le=3)] = Field(
        default=2,
        description="Endpoint Picker pods, each on a C4 node of its own. One is active; from 2 on the others are "
        "leader-election standbys that take over when the leader's lease lapses. A standby shares no load.",
    )
    epp_cpu: Quantity = Field(
        default="10",
        description="CPU request of each picker pod (10: what held at 8K connections in the write-up). No CPU limit is "
        "set, as in llm-d-router's chart: a quota would throttle the one active picker.",
    )
    epp_memory: Quantity = Field(
        default="24Gi",
        description="Memory request and limit of each picker pod: 2 to 7.75 GiB per eppCpu, the range of C4's "
        "machine shapes (c4-highcpu 2 GB per vCPU to c4-highmem 7.75), so Autopilot's Performance class can place it "
        "(10 CPU with 16Gi was below c4-highcpu's ratio).",
    )
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
    tls: GatewayTlsConfig = Field(
        default=GatewayTlsConfig(),
        description="HTTPS on the Gateway (policy LLM-NET-010 requires it on the external class).",
    )
    address: Annotated[str | None, Field(pattern=DNS_1035_LABEL)] = Field(
        default=None, description="A static regional address reserved for the Gateway (NamedAddress); unset: ephemeral."
    )

    @model_validator(mode="before")
    @classmethod
    def _chart_version_removed(cls, data: Any) -> Any:
        if isinstance(data, dict) and "eppChartVersion" in data:
            raise ValueError(
                "eppChartVersion: removed; the Endpoint Picker is no longer a Helm release but plain objects from "
                f"llm-d-router-gateway {ROUTER_RELEASE}'s templates; pin its image with eppImage"
            )
        return data

    @field_validator("epp_image")
    @classmethod
    def _picker_reads_the_config_the_stack_writes(cls, value: str) -> str:
        # gateway-api-inference-extension's picker (the write-up's epp:v1.4.0, v1.5.0) decodes only
        # EndpointPickerConfig inference.networking.x-k8s.io/v1alpha1, strictly (GIE@v1.4.0
        # pkg/epp/config/loader/configloader.go, apix/config/v1alpha1/zz_generated.register.go); the stack
        # writes llm-d-router-gateway's llm-d.ai/v1alpha1 (routerlib _config.yaml), so that picker would not start.
        repository = value.partition("@")[0]
        untagged, colon, tag = repository.rpartition(":")
        if colon and "/" not in tag:  # a tag, not a registry's port
            repository = untagged
        if repository == GIE_PICKER_REPOSITORY or repository.endswith(f"/{GIE_PICKER_REPOSITORY}"):
            raise ValueError(
                f"{quote(value, 80)} is the gateway-api-inference-extension picker, which reads an "
                "EndpointPickerConfig of inference.networking.x-k8s.io/v1alpha1; the stack declares "
                f"llm-d-router-gateway {ROUTER_RELEASE}'s objects (llm-d.ai/v1alpha1), so it would not start; "
                f"allowed: an llm-d-router picker such as {EPP_IMAGE.partition('@')[0]}"
            )
        return value

    @model_validator(mode="after")
    def _picker_fits_a_c4_shape(self) -> GatewayConfig:
        cpu, memory = quantity_value(self.epp_cpu), quantity_value(self.epp_memory)
        if cpu is None or memory is None:
            return self
        per_cpu = memory / GIB / cpu
        if not C4_MIN_GIB_PER_CPU <= per_cpu <= C4_MAX_GIB_PER_CPU:
            raise ValueError(
                f"eppMemory {self.epp_memory} for eppCpu {self.epp_cpu} is {per_cpu:.2f} GiB per CPU; the picker runs "
                f"on a C4 node of Autopilot's Performance class, whose shapes hold {C4_MIN_GIB_PER_CPU} to "
                f"{C4_MAX_GIB_PER_CPU} GiB per vCPU: allowed eppMemory {(C4_MIN_GIB_PER_CPU * cpu).normalize():f}Gi to "
                f"{(C4_MAX_GIB_PER_CPU * cpu).normalize():f}Gi"
            )
        return self

    @field_validator("proxy_subnet_cidr")
    @classmethod
    def _proxy_subnet_size(cls, value: str) -> str:
        network = ipv4_network(value)
        if network.prefixlen > 26:
            raise ValueError(f"{quote(value)} is smaller than /26, the minimum proxy-only subnet")
        return value


def private_cidr(value: str) -> str:
    network = ipv4_network(value, "10.0.0.0/20")
    if not is_vpc_range(str(network)):
        raise ValueError(
            f"{quote(value)} is not an internal VPC range; an internal load balancer serves the VPC only; "
            f"allowed: {ALLOWED_RANGES_TEXT}"
        )
    return value


class RoutingConfig(ConfigModel):
    """How clients reach the engines: `clusterip` (round robin, the recipe's) or `gateway` (GKE Inference Gateway)."""

    mode: RoutingMode = Field(
        default=RoutingMode.clusterip,
        description=(
            "`clusterip`: a ClusterIP Service, round robin (96.5% scaling efficiency at 12 nodes in the write-up). "
            "`gateway`: the GKE Inference Gateway with KV-cache-aware routing (the write-up's Gateway, with another "
            "picker and one endpoint per pod, cost ~35% throughput on its uniform load; this stack's picker and "
            "layout are not measured). The presets set clusterip in dev and prod, gateway in staging."
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
    internal_load_balancer: bool = Field(
        default=False,
        description="clusterip mode: also a Service of type LoadBalancer with GKE's internal annotation (an "
        "internal passthrough Network Load Balancer on engine.port), so applications in the VPC reach the "
        "engines; its address is the stack output internalAddress.",
    )
    internal_load_balancer_source_ranges: Annotated[list[str], Field(min_length=1)] | None = Field(
        default=None,
        description="Private IPv4 ranges of the internal load balancer's clients: its loadBalancerSourceRanges "
        "(GKE's firewall rule) and the serving NetworkPolicy. Defaults to cluster.network.subnetCidr; required with "
        "cluster.existing (that default is not the existing cluster's VPC).",
    )

    @model_validator(mode="after")
    def _reused_subnet_has_its_range(self) -> RoutingConfig:
        # The firewall rules admit proxySubnetCidr: left at the default of the subnet the stack would
        # create, they would keep admitting that range (deleted, or never this VPC's proxies) and not
        # the named subnet's, and the Gateway's traffic would stop at the firewall.
        gateway = self.gateway
        named = gateway.existing_proxy_subnet
        given = "proxy_subnet_cidr" in gateway.model_fields_set
        if self.mode is RoutingMode.gateway and named is not None and not given:
            raise ValueError(
                f"gateway.existingProxySubnet {quote(named)} needs gateway.proxySubnetCidr, that subnet's range "
                "(`gcloud compute networks subnets describe NAME --region REGION --format 'value(ipCidrRange)'`): "
                "the firewall rules admit it; the default is the range of the subnet the stack creates"
            )
        return self

    @field_validator("internal_load_balancer_source_ranges")
    @classmethod
    def _source_ranges(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return value
        for cidr in value:
            private_cidr(cidr)
        if len(set(value)) != len(value):
            raise ValueError("a range is listed twice; list each range once")
        return value

    @model_validator(mode="after")
    def _internal_load_balancer_in_clusterip_mode(self) -> RoutingConfig:
        if self.internal_load_balancer and self.mode is not RoutingMode.clusterip:
            raise ValueError(
                "internalLoadBalancer: only in clusterip mode; in gateway mode the internal Gateway class "
                f"{GatewayClass.internal.value} already serves the VPC"
            )
        if self.internal_load_balancer_source_ranges is not None and not self.internal_load_balancer:
            raise ValueError(
                "internalLoadBalancerSourceRanges: set without internalLoadBalancer: true, where it has no effect"
            )
        return self

    @field_validator("service_name")
    @classmethod
    def _not_vllm(cls, value: str) -> str:
        if value == "vllm":
            raise ValueError("a Service named 'vllm' injects VLLM_PORT into pods and crashes vLLM")
        return value

    @model_validator(mode="after")
    def _pool_name_fits_chart(self) -> RoutingConfig:
        if self.mode is RoutingMode.gateway and len(self.service_name) > RELEASE_NAME_MAX:
            raise ValueError(
                f"serviceName '{self.service_name}' names the InferencePool and its Endpoint Picker in gateway mode; "
                f"llm-d-router-gateway's templates cut it to {RELEASE_NAME_MAX} characters, use at most that many"
            )
        return self
