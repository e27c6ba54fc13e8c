"""Autoscaled GPU serving: the autoscaler owns the replica count and gives A4 nodes back slowly."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from pulumi_policy import EnforcementLevel, ReportViolation, StackValidationArgs, StackValidationPolicy

from policies.graph import pod_templates
from policies.kubernetes import PodTemplate
from policies.settings import Setting, config_schema
from policies.values import as_list, as_mapping, as_number, as_text, dig, number_text

HPA_TYPE = "kubernetes:autoscaling/v2:HorizontalPodAutoscaler"
CRON_JOB_TYPE = "kubernetes:batch/v1:CronJob"
KIND_OF_TYPE = {"kubernetes:apps/v1:Deployment": "Deployment", "kubernetes:apps/v1:StatefulSet": "StatefulSet"}
REPLICAS_PATHS = ("spec.replicas", "spec")
# The HPA default (autoscaling/v2 behavior.scaleDown.stabilizationWindowSeconds when unset).
DEFAULT_SCALE_DOWN_STABILIZATION = 300
# Node provisioning ~6 min + model load and CUDA graph capture ~10 min (the benchmark write-up).
COLD_START_SECONDS = 960
MIN_SCALE_DOWN_STABILIZATION = Setting(
    "minScaleDownStabilizationSeconds",
    COLD_START_SECONDS,
    "Least scale-down stabilization window for an HPA of GPU pods (seconds): one cold start",
    minimum=0,
    maximum=3600,  # the most Kubernetes accepts in behavior.scaleDown.stabilizationWindowSeconds
)


def _autoscaled(resources: Sequence[Any]) -> Iterator[tuple[Any, Any, PodTemplate]]:
    """(autoscaler, workload, pod template) for every HPA whose target this stack declares."""
    workloads = [
        (resource, template)
        for resource, template in pod_templates(resources)
        if resource.resource_type in KIND_OF_TYPE
    ]
    for autoscaler in resources:
        if autoscaler.resource_type != HPA_TYPE:
            continue
        target = as_mapping(dig(autoscaler.props, "spec", "scaleTargetRef"))
        namespace = as_text(dig(autoscaler.props, "metadata", "namespace"))
        for resource, template in workloads:
            workload_namespace = as_text(dig(resource.props, "metadata", "namespace"))
            if (
                target.get("kind") == KIND_OF_TYPE[resource.resource_type]
                and target.get("name") == template.name
                and (not namespace or not workload_namespace or namespace == workload_namespace)
            ):
                yield autoscaler, resource, template


def _scheduled(resources: Sequence[Any]) -> Iterator[tuple[str, Any, PodTemplate]]:
    """(CronJob name, workload, pod template) for every CronJob that runs `kubectl scale` on a workload."""
    workloads = [
        (resource, template)
        for resource, template in pod_templates(resources)
        if resource.resource_type in KIND_OF_TYPE
    ]
    for job, job_template in pod_templates(resources):
        if job.resource_type != CRON_JOB_TYPE:
            continue
        for container in job_template.containers:
            words = [as_text(word) for word in [*as_list(container.get("command")), *as_list(container.get("args"))]]
            if "scale" not in words:
                continue
            for resource, template in workloads:
                kind = KIND_OF_TYPE[resource.resource_type].lower()
                if f"{kind}/{template.name}" in words or (kind in words and template.name in words):
                    yield f"CronJob {job_template.name}", resource, template


def _replicas_left_to_autoscaler(args: StackValidationArgs, report: ReportViolation) -> None:
    scalers = [
        (f"HorizontalPodAutoscaler {as_text(dig(autoscaler.props, 'metadata', 'name'))}", resource, template)
        for autoscaler, resource, template in _autoscaled(args.resources)
    ]
    for scaler, resource, template in [*scalers, *_scheduled(args.resources)]:
        ignored = set(resource.opts.ignore_changes or []) if resource.opts else set()
        if not ignored & set(REPLICAS_PATHS):
            report(
                f"{KIND_OF_TYPE[resource.resource_type]} {template.name} is scaled by {scaler} but does not "
                "ignore changes to spec.replicas; add ignoreChanges: [spec.replicas]",
                resource.urn,
            )


REPLICAS_LEFT_TO_AUTOSCALER = StackValidationPolicy(
    name="LLM-OPS-001",
    display_name="A workload scaled by an autoscaler or a schedule leaves spec.replicas to it",
    description=(
        "A Deployment or StatefulSet targeted by a HorizontalPodAutoscaler, or scaled by a CronJob running "
        "kubectl scale, must declare ignoreChanges on spec.replicas: otherwise every pulumi up sets the replica "
        "count back to the declared one, fighting the autoscaler or undoing the schedule. With one A4 node "
        "per pod that stops pods that took ~16 minutes to start (node provisioning plus model load) or starts "
        "nodes nobody asked for."
    ),
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_replicas_left_to_autoscaler,
)


def _slow_scale_down(args: StackValidationArgs, report: ReportViolation) -> None:
    least = float(MIN_SCALE_DOWN_STABILIZATION.read(args.get_config()))
    for autoscaler, _workload, template in _autoscaled(args.resources):
        if not template.gpus:
            continue
        scale_down = as_mapping(dig(autoscaler.props, "spec", "behavior", "scaleDown"))
        window = as_number(scale_down.get("stabilizationWindowSeconds"))
        window = float(DEFAULT_SCALE_DOWN_STABILIZATION) if window is None else window
        if window < least:
            report(
                f"HorizontalPodAutoscaler {as_text(dig(autoscaler.props, 'metadata', 'name'))} scales GPU pods of "
                f"{template.name} down after {number_text(window)} s of lower demand; keep at least "
                f"{number_text(least)} s (one cold start) in behavior.scaleDown.stabilizationWindowSeconds",
                autoscaler.urn,
            )
        policies = [as_mapping(policy) for policy in as_list(scale_down.get("policies"))]
        if scale_down.get("selectPolicy") != "Disabled" and not policies:
            report(
                f"HorizontalPodAutoscaler {as_text(dig(autoscaler.props, 'metadata', 'name'))} has no scale-down "
                "policy: by default it may remove every pod above minReplicas at once; remove one pod per period",
                autoscaler.urn,
            )


SLOW_SCALE_DOWN = StackValidationPolicy(
    name="LLM-OPS-002",
    display_name="GPU autoscaling gives nodes back slowly",
    description=(
        "A HorizontalPodAutoscaler of GPU pods should hold a scale-down for at least one cold start "
        "(behavior.scaleDown.stabilizationWindowSeconds, default 300 s) and remove pods by an explicit policy: "
        "each A4 pod given back takes ~16 minutes (node provisioning ~6 min plus model load ~10 min) to come "
        "back when the next surge arrives."
    ),
    enforcement_level=EnforcementLevel.ADVISORY,
    config_schema=config_schema(MIN_SCALE_DOWN_STABILIZATION),
    validate=_slow_scale_down,
)


# What the stack states on each HorizontalPodAutoscaler it declares (stacks/operations.py): how long a
# new replica takes to serve (its planning figure, stacks/capacity/time_to_serve.py) and the bound it
# holds that to (timeToServe.boundSeconds).
TIME_TO_SERVE_ANNOTATION = "llm-serving/time-to-serve-seconds"
TIME_TO_SERVE_BOUND_ANNOTATION = "llm-serving/time-to-serve-bound-seconds"
# A new pod's time to serve on a node a CapacityBuffer holds (no node phase), where the stack holds nodes.
HELD_TIME_TO_SERVE_ANNOTATION = "llm-serving/held-time-to-serve-seconds"
QUEUE_METRIC = "num_requests_waiting"
CAPACITY_BUFFER_TYPES = (
    "kubernetes:autoscaling.x-k8s.io/v1beta1:CapacityBuffer",
    "kubernetes:autoscaling.x-k8s.io/v1alpha1:CapacityBuffer",
)


def _queue_metric(autoscaler: Any) -> bool:
    for item in as_list(dig(autoscaler.props, "spec", "metrics")):
        metric = as_mapping(item)
        for source in ("pods", "object", "external"):
            name = as_text(dig(metric, source, "metric", "name"))
            if QUEUE_METRIC in name:
                return True
    return False


def _held_for(resources: Sequence[Any], workload: str) -> bool:
    """Whether a CapacityBuffer holds nodes for the workload (by scalableRef, or of its own pod template)."""
    for buffer in resources:
        if buffer.resource_type not in CAPACITY_BUFFER_TYPES:
            continue
        spec = as_mapping(dig(buffer.props, "spec"))
        reference = as_mapping(spec.get("scalableRef"))
        if reference.get("name") == workload or spec.get("podTemplateRef"):
            return True
    return False


def _stated_seconds(autoscaler: Any, key: str) -> float | None:
    annotations = as_mapping(dig(autoscaler.props, "metadata", "annotations"))
    try:
        return float(as_text(annotations.get(key)))
    except ValueError:
        return None


def _adds_pods(autoscaler: Any) -> bool:
    """Whether the autoscaler may add pods: its ceiling above its floor (Kubernetes' default floor is 1)."""
    spec = as_mapping(dig(autoscaler.props, "spec"))
    floor, ceiling = as_number(spec.get("minReplicas", 1)), as_number(spec.get("maxReplicas"))
    return floor is None or ceiling is None or ceiling > floor


def _queue_autoscaling_outruns_start_up(args: StackValidationArgs, report: ReportViolation) -> None:
    for autoscaler, _workload, template in _autoscaled(args.resources):
        if not template.gpus or not _queue_metric(autoscaler) or not _adds_pods(autoscaler):
            continue
        held = _held_for(args.resources, template.name)
        seconds = _stated_seconds(autoscaler, HELD_TIME_TO_SERVE_ANNOTATION if held else TIME_TO_SERVE_ANNOTATION)
        bound = _stated_seconds(autoscaler, TIME_TO_SERVE_BOUND_ANNOTATION)
        if seconds is None or bound is None or seconds <= bound:
            continue
        where = " on a held node, still over the stack's bound" if held else ", over the stack's bound"
        remedy = (
            "; holding nodes skips only the node phase: cut the pod's start-up (startup.*) or raise the bound "
            "(timeToServe.boundSeconds)"
            if held
            else ", and no node is held: the queue that asked for it is served (or dropped) before it is ready. Hold "
            "nodes (warmCapacity, a CapacityBuffer) or cut the time to serve"
        )
        report(
            f"HorizontalPodAutoscaler {as_text(dig(autoscaler.props, 'metadata', 'name'))} adds GPU pods of "
            f"{template.name} on queue depth, but a new pod serves after ~{number_text(seconds)} s (the stack's "
            f"planning figure: plan.md's Time to serve says which phases are measured){where} of "
            f"{number_text(bound)} s{remedy}",
            autoscaler.urn,
        )


QUEUE_AUTOSCALING_OUTRUNS_START_UP = StackValidationPolicy(
    name="LLM-OPS-005",
    display_name="Queue-depth autoscaling reacts within the time to serve",
    description=(
        "A HorizontalPodAutoscaler that adds GPU pods on queue depth (vllm:num_requests_waiting; maxReplicas above "
        "minReplicas) reacts to a "
        "burst only after a new pod serves. When the stack states that this takes longer than its bound "
        f"(annotations {TIME_TO_SERVE_ANNOTATION} and {TIME_TO_SERVE_BOUND_ANNOTATION} on the autoscaler; "
        f"{HELD_TIME_TO_SERVE_ANNOTATION} where a CapacityBuffer holds nodes for the workload, which skips only the "
        "node phase), each scale-up lands after the burst that needed it: for the published recipe a new A4 node "
        "takes ~5-6 min and the pod ~10 min."
    ),
    enforcement_level=EnforcementLevel.ADVISORY,
    validate=_queue_autoscaling_outruns_start_up,
)
