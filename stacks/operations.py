"""Operations: the composition of autoscaling, schedules, dashboard and alerts, and their operator
outputs. `stacks/program.py` calls `build_operations` once."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp

from components.autoscaling import MetricsAdapter, MetricsAdapterArgs, ServingAutoscaler, ServingAutoscalerArgs
from components.benchmark import CONTAINER_NAME as BENCHMARK_CONTAINER
from components.cluster import ClusterTarget
from components.metrics import KNOWN, ServingQueries
from components.monitoring import (
    AlertThresholds,
    ServingMonitoring,
    ServingMonitoringArgs,
    TimeToReady,
    serving_alerts,
    serving_charts,
)
from components.schedule import ScaleSchedule, ScaleScheduleArgs, ScaleStep
from components.vllm import CONTAINER_NAME
from components.warm_capacity import WarmCapacity, WarmCapacityArgs
from policies.rules.operations import TIME_TO_SERVE_ANNOTATION, TIME_TO_SERVE_BOUND_ANNOTATION
from stacks.capacity.time_to_serve import led_schedule_steps, time_to_serve
from stacks.config.operations import (
    NODE_PROVISIONING_SECONDS,
    AutoscalingMetric,
    MetricsAdapterSource,
)
from stacks.config.routing import RoutingMode
from stacks.config.stack import StackConfig

SCHEDULE_NAME = "serving-schedule"


def autoscaling_metric(config: StackConfig) -> tuple[str, str]:
    """The HPA's custom metric and its per-pod target (the adapter sums a pod's engine series)."""
    scaling = config.autoscaling
    if scaling.metric is AutoscalingMetric.kv_cache_usage:
        engines = config.engine.data_parallel_size
        milli = round(scaling.target_kv_cache_usage * engines * 1000)
        return KNOWN["vllm:kv_cache_usage_perc"].adapter_name, f"{milli}m"
    return KNOWN["vllm:num_requests_waiting"].adapter_name, str(scaling.target_waiting_requests_per_pod)


def scale_down_stabilization_seconds(config: StackConfig) -> int:
    """autoscaling.scaleDownStabilizationSeconds, by default twice the stack's time to serve (a pod
    removed too early costs one to get back), at most the field's 3600."""
    given = config.autoscaling.scale_down_stabilization_seconds
    return given if given is not None else min(2 * time_to_serve(config).planning_seconds, 3600)


def no_ready_replica_seconds(config: StackConfig) -> int:
    """How long pods may be wanted with none ready before the alert fires: the stack's time to serve
    plus one more node provisioning (a node that failed and was retried)."""
    return time_to_serve(config).planning_seconds + NODE_PROVISIONING_SECONDS


def time_to_ready_metric(config: StackConfig) -> TimeToReady | None:
    """The log-based metric of the serving pods' time to ready, where the benchmark Job reports it;
    named per cluster and namespace (log-based metric names are unique in a project)."""
    if not config.benchmark.enabled:
        return None
    name = f"{config.cluster.name}_{config.cluster.namespace}_serving_time_to_ready".replace("-", "_")
    return TimeToReady(name=name, namespace=config.cluster.namespace, container=BENCHMARK_CONTAINER)


def schedule_steps(config: StackConfig) -> list[ScaleStep]:
    """The schedule's steps; business hours wake early by the time to serve; with held nodes each
    step also sets the buffer (its nodes while pods are wanted, none at a step to zero)."""
    held = config.warm_capacity.nodes if config.warm_capacity.enabled else 0
    return [
        ScaleStep(name, cron, replicas, buffer_replicas=held if replicas else 0)
        for name, cron, replicas in led_schedule_steps(config)
    ]


def queries_for(config: StackConfig) -> ServingQueries:
    gateway = config.routing.mode is RoutingMode.gateway
    return ServingQueries(
        namespace=config.cluster.namespace,
        deployment=config.routing.service_name,
        served_model_name=config.served_model_name,
        pool_name=config.routing.service_name if gateway else None,
    )


@dataclass(frozen=True)
class OperatorCommands:
    tail_logs: str
    scale_by_hand: str
    pending_reason: str


