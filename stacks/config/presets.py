"""Environment presets: what a stack gets before its own settings are applied.

A stack file names its `environment`; the preset fills every group the file leaves out, and the file's own keys win
(objects merge key by key, lists replace). A stack that gives a `target` to size from does not inherit the preset's
`capacity.nodes`: the goal replaces the count.

Release channels: dev takes RAPID (new GKE features first, the benchmark's channel); staging and prod take REGULAR,
which is covered by the GKE SLA and offers 1.34 (GKE release notes, "Current versions": REGULAR lists 1.34 among its
minors, its 1.34 patches are newer than the InferencePool minimum 1.34.0-gke.1626000). Nothing the stack needs is
RAPID-only: B200 needs 1.32.2-gke.1422000, ComputeClasses 1.30.3-gke.1451000, InferencePool v1 1.34.0-gke.1626000;
fast-starting nodes (an earlier revision of "About quicker workload startup with fast-starting nodes" asked for RAPID)
are a best-effort speed-up the stack does not depend on. STABLE is not used: it can lag a minor behind and then offers
no 1.34.
Every preset turns control-plane authorized networks on with no outside range, which closes the control plane's IP-based
endpoint to the internet: `pulumi up` and kubectl (`getCredentials`, with `--dns-endpoint`) use the DNS-based endpoint,
gated by IAM, which authorized networks do not gate (GKE "About network isolation"). Turning the IP endpoint off
altogether (`control_plane_endpoints_config.ip_endpoints_config.enabled`, an in-place update in
terraform-provider-google-beta@93c65b2d resource_container_cluster.go:2294-2305 and :7095-7145) is not used: its GKE
constraints on Autopilot were not verified. An empty list is the most restrictive setting; ranges can be added in place
later, but authorized networks cannot be turned off again through the provider (no explicit off:
commands/preview/computed_fields.py).
"""

from __future__ import annotations

from typing import Any

from components.capacity import FLEX_START, SPOT

PRESETS: dict[str, dict[str, Any]] = {
    "dev": {
        "cluster": {"deletionProtection": False, "releaseChannel": "RAPID", "authorizedNetworks": []},
        "capacity": {"nodes": 1, "sources": [{"type": SPOT.type}]},
        "weights": {"protect": False},
        "routing": {"mode": "clusterip"},
        # Nobody uses dev at night: scale to zero out of office hours (a Spot A4 node is ~USD 33/h).
        "schedule": {
            "enabled": True,
            "businessHours": {"days": ["mon", "tue", "wed", "thu", "fri"], "start": "08:00", "end": "19:00"},
        },
    },
    "staging": {
        "cluster": {"deletionProtection": False, "releaseChannel": "REGULAR", "authorizedNetworks": []},
        "capacity": {"nodes": 4, "sources": [{"type": SPOT.type}]},
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
        "cluster": {"deletionProtection": True, "releaseChannel": "REGULAR", "authorizedNetworks": []},
        "capacity": {"nodes": 12, "sources": [{"type": FLEX_START.type}, {"type": SPOT.type}]},
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
