"""The typed stack configuration: one validated model for everything a stack can set.

Defaults reproduce the published 1.1M tok/s recipe (shared/RECIPE.md). Keys are camelCase in the
stack files (`capacity.sources`, `engine.maxModelLen`); every model forbids unknown keys.
"""

from __future__ import annotations

import ipaddress
import re
import zoneinfo
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

from components.hardware import B200_GPUS_PER_NODE
from stacks.config.grammars import (
    hf_repo_problem,
    image_problem,
    mount_path_problem,
    project_id_problem,
    quantity_problem,
    revision_problem,
)
from stacks.config.quoting import quote

# Feature minimums (RECIPE section 3; GKE docs "About GKE Inference Gateway": InferencePool v1 from
# 1.34.0-gke.1626000; "About custom compute classes": 1.30.3-gke.1451000).
B200_MIN_GKE_VERSION = "1.32.2-gke.1422000"
COMPUTE_CLASS_MIN_GKE_VERSION = "1.30.3-gke.1451000"
INFERENCE_POOL_MIN_GKE_VERSION = "1.34.0-gke.1626000"
# A minor-version floor: GKE resolves it to a patch its release channel offers when the cluster is
# created (the provider sends it as initialClusterVersion), so it never names a retired patch.
DEFAULT_MIN_MASTER_VERSION = "1.34"
FLEX_START_MAX_RUN_SECONDS = 7 * 24 * 3600
GKE_VERSION_PATTERN = re.compile(r"^([0-9]+)\.([0-9]+)\.([0-9]+)-gke\.([0-9]+)$")
GKE_MINOR_PATTERN = re.compile(r"^([0-9]+)\.([0-9]+)$")
DNS_LABEL = r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$"
PROXY_SUBNET_REFERENCE = (
    r"^(https://www\.googleapis\.com/compute/v1/)?(projects/[a-z][-a-z0-9]+/regions/[a-z]+-[a-z]+[0-9]+/subnetworks/)?"
    r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?$"
)
EPP_RELEASE_NAME_MAX = 40
EXTRA_ARGS_MAX = 64
EXTRA_VALUE_MAX = 1024


def _checked(problem: str, value: str) -> str:
    if problem:
        raise ValueError(f"{quote(value)} {problem}")
    return value


def _image(value: str) -> str:
    return _checked(image_problem(value), value)


def _quantity(value: str) -> str:
    return _checked(quantity_problem(value), value)


def _no_control_characters(value: str) -> str:
    if any(not char.isprintable() for char in value):
        raise ValueError(f"{quote(value)} contains control characters; allowed: printable text")
    if len(value) > EXTRA_VALUE_MAX:
        raise ValueError(f"is longer than {EXTRA_VALUE_MAX} characters")
    return value


Image = Annotated[str, AfterValidator(_image)]
Quantity = Annotated[str, AfterValidator(_quantity)]
MAX_NODES = 256
# One `vllm bench serve` process saturates one core at ~16K connections (RECIPE section 8); a
# quarter of that per vCPU keeps every client far from CPU-bound.
BENCH_CONCURRENCY_PER_VCPU = 4000


class Model(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        frozen=True,
        use_enum_values=False,
        # no coercion: `nodes: true` or `nodes: "12"` is not 12; no infinities or NaN
        strict=True,
        allow_inf_nan=False,
    )


class Environment(StrEnum):
    dev = "dev"
    staging = "staging"
    prod = "prod"


class ReleaseChannel(StrEnum):
    RAPID = "RAPID"
    REGULAR = "REGULAR"
    STABLE = "STABLE"


class RoutingMode(StrEnum):
    clusterip = "clusterip"
    gateway = "gateway"


class GatewayClass(StrEnum):
    internal = "gke-l7-rilb"
    external = "gke-l7-regional-external-managed"


class KvCacheDtype(StrEnum):
    auto = "auto"
    fp8 = "fp8"
    fp8_e4m3 = "fp8_e4m3"
    fp8_e5m2 = "fp8_e5m2"


class MambaCacheMode(StrEnum):
    none = "none"
    align = "align"
    all = "all"


class GpuDriverVersion(StrEnum):
    default = "default"
    latest = "latest"


def gke_version_key(version: str) -> tuple[int, ...]:
    match = GKE_VERSION_PATTERN.match(version)
    if not match:
        raise ValueError(f"{quote(version)} is not a GKE version like {B200_MIN_GKE_VERSION}")
    return tuple(int(part) for part in match.groups())


def satisfies_gke_minimum(floor: str, minimum: str) -> bool:
    """Whether every version a `minMasterVersion` floor can give the cluster is at least `minimum`.

    A full version compares patch by patch. A minor floor (`1.34`) resolves to a patch of that minor
    the channel offers at creation: it meets a minimum of an older minor, and of the same minor too,
    because a channel only offers a minor's patches from the one it was promoted with on (the
    minimums here are each feature's first patch, older than any patch a channel still offers).
    """
    minor = GKE_MINOR_PATTERN.match(floor)
    if minor:
        return tuple(int(part) for part in minor.groups()) >= gke_version_key(minimum)[:2]
    return gke_version_key(floor) >= gke_version_key(minimum)


