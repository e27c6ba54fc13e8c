"""The composition of the stack: typed config in, components declared, outputs out.

`__main__.py` calls `deploy()` under `pulumi up`; the offline render runs that same file under the
SDK's mocks.
"""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from components.cluster import Cluster, ClusterArgs
from components.hf_token import HuggingFaceToken, HuggingFaceTokenArgs
from stacks import loader
from stacks.config import RoutingMode, StackConfig

APP_NAME = "llm-serving"


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
            gateway_api=gateway,
            kubernetes_labels=kubernetes_labels(config),
        ),
        opts=pulumi.ResourceOptions(providers=[gcp_provider]),
    )
    in_namespace = pulumi.ResourceOptions(providers=[cluster.provider], depends_on=[cluster.namespace])
    HuggingFaceToken(
        "llm-hf-token",
        HuggingFaceTokenArgs(
            namespace=cluster.namespace.metadata.name, token=hf_token, labels=kubernetes_labels(config)
        ),
        opts=in_namespace,
    )

    return {
        "project": config.project,
        "region": config.region,
        "clusterName": cluster.cluster.name,
        "namespace": cluster.namespace.metadata.name,
        "getCredentials": pulumi.Output.concat(
            "gcloud container clusters get-credentials ",
            cluster.cluster.name,
            f" --region {config.region} --project {config.project}",
        ),
    }


def deploy() -> None:
    config, hf_token = loader.load()
    for key, value in build(config, hf_token).items():
        pulumi.export(key, value)
