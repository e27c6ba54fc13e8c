"""Cross-field and derived-value checks, run on the typed config before anything is declared.

The names and flags come from the components' own pure functions, so a check cannot drift from what the program
declares. Each check returns one line (the key, what is wrong, what is allowed) or None.
"""

from __future__ import annotations

import ipaddress
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from common.checkpoints import checkpoint_gib
from common.code_loading_env import CODE_LOADING_ENV, loads_code
from common.cron import WEEKDAYS
from common.grammars import DNS_1035_LABEL, DNS_1123_LABEL, DNS_LABEL_MAX
from common.quantities import quantity_value
from components.autoscaling import ADAPTER_NAMESPACE
from components.benchmark import benchmark_job_name
from components.cluster import (
    SERVICE_ACCOUNT_ID_MAX,
    nat_name,
    network_name,
    node_service_account_id,
    router_name,
    subnet_name,
)
from components.crd_readiness import platform_crds_job_name
from components.endpoint_picker import epp_name
from components.gateway import epp_firewall_name, firewall_name, proxy_subnet_name
from components.routing import internal_service_name
from components.vllm import CACHE_ROOT, TMP_DIR, engine_env
from components.weights import (
    TOKEN_DIRECTORY,
    download_job_name,
    weights_disk_name,
    weights_fill_disk_name,
    weights_object_name,
)
from schemas.vllm_args import check_serve_args, extra_arg_values, flag_name
from schemas.vllm_reasoning_parsers import registered as registered_reasoning_parsers
from schemas.vllm_releases import image_release
from stacks.args import engine_flags, flex_start_recycling_seconds, serve_arguments
from stacks.capacity.measurements import in_effect
from stacks.capacity.time_to_serve import recorded_startup, wake_lead_seconds
from stacks.config.capacity import FlexStartSource
from stacks.config.profiles import profile_for_model
from stacks.config.quoting import quote
from stacks.config.routing import RoutingMode
from stacks.config.stack import StackConfig
from stacks.config.weights import MAX_DISK_GIB

# Compute Engine names and Kubernetes Services: RFC 1035 labels; Jobs and volumes: RFC 1123 labels
# (common/grammars.py says where each rule comes from).
GCE_NAME = re.compile(DNS_1035_LABEL)
GCE_NAME_MAX = 63
SERVICE_NAME = re.compile(DNS_1035_LABEL)
OBJECT_NAME = re.compile(DNS_1123_LABEL)
# IAM: a service account id is 6-30 lower-case letters, digits and hyphens, a letter first.
SERVICE_ACCOUNT_ID = re.compile(rf"^[a-z][-a-z0-9]{{4,{SERVICE_ACCOUNT_ID_MAX - 2}}}[a-z0-9]$")

