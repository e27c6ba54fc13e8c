"""What reaches the serving pods while they roll (commands/preview/fronts.py), on records built by hand."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

from commands.preview.changes import Preview, ResourceChange
from commands.preview.command import preview_states
from commands.preview.fronts import (
    FIREWALL_TYPE,
    NETWORK_POLICY_TYPE,
    POOL_TYPE,
    SERVICE_TYPE,
    fronts_ahead,
    serving_pods,
)
from tests.commands.preview.test_preview import render_with
from tests.conftest import RenderStack
from tests.rendered import RenderedStack

LABELS = {"app": "qwen-serving"}


def deployment(*ports: tuple[str, int]) -> dict[str, Any]:
    containers = [
        {"name": f"vllm-{index}", "ports": [{"name": name, "containerPort": number}]}
        for index, (name, number) in enumerate(ports)
    ]
    spec = {"template": {"metadata": {"labels": LABELS}, "spec": {"containers": containers}}}
    return {"type": "kubernetes:apps/v1:Deployment", "name": "serving", "inputs": {"spec": spec}, "options": {}}


ONE_SERVER = deployment(("http", 8000))
PER_RANK = deployment(*((f"http-{rank}", 8000 + rank) for rank in range(8)))


def record(type_: str, name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    return {"type": type_, "name": name, "inputs": {"metadata": {"name": name}, **inputs}, "options": {}}


def service(target: Any) -> dict[str, Any]:
    return record(
        SERVICE_TYPE, "qwen-serving", {"spec": {"selector": LABELS, "ports": [{"port": 80, "targetPort": target}]}}
    )


def policy(*ports: dict[str, Any]) -> dict[str, Any]:
    rule = {"from": [{"podSelector": {}}], **({"ports": list(ports)} if ports else {})}
    spec = {"podSelector": {"matchLabels": LABELS}, "policyTypes": ["Ingress"], "ingress": [rule]}
    return record(NETWORK_POLICY_TYPE, "qwen-serving-ingress", {"spec": spec})


def pool(*ports: int) -> dict[str, Any]:
    spec = {"selector": {"matchLabels": LABELS}, "targetPorts": [{"number": port} for port in ports]}
    return record(POOL_TYPE, "qwen-serving", {"spec": spec})


def firewall(*ports: str, protocol: str = "tcp") -> dict[str, Any]:
    return {
        "type": FIREWALL_TYPE,
        "name": "fw",
        "inputs": {"name": "to-serving", "allows": [{"protocol": protocol, "ports": list(ports)}]},
        "options": {},
    }


def ahead(
    old_pods: dict[str, Any], new_pods: dict[str, Any], *changes: tuple[str, dict[str, Any], dict[str, Any] | None]
) -> list[str]:
    """`changes`: (action, the record after, or for a delete the one before; the record before an update)."""
    old = {f"urn:{index}": before for index, (_, _, before) in enumerate(changes) if before is not None}
    found = [ResourceChange(f"urn:{index}", after, action) for index, (action, after, _) in enumerate(changes)]
    return fronts_ahead(Preview(found, 0, [], []), old, old_pods, new_pods)


def test_named_ports_are_each_pods_own() -> None:
    assert serving_pods(PER_RANK).ports["http-7"] == 8007 and serving_pods(ONE_SERVER).numbers == {8000}


def test_a_policy_narrowed_to_a_port_the_old_pods_do_not_use_shuts_them_out() -> None:
    (effect,) = ahead(ONE_SERVER, ONE_SERVER, ("update", policy({"port": 9000}), policy({"port": 8000})))
    assert effect.startswith(
        "the NetworkPolicy qwen-serving-ingress (update): it stops reaching port(s) 8000 of the old"
    )
    assert "on none of the port(s) it had (an outage through it" in effect


def test_a_range_and_a_rule_without_ports_admit_what_they_cover() -> None:
    ranged = ("update", policy({"port": 8000, "endPort": 8003}), policy({"port": 8000, "endPort": 8007}))
    (effect,) = ahead(PER_RANK, PER_RANK, ranged)
    assert "stops reaching port(s) 8004, 8005, 8006, 8007 of the old pods at once" in effect
    assert "on 4 of the 8 port(s) it had" in effect
    assert ahead(PER_RANK, PER_RANK, ("update", policy(), policy({"port": 8000}))) == []


def test_a_named_policy_port_is_looked_up_in_the_old_pods() -> None:
    assert ahead(ONE_SERVER, ONE_SERVER, ("update", policy({"port": "http"}), policy({"port": 8000}))) == []


def test_a_new_service_whose_port_name_the_old_pods_lack_reaches_only_new_pods() -> None:
    """gateway -> clusterip: the Service's targetPort `http` is no port of the per-rank pods (`http-0`...)."""
    (effect,) = ahead(PER_RANK, ONE_SERVER, ("create", service("http"), None))
    assert effect == (
        "the Service qwen-serving (create): it reaches none of the old pods: only the new ones join it, one round "
        "after the other"
    )
    assert ahead(ONE_SERVER, ONE_SERVER, ("create", service("http"), None)) == []


