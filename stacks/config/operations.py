"""Day-2 operations: queue-depth autoscaling, scale schedules, dashboard and alerts."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from common.cron import is_iana_zone, validate_cron
from stacks.config.base import ConfigModel, SwitchedGroup, checked_printable
from stacks.config.quoting import quote
from stacks.config.time_to_serve import RECIPE_NODE_SECONDS

# Each scale-up is one more A4 node: Autopilot provisions it in ~5-6 min (the write-up); what the pod
# then takes depends on the profile (stacks/capacity/time_to_serve.py).
NODE_PROVISIONING_SECONDS = RECIPE_NODE_SECONDS
CLOCK_TIME = r"^([01]\d|2[0-3]):[0-5]\d$"
# More requests than 256 pods (autoscaling.maxReplicas' most) hold at engine.maxNumSeqs' most, 65,536.
MAX_WAITING_REQUESTS = 256 * 65_536


class AutoscalingMetric(StrEnum):
    waiting_requests = "waitingRequests"
    kv_cache_usage = "kvCacheUsage"


class MetricsAdapterSource(StrEnum):
    declare = "declare"
    existing = "existing"


class AutoscalingConfig(SwitchedGroup):
    """Horizontal Pod Autoscaler on a vLLM metric through the Custom Metrics Stackdriver Adapter."""

    enabled: bool = Field(
        default=False,
        description=(
            "Declare the HorizontalPodAutoscaler; true as soon as the group sets any other key, unless it says false."
        ),
    )
    min_replicas: Annotated[int, Field(ge=1, le=256)] = Field(
        default=1,
        description=(
            "Fewest serving pods (A4 nodes) the autoscaler keeps, 1-256; also the Deployment's replicas at creation."
        ),
    )
    max_replicas: Annotated[int | None, Field(ge=1, le=256)] = Field(
        default=None,
        description="Most serving pods (A4 nodes) the autoscaler may reach, 1-256; defaults to capacity.nodes.",
    )
    metrics_adapter: MetricsAdapterSource | None = Field(
        default=None,
        description="The Custom Metrics Stackdriver Adapter serves custom.metrics.k8s.io for the whole cluster, so a "
        "cluster has one. `declare`: the stack declares it (the default on a cluster the stack creates; on an "
        "existing cluster it is kept on destroy, since other workloads may come to read it). `existing`: the "
        "cluster already runs one; none is declared. Required with cluster.existing and autoscaling.",
    )
    metric: AutoscalingMetric = Field(
        default=AutoscalingMetric.waiting_requests,
        description=(
            "What the autoscaler tracks per pod: `waitingRequests` (vllm:num_requests_waiting) or "
            "`kvCacheUsage` (vllm:kv_cache_usage_perc), read through the Custom Metrics Stackdriver Adapter."
        ),
    )
    target_waiting_requests_per_pod: Annotated[int, Field(ge=1, le=65536)] = Field(
        default=100,
        description="Target of the waitingRequests metric: waiting requests per pod (sum over its data-parallel "
        "engines).",
    )
    # The HPA's target is this x the pod's engines in thousandths: near zero it rounded to 0m, a target
    # Kubernetes refuses (averageValue must be positive).
    target_kv_cache_usage: Annotated[float, Field(ge=0.01, le=1.0)] = Field(
        default=0.85,
        description="Target of the kvCacheUsage metric: mean KV-cache usage of a pod's engines (1 = full).",
    )
    scale_up_period_seconds: Annotated[int, Field(ge=15, le=1800)] = Field(
        default=NODE_PROVISIONING_SECONDS,
        description="Seconds per scale-up step: at most one pod (one A4 node) is added per period; default 360, "
        "the ~6 min Autopilot takes to provision an A4 node.",
    )
    scale_down_stabilization_seconds: Annotated[int | None, Field(ge=0, le=3600)] = Field(
        default=None,
        description="Seconds of scale-down stabilization: the highest recommendation of this window is kept; default "
        "twice the profile's time to serve, at most 3600 (1920 for the recipe: node ~6 min, measured, + pod ~10 min, "
        "measured on vLLM 0.18.0 and assumed for the pinned release).",
    )
    scale_down_period_seconds: Annotated[int, Field(ge=15, le=3600)] = Field(
        default=600, description="Seconds per scale-down step: at most one pod is removed per period."
    )

    @model_validator(mode="after")
    def _min_below_max(self) -> AutoscalingConfig:
        if self.max_replicas is not None and self.min_replicas > self.max_replicas:
            raise ValueError(f"minReplicas {self.min_replicas} is above maxReplicas {self.max_replicas}")
        return self


class BusinessHours(ConfigModel):
    """Serve from `start` to `end` on `days` (local time of schedule.timeZone); scale to zero outside."""

    days: Annotated[list[Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]], Field(min_length=1)] = Field(
        default=["mon", "tue", "wed", "thu", "fri"],
        description="Days of the week to serve (`mon`..`sun`, each once).",
    )
    start: Annotated[str, Field(pattern=CLOCK_TIME)] = Field(
        default="08:00", description="Scale up at this local time, HH:MM (24 h)."
    )
    end: Annotated[str, Field(pattern=CLOCK_TIME)] = Field(
        default="19:00", description="Scale to zero at this local time, HH:MM (24 h); after start on the same day."
    )
    replicas: Annotated[int | None, Field(ge=1, le=256)] = Field(
        default=None, description="Pods at the start of the day; defaults to autoscaling.minReplicas or capacity.nodes."
    )

    @model_validator(mode="after")
    def _start_before_end(self) -> BusinessHours:
        if self.start >= self.end:
            raise ValueError(f"start {self.start} is not before end {self.end} (business hours within one day)")
        if len(set(self.days)) != len(self.days):
            raise ValueError("days lists a day twice")
        return self


class ScheduleEntry(ConfigModel):
    """One scale step: at each time `cron` fires, set the serving Deployment to `replicas` pods."""

    name: Annotated[
        str,
        Field(
            pattern=r"^[a-z]([-a-z0-9]{0,20}[a-z0-9])?$",
            description=(
                "Names the step's CronJob (`serving-schedule-<name>`): 1-22 lower-case letters, digits "
                "and hyphens, a letter first; unique."
            ),
        ),
    ]
    cron: Annotated[
        str,
        Field(
            description=(
                "When, in the Kubernetes CronJob grammar: five fields (minute hour day-of-month month "
                "day-of-week) or a descriptor such as @daily; no CRON_TZ (set timeZone)."
            )
        ),
    ]
    replicas: Annotated[
        int,
        Field(
            ge=0,
            le=256,
            description="Serving pods from then on, 0-256 (0 scales to zero); at most the replica ceiling.",
        ),
    ]

    @field_validator("cron")
    @classmethod
    def _cron(cls, value: str) -> str:
        return validate_cron(value)


class ScheduleConfig(SwitchedGroup):
    """Scale the serving Deployment on a clock: business hours, or cron entries with replica counts."""

    enabled: bool = Field(
        default=False,
        description="Declare the scale CronJobs; true as soon as the group sets any other key, unless it says false.",
    )
    time_zone: str = Field(
        default="UTC", description="IANA time zone of businessHours and the cron entries (the CronJobs' spec.timeZone)."
    )
    business_hours: BusinessHours | None = Field(
        default=None, description="Serve on days between start and end, scale to zero outside."
    )
    wake_lead_seconds: Annotated[int | None, Field(ge=0, le=7200)] = Field(
        default=None,
        description="Wake businessHours this many seconds before start, so that pods serve when the window opens "
        "(0-7200); default the stack's time to serve (960 for the recipe), rounded up to a minute. Cron entries "
        "are not moved: set them earlier yourself.",
    )
    entries: Annotated[list[ScheduleEntry], Field(max_length=16)] = Field(
        default=[],
        description="Cron scale steps (at most 16, unique names); when given, they replace businessHours (which a "
        "preset may set).",
    )

    @field_validator("time_zone")
    @classmethod
    def _iana_zone(cls, value: str) -> str:
        if not is_iana_zone(value):
            raise ValueError(f"{quote(value)} is not an IANA time zone like Europe/Amsterdam or America/New_York")
        return value

    @model_validator(mode="after")
    def _one_way(self) -> ScheduleConfig:
        if self.enabled and self.business_hours is None and not self.entries:
            raise ValueError("set businessHours or at least one entry")
        names = [entry.name for entry in self.entries]
        if len(set(names)) != len(names):
            raise ValueError("entries: two entries share a name")
        return self


class AlertsConfig(ConfigModel):
    """Cloud Monitoring alert policies; notifications go to an existing channel or a new email channel."""

    enabled: bool = Field(default=True, description="Declare the Cloud Monitoring alert policies.")
    notification_channel: Annotated[
        str | None, Field(pattern=r"^projects/[a-z][a-z0-9-]{4,28}[a-z0-9]/notificationChannels/[0-9]+$")
    ] = Field(
        default=None,
        description=(
            "An existing channel to notify: `projects/PROJECT/notificationChannels/ID`; exclusive with email."
        ),
    )
    email: Annotated[
        str | None, Field(pattern=r"^[^@\s:\x00-\x1f\x7f]+@[^@\s:/\x00-\x1f\x7f]+\.[^@\s:/\x00-\x1f\x7f]+$")
    ] = Field(
        default=None,
        description="Create an email notification channel for this address; exclusive with notificationChannel.",
    )

    @field_validator("email")
    @classmethod
    def _printable_address(cls, value: str | None) -> str | None:
        """An invisible or direction-changing character (U+202E) shows a reader another address."""
        return None if value is None else checked_printable(value)

    queue_waiting_threshold: Annotated[int, Field(ge=1, le=MAX_WAITING_REQUESTS)] = Field(
        default=200, description="Waiting requests (all pods) above which a growing queue alerts."
    )
    kv_cache_usage_threshold: Annotated[float, Field(gt=0.0, le=1.0)] = Field(
        default=0.9, description="A pod's mean KV-cache usage (0-1] above which an alert fires."
    )
    min_mtp_acceptance: Annotated[float, Field(gt=0.0, lt=1.0)] = Field(
        default=0.5,
        description="Alert when the MTP acceptance rate (accepted / drafted tokens over 15 min) falls below this; the "
        "benchmark write-up saw ~0.9 with MTP-1.",
    )
    pending_seconds: Annotated[int | None, Field(ge=60, le=7200)] = Field(
        default=None,
        description="A serving pod Pending longer than this many seconds alerts (no capacity); null: twice the node "
        "provisioning time and the image pull (a pod is Pending while it pulls: 10 min, the write-up's whole pod "
        "phase, or the pull timeToServe computes when longer), 1320 s by default.",
    )

    @model_validator(mode="after")
    def _one_channel(self) -> AlertsConfig:
        if self.notification_channel and self.email:
            raise ValueError("set notificationChannel or email, not both")
        return self


class MonitoringConfig(ConfigModel):
    """The Cloud Monitoring dashboard and alert policies of the serving layer."""

    dashboard: bool = Field(
        default=True,
        description=(
            "Declare the Cloud Monitoring dashboard (throughput, queue, KV cache, latency, MTP acceptance, pods)."
        ),
    )
    alerts: AlertsConfig = Field(default=AlertsConfig(), description="Alert policies and where they notify.")
