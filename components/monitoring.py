"""The on-call view of the serving stack: a Cloud Monitoring dashboard and alert policies. The
dashboard JSON is built from typed charts (`Chart`, `Series`) and PromQL from `components.metrics`,
plus one chart of a log-based metric (`TimeToReady`): the serving pods' time to ready, extracted
from the STARTUP_PHASES lines the benchmark Job prints (components/startup_report.py), one value
per pod each time the Job runs. The alert policies use PromQL conditions (Managed Service for
Prometheus data) and one log-match condition for the weight download Job (GKE has no kube state
metrics package for Jobs). PromQL conditions skip metric validation: on the first `pulumi up` no
vLLM, DCGM or Endpoint Picker series exists yet, and Cloud Monitoring would refuse the policy.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import pulumi
import pulumi_gcp as gcp

from common.text import human_duration
from components.metrics import ServingQueries
from components.startup_report import PREFIX as STARTUP_PREFIX

GRID_COLUMNS = 48
TILE_WIDTH = 24
TILE_HEIGHT = 16
EVALUATION_INTERVAL = "60s"


@dataclass(frozen=True)
class Series:
    query: str
    legend: str


@dataclass(frozen=True)
class Chart:
    title: str
    unit: str
    series: Sequence[Series]

    def widget(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "xyChart": {
                "dataSets": [
                    {
                        "timeSeriesQuery": {"prometheusQuery": series.query, "unitOverride": self.unit},
                        "plotType": "LINE",
                        "legendTemplate": series.legend,
                    }
                    for series in self.series
                ],
                "yAxis": {"label": self.unit, "scale": "LINEAR"},
            },
        }


@dataclass(frozen=True)
class TimeToReady:
    """A log-based distribution metric (Cloud Logging `LogMetric`: filter, valueExtractor with
    REGEXP_EXTRACT, labelExtractors) of the `readySeconds` of every STARTUP_PHASES line the
    benchmark container writes, labelled with the serving pod it reports."""

    name: str
    namespace: str
    container: str

    @property
    def metric_type(self) -> str:
        return f"logging.googleapis.com/user/{self.name}"

    def log_filter(self) -> str:
        return (
            f'resource.type="k8s_container" AND resource.labels.namespace_name="{self.namespace}" '
            f'AND resource.labels.container_name="{self.container}" AND textPayload:"{STARTUP_PREFIX}"'
        )

    def chart(self) -> FilterChart:
        return FilterChart(
            "Time to ready per serving pod (start-up report)",
            "s",
            f'metric.type="{self.metric_type}"',
            group_by="metric.label.serving_pod",
        )


@dataclass(frozen=True)
class FilterChart:
    """A chart of a Cloud Monitoring metric by its type (not PromQL): the largest value per group
    over each hour (a distribution's 99th percentile within its buckets)."""

    title: str
    unit: str
    filter: str
    group_by: str

    def widget(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "xyChart": {
                "dataSets": [
                    {
                        "timeSeriesQuery": {
                            "timeSeriesFilter": {
                                "filter": self.filter,
                                "aggregation": {
                                    "alignmentPeriod": "3600s",
                                    "perSeriesAligner": "ALIGN_PERCENTILE_99",
                                    "crossSeriesReducer": "REDUCE_MAX",
                                    "groupByFields": [self.group_by],
                                },
                            },
                            "unitOverride": self.unit,
                        },
                        "plotType": "STACKED_BAR",
                    }
                ],
                "yAxis": {"label": self.unit, "scale": "LINEAR"},
            },
        }


def _tile(index: int, chart: Chart | FilterChart) -> dict[str, Any]:
    per_row = GRID_COLUMNS // TILE_WIDTH
    position = {"xPos": (index % per_row) * TILE_WIDTH, "yPos": (index // per_row) * TILE_HEIGHT}
    # The API leaves zero coordinates out of what it returns, and the provider's diff suppression only
    # drops keys the program lacks (terraform-provider-google resource_monitoring_dashboard.go,
    # monitoringDashboardDiffSuppress): writing `"xPos": 0` would show a diff on every refresh.
    return {
        **{key: value for key, value in position.items() if value},
        "width": TILE_WIDTH,
        "height": TILE_HEIGHT,
        "widget": chart.widget(),
    }


def dashboard_json(title: str, charts: Sequence[Chart | FilterChart]) -> str:
    """A mosaic layout, two charts per row."""
    tiles = [_tile(index, chart) for index, chart in enumerate(charts)]
    return json.dumps({"displayName": title, "mosaicLayout": {"columns": GRID_COLUMNS, "tiles": tiles}}, sort_keys=True)


# Cloud Monitoring's legend template interpolates ${label_name} (Dashboard API, DataSet.legendTemplate).
POD_LEGEND = "${pod}"


def serving_charts(queries: ServingQueries, speculative: bool, gateway: bool, autoscaling: bool) -> list[Chart]:
    q = queries
    charts = [
        Chart(
            "Generation tokens/s",
            "1/s",
            [
                Series(q.tokens_per_second("vllm:generation_tokens"), "total"),
                Series(q.tokens_per_second("vllm:generation_tokens", by_pod=True), POD_LEGEND),
            ],
        ),
        Chart(
            "Prompt tokens/s",
            "1/s",
            [
                Series(q.tokens_per_second("vllm:prompt_tokens"), "total"),
                Series(q.tokens_per_second("vllm:prompt_tokens", by_pod=True), POD_LEGEND),
            ],
        ),
        Chart(
            "Requests running",
            "1",
            [
                Series(q.requests("vllm:num_requests_running"), "total"),
                Series(q.requests("vllm:num_requests_running", by_pod=True), POD_LEGEND),
            ],
        ),
        Chart(
            "Requests waiting (the autoscaler's signal)",
            "1",
            [
                Series(q.requests("vllm:num_requests_waiting"), "total"),
                Series(q.requests("vllm:num_requests_waiting", by_pod=True), POD_LEGEND),
            ],
        ),
        Chart("KV cache usage (mean of a pod's engines)", "10^2.%", [Series(q.kv_cache_usage_by_pod(), POD_LEGEND)]),
        Chart(
            "Time to first token",
            "s",
            [
                Series(q.latency_quantile("vllm:time_to_first_token_seconds", 0.5), "p50"),
                Series(q.latency_quantile("vllm:time_to_first_token_seconds", 0.99), "p99"),
            ],
        ),
        Chart(
            "Time per output token (per request)",
            "s",
            [
                Series(q.latency_quantile("vllm:request_time_per_output_token_seconds", 0.5), "p50"),
                Series(q.latency_quantile("vllm:request_time_per_output_token_seconds", 0.99), "p99"),
            ],
        ),
        Chart(
            "Inter-token latency",
            "s",
            [
                Series(q.latency_quantile("vllm:inter_token_latency_seconds", 0.5), "p50"),
                Series(q.latency_quantile("vllm:inter_token_latency_seconds", 0.99), "p99"),
            ],
        ),
        Chart("Preemptions/s", "1/s", [Series(q.preemptions_per_second(), "preemptions")]),
        Chart("GPU utilisation", "%", [Series(q.gpu("DCGM_FI_DEV_GPU_UTIL", "avg"), "mean of all GPUs")]),
        Chart("GPU power", "W", [Series(q.gpu("DCGM_FI_DEV_POWER_USAGE", "sum"), "all GPUs")]),
        Chart("GPU memory used", "MiBy", [Series(q.gpu("DCGM_FI_DEV_FB_USED", "sum"), "all GPUs")]),
        Chart(
            "Replicas and pending pods",
            "1",
            [
                Series(q.desired_replicas(), "desired"),
                Series(q.available_replicas(), "available"),
                Series(q.pending_pods(), "pending (capacity)"),
                *([Series(q.autoscaler_desired_replicas(), "autoscaler wants")] if autoscaling else []),
            ],
        ),
    ]
    if speculative:
        charts.append(
            Chart("MTP acceptance rate (accepted / drafted tokens)", "1", [Series(q.mtp_acceptance(), "acceptance")])
        )
    if gateway:
        charts.append(
            Chart(
                "Endpoint Picker view of the pool",
                "1",
                [
                    Series(q.pool("llm_d_epp_average_queue_size"), "mean queue"),
                    Series(q.pool("llm_d_epp_average_kv_cache_utilization"), "mean KV cache"),
                    Series(q.pool("llm_d_epp_ready_endpoints"), "ready endpoints"),
                ],
            )
        )
    return charts


class Severity(StrEnum):
    critical = "CRITICAL"
    error = "ERROR"
    warning = "WARNING"


@dataclass(frozen=True)
class PromQlAlert:
    key: str
    title: str
    query: str
    duration_seconds: int
    severity: Severity
    runbook: str


# A queue above its threshold and growing for this long alerts (without an autoscaler that may still be adding pods).
QUEUE_ALERT_SECONDS = 600


@dataclass(frozen=True)
class AlertThresholds:
    queue_waiting: int
    kv_cache_usage: float
    min_mtp_acceptance: float
    pending_seconds: int
    cold_start_seconds: int
    # How long a queue may grow before it alerts: longer than a new replica's start when an autoscaler adds pods.
    queue_seconds: int = QUEUE_ALERT_SECONDS


def serving_alerts(queries: ServingQueries, thresholds: AlertThresholds, speculative: bool) -> list[PromQlAlert]:
    q = queries
    alerts = [
        PromQlAlert(
            "no-ready-replica",
            "No ready serving replica",
            f"({q.desired_replicas()} > 0) and ({q.available_replicas()} < 1)",
            # A scale-up from zero (schedule, first deploy) legitimately has no ready pod for one cold start.
            thresholds.cold_start_seconds,
            Severity.critical,
            "Pods wanted but none ready for longer than a cold start. See `pendingReason` and `tailLogs`.",
        ),
        PromQlAlert(
            "queue-growing",
            f"Request queue growing for {human_duration(thresholds.queue_seconds)}",
            f"({q.requests('vllm:num_requests_waiting')} > {thresholds.queue_waiting}) "
            f"and ({q.waiting_change('10m')} > 0)",
            thresholds.queue_seconds,
            Severity.error,
            f"Waiting requests above the threshold, and higher than 10 minutes ago, for {thresholds.queue_seconds} s "
            "(with an autoscaler, longer than a new replica takes to serve: its scale-up had time to land): add "
            "capacity (`scaleByHand`) or check why the autoscaler does not (max replicas, pending pods).",
        ),
        PromQlAlert(
            "kv-cache-full",
            "KV cache above threshold",
            f"max({q.kv_cache_usage_by_pod()}) > {thresholds.kv_cache_usage}",
            600,
            Severity.warning,
            "A pod's engines hold more KV cache than the threshold for 10 minutes: requests queue and "
            "get preempted. Scale out or lower the concurrency sent to each pod.",
        ),
        PromQlAlert(
            "pods-pending",
            "Serving pods pending for capacity",
            f"{q.pending_by_pod()} > 0",
            thresholds.pending_seconds,
            Severity.error,
            "A pod Pending longer than A4 provisioning and its image pull take: no Spot/Flex-start/reservation "
            "capacity. See `pendingReason`.",
        ),
    ]
    if speculative:
        alerts.append(
            PromQlAlert(
                "mtp-acceptance-collapsed",
                "MTP acceptance collapsed",
                f"({q.mtp_acceptance('15m')} < {thresholds.min_mtp_acceptance}) "
                f"and ({q.drafted_per_second('15m')} > 0)",
                900,
                Severity.warning,
                "Accepted/drafted tokens fell under the threshold (~0.9 with MTP-1 in the benchmark write-up, where "
                "serving without MTP was about a third slower): the drafts cost compute and save little. Check the "
                "model revision and the speculative config.",
            )
        )
    return alerts


def job_failed_filter(namespace: str, job_name: str) -> str:
    """Cloud Logging filter of the Job controller's event when a Job gives up: its retries spent
    (BackoffLimitExceeded) or its activeDeadlineSeconds passed (DeadlineExceeded, a stalled download)."""
    return (
        'log_id("events") AND jsonPayload.reason=("BackoffLimitExceeded" OR "DeadlineExceeded") '
        f'AND jsonPayload.involvedObject.kind="Job" AND jsonPayload.involvedObject.namespace="{namespace}" '
        f'AND jsonPayload.involvedObject.name="{job_name}"'
    )


@dataclass(frozen=True)
class ServingMonitoringArgs:
    project: str
    title: str
    queries: ServingQueries
    charts: Sequence[Chart | FilterChart]
    alerts: Sequence[PromQlAlert]
    alerts_enabled: bool
    download_job_name: pulumi.Input[str] | None
    notification_channel: str | None = None
    notification_email: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    # The log-based metric of the serving pods' time to ready (with the benchmark Job), if any.
    time_to_ready: TimeToReady | None = None
    # The Cloud Monitoring API must be on before the first dashboard or policy is created.
    requires: Sequence[pulumi.Resource] = ()


class ServingMonitoring(pulumi.ComponentResource):
    TYPE = "llm-serving:operations:ServingMonitoring"
    dashboard: gcp.monitoring.Dashboard | None
    time_to_ready_metric: gcp.logging.Metric | None
    channel: gcp.monitoring.NotificationChannel | None
    alert_policies: list[gcp.monitoring.AlertPolicy]
    dashboard_url: pulumi.Output[str] | None

    def __init__(self, name: str, args: ServingMonitoringArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(self.TYPE, name, None, opts)
        child = pulumi.ResourceOptions(parent=self, depends_on=list(args.requires))
        self.dashboard = None
        self.dashboard_url = None
        self.time_to_ready_metric = None
        ready = args.time_to_ready
        if ready is not None:
            self.time_to_ready_metric = gcp.logging.Metric(
                f"{name}-time-to-ready",
                project=args.project,
                name=ready.name,
                description="Seconds from creation to Ready of each serving pod, from the benchmark Job's "
                "STARTUP_PHASES lines (components/startup_report.py).",
                filter=ready.log_filter(),
                metric_descriptor=gcp.logging.MetricMetricDescriptorArgs(
                    metric_kind="DELTA",
                    value_type="DISTRIBUTION",
                    unit="s",
                    display_name="Serving pod time to ready",
                    labels=[
                        gcp.logging.MetricMetricDescriptorLabelArgs(
                            key="serving_pod", value_type="STRING", description="The serving pod reported."
                        )
                    ],
                ),
                value_extractor='REGEXP_EXTRACT(textPayload, "\\"readySeconds\\":([0-9.]+)")',
                label_extractors={"serving_pod": 'REGEXP_EXTRACT(textPayload, "\\"pod\\":\\"([^\\"]+)\\"")'},
                # 30 s buckets up to an hour: a percentile of one pod's value is within 30 s of it.
                bucket_options=gcp.logging.MetricBucketOptionsArgs(
                    linear_buckets=gcp.logging.MetricBucketOptionsLinearBucketsArgs(
                        num_finite_buckets=120, width=30, offset=0
                    )
                ),
                opts=child,
            )
        if args.charts:
            self.dashboard = gcp.monitoring.Dashboard(
                f"{name}-dashboard",
                project=args.project,
                dashboard_json=dashboard_json(args.title, args.charts),
                opts=child,
            )
            self.dashboard_url = self.dashboard.id.apply(
                lambda dashboard_id: (
                    "https://console.cloud.google.com/monitoring/dashboards/builder/"
                    f"{dashboard_id.split('/')[-1]}?project={args.project}"
                )
            )

        self.channel = None
        channels: list[pulumi.Input[str]] = []
        if args.notification_channel:
            channels.append(args.notification_channel)
        elif args.notification_email:
            self.channel = gcp.monitoring.NotificationChannel(
                f"{name}-email",
                project=args.project,
                display_name=f"{args.title} on-call",
                type="email",
                labels={"email_address": args.notification_email},
                opts=child,
            )
            channels.append(self.channel.name)

        self.alert_policies = []
        if args.alerts_enabled:
            self.alert_policies = [self._promql_policy(name, args, alert, channels) for alert in args.alerts]
            if args.download_job_name is not None:
                self.alert_policies.append(self._job_failed_policy(name, args, channels))
        self.register_outputs(
            {
                "dashboard": self.dashboard.id if self.dashboard else None,
                "timeToReadyMetric": self.time_to_ready_metric.name if self.time_to_ready_metric else None,
                "alertPolicies": [policy.name for policy in self.alert_policies],
            }
        )

    def _promql_policy(
        self, name: str, args: ServingMonitoringArgs, alert: PromQlAlert, channels: list[pulumi.Input[str]]
    ) -> gcp.monitoring.AlertPolicy:
        return gcp.monitoring.AlertPolicy(
            f"{name}-{alert.key}",
            project=args.project,
            display_name=f"{args.title}: {alert.title}",
            combiner="OR",
            severity=alert.severity.value,
            conditions=[
                gcp.monitoring.AlertPolicyConditionArgs(
                    display_name=alert.title,
                    condition_prometheus_query_language=gcp.monitoring.AlertPolicyConditionConditionPrometheusQueryLanguageArgs(
                        query=alert.query,
                        duration=f"{alert.duration_seconds}s",
                        evaluation_interval=EVALUATION_INTERVAL,
                        disable_metric_validation=True,
                    ),
                )
            ],
            documentation=gcp.monitoring.AlertPolicyDocumentationArgs(content=alert.runbook, mime_type="text/markdown"),
            notification_channels=channels,
            user_labels=args.labels,
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.requires)),
        )

    def _job_failed_policy(
        self, name: str, args: ServingMonitoringArgs, channels: list[pulumi.Input[str]]
    ) -> gcp.monitoring.AlertPolicy:
        namespace = args.queries.namespace
        log_filter = pulumi.Output.from_input(args.download_job_name).apply(
            lambda job: job_failed_filter(namespace, str(job))
        )
        return gcp.monitoring.AlertPolicy(
            f"{name}-download-failed",
            project=args.project,
            display_name=f"{args.title}: weight download Job failed",
            combiner="OR",
            severity=Severity.error.value,
            conditions=[
                gcp.monitoring.AlertPolicyConditionArgs(
                    display_name="Download Job exceeded its retries",
                    condition_matched_log=gcp.monitoring.AlertPolicyConditionConditionMatchedLogArgs(filter=log_filter),
                )
            ],
            # Log-match conditions require a notification rate limit.
            alert_strategy=gcp.monitoring.AlertPolicyAlertStrategyArgs(
                notification_rate_limit=gcp.monitoring.AlertPolicyAlertStrategyNotificationRateLimitArgs(
                    period="3600s"
                ),
                auto_close="86400s",
            ),
            documentation=gcp.monitoring.AlertPolicyDocumentationArgs(
                content="The Job that copies the checkpoint onto the weight disk gave up: no pod can start. "
                "`kubectl logs job/<name>` in the serving namespace tells why (token, network, disk).",
                mime_type="text/markdown",
            ),
            notification_channels=channels,
            user_labels=args.labels,
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.requires)),
        )
