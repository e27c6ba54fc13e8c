"""ClusterIP routing: the Service in front of the vLLM pods, the endpoint outputs, and the optional
internal load balancer for clients in the VPC (full stack and the component alone)."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

import pulumi
import pytest

from components.routing import ClusterIpRouting, ClusterIpRoutingArgs
from policies.vpc_ranges import is_vpc_range
from stacks.args import internal_load_balancer_ranges, routing_args, serving_selector
from stacks.load.loader import InvalidConfig, validate
from tests.conftest import RenderStack
from tests.construct import Built, build, children_are_parented, has_resource, match
from tests.rendered import RenderedStack
from tests.variants import render_variant, stack_config


def json_policy(stack: RenderedStack) -> dict[str, Any]:
    verdicts: dict[str, Any] = json.loads((stack.directory / "policy.json").read_text())
    return verdicts


def service(stack: RenderedStack, name: str) -> dict[str, Any]:
    (manifest,) = [item for item in stack.kind("Service") if item["metadata"]["name"] == name]
    return manifest


@pytest.mark.parametrize("name", ["dev", "prod"])
def test_cluster_ip_service_fronts_the_pods(name: str, render_stack: RenderStack) -> None:
    stack = render_stack(name)
    config = stack_config(name)
    manifest = service(stack, config.routing.service_name)
    assert manifest["metadata"]["name"] != "vllm"
    spec = manifest["spec"]
    assert spec["type"] == "ClusterIP"
    assert spec["selector"] == serving_selector(config)
    assert spec["ports"] == [{"name": "http", "port": 8000, "protocol": "TCP", "targetPort": "http"}]
    (deployment,) = stack.kind("Deployment")
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert spec["selector"].items() <= pod_labels.items()
    (vllm,) = deployment["spec"]["template"]["spec"]["containers"]
    assert {"name": "http", "containerPort": 8000} in vllm["ports"]


@pytest.mark.parametrize("name", ["dev", "prod"])
def test_outputs_give_the_endpoint_and_a_ready_example(name: str, render_stack: RenderStack) -> None:
    outputs = render_stack(name).outputs
    assert outputs["endpoint"] == "http://qwen-serving.llm-serving.svc.cluster.local:8000/v1"
    assert outputs["servedModelName"] == "Qwen/Qwen3.5-27B-FP8"
    assert outputs["tryIt"].startswith("kubectl -n llm-serving port-forward service/qwen-serving 8000:8000")
    assert "curl -sS http://localhost:8000/v1/chat/completions" in outputs["tryIt"]
    assert '"model":"Qwen/Qwen3.5-27B-FP8"' in outputs["tryIt"]


def test_gateway_mode_declares_no_cluster_ip_routing(staging: RenderedStack) -> None:
    assert not staging.of_type("llm-serving:routing:ClusterIpRouting")


INTERNAL = "qwen-serving-internal"
SUBNET = "10.0.0.0/20"


@pytest.fixture(scope="module")
def internal_lb(render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory) -> RenderedStack:
    return render_variant("dev-internal-lb", render_stack, tmp_path_factory)


def test_internal_load_balancer_serves_the_vpc(internal_lb: RenderedStack) -> None:
    manifest = service(internal_lb, INTERNAL)
    assert manifest["metadata"]["annotations"] == {
        "networking.gke.io/load-balancer-type": "Internal",
        "llm-serving/allow-load-balancer": "true",
    }
    spec = manifest["spec"]
    assert spec["type"] == "LoadBalancer"
    assert spec["loadBalancerSourceRanges"] == [SUBNET], "defaults to the cluster's subnet"
    assert spec["externalTrafficPolicy"] == "Local", "keeps the client address the NetworkPolicy checks"
    assert spec["selector"] == service(internal_lb, "qwen-serving")["spec"]["selector"]
    assert spec["ports"] == [{"name": "http", "port": 8000, "protocol": "TCP", "targetPort": "http"}]


def test_internal_clients_pass_the_serving_network_policy(internal_lb: RenderedStack, dev: RenderedStack) -> None:
    def admitted(stack: RenderedStack) -> dict[str, list[str]]:
        return {
            policy["metadata"]["name"]: [peer["ipBlock"]["cidr"] for peer in rule["from"] if "ipBlock" in peer]
            for policy in stack.kind("NetworkPolicy")
            if policy["metadata"]["name"].startswith("qwen-serving-ingress")
            for rule in policy["spec"]["ingress"]
        }

    # a policy of its own, deleted with the load balancer at the end of an update that switches it off
    assert admitted(internal_lb) == {"qwen-serving-ingress": [], "qwen-serving-ingress-load-balancer": [SUBNET]}
    assert admitted(dev) == {"qwen-serving-ingress": []}


def test_internal_address_is_an_output(internal_lb: RenderedStack) -> None:
    outputs = internal_lb.outputs
    assert outputs["internalAddress"] is None, "assigned by GKE when `pulumi up` creates the load balancer"
    assert outputs["internalAddressCommand"] == (
        f"kubectl get service {INTERNAL} -n llm-serving -o jsonpath='{{.status.loadBalancer.ingress[0].ip}}'"
    )
    assert internal_lb.plan.count("internalAddress") >= 2
    assert json_policy(internal_lb)["mandatory"] == 0


def test_no_internal_load_balancer_by_default(dev: RenderedStack, prod: RenderedStack) -> None:
    for stack in (dev, prod):
        assert not [item for item in stack.kind("Service") if item["spec"]["type"] == "LoadBalancer"]
        assert "internalAddress" not in stack.outputs


def test_only_the_load_balancer_is_added(internal_lb: RenderedStack, dev: RenderedStack) -> None:
    before = {record["name"]: record for record in dev.resources}
    after = {record["name"]: record for record in internal_lb.resources}
    assert set(after) - set(before) == {"llm-routing-internal-service", "llm-network-policies-load-balancer"}
    changed = {name for name in before if before[name] != after[name]}
    assert changed == {"llm-network-policies-serving"}
    serving = "llm-network-policies-serving"
    assert before[serving]["inputs"] == after[serving]["inputs"], "it waits for the load balancer's policy, no more"
    assert set(after[serving]["options"]["dependsOn"]) - set(before[serving]["options"]["dependsOn"]) == {
        "llm-network-policies-load-balancer"
    }


ROUTING_ARGS = ClusterIpRoutingArgs(
    service_name="qwen",
    namespace="serving",
    port=8000,
    target_port="http",
    selector={"app": "qwen"},
    served_model_name="m",
    labels={"env": "test"},
)


def build_routing(internal_load_balancer_ranges: tuple[str, ...] = ()) -> Built:
    def declare() -> None:
        args = replace(ROUTING_ARGS, internal_load_balancer_ranges=internal_load_balancer_ranges)
        routing = ClusterIpRouting("route", args)
        if routing.internal_address is not None:
            pulumi.export("internalAddress", routing.internal_address)

    return build(declare)


def test_cluster_ip_service_component() -> None:
    built = build_routing()
    has_resource(
        built,
        "kubernetes:core/v1:Service",
        {
            "metadata": {"name": "qwen", "namespace": "serving", "labels": {"env": "test", "app": "qwen"}},
            "spec": {
                "type": "ClusterIP",
                "selector": {"app": "qwen"},
                "ports": [{"name": "http", "port": 8000, "targetPort": "http", "protocol": "TCP"}],
            },
        },
    )
    children_are_parented(built, "llm-serving:routing:ClusterIpRouting", "route")


def test_internal_load_balancer_component() -> None:
    built = build_routing(("10.10.0.0/16", "192.168.4.0/24"))
    internal = built.manifest("Service", "qwen-internal")
    assert match(
        internal,
        {
            "metadata": {"namespace": "serving", "annotations": {"networking.gke.io/load-balancer-type": "Internal"}},
            "spec": {"type": "LoadBalancer", "loadBalancerSourceRanges": ["10.10.0.0/16", "192.168.4.0/24"]},
        },
    )
    assert built.named("route-internal-service")["parent"] == "route"
    assert built.outputs == {"internalAddress": None}
    built.validate()
    assert not build_routing().kind("Service", "qwen-internal")


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ({"internalLoadBalancer": True}, ("10.0.0.0/20",)),
        ({"internalLoadBalancer": True, "internalLoadBalancerSourceRanges": ["10.20.0.0/16"]}, ("10.20.0.0/16",)),
        ({}, ()),
        # shared address space (RFC 6598): valid in a VPC although Python's is_private says no
        ({"internalLoadBalancer": True, "internalLoadBalancerSourceRanges": ["100.64.0.0/10"]}, ("100.64.0.0/10",)),
    ],
)
def test_internal_load_balancer_ranges(settings: dict[str, Any], expected: tuple[str, ...]) -> None:
    config = validate({"environment": "dev", "project": "my-llm-dev", "routing": settings})
    assert internal_load_balancer_ranges(config) == expected


INVALID_INTERNAL: list[tuple[dict[str, Any], str]] = [
    ({"mode": "gateway", "internalLoadBalancer": True}, "routing: internalLoadBalancer: only in clusterip mode"),
    ({"internalLoadBalancerSourceRanges": ["10.0.0.0/20"]}, "set without internalLoadBalancer: true"),
    (
        {"internalLoadBalancer": True, "internalLoadBalancerSourceRanges": ["0.0.0.0/0"]},
        "routing.internalLoadBalancerSourceRanges: '0.0.0.0/0' is not an internal VPC range",
    ),
    # Python's is_private accepts loopback and link-local, which no VPC client has
    (
        {"internalLoadBalancer": True, "internalLoadBalancerSourceRanges": ["127.0.0.0/8"]},
        "'127.0.0.0/8' is not an internal VPC range",
    ),
    (
        {"internalLoadBalancer": True, "internalLoadBalancerSourceRanges": ["169.254.0.0/16"]},
        "'169.254.0.0/16' is not an internal VPC range",
    ),
    (
        {"internalLoadBalancer": True, "internalLoadBalancerSourceRanges": ["10.0.0.1/20"]},
        "routing.internalLoadBalancerSourceRanges: '10.0.0.1/20' is not an IPv4 CIDR block",
    ),
    ({"internalLoadBalancer": True, "internalLoadBalancerSourceRanges": []}, "internalLoadBalancerSourceRanges"),
    (
        {"internalLoadBalancer": True, "internalLoadBalancerSourceRanges": ["10.0.0.0/8", "10.0.0.0/8"]},
        "listed twice",
    ),
    ({"internalLoadBalancer": True, "serviceName": "q" * 60}, "internal load balancer Service name"),
]


@pytest.mark.parametrize(("settings", "expected"), INVALID_INTERNAL)
def test_invalid_internal_load_balancer_settings(settings: dict[str, Any], expected: str) -> None:
    with pytest.raises(InvalidConfig, match=re.escape(expected)):
        validate({"environment": "dev", "project": "my-llm-dev", "routing": settings})


def test_an_existing_cluster_names_the_load_balancers_clients() -> None:
    """The default ranges are the subnet a new cluster gets; an existing cluster's VPC is not that."""
    existing = {"environment": "dev", "project": "my-llm-dev", "cluster": {"existing": True, "name": "platform"}}
    required = "internalLoadBalancerSourceRanges: required with cluster.existing"
    with pytest.raises(InvalidConfig, match=re.escape(required)):
        validate({**existing, "routing": {"internalLoadBalancer": True}})
    config = validate(
        {**existing, "routing": {"internalLoadBalancer": True, "internalLoadBalancerSourceRanges": ["10.8.0.0/16"]}}
    )
    assert internal_load_balancer_ranges(config) == ("10.8.0.0/16",)


