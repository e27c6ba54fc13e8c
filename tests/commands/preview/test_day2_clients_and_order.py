"""Day-2 changes from a converged state: what clients call (the stack outputs, the serving Service,
the model name), the order of replacements the engine imposes on what is replaced with a resource
deleted first, and a weights image whose source snapshot is gone."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from commands.preview.changes import OutputsDiff, Preview
from commands.preview.clients import _ROLLING, _ranges_shut_out, client_breaks
from commands.preview.command import main as preview_main
from commands.preview.command import preview_states
from tests.commands.preview.test_day2 import day2
from tests.commands.preview.test_preview import preview_of, render_with, stack_file_with
from tests.conftest import RenderStack
from tests.rendered import RenderedStack, run_main, run_render

GATEWAY = {"routing": {"mode": "gateway"}}
REGION_MOVE = {"region": "us-east1", "zones": ["us-east1-b"]}


def converged_render(stack: str, out: Path) -> RenderedStack:
    """`render STACK --converged`: the state every `up` after the first keeps (no download scaffolding)."""
    run = run_render(stack, "--converged", "--out", str(out))
    assert run.returncode == 0, run.stderr
    return RenderedStack(out)


# ---------------------------------------------------------------- what clients call


def test_leaving_clusterip_warns_that_clients_break_and_lists_the_outputs(
    tmp_path: Path, render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    base = render_stack("dev")
    gateway = render_with(render_stack, tmp_path_factory, "dev", "routing", GATEWAY)
    out = tmp_path / "out"
    run = run_main(preview_main, str(base.directory), str(gateway.directory), "--out", str(out))
    assert run.returncode == 0, run.stderr
    document = json.loads((out / "changes.json").read_text())
    assert set(document["outputs"]["removed"]) == {"endpoint"}
    assert "gatewayAddressCommand" in document["outputs"]["added"] and "tryIt" in document["outputs"]["changed"]
    (warning,) = [warning for warning in document["warnings"] if warning.startswith("clients break:")]
    assert "output endpoint" in warning and "Service 'qwen-serving'" in warning
    text = (out / "changes.md").read_text()
    assert "## Stack outputs" in text and "- `endpoint` (removed)" in text and "- `tryIt` (changed)" in text


def test_production_refuses_a_client_break_unless_acknowledged(
    tmp_path: Path, render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    base = render_stack("prod")
    gateway = render_with(render_stack, tmp_path_factory, "prod", "routing", GATEWAY)
    refused = run_main(preview_main, str(base.directory), str(gateway.directory), "--out", str(tmp_path / "a"))
    assert refused.returncode == 1
    (line,) = [line for line in refused.stderr.splitlines() if line.startswith("refused: ")]
    assert line.startswith("refused: refused in production: clients break:") and "--accept-client-break" in line
    accepted = run_main(
        preview_main,
        str(base.directory),
        str(gateway.directory),
        "--out",
        str(tmp_path / "b"),
        "--accept-client-break",
    )
    assert accepted.returncode == 0
    # accepted, it is still said where the user reads it (beside what the pods meet while they roll)
    (warned,) = [line for line in accepted.stderr.splitlines() if "clients break" in line]
    assert warned.startswith("warning: clients break:")
    document = json.loads((tmp_path / "b" / "changes.json").read_text())
    assert any(warning.startswith("clients break:") for warning in document["warnings"])
    assert any("--accept-client-break" in note for note in document["notes"])


def test_a_refused_update_keeps_the_render_it_would_replace(tmp_path: Path, render_stack: RenderStack) -> None:
    """`render prod --against build/prod` (OLD_DIR is the output folder): a refused update replaces nothing,
    as a refused `up` leaves the state, so the same command refuses again; acknowledged, it replaces it."""
    old = tmp_path / "prod"
    shutil.copytree(render_stack("prod").directory, old)
    before = {path: path.read_bytes() for path in old.rglob("*") if path.is_file()}
    gateway = stack_file_with("prod", GATEWAY, tmp_path / "Pulumi.prod.yaml")
    for _ in range(2):
        run = run_render("prod", "--config-file", str(gateway), "--out", str(old), "--against", str(old))
        assert run.returncode == 1, run.stderr
        *lines, last = run.stderr.splitlines()
        assert any(line.startswith("refused: refused in production: clients break:") for line in lines)
        assert last.startswith(f"render: nothing written: the update from the render in {old} (OLD_DIR) is refused")
        assert run.stdout == ""
        assert {path: path.read_bytes() for path in old.rglob("*") if path.is_file()} == before
    accepted = run_render(
        "prod", "--config-file", str(gateway), "--out", str(old), "--against", str(old), "--accept-client-break"
    )
    assert accepted.returncode == 0, accepted.stderr
    assert set(json.loads((old / "changes.json").read_text())["outputs"]["removed"]) == {"endpoint"}


def test_leaving_production_in_the_same_update_does_not_lift_its_refusals(
    tmp_path: Path, render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A prod stack whose update both leaves ClusterIP and sets `environment: staging` was previewed as a
    staging one: exit 0, the client break only a warning."""
    base = render_stack("prod")
    relabelled = render_with(
        render_stack, tmp_path_factory, "prod", "relabelled", {"environment": "staging", **GATEWAY}
    )
    refused = run_main(preview_main, str(base.directory), str(relabelled.directory), "--out", str(tmp_path / "a"))
    assert refused.returncode == 1
    assert "refused in production: clients break:" in refused.stderr


