"""Operations: the composition of autoscaling, schedules, dashboard and alerts, and their operator
outputs. `stacks/program.py` calls `build_operations` once."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp

from components.autoscaling import MetricsAdapter, ServingAutoscaler
from components.cluster import ClusterTarget
from components.monitoring import ServingMonitoring
from components.schedule import ScaleSchedule
from components.vllm import CONTAINER_NAME
from components.warm_capacity import WarmCapacity
from stacks.args import autoscaler_args, metrics_adapter_args, monitoring_args, schedule_args, warm_capacity_args
from stacks.config.operations import MetricsAdapterSource
from stacks.config.stack import StackConfig


@dataclass(frozen=True)
class OperatorCommands:
    tail_logs: str
    scale_by_hand: str
    pending_reason: str


def _log_streams(config: StackConfig) -> str:
    """Which containers `kubectl logs` follows, and how many streams it may open (kubectl refuses more than
    --max-log-requests, 5 by default): in the per-rank layout a pod runs one server per data-parallel rank (vllm-0,
    vllm-1, ...), so every container, and one more per pod for GKE's injected Cloud Storage FUSE sidecar."""
    if not config.serves_per_rank:
        return f"-c {CONTAINER_NAME} --prefix --max-log-requests=64"
    streams = config.max_replicas * (config.engine.data_parallel_size + 1)
    return f"--all-containers --prefix --max-log-requests={max(64, streams)}"


def operator_commands(config: StackConfig) -> OperatorCommands:
    namespace = config.cluster.namespace
    name = config.routing.service_name
    if config.autoscaling.enabled:
        scale = (
            f"N={config.autoscaling.min_replicas}; kubectl -n {namespace} patch hpa {name} --type=merge "
            f'-p "{{\\"spec\\":{{\\"minReplicas\\":$N}}}}"  '
            f"# the HPA keeps at least N pods (max {config.max_replicas}); "
            f"from 0 (a schedule's sleep step) also: kubectl -n {namespace} scale deployment/{name} --replicas=$N"
        )
    else:
        back = "" if config.replicas_managed_elsewhere else f"; the next `pulumi up` sets it back to {config.nodes}"
        scale = (
            f"N={config.nodes}; kubectl -n {namespace} scale deployment/{name} --replicas=$N  # a node per pod{back}"
        )
    return OperatorCommands(
        tail_logs=f"kubectl -n {namespace} logs -f -l app={name} {_log_streams(config)}",
        scale_by_hand=scale,
        pending_reason=(
            f"kubectl -n {namespace} get pods -l app={name} -o wide; "
            f"kubectl -n {namespace} get events --sort-by=.lastTimestamp --field-selector involvedObject.kind=Pod "
            "| grep -E 'FailedScheduling|TriggeredScaleUp|NotTriggerScaleUp|FailedScaleUp'; "
            f"kubectl get computeclass {config.capacity.compute_class_name} -o yaml | sed -n '/^status:/,$p'"
        ),
    )


def build_operations(
    config: StackConfig,
    gcp_provider: gcp.Provider,
    target: ClusterTarget,
    deployment: pulumi.Resource,
    download_job_name: pulumi.Input[str] | None,
    prefix: str,
    opts: pulumi.ResourceOptions | None = None,
) -> dict[str, pulumi.Input[object]]:
    """Declare the autoscaler (+ metrics adapter), the schedule and the monitoring; return outputs.
    Logical names start with `prefix`; `opts` goes under every declaration."""
    kubernetes = target.provider
    gcp_apis = list(target.apis)
    in_cluster = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(providers=[gcp_provider, kubernetes]))
    after_deployment = pulumi.ResourceOptions.merge(
        opts, pulumi.ResourceOptions(provider=kubernetes, depends_on=[deployment])
    )
    commands = operator_commands(config)
    outputs: dict[str, pulumi.Input[object]] = {
        "tailLogs": commands.tail_logs,
        "scaleByHand": commands.scale_by_hand,
        "pendingReason": commands.pending_reason,
    }

    adapter_source = config.autoscaling.metrics_adapter or MetricsAdapterSource.declare
    adapters: list[pulumi.Resource] = []
    if config.autoscaling.enabled and adapter_source is MetricsAdapterSource.declare:
        # An output invoke that waits for the APIs: on an empty project Resource Manager is enabled
        # by this same `up` (pulumi InvokeOutputOptions.depends_on).
        project_number = gcp.organizations.get_project_output(
            project_id=config.project, opts=pulumi.InvokeOutputOptions(provider=gcp_provider, depends_on=list(gcp_apis))
        ).number
        adapter = MetricsAdapter(
            f"{prefix}-metrics-adapter",
            metrics_adapter_args(config, project_number, target.workload_pool),
            opts=in_cluster,
        )
        adapters.append(adapter)
    if config.autoscaling.enabled:
        autoscaler = ServingAutoscaler(
            f"{prefix}-autoscaler",
            autoscaler_args(config),
            opts=pulumi.ResourceOptions.merge(
                opts, pulumi.ResourceOptions(provider=kubernetes, depends_on=[deployment, *adapters])
            ),
        )
        outputs["autoscaler"] = autoscaler.autoscaler.metadata.name

    if config.warm_capacity.enabled:
        warm = WarmCapacity(f"{prefix}-warm-capacity", warm_capacity_args(config), opts=after_deployment)
        outputs["capacityBuffer"] = warm.buffer.metadata.apply(lambda meta: meta["name"])
    if config.schedule.enabled:
        schedule = ScaleSchedule(f"{prefix}-schedule", schedule_args(config), opts=after_deployment)
        outputs["scheduleCronJobs"] = [job.metadata.name for job in schedule.cron_jobs]

    monitoring = ServingMonitoring(
        f"{prefix}-monitoring",
        monitoring_args(config, download_job_name, requires=gcp_apis),
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(providers=[gcp_provider])),
    )
    if monitoring.dashboard_url is not None:
        outputs["dashboardUrl"] = monitoring.dashboard_url
    return outputs
