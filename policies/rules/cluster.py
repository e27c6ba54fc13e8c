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
