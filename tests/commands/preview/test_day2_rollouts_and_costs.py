"""Day-2 changes from a converged state: when the serving pods follow (pods x time to serve), the
cost per month, JSON values diffed path by path, and a preview of two different stacks."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from commands.io.render_dir import PreviewInputError
from commands.io.states import pod_template
from commands.preview.changes import CostDelta, InputChange, Preview, ResourceChange
from commands.preview.changes_md import changes_markdown
from commands.preview.command import load_states, preview, preview_states
from commands.preview.command import main as preview_main
from commands.preview.json_values import MISSING, json_paths_diff
from commands.preview.rollouts import ServeTimes, serve_times
from commands.preview.rollouts import _minutes as rollouts_minutes
from commands.preview.rollouts import _new_priorities as new_priorities
from commands.preview.rollouts import _span as rollouts_span
from tests.commands.preview.test_day2 import day2
from tests.commands.preview.test_preview import render_with
from tests.conftest import RenderStack
from tests.rendered import RenderedStack, run_main
from tests.variants import render_variant


def times_of(stack: RenderedStack) -> ServeTimes:
    """The render's own per-profile time to serve (capacity.json timeToServe)."""
    return serve_times(json.loads((stack.directory / "capacity.json").read_text()))


AUTOSCALED = {"autoscaling": {"enabled": True, "minReplicas": 1, "maxReplicas": 2}}


def autoscaled_dev(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory, name: str, **bounds: int
) -> RenderedStack:
    """dev with the autoscaler on (AUTOSCALED), its bounds replaced by `bounds`, rendered."""
    settings = {"autoscaling": {**AUTOSCALED["autoscaling"], **bounds}}
    return render_with(render_stack, tmp_path_factory, "dev", name, settings)


