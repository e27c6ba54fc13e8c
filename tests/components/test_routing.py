"""ClusterIP routing on its own: the internal address comes from the Service's status."""

from __future__ import annotations

from pulumi_kubernetes.core.v1 import outputs as k8s_outputs

from components.routing import ingress_ip


def test_internal_address_comes_from_the_service_status() -> None:
    status = k8s_outputs.ServiceStatus(
        load_balancer=k8s_outputs.LoadBalancerStatus(ingress=[k8s_outputs.LoadBalancerIngress(ip="10.0.0.7")])
    )
    assert ingress_ip(status) == "10.0.0.7"
    assert ingress_ip(k8s_outputs.ServiceStatus(load_balancer=k8s_outputs.LoadBalancerStatus())) is None
    assert ingress_ip(None) is None
