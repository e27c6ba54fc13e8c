"""Where A4 nodes come from (reservations, Flex-start, Spot), how many, or the goal the planner sizes for."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from stacks.config.base import ConfigModel, checked
from stacks.config.grammars import DNS_1035_LABEL, project_id_problem
from stacks.config.quoting import quote

FLEX_START_MAX_RUN_SECONDS = 7 * 24 * 3600
MAX_NODES = 256


class GpuDriverVersion(StrEnum):
    default = "default"
    latest = "latest"


class SpotSource(ConfigModel):
    type: Literal["spot"]


class FlexStartSource(ConfigModel):
    type: Literal["flexStart"]
    node_recycling_lead_time_seconds: Annotated[int, Field(ge=0, le=FLEX_START_MAX_RUN_SECONDS)] = 3600
    max_run_duration_seconds: Annotated[int, Field(ge=600, le=FLEX_START_MAX_RUN_SECONDS)] = FLEX_START_MAX_RUN_SECONDS

    @model_validator(mode="after")
    def _recycling_before_the_end(self) -> FlexStartSource:
        if self.node_recycling_lead_time_seconds >= self.max_run_duration_seconds:
            raise ValueError(
                f"nodeRecyclingLeadTimeSeconds {self.node_recycling_lead_time_seconds} must be shorter than "
                f"maxRunDurationSeconds {self.max_run_duration_seconds}: the replacement node is requested "
                "that long before the node's run ends"
            )
        return self


class ReservationSource(ConfigModel):
    type: Literal["reservation"]
    name: Annotated[str, Field(pattern=DNS_1035_LABEL)]
    project: str | None = Field(default=None, description="Owner project of a shared reservation.")

    @field_validator("project")
    @classmethod
    def _project_id(cls, value: str | None) -> str | None:
        return None if value is None else checked(project_id_problem(value), value)


CapacitySource = Annotated[SpotSource | FlexStartSource | ReservationSource, Field(discriminator="type")]


class CapacityConfig(ConfigModel):
    """A4 (8x B200) nodes; one serving pod per node. A4 has no on-demand capacity."""

    nodes: Annotated[int | None, Field(ge=1, le=MAX_NODES)] = Field(
        default=None, description="A4 node count; exclusive with `target` (the planner then picks it)."
    )
    sources: Annotated[list[CapacitySource], Field(min_length=1, max_length=8)] = [
        FlexStartSource(type="flexStart"),
        SpotSource(type="spot"),
    ]
    # A ComputeClass is a Kubernetes object (an RFC 1123 name would do); GKE's own rules for the class
    # name beyond "not gke* or autopilot*" were not found, so the stricter RFC 1035 label is kept.
    compute_class_name: Annotated[str, Field(pattern=DNS_1035_LABEL)] = "b200-serving"
    gpu_driver_version: GpuDriverVersion = GpuDriverVersion.latest

    @field_validator("compute_class_name")
    @classmethod
    def _not_reserved(cls, value: str) -> str:
        if value.startswith(("gke", "autopilot")):
            raise ValueError(f"{quote(value)} starts with 'gke' or 'autopilot', which GKE reserves")
        return value

    @model_validator(mode="after")
    def _unique_sources(self) -> CapacityConfig:
        keys = [(source.type, getattr(source, "name", None)) for source in self.sources]
        if len(set(keys)) != len(keys):
            raise ValueError("sources lists the same capacity twice; each fallback step must differ")
        return self


class TargetConfig(ConfigModel):
    """Size the stack from a goal instead of `capacity.nodes`: exactly one goal, optionally a budget."""

    total_tokens_per_second: Annotated[float | None, Field(gt=0)] = None
    output_tokens_per_second: Annotated[float | None, Field(gt=0)] = None
    concurrent_requests: Annotated[int | None, Field(gt=0)] = None
    requests_per_second: Annotated[float | None, Field(gt=0)] = None
    budget_per_hour: Annotated[float | None, Field(gt=0)] = Field(
        default=None, description="USD per hour, all in (nodes, premium, disks, disk image, cluster fee)."
    )
    max_nodes: Annotated[int, Field(ge=1, le=256)] = 64

    @model_validator(mode="after")
    def _one_goal(self) -> TargetConfig:
        goals = [key for key, value in self.goals().items() if value is not None]
        if len(goals) != 1:
            raise ValueError(
                f"give exactly one goal of totalTokensPerSecond, outputTokensPerSecond, concurrentRequests, "
                f"requestsPerSecond (got {len(goals)}{': ' + ', '.join(goals) if goals else ''})"
            )
        return self

    def goals(self) -> dict[str, float | None]:
        return {
            "totalTokensPerSecond": self.total_tokens_per_second,
            "outputTokensPerSecond": self.output_tokens_per_second,
            "concurrentRequests": self.concurrent_requests,
            "requestsPerSecond": self.requests_per_second,
        }

    def goal(self) -> tuple[str, float]:
        return next((key, value) for key, value in self.goals().items() if value is not None)
