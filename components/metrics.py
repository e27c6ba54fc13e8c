"""The metrics the stack scales and alerts on, and the PromQL built from them.

Every query of the dashboard, the alert policies and the autoscaler is built here from `KNOWN`, a
table of metric names and Prometheus types checked at their source:

- vLLM v0.19.0 (`vllm/v1/metrics/loggers.py`, `vllm/v1/spec_decode/metrics.py` of the v0.19.0
  wheel): every series carries `model_name` and `engine`; with data parallel 8 a pod exports one
  series per engine (`engine="0"` .. `"7"`), so a per-pod value is a `sum by (pod)` (queues, tokens)
  or an `avg by (pod)` (KV-cache usage) over its engines. prometheus_client exposes counters with
  a `_total` suffix and histograms as `_bucket` / `_sum` / `_count`.
- GKE managed DCGM ("Collect and view DCGM metrics"): DCGM-Exporter field names.
- GKE kube state metrics package ("Collect and view kube state metrics", enable_components POD,
  DEPLOYMENT, HPA): kube-state-metrics names. GKE has no JOB package (GKE API
  MonitoringComponentConfig.Component lists JOBSET only), so the download Job is watched through
  its Kubernetes events in Cloud Logging instead.
- Endpoint Picker, llm-d-router@v0.10.0:pkg/epp/metrics/llm_d_router_metrics.go (subsystem
  `llm_d_epp`; pool metrics labelled `name`, poolLabels in metrics.go). The v1.4.0 names
  (`inference_pool_*`) are still exported there, marked deprecated.

Google Cloud Managed Service for Prometheus stores each as
`prometheus.googleapis.com/<name>/<gauge|counter|histogram>` (kube state metrics docs, "Metric
format"); PromQL in Cloud Monitoring uses the Prometheus names.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

RATE_WINDOW = "5m"


class MetricType(StrEnum):
    gauge = "gauge"
    counter = "counter"
    histogram = "histogram"


class Source(StrEnum):
    vllm = "vLLM v0.19.0"
    dcgm = "GKE managed DCGM"
    kube_state = "GKE kube state metrics"
    epp = "Endpoint Picker llm-d-router v0.10.0"


@dataclass(frozen=True)
class Metric:
    name: str
    type: MetricType
    source: Source

    @property
    def cloud_monitoring_type(self) -> str:
        """The metric type Managed Service for Prometheus writes to Cloud Monitoring."""
        return f"prometheus.googleapis.com/{self.exposed_name}/{self.type.value}"

    @property
    def exposed_name(self) -> str:
        """The name on the /metrics page (prometheus_client adds `_total` to counters)."""
        if self.type is MetricType.counter and not self.name.endswith("_total"):
            return f"{self.name}_total"
        return self.name

    @property
    def adapter_name(self) -> str:
        """The name an HPA asks the Custom Metrics Stackdriver Adapter for (`/` replaced by `|`)."""
        return self.cloud_monitoring_type.replace("/", "|")


def _table(*metrics: Metric) -> dict[str, Metric]:
    return {metric.name: metric for metric in metrics}


KNOWN: dict[str, Metric] = _table(
    Metric("vllm:num_requests_running", MetricType.gauge, Source.vllm),
    Metric("vllm:num_requests_waiting", MetricType.gauge, Source.vllm),
    Metric("vllm:kv_cache_usage_perc", MetricType.gauge, Source.vllm),
    Metric("vllm:num_preemptions", MetricType.counter, Source.vllm),
    Metric("vllm:prompt_tokens", MetricType.counter, Source.vllm),
    Metric("vllm:generation_tokens", MetricType.counter, Source.vllm),
    Metric("vllm:time_to_first_token_seconds", MetricType.histogram, Source.vllm),
    Metric("vllm:inter_token_latency_seconds", MetricType.histogram, Source.vllm),
    Metric("vllm:request_time_per_output_token_seconds", MetricType.histogram, Source.vllm),
    Metric("vllm:spec_decode_num_draft_tokens", MetricType.counter, Source.vllm),
    Metric("vllm:spec_decode_num_accepted_tokens", MetricType.counter, Source.vllm),
    Metric("DCGM_FI_DEV_GPU_UTIL", MetricType.gauge, Source.dcgm),
    Metric("DCGM_FI_DEV_POWER_USAGE", MetricType.gauge, Source.dcgm),
    Metric("DCGM_FI_DEV_FB_USED", MetricType.gauge, Source.dcgm),
    Metric("kube_deployment_spec_replicas", MetricType.gauge, Source.kube_state),
    Metric("kube_deployment_status_replicas_available", MetricType.gauge, Source.kube_state),
    Metric("kube_pod_status_phase", MetricType.gauge, Source.kube_state),
    Metric("kube_horizontalpodautoscaler_status_desired_replicas", MetricType.gauge, Source.kube_state),
    Metric("llm_d_epp_average_queue_size", MetricType.gauge, Source.epp),
    Metric("llm_d_epp_average_kv_cache_utilization", MetricType.gauge, Source.epp),
    Metric("llm_d_epp_ready_endpoints", MetricType.gauge, Source.epp),
)

# The kube state metrics packages (cluster monitoring_config.enable_components) the queries need.
KUBE_STATE_COMPONENTS = ("POD", "DEPLOYMENT", "HPA")

# A Deployment's pods are named <deployment>-<pod-template-hash>-<5 random characters>. The hash is
# rand.SafeEncodeString of the decimal FNV-32a of the pod template (kubernetes pkg/controller
# controller_utils.go ComputeHash): up to 10 digits, each written as one of the characters digits map
# to in SafeEncodeString's alphabet "bcdfghjklmnpqrstvwxz2456789" (apimachinery pkg/util/rand/rand.go),
# i.e. only 4-9, b, c, d, f. The ReplicaSet's pods get generateName "<replicaset>-" (controller_utils.go
# getPodsPrefix), and the API server cuts a generateName to 58 characters before it appends the 5
# random characters over the whole alphabet (apiserver pkg/storage/names SimpleNameGenerator,
# MaxGeneratedNameLength = 63 - 5). So a long Deployment name loses the end of "<hash>-": the pattern
# follows that cut. A Job's pods are <job>-<5 characters>, so a Job named after the service
# (`<service>-crds`, `<service>-bench`) does not match: its middle part has letters no hash has. Not
# from 56 characters on (at most 58: the CRD wait Job's name): the cut then leaves at most one hash
# character, which `<service>-crds` and `<service>-bench` also begin with, so their pods match too.
HASH_CHARACTER = "[4-9bcdf]"
HASH_DIGITS = 10
POD_TEMPLATE_HASH = f"{HASH_CHARACTER}{{1,{HASH_DIGITS}}}"
GENERATED_SUFFIX = "[bcdfghjklmnpqrstvwxz2456789]{5}"
MAX_GENERATED_BASE = 58


def deployment_pod_pattern(deployment: str) -> str:
    """An RE2 pattern (PromQL `=~` is anchored) for the names of a Deployment's pods only. The name
    is a DNS label (letters, digits, '-'): nothing in it is special to RE2 or needs a PromQL escape."""
    prefix = f"{deployment}-"
    room = MAX_GENERATED_BASE - len(prefix)  # what the 58-character base keeps of "<hash>-"
    if room > HASH_DIGITS:
        return f"{prefix}{POD_TEMPLATE_HASH}-{GENERATED_SUFFIX}"
    if room <= 0:
        return f"{prefix[:MAX_GENERATED_BASE]}{GENERATED_SUFFIX}"
    cut = [f"{HASH_CHARACTER}{{1,{room - 1}}}-"] if room > 1 else []
    return f"{prefix}(?:{'|'.join([*cut, f'{HASH_CHARACTER}{{{room}}}'])}){GENERATED_SUFFIX}"


def _matchers(labels: dict[str, str]) -> str:
    return ",".join(f'{key}="{value}"' for key, value in labels.items())


@dataclass(frozen=True)
class ServingQueries:
    """PromQL over the serving pods of one Deployment (namespace, served model and pod names)."""

    namespace: str
    deployment: str
    served_model_name: str
    pool_name: str | None = None
    # The GKE cluster the series come from: Managed Service for Prometheus labels every series with its
    # `cluster` (the prometheus_target resource), and a query reads the whole project's metrics scope, where
    # another cluster's namespace of the same name (or another tenant's GPUs) would count too; a cluster of the
    # same name in another location still does (names are unique per location). None: any.
    cluster: str | None = None

    def _matchers(self, labels: dict[str, str]) -> str:
        return _matchers({"cluster": self.cluster, **labels} if self.cluster else labels)

    def _vllm(self, name: str, extra: str = "") -> str:
        metric = KNOWN[name]
        selector = self._matchers({"namespace": self.namespace, "model_name": self.served_model_name})
        series = f"{metric.exposed_name}{extra}" if metric.type is not MetricType.histogram else f"{name}{extra}"
        return f"{series}{{{selector}}}"

    def _rate(self, name: str, window: str = RATE_WINDOW) -> str:
        return f"rate({self._vllm(name)}[{window}])"

    def tokens_per_second(self, name: str, by_pod: bool = False) -> str:
        return f"sum{' by (pod)' if by_pod else ''}({self._rate(name)})"

    def requests(self, name: str, by_pod: bool = False) -> str:
        return f"sum{' by (pod)' if by_pod else ''}({self._vllm(name)})"

    def waiting_change(self, window: str) -> str:
        return f"sum(delta({self._vllm('vllm:num_requests_waiting')}[{window}]))"

    def kv_cache_usage_by_pod(self) -> str:
        return f"avg by (pod)({self._vllm('vllm:kv_cache_usage_perc')})"

    def latency_quantile(self, name: str, quantile: float) -> str:
        buckets = f"rate({self._vllm(name, '_bucket')}[{RATE_WINDOW}])"
        return f"histogram_quantile({quantile}, sum by (le)({buckets}))"

    def mtp_acceptance(self, window: str = RATE_WINDOW) -> str:
        accepted = f"sum({self._rate('vllm:spec_decode_num_accepted_tokens', window)})"
        drafted = f"sum({self._rate('vllm:spec_decode_num_draft_tokens', window)})"
        return f"{accepted} / {drafted}"

    def drafted_per_second(self, window: str = RATE_WINDOW) -> str:
        return f"sum({self._rate('vllm:spec_decode_num_draft_tokens', window)})"

    def preemptions_per_second(self) -> str:
        return f"sum({self._rate('vllm:num_preemptions')})"

    def gpu(self, name: str, aggregate: str) -> str:
        return f"{aggregate}({KNOWN[name].exposed_name}{{{self._matchers({})}}})"

    def _deployment(self, name: str) -> str:
        return f"max({name}{{{self._matchers({'namespace': self.namespace, 'deployment': self.deployment})}}})"

    def desired_replicas(self) -> str:
        return self._deployment("kube_deployment_spec_replicas")

    def available_replicas(self) -> str:
        return self._deployment("kube_deployment_status_replicas_available")

    def autoscaler_desired_replicas(self) -> str:
        selector = self._matchers({"namespace": self.namespace, "horizontalpodautoscaler": self.deployment})
        return f"max(kube_horizontalpodautoscaler_status_desired_replicas{{{selector}}})"

    def pending_pods(self) -> str:
        return f"sum({self._pending()})"

    def pending_by_pod(self) -> str:
        """One series per Pending pod: an alert's duration then holds for one pod, not for pods pending in turn."""
        return f"max by (pod) ({self._pending()})"

    def _pending(self) -> str:
        selector = self._matchers({"namespace": self.namespace, "phase": "Pending"})
        return f'kube_pod_status_phase{{{selector},pod=~"{deployment_pod_pattern(self.deployment)}"}}'

    def pool(self, name: str) -> str:
        return f"max({name}{{{self._matchers({'name': self.pool_name or self.deployment})}}})"
