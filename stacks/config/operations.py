"""Day-2 operations: queue-depth autoscaling, scale schedules, dashboard and alerts."""

from __future__ import annotations

import zoneinfo
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from stacks.config.base import ConfigModel
from stacks.config.cron import validate_cron

# Each scale-up is one more A4 node: Autopilot provisions it in ~5-6 min, then the model loads and
# CUDA graphs compile in ~10 min (RECIPE sections 2 and 7).
NODE_PROVISIONING_SECONDS = 360
MODEL_LOAD_SECONDS = 600
COLD_START_SECONDS = NODE_PROVISIONING_SECONDS + MODEL_LOAD_SECONDS
CLOCK_TIME = r"^([01]\d|2[0-3]):[0-5]\d$"


def enabled_when_configured(data: Any) -> Any:
    """A group that sets any key but `enabled` is on unless it says `enabled: false`."""
    if isinstance(data, dict) and "enabled" not in data and data:
        return {**data, "enabled": True}
    return data


class AutoscalingMetric(StrEnum):
    waiting_requests = "waitingRequests"
    kv_cache_usage = "kvCacheUsage"


class AutoscalingConfig(ConfigModel):
    """Horizontal Pod Autoscaler on a vLLM metric through the Custom Metrics Stackdriver Adapter."""

    enabled: bool = False
    min_replicas: Annotated[int, Field(ge=1, le=256)] = 1
    max_replicas: Annotated[int | None, Field(ge=1, le=256)] = Field(
        default=None, description="Defaults to capacity.nodes."
    )
    metric: AutoscalingMetric = AutoscalingMetric.waiting_requests
    target_waiting_requests_per_pod: Annotated[int, Field(ge=1, le=65536)] = Field(
        default=100, description="Waiting requests per pod (sum over its data-parallel engines)."
    )
    target_kv_cache_usage: Annotated[float, Field(gt=0.0, le=1.0)] = Field(
        default=0.85, description="Mean KV-cache usage of a pod's engines (1 = full)."
    )
    scale_up_period_seconds: Annotated[int, Field(ge=15, le=1800)] = Field(
        default=NODE_PROVISIONING_SECONDS, description="At most one pod (one A4 node) is added per period."
    )
    scale_down_stabilization_seconds: Annotated[int, Field(ge=0, le=3600)] = Field(
        default=2 * COLD_START_SECONDS,
        description="The highest recommendation of this window is kept before scaling down.",
    )
    scale_down_period_seconds: Annotated[int, Field(ge=15, le=3600)] = Field(
        default=600, description="At most one pod is removed per period."
    )

    @model_validator(mode="before")
    @classmethod
    def _on_when_configured(cls, data: Any) -> Any:
        return enabled_when_configured(data)

    @model_validator(mode="after")
    def _min_below_max(self) -> AutoscalingConfig:
        if self.max_replicas is not None and self.min_replicas > self.max_replicas:
            raise ValueError(f"minReplicas {self.min_replicas} is above maxReplicas {self.max_replicas}")
        return self


class BusinessHours(ConfigModel):
    """Serve from `start` to `end` on `days` (local time of schedule.timeZone); scale to zero outside."""

    days: Annotated[list[Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]], Field(min_length=1)] = [
        "mon",
        "tue",
        "wed",
        "thu",
        "fri",
    ]
    start: Annotated[str, Field(pattern=CLOCK_TIME)] = "08:00"
    end: Annotated[str, Field(pattern=CLOCK_TIME)] = "19:00"
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
    name: Annotated[str, Field(pattern=r"^[a-z]([-a-z0-9]{0,20}[a-z0-9])?$")]
    cron: str
    replicas: Annotated[int, Field(ge=0, le=256)]

    @field_validator("cron")
    @classmethod
    def _cron(cls, value: str) -> str:
        return validate_cron(value)


class ScheduleConfig(ConfigModel):
    """Scale the serving Deployment on a clock: business hours, or cron entries with replica counts."""

    enabled: bool = False
    time_zone: str = "UTC"
    business_hours: BusinessHours | None = None
    entries: Annotated[list[ScheduleEntry], Field(max_length=16)] = Field(
        default=[], description="When given, these replace businessHours (which a preset may set)."
    )

    @model_validator(mode="before")
    @classmethod
    def _on_when_configured(cls, data: Any) -> Any:
        return enabled_when_configured(data)

    @field_validator("time_zone")
    @classmethod
    def _iana_zone(cls, value: str) -> str:
        try:
            zoneinfo.ZoneInfo(value)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"'{value}' is not an IANA time zone like Europe/Amsterdam or America/New_York") from None
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

    enabled: bool = True
    notification_channel: Annotated[
        str | None, Field(pattern=r"^projects/[a-z][a-z0-9-]{4,28}[a-z0-9]/notificationChannels/\d+$")
    ] = None
    email: Annotated[str | None, Field(pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$")] = None
    queue_waiting_threshold: Annotated[int, Field(ge=1)] = Field(
        default=200, description="Waiting requests (all pods) above which a growing queue alerts."
    )
    kv_cache_usage_threshold: Annotated[float, Field(gt=0.0, le=1.0)] = 0.9
    min_mtp_acceptance: Annotated[float, Field(gt=0.0, lt=1.0)] = Field(
        default=0.5, description="Recipe: ~0.85-0.9 accepted per drafted token with MTP-1."
    )
    pending_seconds: Annotated[int, Field(ge=60, le=7200)] = Field(
        default=2 * NODE_PROVISIONING_SECONDS, description="A pod Pending longer than this alerts (capacity)."
    )

    @model_validator(mode="after")
    def _one_channel(self) -> AlertsConfig:
        if self.notification_channel and self.email:
            raise ValueError("set notificationChannel or email, not both")
        return self


class MonitoringConfig(ConfigModel):
    dashboard: bool = True
    alerts: AlertsConfig = AlertsConfig()
