"""Config to component arguments: the one place where the stack's config becomes the typed Args the
components own. The composition (`program.py`, `operations.py`) declares each component with the
Args built here, and the derived checks and plan.md read the same values."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any

import pulumi

from components.autoscaling import MetricsAdapterArgs, ServingAutoscalerArgs
from components.benchmark import CONTAINER_NAME as BENCHMARK_CONTAINER
from components.benchmark import BenchmarkJobArgs, benchmark_job_name
from components.capacity import FLEX_START, B200CapacityArgs, CapacitySource, capacity_kind, capacity_source
from components.cluster import AuthorizedNetwork, ClusterArgs
from components.compile_cache import API as CLOUD_STORAGE_API
from components.compile_cache import CacheMount, CompileCacheArgs
from components.crd_readiness import PLATFORM_CRDS, CrdReadinessArgs, platform_crds_job_name
from components.engine_env_secret import API_KEY_ENV, EngineEnvSecretArgs, engine_env_secret_name
from components.existing_cluster import ExistingClusterArgs
from components.gateway import GATEWAY_APIS, HEALTH_CHECK_RANGES, LISTENER_PORT, GatewayTls, InferenceGatewayArgs
from components.hf_token import HuggingFaceTokenArgs
from components.image_mirror import API as ARTIFACT_REGISTRY_API
from components.image_mirror import ImageMirrorArgs, MirrorAddresses, through_mirror
from components.metrics import KNOWN, KUBE_STATE_COMPONENTS, ServingQueries
from components.monitoring import (
    QUEUE_ALERT_SECONDS,
    AlertThresholds,
    ServingMonitoringArgs,
    TimeToReady,
    serving_alerts,
    serving_charts,
)
from components.network_policy import ServingNetworkPoliciesArgs
from components.routing import ClusterIpRoutingArgs
from components.schedule import ScaleScheduleArgs, ScaleStep
from components.vllm import CONTAINER_NAME as VLLM_CONTAINER
from components.vllm import (
    ENGINE_FIELDS,
    IMAGE_PULL_SECONDS,
    NODE_PROVISIONING_MINUTES,
    PORT_NAME,
    EngineFlags,
    Speculative,
    VllmEngineArgs,
    drain_seconds,
    engine_args,
    engine_image,
    grace_seconds,
    serving_ports,
)
from components.warm_capacity import WarmCapacityArgs
from components.weights import DownloaderArgs, ModelWeightsArgs, local_model_path
from policies.rules.operations import (
    HELD_TIME_TO_SERVE_ANNOTATION,
    TIME_TO_SERVE_ANNOTATION,
    TIME_TO_SERVE_BOUND_ANNOTATION,
)
from stacks.capacity.planner import benchmark_clients, benchmark_concurrency
from stacks.capacity.time_to_serve import (
    held_planning_seconds,
    image_pull_seconds,
    led_schedule_steps,
    planning_seconds,
    startup_probe_seconds,
    wake_planning_seconds,
)
from stacks.config.benchmark import BenchmarkTarget
from stacks.config.capacity import CapacitySource as CapacitySourceConfig
from stacks.config.engine import EngineConfig, SpeculativeConfig, capture_size
from stacks.config.operations import NODE_PROVISIONING_SECONDS, AutoscalingMetric
from stacks.config.routing import RoutingMode
from stacks.config.stack import StackConfig
from stacks.config.weights import DownloaderConfig

APP_NAME = "llm-serving"
# The weight objects, and so the download Job's pods, carry this label; their NetworkPolicy selects on it.
DOWNLOAD_SELECTOR = {"app.kubernetes.io/component": "model-weights"}
SCHEDULE_NAME = "serving-schedule"


def kubernetes_labels(config: StackConfig) -> dict[str, str]:
    return {
        "app.kubernetes.io/part-of": APP_NAME,
        "app.kubernetes.io/managed-by": "pulumi",
        "llm-serving/environment": config.environment.value,
    }


def serving_selector(config: StackConfig) -> dict[str, str]:
    """The labels the vLLM pods carry and that routing (Service, InferencePool) and monitoring select on."""
    return {"app": config.routing.service_name}


def gcp_labels(config: StackConfig) -> dict[str, str]:
    return {"app": APP_NAME, "environment": config.environment.value, "managed-by": "pulumi"}


def gcp_provider_args(config: StackConfig) -> dict[str, Any]:
    """The GCP provider's arguments: every GCP resource's project, region and labels by default."""
    return {"project": config.project, "region": config.region, "default_labels": gcp_labels(config)}


def gateway_mode(config: StackConfig) -> bool:
    return config.routing.mode is RoutingMode.gateway


def internal_load_balancer_ranges(config: StackConfig) -> tuple[str, ...]:
    """The internal load balancer's client ranges (none without one): as configured, else the subnet's."""
    routing = config.routing
    if not routing.internal_load_balancer:
        return ()
    if routing.internal_load_balancer_source_ranges is not None:
        return tuple(routing.internal_load_balancer_source_ranges)
    return (config.cluster.network.subnet_cidr,)


def spot_only(config: StackConfig) -> bool:
    """Every capacity source is preemptible (Spot): the serving pods cannot land on longer-lived capacity."""
    return all(capacity_kind(source.type).preemptible for source in config.capacity.sources)


def serve_arguments(config: StackConfig) -> list[str]:
    """The `vllm serve` arguments the stack renders (for plan.md): with a server per data-parallel rank, rank 0's."""
    return engine_args(
        engine_flags(config.engine, config.workload.concurrency_per_node),
        local_model_path(config.weights.mount_path, config.weights.model),
        config.served_model_name,
        drain_seconds(grace_seconds(spot_only(config))),
        0 if config.serves_per_rank else None,
    )


