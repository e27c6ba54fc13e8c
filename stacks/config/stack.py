"""The whole stack's config: the groups, the environment and the checks that span groups."""

from __future__ import annotations

import ipaddress
import math
import re
from enum import StrEnum
from typing import Annotated

from pydantic import AfterValidator, Field, field_validator, model_validator

from common.cron import WEEKDAYS
from common.gcp_regions import known_region
from common.gke_versions import (
    B200_MIN_GKE_VERSION,
    CAPACITY_BUFFER_MIN_GKE_VERSION,
    COMPUTE_CLASS_MIN_GKE_VERSION,
    INFERENCE_POOL_MIN_GKE_VERSION,
    gke_version_key,
    satisfies_gke_minimum,
)
from common.grammars import project_id_problem
from stacks.config.base import ConfigModel, checked
from stacks.config.benchmark import BenchmarkConfig, BenchmarkTarget
from stacks.config.capacity import CapacityConfig, TargetConfig
from stacks.config.cluster import ClusterConfig
from stacks.config.engine import EngineConfig, WorkloadConfig
from stacks.config.operations import AutoscalingConfig, MonitoringConfig, ScheduleConfig
from stacks.config.pricing import PricingConfig
from stacks.config.profiles import DEFAULT_PROFILE, ProfileName, ServingProfile, mtp_problem, profile_of
from stacks.config.quoting import quote
from stacks.config.routing import RoutingConfig, RoutingMode
from stacks.config.startup import StartupConfig
from stacks.config.time_to_serve import (
    HYPERDISK_ML_MAX_MIBPS,
    HYPERDISK_ML_MIN_MIBPS,
    TimeToServeConfig,
    WarmCapacityConfig,
)
from stacks.config.weights import IMAGE_DIGEST, WeightsConfig

# GCP location names (Compute Engine "Regions and zones", read 2026-11): a region is
# <geography>-<direction><number> (us-central1, europe-west4, northamerica-northeast2, me-central2) with
# one of these geographies and directions; a zone is the region and a letter, and the zone letters in
# use run a to f (us-central1-a/b/c/f, us-east1-b/c/d, europe-west1-b/c/d, all others a/b/c). A region
# that matches the grammar may still not exist: `gcloud compute regions list` is the authority.
GCP_REGION = (
    r"^(africa|asia|australia|europe|me|northamerica|southamerica|us)"
    r"-(central|east|north|northeast|northwest|south|southeast|southwest|west)[1-9][0-9]?$"
)
ZONE_LETTERS = "abcdef"
CRON_WEEKDAY = {day: str((index + 1) % 7) for index, day in enumerate(WEEKDAYS)}


class Environment(StrEnum):
    """The environment preset: what a stack gets before its own settings (stacks/config/presets.py)."""

    dev = "dev"
    staging = "staging"
    prod = "prod"


