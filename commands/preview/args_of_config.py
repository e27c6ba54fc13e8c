"""Every component's Args from the config alone, built by the one config-to-Args mapping
(`stacks/args.py`): what the preview follows to name the stack settings behind a change
(`setting_sources.py`). `pulumi up` never reads this table; the composition calls the same functions
with the values other components give it at run time."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import pulumi

from components.autoscaling import MetricsAdapter, ServingAutoscaler
from components.benchmark import BenchmarkJob
from components.capacity import COMPUTE_CLASS_SELECTOR, B200Capacity
from components.cluster import Cluster, node_service_account_id
from components.compile_cache import CompileCache, bucket_name
from components.crd_readiness import CrdReadiness
from components.engine_env_secret import EngineEnvSecret
from components.existing_cluster import ExistingCluster
from components.gateway import InferenceGateway
from components.hf_token import SECRET_KEY as TOKEN_SECRET_KEY
from components.hf_token import SECRET_NAME as TOKEN_SECRET_NAME
from components.hf_token import HuggingFaceToken
from components.image_mirror import ImageMirror, MirrorAddresses
from components.monitoring import ServingMonitoring
from components.network_policy import ServingNetworkPolicies
from components.routing import ClusterIpRouting
from components.schedule import ScaleSchedule
from components.vllm import VllmEngine
from components.warm_capacity import WarmCapacity
from components.weights import ModelWeights, download_job_name, local_model_path, serving_volume_name
from stacks.args import (
    autoscaler_args,
    benchmark_args,
    capacity_args,
    cluster_args,
    compile_cache_args,
    compile_cache_mount,
    engine_env_secret_args,
    existing_cluster_args,
    gateway_args,
    gcp_provider_args,
    hf_token_args,
    image_mirror_args,
    metrics_adapter_args,
    monitoring_args,
    network_policies_args,
    platform_crds_args,
    routing_args,
    schedule_args,
    vllm_engine_args,
    warm_capacity_args,
    weights_args,
)
from stacks.config.stack import StackConfig


# By component (and the GCP provider's arguments, by its type). A value the composition takes from
# another component at run time stands in by what it is made of (the namespace is the cluster's
# `cluster.namespace`, the weights claim is named from the weights settings, the network from the
# cluster's name, the compile cache's bucket from the project and cluster name, the image mirror's
# addresses from the project, region and cluster name where the mirror is on); a looked-up proxy-only
# subnet is no stack setting (the look-up's own inputs are).
def _mirror(config: StackConfig) -> MirrorAddresses | None:
    """The image mirror's addresses, as the composition passes them (stacks/program.py), or None when it is off."""
    if not config.startup.image_mirror.enabled:
        return None
    return MirrorAddresses.of(config.project, config.region, config.cluster.name)


PROVIDER_ARGS_OF_CONFIG: dict[str, Callable[[StackConfig], dict[str, Any]]] = {
    "pulumi:providers:gcp": gcp_provider_args
}
ARGS_OF_CONFIG: dict[type[pulumi.ComponentResource], Callable[[StackConfig], Any]] = {
    Cluster: cluster_args,
    ExistingCluster: existing_cluster_args,
    ImageMirror: lambda config: image_mirror_args(
        config, f"{node_service_account_id(config.cluster.name)}@{config.project}.iam.gserviceaccount.com", after=()
    ),
    HuggingFaceToken: lambda config: hf_token_args(
        config,
        config.cluster.namespace,
        cast("pulumi.Output[str]", ""),  # the token is no stack setting
    ),
    CrdReadiness: lambda config: platform_crds_args(config, config.cluster.namespace),
    B200Capacity: lambda config: capacity_args(config, after=()),
    ModelWeights: lambda config: weights_args(config, config.cluster.namespace, TOKEN_SECRET_NAME, TOKEN_SECRET_KEY),
    CompileCache: lambda config: compile_cache_args(
        config, config.cluster.namespace, "", f"{config.project}.svc.id.goog", after=()
    ),
    VllmEngine: lambda config: vllm_engine_args(
        config,
        config.cluster.namespace,
        local_model_path(config.weights.mount_path, config.weights.model),
        serving_volume_name(config.weights.model, config.weights.revision, config.zones, config.weights.size_gib),
        {COMPUTE_CLASS_SELECTOR: config.capacity.compute_class_name},
        after=(),
        mirror=_mirror(config),
        compile_cache=compile_cache_mount(config, bucket_name(config.project, config.cluster.name))
        if config.startup.compile_cache.enabled
        else None,
    ),
    EngineEnvSecret: lambda config: engine_env_secret_args(config, config.cluster.namespace),
    ServingNetworkPolicies: lambda config: network_policies_args(config, config.cluster.namespace),
    ClusterIpRouting: routing_args,
    InferenceGateway: lambda config: gateway_args(
        config, config.cluster.name, config.cluster.network.pods_cidr, config.cluster.namespace, mirror=_mirror(config)
    ),
    BenchmarkJob: lambda config: benchmark_args(config, _mirror(config)),
    MetricsAdapter: lambda config: metrics_adapter_args(config, "", f"{config.project}.svc.id.goog"),
    ServingAutoscaler: autoscaler_args,
    WarmCapacity: warm_capacity_args,
    ScaleSchedule: schedule_args,
    ServingMonitoring: lambda config: monitoring_args(
        config, download_job_name(config.weights.model, config.weights.revision), requires=()
    ),
}
