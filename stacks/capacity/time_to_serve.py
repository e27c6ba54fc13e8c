"""Time to serve: how long a new serving replica takes from scale-up to ready, per stack (its profile, checkpoint,
disks and node count): the phases its planning figure rests on, each with the basis of its figure, and the schedule's
wake led by it. The report of every phase, a simultaneous wake and the goal (plan.md, capacity.json) is
commands/render/time_to_serve.py.

A figure is one of:
- measured: a published or recorded measurement of this configuration (today: the write-up's node ~5-6 min and pod
  ~10 min, for the recipe profile at the recipe's engine settings only);
- computed: arithmetic on the stack's own settings, its formula stated (checkpoint bytes over the disk throughput a
  node gets; image bytes over a pull rate the stack states);
- not measured: no figure, and how to measure it (the start-up report of the benchmark Job, docs/time-to-serve.md).

Where a number is still needed (alert durations, the schedule's lead, the scale-down window, the policy's bound) the
model gives a planning figure: the measured one, or else the recipe's measured figures plus the computed extra read
time of a larger checkpoint, labelled "assumed".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from common.cron import led_cron
from common.sources import WRITEUP_VLLM_RELEASE
from components.vllm import PROFILE_ENGINE_FIELDS, STARTUP_PROBE_SECONDS
from schemas.vllm_releases import image_release
from stacks.capacity import measurements as measurement_file
from stacks.capacity.measurements import SPANS, capture_setting
from stacks.config.profiles import DEFAULT_PROFILE, profile_of
from stacks.config.stack import StackConfig
from stacks.config.time_to_serve import RECIPE_NODE_SECONDS, RECIPE_NODE_SECONDS_MIN, RECIPE_POD_SECONDS, THE_WRITEUP

# "assumed": measured on another vLLM release than the stack's, and carried over to it.
Basis = Literal["measured", "assumed", "computed", "not measured", "held"]
MIB_PER_GIB = 1024
COLD = "a new replica on a new node"
REPORT = "the start-up report the benchmark Job prints (STARTUP_PHASES lines, docs/time-to-serve.md)"


@dataclass(frozen=True)
class Phase:
    """One start-up phase of a new replica."""

    key: str
    label: str
    seconds_min: float | None
    seconds_max: float | None
    basis: Basis
    source: str

    @property
    def known(self) -> bool:
        return self.seconds_max is not None


def checkpoint_mib(config: StackConfig) -> float | None:
    size = config.weights.checkpoint_gib
    return None if size is None else size * MIB_PER_GIB


def engine_differences(config: StackConfig) -> list[str]:
    """The engine keys where the stack differs from its profile's engine (its start-up may differ);
    the image counts by the release its tag names (a digest or a mirror is the same engine)."""
    keys = set(PROFILE_ENGINE_FIELDS) - {"image"}
    profile_engine = profile_of(config.profile).engine
    ours = config.engine.model_dump(mode="json", by_alias=True, include=keys)
    theirs = profile_engine.model_dump(mode="json", by_alias=True, include=keys)
    changed = [f"engine.{key}" for key in sorted(theirs) if ours[key] != theirs[key]]
    if image_release(config.engine.image) != image_release(profile_engine.image):
        changed.insert(0, "engine.image (another vLLM release)")
    if capture_setting(config, image_release(config.engine.image)) is not None:
        changed.append("engine.maxCudagraphCaptureSize (other CUDA graphs to capture)")
    extra = config.engine.model_dump(mode="json", by_alias=True, include={"extra_args", "extra_env"})
    changed += [f"engine.{key}" for key, value in sorted(extra.items()) if value]
    return changed


def pod_measurement_gap(config: StackConfig) -> str | None:
    """Why the write-up's pod ~10 min does not apply to this stack (None when it does)."""
    if config.profile != DEFAULT_PROFILE:
        return f"profile {config.profile.value} was not measured (the write-up measured {DEFAULT_PROFILE.value})"
    if not config.serves_profile_checkpoint:
        return f"the stack serves {config.weights.model}, not the recipe's {config.serving_profile.checkpoint.model}"
    changed = engine_differences(config)
    if changed:
        return f"the stack's engine differs from the recipe's measured one in {', '.join(changed)}"
    ranks = config.engine.data_parallel_size
    if config.serves_per_rank and ranks > 1:
        return (
            f"the Gateway's pod runs its {ranks} data-parallel engines in a container each (a server per rank, "
            "components/vllm.py), where the write-up ran them in one container: not measured in this layout"
        )
    return None


