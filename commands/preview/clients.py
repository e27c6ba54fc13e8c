"""What clients of the stack see change: its outputs, and what they call.

The stack outputs of two renders (`outputs.json`) are compared key by key: added, removed and
changed outputs, as `pulumi preview` lists them under "Outputs". What a client calls is the serving
address (the `endpoint` output in ClusterIP mode: the Service's name, namespace and port; the
internal load balancer's or the Gateway's address otherwise), the model name it sends
(`servedModelName`), the authentication vLLM asks for (`--api-key` or `VLLM_API_KEY` on the
serving containers: vLLM's OpenAI server, https://docs.vllm.ai/en/stable/serving/openai_compatible_server.html),
and the client ranges a load balancer Service lets in (`spec.loadBalancerSourceRanges`).
A change to any of them breaks the clients that call the old one: a warning, and a refusal in
production unless the update is acknowledged (`--accept-client-break`, docs/preview.md).
"""

from __future__ import annotations

import ipaddress
from typing import Any

from commands.io.states import Record, pod_labels, pod_template
from commands.preview.changes import OutputsDiff, Preview
from commands.preview.replicas import DEPLOYMENT_TYPE
from policies.vllm_command import vllm_servers

ACCEPT_FLAG = "--accept-client-break"
# What a client calls, by output: what the output stands for.
CLIENT_OUTPUTS = {
    "endpoint": "the serving endpoint (Service name, namespace and port)",
    "internalAddress": "the internal load balancer's address",
    "internalAddressCommand": "the internal load balancer's address",
    "gatewayAddressCommand": "the Gateway's address",
    "servedModelName": "the model name clients send",
}
# What a rolling update does to a change that the pods make one at a time. vLLM's OpenAI server answers a model name
# it does not serve with an error (recalled from its `_check_model`, not read at the pinned tag).
_ROLLING = {
    "servedModelName": (
        "; while the pods roll one at a time, the old pods answer only the old name and the new pods only the new, "
        "behind one address: either name fails on part of the pods until the roll ends, no moment switches every "
        "client cleanly (a second stack serves the new name beside the old)"
    )
}
SERVICE_TYPE = "kubernetes:core/v1:Service"
GATEWAY_TYPE = "kubernetes:gateway.networking.k8s.io/v1:Gateway"
AUTH_FLAG = "--api-key"
AUTH_ENV = "VLLM_API_KEY"


def outputs_diff(old: dict[str, Any] | None, new: dict[str, Any] | None) -> OutputsDiff | None:
    """None when a render has no outputs.json (nothing to compare)."""
    if old is None or new is None:
        return None
    return OutputsDiff(
        {key: new[key] for key in sorted(set(new) - set(old))},
        {key: old[key] for key in sorted(set(old) - set(new))},
        {key: (old[key], new[key]) for key in sorted(set(old) & set(new)) if old[key] != new[key]},
    )


def _auth(record: Record) -> bool:
    """Whether the serving containers ask clients for a key."""
    # as vLLM reads its line: an abbreviation (`--api-k`), a shell line (policies/vllm_command.py)
    if any(server.has(AUTH_FLAG.removeprefix("--")) for server in vllm_servers(record["type"], record["inputs"])):
        return True
    for container in (pod_template(record).get("spec") or {}).get("containers") or []:
        words = [str(word) for word in [*(container.get("command") or []), *(container.get("args") or [])]]
        if any(word == AUTH_FLAG or word.startswith(f"{AUTH_FLAG}=") or f" {AUTH_FLAG}" in word for word in words):
            return True
        if any(isinstance(env, dict) and env.get("name") == AUTH_ENV for env in container.get("env") or []):
            return True
    return False


def _serving(records: dict[str, Record]) -> Record | None:
    """The serving Deployment: the one whose pods request GPUs."""
    for record in records.values():
        if record["type"] != DEPLOYMENT_TYPE:
            continue
        spec = pod_template(record).get("spec") or {}
        if any(
            ((container.get("resources") or {}).get("limits") or {}).get("nvidia.com/gpu")
            for container in spec.get("containers") or []
        ):
            return record
    return None


def _selects(service: Record, deployment: Record | None) -> bool:
    """Whether the Service sends its traffic to the serving Deployment's pods."""
    selector = (service["inputs"].get("spec") or {}).get("selector") or {}
    if deployment is None or not selector:
        return False
    labels = pod_labels(deployment)
    return all(labels.get(key) == value for key, value in selector.items())


def _source_ranges(service: Record) -> list[Any] | None:
    """A load balancer Service's allowed client ranges, merged per IP version (None: every address; no load
    balancer: [])."""
    spec = service["inputs"].get("spec") or {}
    if spec.get("type") != "LoadBalancer":
        return []
    ranges = [ipaddress.ip_network(str(text), strict=False) for text in spec.get("loadBalancerSourceRanges") or []]
    if not ranges or any(network.prefixlen == 0 for network in ranges):
        return None
    ipv4 = [network for network in ranges if isinstance(network, ipaddress.IPv4Network)]
    ipv6 = [network for network in ranges if isinstance(network, ipaddress.IPv6Network)]
    return [*ipaddress.collapse_addresses(ipv4), *ipaddress.collapse_addresses(ipv6)]


