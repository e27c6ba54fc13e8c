"""The vLLM engine: one Deployment with one pod per A4 node (8x B200, data parallel 8), its
PodDisruptionBudget and the PodMonitoring that feeds Google Managed Prometheus.

The engine flags (`EngineFlags`, mapped from the stack config whose defaults are the published
recipe) are rendered as `command: [vllm, serve]`, the model path as the positional argument, then
one `--flag=value` string per argument, the form the policy pack parses. Weights load from the
read-only Hyperdisk ML claim with `HF_HUB_OFFLINE=1`. The pod runs as an unprivileged user with a
read-only root filesystem; the compile caches live on an emptyDir.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from decimal import Decimal

import pulumi
import pulumi_kubernetes as k8s

from common.compile_cache import compile_cache_key
from common.quantities import QUANTITY, SUFFIX_FACTORS
from components.compile_cache import CSI_DRIVER, SIDECAR_ANNOTATION, CacheMount, mount_options
from components.endpoint_picker import ACTIVE_PORTS_ANNOTATION
from components.hardening import non_root_pod_context, restricted_container_context
from components.hardware import B200_GPUS_PER_NODE
from components.image_mirror import pull_policy

CONTAINER_NAME = "vllm"
PORT_NAME = "http"
HEALTH_PATH = "/health"
METRICS_PATH = "/metrics"
NODE_ZONE_KEY = "topology.kubernetes.io/zone"

# Shutdown: Kubernetes removes the pod from the Service endpoints at the same time as it runs the
# preStop hook, so the hook only waits for that removal to reach the proxies; then SIGTERM starts
# vLLM's own drain, which finishes running requests for up to --shutdown-timeout seconds and aborts
# the rest (vllm@v0.19.0: vllm/config/vllm.py `shutdown_timeout`, vllm/v1/engine/core.py; the
# default 0 aborts everything at once).
ENDPOINT_REMOVAL_SECONDS = 5
EXIT_MARGIN_SECONDS = 5
# The pods get the grace of the longest-lived capacity they may land on (`grace_seconds`).
# Spot: Autopilot gives a Spot pod at most 25 s after preemption, whatever it asks ("Run
# fault-tolerant workloads at lower costs in Spot Pods": "requesting more than 25 seconds does not
# give more than 25 seconds during preemption"); a recipe request (~30 s) that still needs more than
# the 15 s drain is aborted, up to the ~2,000 requests a node carries.
SPOT_GRACE_SECONDS = 25
# Flex-start and reserved nodes (and every eviction of a Spot node that is not a preemption): the
# longest grace GKE honors in every GKE-initiated eviction ("Extend the run time of Autopilot Pods":
# up to one hour for node upgrades, up to 10 minutes for scale-down; no other Autopilot cap was found).
# vLLM exits as soon as its running requests are done, so a long grace costs nothing. A pod that may
# also land on Spot keeps it: on a preemption Autopilot cuts it to 25 s, elsewhere it is honored.
# Spot's own limit cannot be raised by the stack: the ComputeClass schema has
# `priorities[].nodeSystemConfig.kubeletConfig.shutdownGracePeriodSeconds` (0, 30 or 120, Spot only;
# GoogleCloudPlatform/compute-class-api@8067eaeb, schemas/crds/cloud.google.com_computeclasses.yaml),
# but whether GKE 1.34 Autopilot serves and honors it was not verified, and Compute Engine stops a
# preempted Spot VM after its preemption notice; not used.
GRACE_SECONDS = 600

# Startup: node provisioning happens while the pod is Pending; the probe covers model load and
# CUDA graph capture (~10 min measured) with a wide margin, by default 30 min (VllmEngineArgs.startup_probe_seconds).
STARTUP_PROBE_PERIOD_SECONDS = 10
STARTUP_PROBE_SECONDS = 1800
SHM_SIZE = "64Gi"
METRICS_INTERVAL = "30s"

# Writable caches on an emptyDir, so that the root filesystem stays read-only and a container
# restart reuses the compiled kernels (vllm@v0.19.0 vllm/envs.py: VLLM_CACHE_ROOT defaults under
# XDG_CACHE_HOME, torch.compile artifacts under VLLM_CACHE_ROOT/torch_compile_cache; Triton and
# FlashInfer JIT caches default under HOME).
CACHE_ROOT = "/var/cache/engine"
TMP_DIR = "/tmp"
ENGINE_USER_ID = 10001
CACHE_ENV = {
    "HOME": CACHE_ROOT,
    "XDG_CACHE_HOME": CACHE_ROOT,
    "VLLM_CACHE_ROOT": f"{CACHE_ROOT}/vllm",
    "TRITON_CACHE_DIR": f"{CACHE_ROOT}/triton",
    "FLASHINFER_WORKSPACE_BASE": CACHE_ROOT,
    "TORCHINDUCTOR_CACHE_DIR": f"{CACHE_ROOT}/torchinductor",
}
# With a shared compile cache (components/compile_cache.py) the compile and autotune caches move onto
# its mount; HOME and XDG_CACHE_HOME stay on the emptyDir. FlashInfer keeps its JIT cache under
# FLASHINFER_WORKSPACE_BASE/.cache/flashinfer.
SHARED_CACHE_ROOT = "/var/cache/compile"
SHARED_CACHE_ENV = {
    "VLLM_CACHE_ROOT": f"{SHARED_CACHE_ROOT}/vllm",
    "TRITON_CACHE_DIR": f"{SHARED_CACHE_ROOT}/triton",
    "FLASHINFER_WORKSPACE_BASE": SHARED_CACHE_ROOT,
    "TORCHINDUCTOR_CACHE_DIR": f"{SHARED_CACHE_ROOT}/torchinductor",
}
# The pods run as a UID with no passwd entry in the image. vLLM images from 0.20 on call
# `getpass.getuser()` at start (https://github.com/vllm-project/vllm/issues/44548; in 0.33.0
# FlashAttention's CuTe DSL cache still does), which reads LOGNAME, USER, LNAME and USERNAME before
# falling back to the passwd database and raising without an entry (CPython Lib/getpass.py
# `getuser`). Every container that runs the vLLM image (serving, benchmark) states both.
PROCESS_USER = "vllm"
USER_ENV = {"USER": PROCESS_USER, "LOGNAME": PROCESS_USER}


@dataclass(frozen=True)
class Speculative:
    method: str
    num_speculative_tokens: int


@dataclass(frozen=True)
class EngineFlags:
    """The vLLM engine settings the component renders (the composition maps the stack config)."""

    image: str
    image_digest: str | None
    port: int
    data_parallel_size: int
    tensor_parallel_size: int
    enable_expert_parallel: bool
    speculative: Speculative | None
    kv_cache_dtype: str
    max_model_len: int
    max_num_batched_tokens: int
    max_num_seqs: int
    gpu_memory_utilization: float
    enable_prefix_caching: bool
    enable_chunked_prefill: bool
    attention_backend: str | None
    optimization_level: int
    mamba_cache_mode: str | None
    mamba_block_size: int | None
    language_model_only: bool
    moe_backend: str | None
    estimate_cudagraphs: bool
    # `--max-cudagraph-capture-size` (None: vLLM's default).
    max_cudagraph_capture_size: int | None
    reasoning_parser: str | None
    stream_interval: int | None
    extra_args: Sequence[str]
    extra_env: Mapping[str, str]
    cpu: str
    memory: str
    ephemeral_storage: str


# The one list of engine settings: the flags' fields, in the order a measurement's configuration
# lists those it matches (stacks/capacity/measurements.py). A serving profile sets all but the ones
# the stack owns (the image's digest, the port, the CUDA graph capture size and the stream interval,
# extra flags and environment, the pod's resources).
ENGINE_FIELDS = tuple(field.name for field in fields(EngineFlags))
STACK_ENGINE_FIELDS = (
    "image_digest",
    "port",
    "max_cudagraph_capture_size",
    "stream_interval",
    "extra_args",
    "extra_env",
    "cpu",
    "memory",
    "ephemeral_storage",
)
PROFILE_ENGINE_FIELDS = tuple(name for name in ENGINE_FIELDS if name not in STACK_ENGINE_FIELDS)


def grace_seconds(spot_only: bool) -> int:
    """The termination grace of the longest-lived capacity the pods may land on: 25 s when every
    capacity source is Spot, the GKE eviction grace as soon as one is Flex-start or a reservation."""
    return SPOT_GRACE_SECONDS if spot_only else GRACE_SECONDS


# pulumi-kubernetes deletes with foreground propagation, so the Deployment goes once its pods have stopped, each within
# its grace; without a delete timeout it waits at most 10 min (provider/pkg/await/await.go `Deletion`), no room beyond
# a 600 s grace.
DELETE_MARGIN_MINUTES = 5


def delete_minutes(grace_seconds: int) -> int:
    """How long a delete of the serving Deployment waits: the pods' grace, and a margin for the API server."""
    return math.ceil(grace_seconds / 60) + DELETE_MARGIN_MINUTES


