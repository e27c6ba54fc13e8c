"""The in-cluster benchmark: one Kubernetes Job on a dedicated CPU node running N parallel
`vllm bench serve` clients against the serving endpoint, then printing ONE summed result line.

One Python client saturates about one core near 16K connections (the write-up's benchmark method): the load is
split over N clients of ~1K concurrency each, all in one pod on its own node. The pod selects the
Autopilot `Performance` compute class (one Pod per node) and a machine family (default C4), the
documented pair in GKE's "Choose compute classes for Autopilot Pods"; Autopilot sizes the node from
the CPU request (15 vCPU -> a 16 vCPU C4 node).

Flags are those of `vllm bench serve` in vllm-project/vllm vllm/benchmarks/serve.py (checked at a
stored revision of main, 009e6d4a; the v0.19.0 tag itself could not be fetched here):
`--base-url`, `--endpoint`, `--model`, `--served-model-name`, `--tokenizer`, `--dataset-name random`,
`--random-input-len`, `--random-output-len`, `--random-range-ratio`, `--ignore-eos`,
`--request-rate inf`, `--max-concurrency`, `--num-prompts`, `--percentile-metrics`,
`--metric-percentiles`, `--seed`, `--ready-check-timeout-sec` (waits for the endpoint),
`--save-result`, `--result-dir`, `--result-filename`, `--disable-tqdm`. Every client gets its own
`--seed`, so prompts differ across clients (0% prefix-cache hits, as published).

When the engine takes an API key (VLLM_API_KEY in engine.secretEnv), the clients read it from the
same Kubernetes Secret as OPENAI_API_KEY: the request functions of `--backend=openai` send
`Authorization: Bearer $OPENAI_API_KEY` (vllm/benchmarks/lib/endpoint_request_func.py `_get_headers`,
vllm==0.19.0 wheel), and without it every request is a 401.

After the clients the pod prints the serving pods' start-up phases, one `STARTUP_PHASES` line per
pod (components/startup_report.py): its service account may only read the namespace's pods, their
logs and events, and get nodes (a node's creation time tells a cold start).

A NetworkPolicy lets the pod take no connection and open only DNS, HTTPS (the tokenizer from
Hugging Face; the API server for the start-up report, whose endpoint is a private address, as for
the CRD readiness Job) and the serving endpoint: the vLLM pods' port, or the Gateway's address on
its listener port.

`pulumi up` does not wait for the Job to finish (`pulumi.com/skipAwait`): it is created once the
engine Deployment is rolled out, and a changed setting replaces it (a Job's pod template is
immutable), which runs the benchmark again.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path

import pulumi
import pulumi_kubernetes as k8s

from components import bench_result, startup_report
from components.engine_env_secret import API_KEY_ENV
from components.hardening import non_root_pod_context, restricted_container_context
from components.image_mirror import pull_policy
from components.network_policy import dns_and_https_egress
from components.vllm import USER_ENV

CONTAINER_NAME = "bench"
RESULTS_DIR = "/results"
SCRATCH_DIR = "/tmp"
RUN_AS_USER = 10001
PERFORMANCE_COMPUTE_CLASS = "Performance"
BENCHMARK_LABEL = "llm-serving/benchmark"
SUMMARY_SOURCE = Path(bench_result.__file__).read_text()
STARTUP_SOURCE = Path(startup_report.__file__).read_text()
# What the OpenAI request functions of `vllm bench serve` send as `Authorization: Bearer ...`.
CLIENT_API_KEY_ENV = "OPENAI_API_KEY"
# checkov CKV_K8S_38: the start-up report reads pods, their logs and events through the API.
TOKEN_SKIP = "CKV_K8S_38=the start-up report reads the serving pods, their logs and events through the API"


@dataclass(frozen=True)
class BenchmarkJobArgs:
    job_name: str
    namespace: pulumi.Input[str]
    image: str
    base_url: str
    served_model_name: str
    tokenizer: str
    clients: int
    concurrency_per_client: int
    prompts_per_concurrency: int
    input_len: int
    output_len: int
    range_ratio: float
    ignore_eos: bool
    ready_timeout_seconds: int
    deadline_seconds: int
    machine_family: str
    cpu: int
    memory: str
    # where the clients connect: the serving pods (ClusterIP Service) or the Gateway's address
    serving_selector: dict[str, str]
    serving_port: int
    # the engine container of the serving pods, whose start-up log the report reads
    serving_container: str
    gateway_address: str | None = None
    gateway_port: int = 80
    labels: dict[str, str] = field(default_factory=dict)
    # the Secret holding the engine's API key under API_KEY_ENV; None: the engine takes no key
    api_key_secret: pulumi.Input[str] | None = None


def selector_text(selector: dict[str, str]) -> str:
    return ",".join(f"{key}={value}" for key, value in sorted(selector.items()))


def benchmark_job_name(service_name: str) -> str:
    return f"{service_name}-bench"


def client_command(args: BenchmarkJobArgs, index: int) -> list[str]:
    """The `vllm bench serve` command line of client `index` (1-based)."""
    command = [
        "vllm",
        "bench",
        "serve",
        "--backend=openai",
        f"--base-url={args.base_url}",
        "--endpoint=/v1/completions",
        f"--model={args.served_model_name}",
        f"--served-model-name={args.served_model_name}",
        f"--tokenizer={args.tokenizer}",
        "--dataset-name=random",
        f"--random-input-len={args.input_len}",
        f"--random-output-len={args.output_len}",
        f"--random-range-ratio={args.range_ratio}",
        "--request-rate=inf",
        f"--max-concurrency={args.concurrency_per_client}",
        f"--num-prompts={args.concurrency_per_client * args.prompts_per_concurrency}",
        "--percentile-metrics=ttft,tpot,itl,e2el",
        "--metric-percentiles=50,99",
        f"--seed={index}",
        f"--ready-check-timeout-sec={args.ready_timeout_seconds}",
        "--save-result",
        f"--result-dir={RESULTS_DIR}",
        f"--result-filename=client-{index}.json",
        "--disable-tqdm",
    ]
    if args.ignore_eos:
        command.insert(command.index("--request-rate=inf"), "--ignore-eos")
    return command


def job_script(args: BenchmarkJobArgs) -> str:
    """Start every client in the background, wait for all, print the combined line; fail if one failed."""
    lines = ["set -u", "status=0", 'pids=""']
    for index in range(1, args.clients + 1):
        log = f"{RESULTS_DIR}/client-{index}.log"
        lines.append(f"{shlex.join(client_command(args, index))} > {log} 2>&1 &")
        lines.append('pids="$pids $!"')
    lines += [
        'for pid in $pids; do wait "$pid" || status=1; done',
        f"tail -n 40 {RESULTS_DIR}/client-*.log",
        f'python3 -c "$SUMMARY_SCRIPT" {RESULTS_DIR} || status=1',
        # the start-up report is a by-product: its failure does not fail the benchmark
        f'python3 -c "$STARTUP_SCRIPT" "$POD_NAMESPACE" {shlex.quote(selector_text(args.serving_selector))} '
        f"{shlex.quote(args.serving_container)} || echo 'startup report failed' >&2",
        'exit "$status"',
    ]
    return "\n".join(lines) + "\n"


def client_api_key_env(secret_name: pulumi.Input[str] | None) -> list[k8s.core.v1.EnvVarArgs]:
    """OPENAI_API_KEY from the engine's Secret (never its value), or nothing when the engine takes no key."""
    if secret_name is None:
        return []
    reference = k8s.core.v1.SecretKeySelectorArgs(name=secret_name, key=API_KEY_ENV)
    return [
        k8s.core.v1.EnvVarArgs(
            name=CLIENT_API_KEY_ENV, value_from=k8s.core.v1.EnvVarSourceArgs(secret_key_ref=reference)
        )
    ]


