"""ServingMonitoring and the PromQL it is built from, on their own: dashboard, channel, alert policies."""

from __future__ import annotations

import dataclasses
import json

from components.metrics import KNOWN, ServingQueries
from components.monitoring import (
    AlertThresholds,
    ServingMonitoring,
    ServingMonitoringArgs,
    serving_alerts,
    serving_charts,
)
from tests.construct import Built, build, children_are_parented, has_resource, of_type, resource_count_is
from tests.promql import KNOWN_SERIES, series_names

QUERIES = ServingQueries(namespace="serving", deployment="qwen", served_model_name="m")
THRESHOLDS = AlertThresholds(
    queue_waiting=200, kv_cache_usage=0.9, min_mtp_acceptance=0.5, pending_seconds=720, cold_start_seconds=960
)
ARGS = ServingMonitoringArgs(
    project="my-proj",
    title="c1 dev serving",
    queries=QUERIES,
    charts=serving_charts(QUERIES, speculative=True, gateway=False, autoscaling=False),
    alerts=serving_alerts(QUERIES, THRESHOLDS, speculative=True),
    alerts_enabled=True,
    download_job_name="weights-abc-download",
    notification_email="oncall@example.com",
    labels={"app": "test"},
)
POLICY = "gcp:monitoring/alertPolicy:AlertPolicy"


def build_monitoring(**changes: object) -> Built:
    args = dataclasses.replace(ARGS, **changes)  # type: ignore[arg-type]
    return build(lambda: ServingMonitoring("mon", args))


def test_queries_select_known_series_of_this_deployment_and_model() -> None:
    waiting = QUERIES.requests("vllm:num_requests_waiting", by_pod=True)
    assert waiting == 'sum by (pod)(vllm:num_requests_waiting{namespace="serving",model_name="m"})'
    # Counters are exposed with `_total`; histograms are read through their buckets.
    assert "vllm:generation_tokens_total{" in QUERIES.tokens_per_second("vllm:generation_tokens")
    assert "vllm:time_to_first_token_seconds_bucket{" in QUERIES.latency_quantile(
        "vllm:time_to_first_token_seconds", 0.99
    )
    for alert in ARGS.alerts:
        assert series_names(alert.query) <= KNOWN_SERIES, alert.key
    assert (
        KNOWN["vllm:num_requests_waiting"].adapter_name == "prometheus.googleapis.com|vllm:num_requests_waiting|gauge"
    )


def test_dashboard_email_channel_and_one_policy_per_alert() -> None:
    records = build_monitoring()
    dashboard = has_resource(records, "gcp:monitoring/dashboard:Dashboard", {"project": "my-proj"})
    assert json.loads(dashboard.inputs["dashboardJson"])["displayName"] == "c1 dev serving"
    has_resource(
        records,
        "gcp:monitoring/notificationChannel:NotificationChannel",
        {"type": "email", "labels": {"email_address": "oncall@example.com"}},
    )
    # The PromQL alerts (MTP included, speculative decoding is on) and the failed-download log alert.
    resource_count_is(records, POLICY, len(ARGS.alerts) + 1)
    has_resource(
        records,
        POLICY,
        {
            "displayName": "c1 dev serving: KV cache above threshold",
            "conditions": [{"conditionPrometheusQueryLanguage": {"duration": "600s"}}],
            "notificationChannels": ["projects/my-proj/notificationChannels/mon-email"],
            "userLabels": {"app": "test"},
        },
    )
    download = has_resource(records, POLICY, {"displayName": "c1 dev serving: weight download Job failed"})
    log_filter = download.inputs["conditions"][0]["conditionMatchedLog"]["filter"]
    assert 'jsonPayload.involvedObject.name="weights-abc-download"' in log_filter
    children_are_parented(records, "llm-serving:operations:ServingMonitoring", "mon")


def test_an_existing_channel_and_alerts_off() -> None:
    existing = "projects/my-proj/notificationChannels/42"
    records = build_monitoring(notification_channel=existing, notification_email=None)
    resource_count_is(records, "gcp:monitoring/notificationChannel:NotificationChannel", 0)
    assert {tuple(policy.inputs["notificationChannels"]) for policy in of_type(records, POLICY)} == {(existing,)}
    quiet = build_monitoring(alerts_enabled=False, charts=())
    resource_count_is(quiet, POLICY, 0)
    resource_count_is(quiet, "gcp:monitoring/dashboard:Dashboard", 0)


def test_no_mtp_alert_without_speculative_decoding_and_no_download_alert_once_served() -> None:
    records = build_monitoring(alerts=serving_alerts(QUERIES, THRESHOLDS, speculative=False), download_job_name=None)
    titles = {policy.inputs["displayName"] for policy in of_type(records, POLICY)}
    assert "c1 dev serving: MTP acceptance collapsed" not in titles
    assert "c1 dev serving: weight download Job failed" not in titles
    has_resource(records, POLICY, {"displayName": "c1 dev serving: No ready serving replica", "severity": "CRITICAL"})
