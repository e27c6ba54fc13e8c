"""Environment presets: what a stack gets before its own settings are applied.

A stack file names its `environment`; the preset fills every group the file leaves out, and the
file's own keys win (objects merge key by key, lists replace). A stack that gives a `target` to size
from does not inherit the preset's `capacity.nodes`: the goal replaces the count.
"""

from __future__ import annotations

from typing import Any

PRESETS: dict[str, dict[str, Any]] = {
    "dev": {
        "cluster": {"deletionProtection": False},
        "capacity": {"nodes": 1, "sources": [{"type": "spot"}]},
        "weights": {"protect": False},
        "routing": {"mode": "clusterip"},
    },
    "staging": {
        "cluster": {"deletionProtection": False},
        "capacity": {"nodes": 4, "sources": [{"type": "spot"}]},
        "weights": {"protect": False},
        "routing": {"mode": "gateway"},
    },
    "prod": {
        "cluster": {"deletionProtection": True},
        "capacity": {"nodes": 12, "sources": [{"type": "flexStart"}, {"type": "spot"}]},
        "weights": {"protect": True},
        "routing": {"mode": "clusterip"},
    },
}


def merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def apply_preset(raw: dict[str, Any]) -> dict[str, Any]:
    """Lay the stack's own settings over its environment's preset (unknown environments pass
    through untouched so that validation reports them)."""
    preset = PRESETS.get(str(raw.get("environment")), {})
    if raw.get("target") is not None and "capacity" in preset:
        preset = {**preset, "capacity": {key: value for key, value in preset["capacity"].items() if key != "nodes"}}
    return merge(preset, raw)