def drain_seconds(grace_seconds: int) -> int:
    """How long vLLM finishes running requests after SIGTERM within the pod's grace period."""
    return grace_seconds - ENDPOINT_REMOVAL_SECONDS - EXIT_MARGIN_SECONDS


# Per-rank layout (gateway mode): each data-parallel rank is a `vllm serve` of its own with data
# parallel 1, in a container of its own on port engine.port + rank, with the container's GPUs. Not
# vLLM's external data-parallel load balancing (`--data-parallel-rank i` of `--data-parallel-size N`):
# there every rank checks in with rank 0 on its data-parallel RPC port at start-up, and rank 0 waits
# for all N (vllm@v0.19.0 vllm/v1/engine/utils.py `launch_core_engines`: "Rank 0 holds Coordinator, so
# it handshakes with all Cores in both external dplb and internal dplb mode"; `wait_for_engine_startup`
# has no time limit), then closes that socket. So one rank's container restarting (a liveness failure,
# an out-of-memory kill) never served again: a rank above 0 found no rank 0 to check in with and exited
# after 5 minutes (vllm/v1/engine/core.py, "Did not receive response from front-end process within 5
# minutes"), a restarted rank 0 waited for ranks that had started long before, and the pod stayed not
# ready with all its ranks out of the pool. A dense model's ranks gain nothing from one group (vLLM
# itself runs non-MoE DP ranks as DP=1: core.py `run_engine_core`); the stack refuses this layout with
# expert parallel (stacks/config/stack.py), whose ranks must stay one group.


