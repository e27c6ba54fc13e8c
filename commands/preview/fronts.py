"""What reaches the serving pods while they roll: the objects in front of them, by port.

The Service, the NetworkPolicy that admits their traffic, the firewall rule from the gateway's proxies and
the InferencePool are updated (or created) at once, in parallel with the Deployment: none of them waits on
it, and an in-place update of each is done in seconds. The Deployment then replaces its pods one round after
the other, and `pulumi up` waits for the rollout. For that whole time the old pods, with their old ports,
stand behind the new fronts, and the new pods behind the fronts deleted at the end (the engine deletes last):
* a Service sends to the pods its selector picks that have its `targetPort` (a name is looked up in each pod's
  ports; a pod without it is left out of the Service's endpoints, Kubernetes "Service" docs, "Port
  definitions in Pods have names, and you can reference these names in the targetPort attribute");
* a NetworkPolicy that selects the pods admits only the ports its ingress rules list (`port` .. `endPort`;
  a rule without ports admits all), and drops the rest (enforced: "GKE Dataplane V2 is always enabled in new
  Autopilot clusters", GKE docs "Use GKE Dataplane V2", and "Kubernetes Network policy is always on in clusters
  with Dataplane V2", GKE docs "Dataplane V2");
* a firewall rule opens the ports it lists (`8000-8007` a range) to the gateway's proxies and health checks;
* an InferencePool's picker treats every target port of every pod as an endpoint ("Every port will be
  treated as a distinctive endpoint by EPP, addressable as a 'podIP:portNumber' combination", the vendored
  CRD's targetPorts), whether or not the pod listens there, unless the pod names the ports it serves in its
  `llm-d.ai/active-ports` annotation: then only the target ports it names (llm-d-router v0.10.0
  pkg/epp/datastore/datastore.go, extractActivePorts: comma-separated numbers, each kept if it is a target port).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from commands.io.states import Record, pod_labels, pod_template
from commands.preview.changes import Preview
from components.endpoint_picker import ACTIVE_PORTS_ANNOTATION, LEGACY_ACTIVE_PORTS_ANNOTATION

SERVICE_TYPE = "kubernetes:core/v1:Service"
NETWORK_POLICY_TYPE = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
FIREWALL_TYPE = "gcp:compute/firewall:Firewall"
POOL_TYPE = "kubernetes:inference.networking.k8s.io/v1:InferencePool"
FRONT_TYPES = frozenset({SERVICE_TYPE, NETWORK_POLICY_TYPE, FIREWALL_TYPE, POOL_TYPE})
# What a front that reaches no port of the old pods any more does while they roll, and a NetworkPolicy that stops
# admitting a range no other admits.
OUTAGE_THROUGH = "an outage through it for the pods not yet replaced"
SHUT_OUT = "no other NetworkPolicy admits them meanwhile"


@dataclass(frozen=True)
class Pods:
    """The serving pods of one side: their labels, their ports (number by name), and the ports they name to the
    gateway's picker (None: they name none, so it takes every target port)."""

    labels: dict[str, str]
    ports: dict[str, int]
    active: frozenset[int] | None = None

    @property
    def numbers(self) -> set[int]:
        return set(self.ports.values())

    def picked(self, targets: set[int]) -> set[int]:
        """The target ports of an InferencePool the picker makes endpoints of on these pods."""
        return targets if self.active is None else targets & self.active


def serving_pods(deployment: Record) -> Pods:
    labels = pod_labels(deployment)
    ports: dict[str, int] = {}
    for index, container in enumerate((pod_template(deployment).get("spec") or {}).get("containers") or []):
        for port in container.get("ports") or []:
            if isinstance(port, dict) and isinstance(port.get("containerPort"), int):
                ports[str(port.get("name") or f"{index}:{port['containerPort']}")] = port["containerPort"]
    return Pods(dict(labels), ports, _active_ports(pod_template(deployment)))


