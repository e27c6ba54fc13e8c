"""A passing and a failing fixture per policy: small stacks of resource records (the shape of a
render's resources.json), named `<POLICY-ID>_pass` / `<POLICY-ID>_fail`.

`serving_stack()` is a compact stack that follows the recipe and passes every rule; each fixture
changes the one thing its rule is about.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from policies.rules.startup import compile_cache_key
from tests.policy_stacks import (
    OTHER_ZONE,
    QWEN_397B_NVFP4,
    ZONE,
    Records,
    gateway_stack,
    kubernetes,
    named,
    record,
    serving_stack,
)


def external_gateway(records: Records, annotations: dict[str, str] | None = None) -> Records:
    gateway = inputs_of(records, "llm-gateway")
    gateway["spec"]["gatewayClassName"] = "gke-l7-regional-external-managed"
    if annotations:
        gateway["metadata"]["annotations"] = annotations
    return records


def with_https_listener(records: Records) -> Records:
    listener = {"name": "https", "protocol": "HTTPS", "port": 443, "hostname": "llm.example.com"}
    tls = {"mode": "Terminate", "certificateRefs": [{"group": "", "kind": "Secret", "name": "llm-tls"}]}
    inputs_of(records, "llm-gateway")["spec"]["listeners"] = [{**listener, "tls": tls}]
    return records


def cluster_inputs(records: Records) -> dict[str, Any]:
    return inputs_of(records, "llm-gke")


def inputs_of(records: Records, name: str) -> dict[str, Any]:
    inputs: dict[str, Any] = named(records, name)["inputs"]
    return inputs


def pod_spec(records: Records) -> dict[str, Any]:
    spec: dict[str, Any] = inputs_of(records, "llm-vllm")["spec"]["template"]["spec"]
    return spec


def vllm_container(records: Records) -> dict[str, Any]:
    container: dict[str, Any] = pod_spec(records)["containers"][0]
    return container


def with_compile_cache(records: Records, folder: str | None) -> Records:
    """The engine's caches on a Cloud Storage FUSE volume in `folder` (None: the keyed folder of the
    container's own configuration)."""
    container = vllm_container(records)
    container["env"] = [*container["env"], {"name": "VLLM_CACHE_ROOT", "value": "/var/cache/compile/vllm"}]
    env = {item["name"]: item["value"] for item in container["env"]}
    key = folder or compile_cache_key(container["image"], container["args"], env)
    container.setdefault("volumeMounts", []).append({"name": "compile-cache", "mountPath": "/var/cache/compile"})
    pod_spec(records).setdefault("volumes", []).append(
        {
            "name": "compile-cache",
            "csi": {
                "driver": "gcsfuse.csi.storage.gke.io",
                "volumeAttributes": {"bucketName": "cache", "mountOptions": f"only-dir={key},uid=10001,gid=10001"},
            },
        }
    )
    return records


def set_flag(records: Records, flag: str, value: object | None) -> Records:
    """Replace (or with None remove) one vLLM flag; True sets a boolean flag alone (`--enable-chunked-prefill`)."""
    container = vllm_container(records)
    container["args"] = [arg for arg in container["args"] if arg.split("=", 1)[0] != flag]
    if value is not None:
        container["args"].append(flag if value is True else f"{flag}={value}")
    return records


def set_gpus(records: Records, count: str) -> Records:
    for kind in ("limits", "requests"):
        vllm_container(records)["resources"][kind]["nvidia.com/gpu"] = count
    return records


def priorities(records: Records) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = inputs_of(records, "llm-compute-class")["spec"]["priorities"]
    return found


def edited(records: Records, change: Callable[[Records], object]) -> Records:
    change(records)
    return records


def without(records: Records, name: str) -> Records:
    return [item for item in records if item["name"] != name]


def b200_on_accelerator_selector(records: Records) -> Records:
    """The pod selects B200 directly (no ComputeClass) and asks for Spot."""
    pod_spec(records)["nodeSelector"] = {
        "cloud.google.com/gke-accelerator": "nvidia-b200",
        "cloud.google.com/gke-spot": "true",
    }
    return records


