"""Compact stacks of resource records (the shape of a render's resources.json) that follow the
recipe and pass every rule: `serving_stack()` (clusterip) and `gateway_stack()`; the policy
fixtures (tests/policy_fixtures.py) change one thing each."""

from __future__ import annotations

import json
from typing import Any

from tests.recipe import RECIPE_ARGS, SERVED_NAME

ZONE = "us-central1-b"
OTHER_ZONE = "us-central1-c"
CLASS_NAME = "b200-serving"
CLAIM = "weights"
VOLUME = "weights"
DISK = "llm-serving-weights"
QWEN_27B = SERVED_NAME
QWEN_397B_NVFP4 = "nvidia/Qwen3.5-397B-A17B-NVFP4"
COMMIT = "0123456789abcdef0123456789abcdef01234567"

Records = list[dict[str, Any]]


def record(
    type_: str, name: str, inputs: dict[str, Any], *, protect: bool = False, provider: str | None = None
) -> dict[str, Any]:
    if provider is None and not type_.startswith("pulumi:providers:"):
        provider = "gcp" if type_.startswith("gcp:") else "k8s"
    return {
        "type": type_,
        "name": name,
        "parent": None,
        "provider": provider,
        "custom": True,
        "inputs": inputs,
        "options": {
            "protect": protect,
            "retainOnDelete": False,
            "deleteBeforeReplace": False,
            "dependsOn": [],
            "ignoreChanges": [],
            "replaceOnChanges": [],
            "additionalSecretOutputs": [],
        },
    }


def kubernetes(api_version: str, kind: str, name: str, spec: dict[str, Any], **metadata: Any) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": name, **metadata}, "spec": spec}


def zone_terms(zones: list[str], key: str = "topology.kubernetes.io/zone") -> dict[str, Any]:
    return {"nodeSelectorTerms": [{"matchExpressions": [{"key": key, "operator": "In", "values": zones}]}]}


def named(records: Records, name: str) -> dict[str, Any]:
    return next(item for item in records if item["name"] == name)


def serving_stack(environment: str = "prod", zones: tuple[str, ...] = (ZONE,)) -> Records:
    protected = environment == "prod"
    labels = {"llm-serving/environment": environment}
    container = {
        "name": "vllm",
        "image": "vllm/vllm-openai:v0.19.0",
        "command": ["vllm", "serve"],
        "args": list(RECIPE_ARGS),
        "env": [{"name": "HF_HUB_OFFLINE", "value": "1"}],
        "resources": {"limits": {"nvidia.com/gpu": "8"}, "requests": {"nvidia.com/gpu": "8"}},
        "volumeMounts": [{"name": "weights", "mountPath": "/models", "readOnly": True}],
    }
    deployment = kubernetes(
        "apps/v1",
        "Deployment",
        "qwen-serving",
        {
            "replicas": 12,
            "template": {
                "spec": {
                    "containers": [container],
                    "nodeSelector": {"cloud.google.com/compute-class": CLASS_NAME},
                    "affinity": {
                        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": zone_terms([*zones])}
                    },
                    "terminationGracePeriodSeconds": 600,
                    "volumes": [{"name": "weights", "persistentVolumeClaim": {"claimName": CLAIM, "readOnly": True}}],
                }
            },
        },
        annotations={
            "llm-serving/concurrency-per-pod": "2000",
            "llm-serving/max-request-tokens": "2304",
            "llm-serving/model-revision": COMMIT,
        },
        labels=labels,
    )
    priority = {
        "machineType": "a4-highgpu-8g",
        "gpu": {"type": "nvidia-b200", "count": 8, "driverVersion": "latest"},
        "location": {"zones": [*zones]},
    }
    compute_class = kubernetes(
        "cloud.google.com/v1",
        "ComputeClass",
        CLASS_NAME,
        {
            "priorities": [
                {**priority, "flexStart": {"enabled": True, "nodeRecycling": {"leadTimeSeconds": 3600}}},
                {**priority, "spot": True},
            ],
            "whenUnsatisfiable": "DoNotScaleUp",
        },
    )
    multi_zone = len(zones) > 1
    handle_zone = "multi-zone" if multi_zone else zones[0]
    volume = kubernetes(
        "v1",
        "PersistentVolume",
        VOLUME,
        {
            "accessModes": ["ReadOnlyMany"],
            "csi": {
                "driver": "pd.csi.storage.gke.io",
                "readOnly": True,
                "volumeHandle": f"projects/my-llm/zones/{handle_zone}/disks/{DISK}",
            },
            "nodeAffinity": {"required": zone_terms([*zones], "topology.gke.io/zone")},
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": "",
        },
    )
    claim = kubernetes(
        "v1",
        "PersistentVolumeClaim",
        CLAIM,
        {"accessModes": ["ReadOnlyMany"], "storageClassName": "", "volumeName": VOLUME},
        namespace="llm-serving",
    )
    return [
        record(
            "pulumi:providers:gcp",
            "gcp",
            {"project": "my-llm", "defaultLabels": json.dumps({"environment": environment})},
        ),
        record("pulumi:providers:kubernetes", "k8s", {"kubeconfig": "[secret]"}),
        record(
            "gcp:container/cluster:Cluster",
            "llm-gke",
            {
                "name": "llm-serving",
                "enableAutopilot": True,
                "deletionProtection": protected,
                "minMasterVersion": "1.34",
                "privateClusterConfig": {"enablePrivateNodes": True},
                "masterAuthorizedNetworksConfig": {"gcpPublicCidrsAccessEnabled": False},
                "clusterAutoscaling": {
                    "autoProvisioningDefaults": {"serviceAccount": "llm-serving-nodes@my-llm.iam.gserviceaccount.com"}
                },
            },
            protect=protected,
        ),
        record(
            "gcp:compute/routerNat:RouterNat", "llm-nat", {"name": "llm-serving-nat", "router": "llm-serving-router"}
        ),
        # Image streaming's requirements (LLM-GKE-005).
        record(
            "gcp:compute/subnetwork:Subnetwork",
            "llm-subnet",
            {"name": "llm-serving-subnet", "privateIpGoogleAccess": True},
        ),
        record(
            "gcp:projects/service:Service",
            "llm-containerfilesystem-api",
            {"service": "containerfilesystem.googleapis.com"},
        ),
        record(
            "gcp:projects/iAMMember:IAMMember",
            "llm-node-sa-image-streaming",
            {
                "role": "roles/serviceusage.serviceUsageConsumer",
                "member": "serviceAccount:llm-serving-nodes@my-llm.iam.gserviceaccount.com",
            },
        ),
        record(
            "kubernetes:core/v1:Namespace", "llm-namespace", {"metadata": {"name": "llm-serving", "labels": labels}}
        ),
        record("kubernetes:cloud.google.com/v1:ComputeClass", "llm-compute-class", compute_class),
        record("kubernetes:apps/v1:Deployment", "llm-vllm", deployment),
        record("kubernetes:core/v1:PersistentVolume", "llm-weights-pv", volume),
        record("kubernetes:core/v1:PersistentVolumeClaim", "llm-weights-pvc", claim),
        *(
            record(
                "gcp:compute/disk:Disk",
                f"llm-weights-disk-{zone}",
                {
                    "name": DISK,
                    "type": "hyperdisk-ml",
                    "zone": zone,
                    "accessMode": "READ_ONLY_MANY",
                    "deletionPolicy": "ABANDON" if protected else "DELETE",
                },
            )
            for zone in zones
        ),
        record(
            "kubernetes:core/v1:Secret",
            "llm-hf-token",
            {"metadata": {"name": "hf-token"}, "stringData": {"token": "[secret]"}, "type": "Opaque"},
        ),
        record(
            "kubernetes:core/v1:Service",
            "llm-service",
            kubernetes("v1", "Service", "qwen-serving", {"type": "ClusterIP", "ports": [{"port": 8000}]}),
        ),
    ]