def _ranges_shut_out(old: Record, new: Record) -> list[str]:
    """The client ranges the old Service's load balancer let in and the new one does not (no verdict on
    a range a hand-edited render holds that is none)."""
    try:
        before, after = _source_ranges(old), _source_ranges(new)
    except ValueError:
        return []
    if before == [] or after is None:
        return []
    if before is None:
        return ["every address outside " + ", ".join(str(network) for network in after)] if after else []
    return [
        str(network)
        for network in before
        if not any(network.version == kept.version and network.subnet_of(kept) for kept in after)
    ]


def _shown(value: Any) -> str:
    """An output's value as a line quotes it: a text quoted, no value said so (not Python's None)."""
    return "(no value)" if value is None else repr(value)


def client_breaks(
    outputs: OutputsDiff | None, old: dict[str, Record], new: dict[str, Record], result: Preview
) -> list[str]:
    """What clients call that the update removes or changes, one line each."""
    found = []
    if outputs is not None:
        for key, what in CLIENT_OUTPUTS.items():
            if key in outputs.removed:
                found.append(f"{what} goes away: output {key} {_shown(outputs.removed[key])} is removed")
            elif key in outputs.changed:
                before, after = outputs.changed[key]
                found.append(
                    f"{what} changes: output {key} {_shown(before)} -> {_shown(after)}" + _ROLLING.get(key, "")
                )
    before, after = _serving(old), _serving(new)
    for change in result.of("delete"):
        kind = change.record["type"]
        if (kind == SERVICE_TYPE and _selects(old[change.urn], before)) or (kind == GATEWAY_TYPE and change.urn in old):
            metadata = old[change.urn]["inputs"].get("metadata") or {}
            found.append(
                f"the {kind.rpartition(':')[2]} {metadata.get('name')!r} in namespace {metadata.get('namespace')!r} "
                f"that clients call is deleted ({change.urn})"
            )
    for change in result.changes:
        if change.record["type"] == SERVICE_TYPE and change.action in ("update", "replace") and change.urn in old:
            shut_out = _ranges_shut_out(old[change.urn], change.record)
            if shut_out:
                name = (change.record["inputs"].get("metadata") or {}).get("name")
                found.append(
                    f"the load balancer of the Service {name!r} no "
                    f"longer lets in {', '.join(shut_out)} (spec.loadBalancerSourceRanges; {change.urn})"
                )
    for change in result.changes:
        if change.record["type"] != GATEWAY_TYPE or change.action not in ("update", "replace") or change.urn not in old:
            continue
        classes = [
            (record["inputs"].get("spec") or {}).get("gatewayClassName") for record in (old[change.urn], change.record)
        ]
        if classes[0] != classes[1]:
            # an internal (gke-l7-rilb) and an external (gke-l7-regional-external-managed) Application Load
            # Balancer are different forwarding rules: the Gateway's address is another one
            found.append(
                f"the Gateway's address changes: its class goes from {classes[0]!r} to {classes[1]!r}, a load balancer "
                f"of another kind with an address of its own ({change.urn})"
            )
        calls = [_listened(record) for record in (old[change.urn], change.record)]
        if calls[0] != calls[1]:
            found.append(
                f"what the Gateway listens on changes from {calls[0]} to {calls[1]}: clients call another scheme, port "
                f"or host name ({change.urn})"
            )
        addresses = [
            (record["inputs"].get("spec") or {}).get("addresses") for record in (old[change.urn], change.record)
        ]
        if classes[0] == classes[1] and addresses[0] != addresses[1]:
            found.append(
                f"the Gateway's address changes: spec.addresses goes from {addresses[0] or 'none (ephemeral)'} to "
                f"{addresses[1] or 'none (ephemeral)'} ({change.urn})"
            )
    if before is not None and after is not None and _auth(before) != _auth(after):
        found.append(
            "clients must now send an API key (vLLM --api-key / VLLM_API_KEY)"
            if _auth(after)
            else "the serving containers no longer ask for an API key"
        )
    return found


def _listened(record: Record) -> str:
    """What a Gateway's listeners take, as a client calls them: `https://host:443`, `http://*:80`."""
    listeners = (record["inputs"].get("spec") or {}).get("listeners") or []
    calls = [
        f"{str(item.get('protocol') or '').lower()}://{item.get('hostname') or '*'}:{item.get('port')}"
        for item in listeners
        if isinstance(item, dict)
    ]
    return ", ".join(sorted(calls)) or "nothing"


def client_break_risks(breaks: list[str], production: bool, accepted: bool) -> tuple[list[str], list[str], list[str]]:
    """(refusals, warnings, notes) for what breaks clients: refused in production unless accepted."""
    if not breaks:
        return [], [], []
    summary = "; ".join(breaks)
    warning = (
        f"clients break: {summary}. Tell the clients what changes for them before `pulumi up`; a new address "
        "exists only once `pulumi up` has made it (the stack's outputs say how to read it)"
    )
    if production and not accepted:
        return (
            [f"refused in production: clients break: {summary}; acknowledge it with {ACCEPT_FLAG} once clients know"],
            [],
            [],
        )
    notes = [f"the client break is acknowledged ({ACCEPT_FLAG})"] if accepted else []
    return [], [warning], notes