def _active_ports(template: dict[str, Any]) -> frozenset[int] | None:
    annotations = (template.get("metadata") or {}).get("annotations") or {}
    named = annotations.get(ACTIVE_PORTS_ANNOTATION, annotations.get(LEGACY_ACTIVE_PORTS_ANNOTATION))
    if not isinstance(named, str):
        return None
    return frozenset(
        int(part) for part in (item.strip() for item in named.split(",")) if part.isascii() and part.isdigit()
    )


def _selects(selector: Any, pods: Pods) -> bool:
    return isinstance(selector, dict) and bool(selector) and all(pods.labels.get(k) == v for k, v in selector.items())


def _port(value: Any, pods: Pods) -> int | None:
    return value if isinstance(value, int) else pods.ports.get(value) if isinstance(value, str) else None


def _service_reach(inputs: dict[str, Any], pods: Pods) -> set[int] | None:
    spec = inputs.get("spec") or {}
    if not _selects(spec.get("selector"), pods):
        return None
    reached = set()
    for entry in spec.get("ports") or []:
        number = _port(entry.get("targetPort", entry.get("port")), pods)
        if number in pods.numbers:
            reached.add(number)
    return reached


def _policy_reach(inputs: dict[str, Any], pods: Pods) -> set[int] | None:
    spec = inputs.get("spec") or {}
    if not _selects((spec.get("podSelector") or {}).get("matchLabels"), pods) or "Ingress" not in (
        spec.get("policyTypes") or ["Ingress"]
    ):
        return None
    reached: set[int] = set()
    for rule in spec.get("ingress") or []:
        if not rule.get("ports"):
            return pods.numbers
        for entry in rule["ports"]:
            if str(entry.get("protocol") or "TCP").upper() != "TCP":
                continue
            if entry.get("port") is None:
                return pods.numbers
            low = _port(entry.get("port"), pods)
            high = entry.get("endPort") if isinstance(entry.get("endPort"), int) else low
            reached |= {number for number in pods.numbers if low is not None and low <= number <= (high or low)}
    return reached


def _firewall_reach(inputs: dict[str, Any], pods: Pods) -> set[int] | None:
    reached: set[int] = set()
    for allowed in inputs.get("allows") or []:
        if str(allowed.get("protocol", "")).lower() not in ("tcp", "6", "all"):
            continue
        if not allowed.get("ports"):
            return pods.numbers
        for text in allowed["ports"]:
            low, _, high = str(text).partition("-")
            if low.isdigit() and (not high or high.isdigit()):
                reached |= {number for number in pods.numbers if int(low) <= number <= int(high or low)}
    return reached


def _pool_reach(inputs: dict[str, Any], pods: Pods) -> set[int] | None:
    spec = inputs.get("spec") or {}
    if not _selects((spec.get("selector") or {}).get("matchLabels"), pods):
        return None
    return pods.picked(_pool_targets(inputs)) & pods.numbers


def _pool_targets(inputs: dict[str, Any]) -> set[int]:
    ports = (inputs.get("spec") or {}).get("targetPorts") or []
    return {port["number"] for port in ports if isinstance(port, dict) and isinstance(port.get("number"), int)}


REACH = {
    SERVICE_TYPE: _service_reach,
    NETWORK_POLICY_TYPE: _policy_reach,
    FIREWALL_TYPE: _firewall_reach,
    POOL_TYPE: _pool_reach,
}


def _ingress_peers(inputs: dict[str, Any]) -> Iterator[dict[str, Any] | None]:
    """Each peer of a NetworkPolicy's ingress rules; None for a rule without `from` (any source)."""
    for rule in (inputs.get("spec") or {}).get("ingress") or []:
        peers = rule.get("from") if isinstance(rule, dict) else None
        yield from ((peer if isinstance(peer, dict) else {}) for peer in peers) if peers else [None]