def test_a_new_model_name_breaks_clients(render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory) -> None:
    _, _, result = day2(render_stack, tmp_path_factory, "dev", "model-name", {"engine": {"servedModelName": "qwen"}})
    assert result.outputs is not None and "servedModelName" in result.outputs.changed
    (warning,) = [warning for warning in result.warnings if warning.startswith("clients break:")]
    assert "the model name clients send changes" in warning and "'qwen'" in warning
    # the pods roll one at a time behind one address: for its whole length each name fails on part of them
    assert "either name fails on part of the pods until the roll ends" in warning


def test_an_api_key_on_the_serving_pods_breaks_clients(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """vLLM asks every request for the key once VLLM_API_KEY is set (engine.secretEnv, its proper path)."""
    settings = {"vllmApiKey": {"secure": "v1:c2VjcmV0"}, "engine": {"secretEnv": {"VLLM_API_KEY": "vllmApiKey"}}}
    _, _, result = day2(render_stack, tmp_path_factory, "dev", "api-key", settings)
    (warning,) = [warning for warning in result.warnings if warning.startswith("clients break:")]
    assert "clients must now send an API key" in warning


def test_a_deleted_gateway_breaks_clients_even_where_no_output_says_so(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Leaving gateway mode deletes the Gateway clients call; renders without outputs (made before them, or
    hand-made) still show it."""
    gateway = render_with(render_stack, tmp_path_factory, "dev", "routing", GATEWAY)
    old = dataclasses.replace(gateway.states, outputs=None, state_outputs=None)
    new = dataclasses.replace(render_stack("dev").states, outputs=None, state_outputs=None)
    (warning,) = [warning for warning in preview_states(old, new).warnings if warning.startswith("clients break:")]
    assert "the Gateway 'qwen-serving' in namespace 'llm-serving' that clients call is deleted" in warning


def test_narrower_load_balancer_ranges_break_the_clients_they_shut_out(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    wide = {
        "routing": {"internalLoadBalancer": True, "internalLoadBalancerSourceRanges": ["10.20.0.0/16", "10.30.0.0/16"]}
    }
    narrow = {
        "routing": {"internalLoadBalancer": True, "internalLoadBalancerSourceRanges": ["10.20.1.0/24", "10.30.0.0/15"]}
    }
    old = render_with(render_stack, tmp_path_factory, "dev", "ilb-wide", wide)
    new = render_with(render_stack, tmp_path_factory, "dev", "ilb-narrow", narrow)
    (warning,) = [warning for warning in preview_of(old, new).warnings if warning.startswith("clients break:")]
    assert "no longer lets in 10.20.0.0/16 (spec.loadBalancerSourceRanges" in warning and "10.30." not in warning
    (back,) = [warning for warning in preview_of(new, old).warnings if warning.startswith("clients break:")]
    assert "no longer lets in 10.30.0.0/15 (" in back and "10.20." not in back  # the /24 is inside the /16


def test_a_change_clients_do_not_see_has_no_output_change(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    settings = {"monitoring": {"alerts": {"queueWaitingThreshold": 321}}}
    _, _, result = day2(render_stack, tmp_path_factory, "dev", "alert", settings)
    assert result.outputs is not None and not result.outputs
    assert not any("clients break" in line for line in [*result.warnings, *result.refusals])


def test_the_outputs_compared_are_those_of_the_states_compared(
    tmp_path: Path, render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """OLD's converged state has no download-logs output; NEW's first `up` of a new revision has one."""
    old = converged_render("dev", tmp_path / "old")
    same = preview_states(old.states, render_stack("dev").states)
    assert same.outputs is not None and not same.outputs
    revision = {"weights": {"revision": "fedcba9876543210fedcba9876543210fedcba98"}}
    _, _, result = day2(render_stack, tmp_path_factory, "dev", "revision", revision)
    assert result.outputs is not None
    assert set(result.outputs.added) == {"weightsDownloadLogs"} and "weightsImage" in result.outputs.changed


# ---------------------------------------------------------------- order of replacements


def test_a_region_move_deletes_everything_on_the_cluster_first_and_refuses_the_image_without_snapshot(
    tmp_path: Path, render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """From `render --converged`: the subnet is replaced delete-first, so the engine deletes the
    cluster, the Kubernetes provider (its kubeconfig unknown) and every object on the cluster before it
    (calculateDependentReplacements): none is created before its old one is deleted. The weights image
    is replaced (storageLocations) from a snapshot the converged state no longer holds: refused."""
    old = converged_render("dev", tmp_path / "old")
    moved = render_with(render_stack, tmp_path_factory, "dev", "cluster-region", REGION_MOVE)
    result = preview_states(old.states, moved.states)
    on_cluster = [change for change in result.of("replace") if change.record["provider"] == "llm-k8s"]
    assert len(on_cluster) > 10
    subnet = next(change for change in result.of("replace") if change.record["name"] == "llm-subnet")
    for change in on_cluster:
        assert change.delete_before_replace and change.deleted_first_with == subnet.urn, change.urn
    provider = next(change for change in result.of("replace") if change.record["name"] == "llm-k8s")
    assert provider.delete_before_replace and provider.delete_first_by.startswith("the engine")
    (chain,) = [warning for warning in result.warnings if warning.startswith(f"{subnet.urn}: replaced delete-first")]
    assert "llm-gke, llm-k8s" in chain and "the serving Deployment is among them" in chain
    (image,) = [refusal for refusal in result.refusals if "source snapshot" in refusal]
    assert "storageLocations" in image and "gcloud compute images delete" in image and "--refresh" in image


def test_a_first_up_render_as_old_state_holds_the_snapshot_so_the_image_is_not_refused(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The refusal follows the snapshot: an update that declares the download again (a new image
    name, here a new cluster name) creates the snapshot the new image is made from."""
    _, _, result = day2(render_stack, tmp_path_factory, "dev", "cluster-name", {"cluster": {"name": "llm-serving-b"}})
    assert not any("source snapshot" in refusal for refusal in result.refusals)
    assert any(change.record["name"].endswith("-snapshot") for change in result.of("create"))


def test_the_disk_warning_says_no_claim_is_held_when_the_pods_go_first(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A new cluster name replaces the network delete-first (and everything on the cluster with it)
    and the weights disk delete-first: the serving pods are deleted in the network's chain, so the
    disk's claims are not held by running pods (no 10-minute wait on a Terminating claim)."""
    _, _, result = day2(render_stack, tmp_path_factory, "dev", "cluster-name", {"cluster": {"name": "llm-serving-b"}})
    (disk,) = [warning for warning in result.warnings if ": the disk is replaced delete-first" in warning]
    assert "the serving Deployment is deleted first too" in disk and "10 minutes" not in disk
    deployment = next(change for change in result.of("replace") if change.record["name"] == "llm-vllm-deployment")
    assert deployment.delete_before_replace and deployment.deleted_first_with.endswith("::llm-vpc")


def load_balancer(*ranges: str) -> dict[str, Any]:
    return {"inputs": {"spec": {"type": "LoadBalancer", "loadBalancerSourceRanges": list(ranges)}}}


@pytest.mark.parametrize(
    ("before", "after", "shut_out"),
    [
        (("10.0.0.0/16",), ("10.0.0.0/17", "10.0.128.0/17"), []),  # split, the same addresses
        ((), ("0.0.0.0/0",), []),
        (("10.0.0.0/16",), ("not-a-range",), []),  # a hand-edited render: no verdict
        (("10.0.0.0/16",), ("10.0.1.0/24",), ["10.0.0.0/16"]),
        ((), ("10.0.1.0/24",), ["every address outside 10.0.1.0/24"]),
    ],
)
def test_ranges_shut_out_are_the_addresses_let_in_before_and_not_now(
    before: tuple[str, ...], after: tuple[str, ...], shut_out: list[str]
) -> None:
    assert _ranges_shut_out(load_balancer(*before), load_balancer(*after)) == shut_out


def test_an_output_without_a_value_is_said_so_not_as_pythons_none() -> None:
    outputs = OutputsDiff(removed={"internalAddress": None}, changed={"servedModelName": (None, "qwen")})
    lines = client_breaks(outputs, {}, {}, Preview(changes=[], unchanged=0, refusals=[], warnings=[]))
    assert lines == [
        "the internal load balancer's address goes away: output internalAddress (no value) is removed",
        "the model name clients send changes: output servedModelName (no value) -> 'qwen'"
        + _ROLLING["servedModelName"],
    ]


@pytest.mark.parametrize(
    ("command", "args", "asks"),
    [
        (["vllm", "serve"], ["/models/m", "--api-k", "***"], True),  # vLLM's parser expands the abbreviation
        (["sh", "-c"], ["exec vllm  serve /models/m --api-key ***"], True),
        (["vllm", "serve"], ["/models/m", "--port", "8000"], False),
    ],
)
def test_whether_the_serving_pods_ask_for_a_key_is_read_as_vllm_reads_its_line(
    command: list[str], args: list[str], asks: bool
) -> None:
    from commands.preview.clients import _auth

    container = {"name": "vllm", "image": "vllm/vllm-openai:v0.19.0", "command": command, "args": args}
    record = {
        "type": "kubernetes:apps/v1:Deployment",
        "inputs": {"spec": {"template": {"spec": {"containers": [container]}}}},
    }
    assert _auth(record) is asks