def test_a_subnet_in_shared_address_space_is_the_load_balancers_default_and_passes_its_policy() -> None:
    """The subnet may be 100.64.0.0/10 (a valid VPC range); the load balancer's default range is then that
    subnet, and the config and LLM-NET-009 judge it by the same table (policies/vpc_ranges.py)."""
    config = validate(
        {
            "environment": "dev",
            "project": "my-llm-dev",
            "cluster": {"network": {"subnetCidr": "100.64.0.0/20"}},
            "routing": {"internalLoadBalancer": True},
        }
    )
    assert internal_load_balancer_ranges(config) == ("100.64.0.0/20",)
    assert is_vpc_range("100.64.0.0/20")
    assert not is_vpc_range("127.0.0.0/8") and not is_vpc_range("8.8.8.0/24") and not is_vpc_range("nonsense")


def test_try_it_gets_the_secret_of_the_engines_api_key() -> None:
    """The gateway's example is built from the same Args field (components/gateway.py curl_example)."""
    base = {"environment": "dev", "project": "my-llm-dev"}
    assert routing_args(validate(base)).api_key_secret is None
    keyed = validate({**base, "engine": {"secretEnv": {"VLLM_API_KEY": "vllmApiKey"}}})
    assert routing_args(keyed).api_key_secret == "qwen-serving-engine-env"