def weights_phase(config: StackConfig) -> Phase:
    size = checkpoint_mib(config)
    disk = config.serving_throughput_mibps
    if size is None:
        return Phase(
            "weightsRead",
            "read the checkpoint from the disk",
            None,
            None,
            "not measured",
            "the checkpoint's size is not known (set weights.checkpointGib); measure with " + REPORT,
        )
    seconds = size / disk
    return Phase(
        "weightsRead",
        "read the checkpoint from the disk",
        seconds,
        seconds,
        "computed",
        f"{config.weights.checkpoint_gib} GiB / {disk:,} MiB/s provisioned on the zone's Hyperdisk ML, one node "
        "reading; assumes the node's page cache serves the other engines and the VM's own Hyperdisk limit is not "
        "lower (not verified for a4-highgpu-8g)",
    )


def node_phase(config: StackConfig, held: bool = False) -> Phase:
    if held:
        return Phase("node", "provision an A4 node", 0, 0, "held", "a held node (capacity buffer) is already up")
    # The node is the ComputeClass's a4-highgpu-8g whatever the model: the write-up's node time holds for any
    # profile (serving another model, it is the pod phase that was not measured).
    served = "" if config.profile == DEFAULT_PROFILE else f", serving {DEFAULT_PROFILE.value} on the same A4 node"
    return Phase(
        "node",
        "provision an A4 node",
        RECIPE_NODE_SECONDS_MIN,
        RECIPE_NODE_SECONDS,
        "measured",
        f"{THE_WRITEUP}: ~5-6 min on Autopilot{served}, on capacity of a kind it does not name; a Spot or Flex-start "
        "request waits longer when the zone has none free, not measured",
    )


def pod_phase(gap: str | None, release: str | None) -> Phase:
    if gap is None:
        measured = release == WRITEUP_VLLM_RELEASE
        carried = (
            ""
            if measured
            else f", on vLLM {WRITEUP_VLLM_RELEASE}; carried over to {release}: assumed, not measured on {release}"
        )
        return Phase(
            "pod",
            "pod: scheduled to ready",
            RECIPE_POD_SECONDS,
            RECIPE_POD_SECONDS,
            "measured" if measured else "assumed",
            f"{THE_WRITEUP}: ~10 min for image pull, model load, compile and CUDA graph capture{carried}",
        )
    return Phase(
        "pod", "pod: scheduled to ready", None, None, "not measured", f"{gap}; measure with {REPORT} (readySeconds)"
    )


def image_pull_seconds(config: StackConfig) -> float | None:
    """The engine image's pull as the stack states it (timeToServe.imageGib over imagePullMibps), or None."""
    size, rate = config.time_to_serve.image_gib, config.time_to_serve.image_pull_mibps
    return None if size is None or rate is None else size * MIB_PER_GIB / rate


RECORDED = "recorded measurement"


def pod_with_pull(config: StackConfig, pod: Phase) -> Phase:
    """The pod phase held against the stated pull, unless a recorded cold start (`recorded_phases`) measured it."""
    measured = pod.source.startswith(RECORDED)
    return pod if measured else pod_holding_pull(pod, image_pull_seconds(config))


def pod_holding_pull(pod: Phase, pull_seconds: float | None) -> Phase:
    """The pod phase, which holds the image pull: a longer stated pull makes it [pull, pull + the phase's figure]."""
    if pull_seconds is None or pod.seconds_max is None or pull_seconds <= pod.seconds_max:
        return pod
    return replace(
        pod,
        seconds_min=pull_seconds,
        seconds_max=pull_seconds + pod.seconds_max,
        basis="assumed" if pod.basis == "assumed" else "computed",
        source=f"at least the computed image pull ({pull_seconds / 60:,.1f} min), which is longer than the "
        f"{pod.seconds_max / 60:,.1f} min pod phase that holds it ({pod.basis}: {pod.source}); at most that pull "
        "plus all of that phase",
    )


