"""The composition of the stack: typed config in, components declared, outputs out.

`__main__.py` calls `deploy()` under `pulumi up`; the offline render runs that same file under the
SDK's mocks.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import pulumi
import pulumi_gcp as gcp

from components.benchmark import BenchmarkJob, BenchmarkJobArgs, benchmark_job_name
from components.capacity import B200Capacity, B200CapacityArgs
from components.cluster import AuthorizedNetwork, Cluster, ClusterArgs, ClusterTarget
from components.compile_cache import API as CLOUD_STORAGE_API
from components.compile_cache import CacheMount, CompileCache, CompileCacheArgs
from components.crd_readiness import PLATFORM_CRDS, CrdReadiness, CrdReadinessArgs, platform_crds_job_name
from components.engine_env_secret import EngineEnvSecret, EngineEnvSecretArgs, engine_env_secret_name
from components.existing_cluster import ExistingCluster, ExistingClusterArgs
from components.gateway import (
    GATEWAY_APIS,
    HEALTH_CHECK_RANGES,
    LISTENER_PORT,
    InferenceGateway,
    InferenceGatewayArgs,
    active_proxy_subnet,
)
from components.hf_token import HuggingFaceToken, HuggingFaceTokenArgs
from components.image_mirror import API as ARTIFACT_REGISTRY_API
from components.image_mirror import ImageMirror, ImageMirrorArgs, MirrorAddresses, through_mirror
from components.metrics import KUBE_STATE_COMPONENTS
from components.network_policy import ServingNetworkPolicies, ServingNetworkPoliciesArgs
from components.routing import ClusterIpRouting, ClusterIpRoutingArgs
from components.vllm import (
    CONTAINER_NAME as VLLM_CONTAINER,
)
from components.vllm import (
    PORT_NAME,
    VllmEngine,
    VllmEngineArgs,
    engine_image,
    grace_seconds,
    serving_ports,
)
from components.weights import DownloaderArgs, ModelWeights, ModelWeightsArgs
from stacks.args import (
    capacity_sources,
    downloader_args,
    engine_flags,
    internal_load_balancer_ranges,
    spot_only,
)
from stacks.capacity.planner import benchmark_clients, benchmark_concurrency
from stacks.config.benchmark import BenchmarkTarget
from stacks.config.routing import RoutingMode
from stacks.config.stack import StackConfig
from stacks.load import loader
from stacks.operations import build_operations

APP_NAME = "llm-serving"
# The weight objects, and so the download Job's pods, carry this label; their NetworkPolicy selects on it.
DOWNLOAD_SELECTOR = {"app.kubernetes.io/component": "model-weights"}


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


STACK_NAME = "llm"
GCP_PROVIDER_NAME = "gcp"


def options(base: pulumi.ResourceOptions | None, **settings: Any) -> pulumi.ResourceOptions:
    """A child's options on top of the caller's (`parent=` when the stack is itself a component)."""
    return pulumi.ResourceOptions.merge(base, pulumi.ResourceOptions(**settings))


def build(
    config: StackConfig,
    hf_token: pulumi.Output[str],
    name: str = STACK_NAME,
    opts: pulumi.ResourceOptions | None = None,
    gcp_provider_name: str = GCP_PROVIDER_NAME,
) -> dict[str, pulumi.Input[object]]:
    """Declare every resource of the stack and return the stack outputs. Logical names start with
    `name`; `opts` (e.g. a parent) goes under every top-level declaration."""
    gcp_provider = gcp.Provider(
        gcp_provider_name,
        project=config.project,
        region=config.region,
        default_labels=gcp_labels(config),
        opts=opts,
    )
    target = declare_cluster(config, gcp_provider, name, opts)
    outputs: dict[str, pulumi.Input[object]] = {
        "project": config.project,
        "region": config.region,
        "clusterName": target.cluster_name,
        "namespace": target.namespace,
        "getCredentials": pulumi.Output.concat(
            "gcloud container clusters get-credentials ",
            target.cluster_name,
            f" --region {config.region} --project {config.project}",
            # A cluster the stack creates: its IP endpoint admits no outside range (every preset), so
            # kubectl takes the DNS-based endpoint (IAM-gated). An existing cluster is as its owner set it.
            "" if config.cluster.existing else " --dns-endpoint",
        ),
    }
    return outputs | build_serving(config, hf_token, gcp_provider, target, name, opts)


def serving_apis(config: StackConfig) -> tuple[str, ...]:
    """The GCP APIs the serving layer uses beyond the cluster's own."""
    apis: tuple[str, ...] = GATEWAY_APIS if config.routing.mode is RoutingMode.gateway else ()
    if config.startup.image_mirror.enabled:
        apis += (ARTIFACT_REGISTRY_API,)
    if config.startup.compile_cache.enabled:
        apis += (CLOUD_STORAGE_API,)
    return apis


