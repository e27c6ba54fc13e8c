"""The Autopilot cluster and its network."""

from __future__ import annotations

import ipaddress
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from common.gke_versions import (
    B200_MIN_GKE_VERSION,
    COMPUTE_CLASS_MIN_GKE_VERSION,
    DEFAULT_MIN_MASTER_VERSION,
    GKE_MINOR_PATTERN,
    GKE_VERSION_PATTERN,
    INFERENCE_POOL_MIN_GKE_VERSION,
    satisfies_gke_minimum,
)
from common.grammars import DNS_1123_LABEL
from policies.vpc_ranges import ALLOWED_RANGES_TEXT, is_vpc_range
from stacks.config.base import ConfigModel
from stacks.config.quoting import ipv4_network, quote

# Namespaces the stack may not create for itself. The stack declares `cluster.namespace` as its own Namespace object
# (created by `pulumi up`, deleted by `pulumi destroy`), so a namespace every cluster already has is refused too,
# `default` included: pulumi-kubernetes creates objects client-side since v4.29.0
# (https://github.com/pulumi/pulumi-kubernetes/pull/2926), so creating an existing namespace fails with AlreadyExists,
# and the API server's NamespaceLifecycle admission refuses to delete default, kube-system and kube-public. -
# Kubernetes: the initial namespaces default, kube-system, kube-public, kube-node-lease, and "avoid   creating
# namespaces with the prefix kube-, it is reserved for Kubernetes system namespaces"
# (kubernetes.io/docs/concepts/overview/working-with-objects/namespaces/). - GKE: its managed namespaces are gke-*
# (gke-gmp-system, gke-managed-*, gke-connect, ...); Autopilot's   GKE Warden denies writes there ("denied by
# managed-namespaces-limitation: the namespace   gke-gmp-system is managed", seen in tailscale/tailscale#9475 and
# gitlab-org/charts/gitlab#5007 for   kube-system). Managed Service for Prometheus runs in gmp-system and gmp-public on
# Standard clusters;   Config Sync, Policy Controller and Config Connector install config-management-system,
# config-management-monitoring, resource-group-system, gatekeeper-system and cnrm-system.   The full list of GKE-managed
# namespaces was not found in one GKE document; this list is from those   product docs and the errors above (read
# 2026-11).
RESERVED_NAMESPACES = frozenset(
    {
        "default",
        "gmp-system",
        "gmp-public",
        "config-management-system",
        "config-management-monitoring",
        "resource-group-system",
        "gatekeeper-system",
        "cnrm-system",
    }
)
RESERVED_NAMESPACE_PREFIXES = ("kube-", "gke-")

# The IPv4 ranges a VPC-native cluster may use: policies/vpc_ranges.py (shared with the policy pack).


def namespace_problem(value: str) -> str:
    if value in RESERVED_NAMESPACES or value.startswith(RESERVED_NAMESPACE_PREFIXES):
        return (
            "is a namespace Kubernetes or GKE owns (default, kube-*, gke-*, gmp-*, add-on namespaces); "
            "the stack creates and deletes its namespace, so name one of its own, like llm-serving"
        )
    return ""


class ReleaseChannel(StrEnum):
    RAPID = "RAPID"
    REGULAR = "REGULAR"
    STABLE = "STABLE"


class NetworkConfig(ConfigModel):
    """Custom-mode VPC with one subnet; pods and services on secondary ranges (VPC-native)."""

    subnet_cidr: str = Field(
        default="10.0.0.0/20",
        description="Primary range of the subnet (node addresses); RFC 1918 or a range GKE accepts beyond it.",
    )
    pods_cidr: str = Field(
        default="10.4.0.0/14",
        description=(
            "Secondary range for Pod addresses (VPC-native); must hold a /24 per node: the A4 nodes at the replica "
            "ceiling, the nodes warmCapacity holds, and the CPU nodes (4, and one per endpoint-picker standby)."
        ),
    )
    services_cidr: str = Field(
        default="10.8.0.0/20", description="Secondary range for Service (ClusterIP) addresses; at least a /27."
    )

    @field_validator("subnet_cidr", "pods_cidr", "services_cidr")
    @classmethod
    def _vpc_range(cls, value: str) -> str:
        network = ipv4_network(value, "10.0.0.0/20")
        if not is_vpc_range(str(network)):
            raise ValueError(
                f"{quote(value)} is not a range GKE accepts for a VPC-native cluster; allowed: {ALLOWED_RANGES_TEXT}"
            )
        return value

    @model_validator(mode="after")
    def _no_overlap(self) -> NetworkConfig:
        ranges = {"subnetCidr": self.subnet_cidr, "podsCidr": self.pods_cidr, "servicesCidr": self.services_cidr}
        items = list(ranges.items())
        for index, (key, cidr) in enumerate(items):
            for other_key, other in items[index + 1 :]:
                if ipaddress.IPv4Network(cidr).overlaps(ipaddress.IPv4Network(other)):
                    raise ValueError(f"{key} {cidr} overlaps {other_key} {other}; the ranges must be disjoint")
        return self


