"""The vLLM engine: one Deployment with one pod per A4 node (8x B200, data parallel 8), its
PodDisruptionBudget and the PodMonitoring that feeds Google Managed Prometheus.

The engine flags come from `EngineConfig` (defaults: the published recipe) and are rendered as
`command: [vllm, serve]` plus one `--flag=value` string per argument, the form the policy pack
parses. Weights load from the read-only Hyperdisk ML claim with `HF_HUB_OFFLINE=1`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from stacks.config import B200_GPUS_PER_NODE, EngineConfig

CONTAINER_NAME = "vllm"
PORT_NAME = "http"
HEALTH_PATH = "/health"
METRICS_PATH = "/metrics"
NODE_ZONE_KEY = "topology.kubernetes.io/zone"
# Autopilot gives a Spot pod at most 25 s after preemption; elsewhere the drain may take longer.
SPOT_GRACE_SECONDS = 25
GRACE_SECONDS = 60
# Left for vLLM to exit after SIGTERM once the preStop drain ends.
SHUTDOWN_MARGIN_SECONDS = 5
# Node provisioning (~6 min) plus model load and CUDA graph capture (~10 min), with room to spare.
STARTUP_PROBE_PERIOD_SECONDS = 10
STARTUP_PROBE_FAILURES = 180
ROLLOUT_TIMEOUT = "90m"
PROGRESS_DEADLINE_SECONDS = 3600
SHM_SIZE = "64Gi"
METRICS_INTERVAL = "30s"

# preStop: wait (at most argv[1] s) until the engine has no running or waiting request; the pod
# is already out of the Service endpoints, so nothing new arrives.
DRAIN_SCRIPT = r"""import re, sys, time, urllib.request
deadline = time.monotonic() + float(sys.argv[1])
busy = re.compile(r"^vllm:num_requests_(?:running|waiting)\{[^}]*\} (\S+)$", re.M)
while time.monotonic() < deadline:
    try:
        text = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[2]}/metrics", timeout=2).read().decode()
    except OSError:
        break
    if sum(float(value) for value in busy.findall(text)) == 0:
        break
    time.sleep(1)
"""


def engine_args(engine: EngineConfig, model_path: str, served_model_name: str) -> list[str]:
    """The `vllm serve` arguments, in the recipe's order, then `extraArgs`."""
    args = [
        f"--model={model_path}",
        f"--served-model-name={served_model_name}",
        f"--port={engine.port}",
        f"--data-parallel-size={engine.data_parallel_size}",
        f"--tensor-parallel-size={engine.tensor_parallel_size}",
        f"--max-model-len={engine.max_model_len}",
        f"--max-num-batched-tokens={engine.max_num_batched_tokens}",
        f"--max-num-seqs={engine.max_num_seqs}",
        f"--kv-cache-dtype={engine.kv_cache_dtype.value}",
        f"--gpu-memory-utilization={engine.gpu_memory_utilization}",
        "--enable-prefix-caching" if engine.enable_prefix_caching else "--no-enable-prefix-caching",
        "--enable-chunked-prefill" if engine.enable_chunked_prefill else "--no-enable-chunked-prefill",
        f"--attention-backend={engine.attention_backend}",
        f"-O{engine.optimization_level}",
    ]
    if engine.speculative is not None:
        speculative = {
            "method": engine.speculative.method,
            "num_speculative_tokens": engine.speculative.num_speculative_tokens,
        }
        args.append(f"--speculative-config={json.dumps(speculative, separators=(',', ':'))}")
    if engine.mamba_cache_mode is not None:
        args.append(f"--mamba-cache-mode={engine.mamba_cache_mode.value}")
    if engine.mamba_block_size is not None:
        args.append(f"--mamba-block-size={engine.mamba_block_size}")
    return [*args, *engine.extra_args]


def engine_env(engine: EngineConfig) -> dict[str, str]:
    env = {"HF_HUB_OFFLINE": "1"}
    if engine.estimate_cudagraphs:
        env["VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS"] = "1"
    return {**env, **engine.extra_env}


def engine_image(engine: EngineConfig) -> str:
    return f"{engine.image}@{engine.image_digest}" if engine.image_digest else engine.image


@dataclass(frozen=True)
class VllmEngineArgs:
    name: str
    namespace: pulumi.Input[str]
    engine: EngineConfig
    served_model_name: str
    model_path: str
    weights_claim: pulumi.Input[str]
    weights_mount_path: str
    replicas: int
    node_selector: dict[str, pulumi.Input[str]]
    zones: Sequence[str]
    spot_capable: bool
    concurrency_per_pod: int
    max_request_tokens: int
    selector: dict[str, str]
    labels: dict[str, str] = field(default_factory=dict)
    # An HPA or a schedule owns spec.replicas after creation; `pulumi up` must not reset it.
    replicas_managed_elsewhere: bool = False


