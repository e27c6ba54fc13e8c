"""What a preview predicts, as data: one `ResourceChange` per resource, the input paths that change,
the values a provider keeps although the program dropped them, and the whole `Preview`.

`Preview.as_json()` is `changes.json`, an interface other tools read: its fields
(`changes[].action/type/name/urn/inputs[].path/old/new`, `warnings`, `refusals`, `refused`,
`summary`) keep their names; new information is added beside them.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from commands.engine.property_paths import Segment
from commands.preview.json_values import json_diff, json_diff_document

ACTIONS = ("create", "update", "replace", "delete")
MISSING = object()


def value_at(value: Any, segments: tuple[Segment, ...]) -> Any:
    """The value at a path of segments in a resource's inputs, MISSING where it has none."""
    for segment in segments:
        if isinstance(value, dict) and isinstance(segment, str) and segment in value:
            value = value[segment]
            continue
        if isinstance(value, list) and isinstance(segment, int) and segment < len(value):
            value = value[segment]
            continue
        return MISSING
    return value


@dataclass(frozen=True)
class Unknown:
    """An input computed from the outputs of a resource being replaced: unknown until it exists."""

    source: str

    def __str__(self) -> str:
        return f"(known after {self.source} is replaced)"


@dataclass(frozen=True)
class ProviderEffect:
    """What the provider does in the cloud with a change the engine shows (`provider_effects.py`)."""

    says: str
    source: str

    def as_json(self) -> dict[str, str]:
        return {"providerEffect": self.says, "providerEffectSource": self.source}


@dataclass(frozen=True)
class InputChange:
    path: str
    old: Any
    new: Any
    replaces: bool
    effect: ProviderEffect | None = None

    def as_json(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"path": self.path, "replaces": self.replaces}
        if self.old is not MISSING:
            entry["old"] = self.old
        if self.new is not MISSING:
            entry["new"] = str(self.new) if isinstance(self.new, Unknown) else self.new
        if self.effect:
            entry.update(self.effect.as_json())
        if (diff := json_diff(self.old, self.new)) is not None:
            entry["jsonDiff"] = json_diff_document(diff)
        return entry


@dataclass(frozen=True)
class KeptValue:
    """An input the program no longer sets that the provider keeps (Optional+Computed): no diff."""

    urn: str
    path: str
    old: Any
    explicit_off: str | None
    by_hand: str | None
    source: str

    def as_json(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"urn": self.urn, "path": self.path, "old": self.old, "source": self.source}
        if self.explicit_off:
            entry["explicitOff"] = self.explicit_off
        if self.by_hand:
            entry["byHand"] = self.by_hand
        return entry


@dataclass
class ResourceChange:
    urn: str
    record: dict[str, Any]
    action: str
    inputs: list[InputChange] = field(default_factory=list)
    replaced_because: list[str] = field(default_factory=list)
    config_keys: set[str] = field(default_factory=set)
    # why no stack setting is named (commands/preview/setting_sources.py)
    no_config_keys: str = ""
    delete_before_replace: bool = False
    # why the replacement deletes first: the option, pulumi-kubernetes, the GCP bridge or the engine
    # (a dependent of a resource replaced delete-first)
    delete_first_by: str = ""
    # the replaced resources (URNs) whose unknown outputs or replaced provider make this one replaced
    replaced_with: set[str] = field(default_factory=set)
    # the resource replaced delete-first that makes the engine delete this one before it
    deleted_first_with: str = ""
    no_rule: bool = False
    # a delete the provider does not carry out in the cloud
    effect: ProviderEffect | None = None

    @property
    def options(self) -> dict[str, Any]:
        options: dict[str, Any] = self.record["options"]
        return options

    def as_json(self) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "urn": self.urn,
            "type": self.record["type"],
            "name": self.record["name"],
            "action": self.action,
            "protect": bool(self.options.get("protect")),
            "retainOnDelete": bool(self.options.get("retainOnDelete")),
        }
        if self.inputs:
            entry["inputs"] = [change.as_json() for change in self.inputs]
        if self.action == "replace":
            entry["replacedBecause"] = self.replaced_because
            entry["deleteBeforeReplace"] = self.delete_before_replace
            if self.delete_first_by:
                entry["deleteBeforeReplaceBy"] = self.delete_first_by
            if self.deleted_first_with:
                entry["deletedFirstWith"] = self.deleted_first_with
        elif self.action == "delete" and self.deleted_first_with:
            entry["deletedFirstWith"] = self.deleted_first_with
            entry["deletedFirstBy"] = self.delete_first_by
        if self.config_keys:
            entry["configKeys"] = sorted(self.config_keys)
        elif self.no_config_keys:
            entry["noConfigKeys"] = self.no_config_keys
        if self.no_rule:
            entry["noRule"] = True
        if self.effect:
            entry.update(self.effect.as_json())
        return entry