class BenchmarkJob(pulumi.ComponentResource):
    TYPE = "llm-serving:benchmark:BenchmarkJob"
    service_account: k8s.core.v1.ServiceAccount
    role: k8s.rbac.v1.Role
    role_binding: k8s.rbac.v1.RoleBinding
    node_reader: k8s.rbac.v1.ClusterRole
    node_reader_binding: k8s.rbac.v1.ClusterRoleBinding
    job: k8s.batch.v1.Job
    network_policy: k8s.networking.v1.NetworkPolicy

    def __init__(self, name: str, args: BenchmarkJobArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(self.TYPE, name, None, opts)
        compute = {"cpu": str(args.cpu), "memory": args.memory, "ephemeral-storage": "10Gi"}
        pod_labels = {**args.labels, BENCHMARK_LABEL: args.job_name}
        child = pulumi.ResourceOptions(parent=self)
        metadata = k8s.meta.v1.ObjectMetaArgs(name=args.job_name, namespace=args.namespace, labels=args.labels)
        self.service_account = k8s.core.v1.ServiceAccount(f"{name}-sa", metadata=metadata, opts=child)
        self.role = k8s.rbac.v1.Role(
            f"{name}-role",
            metadata=metadata,
            rules=[
                k8s.rbac.v1.PolicyRuleArgs(api_groups=[""], resources=["pods"], verbs=["get", "list"]),
                k8s.rbac.v1.PolicyRuleArgs(api_groups=[""], resources=["pods/log"], verbs=["get"]),
                k8s.rbac.v1.PolicyRuleArgs(api_groups=[""], resources=["events"], verbs=["list"]),
            ],
            opts=child,
        )
        job_account = k8s.rbac.v1.SubjectArgs(
            kind="ServiceAccount", name=self.service_account.metadata.name, namespace=args.namespace
        )
        self.role_binding = k8s.rbac.v1.RoleBinding(
            f"{name}-binding",
            metadata=metadata,
            role_ref=k8s.rbac.v1.RoleRefArgs(
                api_group="rbac.authorization.k8s.io", kind="Role", name=self.role.metadata.name
            ),
            subjects=[job_account],
            opts=child,
        )
        # The start-up report reads each serving pod's node, to tell a node made for the pod (a cold start) from one
        # that was up (components/startup_report.py): nodes are cluster-scoped, so a ClusterRole, named per namespace.
        nodes = k8s.meta.v1.ObjectMetaArgs(name=f"{args.namespace}-{args.job_name}-nodes", labels=args.labels)
        self.node_reader = k8s.rbac.v1.ClusterRole(
            f"{name}-node-reader",
            metadata=nodes,
            rules=[k8s.rbac.v1.PolicyRuleArgs(api_groups=[""], resources=["nodes"], verbs=["get"])],
            opts=child,
        )
        self.node_reader_binding = k8s.rbac.v1.ClusterRoleBinding(
            f"{name}-node-reader-binding",
            metadata=nodes,
            role_ref=k8s.rbac.v1.RoleRefArgs(
                api_group="rbac.authorization.k8s.io", kind="ClusterRole", name=self.node_reader.metadata.name
            ),
            subjects=[job_account],
            opts=child,
        )
        self.job = k8s.batch.v1.Job(
            f"{name}-job",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=args.job_name,
                namespace=args.namespace,
                labels=args.labels,
                annotations={"pulumi.com/skipAwait": "true", "checkov.io/skip1": TOKEN_SKIP},
            ),
            spec=k8s.batch.v1.JobSpecArgs(
                # a retry would mix a second run into the results of the first
                backoff_limit=0,
                active_deadline_seconds=args.deadline_seconds,
                template=k8s.core.v1.PodTemplateSpecArgs(
                    metadata=k8s.meta.v1.ObjectMetaArgs(labels=pod_labels),
                    spec=k8s.core.v1.PodSpecArgs(
                        restart_policy="Never",
                        service_account_name=self.service_account.metadata.name,
                        enable_service_links=False,
                        node_selector={
                            "cloud.google.com/compute-class": PERFORMANCE_COMPUTE_CLASS,
                            "cloud.google.com/machine-family": args.machine_family,
                            "kubernetes.io/arch": "amd64",
                        },
                        security_context=non_root_pod_context(RUN_AS_USER),
                        containers=[
                            k8s.core.v1.ContainerArgs(
                                name=CONTAINER_NAME,
                                image=args.image,
                                image_pull_policy=pull_policy(args.image),
                                command=["/bin/sh", "-c", job_script(args)],
                                env=[
                                    k8s.core.v1.EnvVarArgs(name="SUMMARY_SCRIPT", value=SUMMARY_SOURCE),
                                    k8s.core.v1.EnvVarArgs(name="STARTUP_SCRIPT", value=STARTUP_SOURCE),
                                    k8s.core.v1.EnvVarArgs(
                                        name="POD_NAMESPACE",
                                        value_from=k8s.core.v1.EnvVarSourceArgs(
                                            field_ref=k8s.core.v1.ObjectFieldSelectorArgs(
                                                field_path="metadata.namespace"
                                            )
                                        ),
                                    ),
                                    # the tokenizer downloads into a writable, non-root home
                                    k8s.core.v1.EnvVarArgs(name="HOME", value=SCRATCH_DIR),
                                    k8s.core.v1.EnvVarArgs(name="HF_HOME", value=f"{SCRATCH_DIR}/huggingface"),
                                    k8s.core.v1.EnvVarArgs(name="VLLM_NO_USAGE_STATS", value="1"),
                                    *(k8s.core.v1.EnvVarArgs(name=key, value=value) for key, value in USER_ENV.items()),
                                    *client_api_key_env(args.api_key_secret),
                                ],
                                resources=k8s.core.v1.ResourceRequirementsArgs(requests=compute, limits=compute),
                                security_context=restricted_container_context(),
                                volume_mounts=[
                                    k8s.core.v1.VolumeMountArgs(name="results", mount_path=RESULTS_DIR),
                                    k8s.core.v1.VolumeMountArgs(name="scratch", mount_path=SCRATCH_DIR),
                                ],
                            )
                        ],
                        volumes=[
                            k8s.core.v1.VolumeArgs(name="results", empty_dir=k8s.core.v1.EmptyDirVolumeSourceArgs()),
                            k8s.core.v1.VolumeArgs(name="scratch", empty_dir=k8s.core.v1.EmptyDirVolumeSourceArgs()),
                        ],
                    ),
                ),
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.role_binding, self.node_reader_binding]),
        )
        if args.gateway_address is None:
            endpoint = k8s.networking.v1.NetworkPolicyPeerArgs(
                pod_selector=k8s.meta.v1.LabelSelectorArgs(match_labels=args.serving_selector)
            )
            endpoint_port = args.serving_port
        else:
            endpoint = k8s.networking.v1.NetworkPolicyPeerArgs(
                ip_block=k8s.networking.v1.IPBlockArgs(cidr=f"{args.gateway_address}/32")
            )
            endpoint_port = args.gateway_port
        self.network_policy = k8s.networking.v1.NetworkPolicy(
            f"{name}-network-policy",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=args.job_name, namespace=args.namespace, labels=args.labels),
            spec=k8s.networking.v1.NetworkPolicySpecArgs(
                pod_selector=k8s.meta.v1.LabelSelectorArgs(match_labels={BENCHMARK_LABEL: args.job_name}),
                policy_types=["Ingress", "Egress"],
                egress=[
                    *dns_and_https_egress(()),
                    k8s.networking.v1.NetworkPolicyEgressRuleArgs(
                        to=[endpoint],
                        ports=[k8s.networking.v1.NetworkPolicyPortArgs(protocol="TCP", port=endpoint_port)],
                    ),
                ],
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.logs_command = pulumi.Output.all(self.job.metadata, args.namespace).apply(
            lambda parts: f"kubectl logs -n {parts[1]} job/{parts[0]['name']} --tail=-1"
        )
        self.register_outputs(
            {"jobName": self.job.metadata.apply(lambda meta: meta["name"]), "logs": self.logs_command}
        )