def test_a_service_deleted_at_the_end_loses_each_new_pod_without_its_port() -> None:
    """clusterip -> gateway: the old Service stays until the end of the update, its `http` on none of the new pods."""
    (effect,) = ahead(ONE_SERVER, PER_RANK, ("delete", service("http"), service("http")))
    assert "(deleted at the end of the update) reaches none of the new pods: its clients reach one pod fewer" in effect


def test_a_pool_meets_ports_the_pods_do_not_listen_on() -> None:
    (created,) = ahead(ONE_SERVER, PER_RANK, ("create", pool(*range(8000, 8008)), None))
    assert "requests to port(s) 8001, 8002, 8003, 8004, 8005, 8006, 8007 of the old pods, which serve none" in created
    (deleted,) = ahead(PER_RANK, ONE_SERVER, ("delete", pool(*range(8000, 8008)), pool(*range(8000, 8008))))
    assert "(deleted at the end of the update): until then the gateway may send requests to port(s) 8001" in deleted
    assert "of the new pods, which serve none there" in deleted


def announcing(deployment_record: dict[str, Any], ports: str, key: str = "llm-d.ai/active-ports") -> dict[str, Any]:
    announced = copy.deepcopy(deployment_record)
    announced["inputs"]["spec"]["template"]["metadata"]["annotations"] = {key: ports}
    return announced


def test_pods_that_name_their_ports_get_requests_only_there() -> None:
    """llm-d-router v0.10.0 extractActivePorts: a pod's annotation keeps the target ports it lists."""
    old, new = announcing(ONE_SERVER, "8000"), announcing(PER_RANK, ",".join(map(str, range(8000, 8008))))
    assert ahead(old, new, ("update", pool(*range(8000, 8008)), pool(8000))) == []
    assert ahead(new, old, ("delete", pool(*range(8000, 8008)), pool(*range(8000, 8008)))) == []
    legacy = announcing(ONE_SERVER, " 8000 ,x", key="inference.networking.k8s.io/active-ports")
    assert ahead(legacy, PER_RANK, ("create", pool(*range(8000, 8008)), None)) == []
    # a port the pod names but does not serve still fails
    (wrong,) = ahead(announcing(ONE_SERVER, "8000,8001"), PER_RANK, ("create", pool(*range(8000, 8008)), None))
    assert "requests to port(s) 8001 of the old pods, which serve none there" in wrong


def test_a_firewall_counts_tcp_ranges_only() -> None:
    (effect,) = ahead(PER_RANK, PER_RANK, ("update", firewall("8000"), firewall("8000-8007")))
    assert effect.startswith("the Firewall to-serving (update): it stops reaching port(s) 8001, 8002")
    (udp,) = ahead(PER_RANK, PER_RANK, ("update", firewall("8000-8007", protocol="udp"), firewall("8000-8007")))
    assert "stops reaching port(s) 8000, 8001, 8002, 8003, 8004, 8005, 8006, 8007 of the old pods" in udp
    assert ahead(PER_RANK, PER_RANK, ("update", firewall("8000-8007", protocol="6"), firewall("8000-8007"))) == []


def test_a_policy_entry_without_a_port_admits_all_and_another_protocol_none() -> None:
    """Kubernetes NetworkPolicyPort: a missing port matches all ports of its protocol (TCP by default)."""
    widened = ("update", policy({"protocol": "TCP"}), policy({"protocol": "TCP", "port": 8000}))
    assert ahead(PER_RANK, PER_RANK, widened) == []
    (udp,) = ahead(
        ONE_SERVER, ONE_SERVER, ("update", policy({"protocol": "UDP", "port": 8000}), policy({"port": 8000}))
    )
    assert "stops reaching port(s) 8000 of the old pods at once" in udp