def reservation_capacity(records: Records) -> Records:
    second = priorities(records)[1]
    second.pop("spot")
    second["reservations"] = {"affinity": "Specific", "specific": [{"name": "a4-reserved", "project": "shared"}]}
    return records


def model(records: Records, name: str) -> Records:
    set_flag(records, "--model", f"/models/{name}")
    return set_flag(records, "--served-model-name", name)


def token_free_downloader(records: Records) -> Records:
    """Strings that mention hf_ without being a token."""
    vllm_container(records)["env"] += [
        {"name": "HF_HUB_ENABLE_HF_TRANSFER", "value": "1"},
        {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token"}}},
    ]
    pod_spec(records)["initContainers"] = [
        {
            "name": "check",
            "command": ["python", "-c", "from huggingface_hub import hf_hub_download; print(hf_transfer)"],
        }
    ]
    return records


def read_write_claim(records: Records) -> Records:
    inputs_of(records, "llm-weights-pvc")["spec"]["accessModes"] = ["ReadWriteOnce"]
    inputs_of(records, "llm-weights-pv")["spec"]["accessModes"] = ["ReadWriteOnce"]
    return records


def picker_pod(records: Records) -> dict[str, Any]:
    spec: dict[str, Any] = inputs_of(records, "llm-gateway-epp-deployment")["spec"]["template"]["spec"]
    return spec


def epp_cpu(records: Records, cpu: str) -> Records:
    resources = picker_pod(records)["containers"][0]["resources"]
    resources["requests"]["cpu"] = cpu
    return records


def epp_machine_family(records: Records, family: str) -> Records:
    picker_pod(records)["nodeSelector"]["cloud.google.com/machine-family"] = family
    return records


def epp_without_leader_election(records: Records) -> Records:
    container = picker_pod(records)["containers"][0]
    container["args"] = [arg for arg in container["args"] if arg != "--ha-enable-leader-election"]
    return records


INTERNAL_ANNOTATIONS = {"networking.gke.io/load-balancer-type": "Internal", "llm-serving/allow-load-balancer": "true"}


def internal_load_balancer(records: Records, source_ranges: list[str] | None) -> Records:
    service = inputs_of(load_balancer(records, INTERNAL_ANNOTATIONS), "llm-service")
    if source_ranges is not None:
        service["spec"]["loadBalancerSourceRanges"] = source_ranges
    return records


def load_balancer(records: Records, annotations: dict[str, str] | None = None) -> Records:
    service = inputs_of(records, "llm-service")
    service["spec"]["type"] = "LoadBalancer"
    if annotations:
        service["metadata"]["annotations"] = annotations
    return records


def autoscaled(records: Records, scale_down: dict[str, Any] | None = None, ignore_replicas: bool = True) -> Records:
    """The serving Deployment under an HPA (scale-down behaviour as given, the stack's by default)."""
    behavior = {
        "scaleDown": scale_down
        if scale_down is not None
        else {"stabilizationWindowSeconds": 1920, "policies": [{"type": "Pods", "value": 1, "periodSeconds": 600}]}
    }
    hpa = kubernetes(
        "autoscaling/v2",
        "HorizontalPodAutoscaler",
        "qwen-serving",
        {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "qwen-serving"},
            "minReplicas": 1,
            "maxReplicas": 12,
            "metrics": [],
            "behavior": behavior,
        },
    )
    if ignore_replicas:
        named(records, "llm-vllm")["options"]["ignoreChanges"] = ["spec.replicas"]
    return [*records, record("kubernetes:autoscaling/v2:HorizontalPodAutoscaler", "llm-hpa", hpa)]