def engine_flags(engine: EngineConfig, concurrency_per_node: int) -> EngineFlags:
    """The engine settings as the component's flags: each field of the one list (components/vllm.py
    ENGINE_FIELDS) from the engine setting of its name; `concurrency_per_node`
    (workload.concurrencyPerNode) resolves a capture size matched to the workload."""
    flags = {name: _flag(getattr(engine, name)) for name in ENGINE_FIELDS}
    flags["max_cudagraph_capture_size"] = capture_size(engine, concurrency_per_node)
    return EngineFlags(**flags)


def _flag(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, SpeculativeConfig):
        return Speculative(value.method, value.num_speculative_tokens)
    if isinstance(value, list):
        return tuple(value)
    if isinstance(value, dict):
        return dict(value)
    return value


def mirrored_downloader(config: StackConfig, mirror: MirrorAddresses | None) -> DownloaderArgs:
    downloader = downloader_args(config.weights.downloader)
    return replace(downloader, image=through_mirror(downloader.image, mirror))


def downloader_args(downloader: DownloaderConfig) -> DownloaderArgs:
    return DownloaderArgs(
        image=downloader.image,
        machine_family=downloader.machine_family,
        arch=downloader.arch,
        cpu=downloader.cpu,
        memory=downloader.memory,
        retries=downloader.retries,
    )


def pod_move_seconds(config: StackConfig) -> int:
    """One pod's move off a recycled Flex-start node: a node (provisioning), then twice its start on a held node
    (the planning figure: the write-up's ~10 min pod, a recorded start-up report, a larger checkpoint's read)."""
    return NODE_PROVISIONING_MINUTES * 60 + 2 * held_planning_seconds(config)


def flex_start_recycling_seconds(config: StackConfig) -> int:
    """The recycling lead that moves the stack's most pods one at a time before their Flex-start nodes, started
    together, reach the end of their run together."""
    return config.max_replicas * pod_move_seconds(config)


