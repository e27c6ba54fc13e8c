"""The composition of the stack: typed config in, components declared, outputs out.

`__main__.py` calls `deploy()` under `pulumi up`; the offline render runs that same file under the
SDK's mocks.
"""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from components.capacity import B200Capacity, B200CapacityArgs
from components.cluster import AuthorizedNetwork, Cluster, ClusterArgs
from components.gateway import GATEWAY_APIS, HEALTH_CHECK_RANGES, InferenceGateway, InferenceGatewayArgs
from components.hf_token import HuggingFaceToken, HuggingFaceTokenArgs
from components.metrics import KUBE_STATE_COMPONENTS
from components.network_policy import ServingNetworkPolicies, ServingNetworkPoliciesArgs
from components.routing import ClusterIpRouting, ClusterIpRoutingArgs
from components.vllm import PORT_NAME, VllmEngine, VllmEngineArgs
from components.weights import ModelWeights, ModelWeightsArgs
from stacks import loader
from stacks.config import RoutingMode, StackConfig
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


def build(config: StackConfig, hf_token: pulumi.Output[str]) -> dict[str, pulumi.Input[object]]:
    """Declare every resource of the stack and return the stack outputs."""
    gateway = config.routing.mode is RoutingMode.gateway
    gcp_provider = gcp.Provider(
        "gcp",
        project=config.project,
        region=config.region,
        default_labels=gcp_labels(config),
    )
    cluster = Cluster(
        "llm",
        ClusterArgs(
            project=config.project,
            region=config.region,
            cluster_name=config.cluster.name,
            release_channel=config.cluster.release_channel.value,
            min_master_version=config.cluster.min_master_version,
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
            extra_apis=GATEWAY_APIS if gateway else (),
            # The cluster's list replaces GKE's default packages: name the ones dashboards and alerts read.
            extra_monitoring_components=KUBE_STATE_COMPONENTS,
            kubernetes_labels=kubernetes_labels(config),
        ),
        opts=pulumi.ResourceOptions(providers=[gcp_provider]),
    )
    in_namespace = pulumi.ResourceOptions(providers=[cluster.provider], depends_on=[cluster.namespace])
    namespace = cluster.namespace.metadata.name
    token = HuggingFaceToken(
        "llm-hf-token",
        HuggingFaceTokenArgs(namespace=namespace, token=hf_token, labels=kubernetes_labels(config)),
        opts=in_namespace,
    )
    capacity = B200Capacity(
        "llm-capacity",
        B200CapacityArgs(
            compute_class_name=config.capacity.compute_class_name,
            sources=config.capacity.sources,
            zones=config.zones,
            gpu_driver_version=config.capacity.gpu_driver_version.value,
            labels=kubernetes_labels(config),
        ),
        opts=pulumi.ResourceOptions(providers=[cluster.provider]),
    )
    weights = ModelWeights(
        "llm-weights",
        ModelWeightsArgs(
            project=config.project,
            zones=config.zones,
            cluster_name=config.cluster.name,
            namespace=namespace,
            model=config.weights.model,
            revision=config.weights.revision,
            size_gib=config.weights.size_gib,
            throughput_mibps=config.weights.throughput_mibps,
            mount_path=config.weights.mount_path,
            downloader=config.weights.downloader,
            token_secret_name=token.secret.metadata.name,
            token_secret_key=token.secret_key,
            protect=config.weights_protected,
            labels={**kubernetes_labels(config), **DOWNLOAD_SELECTOR},
        ),
        opts=pulumi.ResourceOptions(providers=[gcp_provider, cluster.provider], depends_on=[cluster.namespace]),
    )
    engine = VllmEngine(
        "llm-vllm",
        VllmEngineArgs(
            name=config.routing.service_name,
            namespace=namespace,
            engine=config.engine,
            served_model_name=config.served_model_name,
            model_path=weights.model_path,
            weights_claim=weights.claim.metadata.name,
            weights_mount_path=config.weights.mount_path,
            replicas=config.initial_replicas,
            replicas_managed_elsewhere=config.replicas_managed_elsewhere,
            node_selector=capacity.node_selector,
            zones=config.zones,
            spot_capable=any(source.type == "spot" for source in config.capacity.sources),
            concurrency_per_pod=config.workload.concurrency_per_node,
            max_request_tokens=config.workload.max_prompt_tokens + config.workload.max_output_tokens,
            selector=serving_selector(config),
            labels=kubernetes_labels(config),
        ),
        opts=in_namespace,
    )

    ServingNetworkPolicies(
        "llm-network-policies",
        ServingNetworkPoliciesArgs(
            namespace=namespace,
            name=config.routing.service_name,
            serving_selector=serving_selector(config),
            serving_port=config.engine.port,
            download_selector=DOWNLOAD_SELECTOR,
            gateway_source_ranges=((config.routing.gateway.proxy_subnet_cidr, *HEALTH_CHECK_RANGES) if gateway else ()),
            labels=kubernetes_labels(config),
        ),
        opts=in_namespace,
    )

    outputs: dict[str, pulumi.Input[object]] = {
        "project": config.project,
        "region": config.region,
        "clusterName": cluster.cluster.name,
        "namespace": namespace,
        "getCredentials": pulumi.Output.concat(
            "gcloud container clusters get-credentials ",
            cluster.cluster.name,
            f" --region {config.region} --project {config.project}",
        ),
        "servedModelName": config.served_model_name,
    }
    if not gateway:
        routing = ClusterIpRouting(
            "llm-routing",
            ClusterIpRoutingArgs(
                service_name=config.routing.service_name,
                namespace=config.cluster.namespace,
                port=config.engine.port,
                target_port=PORT_NAME,
                selector=serving_selector(config),
                served_model_name=config.served_model_name,
                labels=kubernetes_labels(config),
            ),
            opts=in_namespace,
        )
        outputs["endpoint"] = routing.endpoint
        outputs["tryIt"] = routing.try_it
    else:
        gateway_config = config.routing.gateway
        inference_gateway = InferenceGateway(
            "llm-gateway",
            InferenceGatewayArgs(
                project=config.project,
                region=config.region,
                cluster_name=config.cluster.name,
                network=cluster.network.id,
                pods_cidr=config.cluster.network.pods_cidr,
                namespace=namespace,
                pool_name=config.routing.service_name,
                pod_labels=serving_selector(config),
                serving_port=config.engine.port,
                served_model_name=config.served_model_name,
                gateway_class=gateway_config.gateway_class.value,
                proxy_subnet_cidr=gateway_config.proxy_subnet_cidr,
                existing_proxy_subnet=gateway_config.existing_proxy_subnet,
                epp_chart_version=gateway_config.epp_chart_version,
                epp_cpu=gateway_config.epp_cpu,
                epp_memory=gateway_config.epp_memory,
                request_timeout_seconds=gateway_config.request_timeout_seconds,
                allow_external=gateway_config.allow_external,
                kubernetes_labels=kubernetes_labels(config),
            ),
            opts=pulumi.ResourceOptions(providers=[gcp_provider, cluster.provider]),
        )
        outputs["gatewayAddressCommand"] = inference_gateway.address_command
        outputs["tryIt"] = inference_gateway.try_it
    outputs |= build_operations(
        config,
        gcp_provider,
        cluster.cluster,
        cluster.provider,
        engine.deployment,
        weights.download.metadata.name,
        kubernetes_labels(config),
        gcp_labels(config),
        list(cluster.apis.values()),
    )
    return outputs


def deploy() -> None:
    config, hf_token = loader.load()
    for key, value in build(config, hf_token).items():
        pulumi.export(key, value)