# ---------------------------------------------------------------- cluster


class NetworkConfig(Model):
    """Custom-mode VPC with one subnet; pods and services on secondary ranges (VPC-native)."""

    subnet_cidr: str = "10.0.0.0/20"
    pods_cidr: str = "10.4.0.0/14"
    services_cidr: str = "10.8.0.0/20"

    @field_validator("subnet_cidr", "pods_cidr", "services_cidr")
    @classmethod
    def _private_cidr(cls, value: str) -> str:
        try:
            network = ipaddress.IPv4Network(value)
        except ValueError as error:
            raise ValueError(f"{quote(value)} is not an IPv4 CIDR block like 10.0.0.0/20 ({error})") from None
        if not network.is_private:
            raise ValueError(f"{quote(value)} is not a private (RFC 1918) range")
        return value

    @model_validator(mode="after")
    def _no_overlap(self) -> NetworkConfig:
        ranges = {
            "subnetCidr": self.subnet_cidr,
            "podsCidr": self.pods_cidr,
            "servicesCidr": self.services_cidr,
        }
        items = list(ranges.items())
        for index, (key, cidr) in enumerate(items):
            for other_key, other in items[index + 1 :]:
                if ipaddress.IPv4Network(cidr).overlaps(ipaddress.IPv4Network(other)):
                    raise ValueError(f"{key} {cidr} overlaps {other_key} {other}; the ranges must be disjoint")
        return self


class AuthorizedNetwork(Model):
    """A CIDR block allowed to reach the control plane's IP-based endpoints."""

    cidr_block: str
    display_name: Annotated[str, Field(pattern=r"^[\x20-\x7e]{1,64}$")]

    @field_validator("cidr_block")
    @classmethod
    def _ipv4_cidr(cls, value: str) -> str:
        try:
            ipaddress.IPv4Network(value)
        except ValueError as error:
            raise ValueError(f"{quote(value)} is not an IPv4 CIDR block like 203.0.113.0/24 ({error})") from None
        return value


class ClusterConfig(Model):
    name: Annotated[str, Field(pattern=r"^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$")] = "llm-serving"
    release_channel: ReleaseChannel = Field(
        default=ReleaseChannel.REGULAR,
        description="Presets: RAPID in dev (newest features first), REGULAR in staging and prod (in the SLA, "
        "and it offers 1.34, the minor every feature the stack uses needs).",
    )
    min_master_version: str = Field(
        default=DEFAULT_MIN_MASTER_VERSION,
        description="A minor floor like 1.34 (GKE picks a patch the channel offers) or a full GKE version.",
    )
    deletion_protection: bool | None = Field(
        default=None, description="Defaults to the environment preset: on in prod, off elsewhere."
    )
    namespace: Annotated[str, Field(pattern=DNS_LABEL)] = "llm-serving"
    network: NetworkConfig = NetworkConfig()
    private_nodes: bool = Field(
        default=True,
        description="Nodes without external IPs; Cloud NAT gives them egress to Hugging Face and registries.",
    )
    authorized_networks: Annotated[list[AuthorizedNetwork] | None, Field(max_length=50)] = Field(
        default=None,
        description="Control-plane authorized networks of the IP-based endpoints; null turns them off, [] allows "
        "no outside range. pulumi up reaches the API through the DNS-based endpoint (IAM), which they do not gate.",
    )

    @field_validator("min_master_version")
    @classmethod
    def _version_floor(cls, value: str) -> str:
        if not (GKE_MINOR_PATTERN.match(value) or GKE_VERSION_PATTERN.match(value)):
            raise ValueError(
                f"{quote(value)} is not a GKE version; allowed: a minor like {DEFAULT_MIN_MASTER_VERSION} "
                f"or a full version like {INFERENCE_POOL_MIN_GKE_VERSION}"
            )
        for minimum, feature in (
            (B200_MIN_GKE_VERSION, "B200 (A4) nodes"),
            (COMPUTE_CLASS_MIN_GKE_VERSION, "custom ComputeClasses"),
        ):
            if not satisfies_gke_minimum(value, minimum):
                raise ValueError(f"{quote(value)} is older than {minimum}, the first GKE version with {feature}")
        return value


# ---------------------------------------------------------------- capacity


class SpotSource(Model):
    type: Literal["spot"]