def rank_ports(engine: EngineFlags) -> list[int]:
    """The serving ports of the per-rank layout: engine.port + rank."""
    return [engine.port + rank for rank in range(engine.data_parallel_size)]


def engine_args(
    engine: EngineFlags, model_path: str, served_model_name: str, shutdown_seconds: int, rank: int | None = None
) -> list[str]:
    """The `vllm serve` arguments: the model as the positional argument (`vllm serve [model_tag]`;
    it takes precedence over `--model`, vllm@v0.19.0 vllm/entrypoints/cli/serve.py), the recipe's
    flags in its order, the drain, then `extraArgs`. With `rank`, the server of that data-parallel
    rank alone (data parallel 1), on engine.port + rank."""
    args = [
        model_path,
        f"--served-model-name={served_model_name}",
        f"--port={engine.port + (rank or 0)}",
        f"--data-parallel-size={engine.data_parallel_size if rank is None else 1}",
        f"--tensor-parallel-size={engine.tensor_parallel_size}",
    ]
    if engine.enable_expert_parallel:
        args.append("--enable-expert-parallel")
    args += [
        f"--max-model-len={engine.max_model_len}",
        f"--max-num-batched-tokens={engine.max_num_batched_tokens}",
        f"--max-num-seqs={engine.max_num_seqs}",
        f"--kv-cache-dtype={engine.kv_cache_dtype}",
        f"--gpu-memory-utilization={engine.gpu_memory_utilization}",
        "--enable-prefix-caching" if engine.enable_prefix_caching else "--no-enable-prefix-caching",
        "--enable-chunked-prefill" if engine.enable_chunked_prefill else "--no-enable-chunked-prefill",
    ]
    if engine.attention_backend is not None:
        args.append(f"--attention-backend={engine.attention_backend}")
    args.append(f"-O{engine.optimization_level}")
    if engine.speculative is not None:
        speculative = {
            "method": engine.speculative.method,
            "num_speculative_tokens": engine.speculative.num_speculative_tokens,
        }
        args.append(f"--speculative-config={json.dumps(speculative, separators=(',', ':'))}")
    if engine.mamba_cache_mode is not None:
        args.append(f"--mamba-cache-mode={engine.mamba_cache_mode}")
    if engine.mamba_block_size is not None:
        # Kept for parity with the published recipe, but in align mode vLLM overwrites it with the
        # attention block size (vllm v0.19.0 wheel vllm/model_executor/models/config.py:291-292,
        # v0.33.0 vllm/platforms/interface.py:1114-1115: `if cache_config.mamba_cache_mode ==
        # "align": cache_config.mamba_block_size = cache_config.block_size`): docs/operations.md.
        args.append(f"--mamba-block-size={engine.mamba_block_size}")
    if engine.language_model_only:
        args.append("--language-model-only")
    if engine.moe_backend is not None:
        args.append(f"--moe-backend={engine.moe_backend}")
    if engine.max_cudagraph_capture_size is not None:
        args.append(f"--max-cudagraph-capture-size={engine.max_cudagraph_capture_size}")
    if engine.stream_interval is not None:
        args.append(f"--stream-interval={engine.stream_interval}")
    if engine.reasoning_parser is not None:
        args.append(f"--reasoning-parser={engine.reasoning_parser}")
    args.append(f"--shutdown-timeout={shutdown_seconds}")
    return [*args, *engine.extra_args]