def operator_commands(config: StackConfig) -> OperatorCommands:
    namespace = config.cluster.namespace
    name = config.routing.service_name
    if config.autoscaling.enabled:
        scale = (
            f"N=2; kubectl -n {namespace} patch hpa {name} --type=merge "
            f'-p "{{\\"spec\\":{{\\"minReplicas\\":$N}}}}"  '
            f"# the HPA keeps at least N pods (max {config.max_replicas}); "
            f"from 0 (a schedule's sleep step) also: kubectl -n {namespace} scale deployment/{name} --replicas=$N"
        )
    else:
        scale = f"N=2; kubectl -n {namespace} scale deployment/{name} --replicas=$N  # one A4 node per pod"
    return OperatorCommands(
        tail_logs=f"kubectl -n {namespace} logs -f -l app={name} -c {CONTAINER_NAME} --prefix --max-log-requests=64",
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
    labels: dict[str, str],
    gcp_labels: dict[str, str],
    prefix: str,
    opts: pulumi.ResourceOptions | None = None,
) -> dict[str, pulumi.Input[object]]:
    """Declare the autoscaler (+ metrics adapter), the schedule and the monitoring; return outputs.
    Logical names start with `prefix`; `opts` goes under every declaration."""
    namespace = config.cluster.namespace
    name = config.routing.service_name
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
            project_id=config.project,
            opts=pulumi.InvokeOutputOptions(provider=gcp_provider, depends_on=list(gcp_apis)),
        ).number
        adapter = MetricsAdapter(
            f"{prefix}-metrics-adapter",
            MetricsAdapterArgs(
                project=config.project,
                project_number=project_number,
                workload_pool=target.workload_pool,
                labels=labels,
                # On a cluster the stack does not manage the adapter may come to serve other workloads'
                # autoscalers: `destroy` leaves it.
                retain_on_delete=config.cluster.existing,
            ),
            opts=in_cluster,
        )
        adapters.append(adapter)
    if config.autoscaling.enabled:
        metric, metric_target = autoscaling_metric(config)
        scaling = config.autoscaling
        autoscaler = ServingAutoscaler(
            f"{prefix}-autoscaler",
            ServingAutoscalerArgs(
                name=name,
                namespace=namespace,
                deployment=name,
                min_replicas=scaling.min_replicas,
                max_replicas=config.max_replicas,
                metric_name=metric,
                target_average_value=metric_target,
                scale_up_period_seconds=scaling.scale_up_period_seconds,
                scale_down_stabilization_seconds=scale_down_stabilization_seconds(config),
                scale_down_period_seconds=scaling.scale_down_period_seconds,
                labels=labels,
                annotations={
                    TIME_TO_SERVE_ANNOTATION: str(time_to_serve(config).planning_seconds),
                    TIME_TO_SERVE_BOUND_ANNOTATION: str(config.time_to_serve.bound_seconds),
                },
            ),
            opts=pulumi.ResourceOptions.merge(
                opts, pulumi.ResourceOptions(provider=kubernetes, depends_on=[deployment, *adapters])
            ),
        )
        outputs["autoscaler"] = autoscaler.autoscaler.metadata.name

    steps = schedule_steps(config)
    buffer_name = None
    if config.warm_capacity.enabled:
        buffer_name = f"{name}-held"
        warm = WarmCapacity(
            f"{prefix}-warm-capacity",
            WarmCapacityArgs(
                name=buffer_name,
                namespace=namespace,
                deployment=name,
                nodes=config.warm_capacity.nodes,
                scheduled=config.schedule.enabled,
                labels=labels,
            ),
            opts=after_deployment,
        )
        outputs["capacityBuffer"] = warm.buffer.metadata.apply(lambda meta: meta["name"])
    if config.schedule.enabled:
        schedule = ScaleSchedule(
            f"{prefix}-schedule",
            ScaleScheduleArgs(
                name=SCHEDULE_NAME,
                namespace=namespace,
                deployment=name,
                time_zone=config.schedule.time_zone,
                steps=steps,
                labels=labels,
                capacity_buffer=buffer_name,
            ),
            opts=after_deployment,
        )
        outputs["scheduleCronJobs"] = [job.metadata.name for job in schedule.cron_jobs]

    alerts = config.monitoring.alerts
    speculative = config.engine.speculative is not None
    queries = queries_for(config)
    time_to_ready = time_to_ready_metric(config)
    monitoring = ServingMonitoring(
        f"{prefix}-monitoring",
        ServingMonitoringArgs(
            project=config.project,
            title=f"{config.cluster.name} {config.environment.value} serving",
            queries=queries,
            charts=[
                *serving_charts(
                    queries,
                    speculative=speculative,
                    gateway=config.routing.mode is RoutingMode.gateway,
                    autoscaling=config.autoscaling.enabled,
                ),
                *([time_to_ready.chart()] if time_to_ready is not None else []),
            ]
            if config.monitoring.dashboard
            else [],
            time_to_ready=time_to_ready,
            alerts=serving_alerts(
                queries,
                AlertThresholds(
                    queue_waiting=alerts.queue_waiting_threshold,
                    kv_cache_usage=alerts.kv_cache_usage_threshold,
                    min_mtp_acceptance=alerts.min_mtp_acceptance,
                    pending_seconds=alerts.pending_seconds,
                    cold_start_seconds=no_ready_replica_seconds(config),
                ),
                speculative=speculative,
            ),
            alerts_enabled=alerts.enabled,
            download_job_name=download_job_name,
            notification_channel=alerts.notification_channel,
            notification_email=alerts.email,
            labels=gcp_labels,
            requires=gcp_apis,
        ),
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(providers=[gcp_provider])),
    )
    if monitoring.dashboard_url is not None:
        outputs["dashboardUrl"] = monitoring.dashboard_url
    return outputs
