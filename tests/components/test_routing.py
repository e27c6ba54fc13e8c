"""ClusterIP routing on its own: the internal address comes from the Service's status; the example
request carries the engine's API key when it takes one."""

from __future__ import annotations

import pulumi
from pulumi_kubernetes.core.v1 import outputs as k8s_outputs

from components.routing import ClusterIpRouting, ClusterIpRoutingArgs, ingress_ip
from tests.construct import build


def test_internal_address_comes_from_the_service_status() -> None:
    status = k8s_outputs.ServiceStatus(
        load_balancer=k8s_outputs.LoadBalancerStatus(ingress=[k8s_outputs.LoadBalancerIngress(ip="10.0.0.7")])
    )
    assert ingress_ip(status) == "10.0.0.7"
    assert ingress_ip(k8s_outputs.ServiceStatus(load_balancer=k8s_outputs.LoadBalancerStatus())) is None
    assert ingress_ip(None) is None


def test_with_an_api_key_try_it_reads_it_from_the_secret_and_sends_it() -> None:
    def try_it(api_key_secret: str | None) -> str:
        args = ClusterIpRoutingArgs("qwen", "ns", 8000, "http", {"app": "qwen"}, "m", api_key_secret=api_key_secret)
        (output,) = build(lambda: pulumi.export("tryIt", ClusterIpRouting("routing", args).try_it)).outputs.values()
        return str(output)

    assert "Authorization" not in try_it(None) and "secret" not in try_it(None)
    keyed = try_it("qwen-engine-env")
    assert keyed.startswith(
        "VLLM_API_KEY=$(kubectl -n ns get secret qwen-engine-env -o jsonpath='{.data.VLLM_API_KEY}' | base64 -d); "
        "kubectl -n ns port-forward service/qwen 8000:8000 & sleep 3; curl "
    )
    assert ' -H "Authorization: Bearer $VLLM_API_KEY" ' in keyed
