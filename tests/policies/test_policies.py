"""The policy pack: every rule on its fixtures, on the real stacks and on mutated renders, the
offline runner against the SDK's own policy server (the pack's files: test_pack_files.py)."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc  # type: ignore[import-untyped]
import pytest
import yaml
from google.protobuf import empty_pb2, json_format, struct_pb2  # type: ignore[import-untyped]
from pulumi.runtime import proto
from pulumi.runtime.proto import analyzer_pb2_grpc

from policies.pack import PACK_NAME, POLICIES
from policies.redaction import token_candidates
from policies.runner import Violation, check_records
from policies.runner import main as runner_main
from tests.conftest import RenderStack
from tests.policy_fixtures import (
    FIXTURES,
    PolicyFixture,
    gateway_stack,
    inputs_of,
    load_balancer,
    serving_stack,
    set_flag,
    without,
)
from tests.rendered import ROOT, STACK_FILES, RenderedStack, run_main, run_render

LEVELS = {policy.name: policy.enforcement_level.value for policy in POLICIES}


def verdicts(violations: list[Violation], policy: str) -> list[Violation]:
    return [violation for violation in violations if violation.policy == policy]


# ---------------------------------------------------------------- the pack itself


def test_policy_ids_are_unique_and_stable() -> None:
    names = [policy.name for policy in POLICIES]
    assert len(names) == len(set(names))
    for policy in POLICIES:
        assert re.fullmatch(r"LLM-(GPU|VLLM|SEC|WGT|NET|GKE|PROD|BENCH|OPS)-\d{3}", policy.name)
        assert policy.enforcement_level.value in ("mandatory", "advisory")
        assert policy.display_name and len(policy.description) > 80


def test_every_policy_has_a_passing_and_a_failing_fixture() -> None:
    expected = {f"{policy.name}_{outcome}" for policy in POLICIES for outcome in ("pass", "fail")}
    assert set(FIXTURES) == expected


def test_the_recipe_stack_passes_every_rule() -> None:
    for fixture in (serving_stack(), serving_stack("dev"), gateway_stack()):
        assert check_records(fixture) == []


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_fixture(name: str) -> None:
    policy, outcome = name.rsplit("_", 1)
    fixture: PolicyFixture = FIXTURES[name]()
    found = verdicts(check_records(fixture.records, fixture.config), policy)
    if outcome == "pass":
        assert found == []
    else:
        assert found, f"{policy} reported nothing"
        assert {violation.level for violation in found} == {LEVELS[policy]}


# ---------------------------------------------------------------- policy config


def test_policy_config_allows_a_named_load_balancer() -> None:
    records = load_balancer(serving_stack())
    assert verdicts(check_records(records, {"LLM-NET-003": {"allowedServices": ["qwen-serving"]}}), "LLM-NET-003") == []


def test_policy_config_overrides_enforcement_levels() -> None:
    records = set_flag(serving_stack(), "--max-num-seqs", 512)
    assert verdicts(check_records(records, {"LLM-VLLM-007": "disabled"}), "LLM-VLLM-007") == []
    (raised,) = verdicts(check_records(records, {"all": "mandatory"}), "LLM-VLLM-007")
    assert raised.mandatory


def test_policy_config_changes_a_threshold() -> None:
    records = set_flag(serving_stack(), "--max-model-len", 8192)
    assert verdicts(check_records(records), "LLM-VLLM-008")
    assert verdicts(check_records(records, {"LLM-VLLM-008": {"maxOverallocation": 4}}), "LLM-VLLM-008") == []


def test_a_reused_proxy_subnet_is_named_on_the_gateway() -> None:
    records = [record for record in gateway_stack() if record["name"] != "llm-proxy-subnet"]
    assert verdicts(check_records(records), "LLM-NET-001")
    annotations = {"llm-serving/proxy-only-subnet": "shared-proxy-only"}
    inputs_of(records, "llm-gateway")["metadata"]["annotations"] = annotations
    assert verdicts(check_records(records), "LLM-NET-001") == []
    assert (
        verdicts(
            check_records(
                without(gateway_stack(), "llm-proxy-subnet"), {"LLM-NET-001": {"proxySubnetManagedElsewhere": True}}
            ),
            "LLM-NET-001",
        )
        == []
    )


def test_production_names_come_from_policy_config() -> None:
    records = serving_stack("dev")
    assert verdicts(check_records(records), "LLM-PROD-001") == []
    found = verdicts(check_records(records, {"LLM-PROD-001": {"productionEnvironments": ["dev"]}}), "LLM-PROD-001")
    assert {violation.resource for violation in found} >= {"llm-gke", f"llm-weights-disk-{'us-central1-b'}"}


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("hf_" + "aB3" * 12, 1),
        ("hf_test_token", 1),
        ("git clone https://user:hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789@huggingface.co/x", 1),
        ("hf_transfer", 0),
        ("from huggingface_hub import hf_hub_download", 0),
        ("HF_HUB_OFFLINE", 0),
        ("[secret]", 0),
    ],
)
def test_token_candidates(text: str, tokens: int) -> None:
    assert len(list(token_candidates(text))) == tokens


def test_the_stacks_own_token_outside_its_secret_is_a_violation(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pasted into extraEnv (or any input but the Secret's payload) the stack's own token is no exemption,
    also when it does not look like hf_..."""
    for token in ("hf_" + "Zy9" * 12, "canary-0f3b9d2e41c7a8"):
        monkeypatch.setenv("PULUMI_CONFIG", json.dumps({f"{PACK_NAME}:hfToken": token}))
        records = serving_stack()
        inputs_of(records, "llm-hf-token")["stringData"]["token"] = token
        assert verdicts(check_records(records), "LLM-SEC-001") == []
        vllm_env = inputs_of(records, "llm-vllm")["spec"]["template"]["spec"]["containers"][0]["env"]
        vllm_env.append({"name": "MY_TOKEN", "value": f"Bearer {token}"})
        found = verdicts(check_records(records), "LLM-SEC-001")
        assert found and "own Hugging Face token" in found[0].message
        assert token not in found[0].message