def capacity_sources(sources: Sequence[CapacitySourceConfig], recycling_seconds: int) -> list[CapacitySource]:
    """The stack's capacity fallback order as the capacity component's own source types (an unknown kind is an error:
    components/capacity.py CAPACITY_KINDS; a Flex-start recycling lead left null is `recycling_seconds`)."""
    return [capacity_source(source.type, source_settings(source, recycling_seconds)) for source in sources]


def source_settings(source: CapacitySourceConfig, recycling_seconds: int) -> dict[str, Any]:
    """A source's settings for its component type (the config's fields but `type`)."""
    settings = source.model_dump(exclude={"type"})
    if source.type == FLEX_START.type and settings["node_recycling_lead_time_seconds"] is None:
        settings["node_recycling_lead_time_seconds"] = recycling_seconds
    return settings


# The cluster: created by the stack, or looked up (`cluster.existing`).


def serving_apis(config: StackConfig) -> tuple[str, ...]:
    """The GCP APIs the serving layer uses beyond the cluster's own."""
    apis: tuple[str, ...] = GATEWAY_APIS if gateway_mode(config) else ()
    if config.startup.image_mirror.enabled:
        apis += (ARTIFACT_REGISTRY_API,)
    if config.startup.compile_cache.enabled:
        apis += (CLOUD_STORAGE_API,)
    return apis


def existing_cluster_args(config: StackConfig) -> ExistingClusterArgs:
    gateway = gateway_mode(config)
    return ExistingClusterArgs(
        project=config.project,
        region=config.region,
        cluster_name=config.cluster.name,
        namespace=config.cluster.namespace,
        minimum_version=config.minimum_gke_version,
        gateway_api=gateway,
        declares_vpc_objects=gateway,
        extra_apis=serving_apis(config),
        monitoring_components=("DCGM", *KUBE_STATE_COMPONENTS),
        kubernetes_labels=kubernetes_labels(config),
    )


def cluster_args(config: StackConfig) -> ClusterArgs:
    gateway = gateway_mode(config)
    return ClusterArgs(
        project=config.project,
        region=config.region,
        cluster_name=config.cluster.name,
        release_channel=config.cluster.release_channel.value,
        min_master_version=config.cluster.min_master_version,
        maintenance_window=config.cluster.maintenance_window.recurring_window(),
        deletion_protection=config.protected,
        namespace=config.cluster.namespace,
        subnet_cidr=config.cluster.network.subnet_cidr,
        pods_cidr=config.cluster.network.pods_cidr,
        services_cidr=config.cluster.network.services_cidr,
        private_nodes=config.cluster.private_nodes,
        authorized_networks=(
            tuple(
                AuthorizedNetwork(cidr_block=network.cidr_block, display_name=network.display_name)
                for network in config.cluster.authorized_networks
            )
            if config.cluster.authorized_networks is not None
            else None
        ),
        gateway_api=gateway,
        extra_apis=serving_apis(config),
        # The cluster's list replaces GKE's default packages: name the ones dashboards and alerts read.
        extra_monitoring_components=KUBE_STATE_COMPONENTS,
        kubernetes_labels=kubernetes_labels(config),
    )


# The serving layer in the cluster.


def image_mirror_args(
    config: StackConfig, node_service_account: pulumi.Input[str], after: Sequence[pulumi.Resource]
) -> ImageMirrorArgs:
    return ImageMirrorArgs(
        project=config.project,
        region=config.region,
        cluster_name=config.cluster.name,
        node_members=(pulumi.Output.concat("serviceAccount:", node_service_account),),
        labels=gcp_labels(config),
        after=tuple(after),
    )