def test_a_new_autoscaler_says_what_it_does_with_the_running_pods(
    dev: RenderedStack, render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """An HPA created over running pods keeps them only while the load needs them (a day-2 review: turning it on
    for prod's 12 pods said nothing, and the HPA took them down to its floor)."""
    autoscaled = autoscaled_dev(render_stack, tmp_path_factory, "hpa-new", minReplicas=1, maxReplicas=2)
    result = preview_states(dev.states, autoscaled.states)
    (taken,) = [rollout for rollout in result.rollouts if rollout.what.startswith("an autoscaler (HPA, 1..2")]
    assert "takes over the 1 running serving pod(s): with less load than they serve it removes pods down to 1" in (
        taken.what
    )
    assert taken.pods == 0 and "next sync" in taken.when


def test_a_step_moved_earlier_says_an_update_after_it_skips_that_day(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The CronJob controller starts a missed run only within startingDeadlineSeconds: a wake moved to 06:44 by an
    update at 07:10 runs neither at 07:44 nor at 06:44 that day."""
    hours = {"schedule": {"businessHours": {"start": "07:00", "end": "20:00"}}}
    _, _, result = day2(render_stack, tmp_path_factory, "dev", "earlier", hours)
    (wake,) = [rollout for rollout in result.rollouts if "serving-schedule-wake moves" in rollout.what]
    assert "from '44 7 * * 1,2,3,4,5' to '44 6 * * 1,2,3,4,5' (UTC)" in wake.what
    assert "later than 600 s after the new time, on a day the old time has not come yet, skips" in wake.what


def test_new_capacity_sources_apply_to_new_nodes_only(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The class asks for no active migration: a source added or reordered moves no running pod."""
    sources = {"capacity": {"sources": [{"type": "flexStart"}, {"type": "spot"}]}}
    _, _, result = day2(render_stack, tmp_path_factory, "dev", "flex-first", sources)
    (priorities,) = [rollout for rollout in result.rollouts if "ComputeClass's new capacity" in rollout.what]
    # Flex-start first also changes the pods' grace: they roll now, onto the nodes the old pods free
    assert "apply to new nodes only: the pods this update rolls most likely land on the nodes the old pods free" in (
        priorities.what
    )
    assert priorities.pods == 0
    # no reservation on either side (it said "a reservation added is billed" for any new source or order)
    assert "reservation" not in priorities.what
    class_only = ResourceChange(
        "urn:class",
        {"type": "kubernetes:cloud.google.com/v1:ComputeClass", "name": "c", "inputs": {}, "options": {}},
        "update",
        [InputChange("spec.priorities[0].spot", None, True, False)],
    )
    kept = new_priorities(Preview([class_only], 0, [], []), times_of(render_stack("dev")), rolls_now=False)
    assert kept is not None and "apply to new nodes only: the running pods keep their nodes" in kept.what


def fronts(result: Preview) -> str:
    (rollout,) = [rollout for rollout in result.rollouts if "behind objects that change at once" in rollout.what]
    assert rollout.warning and rollout.warning in result.warnings
    return rollout.what


def test_pool_ports_that_change_while_the_pods_roll_say_what_the_old_pods_serve(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The InferencePool, NetworkPolicy and firewall change at once and the pods one at a time: one endpoint per rank
    turned off leaves each old pod one engine of 8 behind the gateway (a day-2 review: previewed only as a rolling
    update). Turned on, the old pods name the one port they serve (llm-d.ai/active-ports), so the picker sends them
    nothing on the new ones; pods that name none get requests there (tests/commands/preview/test_fronts.py)."""
    one_port = {"routing": {"mode": "gateway", "gateway": {"endpointPerRank": False}}}
    per_rank, single, narrowed = day2(render_stack, tmp_path_factory, "staging", "one-port", one_port)
    widened = preview_states(single.states, per_rank.states)
    lost = "it stops reaching port(s) 8001, 8002, 8003, 8004, 8005, 8006, 8007 of the old pods at once: each old pod "
    for front in ("the InferencePool qwen-serving (update)", "the NetworkPolicy qwen-serving-ingress (update)"):
        assert f"{front}: {lost}gets traffic through it on 1 of the 8 port(s) it had" in fronts(narrowed)
    assert "the Firewall llm-serving-gateway-to-serving (update): it stops reaching" in fronts(narrowed)
    assert not any("serve none there" in rollout.what for rollout in widened.rollouts)


def test_a_new_engine_port_shuts_the_old_pods_out_at_once(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The NetworkPolicy admits the new port as soon as `pulumi up` starts; the old pods listen on the old one until
    they are replaced (a day-2 review: prod's 12 pods previewed as 11 of 12 serving, all of them shut out)."""
    _, _, result = day2(render_stack, tmp_path_factory, "dev", "port-9000", {"engine": {"port": 9000}})
    assert (
        "the NetworkPolicy qwen-serving-ingress (update): it stops reaching port(s) 8000 of the old pods at once: each "
        "old pod gets traffic through it on none of the port(s) it had (an outage through it"
    ) in fronts(result)
    # a day-2 review: the in-cluster policy's clients are the namespace's and the scrapes, not the load balancer's
    assert "what it admits: pods of its namespace (clients there, the picker's scrapes), pods of the namespaces" in (
        fronts(result)
    )
    # a platform review: the roll's own line still said "N-1 of N serve meanwhile"
    (roll,) = [rollout.what for rollout in result.rollouts if rollout.what.startswith("the serving pods roll")]
    assert "serve meanwhile" not in roll
    assert "run meanwhile, but through a front that changes at once none of the old ones is reached (below)" in roll


def warned(result: Preview, start: str) -> str:
    (rollout,) = [rollout for rollout in result.rollouts if rollout.what.startswith(start)]
    assert rollout.warning and rollout.warning in result.warnings
    return rollout.what


def test_replicas_taken_back_from_the_schedule_or_the_hpa_may_conflict_or_stay(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Dropping `ignoreChanges: spec.replicas` after a scale subresource writer: pulumi-kubernetes's apply conflicts
    with it, or sends nothing (a day-2 review: turning autoscaling off in prod previewed "8 more serving pods"). The
    conflict comes in the preview `pulumi up` runs first, where the provider applies as a dry run (a day-2 review: the
    warning said the rest of the update stops at the Deployment)."""
    _, _, unscheduled = day2(render_stack, tmp_path_factory, "dev", "no-schedule", {"schedule": {"enabled": False}})
    # its state holds the 1 it declares and nothing else of it changes: no step, so nothing that could conflict (a
    # day-2 review: it said the `up` fails where the live count is not 1)
    assert not [change for change in unscheduled.changes if change.record["type"] == "kubernetes:apps/v1:Deployment"]
    taken = warned(unscheduled, "the program sets the serving replicas again (1) after the scale schedule")
    assert "`pulumi up` sends nothing, and the pods stay at the count the writer left (0 after a sleep step)" in taken
    assert "After `pulumi up`, scale it to 1 by hand (`kubectl -n " in taken
    assert "fails" not in taken and "rest of the update" not in taken
    # with another change of the Deployment the apply is sent, count and all
    both = {"schedule": {"enabled": False}, "engine": {"maxNumSeqs": 512}}
    _, _, flagged = day2(render_stack, tmp_path_factory, "dev", "no-schedule-seqs", both)
    sent = warned(flagged, "the program sets the serving replicas again (1) after the scale schedule")
    assert "where the live count is not 1, `pulumi up` fails at its own preview, before any step," in sent
    assert "with a Server-Side Apply field conflict on .spec.replicas" in sent
    assert "Scale it to 1 by hand just before `pulumi up`, not right before a scale step (`kubectl -n " in sent
    prod = render_stack("prod")
    autoscaled = render_with(render_stack, tmp_path_factory, "prod", "hpa", {"autoscaling": {"enabled": True}})
    result = preview_states(autoscaled.states, prod.states)
    by_hpa = warned(result, "the program sets the serving")
    assert "after the HPA (kube-controller-manager) wrote them" in by_hpa
    assert re.search(
        r"Delete the HPA, then scale the Deployment to \d+ by hand before `pulumi up` \(`kubectl -n \S+ "
        r"delete hpa/\S+`, then `kubectl -n \S+ scale deployment/\S+ --replicas=\d+`\)",
        by_hpa,
    ), by_hpa
    assert not [rollout for rollout in result.rollouts if "more serving pod(s), all at once" in rollout.what]


def test_a_roll_of_the_startup_probe_alone_says_what_moves_it(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A node count that moves a large checkpoint's probe budget rolls every pod (a day-2 review: changes.md said the
    pods roll and listed the probe, not why a node count restarts them); an engine flag's roll says nothing of it."""
    big = {"profile": "qwen3.5-122b-a10b-fp8", "engine": {"imageDigest": "sha256:" + "a" * 64}}  # its own vLLM
    base = render_with(render_stack, tmp_path_factory, "prod", "big", big)
    more = render_with(render_stack, tmp_path_factory, "prod", "big-40", {**big, "capacity": {"nodes": 40}})
    (rolled,) = [r for r in preview_states(base.states, more.states).rollouts if r.what.startswith("the serving pods")]
    assert rolled.what.endswith(
        "(only the startup probe's budget changes: the program sizes it in whole half hours "
        "from the pod's start-up and, for a checkpoint larger than the recipe's, every pod "
        "reading one zone's disk at once, so a new node count or autoscaling maximum, disk "
        "throughput, checkpoint or start-up report can move it)"
    )
    _, _, flagged = day2(render_stack, tmp_path_factory, "prod", "seqs", {"engine": {"maxNumSeqs": 4096}})
    (flag_roll,) = [r for r in flagged.rollouts if r.what.startswith("the serving pods roll")]
    assert "startup probe" not in flag_roll.what


def test_a_replaced_deployment_has_no_writer_of_its_replicas(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A new name replaces the Deployment: it starts at the count declared, with no field conflict to warn of."""
    settings = {"schedule": {"enabled": False}, "routing": {"serviceName": "qwen-renamed"}}
    _, _, result = day2(render_stack, tmp_path_factory, "dev", "renamed-no-schedule", settings)
    assert any("serving Deployment" in rollout.what for rollout in result.rollouts)
    assert not [rollout for rollout in result.rollouts if "sets the serving replicas again" in rollout.what]


def test_fewer_nodes_stop_pods_at_once_and_recycling_alone_is_no_new_source(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """12 -> 8 nodes without an autoscaler: 4 pods stop as `pulumi up` applies the count (said nothing); the
    ComputeClass's new recycling lead time alone is no new source or order (the note said it was)."""
    _, _, result = day2(render_stack, tmp_path_factory, "prod", "eight-nodes", {"capacity": {"nodes": 8}})
    fewer = warned(result, "4 of the 12 serving pods stop at once (each drains its requests for up to")
    assert "with no PodDisruptionBudget to pace it" in fewer
    assert not [rollout for rollout in result.rollouts if "ComputeClass's new capacity" in rollout.what]


def test_a_replaced_benchmark_job_says_it_runs_again(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The benchmark's command names the node count: a new count replaces the Job, which runs at once against the
    serving pods (a platform review: previewed as a replacement and nothing more)."""
    benchmark = {"benchmark": {"enabled": True}}
    before = render_with(render_stack, tmp_path_factory, "prod", "benchmark", benchmark)
    after = render_with(
        render_stack, tmp_path_factory, "prod", "benchmark-13", {**benchmark, "capacity": {"nodes": 13}}
    )
    result = preview_states(before.states, after.states)
    (again,) = [warning for warning in result.warnings if "the benchmark Job is replaced" in warning]
    assert "runs again as soon as it is created for up to 14400 s (activeDeadlineSeconds)" in again
    assert again.endswith("turn benchmark.enabled off first where they do")
    # turned on beside serving pods, its first run is as much load (a day-2 review: 7 plain creates, no warning)
    turned_on = preview_states(render_stack("prod").states, before.states)
    (first,) = [warning for warning in turned_on.warnings if "the benchmark Job is created" in warning]
    assert "the benchmark runs as soon as it is created for up to 14400 s" in first and "while they serve" in first
    assert first.endswith("leave benchmark.enabled off where they do")  # it said "turn ... off" as it was turned on


def test_a_hyperdisk_throughput_change_says_it_is_allowed_once_in_4_hours(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    _, _, result = day2(render_stack, tmp_path_factory, "dev", "throughput", {"weights": {"throughputMibps": 4800}})
    (throughput,) = [warning for warning in result.warnings if "once every 4 hours" in warning]
    assert "provisionedThroughput change in place, which a Hyperdisk allows once every 4 hours" in throughput
    assert "run it again once 4 hours have passed" in throughput  # not "recreate the disk" (a day-2 review)


def test_new_weights_say_the_pods_follow_after_the_download(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Another model: the Deployment depends on the new download Job and what is made from it (a platform review:
    the roll's 10..16 min were shown as if it started at once)."""
    _, _, result = day2(render_stack, tmp_path_factory, "dev", "other-model", {"profile": "qwen3.5-35b-a3b-fp8"})
    (first,) = [rollout for rollout in result.rollouts if "follow only after the new weights" in rollout.what]
    assert "the download Job (up to its 3h timeout), then the snapshot, the disk image" in first.what
    assert any("serving pods roll" in rollout.what for rollout in result.rollouts)
    # the profile gives the new model: its changes name it beside weights.model (a review: profile went unnamed)
    assert any({"profile", "weights.model"} <= change.config_keys for change in result.changes)


def test_a_schedule_removed_under_an_hpa_leaves_a_slept_deployment_at_zero(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The HPA never scales a target at 0: staging without its schedule stays asleep until scaled by hand."""
    _, _, result = day2(render_stack, tmp_path_factory, "staging", "no-schedule", {"schedule": {"enabled": False}})
    gone = warned(result, "the scale schedule goes away with the HPA staying")
    assert "after a sleep step that is 0, which the HPA never scales up" in gone
    assert "`kubectl -n llm-serving scale deployment/qwen-serving --replicas=1`" in gone


def test_a_schedule_turned_on_says_when_nothing_serves(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The schedule's CronJobs scale the pods to 0 each evening from the first step on (a day-2 review: prod with a
    schedule turned on previewed 6 creates and a lower cost, and nothing of the pods)."""
    base, unscheduled, _ = day2(
        render_stack, tmp_path_factory, "staging", "no-schedule", {"schedule": {"enabled": False}}
    )
    result = preview_states(unscheduled.states, base.states)
    starts = warned(result, "a scale schedule starts owning the serving replicas")
    assert "serving-schedule-sleep at '0 19 * * 1,2,3,4,5' (UTC) scales to 0" in starts
    assert "nothing serves from each step to 0 until the next scale-up step" in starts
    assert "each a new A4 node (capacity that may not be there) and a model load" in starts


def test_more_nodes_while_the_schedule_owns_the_replicas_follow_at_its_next_step(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """dev scales on a schedule (ignoreChanges spec.replicas): `pulumi up` leaves the pods alone."""
    _, changed, result = day2(render_stack, tmp_path_factory, "dev", "nodes-3", {"capacity": {"nodes": 3}})
    (rollout,) = result.rollouts
    assert rollout.pods == 2 and rollout.when == "at the schedule's next scale-up step"
    assert "serving-schedule-wake" in rollout.what and "scales to 3" in rollout.what and "scaleByHand" in rollout.what
    assert rollout.total_seconds == times_of(changed).new_node and "timeToServe" in rollout.source
    # each figure's own basis: the node phase is the write-up's measurement, the whole start a planning figure
    assert "; a new pod on a new node: assumed; a pod on a node that is up: assumed; a node alone: measured)" in (
        rollout.source
    )
    (cost,) = result.costs
    assert cost.old is not None and cost.new is not None and cost.new[1] > cost.old[1]


def test_new_hpa_bounds_say_when_the_autoscaler_moves_the_pods(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    base = autoscaled_dev(render_stack, tmp_path_factory, "hpa")
    wider = autoscaled_dev(render_stack, tmp_path_factory, "hpa-wider", minReplicas=2, maxReplicas=4)
    result = preview_states(base.states, wider.states)
    (bounds,) = [rollout for rollout in result.rollouts if "HPA's bounds" in rollout.what]
    assert "1..2 to 2..4" in bounds.what and bounds.pods == 1 and "next sync" in bounds.when
    assert "up to 1 more pod(s)" in bounds.what and "down to it" not in bounds.what  # the maximum rose
    back = preview_states(wider.states, base.states)
    (narrower,) = [rollout for rollout in back.rollouts if "HPA's bounds" in rollout.what]
    assert "2..4 to 1..2" in narrower.what and narrower.pods == 0
    assert "scales one above 2 down to it" in narrower.what and "more pod" not in narrower.what
    # the controller sets a count above the maximum to it before any scale-down behavior (horizontal.go)
    assert "at once, not by its scale-down policy (up to 2 pod(s) stop together)" in narrower.what


def test_a_compute_class_rename_moves_every_pod_to_new_nodes_one_at_a_time(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    settings = {"capacity": {"computeClassName": "b200-serving-b"}}
    _, changed, result = day2(render_stack, tmp_path_factory, "prod", "compute-class", settings)
    low, high = times_of(changed).new_node
    moved = [rollout for rollout in result.rollouts if "moves to new nodes" in rollout.what]
    (rollout,) = moved
    assert rollout.pods == 12 and rollout.seconds_per_pod == (low, high)
    assert rollout.total_seconds == (12 * low, 12 * high)
    assert "11 of 12 serve meanwhile" in rollout.what and "nodeSelector change" in rollout.what
    assert rollout.warning is not None and rollout.warning in result.warnings


def test_a_control_plane_floor_says_every_pod_starts_again_as_the_nodes_follow(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """GKE upgrades an Autopilot cluster's nodes after its control plane: each node drained as the PDB allows."""
    settings = {"cluster": {"minMasterVersion": "1.36"}}
    _, changed, result = day2(render_stack, tmp_path_factory, "prod", "control-plane", settings)
    (upgrade,) = [rollout for rollout in result.rollouts if "control plane" in rollout.what]
    times = times_of(changed)
    assert upgrade.pods == 12 and upgrade.when == "after `pulumi up`, as GKE upgrades the nodes"
    assert upgrade.seconds_per_pod == (times.same_node[0], times.new_node[1])
    assert upgrade.total_seconds == (12 * times.same_node[0], 12 * times.new_node[1])  # prod's PDB: 1 at a time
    assert (
        "goes to 1.36 if it runs an older version" in upgrade.what and "12 serving pod(s) start again" in upgrade.what
    )
    assert "at most 1 hour per node" in upgrade.what and "cluster-upgrades-autopilot" in upgrade.what
    assert "short-lived upgrades" in upgrade.what  # prod's nodes come from Flex-start first
    assert "## Serving pods" in changes_markdown(result)
    # the same floor again is no change, and no pod moves
    again = preview_states(changed.states, changed.states)
    assert not again.rollouts
    # nor does a lower floor, or none (a platform review: 1.35 -> 1.34 promised 12 restarts that never come)
    for floor in ("1.35", None):
        lower = load_states(changed.directory)
        for record in [*lower.first_up, *(lower.converged or [])]:
            if record["type"] == "gcp:container/cluster:Cluster":
                record["inputs"]["minMasterVersion"] = floor
        lowered = preview_states(changed.states, lower)
        assert any(change.record["type"] == "gcp:container/cluster:Cluster" for change in lowered.changes)
        assert not [rollout for rollout in lowered.rollouts if "control plane" in rollout.what], floor


def test_a_control_plane_floor_counts_the_pods_the_autoscaler_may_run(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """With the HPA owning the replicas, the declared count is its minimum: the upgrade restarts what runs, from
    none (the schedule's sleep step sets 0, which the HPA leaves alone: a held-out check read 1..4) to its maximum."""
    base = autoscaled_dev(render_stack, tmp_path_factory, "hpa-1-4", maxReplicas=4)
    settings = {**AUTOSCALED, "autoscaling": {**AUTOSCALED["autoscaling"], "maxReplicas": 4}}
    upgraded = render_with(
        render_stack, tmp_path_factory, "dev", "hpa-1-4-floor", {**settings, "cluster": {"minMasterVersion": "1.36"}}
    )
    result = preview_states(base.states, upgraded.states)
    (upgrade,) = [rollout for rollout in result.rollouts if "control plane" in rollout.what]
    assert "the 0..4 running serving pod(s) start again" in upgrade.what and upgrade.pods == 4
    assert "short-lived" not in upgrade.what  # dev's nodes are Spot
    # a day-2 review: the outage was said to come for sure, where the floor upgrades only an older control plane
    assert upgrade.warning and "an outage after `pulumi up` if the control plane runs a version older than 1.36 (" in (
        upgrade.warning
    )


def test_an_engine_flag_under_the_autoscaler_rolls_the_pods_it_may_run(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The Deployment declares the HPA's minimum (1); the rollout restarts what runs, up to 4 (none after the
    schedule's sleep step, a held-out check: it said 1..4, an outage at the least)."""
    base = autoscaled_dev(render_stack, tmp_path_factory, "hpa-1-4", maxReplicas=4)
    settings = {"autoscaling": {**AUTOSCALED["autoscaling"], "maxReplicas": 4}, "engine": {"maxNumSeqs": 4096}}
    flag = render_with(render_stack, tmp_path_factory, "dev", "hpa-1-4-flag", settings)
    result = preview_states(base.states, flag.states)
    (rollout,) = result.rollouts
    assert rollout.pods == 4 and "4 pod(s) at most (the 0..4 running), 1 at a time" in rollout.what
    assert "3 of 4 serve meanwhile" in rollout.what
    # at the autoscaler's floor the one pod rolls too: nothing serves meanwhile
    assert "(0 of 1 at the 1 running at the least while any does: an outage)" in rollout.what
    assert rollout.total_seconds == (4 * rollout.seconds_per_pod[0], 4 * rollout.seconds_per_pod[1])


HELD_FLOOR = {"cluster": {"minMasterVersion": "1.36"}}


def test_held_nodes_on_a_schedule_start_at_its_next_step_and_say_what_a_pod_waits_for_until_then(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """dev scales on a schedule: the buffer is created holding none (ignoreChanges spec.replicas), the wake sets it."""
    base = render_with(render_stack, tmp_path_factory, "dev", "floor-1.36", HELD_FLOOR)
    held = render_with(render_stack, tmp_path_factory, "dev", "held-2", {**HELD_FLOOR, "warmCapacity": {"nodes": 2}})
    result = preview_states(base.states, held.states)
    (rollout,) = [rollout for rollout in result.rollouts if "held nodes" in rollout.what]
    assert "go from 0 to 2 at the schedule's next step" in rollout.what and "serving-schedule-wake" in rollout.what
    assert "creates the CapacityBuffer holding none" in rollout.what and "waits for a node" in rollout.what
    assert rollout.when == "at the schedule's next step"
    more = render_with(render_stack, tmp_path_factory, "dev", "held-3", {**HELD_FLOOR, "warmCapacity": {"nodes": 3}})
    (grown,) = [r for r in preview_states(held.states, more.states).rollouts]
    assert "from 2 to 3" in grown.what and "leaves the buffer's count to the schedule" in grown.what
    assert "until then it holds 2" in grown.what
    (gone,) = preview_states(held.states, base.states).rollouts
    assert "the CapacityBuffer goes, and its 2 held node(s) with it" in gone.what


def test_held_nodes_without_a_schedule_follow_the_update(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    settings = {**HELD_FLOOR, "schedule": {"enabled": False}}
    base = render_with(render_stack, tmp_path_factory, "dev", "unscheduled", settings)
    held = render_with(
        render_stack, tmp_path_factory, "dev", "unscheduled-held", {**settings, "warmCapacity": {"nodes": 1}}
    )
    (rollout,) = preview_states(base.states, held.states).rollouts
    assert "go from 0 to 1: GKE provisions the new ones after `pulumi up`" in rollout.what
    assert rollout.when == "after `pulumi up`"


def test_a_held_node_is_a_pod_phase_where_the_held_total_is_not_measured() -> None:
    capacity = {
        "timeToServe": {
            "profile": "p",
            "cold": {"seconds_min": None, "seconds_max": None},
            "held": {"seconds_min": None, "seconds_max": None},
            "planning_seconds": 960,
            "planning_basis": "assumed",
            "held_planning_seconds": 600,
        }
    }
    times = serve_times(capacity)
    assert times.new_node == (960, 960) and times.same_node == (600, 600)
    del capacity["timeToServe"]["held_planning_seconds"]  # a render made before the held planning figure
    assert serve_times(capacity).same_node == (960, 960)


def test_an_engine_flag_rolls_the_pods_on_their_nodes(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A roll that stops every running pod at once is a warning (a day-2 review: dev's one pod, or prod at one
    replica, rolled with 0 serving and said so only inside changes.md); staging's autoscaler may leave one pod."""
    _, changed, result = day2(render_stack, tmp_path_factory, "dev", "max-seqs", {"engine": {"maxNumSeqs": 256}})
    (rollout,) = result.rollouts
    assert "the serving pods roll" in rollout.what
    times = times_of(changed)
    assert rollout.seconds_per_pod == (times.same_node[0], times.new_node[1])
    assert rollout.warning and rollout.warning in result.warnings
    assert rollout.warning.endswith(
        "an outage: the serving pods roll 1 at a time and 1 pod(s) run at most, so nothing serves until a new pod is "
        "ready, "
        f"about {rollouts_span(*rollout.seconds_per_pod)}; requests meanwhile fail. With more than 1 running, the "
        "others serve during a roll"
    )
    _, _, staging = day2(render_stack, tmp_path_factory, "staging", "seqs", {"engine": {"maxNumSeqs": 64}})
    (at_the_floor,) = [rollout for rollout in staging.rollouts if rollout.what.startswith("the serving pods roll")]
    assert (
        at_the_floor.warning and "roll 1 at a time and at 1 running (the least the autoscaler" in at_the_floor.warning
    )
    _, _, prod = day2(render_stack, tmp_path_factory, "prod", "seqs", {"engine": {"maxNumSeqs": 4096}})
    (twelve,) = [rollout for rollout in prod.rollouts if rollout.what.startswith("the serving pods roll")]
    assert twelve.warning is None and not [warning for warning in prod.warnings if "an outage" in warning]
    # each round also waits for an old pod's drain on the GPUs (a time-to-serve review: up to 2 h more in prod)
    deployment = render_stack("prod").one("kubernetes:apps/v1:Deployment")
    grace = pod_template(deployment)["spec"]["terminationGracePeriodSeconds"]
    assert f", plus up to {grace} s a round while an old pod drains its running requests on the GPUs" in twelve.what
    assert f"({rollouts_minutes(12 * grace)} at most in all)" in twelve.what


def test_the_dashboard_is_diffed_path_by_path(
    tmp_path: Path, render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    base = render_stack("dev")
    gateway = render_with(render_stack, tmp_path_factory, "dev", "routing", {"routing": {"mode": "gateway"}})
    out = tmp_path / "out"
    assert run_main(preview_main, str(base.directory), str(gateway.directory), "--out", str(out)).returncode == 0
    document = json.loads((out / "changes.json").read_text())
    (dashboard,) = [
        entry
        for change in document["changes"]
        for entry in change.get("inputs", [])
        if entry["path"] == "dashboardJson"
    ]
    assert dashboard["jsonDiff"] and all(
        item["path"].startswith("mosaicLayout.tiles[") for item in dashboard["jsonDiff"]
    )
    text = (out / "changes.md").read_text()
    assert "`dashboardJson` (JSON: " in text and dashboard["old"] not in text
    assert max(len(line) for line in text.splitlines() if "mosaicLayout" in line) < 400


def test_a_render_without_time_to_serve_falls_back_to_the_recipe_figures() -> None:
    times = serve_times({"stack": "dev"})
    assert times.new_node == (960, 960) and times.same_node == (600, 600) and "no timeToServe" in times.source


def test_json_paths_diff_keys_indexes_and_whole_documents() -> None:
    old = {"a": 1, "tiles": [{"t": "x"}, {"t": "y"}], "gone": {"k": True}}
    new = {"a": 2, "tiles": [{"t": "x"}, {"t": "z"}, {"t": "w"}], "empty": {}}
    assert json_paths_diff(old, new) == [
        ("a", 1, 2),
        ("empty", MISSING, {}),
        ("gone.k", True, MISSING),
        ("tiles[1].t", "y", "z"),
        ("tiles[2].t", MISSING, "w"),
    ]


def test_a_preview_of_two_stacks_warns(render_stack: RenderStack) -> None:
    result = preview_states(render_stack("dev").states, render_stack("staging").states)
    (warning,) = [warning for warning in result.warnings if warning.startswith("OLD and NEW are renders of different")]
    assert "stack 'dev' -> 'staging'" in warning and "GCP project" in warning


def test_the_console_shows_every_warning_and_refusal(render_stack: RenderStack, tmp_path: Path) -> None:
    """A warning (clients break, a delete-first replacement) is on standard error as well as in changes.md:
    it is what a user reads, and an endpoint deleted without a word there went unnoticed."""
    old, new = render_stack("dev").directory, render_stack("staging").directory
    result = preview_states(load_states(old), load_states(new))
    run = run_main(preview_main, str(old), str(new), "--out", str(tmp_path / "changes"))
    lines = run.stderr.splitlines()
    warned = [line.removeprefix("warning: ") for line in lines if line.startswith("warning: ")]
    assert warned == [" ".join(warning.split()) for warning in result.warnings]
    assert any(line.startswith("clients break: ") for line in warned)
    assert [line for line in lines if line.startswith("refused: ")] == [f"refused: {r}" for r in result.refusals]


def test_a_preview_of_one_stack_has_no_such_warning(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    _, _, result = day2(render_stack, tmp_path_factory, "dev", "nodes-3", {"capacity": {"nodes": 3}})
    assert not any("different stacks" in warning for warning in result.warnings)


def test_a_change_of_a_cost_range_says_which_end_moves_which_way() -> None:
    """New HPA bounds 1..4 -> 2..3: the floor rises and the ceiling falls; "+8,781..-8,781" read as a
    range."""
    result = Preview([], 0, [], [], costs=[CostDelta("Spot", "Spot", (9155.0, 35496.0), (17935.0, 26716.0))])
    row = next(line for line in changes_markdown(result).splitlines() if line.startswith("| Spot"))
    assert row == "| Spot | Spot | 9,155..35,496 | 17,935..26,716 | +8,780 at the floor, -8,780 at the ceiling |"


def test_the_cost_table_says_what_it_prices_and_what_it_does_not() -> None:
    """clusterip -> gateway is +0 in the table: the picker's pods and the load balancer are billed but
    not priced, and changes.md says so under the table instead of letting +0 read as free."""
    same = (23_000.0, 23_000.0)
    text = changes_markdown(Preview([], 0, [], [], costs=[CostDelta("spot", "Spot", same, same)]))
    table_end = text.index("| spot | Spot | 23,000 | 23,000 | +0 |")
    priced = text.index("Priced: the A4 (B200) nodes", table_end)
    assert "Not priced, so a change to them shows +0 here" in text[priced:]
    assert "Endpoint Picker pods" in text[priced:] and "Application Load Balancer" in text[priced:]
    assert "Priced:" not in changes_markdown(Preview([], 0, [], []))


def test_new_capacity_sources_give_the_bill_of_each_side_as_one_span() -> None:
    """Spot -> Flex-start then Spot: the rows of a source that comes or goes have no change of their own,
    and the rows are alternatives (the bill if every node came from that source), not parts of one sum."""
    costs = [
        CostDelta("Flex-start", "Flex-start (DWS)", None, (18_239.4, 71_835.6)),
        CostDelta("Spot", "Spot", (9_154.6, 35_496.3), (9_154.6, 35_496.3)),
    ]
    result = Preview([], 0, [], [], costs=costs)
    assert "so the bill is 9,155..35,496 before and 9,155..71,836 after" in " ".join(changes_markdown(result).split())
    assert result.as_json()["costPerMonthSpan"] == {
        "old": {"min": 9_154.6, "max": 35_496.3},
        "new": {"min": 9_154.6, "max": 71_835.6},
    }
    same_sources = Preview([], 0, [], [], costs=[costs[1]])
    assert "costPerMonthSpan" not in same_sources.as_json()
    assert "The capacity sources differ" not in changes_markdown(same_sources)


def _hpa_settings(result: Preview) -> list[set[str]]:
    return [
        change.config_keys for change in result.changes if change.record["type"].endswith(":HorizontalPodAutoscaler")
    ]


def test_of_the_settings_that_could_move_an_input_only_those_that_changed_are_named(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The HPA's maximum comes from autoscaling.maxReplicas or capacity.nodes: a render records a digest
    of each setting (states.json settingDigests), so a preview names the one that changed; two renders
    without the digests (made before them) name both, as the update alone cannot tell."""
    base = autoscaled_dev(render_stack, tmp_path_factory, "hpa")
    more = autoscaled_dev(render_stack, tmp_path_factory, "hpa-max-3", maxReplicas=3)
    result = preview_states(base.states, more.states)
    assert _hpa_settings(result) == [{"autoscaling.maxReplicas"}]
    old, new = (dataclasses.replace(stack.states, setting_digests=None) for stack in (base, more))
    assert _hpa_settings(preview_states(old, new)) == [{"autoscaling.maxReplicas", "capacity.nodes"}]


@pytest.mark.parametrize("digests", [["capacity.nodes"], {"capacity.nodes": "hunter2-" + "not-a-digest"}, {"x": 3}])
def test_an_edited_render_s_setting_digests_are_refused_without_being_shown(
    digests: object, dev: RenderedStack, tmp_path: Path
) -> None:
    edited = tmp_path / "dev"
    shutil.copytree(dev.directory, edited)
    states = json.loads((edited / "states.json").read_text())
    states["settingDigests"] = digests
    (edited / "states.json").write_text(json.dumps(states))
    with pytest.raises(PreviewInputError, match="settingDigests must map setting keys to sha256 digests") as error:
        load_states(edited)
    assert "hunter2" not in str(error.value)


FORGED_NOTE = (
    "none. Reviewed: this update is safe, no client breaks, approved by SRE [details](https://attacker.example/approve)"
)


@pytest.mark.parametrize("note", [3, ["a"], "two\nlines", "x" * 5000, FORGED_NOTE])
def test_an_edited_render_s_unseen_settings_note_is_refused(note: object, dev: RenderedStack, tmp_path: Path) -> None:
    """Only the note a render writes: an attacker's prose and link had reached the preview's warnings word for word."""
    edited = tmp_path / "dev"
    shutil.copytree(dev.directory, edited)
    states = json.loads((edited / "states.json").read_text())
    states["unseenSettings"] = note
    (edited / "states.json").write_text(json.dumps(states))
    with pytest.raises(PreviewInputError, match="unseenSettings is not the note a render writes"):
        load_states(edited)


def with_serving_edited(dev: RenderedStack, tmp_path: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
    """A copy of the dev render whose serving Deployment's spec, in both states, `edit` changed."""
    edited = tmp_path / "dev"
    shutil.copytree(dev.directory, edited)
    states = json.loads((edited / "states.json").read_text())
    for state in ("firstUp", "converged"):
        for record in states[state]:
            if record["name"] == "llm-vllm-deployment":
                edit(record["inputs"]["spec"])
    (edited / "states.json").write_text(json.dumps(states))
    return edited


def test_an_edited_record_the_update_plan_cannot_read_is_named(dev: RenderedStack, tmp_path: Path) -> None:
    def unreadable(spec: dict[str, Any]) -> None:
        spec["template"]["spec"]["containers"][0]["resources"] = "8 GPUs"

    edited = with_serving_edited(dev, tmp_path, unreadable)
    outcome = run_main(preview_main, str(edited), str(dev.directory), "--out", str(tmp_path / "out"))
    assert outcome.returncode == 2 and outcome.stderr.count("\n") == 1, outcome.stderr
    assert "the record of llm-vllm-deployment (kubernetes:apps/v1:Deployment) is not shaped as a render" in (
        outcome.stderr
    )
    assert "allowed: a render folder as `render` wrote it" in outcome.stderr


def test_an_edited_record_whose_figures_overflow_is_named(dev: RenderedStack, tmp_path: Path) -> None:
    """10**308 replicas rolled at a planning figure of 1e15 s overflow a float: exit 2, not "failed" (an attacker)."""

    def huge(spec: dict[str, Any]) -> None:
        spec["replicas"] = 10**308

    def new_image(spec: dict[str, Any]) -> None:
        spec["template"]["spec"]["containers"][0]["image"] = "vllm/vllm-openai:edited"

    # the schedule owns the replicas: the pods that roll are the count the old state runs
    (tmp_path / "old").mkdir()
    (tmp_path / "new").mkdir()
    old = with_serving_edited(dev, tmp_path / "old", huge)
    edited = with_serving_edited(dev, tmp_path / "new", new_image)
    capacity = json.loads((edited / "capacity.json").read_text())
    times = capacity["timeToServe"]
    for figure in ("cold", "held"):
        times[figure]["seconds_min"] = times[figure]["seconds_max"] = 1e15  # the largest a figure may be
    times["planning_seconds"] = 1e15
    (edited / "capacity.json").write_text(json.dumps(capacity))
    outcome = run_main(preview_main, str(old), str(edited), "--out", str(tmp_path / "out"))
    assert outcome.returncode == 2 and outcome.stderr.count("\n") == 1, outcome.stderr
    assert "is not shaped as a render writes it (OverflowError" in outcome.stderr


def test_preview_leaves_replicas_to_the_autoscaler(
    staging: RenderedStack, render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Raising minReplicas changes the HPA; the Deployment's declared replicas (1 -> 2) are ignored."""
    changed = render_variant("staging-min-2", render_stack, tmp_path_factory)
    assert changed.named("llm-vllm-deployment")["inputs"]["spec"]["replicas"] == 2
    result = preview(staging.resources, changed.resources)
    updated = {change.record["name"]: change for change in result.of("update")}
    assert "llm-autoscaler-hpa" in updated
    deployment = updated.get("llm-vllm-deployment")
    assert deployment is None or not any("replicas" in entry.path for entry in deployment.inputs)
    assert not result.of("replace") and not result.of("delete") and not result.refusals


@pytest.mark.parametrize(
    ("path", "value"),
    [(("timeToServe", "cold", "seconds_min"), -600), (("timeToServe", "planning_seconds"), 1e300)],
)
def test_a_capacity_file_with_figures_no_render_writes_is_refused(
    render_stack: RenderStack, tmp_path: Path, path: tuple[str, ...], value: float
) -> None:
    """A hand-edited capacity.json made changes.md say `for about -10 min..-1 min` and a 300-digit cost."""
    new = tmp_path / "new"
    shutil.copytree(render_stack("dev").directory, new)
    document = json.loads((new / "capacity.json").read_text())
    parent = document
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = value
    (new / "capacity.json").write_text(json.dumps(document))
    run = run_main(preview_main, str(render_stack("dev").directory), str(new), "--out", str(tmp_path / "changes"))
    assert run.returncode == 2 and run.stderr.count("\n") == 1
    assert f"'{'.'.join(path)}' is " in run.stderr and "allowed: a figure from 0 to" in run.stderr


def test_a_new_time_zone_or_steps_that_replace_others_say_that_day_s_step_may_not_run(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Held-out day-2 checks: a new `schedule.timeZone` moves every step in absolute time, and cron entries that
    replace the business hours create steps after their time and delete the old ones: no rollout said either."""
    _, _, zoned = day2(render_stack, tmp_path_factory, "dev", "time-zone", {"schedule": {"timeZone": "Europe/Berlin"}})
    moved = [rollout.what for rollout in zoned.rollouts if rollout.what.startswith("the scale step ")]
    assert len(moved) == 2 and all("(UTC) to " in what and "(Europe/Berlin)" in what for what in moved), moved
    entries = [
        {"name": "morning", "cron": "0 7 * * 1-5", "replicas": 2},
        {"name": "night", "cron": "0 20 * * 1-5", "replicas": 0},
    ]
    _, _, replaced = day2(render_stack, tmp_path_factory, "staging", "entries", {"schedule": {"entries": entries}})
    (note,) = [rollout.what for rollout in replaced.rollouts if rollout.what.startswith("the scale steps are replaced")]
    assert "morning at '0 7 * * 1-5'" in note and "deleted: " in note and "scaleByHand" in note


def test_more_nodes_under_a_schedule_whose_step_sets_its_own_count_start_no_pod(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A held-out day-2 check: the wake step scales to businessHours.replicas, not to the node count; the rollout
    counted the program's replicas (1 -> 2) as a pod the step would start."""
    settings = {"capacity": {"nodes": 2}, "schedule": {"businessHours": {"replicas": 1}}}
    _, _, result = day2(render_stack, tmp_path_factory, "dev", "step-count", settings)
    (owned,) = [rollout for rollout in result.rollouts if rollout.what.startswith("the scale schedule owns")]
    assert "scales to 1" in owned.what and "no more pods than before then" in owned.what
    assert owned.pods == 0
    _, _, grown = day2(render_stack, tmp_path_factory, "dev", "step-grown", {"capacity": {"nodes": 2}})
    (owned,) = [rollout for rollout in grown.rollouts if rollout.what.startswith("the scale schedule owns")]
    assert "scales to 2" in owned.what and "1 more pod(s) then" in owned.what and owned.pods == 1


def test_a_zone_move_says_the_pods_roll_not_that_new_sources_apply_to_new_nodes(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A held-out day-2 check: a zone move rolls every pod to the new zone, and a second line said the ComputeClass's
    'new capacity sources and order' apply to new nodes only, which no source or order change backed; a new GPU
    driver says it is the driver."""
    _, _, moved = day2(render_stack, tmp_path_factory, "prod", "zone-a", {"zones": ["us-central1-a"]})
    assert not [rollout for rollout in moved.rollouts if "capacity sources and order" in rollout.what]
    driver = {"capacity": {"gpuDriverVersion": "default"}}
    _, _, new_driver = day2(render_stack, tmp_path_factory, "prod", "driver", driver)
    (rollout,) = [rollout for rollout in new_driver.rollouts if "ComputeClass's new" in rollout.what]
    assert rollout.what.startswith("the ComputeClass's new GPU driver version applies to new nodes only")


def test_an_outage_is_warned_once_where_it_happens_and_not_where_the_count_rises_first(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A platform review: 1 -> 3 pods with a new template was an outage warning, though the Deployment controller
    scales before it rolls; dev's one pod moved to another zone said the rollout stalls "with the others serving" and
    named the Deployment twice; a node upgrade draining the only pod had no warning."""
    one = render_with(render_stack, tmp_path_factory, "prod", "one-node", {"capacity": {"nodes": 1}})
    three = render_with(
        render_stack, tmp_path_factory, "prod", "three-seqs", {"capacity": {"nodes": 3}, "engine": {"maxNumSeqs": 4096}}
    )
    grown = preview_states(one.states, three.states)
    assert not [warning for warning in grown.warnings if "an outage" in warning]
    _, _, zone = day2(render_stack, tmp_path_factory, "dev", "zone-move", {"zones": ["us-central1-c"]})
    (moved,) = [rollout for rollout in zone.rollouts if rollout.what.startswith("every serving pod moves")]
    assert moved.warning and moved.warning.count("llm-vllm-deployment") == 1
    assert "nothing serves until it is there" in moved.warning and "with the others serving" not in moved.warning
    _, _, upgrade = day2(render_stack, tmp_path_factory, "staging", "rapid", {"cluster": {"releaseChannel": "RAPID"}})
    (drained,) = [rollout for rollout in upgrade.rollouts if "release channel" in rollout.what]
    assert drained.when == "on the RAPID channel's schedule, as GKE upgrades the nodes"  # not "after `pulumi up`"
    assert (
        drained.warning and "an outage when GKE upgrades the cluster on the RAPID channel's schedule" in drained.warning
    )
    # staging sleeps at 0 pods: none is drained then; the outage is at the fewest that serve (it said "and 0 run")
    assert "go at once and as few as 1 run, so nothing serves" in drained.warning


def test_a_zone_dropped_moves_only_the_pods_there_to_new_nodes(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A day-2 review: prod on zones b and c going to b alone said every pod moves to new nodes (3.0-3.2 h), though a
    pod in b may take the node its predecessor frees; a zone moved (b -> a) still moves every pod."""
    two_zones = render_with(render_stack, tmp_path_factory, "prod", "zones-bc", {"zones": ZONES_BC})
    result = preview_states(two_zones.states, render_stack("prod").states)
    (rolled,) = [rollout for rollout in result.rollouts if rollout.what.startswith("the serving pods roll")]
    assert "no longer admits us-central1-c, so a pod on a node there needs a new A4 node" in rolled.what
    times = times_of(render_stack("prod"))
    assert rolled.seconds_per_pod == (times.same_node[0], times.new_node[1])
    assert rolled.warning and "a pod leaving those nodes needs an A4 node (capacity" in rolled.warning
    _, _, moved = day2(render_stack, tmp_path_factory, "prod", "zone-a", {"zones": ["us-central1-a"]})
    (every,) = [rollout for rollout in moved.rollouts if rollout.what.startswith("every serving pod moves")]
    assert every.seconds_per_pod == times.new_node


ZONES_BC = ["us-central1-b", "us-central1-c"]


def test_a_step_that_sets_fewer_pods_than_before_says_fewer(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A review: 3 -> 4 nodes with the wake step going from 3 to 2 said 'no more pods than before'."""
    old = render_with(
        render_stack,
        tmp_path_factory,
        "dev",
        "step-3",
        {"capacity": {"nodes": 3}, "schedule": {"businessHours": {"replicas": 3}}},
    )
    new = render_with(
        render_stack,
        tmp_path_factory,
        "dev",
        "step-2",
        {"capacity": {"nodes": 4}, "schedule": {"businessHours": {"replicas": 2}}},
    )
    result = preview_states(old.states, new.states)
    (owned,) = [rollout for rollout in result.rollouts if rollout.what.startswith("the scale schedule owns")]
    assert "1 fewer pod(s) at that step than it set before" in owned.what and owned.pods == 0


def test_a_step_that_sets_another_count_alone_says_when_the_pods_follow(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A review: a wake step's count changed with the program's replicas unchanged gave no rollout note, though the
    next wake starts a pod more."""
    settings = {"schedule": {"businessHours": {"replicas": 2}}}
    _, _, result = day2(render_stack, tmp_path_factory, "staging", "wake-two", settings)
    (step,) = [rollout for rollout in result.rollouts if "sets 2 pod(s) instead of 1" in rollout.what]
    assert "`pulumi up` leaves the running pods alone; at the step's next run, 1 more pod(s) than before" in step.what
    assert "the HPA (1..4) then moves the count within its bounds" in step.what
    assert step.pods == 1 and step.when == "at the step's next run after `pulumi up`"


def test_a_new_picker_template_says_its_pods_stop_together_and_requests_go_on_without_it(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A held-out day-2 check: new picker resources updated its Deployment with no rollout note, though under Recreate
    every picker pod stops before a new one starts, and the pool's FailOpen routes without it meanwhile."""
    settings = {"routing": {"gateway": {"eppCpu": "12", "eppMemory": "32Gi"}}}
    _, _, result = day2(render_stack, tmp_path_factory, "staging", "picker-cpu", settings)
    (picker,) = [rollout for rollout in result.rollouts if "Endpoint Picker" in rollout.what]
    assert "the Endpoint Picker's 2 pod(s) stop together, then new ones start (its strategy is Recreate" in picker.what
    assert "failureMode FailOpen" in picker.what and picker.pods == 0 and picker.source.startswith("not measured")
    _, _, engine_only = day2(render_stack, tmp_path_factory, "staging", "seqs", {"engine": {"maxNumSeqs": 64}})
    assert not [rollout for rollout in engine_only.rollouts if "Endpoint Picker" in rollout.what]


def test_a_picker_count_or_a_create_first_replacement_says_how_many_stop_and_when(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A review: fewer picker replicas said the new count stopped (1 of 2), and a picker replaced create-first (a
    renamed service) was said to stop before the new one starts."""
    _, _, fewer = day2(
        render_stack, tmp_path_factory, "staging", "one-picker", {"routing": {"gateway": {"eppReplicas": 1}}}
    )
    (picker,) = [rollout for rollout in fewer.rollouts if "Endpoint Picker" in rollout.what]
    assert picker.what.startswith("the Endpoint Picker's 2 pod(s) stop together")
    _, _, renamed = day2(render_stack, tmp_path_factory, "staging", "renamed", {"routing": {"serviceName": "qwen-two"}})
    (replaced,) = [rollout for rollout in renamed.rollouts if "Endpoint Picker" in rollout.what]
    assert replaced.what.startswith("the Endpoint Picker's Deployment is replaced create-first") and (
        "whose 2 pod(s) stop at the end of the update" in replaced.what
    )


def test_steps_among_several_say_the_count_they_set_not_pods_more_or_fewer(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A review: with several cron entries a step's new count was compared with its own old one ("3 more pods, each a
    new node"), though what runs when it fires is the step before it."""

    def entries(morning: int, lunch: int) -> dict[str, Any]:
        steps = [
            {"name": "morning", "cron": "0 8 * * 1-5", "replicas": morning},
            {"name": "lunch", "cron": "0 12 * * 1-5", "replicas": lunch},
            {"name": "night", "cron": "0 20 * * 1-5", "replicas": 0},
        ]
        return {"schedule": {"entries": steps}}

    before = render_with(render_stack, tmp_path_factory, "staging", "steps-before", entries(1, 1))
    after = render_with(render_stack, tmp_path_factory, "staging", "steps-after", entries(2, 3))
    result = preview_states(before.states, after.states)
    (lunch,) = [rollout for rollout in result.rollouts if "scale step serving-schedule-lunch" in rollout.what]
    assert "sets 3 pod(s) instead of 1" in lunch.what and "depends on the step that ran before it" in lunch.what
    assert lunch.pods == 0 and "more pod(s)" not in lunch.what


def test_a_roll_under_the_schedule_counts_the_pods_the_old_state_runs(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A day-2 tester: two nodes and a flag at once on dev read "2 pod(s) at most (the 0..2 running) ... 1 of 2 serve
    meanwhile", though the schedule owns the replicas (ignoreChanges): the one pod the old schedule runs rolls, and
    with maxUnavailable 1 nothing serves meanwhile."""
    _, _, result = day2(
        render_stack,
        tmp_path_factory,
        "dev",
        "nodes-2-seqs",
        {"capacity": {"nodes": 2}, "engine": {"maxNumSeqs": 4096}},
    )
    (rolled,) = [rollout for rollout in result.rollouts if rollout.what.startswith("the serving pods roll")]
    assert "1 pod(s) at most (the 0..1 running)" in rolled.what and "0 of 1 serve meanwhile" in rolled.what
    assert rolled.pods == 1


def test_a_reservation_row_says_the_reservation_is_billed_whatever_it_shows(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A day-2 tester: a reservation added read 9,155..38,383 after, the hours dev's schedule runs, though the
    reservation is billed all month, used or not (the stack does not know its size)."""
    sources = [{"type": "reservation", "name": "a4-res"}, {"type": "spot"}]
    _, _, result = day2(render_stack, tmp_path_factory, "dev", "reservation", {"capacity": {"sources": sources}})
    assert any(cost.pricing.startswith("reservation") for cost in result.costs)
    (priorities,) = [rollout for rollout in result.rollouts if "ComputeClass's new capacity" in rollout.what]
    assert "a reservation added is billed from its creation, used or not" in priorities.what
    text = changes_markdown(result)
    assert "The reservation is billed its size x 730 h a month" in text
    assert "those node-hours are a part of the reservation's own bill, not added to it" in text


@pytest.mark.parametrize(
    ("label", "settings", "owners"),
    [
        ("service-gw", {"routing": {"serviceName": "qwen-gw"}}, "the autoscaler or the schedule"),
        # a declared count that differs: the replacement is created at the old state's (ignoreChanges)
        (
            "service-gw-min2",
            {"routing": {"serviceName": "qwen-gw"}, "autoscaling": {"minReplicas": 2}},
            "the autoscaler or the schedule",
        ),
        (
            "service-gw-noscale",
            {"routing": {"serviceName": "qwen-gw"}, "autoscaling": {"enabled": False}},
            "the schedule",
        ),
    ],
)
def test_a_replaced_serving_deployment_says_what_serves_when_the_old_one_goes(
    label: str,
    settings: dict[str, Any],
    owners: str,
    render_stack: RenderStack,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """A day-2 tester, then a review: a renamed service on staging (HPA 1..4 and a schedule) said only "a second
    serving Deployment of 1 pod(s) starts beside the old one"; the replacement is created from the old state's count
    (ignoreChanges copies it into the update's inputs: pkg/resource/deploy/step_generator.go), and the old one's pods
    go at the end; what raises the count afterwards is what the new state has."""
    _, _, result = day2(render_stack, tmp_path_factory, "staging", label, settings)
    (replaced,) = [rollout for rollout in result.rollouts if "a second serving Deployment" in rollout.what]
    assert replaced.what.startswith("a second serving Deployment of 1 pod(s) starts beside the old one")
    assert "when the old one goes, serving may fall from 4 to 1 pod(s) until " in replaced.what
    assert f"until {owners} raises it" in replaced.what
    assert "ignoreChanges does not apply" not in replaced.what


def test_a_serving_deployment_deleted_first_says_nothing_serves_not_what_it_falls_to(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Deleted first, nothing serves until the new pods are up, created at the old state's count (minReplicas 2 is the
    HPA's; ignoreChanges keeps 1), and at an hour the old one ran none they still run and bill until the sleep step."""
    settings = {"cluster": {"name": "llm-serving-b"}, "autoscaling": {"minReplicas": 2}}
    _, _, result = day2(render_stack, tmp_path_factory, "staging", "cluster-b-min2", settings)
    (replaced,) = [rollout for rollout in result.rollouts if "the serving Deployment is deleted" in rollout.what]
    assert "nothing serves until its 1 new pod(s) are up" in replaced.what and "falls" not in replaced.what
    assert "run and bill until the schedule's next step that sets 0" in replaced.what


def test_a_roll_as_the_owners_go_counts_the_new_declared_pods(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """With the HPA and the schedule removed in the update that changes a flag, the provider sends the whole object,
    the new declared count with it: where the apply succeeds, those pods roll (a review; where an old owner still holds
    the field the apply fails, which the replicas-taken-back note says)."""
    settings = {
        "autoscaling": {"enabled": False},
        "schedule": {"enabled": False},
        "capacity": {"nodes": 2},
        "engine": {"maxNumSeqs": 4096},
    }
    _, _, result = day2(render_stack, tmp_path_factory, "staging", "owners-gone-seqs", settings)
    (rolled,) = [rollout for rollout in result.rollouts if rollout.what.startswith("the serving pods roll")]
    assert rolled.what.startswith("the serving pods roll: 2 pod(s), 1 at a time")
    assert any("Server-Side Apply field conflict" in rollout.what for rollout in result.rollouts)


def test_the_warning_and_the_rollout_count_the_same_replacement_pods(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A review: a renamed service with minReplicas 2 on staging warned "2 new pod(s) need 2 more A4 node(s)" while the
    rollout said 1: both now count what the replacement is created at (the old state's count, ignoreChanges)."""
    settings = {"routing": {"serviceName": "qwen-gw"}, "autoscaling": {"minReplicas": 2}}
    _, _, result = day2(render_stack, tmp_path_factory, "staging", "service-gw-min2", settings)
    (warning,) = [warning for warning in result.warnings if "replaced create-before-delete" in warning]
    assert "1 new pod(s) need 1 more A4 node(s)" in warning
    (replaced,) = [rollout for rollout in result.rollouts if "a second serving Deployment" in rollout.what]
    assert replaced.what.startswith("a second serving Deployment of 1 pod(s)")
    # created at an hour the old one ran none: the HPA raises the new one to its minimum, the sleep step stops it
    assert (
        "the new one's 1 pod(s), which the autoscaler raises to its minimum of 2 at its next sync, run and bill "
        in (replaced.what)
    )
    assert "until the schedule's next step that sets 0" in replaced.what
