"""The operations components' queries and names on their own: Managed Prometheus names, the PromQL
the dashboard and alerts read, and the pending-pods alert's selector."""

from __future__ import annotations

import re

import pytest

from components.metrics import (
    KNOWN,
    MetricType,
    ServingQueries,
    deployment_pod_pattern,
)
from components.monitoring import AlertThresholds, serving_alerts, serving_charts
from tests.promql import KNOWN_SERIES, series_names

SERVING = "qwen-serving"
NAMESPACE = "llm-serving"
QUERIES = ServingQueries(namespace=NAMESPACE, deployment=SERVING, served_model_name="Qwen/Qwen3.5-27B-FP8")
THRESHOLDS = AlertThresholds(
    queue_waiting=200, kv_cache_usage=0.9, min_mtp_acceptance=0.5, pending_seconds=720, cold_start_seconds=1320
)


def test_managed_prometheus_names() -> None:
    assert (
        KNOWN["vllm:num_requests_waiting"].adapter_name == "prometheus.googleapis.com|vllm:num_requests_waiting|gauge"
    )
    assert KNOWN["vllm:generation_tokens"].cloud_monitoring_type == (
        "prometheus.googleapis.com/vllm:generation_tokens_total/counter"
    )
    assert KNOWN["vllm:time_to_first_token_seconds"].cloud_monitoring_type == (
        "prometheus.googleapis.com/vllm:time_to_first_token_seconds/histogram"
    )
    assert KNOWN["DCGM_FI_DEV_GPU_UTIL"].cloud_monitoring_type == "prometheus.googleapis.com/DCGM_FI_DEV_GPU_UTIL/gauge"


def test_the_name_check_can_fail() -> None:
    # vLLM 0.19 has no gpu_cache_usage_perc (renamed kv_cache_usage_perc) and counters end in _total.
    assert not series_names("avg(vllm:gpu_cache_usage_perc{pod='a'})") <= KNOWN_SERIES
    assert not series_names("sum(rate(vllm:generation_tokens{pod='a'}[5m]))") <= KNOWN_SERIES


@pytest.mark.parametrize("speculative", [True, False])
@pytest.mark.parametrize("gateway", [True, False])
def test_every_query_selects_known_metrics(speculative: bool, gateway: bool) -> None:
    charts = serving_charts(QUERIES, speculative=speculative, gateway=gateway, autoscaling=True)
    queries = [series.query for chart in charts for series in chart.series]
    queries += [alert.query for alert in serving_alerts(QUERIES, THRESHOLDS, speculative=speculative)]
    for query in queries:
        names = series_names(query)
        assert names, query
        assert names <= KNOWN_SERIES, f"unknown metric in {query}: {names - KNOWN_SERIES}"


VLLM_SELECTOR = re.compile(r"vllm:[a-z_]+\{")
AGGREGATED = re.compile(r"(sum|avg)( by \((pod|le)\))?\((rate|delta)?\(?$")


def test_every_vllm_series_is_aggregated_over_engines() -> None:
    """With data parallel 8 each pod exports one series per engine: no query may show them raw."""
    charts = serving_charts(QUERIES, speculative=True, gateway=False, autoscaling=True)
    queries = [series.query for chart in charts for series in chart.series]
    queries += [alert.query for alert in serving_alerts(QUERIES, THRESHOLDS, speculative=True)]
    for query in queries:
        for match in VLLM_SELECTOR.finditer(query):
            assert AGGREGATED.search(query[: match.start()]), f"per-engine series not aggregated in {query}"
        assert "by (engine" not in query


def test_counters_are_rates_and_histograms_quantiles() -> None:
    assert QUERIES.tokens_per_second("vllm:generation_tokens") == (
        'sum(rate(vllm:generation_tokens_total{namespace="llm-serving",model_name="Qwen/Qwen3.5-27B-FP8"}[5m]))'
    )
    assert QUERIES.latency_quantile("vllm:time_to_first_token_seconds", 0.99).startswith(
        "histogram_quantile(0.99, sum by (le)(rate(vllm:time_to_first_token_seconds_bucket{"
    )
    assert {metric.type for metric in KNOWN.values()} == set(MetricType)


@pytest.mark.parametrize(
    ("pod", "selected"),
    [
        ("qwen-serving-7d4f9c6b58-x2kqz", True),
        ("qwen-serving-5-bcdfg", True),
        ("qwen-serving-crds-x2kqz", False),  # the CRD wait Job, named after the service
        ("qwen-serving-bench-0-x2kqz", False),
        ("qwen-serving-benchmark-x2kqz", False),
        ("qwen-serving-schedule-wake-29111234-x2kqz", False),
        ("qwen-serving-epp-7d4f9c6b58-x2kqz", False),  # another Deployment named after the service
        ("qwen-serving-7d4f9c6b58-x2kq", False),
    ],
)
def test_pending_alert_selects_the_serving_deployments_pods_only(pod: str, selected: bool) -> None:
    pattern = re.search(r'pod=~"([^"]+)"', QUERIES.pending_pods())
    assert pattern is not None
    assert bool(re.fullmatch(pattern.group(1), pod)) is selected


SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # apimachinery pkg/util/rand SafeEncodeString


def generated_pod_name(owner: str, random_part: str = "x2kqz") -> str:
    """The API server's name for a pod with generateName `<owner>-`: cut to 58, then 5 characters."""
    return f"{owner}-"[:58] + random_part


@pytest.mark.parametrize("length", [12, 45, 46, 47, 50, 54, 55])
@pytest.mark.parametrize("template_hash", [7, 1234567, 4294967295])
def test_pending_alert_follows_the_name_cut_of_long_deployment_names(length: int, template_hash: int) -> None:
    """A long Deployment name loses the end of `<hash>-` in its pods' names (58-character generateName);
    the serving pods still match, a Job named after the service still does not."""
    deployment = ("qwen-" + "s" * 60)[:length]
    encoded = "".join(SAFE_ALPHABET[ord(digit) % len(SAFE_ALPHABET)] for digit in str(template_hash))
    pattern = deployment_pod_pattern(deployment)
    assert re.fullmatch(pattern, generated_pod_name(f"{deployment}-{encoded}"))
    for other in ("crds", "bench", f"epp-{encoded}"):  # two Jobs and the picker's Deployment
        assert not re.fullmatch(pattern, generated_pod_name(f"{deployment}-{other}"))
