"""Model weights on Hyperdisk ML: mounted read-only, shared read-only, in the GPU zones."""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from policies.graph import claim_named, class_zones, compute_classes, pod_templates, weights_links
from policies.kubernetes import PodTemplate, pod_template
from policies.values import as_list, as_mapping, as_number, as_text, dig, number_text
from policies.vllm_command import vllm_servers

HPA_TYPE = "kubernetes:autoscaling/v2:HorizontalPodAutoscaler"
REVISION_ANNOTATION = "llm-serving/model-revision"
COMMIT_ID = re.compile(r"^[0-9a-f]{40}$")
KIND_OF_TYPE = {"kubernetes:apps/v1:Deployment": "Deployment", "kubernetes:apps/v1:StatefulSet": "StatefulSet"}


def _autoscaler_maxima(resources: Any) -> dict[tuple[str, str], float]:
    """The most replicas any autoscaler may give each workload it targets, by (kind, name): read once per check
    (looked up per workload, a render of thousands of workloads took minutes)."""
    maxima: dict[tuple[str, str], float] = {}
    for autoscaler in resources:
        if autoscaler.resource_type != HPA_TYPE:
            continue
        target = as_mapping(dig(autoscaler.props, "spec", "scaleTargetRef"))
        key = (as_text(target.get("kind")), as_text(target.get("name")))
        maxima[key] = max(maxima.get(key, 0), as_number(dig(autoscaler.props, "spec", "maxReplicas")) or 0)
    return maxima


def _most_replicas(resource: Any, template: PodTemplate, maxima: dict[tuple[str, str], float]) -> float:
    """Replicas of a workload, or the most an autoscaler targeting it may create."""
    kind = KIND_OF_TYPE.get(resource.resource_type)
    return max(template.replicas, maxima.get((as_text(kind), as_text(template.name)), 0))


def _weights_read_only(args: StackValidationArgs, report: ReportViolation) -> None:
    maxima = _autoscaler_maxima(args.resources)
    for resource, template in pod_templates(args.resources):
        for server in vllm_servers(resource.resource_type, resource.props):
            mount = server.weights_mount
            if mount is None:
                continue
            claim_source = as_mapping(server.weights_volume.get("persistentVolumeClaim"))
            where = f"container {server.container_name}: weights volume {mount.get('name')} at {mount.get('mountPath')}"
            if mount.get("readOnly") is not True and claim_source.get("readOnly") is not True:
                report(f"{where} is mounted read-write; mount it readOnly", resource.urn)
            replicas = _most_replicas(resource, template, maxima)
            if replicas <= 1 or not claim_source:
                continue
            claim = claim_named(args.resources, server.weights_claim)
            access_modes = [as_text(mode) for mode in as_list(dig(claim.props, "spec", "accessModes"))] if claim else []
            if "ReadOnlyMany" not in access_modes:
                found = f"access modes {access_modes}" if claim else "a claim this stack does not declare"
                report(
                    f"{where} comes from claim {server.weights_claim} ({found}) but the workload runs up to "
                    f"{number_text(replicas)} replicas; they need a ReadOnlyMany claim",
                    resource.urn,
                )


WEIGHTS_READ_ONLY = StackValidationPolicy(
    name="LLM-WGT-001",
    display_name="Weights mounted read-only; several replicas share a ReadOnlyMany claim",
    description=(
        "The volume vLLM loads --model from must be mounted readOnly, and a workload with more than one replica "
        "(or an autoscaler allowing more) must take it from a ReadOnlyMany claim: Hyperdisk ML is filled once and "
        "then attached read-only by up to 2,500 nodes; a ReadWriteOnce disk attaches to one node, so the second "
        "replica never starts."
    ),
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_weights_read_only,
)


def _weights_in_gpu_zones(args: StackValidationArgs, report: ReportViolation) -> None:
    classes = compute_classes(args.resources)
    for resource, template in pod_templates(args.resources):
        placements = {
            "GPU nodes of its compute class": class_zones(template, classes),
            "the pod's zone selector": template.zones,
        }
        for server in vllm_servers(resource.resource_type, resource.props):
            zones_by_link: dict[str, set[str]] = defaultdict(set)
            names_by_link: dict[str, list[str]] = defaultdict(list)
            for link in weights_links(args.resources, server.weights_claim):
                if link.zones is not None:
                    zones_by_link[link.kind] |= link.zones
                    names_by_link[link.kind].append(link.resource.name)
            for placement, gpu_zones in placements.items():
                for kind, weight_zones in sorted(zones_by_link.items()):
                    missing = sorted((gpu_zones or set()) - weight_zones)
                    if missing:
                        report(
                            f"{placement} can be in {missing} but the weights' {kind} "
                            f"{', '.join(sorted(names_by_link[kind]))} only exists in {sorted(weight_zones)}",
                            resource.urn,
                        )


WEIGHTS_IN_GPU_ZONES = StackValidationPolicy(
    name="LLM-WGT-002",
    display_name="Weight disks are in the zones of the GPU nodes",
    description=(
        "Every zone the serving pods can be placed in (their ComputeClass location.zones or zone selector) must "
        "hold the weights they mount (Hyperdisk ML disk zone, PersistentVolume node affinity, StorageClass "
        "allowedTopologies): Hyperdisk ML is zonal, so a GPU node in another zone cannot attach it and the pod "
        "stays Pending."
    ),
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_weights_in_gpu_zones,
)


# A Hugging Face repository id: ORG/NAME.
REPOSITORY_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")


def _repository_of(model: str, served_name: str | None) -> str:
    """The workload's own checkpoint for the hint: its served name or its path under a weights mount
    (/models/ORG/NAME), when either is a repository id; ORG/MODEL when neither is."""
    for candidate in (served_name or "", model.removeprefix("/models/")):
        if REPOSITORY_ID.match(candidate):
            return candidate
    return "ORG/MODEL"


def _revision_is_a_commit(args: ResourceValidationArgs, report: ReportViolation) -> None:
    template = pod_template(args.resource_type, args.props)
    servers = vllm_servers(args.resource_type, args.props)
    if template is None or not servers:
        return
    revision = as_text(template.annotations.get(REVISION_ANNOTATION))
    if revision and not COMMIT_ID.match(revision):
        repository = _repository_of(servers[0].model, servers[0].value("served-model-name"))
        report(
            f"{template.name} serves model revision '{revision}', a branch or tag that can move; pin the 40-hex "
            f"commit id (git ls-remote https://huggingface.co/{repository} {revision})"
        )


REVISION_IS_A_COMMIT = ResourceValidationPolicy(
    name="LLM-WGT-003",
    display_name="Model weights pinned to an immutable commit",
    description=(
        f"The model revision a vLLM workload serves (annotation {REVISION_ANNOTATION}) should be a 40-hex commit "
        "id, not a branch or tag such as main: a moving name is never picked up again once the weights are on "
        "disk, and two stacks can hold different bytes under one name. Advisory here; a prod stack config "
        "refuses a moving revision outright."
    ),
    enforcement_level=EnforcementLevel.ADVISORY,
    validate=_revision_is_a_commit,
)
