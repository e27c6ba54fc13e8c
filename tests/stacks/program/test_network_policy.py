"""NetworkPolicies: the vLLM pods admit only their namespace, the metrics collectors and (gateway
mode) the load balancer; the weight download Job reaches only DNS and public HTTPS."""

from __future__ import annotations

from typing import Any

from components.gateway import HEALTH_CHECK_RANGES
from components.network_policy import METRICS_COLLECTOR_NAMESPACES, PRIVATE_RANGES
from tests.manifest_schemas import validate_manifest
from tests.rendered import RenderedStack

ENGINE_PORT = 8000
PROXY_SUBNET_CIDR = "10.129.0.0/23"


def policy(stack: RenderedStack, suffix: str) -> dict[str, Any]:
    (found,) = [item for item in stack.kind("NetworkPolicy") if item["metadata"]["name"].endswith(suffix)]
    return found


def pod_labels(stack: RenderedStack, kind: str, name_suffix: str) -> dict[str, str]:
    (workload,) = [item for item in stack.kind(kind) if item["metadata"]["name"].endswith(name_suffix)]
    labels: dict[str, str] = workload["spec"]["template"]["metadata"]["labels"]
    return labels


def selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    assert set(selector) == {"matchLabels"}, "plain label selectors only"
    return bool(selector["matchLabels"]) and selector["matchLabels"].items() <= labels.items()


def test_policies_validate(stack: RenderedStack) -> None:
    policies = stack.kind("NetworkPolicy")
    assert len(policies) >= 2
    for item in policies:
        validate_manifest(item)


def test_serving_pods_admit_only_known_sources(stack: RenderedStack) -> None:
    serving = policy(stack, "-ingress")
    assert selects(serving["spec"]["podSelector"], pod_labels(stack, "Deployment", "qwen-serving"))
    assert not selects(serving["spec"]["podSelector"], pod_labels(stack, "Job", "-download"))
    assert serving["spec"]["policyTypes"] == ["Ingress"]
    (rule,) = serving["spec"]["ingress"]
    gateway = bool(stack.kind("InferencePool"))
    # One port per data-parallel rank in gateway mode, the one serving port otherwise.
    ports = {"port": ENGINE_PORT, "endPort": ENGINE_PORT + 7} if gateway else {"port": ENGINE_PORT}
    assert rule["ports"] == [{"protocol": "TCP", **ports}]
    namespace_clients, collectors = rule["from"]
    assert namespace_clients == {"podSelector": {}}, "any pod of the serving namespace"
    assert collectors == {
        "namespaceSelector": {
            "matchExpressions": [
                {"key": "kubernetes.io/metadata.name", "operator": "In", "values": list(METRICS_COLLECTOR_NAMESPACES)}
            ]
        }
    }
    # the gateway's proxies and health checkers on the same ports, in a policy of its own (deleted with the Gateway)
    proxies = [item for item in stack.kind("NetworkPolicy") if item["metadata"]["name"].endswith("-ingress-gateway")]
    if not stack.kind("Gateway"):
        assert proxies == []
        return
    (own,) = proxies
    assert own["spec"]["podSelector"] == serving["spec"]["podSelector"] and own["spec"]["policyTypes"] == ["Ingress"]
    (proxy_rule,) = own["spec"]["ingress"]
    assert proxy_rule["ports"] == rule["ports"]
    assert proxy_rule["from"] == [{"ipBlock": {"cidr": cidr}} for cidr in (PROXY_SUBNET_CIDR, *HEALTH_CHECK_RANGES)]


def test_download_job_reaches_only_dns_and_public_https(stack: RenderedStack) -> None:
    download = policy(stack, "-weights-download")
    assert selects(download["spec"]["podSelector"], pod_labels(stack, "Job", "-download"))
    assert not selects(download["spec"]["podSelector"], pod_labels(stack, "Deployment", "qwen-serving"))
    assert download["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert "ingress" not in download["spec"], "no inbound connections at all"
    dns, https = download["spec"]["egress"]
    assert dns == {"ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}
    assert https == {
        "to": [{"ipBlock": {"cidr": "0.0.0.0/0", "except": list(PRIVATE_RANGES)}}],
        "ports": [{"protocol": "TCP", "port": 443}],
    }


def test_crd_wait_job_is_confined(staging: RenderedStack) -> None:
    waiter = policy(staging, "-crds-ready")
    assert selects(waiter["spec"]["podSelector"], pod_labels(staging, "Job", "-crds-ready"))
    assert waiter["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert [rule["ports"][-1]["port"] for rule in waiter["spec"]["egress"]] == [53, 443]
