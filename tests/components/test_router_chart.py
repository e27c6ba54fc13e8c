"""The reference the staging render is compared with (tests/stacks/test_router_chart.py) holds every
object llm-d-router-gateway v0.10.0 renders for GKE."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

CHART = Path(__file__).parents[1] / "data" / "llm-d-router-gateway-v0.10.0-gke.yaml"


def chart_objects() -> list[dict[str, Any]]:
    return [document for document in yaml.safe_load_all(CHART.read_text()) if document]


def key_of(manifest: dict[str, Any]) -> tuple[str, str]:
    return manifest["kind"], manifest["metadata"]["name"]


def test_the_reference_holds_every_object_the_chart_renders_for_gke() -> None:
    assert sorted(key_of(manifest) for manifest in chart_objects()) == sorted(
        [
            ("InferencePool", "qwen-serving"),
            ("ConfigMap", "qwen-serving-epp"),
            ("Deployment", "qwen-serving-epp"),
            ("Role", "qwen-serving-epp-leader-election"),
            ("RoleBinding", "qwen-serving-epp-leader-election-binding"),
            ("Service", "qwen-serving-epp"),
            ("HealthCheckPolicy", "qwen-serving"),
            ("GCPBackendPolicy", "qwen-serving"),
            ("HTTPRoute", "qwen-serving"),
            ("Role", "qwen-serving-epp-non-sa"),
            ("RoleBinding", "qwen-serving-epp-non-sa"),
            ("Role", "qwen-serving-epp-sa"),
            ("RoleBinding", "qwen-serving-epp-sa"),
            ("ServiceAccount", "qwen-serving-epp"),
        ]
    )