def test_the_stacks_own_secret_token_is_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine hands a policy pack decrypted secrets and the decrypted stack config."""
    token = "hf_" + "Zy9" * 12
    records = serving_stack()
    inputs_of(records, "llm-hf-token")["stringData"]["token"] = token
    assert verdicts(check_records(records), "LLM-SEC-001")
    monkeypatch.setenv("PULUMI_CONFIG", json.dumps({f"{PACK_NAME}:hfToken": token}))
    assert verdicts(check_records(records), "LLM-SEC-001") == []


# ---------------------------------------------------------------- the real stacks


@pytest.mark.parametrize("name", STACK_FILES)
def test_every_stack_file_passes(name: str, render_stack: RenderStack) -> None:
    """`render` exits 1 on a mandatory violation (the fixture asserts 0); policy.json holds the verdicts."""
    rendered = render_stack(name)
    policy = json.loads((rendered.directory / "policy.json").read_text())
    assert policy["mandatory"] == 0, policy["violations"]
    assert policy["policies"] == len(POLICIES)
    assert [Violation(**item) for item in policy["violations"]] == check_records(rendered.resources)
    assert "## Policy verdicts" in rendered.plan


OTHER_DEPLOYMENTS = ("llm-metrics-adapter-deployment", "llm-gateway-epp-deployment")


def _deployment(records: list[dict[str, Any]]) -> dict[str, Any]:
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
    container: dict[str, Any] = _deployment(records)["inputs"]["spec"]["template"]["spec"]["containers"][0]
    return container


def _model(records: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    """The serving container serves another checkpoint (the positional model and the served name)."""
    container = _vllm(records)
    container["args"][0] = f"/models/{name}"
    return _flag(records, "--served-model-name", name)


def _gpu_type(records: list[dict[str, Any]], gpu_type: str) -> list[dict[str, Any]]:
    for priority in _of_type(records, "kubernetes:cloud.google.com/v1:ComputeClass")[0]["inputs"]["spec"]["priorities"]:
        priority["gpu"]["type"] = gpu_type
    return records


def _flag(records: list[dict[str, Any]], flag: str, value: object | None) -> list[dict[str, Any]]:
    container = _vllm(records)
    container["args"] = [arg for arg in container["args"] if arg.split("=", 1)[0] != flag]
    if value is not None:
        container["args"].append(f"{flag}={value}")
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
    claim_name = _deployment(records)["inputs"]["spec"]["template"]["spec"]["volumes"][0]["persistentVolumeClaim"][
        "claimName"
    ]
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
    spec = _deployment(records)["inputs"]["spec"]["template"]["spec"]
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
    resources["requests"]["cpu"] = resources["limits"]["cpu"] = "500m"


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
    _deployment(records)["inputs"]["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 120


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
        lambda r: _deployment(r)["inputs"]["spec"]["template"]["spec"].pop("nodeSelector"),
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
        lambda r: _deployment(r)["inputs"]["spec"]["template"]["spec"].update(terminationGracePeriodSeconds=25),
        "LLM-GPU-003",
    ),
    "tensor-parallel-2": ("prod", lambda r: _flag(r, "--tensor-parallel-size", 2), "LLM-VLLM-001"),
    "tensor-parallel-8": (
        "prod",
        lambda r: _flag(_flag(r, "--data-parallel-size", 1), "--tensor-parallel-size", 8),
        "LLM-VLLM-002",
    ),
    "kv-cache-auto": ("prod", lambda r: _flag(r, "--kv-cache-dtype", "auto"), "LLM-VLLM-003"),
    "mtp-5": (
        "prod",
        lambda r: _flag(r, "--speculative-config", '{"method":"mtp","num_speculative_tokens":5}'),
        "LLM-VLLM-004",
    ),
    "mtp-2": (
        "prod",
        lambda r: _flag(r, "--speculative-config", '{"method":"mtp","num_speculative_tokens":2}'),
        "LLM-VLLM-005",
    ),
    "memory-0.95": ("prod", lambda r: _flag(r, "--gpu-memory-utilization", 0.95), "LLM-VLLM-006"),
    "max-num-seqs-512": ("prod", lambda r: _flag(r, "--max-num-seqs", 512), "LLM-VLLM-007"),
    "max-model-len-131072": ("prod", lambda r: _flag(r, "--max-model-len", 131072), "LLM-VLLM-008"),
    "no-mamba-align": ("prod", lambda r: _flag(r, "--mamba-cache-mode", None), "LLM-VLLM-009"),
    "mamba-block-12": ("prod", lambda r: _flag(r, "--mamba-block-size", 12), "LLM-VLLM-009"),
    "image-0.18.0": ("prod", lambda r: _vllm(r).update(image="vllm/vllm-openai:v0.18.0"), "LLM-VLLM-010"),
    "nvfp4-kv-cache": (
        "prod",
        lambda r: _flag(_model(r, "nvidia/Qwen3.5-397B-A17B-NVFP4"), "--kv-cache-dtype", "nvfp4"),
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
    "revision-main": (
        "prod",
        lambda r: _deployment(r)["inputs"]["metadata"]["annotations"].update({"llm-serving/model-revision": "main"}),
        "LLM-WGT-003",
    ),
    "external-gateway": (
        "staging",
        lambda r: _of_type(r, "kubernetes:gateway.networking.k8s.io/v1:Gateway")[0]["inputs"]["spec"].update(
            gatewayClassName="gke-l7-regional-external-managed"
        ),
        "LLM-NET-004",
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
    "benchmark-one-client": ("prod", _one_benchmark_client, "LLM-BENCH-001"),
    "prod-cluster-unprotected": ("prod", _unprotect, "LLM-PROD-001"),
    "prod-disk-unprotected": (
        "prod",
        lambda r: _serving_disks(r)[0]["inputs"].update(deletionPolicy="DELETE"),
        "LLM-PROD-001",
    ),
}


@pytest.fixture(scope="session")
def rendered(dev: RenderedStack, staging: RenderedStack, prod: RenderedStack) -> dict[str, RenderedStack]:
    return {"dev": dev, "staging": staging, "prod": prod}


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_mutated_render_is_reported(mutation: str, rendered: dict[str, RenderedStack]) -> None:
    stack, mutate, policy = MUTATIONS[mutation]
    records = copy.deepcopy(rendered[stack].resources)
    mutate(records)
    found = verdicts(check_records(records), policy)
    assert found, f"{policy} missed {mutation}"
    assert {violation.level for violation in found} == {LEVELS[policy]}


def test_every_rule_has_a_mutation_of_a_real_stack() -> None:
    assert {policy for _, _, policy in MUTATIONS.values()} == set(LEVELS)


def _check_policies(*args: str) -> subprocess.CompletedProcess[str]:
    """The command as a real process: its exit status and streams are the contract."""
    script = Path(sys.executable).parent / "check-policies"
    return subprocess.run([str(script), *args], capture_output=True, text=True, timeout=120, check=False)


def test_check_policies_command(prod: RenderedStack, tmp_path: Path) -> None:
    clean = run_main(runner_main, str(prod.directory / "resources.json"))
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert clean.stdout == ""
    records = copy.deepcopy(prod.resources)
    _flag(records, "--tensor-parallel-size", 2)
    _flag(records, "--max-num-seqs", 512)
    mutated = tmp_path / "resources.json"
    mutated.write_text(json.dumps(records))
    run = _check_policies(str(mutated))
    assert run.returncode == 1
    lines = run.stdout.splitlines()
    deployment = _deployment(records)["name"]
    assert any(line.startswith(f"mandatory LLM-VLLM-001 {deployment}: ") for line in lines)
    assert any(line.startswith(f"advisory LLM-VLLM-007 {deployment}: ") for line in lines)
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"LLM-VLLM-001": "advisory"}))
    assert run_main(runner_main, str(mutated), "--config", str(config)).returncode == 0


def test_render_fails_on_a_mandatory_violation_after_writing_its_files(tmp_path: Path) -> None:
    stack_doc = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    stack_doc["config"]["gke-b200-serving:engine"] = {"maxNumSeqs": 512, "gpuMemoryUtilization": 0.95}
    config_file = tmp_path / "Pulumi.bad.yaml"
    config_file.write_text(yaml.safe_dump(stack_doc))
    out = tmp_path / "out"
    run = run_render("bad", "--config-file", str(config_file), "--out", str(out))
    assert run.returncode == 1, run.stderr
    assert "mandatory LLM-VLLM-006" in run.stderr and "advisory LLM-VLLM-007" in run.stderr
    policy = json.loads((out / "policy.json").read_text())
    # advisory: LLM-VLLM-007, and LLM-WGT-003 because the dev stack follows the branch main
    assert policy["mandatory"] == 1 and policy["advisory"] == 2
    assert "| mandatory | LLM-VLLM-006 |" in (out / "plan.md").read_text()


# ---------------------------------------------------------------- the engine's own policy server


@pytest.fixture(scope="module")
def analyzer() -> Iterator[Any]:
    """The pack started the way `pulumi preview --policy-pack policies` starts it: the SDK runs
    policies/__main__.py, which serves the analyzer gRPC API on the port it prints."""
    server = subprocess.Popen(
        [sys.executable, "-u", "-m", "pulumi.policy", "127.0.0.1:0", "."],
        cwd=ROOT / "policies",
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        port = server.stdout.readline().strip() if server.stdout else ""
        assert port.isdigit(), server.stderr.read() if server.stderr else "no port"
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            yield analyzer_pb2_grpc.AnalyzerStub(channel)
    finally:
        server.kill()
        server.wait(timeout=30)


def _struct(value: dict[str, Any]) -> struct_pb2.Struct:
    return json_format.ParseDict(value, struct_pb2.Struct())


def _engine_verdicts(stub: Any, records: list[dict[str, Any]]) -> set[tuple[str, str, str, str]]:
    """Send a render's records as the engine would (Analyze per resource, AnalyzeStack once)."""
    urns = {record["name"]: f"urn:pulumi:engine::{PACK_NAME}::{record['type']}::{record['name']}" for record in records}
    by_name = {record["name"]: record for record in records}

    def provider(record: dict[str, Any]) -> Any:
        owner = by_name.get(record["provider"] or "")
        if owner is None:
            return None
        return proto.AnalyzerProviderResource(
            type=owner["type"], properties=_struct(owner["inputs"]), urn=urns[owner["name"]], name=owner["name"]
        )

    def options(record: dict[str, Any]) -> Any:
        return proto.AnalyzerResourceOptions(
            protect=record["options"]["protect"], parent=urns.get(record["parent"] or "", "")
        )

    def resource(record: dict[str, Any]) -> dict[str, Any]:
        """The fields an AnalyzeRequest and an AnalyzerResource share."""
        return {
            "type": record["type"],
            "properties": _struct(record["inputs"]),
            "urn": urns[record["name"]],
            "name": record["name"],
            "options": options(record),
            "provider": provider(record),
        }

    diagnostics = []
    for record in records:
        response = stub.Analyze(proto.AnalyzeRequest(**resource(record)))
        diagnostics += [(diagnostic, record["name"]) for diagnostic in response.diagnostics]
    stack = stub.AnalyzeStack(
        proto.AnalyzeStackRequest(
            resources=[
                proto.AnalyzerResource(
                    **resource(record),
                    parent=urns.get(record["parent"] or "", ""),
                    dependencies=[urns[name] for name in record["options"]["dependsOn"]],
                )
                for record in records
            ]
        )
    )
    names = {urn: name for name, urn in urns.items()}
    diagnostics += [(diagnostic, names.get(diagnostic.urn, "(stack)")) for diagnostic in stack.diagnostics]
    levels = {proto.MANDATORY: "mandatory", proto.ADVISORY: "advisory"}
    return {
        (diagnostic.policyName, name, levels[diagnostic.enforcementLevel], diagnostic.message.split("\n", 1)[1])
        for diagnostic, name in diagnostics
    }


@pytest.mark.parametrize(
    "mutation", ["none", "tensor-parallel-2", "weights-other-zone", "prod-disk-unprotected", "token-in-env"]
)
def test_runner_gives_the_engine_servers_verdicts(mutation: str, analyzer: Any, prod: RenderedStack) -> None:
    records = copy.deepcopy(prod.resources)
    if mutation != "none":
        MUTATIONS[mutation][1](records)
    offline = {(v.policy, v.resource, v.level, v.message) for v in check_records(records)}
    assert offline == _engine_verdicts(analyzer, records)
    assert (mutation == "none") == (offline == set())


def test_engine_server_lists_the_pack(analyzer: Any) -> None:
    info = analyzer.GetAnalyzerInfo(empty_pb2.Empty())
    assert info.name == PACK_NAME
    assert [policy.name for policy in info.policies] == [policy.name for policy in POLICIES]
