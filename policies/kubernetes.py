"""Kubernetes workloads as the policies see them: pod templates, selectors, GPU requests."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from policies.values import as_list, as_mapping, as_number, as_text, dig

GPU_RESOURCE = "nvidia.com/gpu"
ACCELERATOR_LABEL = "cloud.google.com/gke-accelerator"
ACCELERATOR_COUNT_LABEL = "cloud.google.com/gke-accelerator-count"
COMPUTE_CLASS_LABEL = "cloud.google.com/compute-class"
SPOT_LABEL = "cloud.google.com/gke-spot"
FLEX_START_LABEL = "cloud.google.com/gke-flex-start"
RESERVATION_NAME_LABEL = "cloud.google.com/reservation-name"
RESERVATION_AFFINITY_LABEL = "cloud.google.com/reservation-affinity"
# A ComputeClass priority's capacity fields, `priorities[].spot` and `priorities[].flexStart.enabled`
# (the ComputeClass CRD reference, cloud.google.com/v1:
# https://cloud.google.com/kubernetes-engine/docs/reference/crds/computeclass)
PRIORITY_SPOT = "spot"
PRIORITY_FLEX_START = "flexStart"
ZONE_LABELS = ("topology.kubernetes.io/zone", "topology.gke.io/zone", "failure-domain.beta.kubernetes.io/zone")

POD_SPEC_PATHS: dict[str, tuple[str, ...]] = {
    "kubernetes:core/v1:Pod": ("spec",),
    "kubernetes:apps/v1:Deployment": ("spec", "template", "spec"),
    "kubernetes:apps/v1:StatefulSet": ("spec", "template", "spec"),
    "kubernetes:apps/v1:ReplicaSet": ("spec", "template", "spec"),
    "kubernetes:apps/v1:DaemonSet": ("spec", "template", "spec"),
    "kubernetes:batch/v1:Job": ("spec", "template", "spec"),
    "kubernetes:batch/v1:CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
}
REPLICATED_TYPES = ("kubernetes:apps/v1:Deployment", "kubernetes:apps/v1:StatefulSet", "kubernetes:apps/v1:ReplicaSet")


@dataclass(frozen=True)
class PodTemplate:
    """The pod spec of a workload plus the workload's own metadata (annotations, replicas)."""

    resource_type: str
    workload: Mapping[str, Any]
    spec: Mapping[str, Any]

    @property
    def name(self) -> str:
        return as_text(dig(self.workload, "metadata", "name"))

    @property
    def annotations(self) -> Mapping[str, Any]:
        return as_mapping(dig(self.workload, "metadata", "annotations"))

    @property
    def replicas(self) -> float:
        if self.resource_type not in REPLICATED_TYPES:
            return 1.0
        replicas = as_number(dig(self.workload, "spec", "replicas"))
        return 1.0 if replicas is None else replicas

    @property
    def containers(self) -> list[Mapping[str, Any]]:
        return [as_mapping(container) for container in as_list(self.spec.get("containers"))]

    def selector_values(self, label: str) -> set[str] | None:
        """Values a node label is pinned to by nodeSelector or required node affinity (None: not pinned)."""
        selected = as_mapping(self.spec.get("nodeSelector")).get(label)
        if isinstance(selected, str):
            return {selected}
        terms = dig(self.spec, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
        values: set[str] = set()
        for term in as_list(dig(terms, "nodeSelectorTerms")):
            for expression in as_list(dig(term, "matchExpressions")):
                if dig(expression, "key") == label and dig(expression, "operator") == "In":
                    values.update(as_text(value) for value in as_list(dig(expression, "values")))
        return values or None

    @property
    def zones(self) -> set[str] | None:
        for label in ZONE_LABELS:
            zones = self.selector_values(label)
            if zones:
                return zones
        return None

    @property
    def gpus(self) -> float:
        return sum(container_gpus(container) for container in self.containers)


def container_gpus(container: Mapping[str, Any]) -> float:
    resources = as_mapping(container.get("resources"))
    for kind in ("limits", "requests"):
        count = as_number(as_mapping(resources.get(kind)).get(GPU_RESOURCE))
        if count is not None:
            return count
    return 0.0


def pod_template(resource_type: str, props: Mapping[str, Any]) -> PodTemplate | None:
    path = POD_SPEC_PATHS.get(resource_type)
    if path is None:
        return None
    return PodTemplate(resource_type, props, as_mapping(dig(props, *path)))


def metadata_name(props: Mapping[str, Any]) -> str:
    return as_text(dig(props, "metadata", "name"))