def total_phase(node: Phase, pod: Phase, label: str) -> Phase:
    if not (node.known and pod.known):
        unknown = node if not node.known else pod
        return Phase("total", label, None, None, "not measured", f"its {unknown.key} phase is not measured")
    assert node.seconds_min is not None and node.seconds_max is not None
    assert pod.seconds_min is not None and pod.seconds_max is not None
    # A sum of phases is computed, also when every phase in it was measured: no run measured the sum; a sum
    # with an assumed phase in it is as assumed as that phase.
    assumed = [phase.key for phase in (node, pod) if phase.basis == "assumed"]
    if node.basis == "held":
        return replace(
            pod,
            key="total",
            label=label,
            source="the pod phase alone: a held node is up"
            + (", its pod phase measured on another vLLM release" if assumed else ""),
        )
    return Phase(
        "total",
        label,
        node.seconds_min + pod.seconds_min,
        node.seconds_max + pod.seconds_max,
        "assumed" if assumed else "computed",
        "the sum of the node and pod phases"
        + (f", its {' and '.join(assumed)} phase measured on another vLLM release" if assumed else ""),
    )


def _extra_read_seconds(config: StackConfig, weights: Phase) -> float:
    """How much longer than the recipe's checkpoint this stack's takes to read (0 when not longer or not known)."""
    recipe_read = profile_of(DEFAULT_PROFILE).checkpoint.size_gib * MIB_PER_GIB / config.serving_throughput_mibps
    return 0.0 if weights.seconds_max is None else max(0.0, weights.seconds_max - recipe_read)


def _more_to_read(extra: float) -> str:
    return f" plus ~{extra:,.0f} s more checkpoint to read" if extra >= 1 else ""


def _recipe_pod_holding_pull(config: StackConfig) -> tuple[int, str]:
    """The recipe's measured pod figure where a stack's own pod phase is not known, held against the stated image
    pull as `pod_holding_pull` holds a phase: a longer pull comes before all of it (and what that adds, as words)."""
    pull = image_pull_seconds(config)
    recipe = pod_phase(None, WRITEUP_VLLM_RELEASE)
    held = pod_holding_pull(recipe, pull)
    if held is recipe or pull is None or held.seconds_max is None:
        return RECIPE_POD_SECONDS, ""
    return round(held.seconds_max), (
        f", after the computed image pull ({pull / 60:,.1f} min), which is longer than that pod phase that holds it"
    )


def planning(config: StackConfig, cold: Phase, weights: Phase) -> tuple[int, str]:
    """The planning figure of a new replica's start-up and its basis: the cold total where known, else
    the recipe's measured figures plus the computed extra read time of a larger checkpoint."""
    if cold.known:
        assert cold.seconds_max is not None
        return round(cold.seconds_max), f"{cold.basis} ({cold.source})"
    extra = _extra_read_seconds(config, weights)
    pod, pulled = _recipe_pod_holding_pull(config)
    seconds = RECIPE_NODE_SECONDS + pod + round(extra)
    return seconds, (
        f"assumed, not measured: the recipe's measured node ~6 min + pod ~10 min ({THE_WRITEUP}){pulled}"
        f"{_more_to_read(extra)}"
    )


def held_planning(config: StackConfig, held: Phase, weights: Phase) -> tuple[int, str]:
    """The planning figure of a new replica on a held node (no node phase) and its basis, as `planning`:
    the held total where known, else the recipe's measured pod figure plus the extra read time."""
    if held.known:
        assert held.seconds_max is not None
        return round(held.seconds_max), f"{held.basis} ({held.source})"
    extra = _extra_read_seconds(config, weights)
    pod, pulled = _recipe_pod_holding_pull(config)
    seconds = pod + round(extra)
    return seconds, (
        f"assumed, not measured: the recipe's measured pod ~10 min ({THE_WRITEUP}){pulled}{_more_to_read(extra)}"
    )


# Fields of a measured configuration that change the load a benchmark puts on the pods, not their start-up.
LOAD_FIELDS = frozenset(
    {"dataset", "input_tokens", "output_tokens", "range_ratio", "ignore_eos", "concurrency_per_node"}
    | {"max_prompt_tokens", "max_output_tokens", "routing", "picker"}
)


# Of those, the ones a start-up report holds for any value: the routing is not one, since the Gateway's pod
# runs a container per data-parallel rank where ClusterIP routing runs one (`pod_measurement_gap`).
STARTUP_AGNOSTIC_FIELDS = LOAD_FIELDS - {"routing"}


