"""What a provider really does with an update or a delete that the engine shows: some inputs live
only in the state (the provider makes no API call when they alone change), and some reach the cloud
only under a condition the preview cannot see. The engine shows such a change like any other; the
preview says what happens in the cloud, each entry with the provider code it was read from.

Source: hashicorp/terraform-provider-google-beta@93c65b2d (the 8.x line pulumi-gcp 10.x wraps),
`google-beta/...` paths below.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from commands.engine.property_paths import path_touches

_BETA = "hashicorp/terraform-provider-google-beta@93c65b2d:google-beta"
_CLUSTER = f"{_BETA}/services/container/resource_container_cluster.go"
STATE_ONLY = "state only, no API call"


def _version(text: Any) -> tuple[int, ...] | None:
    """hashicorp/go-version's order for the versions GKE uses (`1.34`, `1.34.1-gke.100`): the numeric
    segments, missing ones 0; a `-gke.N` suffix is a pre-release, below the bare version."""
    core, _, pre = str(text).partition("-")
    try:
        numbers = [int(part) for part in core.split(".")]
    except ValueError:
        return None
    numbers += [0] * (3 - len(numbers))
    suffix = pre.rsplit(".", 1)[-1] if pre else ""
    return (*numbers, 0 if pre else 1, int(suffix) if suffix.isdigit() else 0)


def _lowest_running(floor: Any) -> tuple[int, ...] | None:
    """The lowest version, in go-version's order, a control plane can run once it met `floor`: GKE
    resolves a bare version (`1.35`) to one of its `-gke.N` builds, which go-version puts below it."""
    version = _version(floor)
    if version is None or "-" in str(floor):
        return version
    return (*version[:3], 0, 0)


def raises_master_version(old: Any, new: Any) -> bool:
    """Whether a new minMasterVersion may upgrade the control plane: a floor is set, above every version a control
    plane that met the old floor can run (else the provider sends no DesiredMasterVersion)."""
    if not isinstance(new, str) or not new:
        return False
    before, after = _lowest_running(old), _version(new)
    return before is None or after is None or after > before


def _master_version(old: Any, new: Any) -> str:
    if not isinstance(new, str) or not new:
        # The update skips an unset floor: 'If set to "", skip this step- any master version satisfies
        # that minimum.' (the same Update function)
        return f"{STATE_ONLY}: without a floor the provider sends no master upgrade; the cluster keeps its version"
    if not raises_master_version(old, new):
        return (
            f"{STATE_ONLY}: the control plane already runs {old} or newer (GKE does not downgrade it), and the "
            f"provider upgrades it only to a floor above the version it runs, which {new} is not"
        )
    return (
        f"upgrades the control plane to {new} if it runs an older version (UpdateCluster DesiredMasterVersion; "
        "GKE must offer it in the release channel; nodes follow by auto-upgrade), else changes the state only"
    )


@dataclass(frozen=True)
class Effect:
    type: str
    path: str
    source: str
    # old value, new value -> what happens
    says: Callable[[Any, Any], str]


UPDATE_EFFECTS: tuple[Effect, ...] = (
    # only a floor above master_version sends DesiredMasterVersion
    Effect("gcp:container/cluster:Cluster", "minMasterVersion", f"{_CLUSTER}:4916-4956", _master_version),
    # sent as DesiredDefaultEnablePrivateNodes, which the GKE API gives as "whether future created nodes have private
    # IP addresses only" (ClusterUpdate, GKE API reference): the nodes that run keep their addresses
    Effect(
        "gcp:container/cluster:Cluster",
        "privateClusterConfig.enablePrivateNodes",
        f"{_CLUSTER}:4122-4136; GKE API ClusterUpdate.desiredDefaultEnablePrivateNodes",
        lambda old, new: (
            "sets the cluster's default for nodes created from then on (UpdateCluster "
            "DesiredDefaultEnablePrivateNodes, 'whether future created nodes have private IP addresses only'): the "
            "running A4 nodes keep "
            f"{'internal addresses only' if old else 'their external addresses'} until they are replaced (a Spot "
            "preemption, a Flex-start recycling, an upgrade); whether GKE recreates them sooner is not verified here"
        ),
    ),
    # a provider-side guard, read only by Delete
    Effect("gcp:container/cluster:Cluster", "deletionProtection", f"{_CLUSTER}:344,5889", lambda old, new: STATE_ONLY),
    # clientSideFields: an update that changes deletion_policy alone cancels the API call
    Effect(
        "gcp:compute/disk:Disk",
        "deletionPolicy",
        f"{_BETA}/services/compute/resource_compute_disk.go:1449-1461",
        lambda old, new: STATE_ONLY,
    ),
    Effect(
        "gcp:compute/image:Image",
        "deletionPolicy",
        f"{_BETA}/services/compute/resource_compute_image.go:971-982",
        lambda old, new: STATE_ONLY,
    ),
    Effect(
        "gcp:projects/service:Service",
        "disableOnDestroy",
        f"{_BETA}/services/resourcemanager/resource_google_project_service.go:339",
        lambda old, new: STATE_ONLY,
    ),
)


def update_effect(resource_type: str, path: str, old: Any, new: Any) -> tuple[str, str] | None:
    """What the provider does with one changed input, and the source; None for a plain API update."""
    for effect in UPDATE_EFFECTS:
        if effect.type == resource_type and path_touches(effect.path, path):
            return effect.says(old, new), effect.source
    return None


def delete_effect(record: dict[str, Any]) -> tuple[str, str] | None:
    """What the provider does with a delete the engine shows, when it is not a delete in the cloud
    (deletionPolicy ABANDON is a warning of its own, `risks.py`)."""
    inputs = record["inputs"]
    if record["type"] == "gcp:projects/service:Service" and inputs.get("disableOnDestroy") is not True:
        return (
            f"removed from the state only: {inputs.get('service')} stays enabled (disableOnDestroy is not true)",
            f"{_BETA}/services/resourcemanager/resource_google_project_service.go:339-343",
        )
    return None
