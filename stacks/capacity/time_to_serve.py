"""Time to serve: how long a new serving replica takes from scale-up to ready, phase by phase, per
stack (its profile, checkpoint, disks and node count), with the basis of every figure.

A figure is one of:
- measured: a published or recorded measurement of this configuration (today: the write-up's node
  ~5-6 min and pod ~10 min, for the recipe profile at the recipe's engine settings only);
- computed: arithmetic on the stack's own settings, its formula stated (checkpoint bytes over the
  disk throughput a node gets; image bytes over a pull rate the stack states);
- not measured: no figure, and how to measure it (the start-up report of the benchmark Job,
  docs/time-to-serve.md).

Where a number is still needed (alert durations, the schedule's lead, the scale-down window, the
policy's bound) the model gives a planning figure: the measured one, or else the recipe's measured
figures plus the computed extra read time of a larger checkpoint, labelled "assumed".

Inputs other work feeds (StartupInputs): the image size and pull rate (a registry mirror, image
streaming or an image cache lower them), and whether a node is held (warm capacity: no node phase).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

from common.sources import WRITEUP_VLLM_RELEASE
from stacks.capacity import measurements as measurement_file
from stacks.capacity.measurements import capture_setting
from stacks.config.engine import capture_size
from stacks.config.profiles import DEFAULT_PROFILE, PROFILE_ENGINE_KEYS, profile_of
from stacks.config.releases import image_release
from stacks.config.stack import StackConfig
from stacks.config.time_to_serve import (
    GOAL_POD_SECONDS,
    HYPERDISK_ML_MAX_MIBPS,
    RECIPE_NODE_SECONDS,
    RECIPE_NODE_SECONDS_MIN,
    RECIPE_POD_SECONDS,
    WRITEUP,
)

Basis = Literal["measured", "computed", "not measured", "held"]
MIB_PER_GIB = 1024
REPORT = "the start-up report the benchmark Job prints (STARTUP_PHASES lines, docs/time-to-serve.md)"
GOAL_SOURCES = (
    "GKE image streaming (GKE docs 'Use Image streaming to pull container images': the container starts "
    "before the whole image is pulled)",
    "a registry mirror in the cluster's region (Artifact Registry remote repositories) instead of Docker Hub "
    "through one NAT address",
    "vLLM's compile cache reused by later pods (vllm-project/vllm v0.19.0 vllm/compilation/backends.py: compiled "
    "graphs are kept under VLLM_CACHE_ROOT/torch_compile_cache/<hash of the configuration> and loaded directly on "
    "the next start)",
    "Google's inference reference architecture (GoogleCloudPlatform/accelerated-platforms, the vLLM fast-start "
    "guide): 168-433 s from pod scheduled to ready, weights streamed at about 1.2 GiB/s per engine",
    "a held node (GKE 'Configure capacity buffers': a CapacityBuffer keeps spare nodes, so a new replica skips "
    "node provisioning)",
)


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


@dataclass(frozen=True)
class StartupInputs:
    """What the start-up is computed from, besides the checkpoint and its disk: the engine image
    (its compressed size and the rate a node pulls it at, both unknown by default) and whether a new
    replica lands on a node the stack holds. Image streaming, a registry mirror or an image cache
    change these; each must say where its figure comes from."""

    image_gib: float | None = None
    image_pull_mibps: float | None = None
    image_basis: str = ""
    held_node: bool = False


@dataclass(frozen=True)
class WakeRead:
    """Every node waking at once (a schedule's wake, a fleet restart) reading the checkpoint from its
    zone's disk: the disk's provisioned throughput is shared by the nodes reading it."""

    nodes: int
    zones: int
    nodes_per_disk: int
    disk_mibps: int
    per_node_mibps: float
    seconds: float | None
    bound_seconds: int
    sized_from_target: int | None
    warning: str | None


@dataclass(frozen=True)
class TimeToServe:
    profile: str
    phases: tuple[Phase, ...]
    cold: Phase
    held: Phase
    planning_seconds: int
    planning_basis: str
    wake: WakeRead | None
    goal_pod_seconds: int
    goal_sources: tuple[str, ...]
    notes: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def checkpoint_mib(config: StackConfig) -> float | None:
    size = config.weights.checkpoint_gib
    return None if size is None else size * MIB_PER_GIB


def engine_differences(config: StackConfig) -> list[str]:
    """The engine keys where the stack differs from its profile's engine (its start-up may differ);
    the image counts by the release its tag names (a digest or a mirror is the same engine)."""
    keys = set(PROFILE_ENGINE_KEYS) - {"image"}
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
    return None


def _seconds(mib: float, mibps: float) -> float:
    return mib / mibps


def _weights_phase(config: StackConfig) -> Phase:
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
    seconds = _seconds(size, disk)
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


def _image_phase(inputs: StartupInputs) -> Phase:
    if inputs.image_gib is None or inputs.image_pull_mibps is None:
        return Phase(
            "imagePull",
            "pull the engine image",
            None,
            None,
            "not measured",
            "image size and pull rate not known (timeToServe.imageGib and imagePullMibps); measure with " + REPORT,
        )
    seconds = _seconds(inputs.image_gib * MIB_PER_GIB, inputs.image_pull_mibps)
    basis = inputs.image_basis or "timeToServe.imageGib / timeToServe.imagePullMibps"
    return Phase(
        "imagePull",
        "pull the engine image",
        seconds,
        seconds,
        "computed",
        f"{inputs.image_gib:g} GiB / {inputs.image_pull_mibps:g} MiB/s ({basis})",
    )


def _node_phase(config: StackConfig, inputs: StartupInputs) -> Phase:
    if inputs.held_node:
        return Phase("node", "provision an A4 node", 0, 0, "held", "a held node (capacity buffer) is already up")
    if config.profile == DEFAULT_PROFILE:
        return Phase(
            "node",
            "provision an A4 node",
            RECIPE_NODE_SECONDS_MIN,
            RECIPE_NODE_SECONDS,
            "measured",
            f"{WRITEUP}: ~5-6 min on Autopilot",
        )
    return Phase(
        "node",
        "provision an A4 node",
        None,
        None,
        "not measured",
        f"not measured for profile {config.profile.value} ({WRITEUP} measured ~5-6 min serving "
        f"{DEFAULT_PROFILE.value}); measure with {REPORT} (scheduledSeconds of a scale-from-zero)",
    )


def _engine_phase(gap: str | None) -> Phase:
    return Phase(
        "engineStart",
        "load weights to the GPUs, torch.compile, CUDA graph capture",
        None,
        None,
        "not measured",
        "no breakdown published"
        + ("" if gap is None else f"; {gap}")
        + "; measure with "
        + REPORT
        + " (weightsLoadedSeconds, compiledSeconds, graphsCapturedSeconds)",
    )


def _pod_phase(gap: str | None, release: str | None) -> Phase:
    if gap is None:
        carried = (
            ""
            if release == WRITEUP_VLLM_RELEASE
            else f", on vLLM {WRITEUP_VLLM_RELEASE}; carried over to {release}: assumed, not measured on {release}"
        )
        return Phase(
            "pod",
            "pod: scheduled to ready",
            RECIPE_POD_SECONDS,
            RECIPE_POD_SECONDS,
            "measured",
            f"{WRITEUP}: ~10 min for image pull, model load, compile and CUDA graph capture{carried}",
        )
    return Phase(
        "pod", "pod: scheduled to ready", None, None, "not measured", f"{gap}; measure with {REPORT} (readySeconds)"
    )


def _total(node: Phase, pod: Phase, label: str) -> Phase:
    if not (node.known and pod.known):
        unknown = node if not node.known else pod
        return Phase("total", label, None, None, "not measured", f"its {unknown.key} phase is not measured")
    assert node.seconds_min is not None and node.seconds_max is not None
    assert pod.seconds_min is not None and pod.seconds_max is not None
    # A sum of phases is computed, also when every phase in it was measured: no run measured the sum.
    return Phase(
        "total",
        label,
        node.seconds_min + pod.seconds_min,
        node.seconds_max + pod.seconds_max,
        "computed",
        "the sum of the node and pod phases above",
    )


def wake_read(config: StackConfig) -> WakeRead | None:
    size = checkpoint_mib(config)
    if size is None:
        return None
    nodes, zones = config.max_replicas, len(config.zones)
    per_disk = config.nodes_per_disk
    disk = config.serving_throughput_mibps
    per_node = disk / per_disk
    seconds = _seconds(size, per_node)
    bound = config.time_to_serve.weights_read_bound_seconds
    target = config.weights.target_load_seconds
    warning = None
    if seconds > bound:
        warning = (
            f"{per_disk} node(s) waking at once share {disk:,} MiB/s of their zone's disk and read the "
            f"{config.weights.checkpoint_gib} GiB checkpoint in ~{seconds:,.0f} s, over timeToServe."
            f"weightsReadBoundSeconds {bound}"
        )
        if disk >= HYPERDISK_ML_MAX_MIBPS:
            warning += f"; the disk is at Hyperdisk ML's maximum {HYPERDISK_ML_MAX_MIBPS:,} MiB/s: add a zone"
        else:
            needed = per_disk * size / bound
            warning += f"; about {needed:,.0f} MiB/s per disk (or weights.targetLoadSeconds: {bound}) would meet it"
    return WakeRead(
        nodes=nodes,
        zones=zones,
        nodes_per_disk=per_disk,
        disk_mibps=disk,
        per_node_mibps=per_node,
        seconds=seconds,
        bound_seconds=bound,
        sized_from_target=target,
        warning=warning,
    )


def _planning(config: StackConfig, cold: Phase, weights: Phase) -> tuple[int, str]:
    if cold.known:
        assert cold.seconds_max is not None
        return round(cold.seconds_max), "computed (the sum of the node and pod phases above)"
    recipe_read = profile_of(DEFAULT_PROFILE).checkpoint.size_gib * MIB_PER_GIB / config.weights.throughput_mibps
    extra = 0.0
    if weights.seconds_max is not None:
        extra = max(0.0, weights.seconds_max - recipe_read)
    seconds = RECIPE_NODE_SECONDS + RECIPE_POD_SECONDS + round(extra)
    return seconds, (
        f"assumed, not measured: the recipe's measured node ~6 min + pod ~10 min ({WRITEUP})"
        + (f" plus ~{extra:,.0f} s more checkpoint to read" if extra >= 1 else "")
    )


# Fields of a measured configuration that change the load a benchmark puts on the pods, not their start-up.
LOAD_FIELDS = frozenset(
    {
        "dataset",
        "input_tokens",
        "output_tokens",
        "range_ratio",
        "ignore_eos",
        "concurrency_per_node",
        "max_prompt_tokens",
        "max_output_tokens",
        "routing",
        "picker",
    }
)


def recorded_startup(
    config: StackConfig, recorded: Sequence[measurement_file.Measurement] | None = None
) -> measurement_file.Measurement | None:
    """The newest measurement holding a start-up report of this stack's engine configuration (the
    benchmark's load and the routing aside), if any."""
    mine = measurement_file.configuration_of(config).model_dump(exclude=set(LOAD_FIELDS))
    if measurement_file.UNKNOWN in mine.values():
        return None
    items = recorded if recorded is not None else measurement_file.load().measurements
    found = [
        (item.date, index, item)
        for index, item in enumerate(items)
        if item.startup is not None and item.configuration.model_dump(exclude=set(LOAD_FIELDS)) == mine
    ]
    return max(found, key=lambda entry: entry[:2])[2] if found else None


def _difference(median: dict[str, float], late: str, early: str | None) -> float | None:
    if late not in median or (early is not None and early not in median):
        return None
    return max(0.0, median[late] - (median[early] if early is not None else 0.0))


def _recorded_phases(phases: tuple[Phase, ...], entry: measurement_file.Measurement) -> tuple[Phase, ...]:
    """The phases with the recorded start-up report's medians where it has them."""
    assert entry.startup is not None
    median = entry.startup.median_seconds
    spans = {
        "node": _difference(median, "scheduledSeconds", None),
        "imagePull": _difference(median, "imagePulledSeconds", "scheduledSeconds"),
        "engineStart": _difference(median, "engineReadySeconds", "containerStartedSeconds"),
        "pod": _difference(median, "readySeconds", "scheduledSeconds"),
    }
    source = f"recorded measurement {entry.id} ({entry.date}): median of {entry.startup.pods} pod(s)' start-up report"
    return tuple(
        replace(phase, seconds_min=spans[phase.key], seconds_max=spans[phase.key], basis="measured", source=source)
        if spans.get(phase.key) is not None
        else phase
        for phase in phases
    )


def startup_notes(config: StackConfig) -> tuple[str, ...]:
    """What this stack's start-up settings (startup.*, engine.maxCudagraphCaptureSize) change, and that
    no saving of theirs is measured yet."""
    notes = []
    if config.startup.image_mirror.enabled:
        streaming = (
            "streamed by GKE image streaming where the cluster's owner met its requirements (docs/existing-cluster.md)"
            if config.cluster.existing
            else "streamed by GKE image streaming, whose requirements the stack meets (policy LLM-GKE-005)"
        )
        notes.append(
            f"image pull: from the stack's Artifact Registry remote repository of Docker Hub in {config.region} "
            f"(by digest, IfNotPresent), {streaming}; the write-up's pod figure was measured pulling from Docker "
            "Hub. Saving not measured: imagePulledSeconds of " + REPORT
        )
    else:
        notes.append("image pull: from the upstream registries (startup.imageMirror off)")
    if config.startup.compile_cache.enabled:
        notes.append(
            "compile: the first pod of this configuration writes torch.compile, Triton and FlashInfer artifacts to "
            "the shared compile cache, later pods load them (vllm/compilation/backends.py keeps compiled graphs "
            "under VLLM_CACHE_ROOT/torch_compile_cache/<hash>). Saving not measured: compiledSeconds of " + REPORT
        )
    size = config.engine.max_cudagraph_capture_size
    if size is not None:
        notes.append(
            f"CUDA graphs: captured up to {capture_size(config.engine, config.workload.concurrency_per_node)} tokens "
            f"(engine.maxCudagraphCaptureSize {size}). Saving not measured: graphsCapturedSeconds of " + REPORT
        )
    return tuple(notes)


def time_to_serve(
    config: StackConfig,
    inputs: StartupInputs | None = None,
    recorded: Sequence[measurement_file.Measurement] | None = None,
) -> TimeToServe:
    """The time to serve of one new replica of this stack, per phase, cold and on a held node: a
    recorded start-up report of its configuration first, else the write-up's figures where they apply."""
    inputs = inputs or StartupInputs(
        image_gib=config.time_to_serve.image_gib, image_pull_mibps=config.time_to_serve.image_pull_mibps
    )
    gap = pod_measurement_gap(config)
    node = _node_phase(config, StartupInputs())
    weights = _weights_phase(config)
    pod = _pod_phase(gap, image_release(config.engine.image))
    phases: tuple[Phase, ...] = (node, _image_phase(inputs), weights, _engine_phase(gap), pod)
    entry = recorded_startup(config, recorded)
    if entry is not None:
        phases = _recorded_phases(phases, entry)
        node, pod = phases[0], phases[-1]
    cold = _total(node, pod, "a new replica on a new node")
    held = _total(_node_phase(config, StartupInputs(held_node=True)), pod, "a new replica on a held node")
    planning, planning_basis = _planning(config, cold, weights)
    return TimeToServe(
        profile=config.profile.value,
        phases=phases,
        cold=cold,
        held=held,
        planning_seconds=planning,
        planning_basis=planning_basis,
        wake=wake_read(config),
        goal_pod_seconds=GOAL_POD_SECONDS,
        goal_sources=GOAL_SOURCES,
        notes=startup_notes(config),
    )


def wake_lead_seconds(config: StackConfig) -> int:
    """How early business hours wake: schedule.wakeLeadSeconds, else the stack's time to serve."""
    given = config.schedule.wake_lead_seconds
    return given if given is not None else time_to_serve(config).planning_seconds


def led_cron(cron: str, lead_seconds: int) -> str:
    """A business-hours cron (`M H * * DAYS`) fired `lead_seconds` earlier (whole minutes, rounded
    up); before midnight it fires on the day before each day."""
    minute, hour, _, _, days = cron.split()
    start = int(hour) * 60 + int(minute) - math.ceil(lead_seconds / 60)
    shift = 1 if start < 0 else 0
    start %= 24 * 60
    weekdays = sorted({(int(day) - shift) % 7 for day in days.split(",")})
    return f"{start % 60} {start // 60} * * {','.join(str(day) for day in weekdays)}"


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