class VllmEngine(pulumi.ComponentResource):
    deployment: k8s.apps.v1.Deployment
    disruption_budget: k8s.policy.v1.PodDisruptionBudget
    pod_monitoring: k8s.apiextensions.CustomResource

    def __init__(self, name: str, args: VllmEngineArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llm-serving:serving:VllmEngine", name, None, opts)
        labels = {**args.labels, **args.selector}
        metadata = k8s.meta.v1.ObjectMetaArgs(name=args.name, namespace=args.namespace, labels=labels)
        selector = k8s.meta.v1.LabelSelectorArgs(match_labels=args.selector)

        self.deployment = k8s.apps.v1.Deployment(
            f"{name}-deployment",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=args.name,
                namespace=args.namespace,
                labels=labels,
                annotations={
                    "llm-serving/concurrency-per-pod": str(args.concurrency_per_pod),
                    "llm-serving/max-request-tokens": str(args.max_request_tokens),
                },
            ),
            spec=k8s.apps.v1.DeploymentSpecArgs(
                replicas=args.replicas,
                selector=selector,
                # One pod per A4 node and no spare B200 node: replace pods one at a time in place.
                strategy=k8s.apps.v1.DeploymentStrategyArgs(
                    type="RollingUpdate",
                    rolling_update=k8s.apps.v1.RollingUpdateDeploymentArgs(max_surge=0, max_unavailable=1),
                ),
                progress_deadline_seconds=PROGRESS_DEADLINE_SECONDS,
                template=k8s.core.v1.PodTemplateSpecArgs(
                    metadata=k8s.meta.v1.ObjectMetaArgs(labels=labels),
                    spec=self._pod_spec(args),
                ),
            ),
            opts=pulumi.ResourceOptions(
                parent=self,
                custom_timeouts=pulumi.CustomTimeouts(create=ROLLOUT_TIMEOUT, update=ROLLOUT_TIMEOUT),
                ignore_changes=["spec.replicas"] if args.replicas_managed_elsewhere else None,
            ),
        )
        self.disruption_budget = k8s.policy.v1.PodDisruptionBudget(
            f"{name}-pdb",
            metadata=metadata,
            spec=k8s.policy.v1.PodDisruptionBudgetSpecArgs(max_unavailable=1, selector=selector),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.pod_monitoring = k8s.apiextensions.CustomResource(
            f"{name}-pod-monitoring",
            api_version="monitoring.googleapis.com/v1",
            kind="PodMonitoring",
            metadata=metadata,
            spec={
                "selector": {"matchLabels": args.selector},
                "endpoints": [{"port": args.engine.port, "path": METRICS_PATH, "interval": METRICS_INTERVAL}],
            },
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.register_outputs({"deployment": self.deployment.metadata.name, "servedModelName": args.served_model_name})

    def _pod_spec(self, args: VllmEngineArgs) -> k8s.core.v1.PodSpecArgs:
        engine = args.engine
        grace_seconds = SPOT_GRACE_SECONDS if args.spot_capable else GRACE_SECONDS
        compute = {"cpu": engine.cpu, "memory": engine.memory, "ephemeral-storage": engine.ephemeral_storage}
        gpus = {"nvidia.com/gpu": str(B200_GPUS_PER_NODE)}
        health = k8s.core.v1.HTTPGetActionArgs(path=HEALTH_PATH, port=PORT_NAME)
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
            termination_grace_period_seconds=grace_seconds,
            enable_service_links=False,
            automount_service_account_token=False,
            security_context=k8s.core.v1.PodSecurityContextArgs(
                seccomp_profile=k8s.core.v1.SeccompProfileArgs(type="RuntimeDefault")
            ),
            containers=[
                k8s.core.v1.ContainerArgs(
                    name=CONTAINER_NAME,
                    image=engine_image(engine),
                    command=["vllm", "serve"],
                    args=engine_args(engine, args.model_path, args.served_model_name),
                    env=[k8s.core.v1.EnvVarArgs(name=key, value=value) for key, value in engine_env(engine).items()],
                    ports=[k8s.core.v1.ContainerPortArgs(name=PORT_NAME, container_port=engine.port)],
                    resources=k8s.core.v1.ResourceRequirementsArgs(
                        requests={**compute, **gpus}, limits={**compute, **gpus}
                    ),
                    startup_probe=k8s.core.v1.ProbeArgs(
                        http_get=health,
                        period_seconds=STARTUP_PROBE_PERIOD_SECONDS,
                        failure_threshold=STARTUP_PROBE_FAILURES,
                    ),
                    readiness_probe=k8s.core.v1.ProbeArgs(
                        http_get=health, period_seconds=5, timeout_seconds=3, failure_threshold=3
                    ),
                    liveness_probe=k8s.core.v1.ProbeArgs(
                        http_get=health, period_seconds=15, timeout_seconds=5, failure_threshold=4
                    ),
                    lifecycle=k8s.core.v1.LifecycleArgs(
                        pre_stop=k8s.core.v1.LifecycleHandlerArgs(
                            exec_=k8s.core.v1.ExecActionArgs(
                                command=[
                                    "python3",
                                    "-c",
                                    DRAIN_SCRIPT,
                                    str(grace_seconds - SHUTDOWN_MARGIN_SECONDS),
                                    str(engine.port),
                                ]
                            )
                        )
                    ),
                    security_context=k8s.core.v1.SecurityContextArgs(allow_privilege_escalation=False),
                    volume_mounts=[
                        k8s.core.v1.VolumeMountArgs(name="weights", mount_path=args.weights_mount_path, read_only=True),
                        k8s.core.v1.VolumeMountArgs(name="dshm", mount_path="/dev/shm"),
                    ],
                )
            ],
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
            ],
        )
