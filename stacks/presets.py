"""Environment presets: what a stack gets before its own settings are applied.

A stack file names its `environment`; the preset fills every group the file leaves out, and the
file's own keys win (objects merge key by key, lists replace).
"""

from __future__ import annotations

from typing import Any

PRESETS: dict[str, dict[str, Any]] = {
    "dev": {
        "cluster": {"deletionProtection": False},
        "capacity": {"nodes": 1, "sources": [{"type": "spot"}]},
        "weights": {"protect": False},
        "routing": {"mode": "clusterip"},
        # Nobody uses dev at night: scale to zero out of office hours (a Spot A4 node is ~USD 33/h).
        "schedule": {
            "enabled": True,
            "businessHours": {"days": ["mon", "tue", "wed", "thu", "fri"], "start": "08:00", "end": "19:00"},
        },
    },
    "staging": {
        "cluster": {"deletionProtection": False},
        "capacity": {"nodes": 4, "sources": [{"type": "spot"}]},
        "weights": {"protect": False},
        "routing": {"mode": "gateway"},
        # Staging rehearses production's scaling: queue-depth autoscaling up to the 4 nodes, off at night.
        "autoscaling": {"enabled": True, "minReplicas": 1},
        "schedule": {
            "enabled": True,
            "businessHours": {"days": ["mon", "tue", "wed", "thu", "fri"], "start": "08:00", "end": "19:00"},
        },
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
    return merge(preset, raw)