def compile_cache_args(
    config: StackConfig,
    namespace: pulumi.Input[str],
    project_number: pulumi.Input[str],
    workload_pool: pulumi.Input[str],
    after: Sequence[pulumi.Resource],
) -> CompileCacheArgs:
    return CompileCacheArgs(
        project=config.project,
        region=config.region,
        cluster_name=config.cluster.name,
        namespace=namespace,
        service_account_name=config.routing.service_name,
        project_number=project_number,
        workload_pool=workload_pool,
        max_age_days=config.startup.compile_cache.max_age_days,
        gcp_labels=gcp_labels(config),
        kubernetes_labels=kubernetes_labels(config),
        after=tuple(after),
    )


def compile_cache_mount(config: StackConfig, bucket_name: str) -> CacheMount:
    return CacheMount(bucket=bucket_name, service_account=config.routing.service_name)


@dataclass(frozen=True)
class ProxySubnet:
    """The gateway's proxy-only subnet: an existing one's name (None: the stack declares it) and its range."""

    name: str | None
    cidr: str


def looks_up_proxy_subnet(config: StackConfig) -> bool:
    """The cluster's VPC may have its proxy-only subnet already (one per VPC and region): a gateway in an
    existing cluster with none named looks it up to reuse it."""
    return gateway_mode(config) and config.cluster.existing and config.routing.gateway.existing_proxy_subnet is None


def proxy_subnet(config: StackConfig, found: tuple[str, str] | None = None) -> ProxySubnet:
    """The proxy-only subnet: as configured, or the one the look-up `found` (name, range)."""
    if found is not None:
        return ProxySubnet(name=found[0], cidr=found[1])
    return ProxySubnet(name=config.routing.gateway.existing_proxy_subnet, cidr=config.routing.gateway.proxy_subnet_cidr)


def serving_port_list(config: StackConfig) -> tuple[int, ...]:
    return tuple(
        serving_ports(
            engine_flags(config.engine, config.workload.concurrency_per_node), per_rank=config.serves_per_rank
        )
    )


def hf_token_args(config: StackConfig, namespace: pulumi.Input[str], token: pulumi.Output[str]) -> HuggingFaceTokenArgs:
    return HuggingFaceTokenArgs(namespace=namespace, token=token, labels=kubernetes_labels(config))


def platform_crds_args(config: StackConfig, namespace: pulumi.Input[str]) -> CrdReadinessArgs:
    return CrdReadinessArgs(
        namespace=namespace,
        name=platform_crds_job_name(config.routing.service_name),
        crds=PLATFORM_CRDS,
        labels=kubernetes_labels(config),
    )


def capacity_args(config: StackConfig, after: Sequence[pulumi.Resource]) -> B200CapacityArgs:
    return B200CapacityArgs(
        compute_class_name=config.capacity.compute_class_name,
        sources=capacity_sources(config.capacity.sources, flex_start_recycling_seconds(config)),
        zones=config.zones,
        gpu_driver_version=config.capacity.gpu_driver_version.value,
        labels=kubernetes_labels(config),
        after=list(after),
    )


def weights_args(
    config: StackConfig,
    namespace: pulumi.Input[str],
    token_secret_name: pulumi.Input[str],
    token_secret_key: str,
    mirror: MirrorAddresses | None = None,
) -> ModelWeightsArgs:
    return ModelWeightsArgs(
        project=config.project,
        region=config.region,
        zones=config.zones,
        cluster_name=config.cluster.name,
        namespace=namespace,
        model=config.weights.model,
        revision=config.weights.revision,
        size_gib=config.weights.size_gib,
        throughput_mibps=config.serving_throughput_mibps,
        mount_path=config.weights.mount_path,
        downloader=mirrored_downloader(config, mirror),
        token_secret_name=token_secret_name,
        token_secret_key=token_secret_key,
        keep_on_delete=config.weights_protected,
        labels={**kubernetes_labels(config), **DOWNLOAD_SELECTOR},
    )


