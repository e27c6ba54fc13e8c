"""Stack-file variants: a copy of a real stack file with some settings replaced, rendered once per
session (the file path is fixed per variant, so `render_stack` caches it across test modules)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from stacks.config.stack import StackConfig
from stacks.load.loader import validate
from tests.conftest import RenderStack
from tests.rendered import ROOT, RenderedStack

PROJECT = "gke-b200-serving"

VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    # Reservation first, then Flex-start, no Spot, over two zones.
    "reserved": (
        "prod",
        {
            "zones": ["us-central1-b", "us-central1-c"],
            "capacity": {
                "nodes": 4,
                "sources": [
                    {"type": "reservation", "name": "a4-reserved", "project": "shared-reservations"},
                    {"type": "flexStart", "nodeRecyclingLeadTimeSeconds": 9000, "maxRunDurationSeconds": 86400},
                ],
            },
        },
    ),
    # One engine field changed, weights untouched.
    "dev-engine": ("dev", {"engine": {"maxNumSeqs": 4096}}),
    # Another model revision.
    "dev-revision": ("dev", {"weights": {"revision": "0123456789abcdef0123456789abcdef01234567"}}),
    # Operations: production on queue-depth autoscaling, paging an email address.
    "prod-autoscaling": (
        "prod",
        {
            "autoscaling": {"enabled": True, "minReplicas": 4, "maxReplicas": 12, "scaleUpPeriodSeconds": 300},
            "monitoring": {"alerts": {"email": "oncall@example.com"}},
        },
    ),
    # Operations: KV-cache autoscaling, cron entries in a local time zone, an existing channel, no MTP.
    "dev-kv-schedule": (
        "dev",
        {
            "capacity": {"nodes": 2},
            "engine": {"speculative": None},
            "autoscaling": {"enabled": True, "metric": "kvCacheUsage", "targetKvCacheUsage": 0.8},
            "schedule": {
                "enabled": True,
                "timeZone": "Europe/Amsterdam",
                "entries": [
                    {"name": "morning", "cron": "30 7 * * mon-fri", "replicas": 2},
                    {"name": "evening", "cron": "0 20 * * *", "replicas": 0},
                ],
            },
            "monitoring": {"alerts": {"notificationChannel": "projects/my-llm-dev/notificationChannels/1234567890"}},
        },
    ),
    # Operations: a day-2 change of the autoscaler's floor.
    "staging-min-2": ("staging", {"autoscaling": {"enabled": True, "minReplicas": 2}}),
    # Operations: everything off.
    "dev-quiet": (
        "dev",
        {"schedule": {"enabled": False}, "monitoring": {"dashboard": False, "alerts": {"enabled": False}}},
    ),
    # The published 12-node recipe with the in-cluster benchmark Job.
    "prod-benchmark": ("prod", {"benchmark": {"enabled": True}}),
    # ClusterIP routing with the internal load balancer for clients in the VPC (its ranges default to the subnet).
    "dev-internal-lb": ("dev", {"routing": {"internalLoadBalancer": True}}),
    # Sized from a goal instead of a node count: the planner picks 6 nodes.
    "dev-goal": ("dev", {"target": {"totalTokensPerSecond": 500000}}),
    # The serving layer in a platform team's Autopilot cluster: gateway routing, and production.
    "staging-existing": (
        "staging",
        {"cluster": {"existing": True, "name": "platform-autopilot"}, "autoscaling": {"metricsAdapter": "existing"}},
    ),
    # The start-up cuts in a cluster the stack does not manage: mirrors and the shared compile cache.
    "existing-startup": (
        "staging",
        {
            "cluster": {"existing": True, "name": "platform-autopilot"},
            "autoscaling": {"metricsAdapter": "existing"},
            # The shared compile cache is keyed to one server's arguments: not with gateway's per-rank servers.
            "routing": {"mode": "clusterip"},
            "startup": {"compileCache": {"enabled": True}},
        },
    ),
    "prod-existing": ("prod", {"cluster": {"existing": True, "name": "platform-autopilot", "namespace": "llm-prod"}}),
    # The other serving profiles (MoE, on vLLM 0.33.0; prod pins that image by a digest of its own).
    "dev-35b": ("dev", {"profile": "qwen3.5-35b-a3b-fp8"}),
    # Expert parallel: routing.mode gateway (one container per rank) refuses it, so ClusterIP.
    "staging-122b": ("staging", {"profile": "qwen3.5-122b-a10b-fp8", "routing": {"mode": "clusterip"}}),
    # the Gateway with the measured layout: one server per pod, one target port
    "staging-one-server": ("staging", {"routing": {"mode": "gateway", "gateway": {"endpointPerRank": False}}}),
    "prod-397b": ("prod", {"profile": "qwen3.5-397b-a17b-nvfp4", "engine": {"imageDigest": "sha256:" + "ab" * 32}}),
}
PROFILE_VARIANTS = {
    "qwen3.5-27b-fp8": "dev",
    "qwen3.5-35b-a3b-fp8": "dev-35b",
    "qwen3.5-122b-a10b-fp8": "staging-122b",
    "qwen3.5-397b-a17b-nvfp4": "prod-397b",
}


def _stack_config(doc: dict[str, Any]) -> dict[str, Any]:
    prefix = f"{PROJECT}:"
    return {key.removeprefix(prefix): value for key, value in doc["config"].items()}


def variant_config(name: str) -> StackConfig:
    base, settings = VARIANTS[name]
    raw = _stack_config(yaml.safe_load((ROOT / f"Pulumi.{base}.yaml").read_text()))
    return validate({**raw, **settings})


def render_variant(name: str, render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory) -> RenderedStack:
    base, settings = VARIANTS[name]
    doc = yaml.safe_load((ROOT / f"Pulumi.{base}.yaml").read_text())
    doc["config"].update({f"{PROJECT}:{key}": value for key, value in settings.items()})
    directory = tmp_path_factory.getbasetemp() / "variants"
    directory.mkdir(exist_ok=True)
    path = directory / f"Pulumi.{name}.yaml"
    if not path.exists():
        path.write_text(yaml.safe_dump(doc))
    return render_stack(name, path)


def stack_settings(stack: str) -> dict[str, Any]:
    """The settings of a shipped stack file, without the project prefix."""
    return _stack_config(yaml.safe_load((ROOT / f"Pulumi.{stack}.yaml").read_text()))


def stack_config(stack: str) -> StackConfig:
    return validate(_stack_config(yaml.safe_load((ROOT / f"Pulumi.{stack}.yaml").read_text())))