def queue_autoscaled(records: Records, held: bool, held_seconds: str | None = None) -> Records:
    """The serving Deployment under a queue-depth HPA that states a time to serve of 960 s over a
    bound of 180 s, with or without a CapacityBuffer holding a node for it (and the time to serve on
    a held node it states, `held_seconds`)."""
    records = autoscaled(records)
    hpa = named(records, "llm-hpa")["inputs"]
    hpa["spec"]["metrics"] = [
        {
            "type": "Pods",
            "pods": {
                "metric": {"name": "prometheus.googleapis.com|vllm:num_requests_waiting|gauge"},
                "target": {"type": "AverageValue", "averageValue": "100"},
            },
        }
    ]
    hpa["metadata"]["annotations"] = {
        "llm-serving/time-to-serve-seconds": "960",
        "llm-serving/time-to-serve-bound-seconds": "180",
        **({"llm-serving/held-time-to-serve-seconds": held_seconds} if held_seconds is not None else {}),
    }
    if not held:
        return records
    buffer = kubernetes(
        "autoscaling.x-k8s.io/v1beta1",
        "CapacityBuffer",
        "qwen-serving-held",
        {"scalableRef": {"apiGroup": "apps", "kind": "Deployment", "name": "qwen-serving"}, "replicas": 1},
    )
    return [*records, record("kubernetes:autoscaling.x-k8s.io/v1beta1:CapacityBuffer", "llm-held", buffer)]


def benchmark_job(records: Records, concurrency: list[int], cpu: str = "15") -> Records:
    """The stack plus a benchmark Job running one `vllm bench serve` client per concurrency given."""
    script = "\n".join(
        f"vllm bench serve --base-url=http://qwen-serving:8000 --max-concurrency={limit} --seed={index} "
        f"> /results/client-{index}.log 2>&1 &"
        for index, limit in enumerate(concurrency, 1)
    )
    container = {
        "name": "bench",
        "image": "vllm/vllm-openai:v0.19.0",
        "command": ["/bin/sh", "-c", script],
        "resources": {"requests": {"cpu": cpu}, "limits": {"cpu": cpu}},
    }
    job = kubernetes("batch/v1", "Job", "qwen-serving-bench", {"template": {"spec": {"containers": [container]}}})
    return [*records, record("kubernetes:batch/v1:Job", "llm-benchmark-job", job)]


@dataclass(frozen=True)
class PolicyFixture:
    records: Records
    config: dict[str, Any] = field(default_factory=dict)