def vllm_engine_args(
    config: StackConfig,
    namespace: pulumi.Input[str],
    model_path: str,
    weights_claim: pulumi.Input[str],
    node_selector: dict[str, pulumi.Input[str]],
    after: Sequence[pulumi.Resource],
    secret_env_from: pulumi.Input[str] | None = None,
    mirror: MirrorAddresses | None = None,
    compile_cache: CacheMount | None = None,
) -> VllmEngineArgs:
    return VllmEngineArgs(
        name=config.routing.service_name,
        namespace=namespace,
        engine=engine_flags(config.engine, config.workload.concurrency_per_node),
        served_model_name=config.served_model_name,
        model_path=model_path,
        weights_claim=weights_claim,
        weights_mount_path=config.weights.mount_path,
        replicas=config.initial_replicas,
        replicas_managed_elsewhere=config.replicas_managed_elsewhere,
        monitoring_after=list(after),
        most_replicas=config.max_replicas if config.replicas_managed_elsewhere else None,
        capacity_sources=len(config.capacity.sources),
        capacity_wait_seconds=capacity_wait_seconds(config),
        node_selector=node_selector,
        zones=config.zones,
        spot_only=spot_only(config),
        concurrency_per_pod=config.workload.concurrency_per_node,
        max_request_tokens=config.workload.max_prompt_tokens + config.workload.max_output_tokens,
        model_revision=config.weights.revision,
        selector=serving_selector(config),
        labels=kubernetes_labels(config),
        secret_env=tuple(config.engine.secret_env),
        secret_env_from=secret_env_from,
        pull_image=through_mirror(
            engine_image(engine_flags(config.engine, config.workload.concurrency_per_node)), mirror
        ),
        compile_cache=compile_cache,
        per_rank=config.serves_per_rank,
        announce_ports=gateway_mode(config),
        startup_probe_seconds=startup_probe_seconds(config),
        image_pull_seconds=image_pull_allowance(config),
    )


def engine_env_secret_args(config: StackConfig, namespace: pulumi.Input[str]) -> EngineEnvSecretArgs:
    """The engine's secret environment: each variable from the stack's secret config key it names."""
    return EngineEnvSecretArgs(
        name=engine_env_secret_name(config.routing.service_name),
        namespace=namespace,
        values={variable: pulumi.Config().require_secret(key) for variable, key in config.engine.secret_env.items()},
        labels=kubernetes_labels(config),
    )


def api_key_secret(config: StackConfig) -> str | None:
    """The Secret holding the engine's API key (engine.secretEnv.VLLM_API_KEY), None without one."""
    return engine_env_secret_name(config.routing.service_name) if API_KEY_ENV in config.engine.secret_env else None


def network_policies_args(
    config: StackConfig, namespace: pulumi.Input[str], subnet: ProxySubnet | None = None
) -> ServingNetworkPoliciesArgs:
    subnet = subnet or proxy_subnet(config)
    return ServingNetworkPoliciesArgs(
        namespace=namespace,
        name=config.routing.service_name,
        serving_selector=serving_selector(config),
        serving_ports=serving_port_list(config),
        download_selector=DOWNLOAD_SELECTOR,
        gateway_source_ranges=(subnet.cidr, *HEALTH_CHECK_RANGES) if gateway_mode(config) else (),
        load_balancer_source_ranges=() if gateway_mode(config) else internal_load_balancer_ranges(config),
        labels=kubernetes_labels(config),
    )


def routing_args(config: StackConfig) -> ClusterIpRoutingArgs:
    return ClusterIpRoutingArgs(
        service_name=config.routing.service_name,
        namespace=config.cluster.namespace,
        port=config.engine.port,
        target_port=PORT_NAME,
        selector=serving_selector(config),
        served_model_name=config.served_model_name,
        internal_load_balancer_ranges=internal_load_balancer_ranges(config),
        labels=kubernetes_labels(config),
        api_key_secret=api_key_secret(config),
    )


