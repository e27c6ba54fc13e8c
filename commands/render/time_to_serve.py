"""A new replica's time to serve as plan.md and capacity.json report it: every start-up phase with
the basis of its figure (stacks/capacity/time_to_serve.py holds the phases the stack's planning
figure rests on), cold and on a held node, every node waking at once, what the stack's start-up
settings change, and the goal with what each saving rests on.

Inputs other work feeds (StartupInputs): the image size and pull rate (a registry mirror, image
streaming or an image cache lower them); a replica on a held node (warm capacity) has no node phase.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from components.capacity import FLEX_START
from components.vllm import STARTUP_PROBE_SECONDS
from schemas.vllm_releases import image_release
from stacks.capacity.measurements import Measurement
from stacks.capacity.time_to_serve import (
    MIB_PER_GIB,
    REPORT,
    Phase,
    checkpoint_mib,
    cold_total,
    held_planning,
    node_phase,
    planning,
    pod_measurement_gap,
    pod_phase,
    pod_with_pull,
    recorded_phases,
    recorded_startup,
    startup_probe_seconds,
    startup_reports,
    total_phase,
    weights_phase,
)
from stacks.config.engine import capture_size
from stacks.config.stack import StackConfig
from stacks.config.time_to_serve import GOAL_POD_SECONDS, HYPERDISK_ML_MAX_MIBPS

# Read in the releases' own wheels: vllm/compilation/backends.py keeps compiled graphs under
# VLLM_CACHE_ROOT/torch_compile_cache/<hash_key>/rank_<rank>_<dp_rank> in 0.19.0 (line 1025) and 0.33.0 (line 1096).
COMPILE_CACHE_READ_IN = ("0.19.0", "0.33.0")
COMPILE_CACHE_SOURCE = (
    "vLLM's compile cache reused by later pods (vLLM v{release} vllm/compilation/backends.py, "
    "https://github.com/vllm-project/vllm/blob/v{release}/vllm/compilation/backends.py: compiled "
    "graphs are kept under VLLM_CACHE_ROOT/torch_compile_cache/<hash of the configuration> and loaded directly on "
    "the next start{unread}; CUDA graphs are captured again)"
)
IMAGE_STREAMING_SOURCE = (
    "GKE image streaming (GKE docs 'Use Image streaming to pull container images', "
    "https://cloud.google.com/kubernetes-engine/docs/how-to/image-streaming: the container starts before the whole "
    "image is pulled; on an image's first pull its benefit may not show, and a workload that reads many of the "
    "image's files as it starts may start slower)"
)
MIRROR_SOURCE = (
    "a registry mirror in the cluster's region (Artifact Registry 'Repository overview', remote repositories, "
    "https://cloud.google.com/artifact-registry/docs/repositories) instead of Docker Hub through one NAT address"
)
RUN_AI_COMPARISON = (
    "for comparison, a peer's weight load (this stack reads the checkpoint from Hyperdisk ML instead): streamed "
    "from Cloud Storage into GPU memory (Google's 'Fast-start inference reference architecture', "
    "https://github.com/GoogleCloudPlatform/accelerated-platforms/blob/main/docs/platforms/gke/base/use-cases/"
    "inference-ref-arch/online-inference-gpu/vllm-fast-start-reference-architecture.md: with the NVIDIA Run:ai "
    "Model Streamer, Gemma 4 31B's 58.99 GiB loaded in 48.2 s on an H100, about 1.22 GiB/s)"
)
HELD_NODE_SOURCE = (
    "a held node (GKE docs 'Configure capacity buffers', "
    "https://cloud.google.com/kubernetes-engine/docs/how-to/configure-capacity-buffer: a CapacityBuffer keeps spare "
    "nodes, so a new replica skips node provisioning)"
)
CUDA_GRAPHS_SOURCE = (
    "fewer CUDA graphs to capture (vLLM v0.19.0 vllm/config/vllm.py `_set_cudagraph_sizes`, "
    "https://github.com/vllm-project/vllm/blob/v0.19.0/vllm/config/vllm.py: one graph per batch size of a grid up to "
    "--max-cudagraph-capture-size; no cache keeps them between pods)"
)
BOOT_DISK_SOURCE = (
    "not applied here, the next lever for the image: a secondary boot disk with the engine image preloaded on every "
    "new node (GKE docs 'Use secondary boot disks to preload data or container images', "
    "https://cloud.google.com/kubernetes-engine/docs/how-to/data-container-image-preloading: Autopilot from "
    "1.30.1-gke.1329000, with image streaming, from a disk image built beforehand from the container image; a "
    "ComputeClass priority names it under storage.secondaryBootDisks, mode CONTAINER_IMAGE_CACHE). The stack does "
    "not build that disk image"
)


def _applied(on: bool, setting: str) -> str:
    return f"applied here ({setting})" if on else f"not applied here ({setting} is off)"


def goal_sources(config: StackConfig) -> tuple[str, ...]:
    """The goal's levers with their sources, each marked applied in this stack or not (a list of levers read as
    what the stack counts on); the compile cache's cites the stack's own vLLM release where it was read there,
    else the first release it was read in, and says so."""
    release = image_release(config.engine.image)
    read = release in COMPILE_CACHE_READ_IN
    cited = release if read and release is not None else COMPILE_CACHE_READ_IN[0]
    unread = "" if read else f"; not read in {'v' + release if release else 'the stack image'}'s code"
    mirror = config.startup.image_mirror.enabled
    streaming = (
        "applied where the cluster's owner met its requirements (cluster.existing)"
        if config.cluster.existing
        else "applied here (Autopilot streams an image from Artifact Registry or Docker Hub)"
    )
    capture = config.engine.max_cudagraph_capture_size
    graphs = (
        f"set here (engine.maxCudagraphCaptureSize {capture}: fewer graphs only below vLLM's default)"
        if capture is not None
        else "not applied here (engine.maxCudagraphCaptureSize unset: vLLM's default grid)"
    )
    warm = config.warm_capacity
    return (
        f"{streaming}: {IMAGE_STREAMING_SOURCE}",
        f"{_applied(mirror, 'startup.imageMirror')}: {MIRROR_SOURCE}",
        f"{_applied(config.startup.compile_cache.enabled, 'startup.compileCache')}: "
        + COMPILE_CACHE_SOURCE.format(release=cited, unread=unread),
        f"{graphs}: {CUDA_GRAPHS_SOURCE}",
        f"{_applied(warm.enabled, f'warmCapacity.nodes {warm.nodes}' if warm.enabled else 'warmCapacity')}: "
        + HELD_NODE_SOURCE,
        RUN_AI_COMPARISON,
        BOOT_DISK_SOURCE,
    )


@dataclass(frozen=True)
class StartupInputs:
    """What the start-up is computed from, besides the checkpoint and its disk: the engine image (its
    compressed size and the rate a node pulls it at, both unknown by default). Image streaming, a
    registry mirror or an image cache change these; each must say where its figure comes from."""

    image_gib: float | None = None
    image_pull_mibps: float | None = None
    image_basis: str = ""


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
    held_planning_seconds: int
    held_planning_basis: str
    wake: WakeRead | None
    goal_pod_seconds: int
    goal_sources: tuple[str, ...]
    notes: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


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
    seconds = inputs.image_gib * MIB_PER_GIB / inputs.image_pull_mibps
    basis = inputs.image_basis or "timeToServe.imageGib / timeToServe.imagePullMibps"
    return Phase(
        "imagePull",
        "pull the engine image",
        seconds,
        seconds,
        "computed",
        f"{inputs.image_gib:g} GiB / {inputs.image_pull_mibps:g} MiB/s ({basis})",
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


def wake_read(config: StackConfig) -> WakeRead | None:
    size = checkpoint_mib(config)
    if size is None:
        return None
    nodes, zones = config.max_replicas, len(config.zones)
    per_disk = config.nodes_per_disk
    disk = config.serving_throughput_mibps
    per_node = disk / per_disk
    seconds = size / per_node
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


def wake_read_note(config: StackConfig) -> str | None:
    """The simultaneous wake's warning, when its read of the checkpoint is over the stack's bound, as a render note:
    on stderr and at the top of plan.md, not only in its Time to serve section."""
    wake = wake_read(config)
    return f"time to serve: {wake.warning} (plan.md, Time to serve)" if wake is not None and wake.warning else None


def unconditioned_reports_note(config: StackConfig, recorded: Sequence[Measurement] | None = None) -> str | None:
    """The start-up reports of this configuration that hold no start-up conditions (recorded before bench-compare
    kept them), which no stack reads (`recorded_startup`), or None: the probe, the wake lead and the alerts then take
    the write-up's figures or another report's, and a measured start longer than those restarts at the probe."""
    found = [item.id for item, startup in startup_reports(config, recorded) if startup.conditions is None]
    if not found:
        return None
    named = ", ".join(found[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "")
    return (
        f"start-up report(s) {named} of this configuration hold no start-up conditions (recorded before "
        "bench-compare --record kept them) and are not read: the startup probe, the wake lead and the alerts take the "
        "write-up's figures or another report's instead. Record the run again with bench-compare --record (its log: "
        'kubectl logs job/NAME) to use it; docs/time-to-serve.md, "Measuring it"'
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
        pinned = (
            "by digest, IfNotPresent"
            if config.engine.image_digest
            else "by tag, so imagePullPolicy Always: engine.imageDigest pins it and keeps a node's copy"
        )
        notes.append(
            f"image pull: from the stack's Artifact Registry remote repository of Docker Hub in {config.region} "
            f"({pinned}), {streaming}; the write-up's pod figure was measured pulling from Docker "
            f"Hub. Saving not measured: the pod phase (scheduled to ready) of {REPORT}; not imagePulledSeconds "
            "alone: a streamed image is Pulled before its data is on the node, whose reads then fall in the engine's "
            "start"
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
    notes += _flex_start_wait_notes(config)
    probe = startup_probe_seconds(config)
    if probe > STARTUP_PROBE_SECONDS:
        notes.append(
            f"startup probe: {probe / 60:,.0f} min for /health, where the recipe's is {STARTUP_PROBE_SECONDS // 60} "
            "min (3x its measured ~10 min pod phase): 3x the stack's pod phase (a recorded start-up report of its "
            "configuration, else the write-up's) plus what this checkpoint adds to a simultaneous wake's read with "
            "every pod on one zone's disk (computed), rounded up to whole half hours (each new value rolls every pod), "
            "so that a slow start is not restarted half-way; the Deployment's progress deadline and `pulumi up`'s wait "
            "grow as much"
        )
    return tuple(notes)


def _flex_start_wait_notes(config: StackConfig) -> list[str]:
    """How long a new node waits on a Flex-start source before GKE tries the next one."""
    notes = []
    for index, source in enumerate(config.capacity.sources[:-1]):
        if source.type != FLEX_START.type:
            continue
        wait = getattr(source, "capacity_check_wait_time_seconds", None)
        key = f"capacity.sources[{index}].capacityCheckWaitTimeSeconds"
        notes.append(
            f"Flex-start before another source: GKE tries it up to {wait:,} s for a node ({key}), so a new replica "
            "waits that much longer when Flex-start has no capacity (the rollout's wait and the pending and "
            "no-ready alerts count it)"
            if wait is not None
            else "Flex-start before another source: how long GKE tries it before the next is its default, which "
            f"GKE's documentation does not state; a new replica waits that much longer when Flex-start has no "
            f"capacity, not counted here ({key} bounds it)"
        )
    return notes


def time_to_serve(
    config: StackConfig,
    inputs: StartupInputs | None = None,
    recorded: Sequence[Measurement] | None = None,
) -> TimeToServe:
    """The time to serve of one new replica of this stack, per phase, cold and on a held node: a
    recorded start-up report of its configuration first, else the write-up's figures where they apply."""
    inputs = inputs or StartupInputs(
        image_gib=config.time_to_serve.image_gib, image_pull_mibps=config.time_to_serve.image_pull_mibps
    )
    gap = pod_measurement_gap(config)
    node = node_phase(config)
    weights = weights_phase(config)
    pod = pod_phase(gap, image_release(config.engine.image))
    phases: tuple[Phase, ...] = (node, _image_phase(inputs), weights, _engine_phase(gap), pod)
    entry = recorded_startup(config, recorded)
    if entry is not None:
        phases = recorded_phases(phases, entry)
        node, pod = phases[0], phases[-1]
    pod = pod_with_pull(config, pod)
    phases = (*phases[:-1], pod)
    cold = cold_total(node, pod, entry)
    held = total_phase(node_phase(config, held=True), pod, "a new replica on a held node")
    planning_figure, planning_basis = planning(config, cold, weights)
    held_figure, held_basis = held_planning(config, held, weights)
    return TimeToServe(
        profile=config.profile.value,
        phases=phases,
        cold=cold,
        held=held,
        planning_seconds=planning_figure,
        planning_basis=planning_basis,
        held_planning_seconds=held_figure,
        held_planning_basis=held_basis,
        wake=wake_read(config),
        goal_pod_seconds=GOAL_POD_SECONDS,
        goal_sources=goal_sources(config),
        notes=startup_notes(config),
    )
