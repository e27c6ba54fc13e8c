"""What the update does to the bill and whether the two renders are one stack.

Cost per month comes from each render's `capacity.json`, the planner's own prices and running hours
(`stacks/capacity/planner.py`: node-hours the schedule and autoscaler keep up x (node price + the
Autopilot premium), plus disks, image and cluster fee all month), per capacity source and pricing in
fallback order; the difference is what the update changes, by the planner's figures (estimates
where its pricing notes say so).

`pulumi up` updates one stack: a preview of a render of one stack against a render of another (another
stack name or GCP project) is not an update anyone can run, and is said so.
"""

from __future__ import annotations

from typing import Any

from commands.preview.changes import CostDelta


def _costs(capacity: dict[str, Any] | None) -> dict[tuple[str, str], tuple[float, float]]:
    found: dict[tuple[str, str], tuple[float, float]] = {}
    if capacity is None:
        return found
    for source in capacity.get("sources") or []:
        if not isinstance(source, dict):
            continue
        for cost in source.get("costs") or []:
            if not isinstance(cost, dict):
                continue
            low, high = cost.get("total_per_month_min"), cost.get("total_per_month_max")
            if isinstance(low, (int, float)) and isinstance(high, (int, float)):
                found[(str(source.get("source")), str(cost.get("label")))] = (float(low), float(high))
    return found


def cost_deltas(old: dict[str, Any] | None, new: dict[str, Any] | None) -> list[CostDelta]:
    """Per source and pricing, in NEW's fallback order then OLD's; empty when a render has no plan."""
    if old is None or new is None:
        return []
    before, after = _costs(old), _costs(new)
    keys = [*after, *(key for key in before if key not in after)]
    return [
        CostDelta(source, pricing, before.get((source, pricing)), after.get((source, pricing)))
        for source, pricing in keys
    ]


def different_stacks(
    old_capacity: dict[str, Any] | None,
    new_capacity: dict[str, Any] | None,
    old_outputs: dict[str, Any] | None,
    new_outputs: dict[str, Any] | None,
) -> list[str]:
    """A warning when OLD and NEW are renders of different stacks (stack name, or GCP project)."""
    differences = []
    for what, old, new in (
        ("stack", (old_capacity or {}).get("stack"), (new_capacity or {}).get("stack")),
        ("GCP project", (old_outputs or {}).get("project"), (new_outputs or {}).get("project")),
    ):
        if old is not None and new is not None and old != new:
            differences.append(f"{what} {old!r} -> {new!r}")
    if not differences:
        return []
    return [
        f"OLD and NEW are renders of different stacks ({'; '.join(differences)}): `pulumi up` updates one stack "
        "from its own state, so no update goes from one to the other; compare a render of the stack that is "
        "deployed with a render of the same stack"
    ]