def gateway_args(
    config: StackConfig,
    network: pulumi.Input[str],
    pods_cidr: pulumi.Input[str],
    namespace: pulumi.Input[str],
    subnet: ProxySubnet | None = None,
    mirror: MirrorAddresses | None = None,
) -> InferenceGatewayArgs:
    gateway_config = config.routing.gateway
    subnet = subnet or proxy_subnet(config)
    return InferenceGatewayArgs(
        project=config.project,
        region=config.region,
        cluster_name=config.cluster.name,
        network=network,
        pods_cidr=pods_cidr,
        namespace=namespace,
        pool_name=config.routing.service_name,
        pod_labels=serving_selector(config),
        serving_ports=serving_port_list(config),
        served_model_name=config.served_model_name,
        gateway_class=gateway_config.gateway_class.value,
        proxy_subnet_cidr=subnet.cidr,
        existing_proxy_subnet=subnet.name,
        epp_image=through_mirror(gateway_config.epp_image, mirror),
        epp_replicas=gateway_config.epp_replicas,
        epp_cpu=gateway_config.epp_cpu,
        epp_memory=gateway_config.epp_memory,
        request_timeout_seconds=gateway_config.request_timeout_seconds,
        pool_grace_seconds=grace_seconds(spot_only(config)),
        allow_external=gateway_config.allow_external,
        tls=GatewayTls(tls.hostname, tls.kubernetes_certificate, tls.pre_shared_certificate)
        if (tls := gateway_config.tls).enabled
        else None,
        address=gateway_config.address,
        kubernetes_labels=kubernetes_labels(config),
        api_key_secret=api_key_secret(config),
    )


def benchmark_base_url(config: StackConfig) -> str:
    if config.benchmark_target is BenchmarkTarget.gateway:
        return f"http://{config.benchmark.gateway_address}:{LISTENER_PORT}"
    return f"http://{config.routing.service_name}.{config.cluster.namespace}.svc.cluster.local:{config.engine.port}"


def benchmark_args(config: StackConfig, mirror: MirrorAddresses | None = None) -> BenchmarkJobArgs:
    benchmark = config.benchmark
    clients = benchmark_clients(benchmark_concurrency(config), benchmark.concurrency_per_client)
    return BenchmarkJobArgs(
        job_name=benchmark_job_name(config.routing.service_name),
        namespace=config.cluster.namespace,
        image=through_mirror(engine_image(engine_flags(config.engine, config.workload.concurrency_per_node)), mirror),
        base_url=benchmark_base_url(config),
        served_model_name=config.served_model_name,
        tokenizer=config.weights.model,
        clients=clients,
        concurrency_per_client=math.ceil(benchmark_concurrency(config) / clients),
        prompts_per_concurrency=benchmark.prompts_per_concurrency,
        input_len=benchmark.input_len,
        output_len=benchmark.output_len,
        range_ratio=benchmark.range_ratio,
        ignore_eos=benchmark.ignore_eos,
        ready_timeout_seconds=benchmark.ready_timeout_seconds,
        deadline_seconds=benchmark.deadline_seconds,
        machine_family=benchmark.machine_family,
        cpu=benchmark.cpu,
        memory=benchmark.memory,
        serving_selector=serving_selector(config),
        serving_port=config.engine.port,
        serving_container=VLLM_CONTAINER,
        gateway_address=config.benchmark.gateway_address
        if config.benchmark_target is BenchmarkTarget.gateway
        else None,
        gateway_port=LISTENER_PORT,
        labels={**kubernetes_labels(config), "app.kubernetes.io/component": "benchmark"},
        api_key_secret=api_key_secret(config),
    )


# Operations: autoscaling, the schedule, dashboard and alerts.


def autoscaling_metric(config: StackConfig) -> tuple[str, str]:
    """The HPA's custom metric and its per-pod target (the adapter sums a pod's engine series)."""
    scaling = config.autoscaling
    if scaling.metric is AutoscalingMetric.kv_cache_usage:
        engines = config.engine.data_parallel_size
        milli = round(scaling.target_kv_cache_usage * engines * 1000)
        return KNOWN["vllm:kv_cache_usage_perc"].adapter_name, f"{milli}m"
    return KNOWN["vllm:num_requests_waiting"].adapter_name, str(scaling.target_waiting_requests_per_pod)


