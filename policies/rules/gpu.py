"""B200 scheduling and capacity: the GPU request, the accelerator selection, the capacity source."""

from __future__ import annotations

from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from policies.graph import (
    A4_MACHINE_TYPE,
    B200,
    B200_GPUS_PER_POD,
    CLUSTER_TYPE,
    ComputeClass,
    compute_class_of,
    compute_classes,
    may_run_on_spot,
    pod_gpu_types,
    pod_templates,
    priority_gpu_type,
    runs_only_on_spot,
)
from policies.kubernetes import (
    ACCELERATOR_COUNT_LABEL,
    ACCELERATOR_LABEL,
    COMPUTE_CLASS_LABEL,
    FLEX_START_LABEL,
    PRIORITY_FLEX_START,
    PRIORITY_SPOT,
    RESERVATION_AFFINITY_LABEL,
    RESERVATION_NAME_LABEL,
    SPOT_LABEL,
    PodTemplate,
    pod_template,
)
from policies.settings import Setting, config_schema
from policies.values import as_list, as_number, as_text, dig, number_text

# Compute Engine gives a Spot VM 30 s of notice before preemption: no pod on it gets more.
SPOT_PREEMPTION_NOTICE_SECONDS = 30
ALLOWED_GPU_TYPES = Setting("allowedGpuTypes", [B200], "GPU types (gke-accelerator values) pods may select")
MAX_SPOT_GRACE = Setting(
    "maxSpotGraceSeconds",
    25,
    "termination grace Autopilot gives a Spot pod on preemption",
    minimum=0,
    maximum=SPOT_PREEMPTION_NOTICE_SECONDS,
)
KUBERNETES_DEFAULT_GRACE_SECONDS = 30.0


def _compute_class_gpus(compute_class: ComputeClass, allowed: set[str], report: ReportViolation) -> None:
    urn = compute_class.resource.urn
    for index, priority in enumerate(compute_class.priorities):
        gpu_type = priority_gpu_type(priority)
        where = f"ComputeClass {compute_class.name} priorities[{index}]"
        if gpu_type and gpu_type not in allowed:
            report(f"{where} provisions {gpu_type}, not one of {sorted(allowed)}", urn)
        if gpu_type != B200:
            continue
        count = as_number(dig(priority, "gpu", "count"))
        if count is not None and count != B200_GPUS_PER_POD:
            report(f"{where} asks for {number_text(count)} B200 GPUs per node; A4 has 8", urn)
        machine_type = as_text(priority.get("machineType"))
        if machine_type and machine_type != A4_MACHINE_TYPE:
            report(f"{where} pairs B200 with machine type {machine_type}; B200 runs on {A4_MACHINE_TYPE}", urn)


def _pod_gpus(template: PodTemplate, gpu_types: set[str] | None, allowed: set[str]) -> list[str]:
    gpus = template.gpus
    if gpu_types is None:
        class_names = ", ".join(sorted(template.selector_values(COMPUTE_CLASS_LABEL) or ()))
        undeclared = f"compute class {class_names}, which this stack does not declare"
        if not gpus:
            return []
        return [f"requests {number_text(gpus)} GPUs through {undeclared}: cannot tell which GPU it gets"]
    problems = []
    if gpus and not gpu_types:
        problems.append(
            f"requests {number_text(gpus)} GPUs but selects no GPU ({ACCELERATOR_LABEL} or a "
            f"{COMPUTE_CLASS_LABEL} that sets the GPU type): Autopilot rejects the pod"
        )
    problems += [f"selects GPU type {gpu}, not one of {sorted(allowed)}" for gpu in sorted(gpu_types - allowed)]
    if B200 in gpu_types and gpus != B200_GPUS_PER_POD:
        problems.append(
            f"lands on B200 but requests {number_text(gpus)} nvidia.com/gpu; Autopilot accepts only "
            f"{B200_GPUS_PER_POD} for B200"
        )
    counts = template.selector_values(ACCELERATOR_COUNT_LABEL)
    if B200 in gpu_types and counts and counts != {str(B200_GPUS_PER_POD)}:
        problems.append(f'selects {ACCELERATOR_COUNT_LABEL} {sorted(counts)}; B200 needs "8"')
    return problems


def _b200_pods_request_eight(args: StackValidationArgs, report: ReportViolation) -> None:
    allowed = set(ALLOWED_GPU_TYPES.read(args.get_config()))
    classes = compute_classes(args.resources)
    for compute_class in classes.values():
        _compute_class_gpus(compute_class, allowed, report)
    for resource, template in pod_templates(args.resources):
        for problem in _pod_gpus(template, pod_gpu_types(template, classes), allowed):
            report(problem, resource.urn)