# --- vLLM flags -------------------------------------------------------------------------------
# vllm@v0.19.0 vllm/utils/argparse_utils.py FlexibleArgumentParser.parse_args: underscores in a flag name become dashes
# (`--max_model_len` == `--max-model-len`), `-O3`, `-O=3` and `-O 3` mean `--optimization-level 3`, `--json-arg.key
# value` sets one key of a JSON flag, `--model` is moved to the positional model, `--config FILE` reads more flags from
# a file. argparse expands a unique prefix of a long flag (allow_abbrev is left on). vllm/engine/arg_utils.py adds -tp,
# -dp, -pp, -q. Flags the stack owns although it does not always pass them: they would move the model, the listening
# address or the GPU layout away from what the Deployment, probes and routing expect.
RESERVED_FLAGS = {
    "model": "weights.model",
    "config": "the typed engine keys (a config file is not part of the stack)",
    "host": "the stack (probes and routing reach the pod address)",
    "uds": "the stack (probes and routing need TCP)",
    # vllm/entrypoints/cli/serve.py ServeSubcommand.cmd: `--grpc` runs the gRPC server and returns, no HTTP.
    "grpc": "the stack (clients, probes and routing speak the OpenAI HTTP API; --grpc serves gRPC instead)",
    # uvicorn serves HTTPS with a key and certificate: the probes, the Service and the Gateway reach the
    # pods over plain HTTP, so the first new pod would never be ready and the rollout would stall.
    **dict.fromkeys(
        ("ssl-keyfile", "ssl-certfile", "ssl-ca-certs", "ssl-cert-reqs", "ssl-ciphers"),
        "the stack (probes, the Service and the Gateway reach the pods over plain HTTP)",
    ),
    "pipeline-parallel-size": "engine.dataParallelSize x engine.tensorParallelSize (8 GPUs per node)",
    "data-parallel-size-local": "engine.dataParallelSize",
    **dict.fromkeys(
        (
            "data-parallel-rank",
            "data-parallel-address",
            "data-parallel-rpc-port",
            "data-parallel-start-rank",
            "data-parallel-external-lb",
            "data-parallel-hybrid-lb",
            "data-parallel-multi-port-external-lb",
            "headless",
        ),
        "routing.mode (gateway runs one vllm serve per data-parallel rank, clusterip one for all)",
    ),
    "help": "nothing (vLLM would print help and exit)",
    "version": "nothing (vLLM would print its version and exit)",
}
# Flags a typed key owns even when the stack does not render them (the key is off or null).
OPTIONAL_TYPED_FLAGS = {
    "enable-expert-parallel": "engine.enableExpertParallel",
    "attention-backend": "engine.attentionBackend",
    "speculative-config": "engine.speculative",
    "mamba-cache-mode": "engine.mambaCacheMode",
    "mamba-block-size": "engine.mambaBlockSize",
    "language-model-only": "engine.languageModelOnly",
    "moe-backend": "engine.moeBackend",
    "max-cudagraph-capture-size": "engine.maxCudagraphCaptureSize",
    "stream-interval": "engine.streamInterval",
    "reasoning-parser": "engine.reasoningParser",
}
FLAG_KEYS = {
    "served-model-name": "engine.servedModelName",
    "speculative-config": "engine.speculative",
    "optimization-level": "engine.optimizationLevel",
    "shutdown-timeout": "the pod's termination grace (Spot only or not, capacity.sources)",
}

# --- environment ------------------------------------------------------------------------------
# Variables the stack relies on besides those engine_env() sets: a Service named vllm injects VLLM_PORT (vLLM then fails
# to start), the token must stay in its Secret, GPU visibility is the device plugin's.
RESERVED_ENV = {
    "VLLM_PORT": "a Service-style VLLM_PORT breaks vLLM's port parsing",
    "VLLM_HOST_IP": "the pod address is set by Kubernetes",
    "HF_TOKEN": "the token stays in its Secret (pulumi config set --secret hfToken)",
    "HUGGING_FACE_HUB_TOKEN": "the token stays in its Secret (pulumi config set --secret hfToken)",
    "HF_HUB_OFFLINE": "weights load from the disk, never from the Hub",
    "TRANSFORMERS_OFFLINE": "weights load from the disk, never from the Hub",
    "HF_HOME": "the stack's cache and weights layout",
    "CUDA_VISIBLE_DEVICES": "the device plugin assigns the 8 GPUs",
    "NVIDIA_VISIBLE_DEVICES": "the device plugin assigns the 8 GPUs",
}

# --- mounts -----------------------------------------------------------------------------------
# What the serving pod mounts or the images need at fixed paths (components/vllm.py mounts /dev/shm,
# its caches and /tmp; the vLLM image keeps Python under /usr).
NEEDED_PATHS = (
    CACHE_ROOT,
    TMP_DIR,
    "/",
    "/bin",
    "/dev",
    "/dev/shm",
    "/etc",
    "/home",
    "/lib",
    "/lib64",
    "/proc",
    "/root",
    "/root/.cache",
    "/run",
    "/sbin",
    "/sys",
    "/usr",
    "/var",
    "/vllm-workspace",
    TOKEN_DIRECTORY,
)
# /var/run/secrets: the download Job's token volume and Kubernetes' service account token.
NO_MOUNTS_UNDER = ("/dev", "/proc", "/sys", "/root/.cache", "/var/run/secrets", CACHE_ROOT, TMP_DIR)

