"""The small components on their own: the token Secret and the network policies (the ClusterIP
Service: test_routing.py)."""

from __future__ import annotations

import pulumi

from components.hf_token import HuggingFaceToken, HuggingFaceTokenArgs
from components.network_policy import ServingNetworkPolicies, ServingNetworkPoliciesArgs
from tests.construct import (
    Built,
    build,
    children_are_parented,
    has_resource,
    is_secret,
    of_type,
)


def test_token_secret_keeps_the_token_secret() -> None:
    records = build(
        lambda: HuggingFaceToken(
            "tok",
            HuggingFaceTokenArgs(namespace="serving", token=pulumi.Output.from_input("hf_canary"), labels={"a": "b"}),
        )
    )
    secret = has_resource(
        records,
        "kubernetes:core/v1:Secret",
        {"metadata": {"name": "hf-token", "namespace": "serving", "labels": {"a": "b"}}, "type": "Opaque"},
    )
    # A plain Output handed in still arrives as a secret.
    assert is_secret(secret.inputs["stringData"])
    assert secret.inputs["stringData"]["value"] == {"token": "hf_canary"}
    children_are_parented(records, "llm-serving:serving:HuggingFaceToken", "tok")


def network_policies(gateway_ranges: tuple[str, ...] = (), load_balancer_ranges: tuple[str, ...] = ()) -> Built:
    return build(
        lambda: ServingNetworkPolicies(
            "net",
            ServingNetworkPoliciesArgs(
                namespace="serving",
                name="qwen",
                serving_selector={"app": "qwen"},
                serving_ports=(8000,),
                download_selector={"job": "download"},
                gateway_source_ranges=gateway_ranges,
                load_balancer_source_ranges=load_balancer_ranges,
            ),
        )
    )


def test_serving_pods_take_traffic_only_on_their_port() -> None:
    records = network_policies()
    policy = has_resource(
        records,
        "kubernetes:networking.k8s.io/v1:NetworkPolicy",
        {
            "metadata": {"name": "qwen-ingress"},
            "spec": {
                "podSelector": {"matchLabels": {"app": "qwen"}},
                "policyTypes": ["Ingress"],
                "ingress": [{"ports": [{"protocol": "TCP", "port": 8000}]}],
            },
        },
    )
    peers = policy.inputs["spec"]["ingress"][0]["from"]
    assert len(peers) == 2 and not [peer for peer in peers if "ipBlock" in peer]
    children_are_parented(records, "llm-serving:serving:NetworkPolicies", "net")


def test_gateway_ranges_are_let_in_and_the_download_reaches_only_public_https() -> None:
    records = network_policies(("10.129.0.0/23", "35.191.0.0/16"))
    policies = {
        record.inputs["metadata"]["name"]: record
        for record in of_type(records, "kubernetes:networking.k8s.io/v1:NetworkPolicy")
    }
    peers = policies["qwen-ingress-gateway"].inputs["spec"]["ingress"][0]["from"]
    assert [peer["ipBlock"]["cidr"] for peer in peers] == ["10.129.0.0/23", "35.191.0.0/16"]
    assert policies["qwen-ingress-gateway"].inputs["spec"]["ingress"][0]["ports"] == [{"protocol": "TCP", "port": 8000}]
    assert not [peer for peer in policies["qwen-ingress"].inputs["spec"]["ingress"][0]["from"] if "ipBlock" in peer]
    download = policies["qwen-weights-download"].inputs["spec"]
    assert download["policyTypes"] == ["Ingress", "Egress"] and "ingress" not in download
    https = [rule for rule in download["egress"] if any(port["port"] == 443 for port in rule["ports"])]
    assert https == [
        {
            "ports": [{"protocol": "TCP", "port": 443}],
            "to": [{"ipBlock": {"cidr": "0.0.0.0/0", "except": ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"]}}],
        }
    ]


def test_each_front_s_ranges_have_a_policy_of_their_own_that_the_in_cluster_one_waits_for() -> None:
    """A platform review: one policy whose sources followed routing.mode dropped the gateway's proxies (or the internal
    load balancer's clients) at the start of a routing switch, for the whole roll, while the old front still served.
    NetworkPolicies add up (Kubernetes "Network Policies"): each front's ranges in a policy of its own is created
    with it and deleted at the end of the update, with it; the in-cluster policy waits for them (a stack that had the
    ranges in it keeps them admitted while it loses them)."""
    for gateway, load_balancer, expected in (
        ((), (), set()),
        (("10.129.0.0/23",), (), {"qwen-ingress-gateway"}),
        ((), ("10.0.0.0/20",), {"qwen-ingress-load-balancer"}),
    ):
        records = network_policies(gateway, load_balancer).records
        names = {record["name"]: record for record in records if record["type"].endswith("NetworkPolicy")}
        ranges = {
            record["inputs"]["metadata"]["name"]
            for record in names.values()
            if any("ipBlock" in peer for peer in record["inputs"]["spec"].get("ingress", [{}])[0].get("from", []))
        }
        assert ranges == expected
        assert sorted(names["net-serving"]["options"].get("dependsOn", [])) == sorted(
            name for name, record in names.items() if record["inputs"]["metadata"]["name"] in expected
        )