@dataclass(frozen=True)
class OutputsDiff:
    """The stack outputs added, removed and changed (`clients.py`)."""

    added: dict[str, Any] = field(default_factory=dict)
    removed: dict[str, Any] = field(default_factory=dict)
    changed: dict[str, tuple[Any, Any]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed)

    def as_json(self) -> dict[str, Any]:
        return {
            "added": self.added,
            "removed": self.removed,
            "changed": {key: {"old": old, "new": new} for key, (old, new) in self.changed.items()},
        }


@dataclass(frozen=True)
class CostDelta:
    """USD per month of one capacity source and pricing, before and after (`costs.py`); None where a
    side does not have it. Each is (floor, ceiling): an autoscaler decides within them."""

    source: str
    pricing: str
    old: tuple[float, float] | None
    new: tuple[float, float] | None

    def as_json(self) -> dict[str, Any]:
        delta = None if self.old is None or self.new is None else (self.new[0] - self.old[0], self.new[1] - self.old[1])
        return {
            "source": self.source,
            "pricing": self.pricing,
            "old": cost_json(self.old),
            "new": cost_json(self.new),
            "delta": cost_json(delta),
        }


def cost_json(value: tuple[float, float] | None) -> dict[str, float] | None:
    return None if value is None else {"min": round(value[0], 2), "max": round(value[1], 2)}


def cost_span(costs: list[CostDelta], new: bool) -> tuple[float, float] | None:
    """The month's bill on one side when its capacity sources differ from the other side's: each row is the
    bill if every node came from that source, and GKE takes them in fallback order, so the bill lies between
    the lowest floor and the highest ceiling of the rows. None when both sides have the same sources (each
    row's own change says it all) or a side has none."""
    if all(cost.old is not None and cost.new is not None for cost in costs):
        return None
    sides = [cost.new if new else cost.old for cost in costs]
    present = [side for side in sides if side is not None]
    return (min(low for low, _ in present), max(high for _, high in present)) if present else None


@dataclass(frozen=True)
class Rollout:
    """When and how the serving pods follow an update (`rollouts.py`)."""

    what: str
    pods: int
    seconds_per_pod: tuple[int, int]
    total_seconds: tuple[int, int] | None
    when: str
    source: str
    # a rollout worth a warning (every pod to new nodes), else None
    warning: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "what": self.what,
            "pods": self.pods,
            "secondsPerPod": {"min": self.seconds_per_pod[0], "max": self.seconds_per_pod[1]},
            "totalSeconds": None
            if self.total_seconds is None
            else {"min": self.total_seconds[0], "max": self.total_seconds[1]},
            "when": self.when,
            "source": self.source,
        }


@dataclass(frozen=True)
class Preview:
    changes: list[ResourceChange]
    unchanged: int
    refusals: list[str]
    warnings: list[str]
    kept: list[KeptValue] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # None when a render has no outputs.json
    outputs: OutputsDiff | None = None
    # empty when a render has no capacity.json
    costs: list[CostDelta] = field(default_factory=list)
    rollouts: list[Rollout] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        counted = Counter(change.action for change in self.changes)
        return {**{action: counted.get(action, 0) for action in ACTIONS}, "same": self.unchanged}

    def of(self, action: str) -> list[ResourceChange]:
        return [change for change in self.changes if change.action == action]

    def deleted_first(self, resource_type: str) -> bool:
        """Whether the engine deletes a replaced resource of this type before what it is replaced with."""
        return any(
            change.record["type"] == resource_type and change.deleted_first_with for change in self.of("replace")
        )

    def as_json(self) -> dict[str, Any]:
        old, new = cost_span(self.costs, new=False), cost_span(self.costs, new=True)
        return {
            "summary": self.counts(),
            "refused": bool(self.refusals),
            "refusals": self.refusals,
            "warnings": self.warnings,
            "changes": [change.as_json() for change in self.changes],
            "kept": [kept.as_json() for kept in self.kept],
            "notes": self.notes,
            **({"outputs": self.outputs.as_json()} if self.outputs is not None else {}),
            "costPerMonth": [cost.as_json() for cost in self.costs],
            **({"costPerMonthSpan": {"old": cost_json(old), "new": cost_json(new)}} if old and new else {}),
            "rollouts": [rollout.as_json() for rollout in self.rollouts],
        }