def declare_cluster(
    config: StackConfig, gcp_provider: gcp.Provider, name: str, opts: pulumi.ResourceOptions | None
) -> ClusterTarget:
    """The cluster the serving layer goes into: created by the stack, or looked up (`cluster.existing`)."""
    gateway = config.routing.mode is RoutingMode.gateway
    if config.cluster.existing:
        existing = ExistingCluster(
            name,
            ExistingClusterArgs(
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
            ),
            opts=options(opts, providers=[gcp_provider]),
        )
        return existing.target
    cluster = Cluster(
        name,
        ClusterArgs(
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
        ),
        opts=options(opts, providers=[gcp_provider]),
    )
    return cluster.target


def build_serving(
    config: StackConfig,
    hf_token: pulumi.Output[str],
    gcp_provider: gcp.Provider,
    target: ClusterTarget,
    name: str = STACK_NAME,
    opts: pulumi.ResourceOptions | None = None,
) -> dict[str, pulumi.Input[object]]:
    """The serving layer in a cluster: capacity class, weights, token Secret, vLLM, network policies,
    routing, the benchmark and operations. Returns its stack outputs."""
    gateway = config.routing.mode is RoutingMode.gateway
    mirror: MirrorAddresses | None = None
    # What the pods that pull through the mirror wait for: its repositories and their readers.
    pulls_after: list[pulumi.Resource] = []
    if config.startup.image_mirror.enabled:
        image_mirror = ImageMirror(
            f"{name}-image-mirror",
            ImageMirrorArgs(
                project=config.project,
                region=config.region,
                cluster_name=config.cluster.name,
                node_members=(pulumi.Output.concat("serviceAccount:", target.node_service_account),),
                labels=gcp_labels(config),
                after=target.apis,
            ),
            opts=options(opts, providers=[gcp_provider]),
        )
        mirror = image_mirror.addresses
        pulls_after.append(image_mirror)
    in_namespace = options(opts, providers=[target.provider], depends_on=target.waits_for)
    pulling = options(opts, providers=[target.provider], depends_on=[*target.waits_for, *pulls_after])
    proxy_subnet, proxy_subnet_cidr = (
        config.routing.gateway.existing_proxy_subnet,
        config.routing.gateway.proxy_subnet_cidr,
    )
    if gateway and config.cluster.existing and proxy_subnet is None:
        # The cluster's VPC may have its proxy-only subnet already (one per VPC and region): reuse it.
        found = active_proxy_subnet(config.project, config.region, config.cluster.name, gcp_provider)
        if found is not None:
            proxy_subnet, proxy_subnet_cidr = found
    namespace = target.namespace
    token = HuggingFaceToken(
        f"{name}-hf-token",
        HuggingFaceTokenArgs(namespace=namespace, token=hf_token, labels=kubernetes_labels(config)),
        opts=in_namespace,
    )
    # GKE serves the ComputeClass and PodMonitoring CRDs itself; on a new cluster they may not be
    # served yet when the first objects of those kinds are created (see components/crd_readiness.py).
    platform_crds = CrdReadiness(
        f"{name}-crds",
        CrdReadinessArgs(
            namespace=namespace,
            name=platform_crds_job_name(config.routing.service_name),
            crds=PLATFORM_CRDS,
            labels=kubernetes_labels(config),
        ),
        opts=in_namespace,
    )
    capacity = B200Capacity(
        f"{name}-capacity",
        B200CapacityArgs(
            compute_class_name=config.capacity.compute_class_name,
            sources=capacity_sources(config.capacity.sources, config.max_replicas),
            zones=config.zones,
            gpu_driver_version=config.capacity.gpu_driver_version.value,
            labels=kubernetes_labels(config),
            after=[platform_crds.job],
        ),
        opts=options(opts, providers=[target.provider]),
    )
    weights = ModelWeights(
        f"{name}-weights",
        ModelWeightsArgs(
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
            token_secret_name=token.secret.metadata.name,
            token_secret_key=token.secret_key,
            keep_on_delete=config.weights_protected,
            labels={**kubernetes_labels(config), **DOWNLOAD_SELECTOR},
        ),
        opts=options(opts, providers=[gcp_provider, target.provider], depends_on=[*target.waits_for, *pulls_after]),
    )
    secret_env = config.engine.secret_env
    engine_env = (
        EngineEnvSecret(
            f"{name}-engine-env",
            EngineEnvSecretArgs(
                name=engine_env_secret_name(config.routing.service_name),
                namespace=namespace,
                values={variable: pulumi.Config().require_secret(key) for variable, key in secret_env.items()},
                labels=kubernetes_labels(config),
            ),
            opts=in_namespace,
        )
        if secret_env
        else None
    )
    cache_mount: CacheMount | None = None
    if config.startup.compile_cache.enabled:
        # An output invoke that waits for the APIs: on an empty project Resource Manager is enabled
        # by this same `up` (pulumi InvokeOutputOptions.depends_on).
        project_number = gcp.organizations.get_project_output(
            project_id=config.project,
            opts=pulumi.InvokeOutputOptions(provider=gcp_provider, depends_on=list(target.apis)),
        ).number
        compile_cache = CompileCache(
            f"{name}-compile-cache",
            CompileCacheArgs(
                project=config.project,
                region=config.region,
                cluster_name=config.cluster.name,
                namespace=namespace,
                service_account_name=config.routing.service_name,
                project_number=project_number,
                workload_pool=target.workload_pool,
                max_age_days=config.startup.compile_cache.max_age_days,
                gcp_labels=gcp_labels(config),
                kubernetes_labels=kubernetes_labels(config),
                after=target.apis,
            ),
            opts=options(opts, providers=[gcp_provider, target.provider], depends_on=target.waits_for),
        )
        cache_mount = CacheMount(bucket=compile_cache.bucket_name, service_account=config.routing.service_name)
        pulls_after.append(compile_cache)
        pulling = options(opts, providers=[target.provider], depends_on=[*target.waits_for, *pulls_after])
    engine = VllmEngine(
        f"{name}-vllm",
        VllmEngineArgs(
            name=config.routing.service_name,
            namespace=namespace,
            engine=engine_flags(config.engine, config.workload.concurrency_per_node),
            served_model_name=config.served_model_name,
            model_path=weights.model_path,
            weights_claim=weights.claim.metadata.name,
            weights_mount_path=config.weights.mount_path,
            replicas=config.initial_replicas,
            replicas_managed_elsewhere=config.replicas_managed_elsewhere,
            monitoring_after=[platform_crds.job],
            most_replicas=config.max_replicas if config.replicas_managed_elsewhere else None,
            capacity_sources=len(config.capacity.sources),
            node_selector=capacity.node_selector,
            zones=config.zones,
            spot_only=spot_only(config),
            concurrency_per_pod=config.workload.concurrency_per_node,
            max_request_tokens=config.workload.max_prompt_tokens + config.workload.max_output_tokens,
            model_revision=config.weights.revision,
            selector=serving_selector(config),
            labels=kubernetes_labels(config),
            secret_env=tuple(secret_env),
            secret_env_from=engine_env.secret.metadata.name if engine_env else None,
            pull_image=through_mirror(
                engine_image(engine_flags(config.engine, config.workload.concurrency_per_node)), mirror
            ),
            compile_cache=cache_mount,
            per_rank=gateway,
        ),
        opts=pulling,
    )
    ports = tuple(serving_ports(engine_flags(config.engine), per_rank=gateway))

    ServingNetworkPolicies(
        f"{name}-network-policies",
        ServingNetworkPoliciesArgs(
            namespace=namespace,
            name=config.routing.service_name,
            serving_selector=serving_selector(config),
            serving_ports=ports,
            download_selector=DOWNLOAD_SELECTOR,
            vpc_source_ranges=(
                (proxy_subnet_cidr, *HEALTH_CHECK_RANGES) if gateway else internal_load_balancer_ranges(config)
            ),
            labels=kubernetes_labels(config),
        ),
        opts=in_namespace,
    )

    outputs: dict[str, pulumi.Input[object]] = {
        "servedModelName": config.served_model_name,
        "weightsImage": weights.image.name,
    }
    if weights.download_logs_command is not None:
        # Only while the revision's download is declared (the `up` that fills its image).
        outputs["weightsDownloadLogs"] = weights.download_logs_command
    if not gateway:
        routing = ClusterIpRouting(
            f"{name}-routing",
            ClusterIpRoutingArgs(
                service_name=config.routing.service_name,
                namespace=config.cluster.namespace,
                port=config.engine.port,
                target_port=PORT_NAME,
                selector=serving_selector(config),
                served_model_name=config.served_model_name,
                internal_load_balancer_ranges=internal_load_balancer_ranges(config),
                labels=kubernetes_labels(config),
            ),
            opts=in_namespace,
        )
        outputs["endpoint"] = routing.endpoint
        outputs["tryIt"] = routing.try_it
        if routing.internal_address is not None:
            outputs["internalAddress"] = routing.internal_address
            outputs["internalAddressCommand"] = routing.internal_address_command
        endpoint: pulumi.Resource = routing
    else:
        gateway_config = config.routing.gateway
        inference_gateway = InferenceGateway(
            f"{name}-gateway",
            InferenceGatewayArgs(
                project=config.project,
                region=config.region,
                cluster_name=config.cluster.name,
                network=target.network,
                pods_cidr=target.pods_cidr,
                namespace=namespace,
                pool_name=config.routing.service_name,
                pod_labels=serving_selector(config),
                serving_ports=ports,
                served_model_name=config.served_model_name,
                gateway_class=gateway_config.gateway_class.value,
                proxy_subnet_cidr=proxy_subnet_cidr,
                existing_proxy_subnet=proxy_subnet,
                epp_image=through_mirror(gateway_config.epp_image, mirror),
                epp_replicas=gateway_config.epp_replicas,
                epp_cpu=gateway_config.epp_cpu,
                epp_memory=gateway_config.epp_memory,
                request_timeout_seconds=gateway_config.request_timeout_seconds,
                pool_grace_seconds=grace_seconds(spot_only(config)),
                allow_external=gateway_config.allow_external,
                kubernetes_labels=kubernetes_labels(config),
            ),
            opts=options(opts, providers=[gcp_provider, target.provider]),
        )
        outputs["gatewayAddressCommand"] = inference_gateway.address_command
        outputs["tryIt"] = inference_gateway.try_it
        endpoint = inference_gateway
    if config.benchmark.enabled:
        benchmark = BenchmarkJob(
            f"{name}-benchmark",
            benchmark_args(config, mirror),
            opts=options(
                opts, providers=[target.provider], depends_on=[engine, endpoint, *target.waits_for, *pulls_after]
            ),
        )
        outputs["benchmarkLogs"] = benchmark.logs_command
        outputs["benchmarkCompare"] = benchmark.logs_command.apply(
            lambda logs: f"{logs} | .venv/bin/bench-compare {pulumi.get_stack()} -"
        )
    outputs |= build_operations(
        config,
        gcp_provider,
        target,
        engine.deployment,
        weights.download.metadata.name if weights.download is not None else None,
        kubernetes_labels(config),
        gcp_labels(config),
        name,
        opts,
    )
    return outputs


def benchmark_base_url(config: StackConfig) -> str:
    if config.benchmark_target is BenchmarkTarget.gateway:
        return f"http://{config.benchmark.gateway_address}:{LISTENER_PORT}"
    return f"http://{config.routing.service_name}.{config.cluster.namespace}.svc.cluster.local:{config.engine.port}"


def mirrored_downloader(config: StackConfig, mirror: MirrorAddresses | None) -> DownloaderArgs:
    downloader = downloader_args(config.weights.downloader)
    return replace(downloader, image=through_mirror(downloader.image, mirror))


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
    )


def deploy() -> None:
    config, hf_token = loader.load()
    for key, value in build(config, hf_token).items():
        pulumi.export(key, value)