def startup_reports(
    config: StackConfig, recorded: Sequence[measurement_file.Measurement] | None = None
) -> list[tuple[measurement_file.Measurement, measurement_file.StartupPhases]]:
    """The measurements with a start-up report of this stack's engine and routing (load aside), whatever its
    conditions, in the file's order; none when the stack's configuration is not wholly known."""
    mine = measurement_file.configuration_of(config).model_dump(exclude=set(STARTUP_AGNOSTIC_FIELDS))
    if measurement_file.UNKNOWN in mine.values():
        return []
    items = recorded if recorded is not None else measurement_file.load().measurements
    same = (item for item in items if item.configuration.model_dump(exclude=set(STARTUP_AGNOSTIC_FIELDS)) == mine)
    return [(item, item.startup) for item in same if item.startup is not None]


def recorded_startup(
    config: StackConfig, recorded: Sequence[measurement_file.Measurement] | None = None
) -> measurement_file.Measurement | None:
    """The newest start-up report of this stack's engine, routing and start-up conditions (load aside), cold first."""
    conditions = measurement_file.startup_conditions(config)
    found = [
        (bool(startup.cold_pods), item.date, index, item)
        for index, (item, startup) in enumerate(startup_reports(config, recorded))
        if startup.conditions == conditions
    ]
    # a cold start first: a later re-run against running pods times only the engine, and would hide it
    return max(found, key=lambda entry: entry[:3])[3] if found else None


def _difference(median: dict[str, float], late: str, early: str | None) -> float | None:
    if late not in median or (early is not None and early not in median):
        return None
    return max(0.0, median[late] - (median[early] if early is not None else 0.0))


SPAN_OF_EACH_POD = "median of each pod's span"
NO_SPAN = "difference of the phases' medians (no pod's own span recorded)"


def recorded_spans(startup: measurement_file.StartupPhases) -> dict[str, tuple[float | None, str]]:
    """Each planner phase's figure in a start-up report and how it was taken: the median of each pod's own span, else
    (a report recorded before spans were kept, or none of its pods had both ends) the difference of the medians."""
    spans = startup.median_span_seconds or {}
    return {
        key: (spans[key], SPAN_OF_EACH_POD) if key in spans else (_difference(startup.median_seconds, *ends), NO_SPAN)
        for key, ends in SPANS.items()
    }


def _report_source(entry: measurement_file.Measurement) -> str:
    assert entry.startup is not None
    cold = entry.startup.cold_pods
    pods = f"{cold} pod(s) on a node made for it, the image pulled" if cold else f"{entry.startup.pods} pod(s)"
    return f"{RECORDED} {entry.id} ({entry.date}), start-up report of {pods}"


def recorded_phases(phases: tuple[Phase, ...], entry: measurement_file.Measurement) -> tuple[Phase, ...]:
    """The phases with a recorded start-up report's figures: node, image and pod from cold pods, engine from them too
    where there are any, else from every pod."""
    assert entry.startup is not None
    spans = recorded_spans(entry.startup)
    spans = spans if entry.startup.cold_pods else {"engineStart": spans["engineStart"]}
    source = _report_source(entry)

    def measured(phase: Phase) -> Phase:
        seconds, how = spans.get(phase.key, (None, ""))
        if seconds is None:
            return phase
        return replace(phase, seconds_min=seconds, seconds_max=seconds, basis="measured", source=f"{source}: {how}")

    return tuple(map(measured, phases))


def cold_total(node: Phase, pod: Phase, entry: measurement_file.Measurement | None) -> Phase:
    """A new replica's cold total: where a recorded report measured both its phases, the median of each cold pod's
    time from its creation to ready (a sum of two medians is no pod's: pods ready at 1100, 900 and 1000 s, bound at
    300, 400 and 500, make 400 + 500), else the sum of the phases (`total_phase`)."""
    startup = entry.startup if entry is not None else None
    ready = startup.median_seconds.get("readySeconds") if startup and startup.cold_pods else None
    if entry is None or ready is None or not (node.source.startswith(RECORDED) and pod.source.startswith(RECORDED)):
        return total_phase(node, pod, COLD)
    source = f"{_report_source(entry)}: median of each pod's time from its creation to ready"
    ready = max(ready, pod.seconds_max or 0.0)  # the pods timed from scheduled may be others than those from creation
    return Phase("total", COLD, ready, ready, "measured", source)


def _node_and_pod(config: StackConfig) -> tuple[Phase, Phase]:
    """The node and pod phases of a new replica: a recorded start-up report of the stack's configuration
    first, else the write-up's figures where they apply."""
    node = node_phase(config)
    pod = pod_phase(pod_measurement_gap(config), image_release(config.engine.image))
    entry = recorded_startup(config)
    if entry is not None:
        node, pod = recorded_phases((node, pod), entry)
    return node, pod_with_pull(config, pod)


