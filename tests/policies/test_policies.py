"""The policy pack: every rule on its fixtures, on the real stacks and on mutated renders, the
offline runner against the SDK's own policy server (the pack's files: test_pack_files.py)."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc  # type: ignore[import-untyped]
import pytest
import yaml
from google.protobuf import empty_pb2, json_format, struct_pb2  # type: ignore[import-untyped]
from pulumi.runtime import proto
from pulumi.runtime.proto import analyzer_pb2_grpc

from commands.check_policies.runner import Violation, check_records
from commands.check_policies.runner import main as runner_main
from policies.pack import PACK_NAME, POLICIES
from policies.redaction import token_candidates
from tests.conftest import RenderStack
from tests.policies.mutations import MUTATIONS, serving_deployment, with_flag
from tests.policy_fixtures import (
    FIXTURES,
    PolicyFixture,
    inputs_of,
    load_balancer,
    set_flag,
    without,
)
from tests.policy_stacks import gateway_stack, serving_stack
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
    with_flag(records, "--tensor-parallel-size", 2)
    with_flag(records, "--max-num-seqs", 512)
    mutated = tmp_path / "resources.json"
    mutated.write_text(json.dumps(records))
    run = _check_policies(str(mutated))
    assert run.returncode == 1
    lines = run.stdout.splitlines()
    deployment = serving_deployment(records)["name"]
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


@pytest.mark.parametrize(
    ("model", "served", "repository"),
    [
        ("/models/Qwen/Qwen3.5-27B-FP8", "Qwen/Qwen3.5-27B-FP8", "Qwen/Qwen3.5-27B-FP8"),
        ("/models/nvidia/Qwen3.5-397B-A17B-NVFP4", "qwen-big", "nvidia/Qwen3.5-397B-A17B-NVFP4"),
        ("/models/m", None, "ORG/MODEL"),
    ],
)
def test_the_revision_hint_names_the_workloads_own_checkpoint(model: str, served: str | None, repository: str) -> None:
    """LLM-WGT-003's git ls-remote hint is for the model the workload serves, not a placeholder."""
    from policies.rules.weights import _repository_of

    assert _repository_of(model, served) == repository