def scale_down_stabilization_seconds(config: StackConfig) -> int:
    """autoscaling.scaleDownStabilizationSeconds, by default twice the stack's time to serve (a pod
    removed too early costs one to get back), at most the field's 3600."""
    given = config.autoscaling.scale_down_stabilization_seconds
    return given if given is not None else min(2 * planning_seconds(config), 3600)


def image_pull_allowance(config: StackConfig) -> int:
    """What a pod is given for its image pull: IMAGE_PULL_SECONDS, or the pull timeToServe computes when longer."""
    pull = image_pull_seconds(config)
    return max(IMAGE_PULL_SECONDS, round(pull) if pull is not None else 0)


def capacity_wait_seconds(config: StackConfig) -> int:
    """How long GKE tries the sources that bound it (Flex-start's capacityCheckWaitTimeSeconds) before the next."""
    return sum(getattr(source, "capacity_check_wait_time_seconds", None) or 0 for source in config.capacity.sources)


def no_ready_replica_seconds(config: StackConfig) -> int:
    """How long pods may be wanted with none ready before the alert fires: the stack's time to serve when every
    pod starts at once (a fleet restart), the time GKE may spend on sources that bound it, and one more node
    provisioning (a node that failed and was retried)."""
    return (
        wake_planning_seconds(config, config.max_replicas) + capacity_wait_seconds(config) + NODE_PROVISIONING_SECONDS
    )


def pending_alert_seconds(config: StackConfig) -> int:
    """monitoring.alerts.pendingSeconds, else twice the node provisioning, the image pull (as the rollout allows it:
    IMAGE_PULL_SECONDS, or the computed pull when longer) and the time GKE may spend on sources that bound it,
    within the field's range (at most 7200)."""
    given = config.monitoring.alerts.pending_seconds
    waits = 2 * NODE_PROVISIONING_SECONDS + image_pull_allowance(config) + capacity_wait_seconds(config)
    return given if given is not None else min(waits, 7200)


def time_to_ready_metric(config: StackConfig) -> TimeToReady | None:
    """The log-based metric of the serving pods' time to ready, where the benchmark Job reports it;
    named per cluster and namespace (log-based metric names are unique in a project)."""
    if not config.benchmark.enabled:
        return None
    name = f"{config.cluster.name}_{config.cluster.namespace}_serving_time_to_ready".replace("-", "_")
    return TimeToReady(name=name, namespace=config.cluster.namespace, container=BENCHMARK_CONTAINER)


def schedule_steps(config: StackConfig) -> list[ScaleStep]:
    """The schedule's steps; business hours wake early by the time to serve; with held nodes each
    step also sets the buffer (its nodes while pods are wanted, none at a step to zero)."""
    held = config.warm_capacity.nodes if config.warm_capacity.enabled else 0
    return [
        ScaleStep(name, cron, replicas, buffer_replicas=held if replicas else 0)
        for name, cron, replicas in led_schedule_steps(config)
    ]


def capacity_buffer_name(config: StackConfig) -> str | None:
    """The CapacityBuffer holding warm nodes (warmCapacity), None without one."""
    return f"{config.routing.service_name}-held" if config.warm_capacity.enabled else None


def warm_capacity_args(config: StackConfig) -> WarmCapacityArgs:
    name = config.routing.service_name
    return WarmCapacityArgs(
        name=f"{name}-held",
        namespace=config.cluster.namespace,
        deployment=name,
        nodes=config.warm_capacity.nodes,
        scheduled=config.schedule.enabled,
        labels=kubernetes_labels(config),
    )


