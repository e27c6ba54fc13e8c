"""The Autopilot cluster: node identity, egress of private nodes, a version GKE still offers."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping

from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from policies.graph import CLUSTER_TYPE, environments
from policies.rules.protection import PRODUCTION_ENVIRONMENTS
from policies.settings import config_schema
from policies.values import as_list, as_mapping, as_text, dig

ROUTER_NAT_TYPE = "gcp:compute/routerNat:RouterNat"
DEFAULT_NODE_ACCOUNT = "default"
FULL_GKE_VERSION = re.compile(r"^\d+\.\d+\.\d+-gke\.\d+$")


def _has_node_service_account(cluster_props: object) -> bool:
    """Whether the cluster names a node service account other than the Compute Engine default. The
    account's email is unknown at preview: only its presence is read then."""
    defaults = as_mapping(dig(cluster_props, "clusterAutoscaling", "autoProvisioningDefaults"))
    if "serviceAccount" not in defaults:
        return False
    return as_text(defaults["serviceAccount"]) != DEFAULT_NODE_ACCOUNT


def _dedicated_node_service_account(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != CLUSTER_TYPE or dig(args.props, "enableAutopilot") is not True:
        return
    if not _has_node_service_account(args.props):
        report(
            "the Autopilot cluster sets no clusterAutoscaling.autoProvisioningDefaults.serviceAccount: its nodes run "
            "as the Compute Engine default account"
        )


DEDICATED_NODE_SERVICE_ACCOUNT = ResourceValidationPolicy(
    name="LLM-GKE-001",
    display_name="Autopilot nodes run as a dedicated service account",
    description=(
        "An Autopilot cluster must set clusterAutoscaling.autoProvisioningDefaults.serviceAccount to a dedicated "
        "account holding roles/container.defaultNodeServiceAccount: otherwise nodes use the Compute Engine default "
        "account, which organisations often leave without roles, and node logs and metrics then vanish silently."
    ),
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_dedicated_node_service_account,
)


def _private_nodes_have_nat(args: StackValidationArgs, report: ReportViolation) -> None:
    nats = [resource for resource in args.resources if resource.resource_type == ROUTER_NAT_TYPE]
    for cluster in args.resources:
        if cluster.resource_type != CLUSTER_TYPE:
            continue
        if dig(cluster.props, "privateClusterConfig", "enablePrivateNodes") is True and not nats:
            report(
                "the cluster has private nodes but the stack declares no Cloud NAT (gcp.compute.RouterNat): the "
                "weight download cannot reach Hugging Face, nor nodes pull images from public registries",
                cluster.urn,
            )


PRIVATE_NODES_HAVE_NAT = StackValidationPolicy(
    name="LLM-GKE-002",
    display_name="Private nodes have Cloud NAT",
    description=(
        "A cluster with private nodes (privateClusterConfig.enablePrivateNodes) needs a Cloud Router with Cloud "
        "NAT in the stack: its nodes have no external IP, so without NAT the download Job hangs on Hugging Face "
        "and images from Docker Hub never pull."
    ),
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_private_nodes_have_nat,
)


def _minor_version_floor(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != CLUSTER_TYPE:
        return
    version = as_text(dig(args.props, "minMasterVersion"))
    if FULL_GKE_VERSION.match(version):
        report(
            f"minMasterVersion {version} pins a GKE patch; once the release channel stops offering it, creating "
            "the cluster fails with 'Master version ... is unsupported': give a minor like "
            f"{version.split('.')[0]}.{version.split('.')[1]}"
        )


MINOR_VERSION_FLOOR = ResourceValidationPolicy(
    name="LLM-GKE-003",
    display_name="The cluster version is a minor floor, not a pinned patch",
    description=(
        "minMasterVersion is sent as the initial cluster version: a full patch (1.34.0-gke.1626000) is refused "
        "once GKE retires it from the channel, a minor (1.34) resolves to a patch the channel offers."
    ),
    enforcement_level=EnforcementLevel.ADVISORY,
    validate=_minor_version_floor,
)


def _covers_every_address(blocks: list[str]) -> bool:
    networks = []
    for block in blocks:
        try:
            networks.append(ipaddress.ip_network(block, strict=False))
        except ValueError:
            continue
    collapsed = list(ipaddress.collapse_addresses(network for network in networks if network.version == 4))
    return ipaddress.IPv4Network("0.0.0.0/0") in collapsed


def control_plane_exposure(cluster_props: object) -> list[str]:
    """How a cluster's nodes or control plane can be reached from outside Google Cloud, in words."""
    problems = []
    if dig(cluster_props, "privateClusterConfig", "enablePrivateNodes") is not True:
        problems.append("its nodes have external IP addresses (privateClusterConfig.enablePrivateNodes is not true)")
    ip_endpoint_on = dig(cluster_props, "controlPlaneEndpointsConfig", "ipEndpointsConfig", "enabled") is not False
    authorized = dig(cluster_props, "masterAuthorizedNetworksConfig")
    if ip_endpoint_on and not isinstance(authorized, Mapping):
        problems.append("its control plane's IP endpoint accepts any address (no masterAuthorizedNetworksConfig)")
    elif ip_endpoint_on and isinstance(authorized, Mapping):
        blocks = [as_text(dig(block, "cidrBlock")) for block in as_list(authorized.get("cidrBlocks"))]
        if _covers_every_address(blocks):
            problems.append(
                "its authorized networks cover 0.0.0.0/0, so the control plane's IP endpoint accepts any address"
            )
        if authorized.get("gcpPublicCidrsAccessEnabled") is True:
            problems.append("its authorized networks admit every Google Cloud public IP (gcpPublicCidrsAccessEnabled)")
    return problems


def _production_control_plane_closed(args: StackValidationArgs, report: ReportViolation) -> None:
    production = set(PRODUCTION_ENVIRONMENTS.read(args.get_config()))
    environment = sorted(environments(args.resources) & production)
    if not environment:
        return
    for cluster in args.resources:
        if cluster.resource_type == CLUSTER_TYPE:
            for problem in control_plane_exposure(cluster.props):
                report(f"{environment[0]} cluster: {problem}", cluster.urn)


PRODUCTION_CONTROL_PLANE_CLOSED = StackValidationPolicy(
    name="LLM-GKE-004",
    display_name="Production nodes are private and the control plane's IP endpoint is not open to every address",
    description=(
        "In a production stack the cluster keeps private nodes (no external IPs), and its control plane's IP-based "
        "endpoint admits no outside address: authorized networks on with no block covering 0.0.0.0/0 and no "
        "gcpPublicCidrsAccessEnabled, or the IP endpoint off. pulumi up and kubectl need neither: they use the "
        "DNS-based endpoint, gated by IAM (GKE 'About network isolation'). Every environment preset closes it."
    ),
    enforcement_level=EnforcementLevel.ADVISORY,
    validate=_production_control_plane_closed,
    config_schema=config_schema(PRODUCTION_ENVIRONMENTS),
)


SERVICE_TYPE = "gcp:projects/service:Service"
PROJECT_IAM_MEMBER_TYPE = "gcp:projects/iAMMember:IAMMember"
SUBNETWORK_TYPE = "gcp:compute/subnetwork:Subnetwork"
CONTAINER_FILE_SYSTEM_API = "containerfilesystem.googleapis.com"
SERVICE_USAGE_CONSUMER = "roles/serviceusage.serviceUsageConsumer"


def image_streaming_gaps(resources: list[object], cluster_props: object) -> list[str]:
    """What the stack leaves out of image streaming's requirements for an Autopilot cluster it declares."""
    by_type: dict[str, list[object]] = {}
    for resource in resources:
        by_type.setdefault(getattr(resource, "resource_type", ""), []).append(resource)
    gaps = []
    services = {as_text(dig(getattr(item, "props", {}), "service")) for item in by_type.get(SERVICE_TYPE, [])}
    if CONTAINER_FILE_SYSTEM_API not in services:
        gaps.append(f"the stack does not enable the Container File System API ({CONTAINER_FILE_SYSTEM_API})")
    roles = {as_text(dig(getattr(item, "props", {}), "role")) for item in by_type.get(PROJECT_IAM_MEMBER_TYPE, [])}
    if _has_node_service_account(cluster_props) and SERVICE_USAGE_CONSUMER not in roles:
        gaps.append(f"the custom node service account is not granted {SERVICE_USAGE_CONSUMER}")
    if dig(cluster_props, "privateClusterConfig", "enablePrivateNodes") is True:
        for subnet in by_type.get(SUBNETWORK_TYPE, []):
            props = getattr(subnet, "props", {})
            # A proxy-only subnet (purpose REGIONAL_MANAGED_PROXY) holds no nodes.
            if as_text(dig(props, "purpose")) not in ("", "PRIVATE"):
                continue
            if dig(props, "privateIpGoogleAccess") is not True:
                name = as_text(dig(props, "name"))
                gaps.append(f"the nodes' subnet {name} has Private Google Access off".replace("  ", " "))
    return gaps


def _image_streaming_requirements(args: StackValidationArgs, report: ReportViolation) -> None:
    for cluster in args.resources:
        if cluster.resource_type != CLUSTER_TYPE or dig(cluster.props, "enableAutopilot") is not True:
            continue
        gaps = image_streaming_gaps(list(args.resources), cluster.props)
        if gaps:
            report(
                "image streaming cannot serve this cluster's nodes, so each pulls whole images before a container "
                f"starts (the whole multi-gigabyte vLLM image): {'; '.join(gaps)}",
                cluster.urn,
            )


IMAGE_STREAMING_REQUIREMENTS = StackValidationPolicy(
    name="LLM-GKE-005",
    display_name="Image streaming's requirements are met",
    description=(
        "Autopilot streams eligible images (Artifact Registry, Docker Hub) only when the project has the Container "
        "File System API (containerfilesystem.googleapis.com) on, the subnet of private nodes has Private Google "
        "Access, and a custom node service account holds roles/serviceusage.serviceUsageConsumer (GKE 'Use Image "
        "streaming to pull container images', requirements). Missing one, nothing fails: every new node silently "
        "pulls the whole multi-gigabyte vLLM image before the engine starts, on every cold start."
    ),
    enforcement_level=EnforcementLevel.ADVISORY,
    validate=_image_streaming_requirements,
)
