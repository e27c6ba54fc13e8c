"""When the serving pods follow an update, and how long it takes: pods x time to serve.

Time to serve one pod is NEW's own per-profile figure (`capacity.json` `timeToServe`, from
`commands/render/time_to_serve.py`): `cold` for a pod that needs a new A4 node, `held` for one that
lands on a node that is up, each with its basis (measured, or the planning figure where a phase is
not measured). A render without it (made before it existed) falls back to the write-up's recipe
figures (`stacks/config/time_to_serve.py`: node ~6 min, pod ~10 min).

* A change to the serving pods' template rolls them: the Deployment replaces `maxUnavailable` pods at
  a time with `maxSurge` 0 (no spare B200 node to surge onto: components/vllm.py), so N pods take
  ceil(N / maxUnavailable) rounds, and pulumi-kubernetes waits for the whole rollout
  (pulumi/pulumi-kubernetes@94977969 provider/pkg/await/deployment.go: `updatedReplicas` equals the
  spec's replicas). A new ComputeClass (or node selector) moves every pod to new nodes: a cold start
  each, one round after the other.
* Replicas the program declares while the scale schedule or the HPA owns them (`ignoreChanges:
  spec.replicas`) are not applied by `pulumi up`: running pods follow the schedule's next scale step
  (a CronJob `kubectl scale --replicas=N`), or the HPA's next sync once its bounds change
  (the HPA controller syncs every 15 s, kube-controller-manager --horizontal-pod-autoscaler-sync-period,
  https://kubernetes.io/docs/tasks/run-application/horizontal-pod-autoscale/#algorithm-details: a target
  below minReplicas is scaled up to it, above maxReplicas down to it).
* The Service, NetworkPolicy, firewall rule and InferencePool in front of the pods change at once, the pods
  one round after the other: what the old pods meet meanwhile is `fronts.py`'s.
* A replaced serving Deployment: deleted first, nothing serves until the new pods are up (all at once); created
  first (a renamed service), the new pods start beside the old ones, at the count `replicas.created_replicas` says.
* Held nodes (a CapacityBuffer, `warmCapacity.nodes`): without a schedule `pulumi up` sets their count
  and GKE provisions the new ones (a node phase each); with one, the buffer is created holding none
  and a later `up` leaves its count to the schedule (`ignoreChanges: spec.replicas`): the schedule's
  next step sets it.
* A new control-plane floor (`minMasterVersion`) upgrades the control plane if it runs an older version,
  and then GKE upgrades the nodes to it (Autopilot: "GKE upgrades a cluster's control plane before
  upgrading nodes"; no new node while the control plane upgrades; each node is drained as the pods'
  PodDisruptionBudget allows, for up to an hour, after a surge node of the new version is up; in the
  maintenance window where it can; GKE docs 'Autopilot cluster upgrades'). Every serving pod starts again;
  Flex-start nodes get short-lived upgrades instead (GKE docs 'Node pool upgrade strategies').
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from commands.engine.property_paths import parse_path
from commands.io.states import Record, is_job_of, pod_template
from commands.preview.changes import Preview, ResourceChange, Rollout
from commands.preview.fronts import OUTAGE_THROUGH, SHUT_OUT, fronts_ahead
from commands.preview.json_values import MISSING
from commands.preview.provider_effects import raises_master_version
from commands.preview.replacement_rules import CLAIM_TYPE
from commands.preview.replicas import (
    DEPLOYMENT_TYPE,
    created_replicas,
    declared_replicas,
    is_serving_deployment,
    replicas_left_to_owner,
    scale_command,
)
from components.capacity import FLEX_START_PRIORITY_FIELD
from components.endpoint_picker import EndpointPicker
from stacks.config.time_to_serve import RECIPE_NODE_SECONDS, RECIPE_POD_SECONDS, THE_WRITEUP

CRONJOB_TYPE = "kubernetes:batch/v1:CronJob"
WEIGHTS_COMPONENT = "model-weights"
HPA_TYPE = "kubernetes:autoscaling/v2:HorizontalPodAutoscaler"
CLUSTER_TYPE = "gcp:container/cluster:Cluster"
PDB_TYPE = "kubernetes:policy/v1:PodDisruptionBudget"
COMPUTE_CLASS_TYPE = "kubernetes:cloud.google.com/v1:ComputeClass"
BUFFER_TYPE = "kubernetes:autoscaling.x-k8s.io/v1beta1:CapacityBuffer"
BUFFER_PATCH = re.compile(r'^--patch=\{"spec":\{"replicas":(\d+)\}\}$')
AUTOPILOT_UPGRADES = (
    "GKE docs 'Autopilot cluster upgrades', https://cloud.google.com/kubernetes-engine/docs/concepts/"
    "cluster-upgrades-autopilot"
)
RECIPE_SOURCE = f"the recipe's node ~6 min and pod ~10 min ({THE_WRITEUP}); the render has no timeToServe"
REPLICAS_FLAG = "--replicas="
# template paths that put the pods on other nodes
NODE_PATHS = ("nodeSelector", "affinity", "tolerations")


@dataclass(frozen=True)
class ServeTimes:
    """Seconds (min, max) from scale-up to serving for one pod: on a new node, on a node that is up."""

    new_node: tuple[int, int]
    same_node: tuple[int, int]
    source: str


def _phase(value: Any, fallback: int) -> tuple[int, int]:
    if not isinstance(value, dict):
        return (fallback, fallback)
    low, high = value.get("seconds_min"), value.get("seconds_max")
    if not isinstance(high, (int, float)):
        return (fallback, fallback)
    return (round(low if isinstance(low, (int, float)) else high), round(high))


def serve_times(capacity: dict[str, Any] | None) -> ServeTimes:
    """The render's per-profile time to serve (`capacity.json` `timeToServe`), or the recipe's figures."""
    model = (capacity or {}).get("timeToServe")
    if not isinstance(model, dict):
        recipe = RECIPE_NODE_SECONDS + RECIPE_POD_SECONDS
        return ServeTimes((recipe, recipe), (RECIPE_POD_SECONDS, RECIPE_POD_SECONDS), RECIPE_SOURCE)
    planning = model.get("planning_seconds")
    planning = round(planning) if isinstance(planning, (int, float)) else RECIPE_NODE_SECONDS + RECIPE_POD_SECONDS
    new_node = _phase(model.get("cold"), planning)
    held_planning = model.get("held_planning_seconds")  # a render before it: the new node's figure
    same_node = _phase(
        model.get("held"), round(held_planning) if isinstance(held_planning, (int, float)) else new_node[1]
    )
    cold = model["cold"] if isinstance(model.get("cold"), dict) else {}
    basis = (
        cold.get("basis") if cold.get("seconds_max") is not None else f"planning figure: {model.get('planning_basis')}"
    )
    # a node's own phase may be measured where the whole start is not (a day-2 review: held nodes provisioned in
    # "about 5..6 min" were labelled assumed, the pod phase's basis)
    phases = model.get("phases")
    node = (
        next((phase for phase in phases if isinstance(phase, dict) and phase.get("key") == "node"), {})
        if isinstance(phases, list)
        else {}
    )
    node_basis = f"; a node alone: {node['basis']}" if isinstance(node.get("basis"), str) else ""
    held = model["held"] if isinstance(model.get("held"), dict) else {}
    held_basis = (
        f"; a pod on a node that is up: {held['basis']}"
        if held.get("seconds_max") is not None and isinstance(held.get("basis"), str)
        else ""
    )
    return ServeTimes(
        new_node,
        same_node,
        f"the render's time to serve for profile {model.get('profile')} (capacity.json timeToServe; a new pod on a "
        f"new node: {basis}{held_basis}{node_basis})",
    )


def _serving(records: dict[str, Record]) -> tuple[str, Record] | None:
    return next(
        ((urn, record) for urn, record in records.items() if is_serving_deployment(record)),
        None,
    )


def _max_unavailable(record: Record) -> int:
    strategy = (record["inputs"].get("spec") or {}).get("strategy") or {}
    value = (strategy.get("rollingUpdate") or {}).get("maxUnavailable")
    return value if isinstance(value, int) and value > 0 else 1


def _minutes(seconds: int) -> str:
    return f"{seconds / 60:.0f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"


def _span(low: int, high: int) -> str:
    return _minutes(high) if low == high else f"{_minutes(low)}..{_minutes(high)}"


def _in_list_changes(old: Any, new: Any) -> tuple[set[str], set[str]] | None:
    """The values the node constraints' `In` lists gained and lost (a zone added or dropped), where that is all that
    changed, as Kubernetes matches them (None: another change)."""
    if isinstance(old, dict) and isinstance(new, dict) and old.get("operator") == new.get("operator") == "In":
        rest_same = {k: v for k, v in old.items() if k != "values"} == {k: v for k, v in new.items() if k != "values"}
        before, after = set(map(str, old.get("values") or [])), set(map(str, new.get("values") or []))
        return (after - before, before - after) if rest_same and (after or not before) else None
    if isinstance(old, dict) and isinstance(new, dict) and old.keys() == new.keys():
        parts = [(old[key], new[key]) for key in old]
    elif isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        parts = list(zip(old, new, strict=True))
    else:
        return (set(), set()) if old == new else None
    gained: set[str] = set()
    lost: set[str] = set()
    for before, after in parts:
        changes = _in_list_changes(before, after)
        if changes is None:
            return None
        gained |= changes[0]
        lost |= changes[1]
    return gained, lost


def _widened(old: Any, new: Any) -> bool:
    """Whether the new node constraints admit every node the old ones did: required node-affinity terms whose `In`
    lists only grew (a zone added), the rest the same."""
    changes = _in_list_changes(old, new)
    return changes is not None and not changes[1]


def _narrowed_to(old: Record, new: Record) -> set[str] | None:
    """The node-affinity values (zones) the new pods no longer admit, where the only node change is that narrowing:
    an old pod on a node still admitted frees a node its successor may take (the others need a new node)."""
    before, after = pod_template(old).get("spec") or {}, pod_template(new).get("spec") or {}
    if (before.get("nodeSelector") or {}) != (after.get("nodeSelector") or {}) or (before.get("tolerations") or []) != (
        after.get("tolerations") or []
    ):
        return None
    changes = _in_list_changes(before.get("affinity"), after.get("affinity"))
    return changes[1] if changes is not None and changes[1] and not changes[0] else None


def _old_nodes_still_match(old: Record, new: Record) -> bool:
    """The new pods may run on the nodes the old pods run on: the node constraints only widened."""
    before, after = pod_template(old).get("spec") or {}, pod_template(new).get("spec") or {}
    selector_before, selector_after = before.get("nodeSelector") or {}, after.get("nodeSelector") or {}
    tolerations_before, tolerations_after = before.get("tolerations") or [], after.get("tolerations") or []
    return (
        selector_after.items() <= selector_before.items()
        and all(toleration in tolerations_after for toleration in tolerations_before)
        and _widened(before.get("affinity"), after.get("affinity"))
    )


# Why a pod template whose only change is the startup probe rolls (stacks/capacity/time_to_serve.py
# `startup_probe_seconds`: whole half hours of the pod's start-up, and a larger checkpoint's read by all pods at once).
PROBE_ONLY = (
    "only the startup probe's budget changes: the program sizes it in whole half hours from the pod's start-up and, "
    "for a checkpoint larger than the recipe's, every pod reading one zone's disk at once, so a new node count or "
    "autoscaling maximum, disk throughput, checkpoint or start-up report can move it"
)


def _template_rollout(
    change: ResourceChange, old: Record, running: tuple[int, int], times: ServeTimes, floor: int
) -> Rollout | None:
    """A new pod template: the pods that run (`running`, low..high where the HPA or the schedule owns the
    replicas, counted at the most) roll; to new nodes when the old ones no longer match the pods' node
    constraints. `floor`: the fewest that run while any does (a schedule's 0 rolls nothing)."""
    template = [entry.path for entry in change.inputs if entry.path.startswith("spec.template.")]
    low, pods = running
    if not template or pods == 0:
        return None
    moved = sorted(
        {segment for path in template for segment in parse_path(path) if isinstance(segment, str)} & set(NODE_PATHS)
    )
    moved = [] if moved and _old_nodes_still_match(old, change.record) else moved
    narrowed = _narrowed_to(old, change.record) if moved else None
    per_pod = times.new_node if moved and not narrowed else (times.same_node[0], times.new_node[1])
    step = _max_unavailable(change.record)
    rounds = math.ceil(pods / step)
    count = f"{pods} pod(s)" if low == pods else f"{pods} pod(s) at most (the {low}..{pods} running)"
    if narrowed:
        what = (
            f"the serving pods roll: {count}, {step} at a time, each a model load; the pods' node affinity no longer "
            f"admits {', '.join(sorted(narrowed))}, so a pod on a node there needs a new A4 node in the others, "
            "while one elsewhere may take the node its predecessor frees"
        )
    elif moved:
        what = (
            f"every serving pod moves to new nodes (the pods' {', '.join(moved)} change): {count}, {step} at a "
            "time, each a new A4 node and a model load"
        )
    else:
        what = (
            f"the serving pods roll: {count}, {step} at a time, each a model load (and a node, when the old "
            "one is gone)"
        )
    total = (rounds * per_pod[0], rounds * per_pod[1])
    what = f"{what}; {_still_serving(pods, step)} serve meanwhile, for about {_span(*total)}{_drains(old, rounds)}"
    if all(".startupProbe." in path for path in template):
        what += f" ({PROBE_ONLY})"
    if 0 < floor < pods:
        # the autoscaler's or the schedule's floor: a roll there takes down as large a share of the pods
        least = f"{floor} running at the least" if floor == low else f"{floor} running at the least while any does"
        what += f" ({_still_serving(floor, step)} at the {least}{'' if floor > step else ': an outage'})"
    # a count the Deployment declares takes effect before the roll (the controller scales, then rolls: a platform
    # review, kubernetes pkg/controller/deployment syncDeployment, isScalingEvent): 1 -> 3 with a new template keeps
    # the old pod serving
    declared = pods if replicas_left_to_owner(change.record) else declared_replicas(change.record)
    outage = _outage(declared, floor, step, per_pod) if min(declared, floor or declared) <= step else None
    warnings = [outage] if outage else []
    if moved:
        needs = "a pod leaving those nodes needs an A4 node" if narrowed else "each round needs an A4 node the new way"
        waiting = "nothing serves until it is there" if outage else "the rollout then stalls with the others serving"
        warnings.append(f"{what}; {needs} (capacity that may not be there: {waiting})")
    return Rollout(
        what,
        pods,
        per_pod,
        total,
        "during `pulumi up`, which waits for the rollout",
        times.source,
        f"{change.urn}: {'; '.join(warnings)}" if warnings else None,
    )


def _drains(old: Record, rounds: int) -> str:
    """What the roll's figure leaves out: an old pod holds its node's GPUs until it has drained (its running requests
    finish within its grace period; vLLM's --shutdown-timeout), and the new pod that takes that node waits for it (a
    time-to-serve review: prod's 12 rounds can add up to 2 h)."""
    grace = (pod_template(old).get("spec") or {}).get("terminationGracePeriodSeconds")
    if not isinstance(grace, int) or grace <= 0:
        return ""
    return (
        f", plus up to {grace} s a round while an old pod drains its running requests on the GPUs the new one waits "
        f"for ({_minutes(rounds * grace)} at most in all)"
    )


def _outage(pods: int, floor: int, step: int, per_pod: tuple[int, int]) -> str:
    """A roll that takes down every running pod at once: `maxSurge` 0 and `maxUnavailable` `step` stop that many old
    pods before their new ones are made (the Deployment's RollingUpdate strategy), so with `step` or fewer running no
    pod serves until a new one is ready."""
    running = (
        f"{pods} pod(s) run at most"
        if pods <= step
        else f"at {floor} running (the least the autoscaler or schedule leaves)"
    )
    return (
        f"an outage: the serving pods roll {step} at a time and {running}, so nothing serves until a new pod is "
        f"ready, about {_span(*per_pod)}; requests meanwhile fail. With more than {step} running, the others serve "
        "during a roll"
    )


def _still_serving(pods: int, step: int) -> str:
    """How many of `pods` serve while `step` of them are replaced."""
    return f"{max(pods - step, 0)} of {pods}"


def _replaced(
    change: ResourceChange,
    pods: int,
    times: ServeTimes,
    old_running: tuple[int, int],
    new: dict[str, Record],
    claim_first: bool = False,
) -> Rollout:
    """A replaced serving Deployment, created at `pods` (`created_replicas`), where the old one ran `old_running` pods
    (low..high: what its HPA or schedule set, or its declared count); `new`: the records after the update;
    `claim_first`: a weights claim is deleted first with its volume, which waits until no pod mounts it."""
    if claim_first and not change.delete_before_replace:
        return Rollout(
            f"the weights claim the old Deployment mounts is deleted first (with its volume, for the new namespace), "
            f"which waits until none of its pods runs: scale it to zero first, then nothing serves until the new "
            f"Deployment's {pods} pod(s) are up (each a new A4 node and a model load, about "
            f"{_span(*times.new_node)}); otherwise `pulumi up` fails after 10 minutes",
            pods,
            times.new_node,
            times.new_node,
            "during `pulumi up`",
            times.source,
        )
    if change.delete_before_replace:
        after = (
            f"once {change.deleted_first_with.rsplit('::', 1)[-1]} is replaced (not counted here)"
            if change.deleted_first_with
            else "once created"
        )
        what = (
            f"the serving Deployment is deleted, then created: nothing serves until its {pods} new pod(s) are up "
            f"(all at once, each a new A4 node and a model load: about {_span(*times.new_node)} {after})"
        )
    else:
        what = (
            f"a second serving Deployment of {pods} pod(s) starts beside the old one (each a new A4 node and a model "
            f"load, about {_span(*times.new_node)}); the old one is deleted at the end of the update"
        ) + _serving_after_the_old_one(pods, old_running, _owners(new))
    what += _created_outside_serving_hours(pods, old_running, new)
    return Rollout(
        what,
        pods,
        times.new_node,
        times.new_node,
        "during `pulumi up`",
        times.source,
    )


def _owners(records: dict[str, Record]) -> str | None:
    """What sets the serving count after the update: the autoscaler, the schedule's steps, both, or None."""
    owners = [
        name
        for name, present in (("the autoscaler", _hpa(records)), ("the schedule", _scale_steps(records)))
        if present
    ]
    return " or ".join(owners) or None


def _serving_after_the_old_one(pods: int, old_running: tuple[int, int], owners: str | None) -> str:
    """What a replacement created beside the old Deployment leaves serving once the old one goes."""
    low, high = old_running
    if high <= pods:
        return ""
    later = f" until {owners} raises it, each pod more a new A4 node and a model load" if owners else ""
    falls = "falls" if low == high else "may fall"
    return f"; when the old one goes, serving {falls} from {high} to {pods} pod(s){later}"


def _created_outside_serving_hours(pods: int, old_running: tuple[int, int], new: dict[str, Record]) -> str:
    """A replacement created while the old one ran no pod (after a sleep step) runs its pods, and bills them, until
    the schedule's next step that sets 0; the HPA first raises them to its minimum (it never scales below it)."""
    if old_running[0] > 0 or pods == 0:
        return ""
    hpa = _hpa(new)
    floor = max(pods, _bounds(hpa)[0]) if hpa is not None else pods
    raised = f", which the autoscaler raises to its minimum of {floor} at its next sync," if floor > pods else ""
    sleeps = [name for name, _, _, replicas in _scale_steps(new) if replicas == 0]
    until = (
        f"until the schedule's next step that sets 0 ({', '.join(sleeps)})"
        if sleeps
        else "from then on (no step of the schedule sets 0)"
    )
    return f"; at an hour the old one ran no pod, the new one's {pods} pod(s){raised} run and bill {until}"


def _schedule_steps(records: dict[str, Record], count: Callable[[str], int | None]) -> list[tuple[str, str, str, int]]:
    """(CronJob name, schedule, time zone, N) of each step of the schedule whose containers hold a word
    `count` reads N from."""
    steps = []
    for record in records.values():
        if record["type"] != CRONJOB_TYPE:
            continue
        spec = record["inputs"].get("spec") or {}
        pod = ((((spec.get("jobTemplate") or {}).get("spec") or {}).get("template") or {}).get("spec")) or {}
        for container in [*(pod.get("initContainers") or []), *(pod.get("containers") or [])]:
            for word in [*(container.get("command") or []), *(container.get("args") or [])]:
                number = count(word) if isinstance(word, str) else None
                if number is not None:
                    name = (record["inputs"].get("metadata") or {}).get("name") or record["name"]
                    steps.append((name, str(spec.get("schedule")), str(spec.get("timeZone") or "UTC"), number))
    return steps


def _replicas_in(word: str) -> int | None:
    value = word.removeprefix(REPLICAS_FLAG)
    return int(value) if word.startswith(REPLICAS_FLAG) and value.isdigit() else None


def _held_in(word: str) -> int | None:
    found = BUFFER_PATCH.match(word)
    return int(found[1]) if found else None


def _scale_steps(records: dict[str, Record]) -> list[tuple[str, str, str, int]]:
    """(CronJob name, schedule, time zone, replicas) of the scale schedule."""
    return _schedule_steps(records, _replicas_in)


def _buffer_steps(records: dict[str, Record]) -> list[tuple[str, str, str, int]]:
    """(CronJob name, schedule, time zone, held nodes) of the schedule's steps that set the CapacityBuffer."""
    return _schedule_steps(records, _held_in)


def _hpa(records: dict[str, Record]) -> Record | None:
    return next((record for record in records.values() if record["type"] == HPA_TYPE), None)


def _bounds(record: Record) -> tuple[int, int]:
    spec = record["inputs"].get("spec") or {}
    low, high = spec.get("minReplicas"), spec.get("maxReplicas")
    return (low if isinstance(low, int) else 1, high if isinstance(high, int) else 1)


def _owned_replicas(old: dict[str, Record], new: dict[str, Record], urn: str, times: ServeTimes) -> list[Rollout]:
    """Replicas or HPA bounds that change while the schedule or the HPA owns the replicas."""
    found = []
    before_hpa, after_hpa = _hpa(old), _hpa(new)
    if before_hpa is None and after_hpa is not None:
        (low, high), running = _bounds(after_hpa), declared_replicas(old[urn])
        cut = f"at its next sync it drops {running - high} at once (a count above the maximum is set to it); "
        cut = cut if running > high else ""
        found.append(
            Rollout(
                f"an autoscaler (HPA, {low}..{high} replicas) takes over the {running} running serving pod(s): {cut}"
                f"with less load than they serve it removes pods down to {low} by its scale-down "
                "policy (spec.behavior.scaleDown), and each one given back takes a new node and a model load to come "
                "back",
                0,
                times.new_node,
                None,
                "at the HPA's next sync after `pulumi up`",
                times.source,
            )
        )
    if before_hpa is not None and after_hpa is not None and _bounds(before_hpa) != _bounds(after_hpa):
        (low, high), (new_low, new_high) = _bounds(before_hpa), _bounds(after_hpa)
        up = max(0, new_low - low)
        moves = []
        # kubernetes pkg/controller/podautoscaler/horizontal.go reconcileAutoscaler: a count outside the bounds is
        # set to the bound before any metric or scale-down behavior, and a target at 0 is left alone
        if up:
            moves.append(
                f"scales a Deployment below {new_low} up to it (up to {up} more pod(s), all at once, each a new A4 "
                f"node and a model load, about {_span(*times.new_node)}; one at 0, as a schedule leaves it, stays)"
            )
        if new_high < high:
            moves.append(
                f"scales one above {new_high} down to it at once, not by its scale-down policy (up to "
                f"{high - new_high} pod(s) stop together)"
            )
        now = f"at its next sync (15 s) it {' and '.join(moves)}" if moves else "no pod moves with the bounds alone"
        what = (
            f"the HPA's bounds go from {low}..{high} to {new_low}..{new_high} replicas: {now}; within the bounds "
            "nothing moves until load does"
        )
        found.append(
            Rollout(
                what,
                up,
                times.new_node,
                times.new_node if up else None,
                "at the HPA's next sync after `pulumi up`",
                times.source,
            )
        )
    before, after = declared_replicas(old[urn]), declared_replicas(new[urn])
    if before == after:
        return found + _recounted_steps(old, new, after_hpa, times)
    steps = [step for step in _scale_steps(new) if step[3] > 0]
    if steps:
        when = "; ".join(
            f"{name} at '{schedule}' ({zone}) scales to {replicas}" for name, schedule, zone, replicas in steps
        )
        # the pods a scale-up step starts are its own count (a step may set fewer than the program declares)
        was = max((replicas for *_, replicas in _scale_steps(old) if replicas > 0), default=before)
        highest = max(replicas for *_, replicas in steps)
        more, fewer = max(0, highest - was), max(0, was - highest)
        then = (
            f"{more} more pod(s) then, each a new A4 node and a model load (about {_span(*times.new_node)}, all at "
            "once), or now by hand with the stack's scaleByHand output"
            if more
            else f"{fewer} fewer pod(s) at that step than it set before"
            if fewer
            else "no more pods than before then (the step scales to the count it did)"
        )
        what = (
            f"the scale schedule owns the replicas ({before} -> {after} in the program): `pulumi up` leaves the "
            f"running pods alone; they follow at the schedule's next scale-up step ({when}), {then}"
        )
        found.append(
            Rollout(
                what,
                more,
                times.new_node,
                times.new_node if more else None,
                "at the schedule's next scale-up step",
                times.source,
            )
        )
    elif after_hpa is None:
        found.append(
            Rollout(
                f"the replicas go from {before} to {after}, but something else owns them (ignoreChanges "
                "spec.replicas): `pulumi up` leaves the running pods alone",
                0,
                (0, 0),
                None,
                "not at `pulumi up`",
                times.source,
            )
        )
    return found


def _recounted_steps(
    old: dict[str, Record], new: dict[str, Record], hpa: Record | None, times: ServeTimes
) -> list[Rollout]:
    """Scale steps that set another count at the same time (the program's replicas unchanged): `pulumi up` only
    changes the CronJobs; the pods follow when each step runs next (`kubectl scale`, components/schedule.py)."""
    was = {name: replicas for name, *_, replicas in _scale_steps(old)}
    steps = _scale_steps(new)
    # with one step that starts pods (business hours' wake after its sleep), what runs before it is 0 either way;
    # with several, what runs when a step fires is the step before it, which a cron table does not order here
    alone = sum(replicas > 0 for *_, replicas in steps) <= 1
    found = []
    for name, schedule, zone, replicas in steps:
        if name not in was or was[name] == replicas:
            continue
        more, fewer = (max(0, replicas - was[name]), max(0, was[name] - replicas)) if alone else (0, 0)
        then = (
            f"{more} more pod(s) than before then, all at once, each a new A4 node and a model load (about "
            f"{_span(*times.new_node)})"
            if more
            else f"{fewer} fewer pod(s) than before stop then"
            if fewer
            else f"the Deployment is scaled to {replicas}: how many pods that starts or stops depends on the step "
            "that ran before it"
        )
        owner = (
            f"; the HPA ({'..'.join(map(str, _bounds(hpa)))}) then moves the count within its bounds by load"
            if hpa is not None and replicas > 0
            else ""
        )
        found.append(
            Rollout(
                f"the scale step {name} at '{schedule}' ({zone}) sets {replicas} pod(s) instead of {was[name]}: "
                f"`pulumi up` leaves the running pods alone; at the step's next run, {then}{owner}",
                more,
                times.new_node,
                times.new_node if more else None,
                "at the step's next run after `pulumi up`",
                times.source,
            )
        )
    return found


# The Gateway API Inference Extension's API reference, EndpointPickerFailureMode: FailOpen forwards a request
# the picker does not answer to an endpoint the proxy picks itself.
FAIL_OPEN_SPEC = "https://gateway-api-inference-extension.sigs.k8s.io/reference/spec"


def _picker_restarts(result: Preview, old: dict[str, Record], new: dict[str, Record]) -> Rollout | None:
    """The Endpoint Picker's pods start again (a new pod template, or the Deployment replaced): under its Recreate
    strategy, or a replacement that deletes first, every old pod stops before a new one starts
    (components/endpoint_picker.py), and meanwhile the InferencePool's failureMode FailOpen has the proxies send
    requests on without it."""
    kinds = {record["name"]: record["type"] for record in new.values()}
    for change in result.changes:
        record = change.record
        if record["type"] != DEPLOYMENT_TYPE or kinds.get(record.get("parent") or "") != EndpointPicker.TYPE:
            continue
        spec = record["inputs"].get("spec") or {}
        recreated = (spec.get("strategy") or {}).get("type") == "Recreate" and any(
            entry.path.startswith("spec.template.") for entry in change.inputs
        )
        pods = f"{declared_replicas(old[change.urn])} pod(s)" if change.urn in old else "pods"
        if change.action == "replace" and not change.delete_before_replace:
            return Rollout(
                "the Endpoint Picker's Deployment is replaced create-first: the new picker's pods start beside the old "
                f"ones, whose {pods} stop at the end of the update",
                0,
                (0, 0),
                None,
                "during `pulumi up`",
                "not measured: how long a new picker pod takes to be ready",
            )
        if not (change.action == "replace" or (change.action == "update" and recreated)):
            continue
        how = "the Deployment is replaced delete-first" if change.action == "replace" else "its strategy is Recreate"
        return Rollout(
            f"the Endpoint Picker's {pods} stop together, then new ones start ({how}: no old picker runs beside a "
            "new one). Until one is ready (it may first need a node of its own; not measured), the InferencePool's "
            "failureMode FailOpen has the proxies forward each request to an endpoint of their own picking "
            f"({FAIL_OPEN_SPEC}, EndpointPickerFailureMode), without the picker's queue- and cache-aware choice",
            0,
            (0, 0),
            None,
            "during `pulumi up`",
            "not measured: how long a new picker pod takes to be ready",
        )
    return None


def _download_first(result: Preview, times: ServeTimes) -> list[Rollout]:
    """New weights: the serving Deployment depends on the claim, the volume, the disks, the image, the snapshot and
    the download Job (components/weights.py), and pulumi-kubernetes waits for a Job to complete up to its create
    timeout, so the pods follow only after the whole download."""
    for change in result.changes:
        if change.action in ("create", "replace") and is_job_of(change.record, WEIGHTS_COMPONENT):
            timeout = (change.record["options"].get("customTimeouts") or {}).get("create")
            bound = f" (up to its {timeout} timeout)" if timeout else ""
            what = (
                "the serving pods follow only after the new weights are ready: the download Job"
                f"{bound}, then the snapshot, the disk image and the zone's disks come first in the update (the "
                "Deployment depends on them), so the time above starts after the download, which is not counted here"
            )
            return [Rollout(what, 0, times.new_node, None, "during `pulumi up`, before the pods follow", times.source)]
    return []


def _fewer_pods(record: Record, before: int, after: int, times: ServeTimes) -> Rollout:
    """Fewer replicas: the ReplicaSet deletes the extra pods at once; a PodDisruptionBudget does not hold them
    ("deleting deployments or pods bypasses Pod Disruption Budgets", Kubernetes docs "Disruptions")."""
    grace = (pod_template(record).get("spec") or {}).get("terminationGracePeriodSeconds")
    drain = f" (each drains its requests for up to {grace} s)" if isinstance(grace, int) else ""
    what = (
        f"{before - after} of the {before} serving pods stop at once{drain}: the capacity drops to {after} pod(s) "
        "as `pulumi up` applies the count, with no PodDisruptionBudget to pace it (one holds evictions, not a "
        "Deployment scaled down); each one given back later takes a new A4 node and a model load"
    )
    return Rollout(what, 0, times.new_node, None, "during `pulumi up`", times.source, what)


def _replicas_taken_back(
    old: dict[str, Record], new: dict[str, Record], urn: str, times: ServeTimes, updated: bool
) -> Rollout:
    """The program sets the replicas again (no more `ignoreChanges: spec.replicas`) after the HPA or the schedule
    wrote them through the scale subresource. pulumi-kubernetes diffs the program's value against the object its
    state recorded and applies it server-side without forcing: a writer that owns the field with another value makes
    the apply fail ("Apply failed with 1 conflict: conflict with "kube-controller-manager" with subresource "scale"
    using apps/v1: .spec.replicas", pulumi/pulumi-kubernetes#2491 and pulumi/pulumi-kubernetes#3312). The engine
    calls the provider's Update in the preview `pulumi up` runs first too (pulumi `deploy/step.go` UpdateStep.Apply,
    `Preview: DryRun`), where pulumi-kubernetes sends the same apply as a server-side dry run (`await.go` ssaUpdate),
    so the conflict stops the `up` before any step. An apply of the value the owner set does not conflict
    (Kubernetes docs, Server-Side Apply: "fields that have a different value and are owned by another manager");
    with no diff (`updated` False: the Deployment has no step) nothing is sent and the pods stay (a day-2 review: it
    said the `up` may fail where no step sends anything)."""
    hpa = _hpa(old)
    writer = "the HPA (kube-controller-manager)" if hpa is not None else "the scale schedule (kubectl scale)"
    after = declared_replicas(new[urn])
    scale = scale_command(new[urn], after)
    if hpa is not None:
        metadata = hpa["inputs"].get("metadata") or {}
        delete = f"kubectl -n {metadata.get('namespace')} delete hpa/{metadata.get('name')}"
        first = (
            f"Delete the HPA, then scale the Deployment to {after} by hand before `pulumi up` (`{delete}`, then "
            f"`{scale}`): an apply of the count the owner set does not conflict, the HPA would scale it back while it "
            "exists, and the update's delete of an object already gone succeeds"
        )
    else:
        first = (
            f"Scale it to {after} by hand just before `pulumi up`, not right before a scale step (`{scale}`): an "
            "apply of the count the owner set does not conflict"
        )
    slept = " (0 after a sleep step)" if _scale_steps(old) else ""
    if not updated:
        what = (
            f"the program sets the serving replicas again ({after}) after {writer} wrote them, but its state "
            f"already holds {after} and nothing else of the Deployment changes: `pulumi up` sends nothing, and the "
            f"pods stay at the count the writer left{slept}, which nothing moves any more. After `pulumi up`, scale "
            f"it to {after} by hand (`{scale}`): an apply of the count the owner set does not conflict "
            "(pulumi-kubernetes docs: 'Handle field conflicts on existing resources')"
        )
        return Rollout(what, 0, times.new_node, None, "after `pulumi up`", times.source, f"{urn}: {what}")
    what = (
        f"the program sets the serving replicas again ({after}) after {writer} wrote them: where the live count "
        f"is not {after}, `pulumi up` fails at its own preview, before any step, with a Server-Side Apply field "
        "conflict on .spec.replicas (the writer still owns the field, and pulumi-kubernetes applies without forcing, "
        "as a dry run in the preview; with `--skip-preview`, the update stops at the Deployment instead). "
        f"{first} (pulumi-kubernetes docs: 'Handle field conflicts on existing resources')"
    )
    return Rollout(what, 0, times.new_node, None, "during `pulumi up`", times.source, f"{urn}: {what}")


def _schedule_gone(
    old: dict[str, Record], new: dict[str, Record], deployment: Record, times: ServeTimes
) -> list[Rollout]:
    """A scale schedule removed while an HPA stays: the Deployment keeps the count of the last step, and an HPA
    leaves a target at 0 alone (kubernetes pkg/controller/podautoscaler/horizontal.go reconcileAutoscaler:
    "scaling is disabled since the replica count of the target is zero")."""
    steps = _scale_steps(old)
    hpa = _hpa(new)
    if not steps or _scale_steps(new) or hpa is None or not any(replicas == 0 for *_, replicas in steps):
        return []
    low, _ = _bounds(hpa)
    scale = scale_command(deployment, low)
    what = (
        "the scale schedule goes away with the HPA staying: the serving Deployment keeps the count the schedule's "
        "last step set, and after a sleep step that is 0, which the HPA never scales up (it leaves a target at 0 "
        f"alone): nothing serves until someone scales it by hand (`{scale}`), each pod a new A4 node and a model load"
    )
    return [
        Rollout(
            what, 0, times.new_node, None, "after `pulumi up`, outside the old schedule's hours", times.source, what
        )
    ]


def _schedule_new(old: dict[str, Record], new: dict[str, Record], times: ServeTimes) -> list[Rollout]:
    """A scale schedule added: its CronJobs scale the serving Deployment from their first step on, `kubectl scale`
    at each step's time (stacks/operations.py), whatever the program declares."""
    steps = _scale_steps(new)
    if not steps or _scale_steps(old):
        return []
    fewest = min(replicas for *_, replicas in steps)
    when = "; ".join(
        f"{name} at '{schedule}' ({zone}) scales to {replicas}" for name, schedule, zone, replicas in steps
    )
    outage = (
        "nothing serves from each step to 0 until the next scale-up step (clients find no ready pod behind the "
        "Service); "
        if fewest == 0
        else ""
    )
    what = (
        f"a scale schedule starts owning the serving replicas ({when}): {outage}each scale-up step starts its pods "
        f"at once, each a new A4 node (capacity that may not be there) and a model load (about "
        f"{_span(*times.new_node)}); `pulumi up` itself leaves the running pods alone until the first step"
    )
    return [
        Rollout(what, 0, times.new_node, None, "at each of the schedule's steps after `pulumi up`", times.source, what)
    ]


def _held(records: dict[str, Record]) -> tuple[int, bool] | None:
    """The nodes the CapacityBuffer holds at most, and whether the schedule sets them (None: no buffer)."""
    buffer = next((record for record in records.values() if record["type"] == BUFFER_TYPE), None)
    if buffer is None:
        return None
    if replicas_left_to_owner(buffer):
        return max((held for *_, held in _buffer_steps(records)), default=0), True
    value = (buffer["inputs"].get("spec") or {}).get("replicas")
    return (value if isinstance(value, int) else 0), False


def _held_nodes(old: dict[str, Record], new: dict[str, Record], times: ServeTimes) -> Rollout | None:
    """When a change of the held nodes takes effect, and what a new pod waits for meanwhile."""
    before, after = _held(old), _held(new)
    if before == after:
        return None
    node = (max(0, times.new_node[0] - times.same_node[0]), max(0, times.new_node[1] - times.same_node[1]))
    held_before = before[0] if before else 0
    if after is None:
        what = (
            f"the CapacityBuffer goes, and its {held_before} held node(s) with it: a new pod waits for a node again "
            f"(about {_span(*times.new_node)} to serve)"
        )
        return Rollout(what, 0, times.new_node, None, "during `pulumi up`", times.source)
    held, scheduled = after
    if not scheduled:
        what = (
            f"the held nodes go from {held_before} to {held}: GKE provisions the new ones after `pulumi up` "
            f"(a node each, about {_span(*node)}), and a pod that lands on one serves about "
            f"{_span(*times.same_node)} later"
        )
        return Rollout(what, 0, node, node if held > held_before else None, "after `pulumi up`", times.source)
    steps = "; ".join(
        f"{name} at '{schedule}' ({zone}) holds {count}" for name, schedule, zone, count in _buffer_steps(new) if count
    )
    created = before is None
    what = (
        f"the held nodes go from {held_before} to {held} at the schedule's next step that sets them ({steps}): "
        + (
            "`pulumi up` creates the CapacityBuffer holding none, "
            if created
            else "`pulumi up` leaves the buffer's count to the schedule, "
        )
        + (
            f"so until then it holds {held_before}; "
            if held_before
            else f"so until then a new pod waits for a node (about {_span(*times.new_node)} to serve); "
        )
        + f"then GKE provisions the new ones (about {_span(*node)})"
    )
    return Rollout(what, 0, node, None, "at the schedule's next step", times.source)


def _disruptions_allowed(records: dict[str, Record]) -> int:
    """How many serving pods a drain may evict at once: the PodDisruptionBudget's maxUnavailable (1 without)."""
    for record in records.values():
        if record["type"] == PDB_TYPE:
            value = (record["inputs"].get("spec") or {}).get("maxUnavailable")
            if isinstance(value, int) and value > 0:
                return value
    return 1


def _flex_start(records: dict[str, Record]) -> bool:
    """Whether the serving ComputeClass falls back to (or starts with) Flex-start nodes."""
    return any(
        isinstance(priority, dict) and priority.get(FLEX_START_PRIORITY_FIELD)
        for record in records.values()
        if record["type"] == COMPUTE_CLASS_TYPE
        for priority in (record["inputs"].get("spec") or {}).get("priorities") or []
    )


def _pod_counts(new: dict[str, Record], urn: str) -> list[int]:
    """The serving pod counts that may run: the declared replicas, or what owns them decides (the HPA's bounds, the
    schedule's steps; a step may set 0, which the HPA leaves alone: horizontal.go reconcileAutoscaler)."""
    if not replicas_left_to_owner(new[urn]):
        return [declared_replicas(new[urn])]
    hpa = _hpa(new)
    owned = list(_bounds(hpa)) if hpa is not None else [declared_replicas(new[urn])]
    return [*owned, *(replicas for *_, replicas in _scale_steps(new))]


def _running_pods(new: dict[str, Record], urn: str) -> tuple[int, int]:
    """How many serving pods may run (low, high)."""
    counts = _pod_counts(new, urn)
    return (min(counts), max(counts))


def _serving_floor(new: dict[str, Record], urn: str) -> int:
    """The fewest serving pods that run while any does (0 when none ever does)."""
    return min((count for count in _pod_counts(new, urn) if count > 0), default=0)


def _running_side(old: dict[str, Record], new: dict[str, Record], urn: str) -> dict[str, Record]:
    """The state whose counts run while `pulumi up` rolls the serving pods. Where the new Deployment leaves its
    replicas to the HPA or the schedule, the engine copies the old state's input for them (ignoreChanges) and
    pulumi-kubernetes keeps the live count (provider await.go `handleSSAIgnoreFields`), which the old owner (or the
    old declared count) set; the new owner's counts come at its next step. Else the new declared count applies: with
    a template change the provider sends the whole object, the count with it (where an owner the update removes
    still holds the field, the apply fails and nothing rolls: `_replicas_taken_back`)."""
    return old if replicas_left_to_owner(new[urn]) else new


def _rolled_pods(old: Record, new: Record, running: tuple[int, int]) -> tuple[int, int]:
    """The pods a new template replaces one round after the other: with a declared count that changes too, only
    those of the old count that stay (the pods added start on the new template at once, the pods cut stop at once:
    Kubernetes' Deployment controller scales the new ReplicaSet within replicas + maxSurge)."""
    # where an owner set the old count, the one the old record declares is not the one that runs
    if replicas_left_to_owner(old) or replicas_left_to_owner(new):
        return running
    kept = min(declared_replicas(old), running[1])
    return (kept, kept)


# Release channels from the slowest to the fastest: new versions reach RAPID first, then REGULAR, then STABLE (GKE docs
# 'About release channels', https://cloud.google.com/kubernetes-engine/docs/concepts/release-channels).
CHANNEL_SPEED = ("STABLE", "REGULAR", "RAPID")


def _faster_channel(old: Any, new: Any) -> bool:
    return old in CHANNEL_SPEED and new in CHANNEL_SPEED and CHANNEL_SPEED.index(new) > CHANNEL_SPEED.index(old)


def _upgrade_cause(result: Preview) -> tuple[str, str, str] | None:
    """What makes GKE upgrade the control plane and the nodes after the update, when the pods restart, and when an
    outage comes: a raised control-plane floor (a lower one, or none, upgrades nothing:
    provider_effects.raises_master_version), only where the cluster runs an older version, which the preview does not
    know; or a faster release channel, whose newer versions GKE then upgrades the cluster to on its own schedule (a
    slower one is not said to downgrade it)."""
    for change in result.changes:
        if change.action != "update" or change.record["type"] != CLUSTER_TYPE:
            continue
        for entry in change.inputs:
            if entry.path == "minMasterVersion" and raises_master_version(entry.old, entry.new):
                return (
                    f"the control plane goes to {entry.new} if it runs an older version",
                    "after `pulumi up`, as GKE upgrades the nodes",
                    f"after `pulumi up` if the control plane runs a version older than {entry.new} (this preview "
                    "cannot see the version it runs: `gcloud container clusters describe` shows currentMasterVersion)",
                )
            if entry.path == "releaseChannel.channel" and _faster_channel(entry.old, entry.new):
                return (
                    f"the cluster moves from the {entry.old} to the {entry.new} release channel, whose newer versions "
                    "GKE upgrades it to on the channel's schedule where it runs an older one (not at `pulumi up`, "
                    "and when, this preview cannot say): the control plane first",
                    f"on the {entry.new} channel's schedule, as GKE upgrades the nodes",
                    f"when GKE upgrades the cluster on the {entry.new} channel's schedule, where it runs an older "
                    "version",
                )
    return None


def _node_upgrade(result: Preview, new: dict[str, Record], urn: str, times: ServeTimes) -> Rollout | None:
    """A control-plane upgrade the update sets off (`_upgrade_cause`): the nodes follow the control plane, and every
    serving pod starts again."""
    upgrade = _upgrade_cause(result)
    low, high = _running_pods(new, urn)
    if upgrade is None or high == 0:
        return None
    cause, restarts, when = upgrade
    pods = str(high) if low == high else f"the {low}..{high} running"
    allowed = _disruptions_allowed(new)
    step = min(allowed, high)
    rounds = math.ceil(high / step)
    per_pod = (times.same_node[0], times.new_node[1])
    total = (rounds * per_pod[0], rounds * per_pod[1])
    what = (
        f"{cause} (GKE creates no node meanwhile: a scale-up or a Spot replacement waits), then GKE upgrades the "
        f"nodes to the control plane's version, in the cluster's maintenance window where it can: {pods} serving "
        f"pod(s) start again, {step} at a time as the PodDisruptionBudget allows, each a model load on the surge "
        "node GKE made first (a new A4 node more without one), for about "
        f"{_span(*total)} at {high} pod(s); GKE waits for the budget at most 1 hour per node, then evicts "
        "anyway, so more may be down at once"
    )
    if _flex_start(new):
        what += (
            "; nodes from Flex-start get GKE's short-lived upgrades instead (GKE docs 'Node pool upgrade strategies', "
            "https://cloud.google.com/kubernetes-engine/docs/concepts/node-pool-upgrade-strategies): their pods move "
            "as those nodes are recycled, not verified in more detail here"
        )
    # a budget that lets every running pod go at once: draining their node leaves none serving (a platform review);
    # while none runs (a schedule's sleep) none is drained: the outage comes at the fewest that serve (a day-2 review)
    fewest = _serving_floor(new, urn)
    outage = (
        f"{urn}: an outage {when}: as GKE drains the nodes for the upgrade, the PodDisruptionBudget lets "
        f"{allowed} serving pod(s) go at once and {'as few as ' if fewest < high else ''}{fewest} run, so "
        f"nothing serves until a new pod is ready, about {_span(*per_pod)}, each time; with more than {allowed} "
        "running, the others serve"
        if fewest <= allowed
        else None
    )
    return Rollout(
        f"{what} ({AUTOPILOT_UPGRADES})",
        high,
        per_pod,
        total,
        restarts,
        times.source,
        outage,
    )


def rollouts(old: dict[str, Record], new: dict[str, Record], result: Preview, times: ServeTimes) -> list[Rollout]:
    serving = _serving(old)
    if serving is None or serving[0] not in new:
        return []
    urn, record = serving
    change = next((change for change in result.changes if change.urn == urn), None)
    pods = declared_replicas(record)
    found: list[Rollout] = []
    replaced = change is not None and change.action == "replace"
    running_side = _running_side(old, new, urn)
    if change is not None and replaced:
        moved = (record["inputs"].get("metadata") or {}).get("namespace") != (
            new[urn]["inputs"].get("metadata") or {}
        ).get("namespace")
        claim_first = moved and result.deleted_first(CLAIM_TYPE)
        found.append(
            _replaced(change, created_replicas(record, new[urn]), times, _running_pods(old, urn), new, claim_first)
        )
    elif (
        change is not None
        and change.action == "update"
        and (
            rolled := _template_rollout(
                change,
                record,
                _rolled_pods(record, new[urn], _running_pods(running_side, urn)),
                times,
                _serving_floor(running_side, urn),
            )
        )
    ):
        fronts = _fronts_ahead(result, old, record, new[urn], rolled, times)
        if fronts and (OUTAGE_THROUGH in fronts[0].what or SHUT_OUT in fronts[0].what):
            # a platform review: "11 of 12 serve meanwhile" where a front that changes at once reached no old pod
            reached = " run meanwhile, but through a front that changes at once none of the old ones is reached (below)"
            rolled = dataclasses.replace(rolled, what=rolled.what.replace(" serve meanwhile", reached))
        found += [rolled, *fronts]
    rolls_now = bool(found)
    if rolls_now:
        found += _download_first(result, times)
    owned_before = replicas_left_to_owner(record) and not replaced
    found += ([] if replaced else _schedule_gone(old, new, new[urn], times)) + _schedule_new(old, new, times)
    if replicas_left_to_owner(new[urn]):
        found += _owned_replicas(old, new, urn, times)
    elif owned_before:
        found.append(_replicas_taken_back(old, new, urn, times, updated=change is not None))
    elif change is not None and change.action == "update":
        before, after = pods, declared_replicas(new[urn])
        if after > before:
            found.append(
                Rollout(
                    f"{after - before} more serving pod(s), all at once, each a new A4 node and a model load (about "
                    f"{_span(*times.new_node)})",
                    after - before,
                    times.new_node,
                    times.new_node,
                    "during `pulumi up`",
                    times.source,
                )
            )
        elif after < before:
            found.append(_fewer_pods(new[urn], before, after, times))
    found += [
        rollout
        for rollout in (
            _held_nodes(old, new, times),
            _node_upgrade(result, new, urn, times),
            _new_priorities(result, times, rolls_now),
            _picker_restarts(result, old, new),
        )
        if rollout
    ]
    return found + _moved_steps(result, old, times)


def _fronts_ahead(
    result: Preview,
    old: dict[str, Record],
    deployment: Record,
    new_deployment: Record,
    rolled: Rollout,
    times: ServeTimes,
) -> list[Rollout]:
    """Objects in front of the pods that change at once while they roll (`fronts.py`): the old pods meet them
    for the whole roll."""
    effects = fronts_ahead(result, old, deployment, new_deployment)
    if not effects:
        return []
    what = (
        f"while the serving pods roll (about {_span(*rolled.total_seconds or rolled.seconds_per_pod)}), the old "
        f"and new pods are behind objects that change at once or go at the end: {'; '.join(effects)}"
    )
    # a warning on the roll above, not more pods: none counted twice in changes.json
    return [
        Rollout(what, 0, rolled.seconds_per_pod, None, "during `pulumi up`, until the roll ends", times.source, what)
    ]


def _moved_steps(result: Preview, old: dict[str, Record], times: ServeTimes) -> list[Rollout]:
    """A scale step whose time moves (its schedule or its time zone), or steps replaced by others: an update after the
    new time of a day the old one has not fired yet skips that day's step (kubernetes pkg/controller/cronjob: a missed
    run starts only within startingDeadlineSeconds of it; a CronJob created after its time first runs at the next)."""
    found = []
    for change in result.of("update"):
        if change.record["type"] != CRONJOB_TYPE or change.urn not in old:
            continue
        before, after = ((record["inputs"].get("spec") or {}) for record in (old[change.urn], change.record))
        was, now = ((spec.get("schedule"), spec.get("timeZone") or "UTC") for spec in (before, after))
        if was == now:
            continue
        name = (change.record["inputs"].get("metadata") or {}).get("name") or change.record["name"]
        deadline = after.get("startingDeadlineSeconds")
        within = f"{deadline} s after " if isinstance(deadline, int) else ""
        found.append(
            Rollout(
                f"the scale step {name} moves from {was[0]!r}{f' ({was[1]})' if was[1] != now[1] else ''} to "
                f"{now[0]!r} ({now[1]}): a `pulumi up` later "
                f"than {within}the new time, on a day the old time has not come yet, skips that day's step (the "
                "CronJob controller starts a missed run only within startingDeadlineSeconds); scale by hand that day "
                "(`scaleByHand`)",
                0,
                times.new_node,
                None,
                "at the step's next time after `pulumi up`",
                times.source,
            )
        )
    created, deleted = (
        {change.urn: change.record for change in result.of(action) if change.record["type"] == CRONJOB_TYPE}
        for action in ("create", "delete")
    )
    made, gone = (
        _scale_steps(records) + _buffer_steps(records) for records in (created, {urn: old[urn] for urn in deleted})
    )
    if made and gone:
        new_steps, deleted_steps = (
            "; ".join(f"{name} at {schedule!r} ({zone})" for name, schedule, zone, _ in steps) for steps in (made, gone)
        )
        found.append(
            Rollout(
                f"the scale steps are replaced (new: {new_steps}; deleted: {deleted_steps}): a new step created "
                "after its time first runs at its next time, and a deleted one does not run again, so on the day of "
                "`pulumi up` the replicas stay as the last step that ran set them until the next new step; scale by "
                "hand that day (`scaleByHand`)",
                0,
                times.new_node,
                None,
                "at the new steps' next times after `pulumi up`",
                times.source,
            )
        )
    return found


# A priority's parts that say where and on what a node runs, not which capacity source it comes from.
NOT_A_SOURCE = (".location", ".gpu", ".machineType", ".nodeRecycling")


def _reservations_added(change: ResourceChange) -> bool:
    """Whether the class's new priorities name a reservation its old ones did not (a reorder adds none)."""

    def leaves(path: str, value: Any) -> Iterator[tuple[str, Any]]:
        if isinstance(value, dict):
            for key, item in value.items():
                yield from leaves(f"{path}.{key}", item)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                yield from leaves(f"{path}[{index}]", item)
        else:
            yield path, value

    def named(side: str) -> set[str]:
        found = set()
        for entry in change.inputs:
            value = getattr(entry, side)
            if entry.path.startswith("spec.priorities") and value is not MISSING:
                found |= {f"{leaf!r}" for path, leaf in leaves(entry.path, value) if ".reservations" in path}
        return found

    return bool(named("new") - named("old"))


def _new_priorities(result: Preview, times: ServeTimes, rolls_now: bool) -> Rollout | None:
    """A ComputeClass whose capacity sources, their order or its GPU driver change in place: GKE uses them for new
    nodes; the running pods keep theirs, as the class asks for no active migration (vendored CRD:
    `activeMigration.optimizeRulePriority`, default false). A zone moved is not one: the pods roll to the new zones."""
    for change in result.of("update"):
        if change.record["type"] != COMPUTE_CLASS_TYPE:
            continue
        paths = [entry.path for entry in change.inputs if entry.path.startswith("spec.priorities")]
        sources = [path for path in paths if not any(part in path for part in NOT_A_SOURCE)]
        driver = any(".gpu.driverVersion" in path for path in paths)
        if not sources and not driver:
            continue
        running = (
            "the pods this update rolls most likely land on the nodes the old pods free and keep them"
            if rolls_now
            else "the running pods keep their nodes"
        )
        what = "capacity sources and order apply" if sources else "GPU driver version applies"
        return Rollout(
            f"the ComputeClass's new {what} to new nodes only: {running} (the class sets "
            "no activeMigration, whose optimizeRulePriority defaults to false in the vendored CRD) and move, each a "
            "new node and a model load, as those are replaced (a Spot preemption, Flex-start recycling, a scale-up)"
            + ("; a reservation added is billed from its creation, used or not" if _reservations_added(change) else ""),
            0,
            times.new_node,
            None,
            "as GKE makes new nodes after `pulumi up`",
            times.source,
        )
    return None
