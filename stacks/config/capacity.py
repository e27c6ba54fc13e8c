"""Where A4 nodes come from (reservations, Flex-start, Spot), how many, or the goal the planner sizes for."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal, get_args

from pydantic import Field, field_validator, model_validator

from common.grammars import DNS_1035_LABEL, project_id_problem
from common.text import human_duration
from components.capacity import SPOT
from stacks.config.base import ConfigModel, checked
from stacks.config.quoting import quote

FLEX_START_MAX_RUN_SECONDS = 7 * 24 * 3600
MAX_NODES = 256
# Upper bounds of the goals, each well beyond what MAX_NODES can serve (the recipe's ~95K tok/s, ~83
# req/s per node; at most 65,536 concurrent requests per node, workload.concurrencyPerNode's most): a
# goal past reach is refused by the planner, these keep its message and plan.md to ordinary numbers.
MAX_GOAL_TOKENS_PER_SECOND = 1_000_000_000
MAX_GOAL_REQUESTS_PER_SECOND = 10_000_000
MAX_GOAL_CONCURRENT_REQUESTS = MAX_NODES * 65_536
# Above the hourly cost of MAX_NODES nodes at the highest prices pricing.* allows (about 5.1 million USD).
MAX_BUDGET_PER_HOUR = 10_000_000


class GpuDriverVersion(StrEnum):
    default = "default"
    latest = "latest"


class SpotSource(ConfigModel):
    """Spot A4 nodes (a ComputeClass priority with `spot: true`): cheapest, preemptible with at most 25 s notice,
    outside the Autopilot SLA."""

    type: Annotated[Literal["spot"], Field(description="`spot`.")]

    @property
    def label(self) -> str:
        """How plan.md and `plan` name this source."""
        return SPOT.label


class FlexStartSource(ConfigModel):
    """Flex-start (Dynamic Workload Scheduler) A4 nodes: discounted, each node runs at most 7 days."""

    type: Annotated[Literal["flexStart"], Field(description="`flexStart`.")]
    node_recycling_lead_time_seconds: Annotated[int | None, Field(ge=1, le=FLEX_START_MAX_RUN_SECONDS)] = Field(
        default=None,
        description=(
            "Seconds before a node's run ends at which GKE requests its replacement (ComputeClass "
            "flexStart.nodeRecycling.leadTimeSeconds), below maxRunDurationSeconds. The nodes start together and "
            "end together, and their pods move one at a time, so it must cover every move: null takes the most "
            "pods x (15 min for a node, a margin chosen here, not measured, and twice the pod's planning figure: 35 "
            "min for the recipe, more for a larger checkpoint or a recorded slower start); less is refused."
        ),
    )
    max_run_duration_seconds: Annotated[int, Field(ge=600, le=FLEX_START_MAX_RUN_SECONDS)] = Field(
        default=FLEX_START_MAX_RUN_SECONDS,
        description=(
            "Longest run of a Flex-start node in seconds (ComputeClass maxRunDurationSeconds), 600 to "
            "604800 (7 days, the Flex-start maximum and the default)."
        ),
    )
    capacity_check_wait_time_seconds: Annotated[int | None, Field(ge=1, le=86400)] = Field(
        default=None,
        description=(
            "Seconds GKE tries Flex-start for a node before it moves on to the next source (ComputeClass "
            "priorities[].capacityCheckWaitTimeSeconds, 1-86400): what a new replica waits at most when Flex-start "
            "has no capacity. null leaves GKE's default, which its documentation does not state."
        ),
    )

    @model_validator(mode="after")
    def _recycling_before_the_end(self) -> FlexStartSource:
        lead = self.node_recycling_lead_time_seconds
        if lead is not None and lead >= self.max_run_duration_seconds:
            raise ValueError(
                f"nodeRecyclingLeadTimeSeconds {self.node_recycling_lead_time_seconds} must be shorter than "
                f"maxRunDurationSeconds {self.max_run_duration_seconds}: the replacement node is requested "
                "that long before the node's run ends"
            )
        return self

    @property
    def label(self) -> str:
        """How plan.md and `plan` name this source: with the longest run of its nodes."""
        return f"Flex-start (nodes live at most {human_duration(self.max_run_duration_seconds)})"


class ReservationSource(ConfigModel):
    """A specific Compute Engine reservation of A4 capacity (Autopilot consumes specific reservations only)."""

    type: Annotated[Literal["reservation"], Field(description="`reservation`.")]
    name: Annotated[
        str,
        Field(
            pattern=DNS_1035_LABEL,
            description="The reservation's name (a Compute Engine name: RFC 1035 label, at most 63 characters).",
        ),
    ]
    project: str | None = Field(default=None, description="Owner project of a shared reservation.")

    @field_validator("project")
    @classmethod
    def _project_id(cls, value: str | None) -> str | None:
        return None if value is None else checked(project_id_problem(value), value)

    @property
    def label(self) -> str:
        """How plan.md and `plan` name this source: by its name, and its owner project when shared."""
        owner = f" (project {self.project})" if self.project else ""
        return f"reservation `{self.name}`{owner}"


CapacitySource = Annotated[SpotSource | FlexStartSource | ReservationSource, Field(discriminator="type")]


def _entry(model: type[ConfigModel]) -> str:
    """How a stack file writes one source of a model: its type, its required fields, `...` for the optional ones."""
    (kind,) = model.model_fields["type"].annotation.__args__  # type: ignore[union-attr]
    fields = [field.alias or name for name, field in model.model_fields.items() if name != "type"]
    required = [
        field.alias or name for name, field in model.model_fields.items() if field.is_required() and name != "type"
    ]
    return "`{" + ", ".join([f"type: {kind}", *required, *(["..."] if len(fields) > len(required) else [])]) + "}`"


class CapacityConfig(ConfigModel):
    """A4 (8x B200) nodes; one serving pod per node. A4 has no on-demand capacity."""

    nodes: Annotated[int | None, Field(ge=1, le=MAX_NODES)] = Field(
        default=None, description="A4 node count; exclusive with `target` (the planner then picks it)."
    )
    sources: Annotated[list[CapacitySource], Field(min_length=1, max_length=8)] = Field(
        default=[FlexStartSource(type="flexStart"), SpotSource(type="spot")],
        description=(
            "Where A4 nodes come from, in order of preference: each entry is one priority of the "
            "ComputeClass, GKE falls back to the next when one has no capacity. Entries: "
            f"{', '.join(map(_entry, get_args(get_args(CapacitySource)[0])))}; 1-8, no repeats. "
            "Default Flex-start then Spot; the presets set Spot in dev and staging, Flex-start then Spot in prod."
        ),
    )
    # A ComputeClass is a Kubernetes object (an RFC 1123 name would do); GKE's own rules for the class
    # name beyond "not gke* or autopilot*" were not found, so the stricter RFC 1035 label is kept.
    compute_class_name: Annotated[str, Field(pattern=DNS_1035_LABEL)] = Field(
        default="b200-serving",
        description=(
            "Name of the ComputeClass that carries the fallback order (the serving pods select it). "
            "RFC 1035 label; may not start with `gke` or `autopilot`."
        ),
    )
    gpu_driver_version: GpuDriverVersion = Field(
        default=GpuDriverVersion.latest,
        description=(
            "NVIDIA driver GKE installs on the A4 nodes (ComputeClass gpu.driverVersion): `default` or `latest`."
        ),
    )

    @field_validator("compute_class_name")
    @classmethod
    def _not_reserved(cls, value: str) -> str:
        if value.startswith(("gke", "autopilot")):
            raise ValueError(f"{quote(value)} starts with 'gke' or 'autopilot', which GKE reserves")
        return value

    def source_keys(self, project: str) -> list[tuple[str, str | None, str | None]]:
        """What identifies each source's capacity: a named one (a reservation, any kind with a `name`) by its name
        in its owner project (the stack's `project` when none is given): names are unique per project only."""
        named = [(source, getattr(source, "name", None)) for source in self.sources]
        return [
            (source.type, name, getattr(source, "project", None) or project) if name else (source.type, None, None)
            for source, name in named
        ]


class TargetConfig(ConfigModel):
    """Size the stack from a goal instead of `capacity.nodes`: exactly one goal, optionally a budget."""

    total_tokens_per_second: Annotated[float | None, Field(gt=0, le=MAX_GOAL_TOKENS_PER_SECOND)] = Field(
        default=None,
        description="Goal: input + output tokens per second over all nodes (the recipe measured ~92-95K per node).",
    )
    output_tokens_per_second: Annotated[float | None, Field(gt=0, le=MAX_GOAL_TOKENS_PER_SECOND)] = Field(
        default=None, description="Goal: generated tokens per second over all nodes."
    )
    concurrent_requests: Annotated[int | None, Field(ge=1, le=MAX_GOAL_CONCURRENT_REQUESTS)] = Field(
        default=None, description="Goal: requests in flight at once (workload.concurrencyPerNode per node)."
    )
    requests_per_second: Annotated[float | None, Field(gt=0, le=MAX_GOAL_REQUESTS_PER_SECOND)] = Field(
        default=None, description="Goal: completed requests per second (the recipe measured ~83 per node)."
    )
    budget_per_hour: Annotated[float | None, Field(gt=0, le=MAX_BUDGET_PER_HOUR)] = Field(
        default=None, description="USD per hour, all in (nodes, premium, disks, disk image, cluster fee)."
    )
    max_nodes: Annotated[int, Field(ge=1, le=256)] = Field(
        default=64, description="Most A4 nodes the planner may choose (1-256)."
    )

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