FIXTURES: dict[str, Callable[[], PolicyFixture]] = {
    "LLM-GPU-001_pass": lambda: PolicyFixture(b200_on_accelerator_selector(serving_stack())),
    "LLM-GPU-001_fail": lambda: PolicyFixture(set_gpus(serving_stack(), "4")),
    "LLM-GPU-002_pass": lambda: PolicyFixture(reservation_capacity(serving_stack())),
    "LLM-GPU-002_fail": lambda: PolicyFixture(edited(serving_stack(), lambda r: priorities(r)[1].pop("spot"))),
    "LLM-GPU-003_pass": lambda: PolicyFixture(serving_stack()),
    "LLM-GPU-003_fail": lambda: PolicyFixture(edited(serving_stack(), lambda r: priorities(r).pop(0))),
    "LLM-GPU-004_pass": lambda: PolicyFixture(serving_stack(zones=("us-south1-b",))),
    "LLM-GPU-004_fail": lambda: PolicyFixture(serving_stack(zones=("europe-west1-b",))),
    "LLM-VLLM-001_pass": lambda: PolicyFixture(
        set_flag(set_flag(serving_stack(), "--tensor-parallel-size", 2), "--data-parallel-size", 4)
    ),
    "LLM-VLLM-001_fail": lambda: PolicyFixture(set_flag(serving_stack(), "--tensor-parallel-size", 2)),
    "LLM-VLLM-002_pass": lambda: PolicyFixture(
        set_flag(
            set_flag(model(serving_stack(), "nvidia/Qwen3.5-397B-A17B-NVFP4"), "--tensor-parallel-size", 8),
            "--data-parallel-size",
            1,
        )
    ),
    "LLM-VLLM-002_fail": lambda: PolicyFixture(
        set_flag(set_flag(serving_stack(), "--tensor-parallel-size", 8), "--data-parallel-size", 1)
    ),
    "LLM-VLLM-003_pass": lambda: PolicyFixture(set_flag(serving_stack(), "--kv-cache-dtype", "fp8")),
    "LLM-VLLM-003_fail": lambda: PolicyFixture(set_flag(serving_stack(), "--kv-cache-dtype", None)),
    "LLM-VLLM-004_pass": lambda: PolicyFixture(serving_stack()),
    "LLM-VLLM-004_fail": lambda: PolicyFixture(
        set_flag(serving_stack(), "--speculative-config", '{"method":"mtp","num_speculative_tokens":5}')
    ),
    "LLM-VLLM-005_pass": lambda: PolicyFixture(serving_stack()),
    "LLM-VLLM-005_fail": lambda: PolicyFixture(
        set_flag(serving_stack(), "--speculative-config", '{"method":"qwen3_5_mtp","num_speculative_tokens":2}')
    ),
    "LLM-VLLM-006_pass": lambda: PolicyFixture(
        set_flag(set_flag(serving_stack(), "--speculative-config", None), "--gpu-memory-utilization", 0.95)
    ),
    "LLM-VLLM-006_fail": lambda: PolicyFixture(set_flag(serving_stack(), "--gpu-memory-utilization", 0.95)),
    "LLM-VLLM-007_pass": lambda: PolicyFixture(serving_stack()),
    "LLM-VLLM-007_fail": lambda: PolicyFixture(set_flag(serving_stack(), "--max-num-seqs", 512)),
    "LLM-VLLM-008_pass": lambda: PolicyFixture(set_flag(serving_stack(), "--max-model-len", 4096)),
    "LLM-VLLM-008_fail": lambda: PolicyFixture(set_flag(serving_stack(), "--max-model-len", None)),
    "LLM-VLLM-009_pass": lambda: PolicyFixture(
        set_flag(
            set_flag(model(serving_stack(), "meta-llama/Llama-3.1-8B"), "--mamba-cache-mode", None),
            "--mamba-block-size",
            None,
        )
    ),
    "LLM-VLLM-009_fail": lambda: PolicyFixture(set_flag(serving_stack(), "--mamba-block-size", 12)),
    "LLM-VLLM-010_pass": lambda: PolicyFixture(
        set_flag(
            edited(serving_stack(), lambda r: vllm_container(r).update(image="vllm/vllm-openai:v0.18.0")),
            "--kv-cache-dtype",
            None,
        )
    ),
    "LLM-VLLM-010_fail": lambda: PolicyFixture(
        edited(serving_stack(), lambda r: vllm_container(r).update(image="vllm/vllm-openai:v0.18.0"))
    ),
    "LLM-VLLM-011_pass": lambda: PolicyFixture(model(serving_stack(), QWEN_397B_NVFP4)),
    "LLM-VLLM-011_fail": lambda: PolicyFixture(
        set_flag(model(serving_stack(), QWEN_397B_NVFP4), "--kv-cache-dtype", "nvfp4")
    ),
    "LLM-VLLM-012_pass": lambda: PolicyFixture(model(serving_stack(), QWEN_397B_NVFP4)),
    "LLM-VLLM-012_fail": lambda: PolicyFixture(
        edited(
            model(serving_stack(), QWEN_397B_NVFP4), lambda r: priorities(r)[1]["gpu"].update(type="nvidia-h200-141gb")
        )
    ),
    "LLM-VLLM-013_pass": lambda: PolicyFixture(serving_stack()),
    "LLM-VLLM-013_fail": lambda: PolicyFixture(model(serving_stack(), "meta-llama/Llama-3.1-8B")),
    "LLM-VLLM-014_pass": lambda: PolicyFixture(
        edited(
            model(serving_stack(), "Qwen/Qwen3.5-35B-A3B-FP8"),
            lambda r: vllm_container(r)["args"].append("--enable-expert-parallel"),
        )
    ),
    "LLM-VLLM-014_fail": lambda: PolicyFixture(model(serving_stack(), "Qwen/Qwen3.5-35B-A3B-FP8")),
    "LLM-SEC-001_pass": lambda: PolicyFixture(token_free_downloader(serving_stack())),
    "LLM-SEC-001_fail": lambda: PolicyFixture(
        edited(
            serving_stack(),
            lambda r: vllm_container(r)["env"].append({"name": "HF_TOKEN", "value": "hf_" + "aB3" * 12}),
        )
    ),
    "LLM-SEC-002_pass": lambda: PolicyFixture(
        edited(serving_stack(), lambda r: vllm_container(r)["args"].append("--no-trust-remote-code"))
    ),
    "LLM-SEC-002_fail": lambda: PolicyFixture(
        edited(serving_stack(), lambda r: vllm_container(r)["args"].append("--trust-remote-code"))
    ),
    "LLM-SEC-003_pass": lambda: PolicyFixture(
        edited(
            serving_stack(), lambda r: vllm_container(r)["args"].append('--allowed-origins=["https://chat.example"]')
        )
    ),
    "LLM-SEC-003_fail": lambda: PolicyFixture(
        edited(serving_stack(), lambda r: vllm_container(r)["args"].extend(["--allowed-origins", '["*"]']))
    ),
    "LLM-SEC-004_pass": lambda: PolicyFixture(
        edited(
            serving_stack(),
            lambda r: vllm_container(r)["env"].append(
                {
                    "name": "OPENAI_API_KEY",
                    "valueFrom": {"secretKeyRef": {"name": "engine-env", "key": "OPENAI_API_KEY"}},
                }
            ),
        )
    ),
    "LLM-SEC-004_fail": lambda: PolicyFixture(
        edited(serving_stack(), lambda r: vllm_container(r)["env"].append({"name": "DB_PASSWORD", "value": "hunter2"}))
    ),
    "LLM-WGT-001_pass": lambda: PolicyFixture(
        edited(serving_stack(), lambda r: pod_spec(r)["volumes"][0]["persistentVolumeClaim"].pop("readOnly"))
    ),
    "LLM-WGT-001_fail": lambda: PolicyFixture(read_write_claim(serving_stack())),
    "LLM-WGT-002_pass": lambda: PolicyFixture(serving_stack(zones=(ZONE, OTHER_ZONE))),
    "LLM-WGT-002_fail": lambda: PolicyFixture(
        edited(serving_stack(), lambda r: inputs_of(r, f"llm-weights-disk-{ZONE}").update(zone=OTHER_ZONE))
    ),
    "LLM-NET-001_pass": lambda: PolicyFixture(gateway_stack()),
    "LLM-NET-001_fail": lambda: PolicyFixture(without(gateway_stack(), "llm-proxy-subnet")),
    "LLM-NET-002_pass": lambda: PolicyFixture(epp_cpu(gateway_stack(), "10000m")),
    "LLM-NET-002_fail": lambda: PolicyFixture(epp_cpu(gateway_stack(), "500m")),
    "LLM-NET-003_pass": lambda: PolicyFixture(
        load_balancer(serving_stack(), {"llm-serving/allow-load-balancer": "true"})
    ),
    "LLM-NET-003_fail": lambda: PolicyFixture(load_balancer(serving_stack())),
    "LLM-OPS-001_pass": lambda: PolicyFixture(autoscaled(serving_stack())),
    "LLM-OPS-001_fail": lambda: PolicyFixture(autoscaled(serving_stack(), ignore_replicas=False)),
    "LLM-OPS-002_pass": lambda: PolicyFixture(autoscaled(serving_stack())),
    "LLM-OPS-002_fail": lambda: PolicyFixture(autoscaled(serving_stack(), scale_down={})),
    "LLM-OPS-005_pass": lambda: PolicyFixture(queue_autoscaled(serving_stack(), held=True, held_seconds="120")),
    "LLM-OPS-005_fail": lambda: PolicyFixture(queue_autoscaled(serving_stack(), held=False)),
    "LLM-NET-004_pass": lambda: PolicyFixture(
        external_gateway(gateway_stack(), {"llm-serving/allow-external-gateway": "true"})
    ),
    "LLM-NET-004_fail": lambda: PolicyFixture(external_gateway(gateway_stack())),
    "LLM-NET-010_pass": lambda: PolicyFixture(with_https_listener(external_gateway(gateway_stack()))),
    "LLM-NET-010_fail": lambda: PolicyFixture(external_gateway(gateway_stack())),
    "LLM-NET-005_pass": lambda: PolicyFixture(gateway_stack()),
    "LLM-NET-005_fail": lambda: PolicyFixture(without(gateway_stack(), "llm-gateway-epp-firewall")),
    "LLM-NET-006_pass": lambda: PolicyFixture(gateway_stack()),
    "LLM-NET-006_fail": lambda: PolicyFixture(epp_machine_family(gateway_stack(), "e2")),
    "LLM-NET-007_pass": lambda: PolicyFixture(
        edited(
            epp_without_leader_election(gateway_stack()),
            lambda r: inputs_of(r, "llm-gateway-epp-deployment")["spec"].update(replicas=1),
        )
    ),
    "LLM-NET-007_fail": lambda: PolicyFixture(epp_without_leader_election(gateway_stack())),
    "LLM-NET-008_pass": lambda: PolicyFixture(internal_load_balancer(serving_stack(), ["10.0.0.0/20"])),
    "LLM-NET-008_fail": lambda: PolicyFixture(
        load_balancer(serving_stack(), {"llm-serving/allow-load-balancer": "true"})
    ),
    "LLM-NET-009_pass": lambda: PolicyFixture(
        internal_load_balancer(serving_stack(), ["10.0.0.0/20", "192.168.0.0/24", "100.64.0.0/10"])
    ),
    "LLM-NET-009_fail": lambda: PolicyFixture(internal_load_balancer(serving_stack(), ["0.0.0.0/0", "127.0.0.0/8"])),
    "LLM-GKE-001_pass": lambda: PolicyFixture(serving_stack()),
    "LLM-GKE-001_fail": lambda: PolicyFixture(
        edited(serving_stack(), lambda r: cluster_inputs(r).pop("clusterAutoscaling"))
    ),
    "LLM-GKE-002_pass": lambda: PolicyFixture(serving_stack()),
    "LLM-GKE-002_fail": lambda: PolicyFixture(without(serving_stack(), "llm-nat")),
    "LLM-GKE-003_pass": lambda: PolicyFixture(serving_stack()),
    "LLM-GKE-003_fail": lambda: PolicyFixture(
        edited(serving_stack(), lambda r: cluster_inputs(r).update(minMasterVersion="1.34.0-gke.1626000"))
    ),
    "LLM-VLLM-015_pass": lambda: PolicyFixture(with_compile_cache(serving_stack(), None)),
    # A flag changed after the folder was keyed: the folder holds another configuration's kernels.
    "LLM-VLLM-015_fail": lambda: PolicyFixture(
        set_flag(with_compile_cache(serving_stack(), None), "--max-num-seqs", 4096)
    ),
    "LLM-GKE-005_pass": lambda: PolicyFixture(serving_stack()),
    "LLM-GKE-005_fail": lambda: PolicyFixture(
        edited(
            without(without(serving_stack(), "llm-containerfilesystem-api"), "llm-node-sa-image-streaming"),
            lambda r: named(r, "llm-subnet")["inputs"].update(privateIpGoogleAccess=False),
        )
    ),
    "LLM-GKE-004_pass": lambda: PolicyFixture(serving_stack()),
    "LLM-GKE-004_fail": lambda: PolicyFixture(
        edited(
            serving_stack(),
            lambda r: cluster_inputs(r)["masterAuthorizedNetworksConfig"].update(
                cidrBlocks=[{"cidrBlock": "0.0.0.0/1"}, {"cidrBlock": "128.0.0.0/1"}]
            ),
        )
    ),
    "LLM-BENCH-001_pass": lambda: PolicyFixture(benchmark_job(serving_stack(), [1000] * 24)),
    "LLM-BENCH-001_fail": lambda: PolicyFixture(benchmark_job(serving_stack(), [24000])),
    "LLM-PROD-001_pass": lambda: PolicyFixture(serving_stack("dev")),
    "LLM-PROD-001_fail": lambda: PolicyFixture(
        edited(serving_stack(), lambda r: inputs_of(r, f"llm-weights-disk-{ZONE}").update(deletionPolicy="DELETE"))
    ),
    "LLM-WGT-003_pass": lambda: PolicyFixture(serving_stack("dev")),
    "LLM-WGT-003_fail": lambda: PolicyFixture(
        edited(
            serving_stack("dev"),
            lambda r: inputs_of(r, "llm-vllm")["metadata"]["annotations"].update(
                {"llm-serving/model-revision": "main"}
            ),
        )
    ),
}