B200_PODS_REQUEST_EIGHT = StackValidationPolicy(
    name="LLM-GPU-001",
    display_name="B200 pods request exactly 8 GPUs and are selected onto B200",
    description=(
        "A pod that requests nvidia.com/gpu must select its GPU (cloud.google.com/gke-accelerator, or a "
        "ComputeClass of this stack that sets the GPU type) and an allowed GPU type; a B200 pod must request "
        "exactly 8 GPUs, and a B200 ComputeClass priority 8 GPUs on a4-highgpu-8g. Autopilot rejects GPU pods "
        "without the selector and accepts only 8 GPUs for B200 (one pod per A4 node)."
    ),
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_b200_pods_request_eight,
    config_schema=config_schema(ALLOWED_GPU_TYPES),
)


def _on_demand_reason(priority: Any) -> str | None:
    """Why a ComputeClass priority would ask for on-demand capacity (None: it does not)."""
    if priority.get(PRIORITY_SPOT) is True or dig(priority, PRIORITY_FLEX_START, "enabled") is True:
        return None
    affinity = as_text(dig(priority, "reservations", "affinity"))
    if affinity == "Specific" and as_list(dig(priority, "reservations", "specific")):
        return None
    if affinity:
        return f"reservations.affinity {affinity} falls back to on-demand"
    return f"has none of {PRIORITY_SPOT}, {PRIORITY_FLEX_START} or a specific reservation"


def _b200_never_on_demand(args: ResourceValidationArgs, report: ReportViolation) -> None:
    compute_class = compute_class_of(args.resource_type, args.props)
    if compute_class is not None:
        b200_priorities = [
            (index, priority)
            for index, priority in enumerate(compute_class.priorities)
            if priority_gpu_type(priority) == B200
        ]
        for index, priority in b200_priorities:
            reason = _on_demand_reason(priority)
            if reason:
                machine = priority.get("machineType") or B200
                report(f"priorities[{index}] ({machine}) {reason}; A4 has no on-demand capacity")
        if b200_priorities and dig(args.props, "spec", "whenUnsatisfiable") == "ScaleUpAnyway":
            report("whenUnsatisfiable ScaleUpAnyway lets the autoscaler fall back to on-demand nodes; use DoNotScaleUp")
        return
    template = pod_template(args.resource_type, args.props)
    if template is None or template.selector_values(ACCELERATOR_LABEL) != {B200}:
        return
    if template.selector_values(COMPUTE_CLASS_LABEL):
        return
    spot = template.selector_values(SPOT_LABEL) == {"true"}
    flex_start = template.selector_values(FLEX_START_LABEL) == {"true"}
    reservation = bool(template.selector_values(RESERVATION_NAME_LABEL)) and template.selector_values(
        RESERVATION_AFFINITY_LABEL
    ) == {"specific"}
    if not (spot or flex_start or reservation):
        report(
            f"selects {B200} with neither {SPOT_LABEL}, {FLEX_START_LABEL} nor a specific reservation: "
            "A4 has no on-demand capacity, so the pod stays Pending"
        )


B200_NEVER_ON_DEMAND = ResourceValidationPolicy(
    name="LLM-GPU-002",
    display_name="B200 capacity comes from Spot, Flex-start or a reservation, never on-demand",
    description=(
        "Every B200 ComputeClass priority (and every B200 pod that selects no ComputeClass) must ask for Spot, "
        "Flex-start or a specific reservation, and a B200 ComputeClass must not ScaleUpAnyway. A4 has no "
        "on-demand capacity: an on-demand request stays Pending and never schedules."
    ),
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_b200_never_on_demand,
)


def _spot_grace_fits(args: StackValidationArgs, report: ReportViolation) -> None:
    limit = float(MAX_SPOT_GRACE.read(args.get_config()))
    classes = compute_classes(args.resources)
    for resource, template in pod_templates(args.resources):
        if not may_run_on_spot(template, classes):
            continue
        grace = as_number(template.spec.get("terminationGracePeriodSeconds"))
        asked = KUBERNETES_DEFAULT_GRACE_SECONDS if grace is None else grace
        source = "" if grace is not None else " (the Kubernetes default)"
        if runs_only_on_spot(template, classes) and asked > limit:
            report(
                f"runs only on Spot and asks for {number_text(asked)} s termination grace{source}; "
                f"Autopilot gives a Spot pod at most {number_text(limit)} s on preemption",
                resource.urn,
            )
        elif not runs_only_on_spot(template, classes) and asked <= limit and template.gpus:
            report(
                f"asks for {number_text(asked)} s termination grace{source}, Spot's limit, although it may also land "
                "on Flex-start or reserved nodes, where GKE honors up to 600 s on scale-down and an hour on upgrades: "
                "there its drain is cut short for nothing",
                resource.urn,
            )


