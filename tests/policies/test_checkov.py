"""checkov on every rendered stack: no failed check, and every skip annotated on its manifest
(`checkov.io/skip1: CKV_K8S_xx=<reason>`) and listed here with the reason it is justified.

checkov runs from its own environment (`make checkov` creates `.tools/checkov`; `make test`
depends on it): checkov 3.2+ pins packaging<24, pulumi needs >=26. It scans the command-line render
of every stack file in the background (tests/conftest.py `checkov_report`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from tests.rendered import STACK_FILES

# (check id, kind, object name) -> why the finding does not apply
ADAPTER = "custom-metrics-stackdriver-adapter"
JUSTIFIED_SKIPS: dict[tuple[str, str, str], str] = {
    ("CKV_K8S_38", "Job", "qwen-serving-crds-ready"): "kubectl waits on the API with its service account token",
    ("CKV_K8S_38", "Job", "qwen-serving-crds"): "kubectl waits on the API with its service account token",
    # The Endpoint Picker (components/endpoint_picker.py) watches pods, its InferencePool and its Lease.
    ("CKV_K8S_38", "Deployment", "qwen-serving-epp"): "the picker reads the pool's pods through the API",
    ("CKV_K8S_11", "Deployment", "qwen-serving-epp"): "no CPU limit: a quota would throttle the one active leader",
    # Scale schedules (components/schedule.py): kubectl scales the Deployment through the API.
    ("CKV_K8S_38", "CronJob", "serving-schedule-wake"): "kubectl scales through the API with its token",
    ("CKV_K8S_38", "CronJob", "serving-schedule-sleep"): "kubectl scales through the API with its token",
    # Custom Metrics Stackdriver Adapter, as its upstream manifest (components/autoscaling.py ADAPTER_SKIPS).
    ("CKV_K8S_38", "Deployment", ADAPTER): "reads pods and nodes, delegates authentication: needs its token",
    ("CKV_K8S_23", "Deployment", ADAPTER): "upstream image runs as root and binds 443",
    ("CKV_K8S_40", "Deployment", ADAPTER): "runs as root, see CKV_K8S_23",
    ("CKV_K8S_22", "Deployment", ADAPTER): "writes its self-signed serving certificate on the root filesystem",
    ("CKV_K8S_37", "Deployment", ADAPTER): "all capabilities dropped but NET_BIND_SERVICE",
    ("CKV_K8S_25", "Deployment", ADAPTER): "NET_BIND_SERVICE added back alone, to bind 443",
    ("CKV_K8S_43", "Deployment", ADAPTER): "upstream publishes a tag only; no digest resolvable offline",
    ("CKV_K8S_49", "ClusterRole", "external-metrics-reader"): "upstream: external metric names are resource names",
    ("CKV2_K8S_5", "ClusterRoleBinding", "external-metrics-reader"): "grants metric values to the HPA, no secrets",
}


@dataclass(frozen=True)
class Finding:
    check_id: str
    kind: str
    name: str
    file: str

    @classmethod
    def of(cls, check: dict[str, Any]) -> Finding:
        # resource: "<Kind>.<namespace>.<name>" (cluster-scoped: "<Kind>.default.<name>")
        kind, _, rest = str(check["resource"]).partition(".")
        name = rest.partition(".")[2]
        return cls(str(check["check_id"]), kind, name, str(check.get("file_path", "")))


@pytest.fixture(scope="module", params=STACK_FILES)
def scanned(request: pytest.FixtureRequest, checkov_report: list[dict[str, Any]]) -> dict[str, list[Finding]]:
    """One stack file's findings from the background checkov run over every stack file."""
    assert all(item["check_type"] == "kubernetes" for item in checkov_report)
    assert sum(item["summary"]["parsing_errors"] for item in checkov_report) == 0
    prefix = f"/{request.param}/manifests/"
    findings = {
        outcome: [
            Finding.of(check)
            for item in checkov_report
            for check in item["results"].get(f"{outcome}_checks", [])
            if str(check.get("file_path", "")).startswith(prefix)
        ]
        for outcome in ("failed", "skipped", "passed")
    }
    assert findings["passed"], f"checkov scanned nothing of {request.param}"
    return findings


def test_every_stack_file_is_scanned() -> None:
    assert {"dev", "staging", "prod"} <= set(STACK_FILES)


def test_no_failed_checks(scanned: dict[str, list[Finding]]) -> None:
    failed = sorted({f"{item.check_id} {item.kind}/{item.name}" for item in scanned["failed"]})
    assert failed == []


def test_every_skip_is_justified(scanned: dict[str, list[Finding]]) -> None:
    skipped = {(item.check_id, item.kind, item.name) for item in scanned["skipped"]}
    assert skipped <= set(JUSTIFIED_SKIPS), f"unlisted skips: {sorted(skipped - set(JUSTIFIED_SKIPS))}"


def test_every_pod_has_a_network_policy(scanned: dict[str, list[Finding]]) -> None:
    passed = {(item.check_id, item.kind) for item in scanned["passed"]}
    failed = {(item.check_id, item.kind) for item in scanned["failed"]}
    assert ("CKV2_K8S_6", "Pod") in passed
    assert ("CKV2_K8S_6", "Pod") not in failed


def test_checkov_scans_the_endpoint_picker(checkov_report: list[dict[str, Any]]) -> None:
    """staging routes through the gateway: its picker's objects are plain manifests checkov checks,
    and its one skip is the token the picker needs to watch the API (JUSTIFIED_SKIPS)."""
    prefix = "/staging/manifests/"
    outcomes: dict[str, set[tuple[str, str, str]]] = {"passed": set(), "failed": set(), "skipped": set()}
    for item in checkov_report:
        for outcome, found in outcomes.items():
            for check in item["results"].get(f"{outcome}_checks", []):
                if str(check.get("file_path", "")).startswith(prefix):
                    finding = Finding.of(check)
                    found.add((finding.check_id, finding.kind, finding.name))
    scanned = {(kind, name) for _, kind, name in outcomes["passed"]}
    assert scanned >= {
        ("Deployment", "qwen-serving-epp"),
        ("Service", "qwen-serving-epp"),
        ("ServiceAccount", "qwen-serving-epp"),
        ("ConfigMap", "qwen-serving-epp"),
        ("Role", "qwen-serving-epp-sa"),
        ("Role", "qwen-serving-epp-non-sa"),
        ("Role", "qwen-serving-epp-leader-election"),
        ("RoleBinding", "qwen-serving-epp-leader-election-binding"),
    }
    picker_checks = {
        check for check, kind, name in outcomes["passed"] if (kind, name) == ("Deployment", "qwen-serving-epp")
    }
    # A memory limit, non-root, read-only root filesystem, no privilege escalation, image digest; no CPU limit
    # (CKV_K8S_11, skipped with its reason: a quota would throttle the one active picker).
    assert picker_checks >= {"CKV_K8S_13", "CKV_K8S_22", "CKV_K8S_20", "CKV_K8S_23", "CKV_K8S_43"}
    assert {(kind, name) for _, kind, name in outcomes["failed"]} & scanned == set()
    assert {check for check, kind, name in outcomes["skipped"] if name == "qwen-serving-epp"} == {
        "CKV_K8S_38",
        "CKV_K8S_11",
    }
