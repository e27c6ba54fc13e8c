"""The whole stack as stack policies see it: compute classes, the weights behind a mount, the environment.

Stack policies get every resource of the stack (`PolicyResource`: type, props, name, opts); these
helpers resolve the references between them (a pod's compute class, a claim's storage class).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from policies.kubernetes import (
    ACCELERATOR_LABEL,
    COMPUTE_CLASS_LABEL,
    PRIORITY_SPOT,
    SPOT_LABEL,
    ZONE_LABELS,
    PodTemplate,
    metadata_name,
    pod_template,
)
from policies.values import as_list, as_mapping, as_text, dig

B200 = "nvidia-b200"
A4_MACHINE_TYPE = "a4-highgpu-8g"
# components/hardware.py B200_GPUS_PER_NODE: the policy pack may not import components/ (it checks
# what they declare), so it keeps its own copy of this platform fact.
B200_GPUS_PER_POD = 8
COMPUTE_CLASS_TYPE = "kubernetes:cloud.google.com/v1:ComputeClass"
DISK_TYPE = "gcp:compute/disk:Disk"
STORAGE_CLASS_TYPE = "kubernetes:storage.k8s.io/v1:StorageClass"
PERSISTENT_VOLUME_TYPE = "kubernetes:core/v1:PersistentVolume"
CLAIM_TYPE = "kubernetes:core/v1:PersistentVolumeClaim"
CLUSTER_TYPE = "gcp:container/cluster:Cluster"
ENVIRONMENT_LABEL = "llm-serving/environment"
VOLUME_HANDLE_ZONE = re.compile(r"/zones/([a-z0-9-]+)/")
# the Persistent Disk CSI handle of a disk that has a copy in several zones
MULTI_ZONE = "multi-zone"


def priority_gpu_type(priority: Mapping[str, Any]) -> str | None:
    """The GPU a ComputeClass priority provisions (A4 machines only come with B200)."""
    gpu_type = as_text(dig(priority, "gpu", "type"))
    if gpu_type:
        return gpu_type
    if as_text(priority.get("machineType")).startswith("a4-") or priority.get("machineFamily") == "a4":
        return B200
    return None


@dataclass(frozen=True)
class ComputeClass:
    resource: Any
    name: str
    priorities: list[Mapping[str, Any]]
    default_zones: frozenset[str] | None

    @property
    def gpu_types(self) -> set[str]:
        return {gpu for gpu in map(priority_gpu_type, self.priorities) if gpu}

    @property
    def has_spot(self) -> bool:
        return any(priority.get(PRIORITY_SPOT) is True for priority in self.priorities)

    @property
    def zones(self) -> set[str] | None:
        """Zones its nodes can be created in; None when any priority may use any zone of the region."""
        zones: set[str] = set()
        for priority in self.priorities:
            pinned = {as_text(zone) for zone in as_list(dig(priority, "location", "zones"))}
            if not pinned and self.default_zones is None:
                return None
            zones |= pinned or self.default_zones or set()
        return zones or None


def compute_class_of(resource_type: str, props: Mapping[str, Any], resource: Any = None) -> ComputeClass | None:
    if resource_type != COMPUTE_CLASS_TYPE:
        return None
    spec = as_mapping(props.get("spec"))
    defaults = {as_text(zone) for zone in as_list(dig(spec, "priorityDefaults", "location", "zones"))}
    priorities = [as_mapping(priority) for priority in as_list(spec.get("priorities"))]
    return ComputeClass(resource, metadata_name(props), priorities, frozenset(defaults) if defaults else None)


def compute_classes(resources: Sequence[Any]) -> dict[str, ComputeClass]:
    classes = (compute_class_of(resource.resource_type, resource.props, resource) for resource in resources)
    return {compute_class.name: compute_class for compute_class in classes if compute_class}


def pod_templates(resources: Sequence[Any]) -> Iterator[tuple[Any, PodTemplate]]:
    for resource in resources:
        template = pod_template(resource.resource_type, resource.props)
        if template is not None:
            yield resource, template


def pod_gpu_types(template: PodTemplate, classes: Mapping[str, ComputeClass]) -> set[str] | None:
    """GPU types a pod can land on: from its accelerator selector, else its compute class
    (empty: selects no GPU at all; None: its compute class is not declared in this stack)."""
    accelerators = template.selector_values(ACCELERATOR_LABEL)
    if accelerators:
        return accelerators
    types: set[str] = set()
    for class_name in template.selector_values(COMPUTE_CLASS_LABEL) or ():
        if class_name not in classes:
            return None
        types |= classes[class_name].gpu_types
    return types


def selected_classes(template: PodTemplate, classes: Mapping[str, ComputeClass]) -> list[ComputeClass]:
    names = template.selector_values(COMPUTE_CLASS_LABEL) or set()
    return [classes[name] for name in sorted(names) if name in classes]


def may_run_on_spot(template: PodTemplate, classes: Mapping[str, ComputeClass]) -> bool:
    spot_selected = template.selector_values(SPOT_LABEL) == {"true"}
    return spot_selected or any(compute_class.has_spot for compute_class in selected_classes(template, classes))


def runs_only_on_spot(template: PodTemplate, classes: Mapping[str, ComputeClass]) -> bool:
    """Every node the pod can land on is a Spot node (a Spot selector, or only Spot priorities)."""
    if template.selector_values(SPOT_LABEL) == {"true"}:
        return True
    selected = selected_classes(template, classes)
    return bool(selected) and all(
        compute_class.priorities and all(priority.get(PRIORITY_SPOT) is True for priority in compute_class.priorities)
        for compute_class in selected
    )


def class_zones(template: PodTemplate, classes: Mapping[str, ComputeClass]) -> set[str] | None:
    """Zones the compute classes a pod selects create nodes in; None when nothing pins them."""
    zones: set[str] = set()
    for compute_class in selected_classes(template, classes):
        if compute_class.zones is None:
            return None
        zones |= compute_class.zones
    return zones or None


@dataclass(frozen=True)
class WeightLink:
    """One resource behind a pod's weights volume, the zones it exists in, and whether deleting
    it deletes the weights (a Retain volume, its claim and a storage class do not)."""

    resource: Any
    kind: str
    zones: frozenset[str] | None
    holds_weights: bool


def _zones_of_terms(terms: Any) -> set[str]:
    zones: set[str] = set()
    for term in as_list(terms):
        for expression in [*as_list(dig(term, "matchExpressions")), *as_list(dig(term, "matchLabelExpressions"))]:
            if dig(expression, "key") in ZONE_LABELS:
                zones.update(as_text(value) for value in as_list(dig(expression, "values")))
    return zones


def _named(resources: Sequence[Any], resource_type: str, name: str) -> Any:
    matches = (resource for resource in resources if resource.resource_type == resource_type)
    return next((resource for resource in matches if name and metadata_name(resource.props) == name), None)


def _zone_of(disk: Any) -> frozenset[str] | None:
    zone = as_text(disk.props.get("zone"))
    return frozenset({zone}) if zone else None


def claim_named(resources: Sequence[Any], name: str) -> Any:
    return _named(resources, CLAIM_TYPE, name)


def weights_links(resources: Sequence[Any], claim_name: str) -> list[WeightLink]:
    """The claim a pod mounts its weights from, then its static volume and the disks behind the
    volume handle, or the storage class that provisions it."""
    claim = claim_named(resources, claim_name)
    if claim is None:
        return []
    spec = as_mapping(claim.props.get("spec"))
    volume = _named(resources, PERSISTENT_VOLUME_TYPE, as_text(spec.get("volumeName")))
    if volume is not None:
        volume_spec = as_mapping(volume.props.get("spec"))
        deletes = volume_spec.get("persistentVolumeReclaimPolicy") == "Delete"
        handle = as_text(dig(volume_spec, "csi", "volumeHandle"))
        zones = _zones_of_terms(dig(volume_spec, "nodeAffinity", "required", "nodeSelectorTerms"))
        zones |= set(VOLUME_HANDLE_ZONE.findall(handle)) - {MULTI_ZONE}
        disk_name = handle.rsplit("/", 1)[-1]
        disks = [
            WeightLink(disk, "disk", _zone_of(disk), True)
            for disk in resources
            if disk.resource_type == DISK_TYPE and (as_text(disk.props.get("name")) or disk.name) == disk_name
        ]
        return [
            WeightLink(claim, "claim", None, deletes),
            WeightLink(volume, "persistent volume", frozenset(zones) if zones else None, deletes),
            *disks,
        ]
    storage_class = _named(resources, STORAGE_CLASS_TYPE, as_text(spec.get("storageClassName")))
    if storage_class is None:
        return [WeightLink(claim, "claim", None, False)]
    zones = _zones_of_terms(storage_class.props.get("allowedTopologies"))
    # a dynamically provisioned disk goes with its claim unless the class retains it
    deletes = storage_class.props.get("reclaimPolicy", "Delete") == "Delete"
    return [
        WeightLink(claim, "claim", None, deletes),
        WeightLink(storage_class, "storage class", frozenset(zones) if zones else None, False),
    ]


def environments(resources: Sequence[Any]) -> set[str]:
    """The environment names the program labels the stack with: the gcp provider's defaultLabels
    `environment` and the Namespace label `llm-serving/environment`."""
    found: set[str] = set()
    for resource in resources:
        if resource.resource_type == "pulumi:providers:gcp":
            labels = resource.props.get("defaultLabels")
            # provider inputs carry object-valued settings JSON-encoded
            if isinstance(labels, str):
                try:
                    labels = json.loads(labels or "{}")
                except (ValueError, RecursionError):
                    labels = {}
            found.add(as_text(as_mapping(labels).get("environment")))
        elif resource.resource_type == "kubernetes:core/v1:Namespace":
            found.add(as_text(dig(resource.props, "metadata", "labels", ENVIRONMENT_LABEL)))
    return found - {""}