# Always stated, on or off: the default is off in v0.19.0 (vllm/envs.py: "0") and on from 0.21
# (v0.33.0 vllm/envs.py: "1"), so leaving it out would change the engine's memory plan with the image.
ESTIMATE_CUDAGRAPHS_ENV = "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS"


def engine_env(engine: EngineFlags, shared_cache: bool = False) -> dict[str, str]:
    env = {"HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1", **USER_ENV, **CACHE_ENV}
    if shared_cache:
        env |= SHARED_CACHE_ENV
    env[ESTIMATE_CUDAGRAPHS_ENV] = "1" if engine.estimate_cudagraphs else "0"
    return {**env, **engine.extra_env}


# The compile caches a rank's server keeps apart from the other ranks' (the per-rank layout): each server is
# rank 0 of its own, so on one cache all eight would write torch_compile_cache/<hash>/rank_0_0 at once
# (vLLM 0.33.0 vllm/compilation/backends.py save_to_file: open(path, "w"), no lock).
RANK_CACHE_KEYS = ("VLLM_CACHE_ROOT", "TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "FLASHINFER_WORKSPACE_BASE")


def rank_env(env: dict[str, str], rank: int | None) -> dict[str, str]:
    """The environment of one rank's server: the emptyDir's compile caches in a folder of its own (a value
    engine.extraEnv set is kept as given); the one server's environment as it is."""
    if rank is None:
        return env
    return {
        key: value.replace(CACHE_ROOT, f"{CACHE_ROOT}/rank-{rank}", 1)
        if key in RANK_CACHE_KEYS and value == CACHE_ENV[key]
        else value
        for key, value in env.items()
    }


def engine_image(engine: EngineFlags) -> str:
    return f"{engine.image}@{engine.image_digest}" if engine.image_digest else engine.image


def share(quantity: str, parts: int) -> str:
    """A `parts`-th of a Kubernetes quantity, in its own unit when that divides evenly (1800Gi / 8 =
    225Gi), else rounded down in millicores (CPU) or bytes."""
    if parts == 1:
        return quantity
    match = QUANTITY.fullmatch(quantity)
    suffix = (match["suffix"] or "") if match else ""
    if match is None or match["number"][0] in "+-" or suffix in ("n", "u"):
        raise ValueError(f"cannot divide the quantity {quantity!r} over {parts} containers")
    number = Decimal(match["number"])
    if suffix not in SUFFIX_FACTORS:  # a decimal exponent, e3 or E-2 (`E` alone is exa, `Ei` exbi)
        number, suffix = number * Decimal(10) ** int(suffix[1:]), ""
    part = number / parts
    if part == part.to_integral_value():
        return f"{int(part)}{suffix}"
    if suffix in ("", "m"):
        return f"{int(number * SUFFIX_FACTORS[suffix] * 1000 / parts)}m"
    return str(int(number * SUFFIX_FACTORS[suffix] / parts))


@dataclass(frozen=True)
class RolloutWait:
    """How long `pulumi up` waits for the Deployment (pulumi-kubernetes waits until every replica
    is ready and the rollout is complete, then fails after the custom timeout)."""

    create_minutes: int
    update_minutes: int
    progress_deadline_seconds: int


# Per pod: each capacity source the ComputeClass tries may take this long to give a node: a margin chosen here
# (about 2.5x the write-up's measured 5-6 min for an A4 node), not measured.
NODE_PROVISIONING_MINUTES = 15
# The engine image's pull, which comes before the startup probe's clock, where the stack does not compute it: the
# write-up's whole ~10 min pod phase (the pull is part of it). A streamed image's reads come after the container
# starts, inside the probe's clock: this then only waits longer than needed.
IMAGE_PULL_SECONDS = 600


def rollout_wait(
    replicas: int,
    capacity_sources: int,
    max_unavailable: int,
    startup_probe_seconds: int = STARTUP_PROBE_SECONDS,
    image_pull_seconds: int = IMAGE_PULL_SECONDS,
    capacity_wait_seconds: int = 0,
) -> RolloutWait:
    """Create: all pods start together. Update: pods are replaced `max_unavailable` at a time (no
    spare B200 node to surge onto), so the rollout takes that many rounds. A pod is waited for as long
    as the kubelet waits for it (every source's node, as long as GKE tries a source that says how long
    (`capacity_wait_seconds`), the image pull, the startup probe's whole budget): a rollout that gave
    up first would call a slow but healthy pod failed (ProgressDeadlineExceeded)."""
    per_pod = capacity_sources * NODE_PROVISIONING_MINUTES + math.ceil(
        (capacity_wait_seconds + image_pull_seconds + startup_probe_seconds) / 60
    )
    rounds = -(-replicas // max_unavailable)
    return RolloutWait(
        create_minutes=2 * per_pod,
        update_minutes=rounds * per_pod,
        progress_deadline_seconds=per_pod * 60,
    )


@dataclass(frozen=True)
class VllmEngineArgs:
    name: str
    namespace: pulumi.Input[str]
    engine: EngineFlags
    served_model_name: str
    model_path: str
    weights_claim: pulumi.Input[str]
    weights_mount_path: str
    replicas: int
    capacity_sources: int
    node_selector: dict[str, pulumi.Input[str]]
    zones: Sequence[str]
    # every capacity source is Spot (then the pods' grace is Spot's 25 s)
    spot_only: bool
    concurrency_per_pod: int
    max_request_tokens: int
    model_revision: str
    selector: dict[str, str]
    labels: dict[str, str] = field(default_factory=dict)
    # An HPA or a schedule owns spec.replicas after creation; `pulumi up` must not reset it, and an
    # update may then roll up to `most_replicas` pods.
    replicas_managed_elsewhere: bool = False
    most_replicas: int | None = None
    # What the PodMonitoring waits for: GKE serving its CRD on a new cluster.
    monitoring_after: Sequence[pulumi.Resource] = ()
    # Secret environment variables: their names and the Secret holding each under its own name.
    secret_env: Sequence[str] = ()
    secret_env_from: pulumi.Input[str] | None = None
    # The reference the pods pull (e.g. the same image through a registry mirror); None: engine_image(engine).
    pull_image: str | None = None
    # A compile cache shared by the pods (None: each pod compiles into its emptyDir).
    compile_cache: CacheMount | None = None
    # One container and port per data-parallel rank (gateway mode) instead of one server for all.
    per_rank: bool = False
    # The pods name the ports they serve for the gateway's endpoint picker (gateway mode): while a change of layout
    # rolls, the picker then sends to each pod only on the ports it serves, old or new.
    announce_ports: bool = False
    # How long a pod may take to answer /health before the kubelet restarts it (the startup probe).
    startup_probe_seconds: int = STARTUP_PROBE_SECONDS
    # How long the engine image's pull may take (before the startup probe's clock starts).
    image_pull_seconds: int = IMAGE_PULL_SECONDS
    # How long GKE tries the capacity sources that bound it (Flex-start's capacityCheckWaitTimeSeconds), together.
    capacity_wait_seconds: int = 0


def serving_ports(engine: EngineFlags, per_rank: bool) -> list[int]:
    """The ports a serving pod listens on: one per rank in the per-rank layout, else engine.port."""
    return rank_ports(engine) if per_rank else [engine.port]


def pod_annotations(args: VllmEngineArgs) -> dict[str, str]:
    """The serving pods' annotations: GKE injects the Cloud Storage FUSE sidecar into pods that ask for it; the
    gateway's picker reads the ports a pod serves."""
    annotations = {}
    if args.compile_cache is not None:
        annotations[SIDECAR_ANNOTATION] = "true"
    if args.announce_ports:
        annotations[ACTIVE_PORTS_ANNOTATION] = ",".join(map(str, serving_ports(args.engine, args.per_rank)))
    return annotations


class VllmEngine(pulumi.ComponentResource):
    TYPE = "llm-serving:serving:VllmEngine"
    deployment: k8s.apps.v1.Deployment
    disruption_budget: k8s.policy.v1.PodDisruptionBudget
    pod_monitoring: k8s.apiextensions.CustomResource

    def __init__(self, name: str, args: VllmEngineArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(self.TYPE, name, None, opts)
        labels = {**args.labels, **args.selector}
        metadata = k8s.meta.v1.ObjectMetaArgs(name=args.name, namespace=args.namespace, labels=labels)
        selector = k8s.meta.v1.LabelSelectorArgs(match_labels=args.selector)
        # One pod per A4 node and no spare B200 node: replace pods one at a time in place.
        max_unavailable = 1
        grace = grace_seconds(args.spot_only)
        self.image = args.pull_image or engine_image(args.engine)
        self.args = engine_args(args.engine, args.model_path, args.served_model_name, drain_seconds(grace))
        self.env = engine_env(args.engine, shared_cache=args.compile_cache is not None)
        # The folder of the shared compile cache this configuration reads and writes (None: no cache).
        self.compile_cache_key = (
            compile_cache_key(self.image, self.args, self.env) if args.compile_cache is not None else None
        )
        self.rollout = rollout_wait(
            args.most_replicas or args.replicas,
            args.capacity_sources,
            max_unavailable,
            args.startup_probe_seconds,
            args.image_pull_seconds,
            args.capacity_wait_seconds,
        )

        self.deployment = k8s.apps.v1.Deployment(
            f"{name}-deployment",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=args.name,
                namespace=args.namespace,
                labels=labels,
                annotations={
                    "llm-serving/concurrency-per-pod": str(args.concurrency_per_pod),
                    "llm-serving/max-request-tokens": str(args.max_request_tokens),
                    "llm-serving/model-revision": args.model_revision,
                },
            ),
            spec=k8s.apps.v1.DeploymentSpecArgs(
                replicas=args.replicas,
                selector=selector,
                strategy=k8s.apps.v1.DeploymentStrategyArgs(
                    type="RollingUpdate",
                    rolling_update=k8s.apps.v1.RollingUpdateDeploymentArgs(
                        max_surge=0, max_unavailable=max_unavailable
                    ),
                ),
                progress_deadline_seconds=self.rollout.progress_deadline_seconds,
                template=k8s.core.v1.PodTemplateSpecArgs(
                    metadata=k8s.meta.v1.ObjectMetaArgs(labels=labels, annotations=pod_annotations(args) or None),
                    spec=self._pod_spec(args),
                ),
            ),
            opts=pulumi.ResourceOptions(
                parent=self,
                custom_timeouts=pulumi.CustomTimeouts(
                    create=f"{self.rollout.create_minutes}m",
                    update=f"{self.rollout.update_minutes}m",
                    delete=f"{delete_minutes(grace)}m",
                ),
                ignore_changes=["spec.replicas"] if args.replicas_managed_elsewhere else None,
            ),
        )
        self.disruption_budget = k8s.policy.v1.PodDisruptionBudget(
            f"{name}-pdb",
            metadata=metadata,
            spec=k8s.policy.v1.PodDisruptionBudgetSpecArgs(max_unavailable=max_unavailable, selector=selector),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.pod_monitoring = k8s.apiextensions.CustomResource(
            f"{name}-pod-monitoring",
            api_version="monitoring.googleapis.com/v1",
            kind="PodMonitoring",
            metadata=metadata,
            spec={
                "selector": {"matchLabels": args.selector},
                "endpoints": [
                    {"port": port, "path": METRICS_PATH, "interval": METRICS_INTERVAL}
                    for port in serving_ports(args.engine, args.per_rank)
                ],
            },
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.monitoring_after)),
        )
        self.register_outputs({"deployment": self.deployment.metadata.name, "servedModelName": args.served_model_name})

    def _pod_spec(self, args: VllmEngineArgs) -> k8s.core.v1.PodSpecArgs:
        engine = args.engine
        grace = grace_seconds(args.spot_only)
        cache = args.compile_cache
        cache_mounts = []
        cache_volumes = []
        if cache is not None and self.compile_cache_key is not None:
            cache_mounts.append(k8s.core.v1.VolumeMountArgs(name="compile-cache", mount_path=SHARED_CACHE_ROOT))
            cache_volumes.append(
                k8s.core.v1.VolumeArgs(
                    name="compile-cache",
                    csi=k8s.core.v1.CSIVolumeSourceArgs(
                        driver=CSI_DRIVER,
                        volume_attributes={
                            "bucketName": cache.bucket,
                            "mountOptions": mount_options(self.compile_cache_key, ENGINE_USER_ID),
                        },
                    ),
                )
            )
        if args.per_rank:
            ranks = engine.data_parallel_size
            containers = [
                self._container(
                    args, grace, f"{CONTAINER_NAME}-{rank}", f"{PORT_NAME}-{rank}", rank, ranks, cache_mounts
                )
                for rank in range(ranks)
            ]
        else:
            containers = [self._container(args, grace, CONTAINER_NAME, PORT_NAME, None, 1, cache_mounts)]
        return k8s.core.v1.PodSpecArgs(
            node_selector=args.node_selector,
            affinity=k8s.core.v1.AffinityArgs(
                node_affinity=k8s.core.v1.NodeAffinityArgs(
                    required_during_scheduling_ignored_during_execution=k8s.core.v1.NodeSelectorArgs(
                        node_selector_terms=[
                            k8s.core.v1.NodeSelectorTermArgs(
                                match_expressions=[
                                    k8s.core.v1.NodeSelectorRequirementArgs(
                                        key=NODE_ZONE_KEY, operator="In", values=list(args.zones)
                                    )
                                ]
                            )
                        ]
                    )
                )
            ),
            termination_grace_period_seconds=grace,
            enable_service_links=False,
            # The compile cache's account reaches the CSI driver through the kubelet, not the container.
            service_account_name=cache.service_account if cache is not None else None,
            automount_service_account_token=False,
            # The image declares no user (root); nothing in the engine needs it.
            security_context=non_root_pod_context(ENGINE_USER_ID),
            containers=containers,
            volumes=[
                k8s.core.v1.VolumeArgs(
                    name="weights",
                    persistent_volume_claim=k8s.core.v1.PersistentVolumeClaimVolumeSourceArgs(
                        claim_name=args.weights_claim, read_only=True
                    ),
                ),
                k8s.core.v1.VolumeArgs(
                    name="dshm", empty_dir=k8s.core.v1.EmptyDirVolumeSourceArgs(medium="Memory", size_limit=SHM_SIZE)
                ),
                # Disk-backed, within the pod's ephemeral-storage request.
                k8s.core.v1.VolumeArgs(name="cache", empty_dir=k8s.core.v1.EmptyDirVolumeSourceArgs()),
                k8s.core.v1.VolumeArgs(name="tmp", empty_dir=k8s.core.v1.EmptyDirVolumeSourceArgs()),
                *cache_volumes,
            ],
        )

    def _container(
        self,
        args: VllmEngineArgs,
        grace: int,
        name: str,
        port_name: str,
        rank: int | None,
        shares: int,
        cache_mounts: list[k8s.core.v1.VolumeMountArgs],
    ) -> k8s.core.v1.ContainerArgs:
        """One `vllm serve`: the whole node's (`rank` None) or one data-parallel rank's, which gets
        its GPUs and a `shares`-th of the pod's CPU, memory and ephemeral storage."""
        engine = args.engine
        compute = {
            "cpu": share(engine.cpu, shares),
            "memory": share(engine.memory, shares),
            "ephemeral-storage": share(engine.ephemeral_storage, shares),
        }
        gpus = {"nvidia.com/gpu": str(B200_GPUS_PER_NODE // shares)}
        health = k8s.core.v1.HTTPGetActionArgs(path=HEALTH_PATH, port=port_name)
        return k8s.core.v1.ContainerArgs(
            name=name,
            image=self.image,
            image_pull_policy=pull_policy(self.image),
            command=["vllm", "serve"],
            args=engine_args(engine, args.model_path, args.served_model_name, drain_seconds(grace), rank),
            env=[
                *(k8s.core.v1.EnvVarArgs(name=key, value=value) for key, value in rank_env(self.env, rank).items()),
                *(
                    k8s.core.v1.EnvVarArgs(
                        name=key,
                        value_from=k8s.core.v1.EnvVarSourceArgs(
                            secret_key_ref=k8s.core.v1.SecretKeySelectorArgs(name=args.secret_env_from, key=key)
                        ),
                    )
                    for key in args.secret_env
                ),
            ],
            ports=[k8s.core.v1.ContainerPortArgs(name=port_name, container_port=engine.port + (rank or 0))],
            resources=k8s.core.v1.ResourceRequirementsArgs(requests={**compute, **gpus}, limits={**compute, **gpus}),
            startup_probe=k8s.core.v1.ProbeArgs(
                http_get=health,
                period_seconds=STARTUP_PROBE_PERIOD_SECONDS,
                failure_threshold=math.ceil(args.startup_probe_seconds / STARTUP_PROBE_PERIOD_SECONDS),
            ),
            readiness_probe=k8s.core.v1.ProbeArgs(
                http_get=health, period_seconds=5, timeout_seconds=3, failure_threshold=3
            ),
            liveness_probe=k8s.core.v1.ProbeArgs(
                http_get=health, period_seconds=15, timeout_seconds=5, failure_threshold=4
            ),
            lifecycle=k8s.core.v1.LifecycleArgs(
                pre_stop=k8s.core.v1.LifecycleHandlerArgs(
                    sleep=k8s.core.v1.SleepActionArgs(seconds=ENDPOINT_REMOVAL_SECONDS)
                )
            ),
            security_context=restricted_container_context(),
            volume_mounts=[
                k8s.core.v1.VolumeMountArgs(name="weights", mount_path=args.weights_mount_path, read_only=True),
                k8s.core.v1.VolumeMountArgs(name="dshm", mount_path="/dev/shm"),
                k8s.core.v1.VolumeMountArgs(name="cache", mount_path=CACHE_ROOT),
                k8s.core.v1.VolumeMountArgs(name="tmp", mount_path=TMP_DIR),
                *cache_mounts,
            ],
        )