def queries_for(config: StackConfig) -> ServingQueries:
    return ServingQueries(
        namespace=config.cluster.namespace,
        deployment=config.routing.service_name,
        served_model_name=config.served_model_name,
        pool_name=config.routing.service_name if gateway_mode(config) else None,
        cluster=config.cluster.name,
    )


def metrics_adapter_args(
    config: StackConfig, project_number: pulumi.Input[str], workload_pool: pulumi.Input[str]
) -> MetricsAdapterArgs:
    return MetricsAdapterArgs(
        project=config.project,
        project_number=project_number,
        workload_pool=workload_pool,
        labels=kubernetes_labels(config),
        # On a cluster the stack does not manage the adapter may come to serve other workloads'
        # autoscalers: `destroy` leaves it.
        retain_on_delete=config.cluster.existing,
    )


def autoscaler_args(config: StackConfig) -> ServingAutoscalerArgs:
    metric, metric_target = autoscaling_metric(config)
    scaling = config.autoscaling
    name = config.routing.service_name
    return ServingAutoscalerArgs(
        name=name,
        namespace=config.cluster.namespace,
        deployment=name,
        min_replicas=scaling.min_replicas,
        max_replicas=config.max_replicas,
        metric_name=metric,
        target_average_value=metric_target,
        scale_up_period_seconds=scaling.scale_up_period_seconds,
        scale_down_stabilization_seconds=scale_down_stabilization_seconds(config),
        scale_down_period_seconds=scaling.scale_down_period_seconds,
        labels=kubernetes_labels(config),
        annotations={
            TIME_TO_SERVE_ANNOTATION: str(planning_seconds(config)),
            TIME_TO_SERVE_BOUND_ANNOTATION: str(config.time_to_serve.bound_seconds),
            **(
                {HELD_TIME_TO_SERVE_ANNOTATION: str(held_planning_seconds(config))}
                if config.warm_capacity.enabled
                else {}
            ),
        },
    )


def schedule_args(config: StackConfig) -> ScaleScheduleArgs:
    return ScaleScheduleArgs(
        name=SCHEDULE_NAME,
        namespace=config.cluster.namespace,
        deployment=config.routing.service_name,
        time_zone=config.schedule.time_zone,
        steps=schedule_steps(config),
        labels=kubernetes_labels(config),
        capacity_buffer=capacity_buffer_name(config),
    )


def monitoring_args(
    config: StackConfig, download_job_name: pulumi.Input[str] | None, requires: Sequence[pulumi.Resource]
) -> ServingMonitoringArgs:
    alerts = config.monitoring.alerts
    speculative = config.engine.speculative is not None
    queries = queries_for(config)
    time_to_ready = time_to_ready_metric(config)
    return ServingMonitoringArgs(
        project=config.project,
        title=f"{config.cluster.name} {config.environment.value} serving",
        queries=queries,
        charts=[
            *serving_charts(
                queries, speculative=speculative, gateway=gateway_mode(config), autoscaling=config.autoscaling.enabled
            ),
            *([time_to_ready.chart()] if time_to_ready is not None else []),
        ]
        if config.monitoring.dashboard
        else [],
        time_to_ready=time_to_ready,
        alerts=serving_alerts(
            queries,
            AlertThresholds(
                queue_waiting=alerts.queue_waiting_threshold,
                kv_cache_usage=alerts.kv_cache_usage_threshold,
                min_mtp_acceptance=alerts.min_mtp_acceptance,
                pending_seconds=pending_alert_seconds(config),
                cold_start_seconds=no_ready_replica_seconds(config),
                queue_seconds=max(QUEUE_ALERT_SECONDS, planning_seconds(config))
                if config.autoscaling.enabled
                else QUEUE_ALERT_SECONDS,
            ),
            speculative=speculative,
        ),
        alerts_enabled=alerts.enabled,
        download_job_name=download_job_name,
        notification_channel=alerts.notification_channel,
        notification_email=alerts.email,
        labels=gcp_labels(config),
        requires=list(requires),
    )