# --- network ----------------------------------------------------------------------------------
# Pod range per node: Autopilot preconfigures max Pods per node (GKE docs "Configure maximum Pods
# per node"); 32 Pods take a /26, but the docs reviewed here did not state the size for every
# version, so the check assumes a /24 per node, the Standard default. Not verified at the source.
POD_ADDRESSES_PER_NODE = 256
# CPU nodes besides the A4 nodes: system pods, the download Job, the endpoint picker.
OTHER_NODES = 4
# Compute Engine reserves four addresses in every primary range (VPC docs "Subnets").
SUBNET_RESERVED_ADDRESSES = 4
# The smallest Services range GKE accepts (GKE "IP address range planning" lists /27; not re-checked
# at the source here).
SERVICES_MIN_PREFIX = 27

# --- weights ----------------------------------------------------------------------------------
# During the download the disk holds the Git LFS objects and the checkout (components/weights.py).
DOWNLOAD_COPIES = 2
DISK_HEADROOM = 1.1


@dataclass(frozen=True)
class DerivedName:
    what: str
    value: str
    limit: int
    grammar: re.Pattern[str]
    key: str


def derived_names(config: StackConfig) -> list[DerivedName]:
    """Every name the program derives from config, with the platform's limit and grammar."""
    cluster = config.cluster.name
    model, revision = config.weights.model, config.weights.revision
    # An existing cluster brings its own network and node service account.
    names = (
        []
        if config.cluster.existing
        else [
            DerivedName("VPC network", network_name(cluster), GCE_NAME_MAX, GCE_NAME, "cluster.name"),
            DerivedName("subnet", subnet_name(cluster), GCE_NAME_MAX, GCE_NAME, "cluster.name"),
            DerivedName("Cloud Router", router_name(cluster), GCE_NAME_MAX, GCE_NAME, "cluster.name"),
            DerivedName("Cloud NAT", nat_name(cluster), GCE_NAME_MAX, GCE_NAME, "cluster.name"),
            DerivedName(
                "node service account",
                node_service_account_id(cluster),
                SERVICE_ACCOUNT_ID_MAX,
                SERVICE_ACCOUNT_ID,
                "cluster.name",
            ),
        ]
    )
    names += [
        DerivedName(
            "fill disk", weights_fill_disk_name(cluster, model, revision), GCE_NAME_MAX, GCE_NAME, "cluster.name"
        ),
        DerivedName(
            "serving disk and snapshot",
            weights_disk_name(cluster, model, revision),
            GCE_NAME_MAX,
            GCE_NAME,
            "cluster.name",
        ),
        DerivedName("weights volume", weights_object_name(model, revision), DNS_LABEL_MAX, OBJECT_NAME, "weights"),
        DerivedName("download Job", download_job_name(model, revision), DNS_LABEL_MAX, OBJECT_NAME, "weights"),
        DerivedName(
            "serving Deployment and Service", config.routing.service_name, DNS_LABEL_MAX, SERVICE_NAME, "routing"
        ),
    ]
    if config.benchmark.enabled:
        names.append(
            DerivedName(
                "benchmark Job", benchmark_job_name(config.routing.service_name), DNS_LABEL_MAX, OBJECT_NAME, "routing"
            )
        )
    if config.routing.internal_load_balancer:
        names.append(
            DerivedName(
                "internal load balancer Service",
                internal_service_name(config.routing.service_name),
                DNS_LABEL_MAX,
                SERVICE_NAME,
                "routing",
            )
        )
    if config.routing.mode is RoutingMode.gateway:
        names += [
            DerivedName("firewall rule", firewall_name(cluster), GCE_NAME_MAX, GCE_NAME, "cluster.name"),
            DerivedName("firewall rule", epp_firewall_name(cluster), GCE_NAME_MAX, GCE_NAME, "cluster.name"),
            DerivedName(
                "endpoint picker", epp_name(config.routing.service_name), DNS_LABEL_MAX, SERVICE_NAME, "routing"
            ),
        ]
        if config.routing.gateway.existing_proxy_subnet is None:
            names.append(
                DerivedName("proxy-only subnet", proxy_subnet_name(cluster), GCE_NAME_MAX, GCE_NAME, "cluster.name")
            )
    names.append(
        DerivedName(
            "CRD wait Job", platform_crds_job_name(config.routing.service_name), DNS_LABEL_MAX, OBJECT_NAME, "routing"
        )
    )
    return names