def _selects_pods(inputs: dict[str, Any], pods: Pods) -> bool:
    return _selects(((inputs.get("spec") or {}).get("podSelector") or {}).get("matchLabels"), pods)


def _network(cidr: Any) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    try:
        return ipaddress.ip_network(str(cidr), strict=False)
    except ValueError:
        return None


def _admits(inputs: dict[str, Any], pods: Pods, cidr: str) -> bool:
    """Whether a NetworkPolicy that selects the pods admits the whole range: a rule from any source (no `from`), or an
    ipBlock that holds it and excepts none of it."""
    if not _selects_pods(inputs, pods):
        return False
    wanted = _network(cidr)
    for peer in _ingress_peers(inputs):
        if peer is None:
            return True
        block = peer.get("ipBlock")
        if not isinstance(block, dict):
            continue
        held, excepted = _network(block.get("cidr")), [_network(item) for item in block.get("except") or []]
        if str(block.get("cidr")) == cidr or (
            wanted is not None
            and held is not None
            and wanted.version == held.version
            and wanted.subnet_of(held)  # type: ignore[arg-type]
            and not any(item is not None and item.overlaps(wanted) for item in excepted)  # type: ignore[arg-type]
        ):
            return True
    return False


def _sources_dropped_at_once(result: Preview, old: dict[str, Record], pods: Pods) -> list[str]:
    """Address ranges a NetworkPolicy update stops admitting to the old pods at once that no other policy admits while
    they roll (one kept, created at once, or deleted only at the end): NetworkPolicies add up, so the clients from
    there (a load balancer's proxies, health checkers or clients) reach no old pod until the roll ends. A stack
    deployed by a release that kept a front's ranges in the in-cluster policy, whose update switches routing.mode."""
    changed = {change.urn: change for change in result.changes if change.record["type"] == NETWORK_POLICY_TYPE}
    present = {urn: record for urn, record in old.items() if record["type"] == NETWORK_POLICY_TYPE}
    present |= {urn: change.record for urn, change in changed.items() if change.action in ("create", "update")}
    found = []
    for urn, change in changed.items():
        if change.action != "update" or urn not in old:
            continue
        # the ranges it admitted that no policy present while the pods roll admits, its own new inputs included
        had = [] if not _selects_pods(old[urn]["inputs"], pods) else _ingress_peers(old[urn]["inputs"])
        ranges = {str(peer["ipBlock"].get("cidr")) for peer in had if peer and isinstance(peer.get("ipBlock"), dict)}
        others = [record["inputs"] for key, record in present.items() if key != urn] + [change.record["inputs"]]
        if lost := {cidr for cidr in ranges if not any(_admits(inputs, pods, cidr) for inputs in others)}:
            found.append(
                f"{_name(change.record)} (update): it stops admitting {', '.join(sorted(lost))} to the old pods at "
                f"once and {SHUT_OUT}: what connects from there (a load balancer's "
                "proxies, health checks or clients) reaches no old pod until it is replaced. A stack deployed before "
                "each front had a policy of its own: first run one `pulumi up` of this release that changes no routing"
            )
    return found


def _ports(ports: set[int]) -> str:
    return ", ".join(map(str, sorted(ports))) or "none"


def _name(record: Record) -> str:
    kind = record["type"].rsplit(":", 1)[-1]
    inputs = record["inputs"]
    return f"the {kind} {(inputs.get('metadata') or {}).get('name') or inputs.get('name') or record['name']}"


def _missing_targets(change_inputs: dict[str, Any], pods: Pods, which: str) -> str | None:
    missing = pods.picked(_pool_targets(change_inputs)) - pods.numbers
    if not missing:
        return None
    return (
        f"the gateway may send requests to port(s) {_ports(missing)} of the {which} pods, which serve none there: "
        "those requests fail"
    )


