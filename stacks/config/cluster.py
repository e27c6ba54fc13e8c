"""The Autopilot cluster and its network."""

from __future__ import annotations

import ipaddress
from enum import StrEnum
from typing import Annotated

from pydantic import Field, field_validator, model_validator

from stacks.config.base import ConfigModel
from stacks.config.gke_versions import (
    B200_MIN_GKE_VERSION,
    COMPUTE_CLASS_MIN_GKE_VERSION,
    DEFAULT_MIN_MASTER_VERSION,
    GKE_MINOR_PATTERN,
    GKE_VERSION_PATTERN,
    INFERENCE_POOL_MIN_GKE_VERSION,
    satisfies_gke_minimum,
)
from stacks.config.grammars import DNS_1123_LABEL
from stacks.config.quoting import quote


class ReleaseChannel(StrEnum):
    RAPID = "RAPID"
    REGULAR = "REGULAR"
    STABLE = "STABLE"


class NetworkConfig(ConfigModel):
    """Custom-mode VPC with one subnet; pods and services on secondary ranges (VPC-native)."""

    subnet_cidr: str = Field(
        default="10.0.0.0/20", description="Primary range of the subnet (node addresses); a private IPv4 CIDR block."
    )
    pods_cidr: str = Field(
        default="10.4.0.0/14",
        description=(
            "Secondary range for Pod addresses (VPC-native); must hold a /24 per node, A4 and CPU nodes alike."
        ),
    )
    services_cidr: str = Field(
        default="10.8.0.0/20", description="Secondary range for Service addresses; at least a /27."
    )

    @field_validator("subnet_cidr", "pods_cidr", "services_cidr")
    @classmethod
    def _private_cidr(cls, value: str) -> str:
        try:
            network = ipaddress.IPv4Network(value)
        except ValueError as error:
            raise ValueError(f"{quote(value)} is not an IPv4 CIDR block like 10.0.0.0/20 ({error})") from None
        if not network.is_private:
            raise ValueError(f"{quote(value)} is not a private (RFC 1918) range")
        return value

    @model_validator(mode="after")
    def _no_overlap(self) -> NetworkConfig:
        ranges = {
            "subnetCidr": self.subnet_cidr,
            "podsCidr": self.pods_cidr,
            "servicesCidr": self.services_cidr,
        }
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
        try:
            ipaddress.IPv4Network(value)
        except ValueError as error:
            raise ValueError(f"{quote(value)} is not an IPv4 CIDR block like 203.0.113.0/24 ({error})") from None
        return value


class ClusterConfig(ConfigModel):
    """The GKE Autopilot cluster: name, release channel and version floor, namespace, network and
    control-plane access."""

    name: Annotated[str, Field(pattern=r"^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$")] = Field(
        default="llm-serving",
        description=(
            "GKE cluster name, also the prefix of the VPC, subnet, router, NAT, node service account "
            "and weight disk names: 1-40 lower-case letters, digits and hyphens, a letter first."
        ),
    )
    release_channel: ReleaseChannel = Field(
        default=ReleaseChannel.REGULAR,
        description="Presets: RAPID in dev (newest features first), REGULAR in staging and prod (in the SLA, "
        "and it offers 1.34, the minor every feature the stack uses needs).",
    )
    min_master_version: str = Field(
        default=DEFAULT_MIN_MASTER_VERSION,
        description="A minor floor like 1.34 (GKE picks a patch the channel offers) or a full GKE version.",
    )
    deletion_protection: bool | None = Field(
        default=None, description="Defaults to the environment preset: on in prod, off elsewhere."
    )
    namespace: Annotated[str, Field(pattern=DNS_1123_LABEL)] = Field(
        default="llm-serving",
        description=(
            "Kubernetes namespace of every workload the stack declares (RFC 1123 label: may start with a digit)."
        ),
    )
    network: NetworkConfig = Field(default=NetworkConfig(), description="The VPC-native address ranges.")
    private_nodes: bool = Field(
        default=True,
        description="Nodes without external IPs; Cloud NAT gives them egress to Hugging Face and registries.",
    )
    authorized_networks: Annotated[list[AuthorizedNetwork] | None, Field(max_length=50)] = Field(
        default=None,
        description="Control-plane authorized networks of the IP-based endpoints; null turns them off, [] allows "
        "no outside range. pulumi up reaches the API through the DNS-based endpoint (IAM), which they do not gate.",
    )

    @field_validator("min_master_version")
    @classmethod
    def _version_floor(cls, value: str) -> str:
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