def gateway_stack() -> Records:
    """The serving stack behind the GKE Inference Gateway with every prerequisite."""
    target = {"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": "qwen-serving"}
    records = serving_stack("staging")
    named(records, "llm-gke")["inputs"]["gatewayApiConfig"] = {"channel": "CHANNEL_STANDARD"}
    return [
        *records,
        record(
            "gcp:projects/service:Service", "llm-networkservices-api", {"service": "networkservices.googleapis.com"}
        ),
        record(
            "gcp:compute/subnetwork:Subnetwork",
            "llm-proxy-subnet",
            {"ipCidrRange": "10.129.0.0/23", "purpose": "REGIONAL_MANAGED_PROXY", "role": "ACTIVE"},
        ),
        record(
            "kubernetes:gateway.networking.k8s.io/v1:Gateway",
            "llm-gateway",
            kubernetes(
                "gateway.networking.k8s.io/v1",
                "Gateway",
                "qwen-serving",
                {"gatewayClassName": "gke-l7-rilb", "listeners": [{"name": "http", "protocol": "HTTP", "port": 80}]},
            ),
        ),
        record(
            "kubernetes:gateway.networking.k8s.io/v1:HTTPRoute",
            "llm-route",
            kubernetes(
                "gateway.networking.k8s.io/v1",
                "HTTPRoute",
                "qwen-serving",
                {"parentRefs": [{"name": "qwen-serving"}], "rules": [{"backendRefs": [target]}]},
            ),
        ),
        record(
            "kubernetes:networking.gke.io/v1:HealthCheckPolicy",
            "llm-health-check",
            kubernetes("networking.gke.io/v1", "HealthCheckPolicy", "qwen-serving", {"targetRef": target}),
        ),
        record(
            "kubernetes:networking.gke.io/v1:GCPBackendPolicy",
            "llm-backend-policy",
            kubernetes("networking.gke.io/v1", "GCPBackendPolicy", "qwen-serving", {"targetRef": target}),
        ),
        record(
            "kubernetes:inference.networking.k8s.io/v1:InferencePool",
            "llm-gateway-epp-pool",
            kubernetes(
                "inference.networking.k8s.io/v1",
                "InferencePool",
                "qwen-serving",
                {
                    "targetPorts": [{"number": 8000}],
                    "selector": {"matchLabels": {"app": "qwen-serving"}},
                    "endpointPickerRef": {"name": "qwen-serving-epp", "port": {"number": 9002}},
                },
            ),
        ),
        record(
            "kubernetes:apps/v1:Deployment",
            "llm-gateway-epp-deployment",
            kubernetes(
                "apps/v1",
                "Deployment",
                "qwen-serving-epp",
                {
                    "replicas": 2,
                    "template": {
                        "spec": {
                            "nodeSelector": {"cloud.google.com/machine-family": "c4"},
                            "containers": [
                                {
                                    "name": "epp",
                                    "image": "ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.10.0",
                                    "args": ["--pool-name", "qwen-serving", "--ha-enable-leader-election"],
                                    "resources": {"requests": {"cpu": "10"}, "limits": {"cpu": "10"}},
                                }
                            ],
                        }
                    },
                },
            ),
        ),
        record(
            "gcp:compute/firewall:Firewall",
            "llm-gateway-epp-firewall",
            {
                "direction": "INGRESS",
                "sourceRanges": ["10.129.0.0/23"],
                "allows": [{"protocol": "tcp", "ports": ["9002", "9003"]}],
            },
        ),
    ]
