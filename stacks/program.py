"""The composition of the stack: typed config in, components declared, outputs out.

`__main__.py` calls `deploy()` under `pulumi up`; the offline render runs that same file under the SDK's mocks.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_gcp as gcp

from components.benchmark import BenchmarkJob
from components.capacity import B200Capacity
from components.cluster import Cluster, ClusterTarget
from components.compile_cache import CacheMount, CompileCache
from components.crd_readiness import CrdReadiness
from components.engine_env_secret import EngineEnvSecret
from components.existing_cluster import ExistingCluster
from components.gateway import InferenceGateway, active_proxy_subnet
from components.hf_token import HuggingFaceToken
from components.image_mirror import ImageMirror, MirrorAddresses
from components.network_policy import ServingNetworkPolicies
from components.routing import ClusterIpRouting
from components.vllm import VllmEngine
from components.weights import ModelWeights
from stacks.args import (
    benchmark_args,
    capacity_args,
    cluster_args,
    compile_cache_args,
    compile_cache_mount,
    engine_env_secret_args,
    existing_cluster_args,
    gateway_args,
    gateway_mode,
    gcp_provider_args,
    hf_token_args,
    image_mirror_args,
    looks_up_proxy_subnet,
    network_policies_args,
    platform_crds_args,
    proxy_subnet,
    routing_args,
    vllm_engine_args,
    weights_args,
)
from stacks.config.stack import StackConfig
from stacks.load import loader
from stacks.operations import build_operations

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
    gcp_provider = gcp.Provider(gcp_provider_name, **gcp_provider_args(config), opts=opts)
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


def declare_cluster(
    config: StackConfig, gcp_provider: gcp.Provider, name: str, opts: pulumi.ResourceOptions | None
) -> ClusterTarget:
    """The cluster the serving layer goes into: created by the stack, or looked up (`cluster.existing`)."""
    with_gcp = options(opts, providers=[gcp_provider])
    if config.cluster.existing:
        return ExistingCluster(name, existing_cluster_args(config), opts=with_gcp).target
    return Cluster(name, cluster_args(config), opts=with_gcp).target


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
    mirror: MirrorAddresses | None = None
    # What the pods that pull through the mirror wait for: its repositories and their readers.
    pulls_after: list[pulumi.Resource] = []
    if config.startup.image_mirror.enabled:
        image_mirror = ImageMirror(
            f"{name}-image-mirror",
            image_mirror_args(config, target.node_service_account, after=target.apis),
            opts=options(opts, providers=[gcp_provider]),
        )
        mirror = image_mirror.addresses
        pulls_after.append(image_mirror)
    in_namespace = options(opts, providers=[target.provider], depends_on=target.waits_for)
    subnet = proxy_subnet(
        config,
        active_proxy_subnet(config.project, config.region, config.cluster.name, gcp_provider)
        if looks_up_proxy_subnet(config)
        else None,
    )
    namespace = target.namespace
    token = HuggingFaceToken(f"{name}-hf-token", hf_token_args(config, namespace, hf_token), opts=in_namespace)
    # GKE serves the ComputeClass and PodMonitoring CRDs itself; on a new cluster they may not be
    # served yet when the first objects of those kinds are created (see components/crd_readiness.py).
    platform_crds = CrdReadiness(f"{name}-crds", platform_crds_args(config, namespace), opts=in_namespace)
    capacity = B200Capacity(
        f"{name}-capacity",
        capacity_args(config, after=[platform_crds.job]),
        opts=options(opts, providers=[target.provider]),
    )
    weights = ModelWeights(
        f"{name}-weights",
        weights_args(config, namespace, token.secret.metadata.name, token.secret_key, mirror),
        opts=options(opts, providers=[gcp_provider, target.provider], depends_on=[*target.waits_for, *pulls_after]),
    )
    engine_env = (
        EngineEnvSecret(f"{name}-engine-env", engine_env_secret_args(config, namespace), opts=in_namespace)
        if config.engine.secret_env
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
            compile_cache_args(config, namespace, project_number, target.workload_pool, after=target.apis),
            opts=options(opts, providers=[gcp_provider, target.provider], depends_on=target.waits_for),
        )
        cache_mount = compile_cache_mount(config, compile_cache.bucket_name)
        pulls_after.append(compile_cache)
    engine = VllmEngine(
        f"{name}-vllm",
        vllm_engine_args(
            config,
            namespace,
            weights.model_path,
            weights.claim.metadata.name,
            capacity.node_selector,
            after=[platform_crds.job],
            secret_env_from=engine_env.secret.metadata.name if engine_env else None,
            mirror=mirror,
            compile_cache=cache_mount,
        ),
        opts=options(opts, providers=[target.provider], depends_on=[*target.waits_for, *pulls_after]),
    )
    ServingNetworkPolicies(
        f"{name}-network-policies", network_policies_args(config, namespace, subnet), opts=in_namespace
    )

    outputs: dict[str, pulumi.Input[object]] = {
        "servedModelName": config.served_model_name,
        "weightsImage": weights.image.name,
    }
    if weights.download_logs_command is not None:
        # Only while the revision's download is declared (the `up` that fills its image).
        outputs["weightsDownloadLogs"] = weights.download_logs_command
    if not gateway_mode(config):
        routing = ClusterIpRouting(f"{name}-routing", routing_args(config), opts=in_namespace)
        outputs["endpoint"] = routing.endpoint
        outputs["tryIt"] = routing.try_it
        if routing.internal_address is not None:
            outputs["internalAddress"] = routing.internal_address
            outputs["internalAddressCommand"] = routing.internal_address_command
        endpoint: pulumi.Resource = routing
    else:
        inference_gateway = InferenceGateway(
            f"{name}-gateway",
            gateway_args(config, target.network, target.pods_cidr, target.namespace, subnet, mirror),
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
        name,
        opts,
    )
    return outputs


def deploy() -> None:
    config, hf_token = loader.load_stack()
    for key, value in build(config, hf_token).items():
        pulumi.export(key, value)