SPOT_GRACE_FITS = StackValidationPolicy(
    name="LLM-GPU-003",
    display_name="GPU pods ask for the grace of the longest-lived capacity they may land on",
    description=(
        "A pod that can run only on Spot nodes (gke-spot selector, or ComputeClasses whose every priority is Spot) "
        "should set terminationGracePeriodSeconds to at most 25 (unset means 30): on preemption Autopilot gives a "
        "Spot pod at most 25 s whatever it asks, so shutdown work planned for longer is cut off. A GPU pod that may "
        "also land on Flex-start or reserved nodes should ask for more than that: there GKE honors its grace (up to "
        "10 minutes on scale-down, an hour on node upgrades), and on a Spot preemption it is cut to 25 s anyway."
    ),
    enforcement_level=EnforcementLevel.ADVISORY,
    validate=_spot_grace_fits,
    config_schema=config_schema(MAX_SPOT_GRACE),
)


# Regions where Compute Engine offers a4-highgpu-8g, compiled 2026-11 from: the benchmark write-up
# (europe-west4), Dynamic Workload Scheduler's recommended A4 zones (asia-southeast1-b, us-central1-b,
# us-south1-b), and zones that accepted or listed a4-highgpu-8g requests on 2026-10-05
# (us-central1-b, us-south1-b, us-west3-b/c, us-east1-b/d, us-east4-b, us-west2-c: kyuds/skyrl-test,
# opd-gcp-spot-full-repro/gcp settings). Not the full list (Compute Engine's "GPU regions and zones" page
# could not be read here); `gcloud compute accelerator-types list --filter=name=nvidia-b200` is the
# authority. Extend it through this policy's config.
A4_REGIONS = Setting(
    "a4Regions",
    ["asia-southeast1", "europe-west4", "us-central1", "us-east1", "us-east4", "us-south1", "us-west2", "us-west3"],
    "regions known (2026-11) to offer a4-highgpu-8g; check `gcloud compute accelerator-types list`",
    # a region's name as Compute Engine spells one (us-central1, northamerica-northeast2, europe-west10)
    item_pattern="^[a-z]{2,20}(-[a-z]{2,20}){1,2}[0-9]{1,2}$",
    item_words="Google Cloud region names (us-central1)",
)


SHOWN_REGIONS_MAX = 12


def _region_of(location: str) -> str:
    """us-central1-b -> us-central1; a region stays itself."""
    head, _, tail = location.rpartition("-")
    return head if len(tail) == 1 and head else location


def _a4_offered(args: ResourceValidationArgs, report: ReportViolation) -> None:
    regions = set(A4_REGIONS.read(args.get_config()))
    # a message names a dozen of a configured list at most (a list of 120,000 was printed whole)
    shown = sorted(regions)[:SHOWN_REGIONS_MAX]
    more = f" and {len(regions) - len(shown):,} more" if len(regions) > len(shown) else ""
    hint = "check `gcloud compute accelerator-types list --filter=name=nvidia-b200` or choose one of " + (
        ", ".join(shown) + more
    )
    if args.resource_type == CLUSTER_TYPE:
        location = as_text(args.props.get("location"))
        if location and _region_of(location) not in regions:
            report(f"the cluster is in {location}, a region not known to offer A4 (a4-highgpu-8g) nodes; {hint}")
        return
    compute_class = compute_class_of(args.resource_type, args.props)
    if compute_class is None:
        return
    for index, priority in enumerate(compute_class.priorities):
        if priority_gpu_type(priority) != B200:
            continue
        zones = {as_text(zone) for zone in as_list(dig(priority, "location", "zones"))} or compute_class.default_zones
        outside = sorted(zone for zone in zones or () if _region_of(zone) not in regions)
        if outside:
            report(f"priorities[{index}] asks for A4 in {', '.join(outside)}, not known to offer A4 nodes; {hint}")


A4_REGION_OFFERED = ResourceValidationPolicy(
    name="LLM-GPU-004",
    display_name="A4 nodes are asked for in regions that offer them",
    description=(
        "The cluster's region and every zone a B200 ComputeClass priority pins should be one where Compute "
        "Engine offers a4-highgpu-8g (a list compiled 2026-11, extendable in config): elsewhere no capacity "
        "source (reservation, Flex-start, Spot) can ever provide the node, and GPU pods stay Pending."
    ),
    enforcement_level=EnforcementLevel.ADVISORY,
    validate=_a4_offered,
    config_schema=config_schema(A4_REGIONS),
)