def _names_fit(config: StackConfig) -> str | None:
    for name in sorted(derived_names(config), key=lambda item: len(item.value) - item.limit, reverse=True):
        if len(name.value) > name.limit:
            return (
                f"{name.key}: the derived {name.what} name {quote(name.value, 70)} has {len(name.value)} "
                f"characters; the limit is {name.limit}, shorten {name.key}"
            )
        if not name.grammar.fullmatch(name.value):
            return f"{name.key}: the derived {name.what} name {quote(name.value)} is not a valid name"
    return None


def stack_engine_args(config: StackConfig) -> list[str]:
    """The `vllm serve` arguments the program passes, without the user's `extraArgs`."""
    return serve_arguments(config.model_copy(update={"engine": config.engine.model_copy(update={"extra_args": []})}))


def stack_engine_env(config: StackConfig) -> dict[str, str]:
    """The engine environment the program sets, without the user's `extraEnv`."""
    return engine_env(
        engine_flags(config.engine.model_copy(update={"extra_env": {}}), config.workload.concurrency_per_node)
    )


def typed_flags(config: StackConfig) -> dict[str, str]:
    """The flags the stack sets itself, mapped to the key that sets each."""
    flags: dict[str, str] = {}
    for token in stack_engine_args(config):
        name = flag_name(token)
        if name:
            base = name.removeprefix("no-")
            key = FLAG_KEYS.get(base) or _engine_key(base)
            flags[base] = key
    flags.update(OPTIONAL_TYPED_FLAGS)
    flags.update(RESERVED_FLAGS)
    return flags


def _engine_key(flag: str) -> str:
    parts = flag.split("-")
    return "engine." + parts[0] + "".join(part.capitalize() for part in parts[1:])


def _owner(source: str) -> str:
    """Who owns a flag, as a refusal says it: a key to set instead, or why no setting may give it."""
    for refused in ("the stack (", "nothing ("):
        if source.startswith(refused):
            return f"which no setting may give: {source.removeprefix(refused).removesuffix(')')}"
    return f"which the stack sets from {source}; set that instead"


def _extra_args(config: StackConfig) -> str | None:
    owned = typed_flags(config)
    seen: set[str] = set()
    previous_takes_value = False
    for index, token in enumerate(config.engine.extra_args):
        where = f"engine.extraArgs[{index}]"
        name = flag_name(token)
        if name is None:
            if not previous_takes_value:
                return (
                    f"{where}: {quote(token)} is not a flag and follows no flag; vLLM would read it as the "
                    "model (set weights.model); allowed: --flag, --flag=value or --flag value"
                )
            previous_takes_value = False
            continue
        if name == "":
            return f"{where}: {quote(token)} is not a known short flag; use the long --flag form"
        base = name.removeprefix("no-") if name.removeprefix("no-") in owned else name
        if base in owned:
            return f"{where}: {quote(token)} sets --{base}, {_owner(owned[base])}"
        abbreviated = sorted(flag for flag in owned if flag.startswith(base))
        if abbreviated:
            return (
                f"{where}: {quote(token)} abbreviates --{abbreviated[0]} (argparse expands unique prefixes), "
                f"{_owner(owned[abbreviated[0]])}"
            )
        if base in seen:
            return f"{where}: {quote(token)} repeats --{base}; give each flag once"
        seen.add(base)
        previous_takes_value = "=" not in token and not (token.startswith("-O") and len(token) > 2)
    return None


