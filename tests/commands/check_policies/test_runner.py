"""The offline policy runner (`check-policies`, and the render's verdicts): its command-line contract,
and its verdicts against the engine's own policy server running the pack."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc  # type: ignore[import-untyped]
import pytest
from google.protobuf import empty_pb2, json_format, struct_pb2  # type: ignore[import-untyped]
from pulumi.runtime import proto
from pulumi.runtime.proto import analyzer_pb2_grpc

from commands.check_policies.runner import check_records
from commands.check_policies.runner import main as runner_main
from policies.pack import PACK_NAME, POLICIES
from tests.policies.mutations import MUTATIONS, serving_deployment, with_flag
from tests.rendered import ROOT, RenderedStack, run_main


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
    # the render's folder stands for its resources.json (`check-policies build/dev` was "a directory")
    assert run_main(runner_main, str(prod.directory)) == clean
    assert _check_policies(str(tmp_path)).returncode == 1


def test_a_resources_file_with_no_record_is_refused_not_passed(tmp_path: Path) -> None:
    """An attacker: `[]` passed every policy (exit 0), so an emptied or cut-down render passed a CI gate."""
    (tmp_path / "resources.json").write_text("[]\n")
    run = run_main(runner_main, str(tmp_path / "resources.json"))
    assert run.returncode == 2 and run.stdout == "", run
    (line,) = run.stderr.splitlines()
    assert line.endswith(
        "resources.json: holds no resource record; allowed: a render's resources.json, which holds "
        "every resource the stack declares (its providers among them)"
    ), line


@pytest.mark.parametrize("option", ["ignoreChanges", "additionalSecretOutputs", "customTimeouts"])
def test_a_null_option_is_the_option_not_set(option: str, dev: RenderedStack, tmp_path: Path) -> None:
    """The record check lets a null option through; the runner read it as a list or a mapping (exit 1, "failed")."""
    records = copy.deepcopy(dev.resources)
    records[0]["options"][option] = None
    edited = tmp_path / "resources.json"
    edited.write_text(json.dumps(records))
    assert run_main(runner_main, str(edited)).returncode == run_main(runner_main, str(dev.directory)).returncode == 0


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