class FlexStartSource(Model):
    type: Literal["flexStart"]
    node_recycling_lead_time_seconds: Annotated[int, Field(ge=0, le=FLEX_START_MAX_RUN_SECONDS)] = 3600
    max_run_duration_seconds: Annotated[int, Field(ge=600, le=FLEX_START_MAX_RUN_SECONDS)] = FLEX_START_MAX_RUN_SECONDS

    @model_validator(mode="after")
    def _recycling_before_the_end(self) -> FlexStartSource:
        if self.node_recycling_lead_time_seconds >= self.max_run_duration_seconds:
            raise ValueError(
                f"nodeRecyclingLeadTimeSeconds {self.node_recycling_lead_time_seconds} must be shorter than "
                f"maxRunDurationSeconds {self.max_run_duration_seconds}: the replacement node is requested "
                "that long before the node's run ends"
            )
        return self


class ReservationSource(Model):
    type: Literal["reservation"]
    name: Annotated[str, Field(pattern=r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")]
    project: str | None = Field(default=None, description="Owner project of a shared reservation.")

    @field_validator("project")
    @classmethod
    def _project_id(cls, value: str | None) -> str | None:
        return None if value is None else _checked(project_id_problem(value), value)


CapacitySource = Annotated[SpotSource | FlexStartSource | ReservationSource, Field(discriminator="type")]


class CapacityConfig(Model):
    """A4 (8x B200) nodes; one serving pod per node. A4 has no on-demand capacity."""

    nodes: Annotated[int | None, Field(ge=1, le=MAX_NODES)] = Field(
        default=None, description="A4 node count; exclusive with `target` (the planner then picks it)."
    )
    sources: Annotated[list[CapacitySource], Field(min_length=1, max_length=8)] = [
        FlexStartSource(type="flexStart"),
        SpotSource(type="spot"),
    ]
    compute_class_name: Annotated[str, Field(pattern=DNS_LABEL)] = "b200-serving"
    gpu_driver_version: GpuDriverVersion = GpuDriverVersion.latest

    @field_validator("compute_class_name")
    @classmethod
    def _not_reserved(cls, value: str) -> str:
        if value.startswith(("gke", "autopilot")):
            raise ValueError(f"{quote(value)} starts with 'gke' or 'autopilot', which GKE reserves")
        return value

    @model_validator(mode="after")
    def _unique_sources(self) -> CapacityConfig:
        keys = [(source.type, getattr(source, "name", None)) for source in self.sources]
        if len(set(keys)) != len(keys):
            raise ValueError("sources lists the same capacity twice; each fallback step must differ")
        return self


# ---------------------------------------------------------------- weights


# alpine/git: git and git-lfs preinstalled (alpine-docker/git Dockerfile: `apk add git git-lfs`),
# published for linux/amd64 and linux/arm64 (C4A). The digest is the one a public project pins
# for this tag; confirm it with `docker buildx imagetools inspect alpine/git:v2.49.1`.
DOWNLOADER_IMAGE = "alpine/git:v2.49.1@sha256:c0280cf9572316299b08544065d3bf35db65043d5e3963982ec50647d2746e26"
COMMIT_ID = re.compile(r"^[0-9a-f]{40}$")
IMAGE_DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")


class DownloaderConfig(Model):
    """The one-off Job that copies the checkpoint from Hugging Face onto the scratch disk."""

    machine_family: Annotated[str, Field(pattern=r"^[a-z][a-z0-9]+$")] = "c4a"
    arch: Literal["arm64", "amd64"] = "arm64"
    image: Image = DOWNLOADER_IMAGE
    cpu: Quantity = "4"
    memory: Quantity = "16Gi"
    retries: Annotated[int, Field(ge=0, le=20)] = 5


class WeightsConfig(Model):
    model: str = "Qwen/Qwen3.5-27B-FP8"
    revision: str = Field(
        default="main",
        description="Branch, tag or commit; prod needs a 40-hex commit id "
        "(`git ls-remote https://huggingface.co/MODEL main`).",
    )
    size_gib: Annotated[int, Field(ge=4, le=65536)] = 100
    checkpoint_gib: Annotated[int | None, Field(ge=1, le=65536)] = Field(
        default=None,
        description="Size of the checkpoint; defaults to an estimate from the model name's parameter count and dtype.",
    )
    throughput_mibps: Annotated[int, Field(ge=400, le=1_200_000)] = 2400
    mount_path: str = "/models"
    protect: bool | None = Field(
        default=None,
        description="Keep the disk image and serving disks when Pulumi deletes them (deletionPolicy "
        "ABANDON); defaults to the environment preset.",
    )
    downloader: DownloaderConfig = DownloaderConfig()

    @field_validator("model")
    @classmethod
    def _model_id(cls, value: str) -> str:
        return _checked(hf_repo_problem(value), value)

    @field_validator("revision")
    @classmethod
    def _revision(cls, value: str) -> str:
        return _checked(revision_problem(value), value)

    @field_validator("mount_path")
    @classmethod
    def _mount_path(cls, value: str) -> str:
        return _checked(mount_path_problem(value), value)

    @property
    def pinned(self) -> bool:
        """Whether the revision is an immutable commit id rather than a branch or tag."""
        return bool(COMMIT_ID.match(self.revision))


# ---------------------------------------------------------------- engine


class SpeculativeConfig(Model):
    method: Literal["mtp"] = "mtp"
    num_speculative_tokens: Annotated[int, Field(ge=1, le=8)] = 1


ENGINE_IMAGE = "vllm/vllm-openai:v0.19.0"
# The linux/amd64 manifest of vllm/vllm-openai:v0.19.0 as a public project pins it (A4 nodes are
# x86-64); confirm with `docker buildx imagetools inspect vllm/vllm-openai:v0.19.0`.
ENGINE_IMAGE_DIGEST = "sha256:7a0f0fdd2771464b6976625c2b2d5dd46f566aa00fbc53eceab86ef50883da90"


class EngineConfig(Model):
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
    extra_args: Annotated[
        list[Annotated[str, AfterValidator(_no_control_characters)]], Field(max_length=EXTRA_ARGS_MAX)
    ] = Field(default=[], description="More `vllm serve` flags; none may repeat or contradict a typed key.")
    extra_env: Annotated[
        dict[
            Annotated[str, Field(pattern=r"^[A-Z_][A-Z0-9_]{0,127}$")],
            Annotated[str, AfterValidator(_no_control_characters)],
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
        return _checked(image_problem(value, tag_required=True, digest_allowed=False), value)

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


# ---------------------------------------------------------------- workload


class WorkloadConfig(Model):
    """The traffic the stack is sized for; policies and the cost sheet compare against it."""

    concurrency_per_node: Annotated[int, Field(ge=1, le=65536)] = 2000
    max_prompt_tokens: Annotated[int, Field(ge=1, le=1_048_576)] = 1536
    max_output_tokens: Annotated[int, Field(ge=1, le=1_048_576)] = 768


# ---------------------------------------------------------------- routing


class GatewayConfig(Model):
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


class RoutingConfig(Model):
    mode: RoutingMode = RoutingMode.clusterip
    service_name: Annotated[str, Field(pattern=DNS_LABEL)] = "qwen-serving"
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


# ---------------------------------------------------------------- pricing

# Prices in USD. Each default names where it comes from and when; "derived" and "estimate" mark
# figures that could not be verified at a price list from here (README "Capacity and cost").
PUBLISHED_SPOT_PER_NODE_HOUR = 32.61  # write-up (March 2026), RECIPE section 9: a4-highgpu-8g Spot VM
PUBLISHED_COMMITTED_1Y_PER_NODE_HOUR = 88.93  # write-up (March 2026), RECIPE section 9: 1-year commitment
# Derived, not verified: the 1-year price over (1 - 37%), the resource-based 1-year CUD rate of
# accelerator-optimized VMs; a reservation without a commitment is billed at this price.
DERIVED_ON_DEMAND_PER_NODE_HOUR = round(PUBLISHED_COMMITTED_1Y_PER_NODE_HOUR / (1 - 0.37), 2)
# Derived, not verified: 3-year resource-based CUD of 55% off the on-demand-equivalent price.
DERIVED_COMMITTED_3Y_PER_NODE_HOUR = round(DERIVED_ON_DEMAND_PER_NODE_HOUR * (1 - 0.55), 2)
# Flex-start (DWS): "discounted up to 53%" (RECIPE section 3; "About Flex-start VMs": A4 vCPUs,
# memory and GPUs "at a discounted price"); the full 53% off on-demand is taken, not verified.
DERIVED_FLEX_START_PER_NODE_HOUR = round(DERIVED_ON_DEMAND_PER_NODE_HOUR * (1 - 0.53), 2)


class ReservationBilling(StrEnum):
    """How the A4 nodes of a specific reservation are paid for."""

    on_demand = "onDemand"
    commit_1y = "commit1y"
    commit_3y = "commit3y"


class PricingConfig(Model):
    """USD prices the planner uses (capacity.json, plan.md, goal sizing against a budget)."""

    spot_per_node_hour: Annotated[float, Field(ge=0)] = PUBLISHED_SPOT_PER_NODE_HOUR
    flex_start_per_node_hour: Annotated[float, Field(ge=0)] = DERIVED_FLEX_START_PER_NODE_HOUR
    on_demand_per_node_hour: Annotated[float, Field(ge=0)] = DERIVED_ON_DEMAND_PER_NODE_HOUR
    committed_1y_per_node_hour: Annotated[float, Field(ge=0)] = PUBLISHED_COMMITTED_1Y_PER_NODE_HOUR
    committed_3y_per_node_hour: Annotated[float, Field(ge=0)] = DERIVED_COMMITTED_3Y_PER_NODE_HOUR
    reservation_billing: ReservationBilling = Field(
        default=ReservationBilling.commit_1y,
        description="The pricing of a reservation source used for goal sizing against a budget.",
    )
    # GKE pricing ("Autopilot mode", node-based billing of accelerator Pods): Compute Engine price
    # plus an Autopilot premium. The premium per SKU could not be verified here: 10% is an
    # estimate; set it from the GKE pricing page.
    autopilot_premium_fraction: Annotated[float, Field(ge=0, le=1)] = 0.10
    # Compute Engine disk pricing, Hyperdisk ML (us-central1): not verified here, estimates.
    hyperdisk_ml_per_gib_month: Annotated[float, Field(ge=0)] = 0.08
    hyperdisk_ml_per_mibps_month: Annotated[float, Field(ge=0)] = 0.12
    # Compute Engine pricing, custom image storage per GiB-month (the weights' disk image the serving
    # disks are made from): not verified here, an estimate.
    image_per_gib_month: Annotated[float, Field(ge=0)] = 0.05
    # GKE pricing, "Cluster management fee and free tier" (read 2026-11): $0.10 per cluster-hour;
    # the free tier gives $74.40 a month per billing account to one zonal or Autopilot cluster.
    cluster_fee_per_hour: Annotated[float, Field(ge=0)] = 0.10
    cluster_free_tier: bool = Field(
        default=False, description="Count the $74.40/month free-tier credit against this cluster's fee."
    )
    utilization: Annotated[float, Field(gt=0, le=1)] = Field(
        default=0.5, description="Average load as a fraction of full load, for $ per million tokens."
    )


# ---------------------------------------------------------------- goal sizing


class TargetConfig(Model):
    """Size the stack from a goal instead of `capacity.nodes`: exactly one goal, optionally a budget."""

    total_tokens_per_second: Annotated[float | None, Field(gt=0)] = None
    output_tokens_per_second: Annotated[float | None, Field(gt=0)] = None
    concurrent_requests: Annotated[int | None, Field(gt=0)] = None
    requests_per_second: Annotated[float | None, Field(gt=0)] = None
    budget_per_hour: Annotated[float | None, Field(gt=0)] = Field(
        default=None, description="USD per hour, all in (nodes, premium, disks, disk image, cluster fee)."
    )
    max_nodes: Annotated[int, Field(ge=1, le=256)] = 64

    @model_validator(mode="after")
    def _one_goal(self) -> TargetConfig:
        goals = [key for key, value in self.goals().items() if value is not None]
        if len(goals) != 1:
            raise ValueError(
                f"give exactly one goal of totalTokensPerSecond, outputTokensPerSecond, concurrentRequests, "
                f"requestsPerSecond (got {len(goals)}{': ' + ', '.join(goals) if goals else ''})"
            )
        return self

    def goals(self) -> dict[str, float | None]:
        return {
            "totalTokensPerSecond": self.total_tokens_per_second,
            "outputTokensPerSecond": self.output_tokens_per_second,
            "concurrentRequests": self.concurrent_requests,
            "requestsPerSecond": self.requests_per_second,
        }

    def goal(self) -> tuple[str, float]:
        return next((key, value) for key, value in self.goals().items() if value is not None)


# ---------------------------------------------------------------- benchmark


class BenchmarkTarget(StrEnum):
    service = "service"
    gateway = "gateway"


class BenchmarkConfig(Model):
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


# ---------------------------------------------------------------- operations

# Each scale-up is one more A4 node: Autopilot provisions it in ~5-6 min, then the model loads and
# CUDA graphs compile in ~10 min (RECIPE sections 2 and 7).
NODE_PROVISIONING_SECONDS = 360
MODEL_LOAD_SECONDS = 600
COLD_START_SECONDS = NODE_PROVISIONING_SECONDS + MODEL_LOAD_SECONDS
WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
CLOCK_TIME = r"^([01]\d|2[0-3]):[0-5]\d$"
# Kubernetes CronJob schedules are parsed by robfig/cron's standard parser: five fields, numbers,
# `*`, ranges, steps, lists, and month/weekday names, or one of the descriptors below. A generic
# cron library would also accept seconds, years, `L`, `W` and `#`, which the API server refuses.
CRON_DESCRIPTORS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
CRON_FIELDS: tuple[tuple[str, int, int, tuple[str, ...]], ...] = (
    ("minute", 0, 59, ()),
    ("hour", 0, 23, ()),
    ("day of month", 1, 31, ()),
    ("month", 1, 12, ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")),
    ("day of week", 0, 7, ("sun", "mon", "tue", "wed", "thu", "fri", "sat")),
)


def _cron_value(token: str, low: int, high: int, names: tuple[str, ...], field: str) -> int:
    if token.lower() in names:
        return names.index(token.lower()) + (low if field == "month" else 0)
    if not token.isdigit() or not low <= int(token) <= high:
        raise ValueError(f"'{token}' is not a {field} ({low}-{high}{', or a name' if names else ''})")
    return int(token)


def validate_cron(expression: str) -> str:
    """Check a CronJob schedule against the grammar the Kubernetes API server accepts."""
    if expression.startswith("@"):
        if expression not in CRON_DESCRIPTORS:
            raise ValueError(f"'{expression}' is not a cron descriptor; allowed: {', '.join(CRON_DESCRIPTORS)}")
        return expression
    if "TZ=" in expression:
        raise ValueError("set schedule.timeZone instead of CRON_TZ/TZ in the expression (Kubernetes refuses it)")
    fields = expression.split()
    if len(fields) != len(CRON_FIELDS):
        raise ValueError(
            f"'{expression}' has {len(fields)} fields; a cron schedule has 5 (minute hour day month weekday)"
        )
    for text, (field, low, high, names) in zip(fields, CRON_FIELDS, strict=True):
        for part in text.split(","):
            span, _, step = part.partition("/")
            if step and (not step.isdigit() or int(step) == 0):
                raise ValueError(f"'{part}': the step of the {field} field must be a positive number")
            if span in ("*", "?"):
                continue
            first, _, last = span.partition("-")
            start = _cron_value(first, low, high, names, field)
            if last and _cron_value(last, low, high, names, field) < start:
                raise ValueError(f"'{span}': the {field} range runs backwards")
    return expression


def enabled_when_configured(data: Any) -> Any:
    """A group that sets any key but `enabled` is on unless it says `enabled: false`."""
    if isinstance(data, dict) and "enabled" not in data and data:
        return {**data, "enabled": True}
    return data


class AutoscalingMetric(StrEnum):
    waiting_requests = "waitingRequests"
    kv_cache_usage = "kvCacheUsage"


class AutoscalingConfig(Model):
    """Horizontal Pod Autoscaler on a vLLM metric through the Custom Metrics Stackdriver Adapter."""

    enabled: bool = False
    min_replicas: Annotated[int, Field(ge=1, le=256)] = 1
    max_replicas: Annotated[int | None, Field(ge=1, le=256)] = Field(
        default=None, description="Defaults to capacity.nodes."
    )
    metric: AutoscalingMetric = AutoscalingMetric.waiting_requests
    target_waiting_requests_per_pod: Annotated[int, Field(ge=1, le=65536)] = Field(
        default=100, description="Waiting requests per pod (sum over its data-parallel engines)."
    )
    target_kv_cache_usage: Annotated[float, Field(gt=0.0, le=1.0)] = Field(
        default=0.85, description="Mean KV-cache usage of a pod's engines (1 = full)."
    )
    scale_up_period_seconds: Annotated[int, Field(ge=15, le=1800)] = Field(
        default=NODE_PROVISIONING_SECONDS, description="At most one pod (one A4 node) is added per period."
    )
    scale_down_stabilization_seconds: Annotated[int, Field(ge=0, le=3600)] = Field(
        default=2 * COLD_START_SECONDS,
        description="The highest recommendation of this window is kept before scaling down.",
    )
    scale_down_period_seconds: Annotated[int, Field(ge=15, le=3600)] = Field(
        default=600, description="At most one pod is removed per period."
    )

    @model_validator(mode="before")
    @classmethod
    def _on_when_configured(cls, data: Any) -> Any:
        return enabled_when_configured(data)

    @model_validator(mode="after")
    def _min_below_max(self) -> AutoscalingConfig:
        if self.max_replicas is not None and self.min_replicas > self.max_replicas:
            raise ValueError(f"minReplicas {self.min_replicas} is above maxReplicas {self.max_replicas}")
        return self


class BusinessHours(Model):
    """Serve from `start` to `end` on `days` (local time of schedule.timeZone); scale to zero outside."""

    days: Annotated[list[Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]], Field(min_length=1)] = [
        "mon",
        "tue",
        "wed",
        "thu",
        "fri",
    ]
    start: Annotated[str, Field(pattern=CLOCK_TIME)] = "08:00"
    end: Annotated[str, Field(pattern=CLOCK_TIME)] = "19:00"
    replicas: Annotated[int | None, Field(ge=1, le=256)] = Field(
        default=None, description="Pods at the start of the day; defaults to autoscaling.minReplicas or capacity.nodes."
    )

    @model_validator(mode="after")
    def _start_before_end(self) -> BusinessHours:
        if self.start >= self.end:
            raise ValueError(f"start {self.start} is not before end {self.end} (business hours within one day)")
        if len(set(self.days)) != len(self.days):
            raise ValueError("days lists a day twice")
        return self


class ScheduleEntry(Model):
    name: Annotated[str, Field(pattern=r"^[a-z]([-a-z0-9]{0,20}[a-z0-9])?$")]
    cron: str
    replicas: Annotated[int, Field(ge=0, le=256)]

    @field_validator("cron")
    @classmethod
    def _cron(cls, value: str) -> str:
        return validate_cron(value)


class ScheduleConfig(Model):
    """Scale the serving Deployment on a clock: business hours, or cron entries with replica counts."""

    enabled: bool = False
    time_zone: str = "UTC"
    business_hours: BusinessHours | None = None
    entries: Annotated[list[ScheduleEntry], Field(max_length=16)] = Field(
        default=[], description="When given, these replace businessHours (which a preset may set)."
    )

    @model_validator(mode="before")
    @classmethod
    def _on_when_configured(cls, data: Any) -> Any:
        return enabled_when_configured(data)

    @field_validator("time_zone")
    @classmethod
    def _iana_zone(cls, value: str) -> str:
        try:
            zoneinfo.ZoneInfo(value)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"'{value}' is not an IANA time zone like Europe/Amsterdam or America/New_York") from None
        return value

    @model_validator(mode="after")
    def _one_way(self) -> ScheduleConfig:
        if self.enabled and self.business_hours is None and not self.entries:
            raise ValueError("set businessHours or at least one entry")
        names = [entry.name for entry in self.entries]
        if len(set(names)) != len(names):
            raise ValueError("entries: two entries share a name")
        return self


class AlertsConfig(Model):
    """Cloud Monitoring alert policies; notifications go to an existing channel or a new email channel."""

    enabled: bool = True
    notification_channel: Annotated[
        str | None, Field(pattern=r"^projects/[a-z][a-z0-9-]{4,28}[a-z0-9]/notificationChannels/\d+$")
    ] = None
    email: Annotated[str | None, Field(pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$")] = None
    queue_waiting_threshold: Annotated[int, Field(ge=1)] = Field(
        default=200, description="Waiting requests (all pods) above which a growing queue alerts."
    )
    kv_cache_usage_threshold: Annotated[float, Field(gt=0.0, le=1.0)] = 0.9
    min_mtp_acceptance: Annotated[float, Field(gt=0.0, lt=1.0)] = Field(
        default=0.5, description="Recipe: ~0.85-0.9 accepted per drafted token with MTP-1."
    )
    pending_seconds: Annotated[int, Field(ge=60, le=7200)] = Field(
        default=2 * NODE_PROVISIONING_SECONDS, description="A pod Pending longer than this alerts (capacity)."
    )

    @model_validator(mode="after")
    def _one_channel(self) -> AlertsConfig:
        if self.notification_channel and self.email:
            raise ValueError("set notificationChannel or email, not both")
        return self


class MonitoringConfig(Model):
    dashboard: bool = True
    alerts: AlertsConfig = AlertsConfig()


# ---------------------------------------------------------------- the stack


class StackConfig(Model):
    environment: Environment
    project: str
    region: Annotated[str, Field(pattern=r"^[a-z]+-[a-z]+[0-9]+$")] = "us-central1"
    zones: Annotated[list[str], Field(min_length=1, max_length=4)] = ["us-central1-b"]
    cluster: ClusterConfig = ClusterConfig()
    capacity: CapacityConfig = CapacityConfig()
    weights: WeightsConfig = WeightsConfig()
    engine: EngineConfig = EngineConfig()
    workload: WorkloadConfig = WorkloadConfig()
    routing: RoutingConfig = RoutingConfig()
    pricing: PricingConfig = PricingConfig()
    target: TargetConfig | None = None
    benchmark: BenchmarkConfig = BenchmarkConfig()
    autoscaling: AutoscalingConfig = AutoscalingConfig()
    schedule: ScheduleConfig = ScheduleConfig()
    monitoring: MonitoringConfig = MonitoringConfig()

    @model_validator(mode="after")
    def _scaling_fits_capacity(self) -> StackConfig:
        if self.capacity.nodes is None and not (self.autoscaling.enabled and self.autoscaling.max_replicas is not None):
            return self  # the node count comes from `target`, resolved later by stacks.load.loader
        most = self.max_replicas
        for entry in self.schedule.entries:
            if entry.replicas > most:
                raise ValueError(
                    f"schedule.entries: '{entry.name}' asks for {entry.replicas} pods; "
                    f"at most {most} (the replica ceiling)"
                )
        hours = self.schedule.business_hours
        if hours is not None and hours.replicas is not None and hours.replicas > most:
            raise ValueError(f"schedule.businessHours.replicas {hours.replicas} is above the replica ceiling {most}")
        if self.autoscaling.enabled and self.autoscaling.min_replicas > most:
            raise ValueError(f"autoscaling.minReplicas {self.autoscaling.min_replicas} is above maxReplicas {most}")
        return self

    @field_validator("project")
    @classmethod
    def _project_id(cls, value: str) -> str:
        return _checked(project_id_problem(value), value)

    @model_validator(mode="after")
    def _zones_in_region(self) -> StackConfig:
        for zone in self.zones:
            if not re.fullmatch(rf"{re.escape(self.region)}-[a-z]", zone):
                raise ValueError(
                    f"zones: '{zone}' is not in region {self.region}; allowed: zones named {self.region}-<letter>"
                )
        if len(set(self.zones)) != len(self.zones):
            raise ValueError("zones: a zone is listed twice; list each zone once")
        return self

    @model_validator(mode="after")
    def _proxy_subnet_outside_cluster_ranges(self) -> StackConfig:
        if self.routing.mode is not RoutingMode.gateway:
            return self
        proxy = ipaddress.IPv4Network(self.routing.gateway.proxy_subnet_cidr)
        network = self.cluster.network
        for key, cidr in (
            ("subnetCidr", network.subnet_cidr),
            ("podsCidr", network.pods_cidr),
            ("servicesCidr", network.services_cidr),
        ):
            if proxy.overlaps(ipaddress.IPv4Network(cidr)):
                raise ValueError(
                    f"routing.gateway.proxySubnetCidr {proxy} overlaps cluster.network.{key} {cidr}; "
                    "the proxy-only subnet needs its own range in the VPC"
                )
        return self

    @model_validator(mode="after")
    def _gateway_needs_inference_pool_crd(self) -> StackConfig:
        if self.routing.mode is RoutingMode.gateway and not satisfies_gke_minimum(
            self.cluster.min_master_version, INFERENCE_POOL_MIN_GKE_VERSION
        ):
            raise ValueError(
                "cluster.minMasterVersion: routing.mode gateway needs GKE "
                f">= {INFERENCE_POOL_MIN_GKE_VERSION} (InferencePool v1 CRD)"
            )
        return self

    @model_validator(mode="after")
    def _prod_pins_what_it_runs(self) -> StackConfig:
        if self.environment is not Environment.prod:
            return self
        if not self.weights.pinned:
            raise ValueError(
                f"weights.revision: '{self.weights.revision}' can move; prod needs an immutable 40-hex commit id "
                f"(git ls-remote https://huggingface.co/{self.weights.model} main)"
            )
        if self.engine.image_digest is None:
            raise ValueError(
                "engine.imageDigest: prod pins the engine image by digest; "
                f"allowed: sha256:<64 hex> of {self.engine.image}"
            )
        if not IMAGE_DIGEST.search(self.weights.downloader.image):
            raise ValueError(
                "weights.downloader.image: prod pins the downloader image by digest; allowed: NAME:TAG@sha256:<64 hex>"
            )
        return self

    @model_validator(mode="after")
    def _nodes_or_target(self) -> StackConfig:
        if self.capacity.nodes is not None and self.target is not None:
            raise ValueError(
                "capacity.nodes and target are mutually exclusive: give a node count or a goal to size from, not both"
            )
        if self.capacity.nodes is None and self.target is None:
            raise ValueError("capacity.nodes: required key is missing; give capacity.nodes or a target to size from")
        return self

    @model_validator(mode="after")
    def _benchmark_endpoint(self) -> StackConfig:
        benchmark = self.benchmark
        if not benchmark.enabled:
            return self
        if self.benchmark_target is BenchmarkTarget.service and self.routing.mode is RoutingMode.gateway:
            raise ValueError(
                "benchmark.target: 'service' needs routing.mode clusterip (gateway mode declares no ClusterIP "
                "Service); allowed here: gateway"
            )
        if self.benchmark_target is BenchmarkTarget.gateway:
            if self.routing.mode is not RoutingMode.gateway:
                raise ValueError("benchmark.target: 'gateway' needs routing.mode gateway; allowed here: service")
            if benchmark.gateway_address is None:
                raise ValueError(
                    "benchmark.gatewayAddress: required when the benchmark targets the Gateway; after the first "
                    "`pulumi up` read it with the gatewayAddressCommand output"
                )
        return self

    @property
    def nodes(self) -> int:
        """The A4 node count; `stacks.load.loader` resolves a `target` to it before any resource is declared."""
        if self.capacity.nodes is None:
            raise RuntimeError("capacity.nodes is unresolved: load the config through stacks.loader.validate")
        return self.capacity.nodes

    @property
    def benchmark_target(self) -> BenchmarkTarget:
        if self.benchmark.target is not None:
            return self.benchmark.target
        return BenchmarkTarget.gateway if self.routing.mode is RoutingMode.gateway else BenchmarkTarget.service

    @property
    def protected(self) -> bool:
        """Deletion protection for the cluster (weights may override it separately)."""
        if self.cluster.deletion_protection is not None:
            return self.cluster.deletion_protection
        return self.environment is Environment.prod

    @property
    def weights_protected(self) -> bool:
        if self.weights.protect is not None:
            return self.weights.protect
        return self.environment is Environment.prod

    @property
    def served_model_name(self) -> str:
        return self.engine.served_model_name or self.weights.model

    @property
    def max_replicas(self) -> int:
        """The replica ceiling: autoscaling.maxReplicas, else the capacity plan's node count."""
        if self.autoscaling.enabled and self.autoscaling.max_replicas is not None:
            return self.autoscaling.max_replicas
        return self.nodes

    @property
    def initial_replicas(self) -> int:
        """The Deployment's replicas at creation (afterwards the autoscaler or the schedule owns them)."""
        return self.autoscaling.min_replicas if self.autoscaling.enabled else self.nodes

    @property
    def replicas_managed_elsewhere(self) -> bool:
        return self.autoscaling.enabled or self.schedule.enabled


def dump_camel(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(mode="json", by_alias=True)