def _extra_env(config: StackConfig) -> str | None:
    stack_env = stack_engine_env(config)
    both = sorted(set(config.engine.extra_env) & set(config.engine.secret_env))
    if both:
        return f"engine.secretEnv.{both[0]}: also set in engine.extraEnv; set each variable once"
    for setting, name in [
        *(("extraEnv", name) for name in config.engine.extra_env),
        *(("secretEnv", name) for name in config.engine.secret_env),
    ]:
        if name in stack_env:
            return f"engine.{setting}.{name}: the stack sets {name}={quote(stack_env[name])}; it may not be overridden"
        if name in RESERVED_ENV:
            return f"engine.{setting}.{name}: reserved ({RESERVED_ENV[name]})"
        if loads_code(name):
            return (
                f"engine.{setting}.{name}: changes which code the loader or Python loads or runs; not allowed "
                f"({CODE_LOADING_ENV})"
            )
    return None


def stack_namespaces(config: StackConfig) -> dict[str, str]:
    """The namespaces the program declares besides cluster.namespace, and what declares each."""
    namespaces = {}
    if config.autoscaling.enabled:
        namespaces[ADAPTER_NAMESPACE] = "the Custom Metrics Stackdriver Adapter (autoscaling.enabled)"
    return namespaces


def _namespace_free(config: StackConfig) -> str | None:
    declared = stack_namespaces(config)
    namespace = config.cluster.namespace
    if namespace in declared:
        return (
            f"cluster.namespace: {quote(namespace)} is the namespace the stack creates for {declared[namespace]}; "
            "choose another name"
        )
    return None


# vLLM turns DeepGEMM off for Qwen 3.5 on Blackwell because its E8M0 scales degrade accuracy (vllm v0.19.0 wheel:
# vllm/utils/deep_gemm.py:26-42 `_DEEPGEMM_BLACKWELL_EXCLUDED_MODEL_TYPES`, vllm/config/vllm.py:705-722 "Auto-disabled
# DeepGemm ... on Blackwell"; https://github.com/vllm-project/vllm/pull/38083). Setting VLLM_USE_DEEP_GEMM at all picks
# DeepGEMM for the FP8 MoE layers again (v0.19.0 vllm/model_executor/layers/fused_moe/oracle/fp8.py:349-361; v0.33.0
# same file :484-503, where the auto-disable runs only when the variable is unset).
DEEP_GEMM_ENV = "VLLM_USE_DEEP_GEMM"


def _no_deep_gemm_override(config: StackConfig) -> str | None:
    if DEEP_GEMM_ENV in config.engine.extra_env:
        return (
            f"engine.extraEnv.{DEEP_GEMM_ENV}: refused: setting it overrides vLLM's own accuracy fix, which turns "
            "DeepGEMM off for Qwen 3.5 on Blackwell (https://github.com/vllm-project/vllm/pull/38083); leave it unset"
        )
    return None