def _effect(record: Record, before_record: Record | None, pods: Pods, label: str) -> str | None:
    """What the front `record` (created, or updated from `before_record`) does to the old pods' traffic."""
    kind = record["type"]
    reach = REACH[kind]
    after = reach(record["inputs"], pods)
    before = reach(before_record["inputs"], pods) if before_record is not None else None
    if after is None:
        if before is None or kind == NETWORK_POLICY_TYPE:
            return None  # selects none of the old pods (a policy that no longer selects them no longer restricts)
        after = set()
    effects = []
    if kind == POOL_TYPE and (missing := _missing_targets(record["inputs"], pods, "old")):
        effects.append(missing)
    if before is None and not after and kind in (SERVICE_TYPE, POOL_TYPE):
        effects.append("it reaches none of the old pods: only the new ones join it, one round after the other")
    elif before is not None and (lost := before - after):
        kept = f"{len(after)} of the {len(before)}" if after else "none of the"
        effects.append(
            f"it stops reaching port(s) {_ports(lost)} of the old pods at once: each old pod gets traffic through it "
            f"on {kept} port(s) it had{'' if after else f' ({OUTAGE_THROUGH})'}"
        )
    if effects and kind == NETWORK_POLICY_TYPE and (admitted := _admitted(record["inputs"])):
        effects.append(f"what it admits: {admitted}")
    return f"{_name(record)} ({label}): {'; '.join(effects)}" if effects else None


def _admitted(inputs: dict[str, Any]) -> str:
    """Who a NetworkPolicy admits, in words (a day-2 review: the in-cluster policy's narrowing was read as client
    traffic, where it cuts the namespace's clients and the metric scrapes, the picker's and the autoscaler's)."""
    kinds = []
    for peer in _ingress_peers(inputs):
        if peer is not None and "ipBlock" in peer:
            kinds.append("address ranges (a load balancer's proxies, health checks or clients)")
        elif peer is not None and "namespaceSelector" in peer:
            kinds.append("pods of the namespaces it names (the metric collectors' scrapes)")
        elif peer is not None and "podSelector" in peer:
            kinds.append("pods of its namespace (clients there, the picker's scrapes)")
        else:
            kinds.append("any source")
    return ", ".join(dict.fromkeys(kinds))


def _left_behind(record: Record, pods: Pods) -> str | None:
    """What a front deleted at the end of the update (the engine deletes last) does to the new pods meanwhile."""
    kind = record["type"]
    reached = REACH[kind](record["inputs"], pods)
    if reached is None or kind not in (SERVICE_TYPE, POOL_TYPE):
        return None
    ending = f"{_name(record)} (deleted at the end of the update)"
    if kind == POOL_TYPE and (missing := _missing_targets(record["inputs"], pods, "new")):
        return f"{ending}: until then {missing}"
    if kind == SERVICE_TYPE and not reached:
        return f"{ending} reaches none of the new pods: its clients reach one pod fewer each round, none by the end"
    return None


def fronts_ahead(result: Preview, old: dict[str, Record], deployment: Record, new_deployment: Record) -> list[str]:
    """The fronts that change at once while the pods of the old `deployment` roll into those of `new_deployment`,
    and what each does to them. A front replaced is a new one created at once and the old one deleted at the end
    (a replacement creates first unless it deletes first, when the old one goes at once)."""
    old_pods, new_pods = serving_pods(deployment), serving_pods(new_deployment)
    found = []
    for change in result.changes:
        if change.record["type"] not in FRONT_TYPES:
            continue
        before = old.get(change.urn)
        effects: list[str | None] = []
        if change.action == "update":
            effects.append(_effect(change.record, before, old_pods, "update"))
        elif change.action in ("create", "replace"):
            effects.append(_effect(change.record, None, old_pods, change.action))
            if change.action == "replace" and before is not None and not change.delete_before_replace:
                effects.append(_left_behind(before, new_pods))
        elif change.action == "delete":
            effects.append(_left_behind(change.record, new_pods))
        found += [effect for effect in effects if effect]
    return found + _sources_dropped_at_once(result, old, old_pods)
