"""The Autopilot cluster: node identity, egress of private nodes, a version GKE still offers."""

from __future__ import annotations

import re

from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from policies.graph import CLUSTER_TYPE
from policies.values import as_mapping, as_text, dig

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