def test_a_service_whose_selector_leaves_the_old_pods_shuts_them_out() -> None:
    moved = service("http")
    moved["inputs"]["spec"]["selector"] = {**LABELS, "version": "2"}
    (effect,) = ahead(ONE_SERVER, ONE_SERVER, ("update", moved, service("http")))
    assert "it stops reaching port(s) 8000 of the old pods at once" in effect


def test_a_replaced_front_is_a_new_one_now_and_the_old_one_at_the_end() -> None:
    """A renamed service replaces the pool (create first): the new pool meets the old pods at once, the old pool
    the new pods until the end of the update."""
    (created,) = ahead(ONE_SERVER, PER_RANK, ("replace", pool(*range(8000, 8008)), pool(8000)))
    assert created.startswith("the InferencePool qwen-serving (replace): the gateway may send requests to port(s) 8001")
    assert "of the old pods, which serve none there" in created
    (left,) = ahead(PER_RANK, ONE_SERVER, ("replace", pool(8000), pool(*range(8000, 8008))))
    assert left.startswith("the InferencePool qwen-serving (deleted at the end of the update): until then the gateway")
    assert "port(s) 8001, 8002, 8003, 8004, 8005, 8006, 8007 of the new pods, which serve none there" in left


def test_a_policy_that_drops_a_front_s_ranges_no_other_admits_is_said_to_shut_them_out(
    staging: RenderedStack, render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A diff review: a stack deployed by a release that kept the gateway's ranges in the in-cluster policy, updated
    with a routing switch in the same `up`, loses them at once while no policy of its own admits them yet (the
    Gateway dark for the roll); the preview said only what the ports do. Deployed with each front's own policy, the
    same switch keeps them until the end, and says nothing of it."""
    clusterip = render_with(render_stack, tmp_path_factory, "staging", "routing", {"routing": {"mode": "clusterip"}})
    current = staging.states

    def before_own_policies(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The records as the release before deployed them: the gateway's ranges in the in-cluster policy."""
        records = copy.deepcopy(records)
        (own,) = [record for record in records if record["name"] == "llm-network-policies-gateway"]
        (serving,) = [record for record in records if record["name"] == "llm-network-policies-serving"]
        serving["inputs"]["spec"]["ingress"][0]["from"] += own["inputs"]["spec"]["ingress"][0]["from"]
        return [record for record in records if record is not own]

    assert current.converged is not None
    older = dataclasses.replace(
        current, first_up=before_own_policies(current.first_up), converged=before_own_policies(current.converged)
    )
    new = clusterip.states
    (shut,) = [rollout.what for rollout in preview_states(older, new).rollouts if "stops admitting" in rollout.what]
    assert "10.129.0.0/23, 130.211.0.0/22, 35.191.0.0/16 to the old pods at once" in shut
    assert "changes no routing" in shut
    assert not [rollout for rollout in preview_states(current, new).rollouts if "stops admitting" in rollout.what]


def test_a_range_another_policy_holds_or_a_policy_from_any_source_is_no_range_shut_out() -> None:
    """A final diff review: ranges were compared as texts, so a range inside a wider one of another policy, or another
    policy whose rule has no `from` (any source), still read as shut out."""

    def ranged(name: str, *cidrs: str, any_source: bool = False) -> dict[str, Any]:
        rule: dict[str, Any] = {"ports": [{"port": 8000}]}
        if not any_source:
            rule["from"] = [{"podSelector": {}}, *({"ipBlock": {"cidr": cidr}} for cidr in cidrs)]
        spec = {"podSelector": {"matchLabels": LABELS}, "policyTypes": ["Ingress"], "ingress": [rule]}
        return record(NETWORK_POLICY_TYPE, name, {"spec": spec})

    before, after = ranged("qwen-serving-ingress", "10.129.0.0/23"), ranged("qwen-serving-ingress")
    changes = [ResourceChange("urn:in-cluster", after, "update")]
    for other, shut in (
        (None, True),
        (ranged("wider", "10.128.0.0/9"), False),
        (ranged("any", any_source=True), False),
        (ranged("narrower", "10.129.0.0/24"), True),
    ):
        old = {"urn:in-cluster": before, **({"urn:other": other} if other else {})}
        found = fronts_ahead(Preview(changes, 0, [], []), old, ONE_SERVER, ONE_SERVER)
        assert any("stops admitting 10.129.0.0/23" in line for line in found) == shut, other
