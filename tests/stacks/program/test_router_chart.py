"""The gateway objects of the staging render, field by field against what llm-d-router-gateway
v0.10.0 renders for GKE with the same values (tests/data/llm-d-router-gateway-v0.10.0-gke.yaml, read
from the chart's templates by hand). Every difference is listed below with its reason; any other
one (a port, a flag, a probe, an RBAC verb, a label the selectors read, the pool's endpointPickerRef
or failure mode) fails.

Labels and annotations the stack adds to the chart's are allowed (its own labels, Pulumi's await
annotations, the checkov skip); one the chart sets and the stack drops or changes is a difference."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.rendered import RenderedStack

CHART = Path(__file__).parents[2] / "data" / "llm-d-router-gateway-v0.10.0-gke.yaml"


FieldPath = tuple[str | int, ...]


CONTAINER: FieldPath = ("spec", "template", "spec", "containers", 0)


POD: FieldPath = ("spec", "template", "spec")


CHART_LABELS = (("metadata", "labels", "app.kubernetes.io/name"), ("metadata", "labels", "app.kubernetes.io/version"))


# Where the stack may add keys of its own.
ADDITIVE: tuple[FieldPath, ...] = (
    ("metadata", "labels"),
    ("metadata", "annotations"),
    ("spec", "template", "metadata", "labels"),
)


# (kind, name) -> {path: why the stack differs there}; components/endpoint_picker.py and
# components/gateway.py give each reason where the object is declared.
DELIBERATE: dict[tuple[str, str], dict[FieldPath, str]] = {
    ("ConfigMap", "qwen-serving-epp"): {
        ("data", "payload-agnostic.yaml"): "only the plugins file the picker reads (--config-file)",
    },
    ("Deployment", "qwen-serving-epp"): {
        (*CONTAINER, "image"): "the same tag, pinned by digest",
        (*CONTAINER, "securityContext"): "hardening the chart leaves out (non-root image, no writes)",
        (*CONTAINER, "volumeMounts", 0, "readOnly"): "the ConfigMap is mounted read-only",
        (*POD, "securityContext"): "hardening the chart leaves out",
        (*POD, "nodeSelector"): "C4 through Autopilot's Performance class; the chart has no nodeSelector value",
    },
    ("RoleBinding", "qwen-serving-epp-leader-election-binding"): {
        ("subjects", 0, "namespace"): "explicit; the chart leaves it to the RoleBinding's own namespace",
    },
    ("InferencePool", "qwen-serving"): {
        ("spec", "targetPorts"): "one target port per data-parallel rank (8000-8007); the reference has the one port "
        "of the chart's default modelServers.targetPorts",
    },
    ("HealthCheckPolicy", "qwen-serving"): {
        ("spec", "default", "config", "httpHealthCheck", "portSpecification"): "USE_SERVING_PORT: each rank's "
        "endpoint is checked on its own port",
        ("spec", "default", "config", "httpHealthCheck", "port"): "no fixed port: each endpoint's own (see above)",
        **{path: "the chart's labels on the policies; no selector reads them" for path in CHART_LABELS},
    },
    ("GCPBackendPolicy", "qwen-serving"): {
        ("spec", "default", "logging"): "request logging off: ~55 million entries a day at the benchmark's rate",
        **{path: "the chart's labels on the policies; no selector reads them" for path in CHART_LABELS},
    },
}


def chart_objects() -> list[dict[str, Any]]:
    return [document for document in yaml.safe_load_all(CHART.read_text()) if document]


def key_of(manifest: dict[str, Any]) -> tuple[str, str]:
    return manifest["kind"], manifest["metadata"]["name"]


def comparable(manifest: dict[str, Any]) -> dict[str, Any]:
    """A ConfigMap's plugin files as the YAML the picker parses, not as text."""
    if manifest["kind"] != "ConfigMap":
        return manifest
    return {**manifest, "data": {name: yaml.safe_load(text) for name, text in manifest["data"].items()}}


def differences(chart: Any, stack: Any, path: FieldPath = ()) -> dict[FieldPath, str]:
    """Every place where the stack's object is not the chart's: a key removed, added or changed."""
    if isinstance(chart, dict) and isinstance(stack, dict):
        found: dict[FieldPath, str] = {}
        for key in chart.keys() | stack.keys():
            if key not in stack:
                found[(*path, key)] = "removed"
            elif key not in chart:
                if path not in ADDITIVE and (*path, key) not in ADDITIVE:
                    found[(*path, key)] = "added"
            else:
                found |= differences(chart[key], stack[key], (*path, key))
        return found
    if isinstance(chart, list) and isinstance(stack, list) and len(chart) == len(stack):
        found = {}
        for index, (mine, theirs) in enumerate(zip(chart, stack, strict=True)):
            found |= differences(mine, theirs, (*path, index))
        return found
    return {} if chart == stack else {path: f"{chart!r} -> {stack!r}"}


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


@pytest.mark.parametrize("chart", chart_objects(), ids=lambda manifest: "/".join(key_of(manifest)))
def test_staging_declares_what_the_chart_renders(staging: RenderedStack, chart: dict[str, Any]) -> None:
    (declared,) = [manifest for manifest in staging.manifests if key_of(manifest) == key_of(chart)]
    assert declared["apiVersion"] == chart["apiVersion"]
    found = differences(comparable(chart), comparable(declared))
    allowed = DELIBERATE.get(key_of(chart), {})
    unexplained = {path: change for path, change in found.items() if path not in allowed}
    assert unexplained == {}, "differences from the chart with no reason given"
    assert set(allowed) <= set(found), "a listed difference is gone: remove it from DELIBERATE"


def test_a_changed_field_is_caught() -> None:
    """The comparison itself: a port, a verb or a label the chart sets are differences; an added label is not."""
    chart = {"metadata": {"labels": {"a": "1"}}, "spec": {"ports": [{"port": 9002}], "verbs": ["get"]}}
    stack = {
        "metadata": {"labels": {"a": "1", "b": "2"}},
        "spec": {"ports": [{"port": 9003}], "verbs": ["get", "list"]},
    }
    assert differences(chart, stack) == {
        ("spec", "ports", 0, "port"): "9002 -> 9003",
        ("spec", "verbs"): "['get'] -> ['get', 'list']",
    }
    assert differences(chart, {"metadata": {"labels": {}}, "spec": chart["spec"]}) == {
        ("metadata", "labels", "a"): "removed"
    }