# The `--quantization` each profile's checkpoint implies. vLLM reads the method from the checkpoint's
# config.json (`quantization_config.quant_method`; a ModelOpt checkpoint with quant_algo NVFP4 becomes
# `modelopt_fp4`) and refuses an explicit `--quantization` that differs ("Quantization method specified
# in the model config (...) does not match the quantization method specified in the `quantization`
# argument": vllm/config/model.py `_verify_quantization` and `_parse_quant_hf_config`), so the pod
# crash-loops on every node. Qwen's FP8 checkpoints say `fp8`; NVIDIA's NVFP4 checkpoint is ModelOpt NVFP4.
CHECKPOINT_QUANTIZATION = {"fp8": "fp8", "nvfp4": "modelopt_fp4"}
# Except where the checkpoint's own detection wins: `_verify_quantization` sets the method to an
# override a quantization config claims before it compares (`self.quantization = quantization_override`),
# and ModelOpt's NVFP4 config claims a modelopt / NVFP4 checkpoint whatever --quantization says
# (vllm/model_executor/layers/quantization/modelopt.py `ModelOptNvFp4Config.override_quantization_method`):
# there the flag is silently replaced, and the manifest would show a method that is not run.
OVERRIDDEN_OUTCOME = {
    "modelopt_fp4": "vLLM replaces it with {implied} without a word, so the flag says what is not run"
}


def _quantization_matches_checkpoint(config: StackConfig) -> str | None:
    profile = profile_for_model(config.weights.model)
    if profile is None:
        return None  # a checkpoint of no profile: its config.json is not known here
    implied = CHECKPOINT_QUANTIZATION[profile.checkpoint.quantization]
    for index, value in extra_arg_values(config.engine.extra_args, "quantization"):
        if value != implied:
            outcome = OVERRIDDEN_OUTCOME.get(
                implied, "vLLM refuses any method but {implied} for it and the pod crash-loops"
            )
            return (
                f"engine.extraArgs[{index}]: --quantization {quote(value, 40)} contradicts {config.weights.model}, "
                f"a {profile.checkpoint.quantization} checkpoint ({outcome.format(implied=implied)}); remove the "
                f"flag (vLLM reads the method from the checkpoint) or give {implied}"
            )
    return None


def _serve_line_accepted(config: StackConfig) -> str | None:
    """The whole `vllm serve` line against the vendored argument table of the image's release: a
    flag that release does not know, a value it refuses (schemas/vllm_args.py, from its own parser)."""
    version = image_release(config.engine.image)
    if version is None:
        return None  # refused by engine.image's own validation
    problems = check_serve_args(serve_arguments(config), version)
    if not problems:
        return None
    problem = problems[0]
    name = flag_name(problem.split(":", 1)[0].split("=", 1)[0].strip()) or ""
    key = typed_flags(config).get(name.removeprefix("no-"))
    if key is None:
        index = next((index for index, token in enumerate(config.engine.extra_args) if flag_name(token) == name), None)
        key = "engine.extraArgs" if index is None else f"engine.extraArgs[{index}]"
    return f"{key}: vLLM {version} refuses it: {problem}"


def _reasoning_parser_registered(config: StackConfig) -> str | None:
    """vLLM's API server refuses an unregistered --reasoning-parser at start-up (KeyError), so the pods
    crash-loop; the names per release are vendored (schemas/vllm_reasoning_parsers.py). A
    --reasoning-parser-plugin may register others: then the name is left to vLLM."""
    parser, version = config.engine.reasoning_parser, image_release(config.engine.image)
    if parser is None or version is None or "reasoning-parser-plugin" in map(flag_name, config.engine.extra_args):
        return None
    names = registered_reasoning_parsers(version)
    if names is None or parser in names:
        return None
    return (
        f"engine.reasoningParser: {quote(parser)} is not a reasoning parser vLLM {version} registers (its API "
        f"server refuses it at start-up and the pods crash-loop); allowed: {', '.join(names)}, or null"
    )


def _mount_path(config: StackConfig) -> str | None:
    path = config.weights.mount_path
    for needed in NEEDED_PATHS:
        if path == needed or needed.startswith(path.rstrip("/") + "/"):
            return f"weights.mountPath: {quote(path)} would hide {needed}, which the pod needs; use a new directory"
    for parent in NO_MOUNTS_UNDER:
        if path.startswith(parent + "/"):
            return f"weights.mountPath: {quote(path)} is inside {parent}; use a new top-level directory like /models"
    return None