class StackConfig(ConfigModel):
    """A whole stack: its environment preset, project and location, and every config group."""

    environment: Annotated[
        Environment, Field(description="`dev`, `staging` or `prod`: the preset laid under the stack file's own keys.")
    ]
    profile: ProfileName = Field(
        default=DEFAULT_PROFILE,
        description="The serving profile (stacks/config/profiles.py): its checkpoint, disk size, engine flags, "
        "vLLM release and workload become the defaults of weights, engine and workload; the stack's own keys win.",
    )
    project: Annotated[
        str, Field(description="GCP project id: 6-30 lower-case letters, digits and hyphens, a letter first.")
    ]
    region: Annotated[str, Field(pattern=GCP_REGION), AfterValidator(known_region)] = Field(
        default="us-central1",
        description="Region of the cluster, network and gateway: one of the Google Cloud regions (the list of "
        "2026-11 in common/gcp_regions.py; e.g. us-central1); A4 is only offered in some regions (policy "
        "LLM-GPU-004, an advisory).",
    )
    zones: Annotated[list[str], Field(min_length=1, max_length=4)] = Field(
        default=["us-central1-b"],
        description=(
            "Zones of the weight disks and the A4 nodes, 1-4, each in the region "
            "(`<region>-<letter a-f>`), each once. Check A4 zones with `gcloud compute accelerator-types "
            "list --filter=name=nvidia-b200`."
        ),
    )
    cluster: ClusterConfig = Field(default=ClusterConfig(), description="The Autopilot cluster and its network.")
    capacity: CapacityConfig = Field(default=CapacityConfig(), description="Where the A4 nodes come from and how many.")
    weights: WeightsConfig = Field(default=WeightsConfig(), description="The checkpoint and the disks that hold it.")
    engine: EngineConfig = Field(
        default=EngineConfig(), description="The vLLM engine; the defaults are the published recipe."
    )
    workload: WorkloadConfig = Field(default=WorkloadConfig(), description="The traffic the stack is sized for.")
    routing: RoutingConfig = Field(default=RoutingConfig(), description="How clients reach the engines.")
    pricing: PricingConfig = Field(default=PricingConfig(), description="The planner's prices.")
    target: TargetConfig | None = Field(
        default=None, description="A goal to size from instead of capacity.nodes (exclusive with it)."
    )
    benchmark: BenchmarkConfig = Field(default=BenchmarkConfig(), description="The opt-in in-cluster benchmark Job.")
    autoscaling: AutoscalingConfig = Field(
        default=AutoscalingConfig(), description="Queue-depth autoscaling of the serving pods."
    )
    schedule: ScheduleConfig = Field(default=ScheduleConfig(), description="Scaling on a clock.")
    monitoring: MonitoringConfig = Field(default=MonitoringConfig(), description="Dashboard and alerts.")
    time_to_serve: TimeToServeConfig = Field(
        default=TimeToServeConfig(), description="How long a new replica takes to serve: assumptions and bounds."
    )
    warm_capacity: WarmCapacityConfig = Field(
        default=WarmCapacityConfig(), description="Held spare A4 nodes (a GKE CapacityBuffer)."
    )
    startup: StartupConfig = Field(
        default=StartupConfig(), description="Faster pod start-up: the image mirror and the compile cache."
    )

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

    @model_validator(mode="after")
    def _unique_sources(self) -> StackConfig:
        keys = self.capacity.source_keys(self.project)
        for index, key in enumerate(keys):
            if key in keys[:index]:
                kind, name, owner = key
                what = f"{kind} {name} of project {owner}" if name else kind
                other = f" (a {kind} of the same name in another project is a different capacity)" if name else ""
                raise ValueError(
                    f"capacity.sources[{index}]: {what} is listed twice; each fallback step must differ{other}"
                )
        return self

    @model_validator(mode="after")
    def _mtp_loads(self) -> StackConfig:
        problem = mtp_problem(self.weights.model, self.engine.speculative, self.engine.image)
        if problem:
            raise ValueError(f"engine.speculative: {problem}")
        return self

    @field_validator("project")
    @classmethod
    def _project_id(cls, value: str) -> str:
        return checked(project_id_problem(value), value)

    @model_validator(mode="after")
    def _zones_in_region(self) -> StackConfig:
        for zone in self.zones:
            if not re.fullmatch(rf"{re.escape(self.region)}-[a-z]", zone):
                raise ValueError(
                    f"zones: {quote(zone, 40)} is not in region {self.region}; allowed: zones named "
                    f"{self.region}-<letter a-f>"
                )
            if zone[-1] not in ZONE_LETTERS:
                raise ValueError(
                    f"zones: {quote(zone, 40)} is not a GCP zone name; allowed: {self.region}-a to {self.region}-f "
                    "(the zone letters GCP uses; list a region's zones with `gcloud compute zones list`)"
                )
        if len(set(self.zones)) != len(self.zones):
            raise ValueError("zones: a zone is listed twice; list each zone once")
        return self

    @model_validator(mode="after")
    def _proxy_subnet_outside_cluster_ranges(self) -> StackConfig:
        # An existing cluster's ranges are its own, not these (GCP refuses an overlapping subnet at `up`).
        if self.routing.mode is not RoutingMode.gateway or self.cluster.existing:
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
        # An existing cluster's version is checked on its look-up instead.
        if (
            self.routing.mode is RoutingMode.gateway
            and not self.cluster.existing
            and self.cluster.min_master_version is not None
            and not satisfies_gke_minimum(self.cluster.min_master_version, INFERENCE_POOL_MIN_GKE_VERSION)
        ):
            raise ValueError(
                "cluster.minMasterVersion: routing.mode gateway needs GKE "
                f">= {INFERENCE_POOL_MIN_GKE_VERSION} (InferencePool v1 CRD)"
            )
        if (
            self.warm_capacity.enabled
            and not self.cluster.existing
            and (
                # the channel's default version may be older than active CapacityBuffers: pin one that is not
                self.cluster.min_master_version is None
                or not satisfies_gke_minimum(self.cluster.min_master_version, CAPACITY_BUFFER_MIN_GKE_VERSION)
            )
        ):
            raise ValueError(
                "cluster.minMasterVersion: warmCapacity needs GKE "
                f">= {CAPACITY_BUFFER_MIN_GKE_VERSION} (active CapacityBuffers); allowed: a minor newer than "
                f"{'.'.join(CAPACITY_BUFFER_MIN_GKE_VERSION.split('.')[:2])} (a channel may give that minor an older "
                f"patch), or a full version from {CAPACITY_BUFFER_MIN_GKE_VERSION} on"
            )
        return self

    @model_validator(mode="after")
    def _existing_cluster_says_whose_adapter(self) -> StackConfig:
        if self.cluster.existing and self.autoscaling.enabled and self.autoscaling.metrics_adapter is None:
            raise ValueError(
                "autoscaling.metricsAdapter: required with cluster.existing, since the Custom Metrics Stackdriver "
                "Adapter serves the whole cluster; allowed: existing (the cluster runs one; none is declared) or "
                "declare (declared here and kept on destroy)"
            )
        return self

    @model_validator(mode="after")
    def _one_server_per_rank_fits(self) -> StackConfig:
        """Gateway mode serves each data-parallel rank from a container of its own on engine.port + rank
        (components/vllm.py), unless routing.gateway.endpointPerRank is false."""
        if not self.serves_per_rank:
            return self
        engine = self.engine
        last_port = engine.port + engine.data_parallel_size - 1
        if self.startup.compile_cache.enabled:
            raise ValueError(
                "startup.compileCache: routing.mode gateway runs one vllm serve per data-parallel rank (each on "
                "its own --port), and the shared compile cache mounts one folder keyed to one server's arguments "
                "(common/compile_cache.py); the ranks' servers writing it at once through Cloud Storage FUSE is not "
                "verified; use it in routing.mode clusterip or with routing.gateway.endpointPerRank false"
            )
        if engine.enable_expert_parallel:
            raise ValueError(
                "engine.enableExpertParallel: routing.mode gateway runs each data-parallel rank in a container of "
                "its own, which sees only its own GPUs, and expert parallel exchanges tokens between all ranks' GPUs "
                "every step; use routing.mode clusterip or routing.gateway.endpointPerRank false for an "
                "expert-parallel (MoE) profile"
            )
        if last_port > 65535:
            raise ValueError(
                f"engine.port: routing.mode gateway serves rank i on engine.port + i, up to {last_port}; "
                f"allowed: at most {65536 - engine.data_parallel_size}"
            )
        return self

    @model_validator(mode="after")
    def _existing_cluster_names_its_clients(self) -> StackConfig:
        # The default ranges are cluster.network.subnetCidr, this stack's own subnet: in an existing
        # cluster's VPC that range means nothing (the load balancer would admit whatever holds it there).
        if (
            self.cluster.existing
            and self.routing.internal_load_balancer
            and self.routing.internal_load_balancer_source_ranges is None
        ):
            raise ValueError(
                "routing.internalLoadBalancerSourceRanges: required with cluster.existing; the default "
                "(cluster.network.subnetCidr) is the subnet a new cluster gets, not the existing cluster's VPC; "
                "list the private ranges of the load balancer's clients"
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
        if self.routing.mode is RoutingMode.gateway and not IMAGE_DIGEST.search(self.routing.gateway.epp_image):
            raise ValueError(
                "routing.gateway.eppImage: prod pins the Endpoint Picker image by digest; "
                "allowed: NAME:TAG@sha256:<64 hex>"
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
            if self.routing.gateway.tls.enabled:
                raise ValueError(
                    "benchmark.enabled: needs the Gateway's plain HTTP; allowed with routing.gateway.tls off"
                )
        return self

    @property
    def nodes(self) -> int:
        """The A4 node count; `stacks.load.loader` resolves a `target` to it before any resource is declared."""
        if self.capacity.nodes is None:
            raise RuntimeError("capacity.nodes is unresolved: load the config through stacks.load.loader.validate")
        return self.capacity.nodes

    @property
    def serving_profile(self) -> ServingProfile:
        return profile_of(self.profile)

    @property
    def serves_profile_checkpoint(self) -> bool:
        """Whether weights.model is the profile's own checkpoint (else its size facts do not apply)."""
        return self.weights.model == self.serving_profile.checkpoint.model

    @property
    def benchmark_target(self) -> BenchmarkTarget:
        if self.benchmark.target is not None:
            return self.benchmark.target
        return BenchmarkTarget.gateway if self.routing.mode is RoutingMode.gateway else BenchmarkTarget.service

    @property
    def minimum_gke_version(self) -> str:
        """The oldest GKE version that has every feature the stack uses."""
        minimums = [B200_MIN_GKE_VERSION, COMPUTE_CLASS_MIN_GKE_VERSION]
        if self.routing.mode is RoutingMode.gateway:
            minimums.append(INFERENCE_POOL_MIN_GKE_VERSION)
        if self.warm_capacity.enabled:
            minimums.append(CAPACITY_BUFFER_MIN_GKE_VERSION)
        return max(minimums, key=gke_version_key)

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
    def serves_per_rank(self) -> bool:
        """One `vllm serve` per data-parallel rank (gateway mode, routing.gateway.endpointPerRank)."""
        return self.routing.mode is RoutingMode.gateway and self.routing.gateway.endpoint_per_rank

    @property
    def max_replicas(self) -> int:
        """The replica ceiling: autoscaling.maxReplicas, else the capacity plan's node count."""
        if self.autoscaling.enabled and self.autoscaling.max_replicas is not None:
            return self.autoscaling.max_replicas
        return self.nodes

    @property
    def nodes_per_disk(self) -> int:
        """The most nodes that read one zone's serving disk at once: the replica ceiling spread evenly
        over the zones (a zone may hold more when capacity comes from one zone only)."""
        return math.ceil(self.max_replicas / len(self.zones))

    @property
    def serving_throughput_mibps(self) -> int:
        """Each serving disk's provisioned throughput: weights.throughputMibps, or sized from weights.targetLoadSeconds
        so that nodes_per_disk nodes read the checkpoint in that time, within Hyperdisk ML's per-volume limits."""
        weights = self.weights
        if weights.target_load_seconds is None or weights.checkpoint_gib is None:
            return weights.throughput_mibps
        needed = math.ceil(self.nodes_per_disk * weights.checkpoint_gib * 1024 / weights.target_load_seconds)
        return min(max(needed, HYPERDISK_ML_MIN_MIBPS), HYPERDISK_ML_MAX_MIBPS)

    @property
    def initial_replicas(self) -> int:
        """The Deployment's replicas at creation (afterwards the autoscaler or the schedule owns them)."""
        return self.autoscaling.min_replicas if self.autoscaling.enabled else self.nodes

    def schedule_steps(self) -> list[tuple[str, str, int]]:
        """The schedule as (name, cron, replicas) steps: the cron entries, or business hours as a
        wake step (to businessHours.replicas or the initial replicas) and a sleep step (to 0)."""
        schedule = self.schedule
        if not schedule.enabled:
            return []
        hours = schedule.business_hours
        if schedule.entries or hours is None:
            return [(entry.name, entry.cron, entry.replicas) for entry in schedule.entries]
        days = ",".join(CRON_WEEKDAY[day] for day in hours.days)
        start_hour, start_minute = (int(part) for part in hours.start.split(":"))
        end_hour, end_minute = (int(part) for part in hours.end.split(":"))
        return [
            ("wake", f"{start_minute} {start_hour} * * {days}", hours.replicas or self.initial_replicas),
            ("sleep", f"{end_minute} {end_hour} * * {days}", 0),
        ]

    @property
    def pod_count_decider(self) -> str | None:
        """What sets the serving pods to another count than initial_replicas while it serves, in words, or None."""
        counts = {replicas for _, _, replicas in self.schedule_steps() if replicas}
        if self.autoscaling.enabled and self.autoscaling.min_replicas < self.max_replicas:
            return f"its autoscaler runs {self.autoscaling.min_replicas}..{self.max_replicas} pods"
        if counts - {self.initial_replicas}:
            return f"its schedule sets {'/'.join(str(count) for count in sorted(counts))} pods"
        return None

    @property
    def replicas_managed_elsewhere(self) -> bool:
        return self.autoscaling.enabled or self.schedule.enabled
