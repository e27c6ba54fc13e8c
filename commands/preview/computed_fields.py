"""Inputs a provider keeps when the program stops setting them: Optional+Computed fields.

terraform-provider-google marks many fields `Optional: true, Computed: true`. Such a field that the
configuration leaves out takes the value in the state, so dropping it (a whole block, or one field)
plans no change: the cloud keeps the old setting while a naive diff shows an update. pulumi-gcp's
bridge plans through the same schema. The preview therefore reports a dropped field of this table
as "no change: the old value stays", says whether the program can state "off" explicitly, and what
to do by hand where it cannot.

Source: hashicorp/terraform-provider-google-beta@93c65b2d (2026-08-21, the 8.x line pulumi-gcp 10.x
wraps; the exact commit pulumi-gcp 10.2.0 builds from, its `upstream` submodule (pulumi/pulumi-gcp
.gitmodules) at tag v10.2.0, could not be read here), `google-beta/services/<service>/resource_*.go`,
the line of the field's schema entry. Only fields the
program sets are listed; every entry was read as `Optional: true` with `Computed: true`.
"""

from __future__ import annotations

from dataclasses import dataclass

from commands.engine.property_paths import parse_path

_BETA = "hashicorp/terraform-provider-google-beta@93c65b2d:google-beta/services"
_CLUSTER = f"{_BETA}/container/resource_container_cluster.go"


@dataclass(frozen=True)
class ComputedField:
    type: str
    path: str
    source: str
    # how the program states "off" so that the provider acts on it (None: the schema has no way)
    explicit_off: str | None = None
    # what to run by hand when there is no explicit off ({name} and {location} of the resource)
    by_hand: str | None = None


def _cluster(path: str, line: int, explicit_off: str | None = None, by_hand: str | None = None) -> ComputedField:
    return ComputedField("gcp:container/cluster:Cluster", path, f"{_CLUSTER}:{line}", explicit_off, by_hand)


def _compute(type_: str, path: str, resource: str, line: int) -> ComputedField:
    return ComputedField(type_, path, f"{_BETA}/compute/resource_compute_{resource}.go:{line}")


COMPUTED_FIELDS: tuple[ComputedField, ...] = (
    _cluster(
        "privateClusterConfig",
        2314,
        explicit_off=(
            "privateClusterConfig.enablePrivateNodes: false (components/cluster.py sends it; the provider updates "
            "DesiredDefaultEnablePrivateNodes in place, resource_container_cluster.go:4122-4136)"
        ),
    ),
    # No `enabled` field: an absent block is read from the state (expandMasterAuthorizedNetworksConfig, :6909).
    _cluster(
        "masterAuthorizedNetworksConfig",
        1790,
        by_hand=(
            "gcloud container clusters update {name} --location {location} --no-enable-master-authorized-networks, "
            "then pulumi refresh"
        ),
    ),
    _cluster("masterAuthorizedNetworksConfig.gcpPublicCidrsAccessEnabled", 76),
    _cluster("controlPlaneEndpointsConfig", 2254),
    _cluster("gatewayApiConfig", 2774, explicit_off="gatewayApiConfig.channel: CHANNEL_DISABLED (always sent)"),
    _cluster("monitoringConfig", 1588),
    _cluster("clusterAutoscaling", 777),
    _cluster("ipAllocationPolicy", 2061),
    _cluster("releaseChannel", 2544),
    _cluster("workloadIdentityConfig", 2449),
    _cluster("networkingMode", 2232),
    _cluster("subnetwork", 2028),
    _compute("gcp:compute/network:Network", "routingMode", "network", 265),
    _compute("gcp:compute/subnetwork:Subnetwork", "privateIpGoogleAccess", "subnetwork", 718),
    _compute("gcp:compute/subnetwork:Subnetwork", "purpose", "subnetwork", 731),
    _compute("gcp:compute/subnetwork:Subnetwork", "secondaryIpRanges", "subnetwork", 777),
    _compute("gcp:compute/disk:Disk", "accessMode", "disk", 504),
    _compute("gcp:compute/disk:Disk", "provisionedThroughput", "disk", 724),
    _compute("gcp:compute/disk:Disk", "size", "disk", 749),
    _compute("gcp:compute/disk:Disk", "deletionPolicy", "disk", 1043),
    _compute("gcp:compute/image:Image", "storageLocations", "image", 610),
    _compute("gcp:compute/image:Image", "deletionPolicy", "image", 662),
    _compute("gcp:compute/snapshot:Snapshot", "storageLocations", "snapshot", 329),
    _compute("gcp:compute/firewall:Firewall", "destinationRanges", "firewall", 290),
    _compute("gcp:compute/routerNat:RouterNat", "endpointTypes", "router_nat", 374),
)


def computed_fields_holding(resource_type: str, path: str) -> list[ComputedField]:
    """The entries whose field holds `path` (or is `path`), outermost first."""
    changed = parse_path(path)
    holding = [
        entry
        for entry in COMPUTED_FIELDS
        if entry.type == resource_type and parse_path(entry.path) == changed[: len(parse_path(entry.path))]
    ]
    return sorted(holding, key=lambda entry: len(parse_path(entry.path)))