def _tokens_fit(config: StackConfig) -> str | None:
    workload, engine = config.workload, config.engine
    total = workload.max_prompt_tokens + workload.max_output_tokens
    if total > engine.max_model_len:
        return (
            f"workload: maxPromptTokens + maxOutputTokens = {total} exceeds engine.maxModelLen "
            f"{engine.max_model_len}; raise maxModelLen or lower the workload"
        )
    return None


def _disk_holds_checkpoint(config: StackConfig) -> str | None:
    weights = config.weights
    size = weights.checkpoint_gib if weights.checkpoint_gib is not None else checkpoint_gib(weights.model)
    if size is None:
        return None
    needed = math.ceil(round(size * DOWNLOAD_COPIES * DISK_HEADROOM, 6))  # 100 x 2 x 1.1 is 220, not 220.00...03
    if weights.size_gib < needed:
        source = "weights.checkpointGib" if weights.checkpoint_gib is not None else f"an estimate for {weights.model}"
        allowed = (
            f"use at least {needed}"
            if needed <= MAX_DISK_GIB
            else f"no disk holds it (sizeGib is at most {MAX_DISK_GIB}): allowed a checkpoint of at most "
            f"{math.floor(MAX_DISK_GIB / (DOWNLOAD_COPIES * DISK_HEADROOM))} GiB"
        )
        return (
            f"weights.sizeGib: {weights.size_gib} GiB cannot hold a {size:.0f} GiB checkpoint ({source}) twice "
            f"during the download plus 10% headroom; {allowed}"
        )
    return None


def _flex_start_recycling_spreads(config: StackConfig) -> str | None:
    """Flex-start nodes started together reach their run limit together; their replacements are
    requested nodeRecyclingLeadTimeSeconds ahead, and the pods then move one at a time (the serving
    PodDisruptionBudget), each through a node and a model load: the lead must cover every move."""
    if config.capacity.nodes is None:  # a `target` not yet resolved by the planner
        return None
    needed = flex_start_recycling_seconds(config)
    for index, source in enumerate(config.capacity.sources):
        if not isinstance(source, FlexStartSource):
            continue
        key = f"capacity.sources[{index}]"
        if needed >= source.max_run_duration_seconds:
            return (
                f"{key}: moving {config.max_replicas} pods one at a time off Flex-start nodes takes about {needed} s, "
                f"not shorter than the nodes' run of {source.max_run_duration_seconds} s; run fewer pods on "
                "Flex-start or raise maxRunDurationSeconds"
            )
        lead = source.node_recycling_lead_time_seconds
        if lead is not None and lead < needed:
            return (
                f"{key}.nodeRecyclingLeadTimeSeconds: {lead} s; the {config.max_replicas} Flex-start nodes reach their "
                f"run limit together and their pods move one at a time, about {needed // config.max_replicas} s "
                f"each: allowed {needed} s or more (null computes it)"
            )
    return None


def _ranges_fit(config: StackConfig) -> str | None:
    network = config.cluster.network
    # a `target` not yet resolved by the planner; an existing cluster's ranges are not these
    if config.capacity.nodes is None or config.cluster.existing:
        return None
    # Each picker replica beyond the first is another C4 node (Performance class: one pod per node).
    standbys = config.routing.gateway.epp_replicas - 1 if config.routing.mode is RoutingMode.gateway else 0
    # Every A4 node that may be up at once: the replica ceiling (the autoscaler's or the plan's), and the
    # held nodes of a capacity buffer beyond it.
    held = config.warm_capacity.nodes if config.warm_capacity.enabled else 0
    nodes = max(config.capacity.nodes, config.max_replicas) + held + OTHER_NODES + standbys
    pods = ipaddress.IPv4Network(network.pods_cidr)
    if pods.num_addresses < nodes * POD_ADDRESSES_PER_NODE:
        prefix = 32 - math.ceil(math.log2(nodes * POD_ADDRESSES_PER_NODE))
        return (
            f"cluster.network.podsCidr: {pods} has room for {pods.num_addresses // POD_ADDRESSES_PER_NODE} nodes "
            f"({POD_ADDRESSES_PER_NODE} Pod addresses each); {nodes} are needed, use /{prefix} or larger"
        )
    subnet = ipaddress.IPv4Network(network.subnet_cidr)
    if subnet.num_addresses - SUBNET_RESERVED_ADDRESSES < nodes:
        return f"cluster.network.subnetCidr: {subnet} has too few node addresses for {nodes} nodes"
    services = ipaddress.IPv4Network(network.services_cidr)
    if services.prefixlen > SERVICES_MIN_PREFIX:
        return f"cluster.network.servicesCidr: {services} is smaller than /{SERVICES_MIN_PREFIX}, GKE's minimum"
    return None