def planning_figure(config: StackConfig) -> tuple[int, str]:
    """The planning figure of a new replica of this stack (alert durations, the schedule's lead, the
    scale-down window) and its basis: from a recorded start-up report of its configuration first, else
    the write-up's figures where they apply (the report of every phase: commands/render/time_to_serve.py)."""
    node, pod = _node_and_pod(config)
    return planning(config, cold_total(node, pod, recorded_startup(config)), weights_phase(config))


def planning_seconds(config: StackConfig) -> int:
    """The planning figure alone (`planning_figure`)."""
    return planning_figure(config)[0]


def held_planning_seconds(config: StackConfig) -> int:
    """The planning figure of a new replica on a held node (`held_planning`), from a recorded start-up
    report of the stack's configuration first, as `planning_figure`."""
    _, pod = _node_and_pod(config)
    held = total_phase(node_phase(config, held=True), pod, "a new replica on a held node")
    return held_planning(config, held, weights_phase(config))[0]


def _read_together(config: StackConfig, pods: int) -> float:
    """What a checkpoint larger than the recipe's adds to one pod's read when `pods` pods read one zone's disk at
    the same time (the recipe's own pods were measured as they started)."""
    size, recipe = checkpoint_mib(config), profile_of(DEFAULT_PROFILE).checkpoint.size_gib * MIB_PER_GIB
    return 0.0 if size is None else max(0.0, size - recipe) * pods / config.serving_throughput_mibps


def wake_planning_seconds(config: StackConfig, pods: int) -> int:
    """The planning figure of `pods` pods starting at once (business hours' wake step, a fleet restart): one
    replica's, plus what the others on its zone's disk add by reading the checkpoint at the same time (spread evenly
    over the zones, as plan.md's simultaneous wake; the planning figure holds one pod's own read)."""
    return planning_seconds(config) + round(_read_together(config, math.ceil(pods / len(config.zones)) - 1))


def wake_lead_seconds(config: StackConfig) -> int:
    """How early business hours wake: schedule.wakeLeadSeconds, else the time to serve of the wake step's pods."""
    wake = max((replicas for name, _, replicas in config.schedule_steps() if name == "wake"), default=1)
    given = config.schedule.wake_lead_seconds
    return given if given is not None else wake_planning_seconds(config, wake)


def startup_probe_seconds(config: StackConfig) -> int:
    """How long a pod may take to answer /health: the recipe's 30 min (3x its measured ~10 min pod phase), or 3x the
    stack's pod phase plus what a larger checkpoint adds to a simultaneous wake's read (every node reading its zone's
    disk at once, as after a fleet restart; all of them on one zone's disk, as nothing spreads them), whichever is
    longer: a probe that gives up restarts the load. The pod phase is a recorded start-up report of the stack's
    configuration, whose pod read its checkpoint itself (the others' reads are added), else the write-up's; never less
    than its slowest pod's time from scheduled to ready (which holds the probe's, from the container's start). In
    whole half hours: each new value rolls every pod (a node added to 12 had rolled them all, 2-3 h)."""
    entry = recorded_startup(config)
    startup = entry.startup if entry is not None and entry.startup is not None and entry.startup.cold_pods else None
    pod = recorded_spans(startup)["pod"][0] if startup is not None else None
    slowest = (startup.max_span_seconds or {}).get("pod", 0.0) if startup is not None and pod is not None else 0.0
    pod, readers = (RECIPE_POD_SECONDS, config.max_replicas) if pod is None else (pod, config.max_replicas - 1)
    read = _read_together(config, readers)
    return STARTUP_PROBE_SECONDS * (math.ceil(max(3 * (pod + read), slowest + read) / STARTUP_PROBE_SECONDS) or 1)


def led_schedule_steps(config: StackConfig) -> list[tuple[str, str, int]]:
    """The schedule's (name, cron, replicas) steps with business hours' wake moved earlier by the
    lead, so that pods serve when the window opens (cron entries as written)."""
    schedule = config.schedule
    steps = config.schedule_steps()
    if schedule.entries or schedule.business_hours is None:
        return steps
    lead = wake_lead_seconds(config)
    return [
        (name, led_cron(cron, lead) if name == "wake" and lead else cron, replicas) for name, cron, replicas in steps
    ]
