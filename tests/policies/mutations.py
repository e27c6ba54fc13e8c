"""Mutations of the real stacks' renders: each breaks one rule the way a hand edit or a wrong setting would."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

OTHER_DEPLOYMENTS = ("llm-metrics-adapter-deployment", "llm-gateway-epp-deployment")


def serving_deployment(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The serving Deployment (with autoscaling on the metrics adapter has one too, in gateway mode the picker)."""
    (found,) = [
        record
        for record in records
        if record["type"] == "kubernetes:apps/v1:Deployment" and record["name"] not in OTHER_DEPLOYMENTS
    ]
    return found


def _picker_pod(records: list[dict[str, Any]]) -> dict[str, Any]:
    spec: dict[str, Any] = _named(records, "llm-gateway-epp-deployment")["inputs"]["spec"]["template"]["spec"]
    return spec


def _vllm(records: list[dict[str, Any]]) -> dict[str, Any]:
    container: dict[str, Any] = serving_deployment(records)["inputs"]["spec"]["template"]["spec"]["containers"][0]
    return container


def _model(records: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    """The serving container serves another checkpoint (the positional model and the served name)."""
    container = _vllm(records)
    container["args"][0] = f"/models/{name}"
    return with_flag(records, "--served-model-name", name)


def _gpu_type(records: list[dict[str, Any]], gpu_type: str) -> list[dict[str, Any]]:
    for priority in _of_type(records, "kubernetes:cloud.google.com/v1:ComputeClass")[0]["inputs"]["spec"]["priorities"]:
        priority["gpu"]["type"] = gpu_type
    return records


def _unkeyed_compile_cache(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The engine's caches moved onto a Cloud Storage FUSE volume every configuration shares (no only-dir)."""
    container = _vllm(records)
    for item in container["env"]:
        if item["name"] == "VLLM_CACHE_ROOT":
            item["value"] = "/var/cache/compile/vllm"
    container["volumeMounts"].append({"name": "compile-cache", "mountPath": "/var/cache/compile"})
    pod: dict[str, Any] = serving_deployment(records)["inputs"]["spec"]["template"]["spec"]
    pod["volumes"].append(
        {
            "name": "compile-cache",
            "csi": {"driver": "gcsfuse.csi.storage.gke.io", "volumeAttributes": {"bucketName": "b"}},
        }
    )
    return records


def with_flag(records: list[dict[str, Any]], flag: str, value: object | None) -> list[dict[str, Any]]:
    container = _vllm(records)
    container["args"] = [arg for arg in container["args"] if arg.split("=", 1)[0] != flag]
    if value is not None:
        container["args"].append(flag if value is True else f"{flag}={value}")
    return records


def _of_type(records: list[dict[str, Any]], type_: str) -> list[dict[str, Any]]:
    return [record for record in records if record["type"] == type_]


def _serving_disks(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        disk
        for disk in _of_type(records, "gcp:compute/disk:Disk")
        if disk["inputs"].get("accessMode") == "READ_ONLY_MANY"
    ]


def _serving_claim(records: list[dict[str, Any]]) -> dict[str, Any]:
    claim_name = serving_deployment(records)["inputs"]["spec"]["template"]["spec"]["volumes"][0][
        "persistentVolumeClaim"
    ]["claimName"]
    (claim,) = [
        record
        for record in _of_type(records, "kubernetes:core/v1:PersistentVolumeClaim")
        if record["inputs"]["metadata"]["name"] == claim_name
    ]
    return claim


def _named(records: list[dict[str, Any]], name: str) -> dict[str, Any]:
    (found,) = [record for record in records if record["name"] == name]
    return found


def _remove(records: list[dict[str, Any]], predicate: Callable[[dict[str, Any]], bool]) -> None:
    records[:] = [record for record in records if not predicate(record)]


def _set_gpus(records: list[dict[str, Any]]) -> None:
    for kind in ("limits", "requests"):
        _vllm(records)["resources"][kind]["nvidia.com/gpu"] = "4"


def _drop_spot(records: list[dict[str, Any]]) -> None:
    (compute_class,) = _of_type(records, "kubernetes:cloud.google.com/v1:ComputeClass")
    for priority in compute_class["inputs"]["spec"]["priorities"]:
        priority.pop("spot", None)


def _read_write_weights(records: list[dict[str, Any]]) -> None:
    spec = serving_deployment(records)["inputs"]["spec"]["template"]["spec"]
    spec["containers"][0]["volumeMounts"][0]["readOnly"] = False
    spec["volumes"][0]["persistentVolumeClaim"].pop("readOnly", None)


def _cluster(records: list[dict[str, Any]]) -> dict[str, Any]:
    (cluster,) = _of_type(records, "gcp:container/cluster:Cluster")
    return cluster


def _unprotect(records: list[dict[str, Any]]) -> None:
    (cluster,) = _of_type(records, "gcp:container/cluster:Cluster")
    cluster["inputs"]["deletionProtection"] = False
    cluster["options"]["protect"] = False


def _epp_cpu(records: list[dict[str, Any]]) -> None:
    resources = _picker_pod(records)["containers"][0]["resources"]
    resources["requests"]["cpu"] = "500m"


def _epp_leader_election_off(records: list[dict[str, Any]]) -> None:
    container = _picker_pod(records)["containers"][0]
    container["args"] = [arg for arg in container["args"] if arg != "--ha-enable-leader-election"]


def _prod_load_balancer(annotations: dict[str, str], **spec: Any) -> Callable[[list[dict[str, Any]]], None]:
    def mutate(records: list[dict[str, Any]]) -> None:
        service = _of_type(records, "kubernetes:core/v1:Service")[0]["inputs"]
        service["spec"].update(type="LoadBalancer", **spec)
        service["metadata"]["annotations"] = annotations

    return mutate


def _move_disks(records: list[dict[str, Any]]) -> None:
    for disk in _serving_disks(records):
        disk["inputs"]["zone"] = "us-central1-a"


def _grace(records: list[dict[str, Any]]) -> None:
    serving_deployment(records)["inputs"]["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 120


def _one_benchmark_client(records: list[dict[str, Any]]) -> None:
    """The weights Job turned into a benchmark driving the whole stack's 24,000 requests from one client."""
    job = _of_type(records, "kubernetes:batch/v1:Job")[0]
    (container,) = job["inputs"]["spec"]["template"]["spec"]["containers"]
    script = "vllm bench serve --base-url=http://qwen-serving:8000 --max-concurrency=24000"
    container["command"] = ["/bin/sh", "-c", script]


MUTATIONS: dict[str, tuple[str, Callable[[list[dict[str, Any]]], object], str]] = {
    "gpus-4": ("prod", _set_gpus, "LLM-GPU-001"),
    "no-gpu-selector": (
        "dev",
        lambda r: serving_deployment(r)["inputs"]["spec"]["template"]["spec"].pop("nodeSelector"),
        "LLM-GPU-001",
    ),
    "on-demand": ("dev", _drop_spot, "LLM-GPU-002"),
    "spot-grace-120": ("dev", _grace, "LLM-GPU-003"),
    "cluster-without-a4": (
        "prod",
        lambda r: _of_type(r, "gcp:container/cluster:Cluster")[0]["inputs"].update(location="europe-west1"),
        "LLM-GPU-004",
    ),
    # prod may land on Flex-start: Spot's 25 s there cuts its drain short for nothing
    "flex-start-grace-25": (
        "prod",
        lambda r: serving_deployment(r)["inputs"]["spec"]["template"]["spec"].update(terminationGracePeriodSeconds=25),
        "LLM-GPU-003",
    ),
    "tensor-parallel-2": ("prod", lambda r: with_flag(r, "--tensor-parallel-size", 2), "LLM-VLLM-001"),
    "tensor-parallel-8": (
        "prod",
        lambda r: with_flag(with_flag(r, "--data-parallel-size", 1), "--tensor-parallel-size", 8),
        "LLM-VLLM-002",
    ),
    "kv-cache-auto": ("prod", lambda r: with_flag(r, "--kv-cache-dtype", "auto"), "LLM-VLLM-003"),
    "mtp-5": (
        "prod",
        lambda r: with_flag(r, "--speculative-config", '{"method":"mtp","num_speculative_tokens":5}'),
        "LLM-VLLM-004",
    ),
    "mtp-2": (
        "prod",
        lambda r: with_flag(r, "--speculative-config", '{"method":"mtp","num_speculative_tokens":2}'),
        "LLM-VLLM-005",
    ),
    "memory-0.95": ("prod", lambda r: with_flag(r, "--gpu-memory-utilization", 0.95), "LLM-VLLM-006"),
    "max-num-seqs-512": ("prod", lambda r: with_flag(r, "--max-num-seqs", 512), "LLM-VLLM-007"),
    "max-model-len-131072": ("prod", lambda r: with_flag(r, "--max-model-len", 131072), "LLM-VLLM-008"),
    "no-mamba-align": ("prod", lambda r: with_flag(r, "--mamba-cache-mode", None), "LLM-VLLM-009"),
    "mamba-block-12": ("prod", lambda r: with_flag(r, "--mamba-block-size", 12), "LLM-VLLM-009"),
    "image-0.18.0": ("prod", lambda r: _vllm(r).update(image="vllm/vllm-openai:v0.18.0"), "LLM-VLLM-010"),
    "nvfp4-kv-cache": (
        "prod",
        lambda r: with_flag(_model(r, "nvidia/Qwen3.5-397B-A17B-NVFP4"), "--kv-cache-dtype", "nvfp4"),
        "LLM-VLLM-011",
    ),
    "nvfp4-on-h200": (
        "prod",
        lambda r: _gpu_type(_model(r, "nvidia/Qwen3.5-397B-A17B-NVFP4"), "nvidia-h200-141gb"),
        "LLM-VLLM-012",
    ),
    "mtp-on-llama": ("prod", lambda r: _model(r, "meta-llama/Llama-3.1-70B-Instruct"), "LLM-VLLM-013"),
    "moe-without-expert-parallel": ("prod", lambda r: _model(r, "Qwen/Qwen3.5-122B-A10B-FP8"), "LLM-VLLM-014"),
    "token-in-env": (
        "prod",
        lambda r: _vllm(r)["env"].append({"name": "HF_TOKEN", "value": "hf_" + "Qx7" * 12}),
        "LLM-SEC-001",
    ),
    "token-in-secret": (
        "dev",
        lambda r: _of_type(r, "kubernetes:core/v1:Secret")[0]["inputs"]["stringData"].update(token="hf_literal_token"),
        "LLM-SEC-001",
    ),
    "aws-key-in-annotation": (
        "prod",
        lambda r: _vllm(r)["env"].append({"name": "MY_SETTING", "value": "AKIA" + "Q7Z3X9M2K5P8R4T6"}),
        "LLM-SEC-004",
    ),
    "api-key-argument": ("prod", lambda r: _vllm(r)["args"].extend(["--api-key", "correct-horse"]), "LLM-SEC-004"),
    "api-key-argument-equals": ("dev", lambda r: _vllm(r)["args"].append("--api-key=correct-horse"), "LLM-SEC-004"),
    "trust-remote-code": ("prod", lambda r: _vllm(r)["args"].append("--trust-remote-code"), "LLM-SEC-002"),
    "cors-wildcard": ("staging", lambda r: _vllm(r)["args"].extend(["--allowed-origins", '["*"]']), "LLM-SEC-003"),
    "weights-read-write": ("prod", _read_write_weights, "LLM-WGT-001"),
    "weights-claim-rwo": (
        "prod",
        lambda r: _serving_claim(r)["inputs"]["spec"].update(accessModes=["ReadWriteOnce"]),
        "LLM-WGT-001",
    ),
    "weights-other-zone": ("prod", _move_disks, "LLM-WGT-002"),
    "no-proxy-subnet": (
        "staging",
        lambda r: _remove(r, lambda record: record["inputs"].get("purpose") == "REGIONAL_MANAGED_PROXY"),
        "LLM-NET-001",
    ),
    "no-network-services-api": (
        "staging",
        lambda r: _remove(r, lambda record: record["inputs"].get("service") == "networkservices.googleapis.com"),
        "LLM-NET-001",
    ),
    "no-gateway-api-channel": (
        "staging",
        lambda r: _of_type(r, "gcp:container/cluster:Cluster")[0]["inputs"].pop("gatewayApiConfig"),
        "LLM-NET-001",
    ),
    "no-health-check-policy": (
        "staging",
        lambda r: _remove(r, lambda record: record["type"].endswith(":HealthCheckPolicy")),
        "LLM-NET-001",
    ),
    "no-backend-policy": (
        "staging",
        lambda r: _remove(r, lambda record: record["type"].endswith(":GCPBackendPolicy")),
        "LLM-NET-001",
    ),
    "epp-500m": ("staging", _epp_cpu, "LLM-NET-002"),
    "epp-off-c4": (
        "staging",
        lambda r: _picker_pod(r)["nodeSelector"].pop("cloud.google.com/machine-family"),
        "LLM-NET-006",
    ),
    "epp-standby-without-leader-election": ("staging", _epp_leader_election_off, "LLM-NET-007"),
    "external-load-balancer": (
        "prod",
        _prod_load_balancer({"llm-serving/allow-load-balancer": "true"}),
        "LLM-NET-008",
    ),
    "internal-load-balancer-open": (
        "prod",
        _prod_load_balancer(
            {"networking.gke.io/load-balancer-type": "Internal", "llm-serving/allow-load-balancer": "true"}
        ),
        "LLM-NET-009",
    ),
    "load-balancer": (
        "prod",
        lambda r: _of_type(r, "kubernetes:core/v1:Service")[0]["inputs"]["spec"].update(type="LoadBalancer"),
        "LLM-NET-003",
    ),
    "autoscaled-replicas-declared": (
        "staging",
        lambda r: _named(r, "llm-vllm-deployment")["options"].update(ignoreChanges=[]),
        "LLM-OPS-001",
    ),
    "scheduled-replicas-declared": (
        "dev",
        lambda r: _named(r, "llm-vllm-deployment")["options"].update(ignoreChanges=[]),
        "LLM-OPS-001",
    ),
    "autoscaler-quick-scale-down": (
        "staging",
        lambda r: _of_type(r, "kubernetes:autoscaling/v2:HorizontalPodAutoscaler")[0]["inputs"]["spec"]["behavior"][
            "scaleDown"
        ].update(stabilizationWindowSeconds=60),
        "LLM-OPS-002",
    ),
    "queue-autoscaling-slow-start": (
        "staging",
        lambda r: _of_type(r, "kubernetes:autoscaling/v2:HorizontalPodAutoscaler")[0]["inputs"]["metadata"][
            "annotations"
        ].update({"llm-serving/time-to-serve-seconds": "3600"}),
        "LLM-OPS-005",
    ),
    "revision-main": (
        "prod",
        lambda r: serving_deployment(r)["inputs"]["metadata"]["annotations"].update(
            {"llm-serving/model-revision": "main"}
        ),
        "LLM-WGT-003",
    ),
    "external-gateway": (
        "staging",
        lambda r: _of_type(r, "kubernetes:gateway.networking.k8s.io/v1:Gateway")[0]["inputs"]["spec"].update(
            gatewayClassName="gke-l7-regional-external-managed"
        ),
        "LLM-NET-004",
    ),
    "external-gateway-over-http": (
        "staging",
        lambda r: _of_type(r, "kubernetes:gateway.networking.k8s.io/v1:Gateway")[0]["inputs"]["spec"].update(
            gatewayClassName="gke-l7-regional-external-managed"
        ),
        "LLM-NET-010",
    ),
    "no-epp-firewall": (
        "staging",
        lambda r: _remove(r, lambda record: record["name"] == "llm-gateway-epp-firewall"),
        "LLM-NET-005",
    ),
    "default-node-account": (
        "prod",
        lambda r: _cluster(r)["inputs"].pop("clusterAutoscaling"),
        "LLM-GKE-001",
    ),
    "private-nodes-no-nat": (
        "dev",
        lambda r: _remove(r, lambda record: record["type"] == "gcp:compute/routerNat:RouterNat"),
        "LLM-GKE-002",
    ),
    "pinned-patch": (
        "prod",
        lambda r: _cluster(r)["inputs"].update(minMasterVersion="1.34.0-gke.1626000"),
        "LLM-GKE-003",
    ),
    "prod-public-nodes": (
        "prod",
        lambda r: _cluster(r)["inputs"].update(privateClusterConfig={"enablePrivateNodes": False}),
        "LLM-GKE-004",
    ),
    "prod-open-control-plane": (
        "prod",
        lambda r: _cluster(r)["inputs"].pop("masterAuthorizedNetworksConfig"),
        "LLM-GKE-004",
    ),
    "prod-authorized-everywhere": (
        "prod",
        lambda r: _cluster(r)["inputs"]["masterAuthorizedNetworksConfig"].update(
            cidrBlocks=[{"cidrBlock": "0.0.0.0/0", "displayName": "anywhere"}]
        ),
        "LLM-GKE-004",
    ),
    "shared-compile-cache-unkeyed": ("dev", _unkeyed_compile_cache, "LLM-VLLM-015"),
    "no-container-file-system-api": (
        "prod",
        lambda r: _remove(r, lambda record: record["name"] == "llm-containerfilesystem-api"),
        "LLM-GKE-005",
    ),
    "subnet-without-private-google-access": (
        "dev",
        lambda r: _of_type(r, "gcp:compute/subnetwork:Subnetwork")[0]["inputs"].update(privateIpGoogleAccess=False),
        "LLM-GKE-005",
    ),
    "benchmark-one-client": ("prod", _one_benchmark_client, "LLM-BENCH-001"),
    "prod-cluster-unprotected": ("prod", _unprotect, "LLM-PROD-001"),
    "prod-disk-unprotected": (
        "prod",
        lambda r: _serving_disks(r)[0]["inputs"].update(deletionPolicy="DELETE"),
        "LLM-PROD-001",
    ),
}