# An A4 node (a4-highgpu-8g): 224 vCPU, 3,968 GB, 12 TiB local SSD (Compute Engine "Accelerator-optimized machine
# family"); Autopilot rejects a larger pod (GKE "Resource requests in Autopilot"); the allocatable is not verified.
A4_NODE_CAPACITY = {"cpu": "224", "memory": "3968G", "ephemeralStorage": "12Ti"}


def _pod_fits_node(config: StackConfig) -> str | None:
    engine = config.engine
    for key, value in (("cpu", engine.cpu), ("memory", engine.memory), ("ephemeralStorage", engine.ephemeral_storage)):
        amount, node = quantity_value(value), quantity_value(A4_NODE_CAPACITY[key])
        if amount is not None and node is not None and amount > node:
            return f"engine.{key}: {quote(value)} is more than an A4 node has; at most {A4_NODE_CAPACITY[key]}"
    return None


def _wake_after_the_sleep(config: StackConfig) -> str | None:
    """A led wake (wakeLeadSeconds, or the wake's time to serve, unbounded) fires after the sleep it follows."""
    hours, schedule = config.schedule.business_hours, config.schedule
    if not schedule.enabled or hours is None or schedule.entries:
        return None
    days = sorted(WEEKDAYS.index(day) for day in hours.days)
    apart = min((day - before) % 7 or 7 for day, before in zip(days, days[-1:] + days[:-1], strict=True))
    (start_h, start_m), (end_h, end_m) = (map(int, clock.split(":")) for clock in (hours.start, hours.end))
    off = min(86_400 * apart - 3600 * (end_h - start_h) - 60 * (end_m - start_m), 86_400)  # led_cron: within a day
    lead = wake_lead_seconds(config)  # led_cron leads by whole minutes, rounded up
    if 60 * math.ceil(lead / 60) < off:
        return None
    report = None if schedule.wake_lead_seconds is not None else recorded_startup(config)
    basis = "wakeLeadSeconds, else the wake's time to serve: plan.md"
    if report is not None:  # a recorded report moved it: the setting the line names is not the user's
        basis = f"the wake's time to serve, from the start-up report of {report.date} in {quote(in_effect().name)}"
    return (
        f"schedule: the wake step, led by {lead:,} s ({basis}), must "
        f"fire after the sleep it follows and within a day: at most {off - 60:,} s; shorten the lead or the hours"
    )


CHECKS: tuple[Callable[[StackConfig], str | None], ...] = (
    _names_fit,
    _namespace_free,
    _extra_args,
    _serve_line_accepted,
    _reasoning_parser_registered,
    _quantization_matches_checkpoint,
    _extra_env,
    _no_deep_gemm_override,
    _mount_path,
    _tokens_fit,
    _disk_holds_checkpoint,
    _flex_start_recycling_spreads,
    _ranges_fit,
    _pod_fits_node,
    _wake_after_the_sleep,
)


def problems(config: StackConfig) -> Iterator[str]:
    for check in CHECKS:
        problem = check(config)
        if problem:
            yield problem


def derived_problem(config: StackConfig) -> str | None:
    """The first cross-field problem, or None."""
    return next(problems(config), None)