class AuthorizedNetwork(ConfigModel):
    """A CIDR block allowed to reach the control plane's IP-based endpoints."""

    cidr_block: Annotated[
        str, Field(description="IPv4 CIDR block allowed to reach the control plane's IP-based endpoints.")
    ]
    display_name: Annotated[
        str,
        Field(pattern=r"^[\x20-\x7e]{1,64}$", description="A label for the block: 1-64 printable ASCII characters."),
    ]

    @field_validator("cidr_block")
    @classmethod
    def _ipv4_cidr(cls, value: str) -> str:
        ipv4_network(value, "203.0.113.0/24")
        return value


# What `existing: true` keeps: the keys that name the cluster and the namespace of the serving layer.
EXISTING_CLUSTER_KEYS = ("existing", "name", "namespace")


# GKE "Maintenance windows and exclusions": a window must give at least 48 hours of maintenance
# availability in any 32-day rolling period, with at least 4 contiguous hours (read as quoted in the
# GKE docs; the API refuses less). The window's first occurrence is a fixed past Saturday in UTC.
MAINTENANCE_MIN_HOURS = 4
MAINTENANCE_MIN_HOURS_PER_32_DAYS = 48
MAINTENANCE_ANCHOR = "2026-01-03"  # a Saturday
RRULE_DAYS = {"mon": "MO", "tue": "TU", "wed": "WE", "thu": "TH", "fri": "FR", "sat": "SA", "sun": "SU"}


class MaintenanceWindow(ConfigModel):
    """When GKE may upgrade the control plane and the nodes (the recurring maintenance window): auto-upgrades wait for
    it; GKE keeps emergency upgrades outside it, and GPU host maintenance, Spot preemption and Flex-start recycling
    ignore it (GKE "Maintenance windows and exclusions")."""

    days: Annotated[list[Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]], Field(min_length=1)] = Field(
        default=["sat", "sun"], description="Days the window opens (UTC), each listed once."
    )
    start: Annotated[str, Field(pattern=r"^([01]\d|2[0-3]):[0-5]\d$")] = Field(
        default="00:00", description="Start time, HH:MM UTC."
    )
    hours: Annotated[int, Field(ge=MAINTENANCE_MIN_HOURS, le=24)] = Field(
        default=6, description="Length in hours, 4-24 (GKE needs at least 4 contiguous hours)."
    )

    @model_validator(mode="after")
    def _enough_availability(self) -> MaintenanceWindow:
        if len(set(self.days)) != len(self.days):
            raise ValueError("days: each day listed once")
        # The fewest occurrences any 32-day period holds: 4 full weeks plus 4 days.
        per_32_days = len(self.days) * 4 * self.hours
        if per_32_days < MAINTENANCE_MIN_HOURS_PER_32_DAYS:
            raise ValueError(
                f"{len(self.days)} day(s) x {self.hours} h gives {per_32_days} h in some 32-day period; GKE needs at "
                f"least {MAINTENANCE_MIN_HOURS_PER_32_DAYS} h: add days or hours"
            )
        return self

    def recurring_window(self) -> tuple[str, str, str]:
        """(start_time, end_time, recurrence) of google_container_cluster maintenance_policy.recurring_window."""
        hour, minute = (int(part) for part in self.start.split(":"))
        start = datetime.fromisoformat(MAINTENANCE_ANCHOR).replace(hour=hour, minute=minute, tzinfo=UTC)
        end = start + timedelta(hours=self.hours)
        stamp = "%Y-%m-%dT%H:%M:%SZ"
        days = ",".join(RRULE_DAYS[day] for day in self.days)
        return start.strftime(stamp), end.strftime(stamp), f"FREQ=WEEKLY;BYDAY={days}"


class ClusterConfig(ConfigModel):
    """The GKE Autopilot cluster: name, release channel and version floor, namespace, network and
    control-plane access; or, with `existing`, the cluster the serving layer goes into."""

    existing: bool = Field(
        default=False,
        description=(
            "Deploy the serving layer into the existing Autopilot cluster `name` in `region` instead of "
            "creating one: no cluster, network, NAT or node service account is declared; the Kubernetes provider "
            "comes from a look-up of the cluster, whose Autopilot mode, GKE version, Workload Identity pool and "
            "Managed Prometheus are checked. The other cluster keys then have no effect and are refused."
        ),
    )
    name: Annotated[str, Field(pattern=r"^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$")] = Field(
        default="llm-serving",
        description=(
            "GKE cluster name, also the prefix of the VPC, subnet, router, NAT, node service account "
            "and weight disk names: 1-40 lower-case letters, digits and hyphens, a letter first. With "
            "`existing`: the cluster to deploy into."
        ),
    )
    release_channel: ReleaseChannel = Field(
        default=ReleaseChannel.REGULAR,
        description="Presets: RAPID in dev (newest features first), REGULAR in staging and prod (in the SLA, "
        "and it offers 1.34, the minor every feature the stack uses needs).",
    )
    min_master_version: str | None = Field(
        default=None,
        description="null (the default): the cluster is created at the release channel's default version. A "
        "minor like 1.34 or a full GKE version pins it: sent as the initial cluster version, so creation fails "
        "once the channel no longer offers it (terraform-provider-google sends min_master_version as "
        "initialClusterVersion); plan.md says which applies.",
    )
    maintenance_window: MaintenanceWindow = Field(
        default=MaintenanceWindow(),
        description="The recurring window GKE auto-upgrades in (default Saturday and Sunday 00:00-06:00 UTC); not "
        "emergency upgrades, GPU host maintenance, Spot preemption nor Flex-start recycling.",
    )
    deletion_protection: bool | None = Field(
        default=None, description="Defaults to the environment preset: on in prod, off elsewhere."
    )
    namespace: Annotated[str, Field(pattern=DNS_1123_LABEL)] = Field(
        default="llm-serving",
        description=(
            "Kubernetes namespace the stack creates for every workload it declares (RFC 1123 label: may start "
            "with a digit); not one Kubernetes, GKE or the stack itself already uses (default, kube-*, gke-*, "
            "custom-metrics with autoscaling, ...)."
        ),
    )
    network: NetworkConfig = Field(default=NetworkConfig(), description="The VPC-native address ranges.")
    private_nodes: bool = Field(
        default=True,
        description="Nodes without external IPs; Cloud NAT gives them egress to Hugging Face and registries.",
    )
    authorized_networks: Annotated[list[AuthorizedNetwork] | None, Field(max_length=50)] = Field(
        default=None,
        description="Control-plane authorized networks of the IP-based endpoints; [] (every preset) allows no "
        "outside range, null leaves them off when the cluster is created (on a running cluster null changes nothing: "
        "the provider has no explicit off, see docs/preview.md). pulumi up and kubectl reach the API through the "
        "DNS-based endpoint (IAM), which they do not gate.",
    )

    @field_validator("namespace")
    @classmethod
    def _own_namespace(cls, value: str) -> str:
        problem = namespace_problem(value)
        if problem:
            raise ValueError(f"{quote(value)} {problem}")
        return value

    @field_validator("min_master_version")
    @classmethod
    def _version_floor(cls, value: str | None) -> str | None:
        if value is None:
            return value
        if not (GKE_MINOR_PATTERN.match(value) or GKE_VERSION_PATTERN.match(value)):
            raise ValueError(
                f"{quote(value)} is not a GKE version; allowed: a minor like {DEFAULT_MIN_MASTER_VERSION} "
                f"or a full version like {INFERENCE_POOL_MIN_GKE_VERSION}"
            )
        for minimum, feature in (
            (B200_MIN_GKE_VERSION, "B200 (A4) nodes"),
            (COMPUTE_CLASS_MIN_GKE_VERSION, "custom ComputeClasses"),
        ):
            if not satisfies_gke_minimum(value, minimum):
                raise ValueError(f"{quote(value)} is older than {minimum}, the first GKE version with {feature}")
        return value
