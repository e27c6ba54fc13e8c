"""The offline render: files, shapes, determinism and secrets."""

from __future__ import annotations

import filecmp
import json
from pathlib import Path

import pytest
import yaml

from stacks import offline, output, render
from tests.conftest import STACKS, RenderStack
from tests.rendered import ROOT, RenderedStack, run_render

CANARY = "hf_CANARY_d2f1c9e4b7a84d0f9e3c"
RECORD_KEYS = {"type", "name", "parent", "provider", "custom", "inputs", "options"}


def test_render_writes_every_file(stack: RenderedStack) -> None:
    for name in ("resources.json", "outputs.json", "plan.md"):
        assert (stack.directory / name).is_file()
    assert stack.manifests, "at least the namespace and the token secret are Kubernetes objects"


def test_resources_json_shape(stack: RenderedStack) -> None:
    records = stack.resources
    assert records == sorted(records, key=lambda record: (record["type"], record["name"]))
    names = {record["name"] for record in records}
    for record in records:
        assert set(record) == RECORD_KEYS
        assert record["parent"] is None or record["parent"] in names
        assert record["provider"] is None or record["provider"] in names
        assert set(record["options"]["dependsOn"]) <= names
    text = (stack.directory / "resources.json").read_text()
    assert ".0," not in text and ".0\n" not in text, "integral floats must be written as ints"


def test_every_kubernetes_object_uses_the_cluster_provider(stack: RenderedStack) -> None:
    for record in stack.resources:
        if record["custom"] and record["type"].startswith("kubernetes:"):
            assert record["provider"] == "llm-k8s", record["name"]


def test_manifest_per_kubernetes_object(stack: RenderedStack) -> None:
    objects = [
        record
        for record in stack.resources
        if record["custom"] and record["type"].startswith("kubernetes:") and "helm.sh" not in record["type"]
    ]
    assert len(stack.manifests) == len(objects)
    for manifest in stack.manifests:
        assert {"apiVersion", "kind", "metadata"} <= set(manifest)
        assert manifest["metadata"]["name"]


@pytest.mark.parametrize("name", STACKS)
def test_two_renders_are_byte_identical(name: str, render_stack: RenderStack, tmp_path: Path) -> None:
    first = render_stack(name).directory
    second = tmp_path / "again"
    assert run_render(name, "--out", str(second)).returncode == 0
    comparison = filecmp.dircmp(first, second)
    assert not comparison.left_only and not comparison.right_only
    for directory in ("", "manifests"):
        left, right = first / directory, second / directory
        files = sorted(path.name for path in left.iterdir() if path.is_file())
        _, mismatch, errors = filecmp.cmpfiles(left, right, files, shallow=False)
        assert not mismatch and not errors, f"{directory or '.'}: {mismatch}"


def test_canary_token_never_leaves_the_program() -> None:
    """The decrypted token, as the CLI hands it to the program, reaches only the Secret's input
    (a secret the render redacts): no other record, manifest or output carries it."""
    settings = offline.load_stack_settings("prod")
    token_key = f"{settings.project}:hfToken"
    settings.config[token_key] = CANARY
    settings.placeholders.remove(token_key)
    result = offline.run_program(settings)
    records = render.resource_records(result.registrations)
    files = {
        "resources.json": json.dumps(records),
        **render.manifest_texts(records),
        "outputs.json": json.dumps(render.plain(result.outputs)),
    }
    assert output.token_leaks(files, render.secret_values(settings)) == []
    secret = next(record for record in records if record["type"] == "kubernetes:core/v1:Secret")
    assert secret["inputs"]["stringData"] == {"token": "[secret]"}


def test_plaintext_token_in_a_stack_file_is_refused_like_the_cli(tmp_path: Path) -> None:
    stack_doc = yaml.safe_load((ROOT / "Pulumi.prod.yaml").read_text())
    stack_doc["config"]["gke-b200-serving:hfToken"] = CANARY
    config_file = tmp_path / "Pulumi.canary.yaml"
    config_file.write_text(yaml.safe_dump(stack_doc))
    out = tmp_path / "out"
    run = run_render("canary", "--config-file", str(config_file), "--out", str(out))
    assert run.returncode == 2, run.stderr
    assert "Stack 'canary' with configuration key 'hfToken' must be encrypted as it's secret" in run.stderr
    assert CANARY not in run.stdout + run.stderr
    assert not out.exists()


def test_secure_values_render_as_placeholders(tmp_path: Path) -> None:
    stack_doc = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    stack_doc["config"]["gke-b200-serving:hfToken"] = {"secure": "v1:c2VjcmV0LWNpcGhlcnRleHQ="}
    config_file = tmp_path / "Pulumi.secure.yaml"
    config_file.write_text(yaml.safe_dump(stack_doc))
    out = tmp_path / "out"
    assert run_render("secure", "--config-file", str(config_file), "--out", str(out)).returncode == 0
    rendered = RenderedStack(out)
    assert "c2VjcmV0LWNpcGhlcnRleHQ" not in rendered.all_text()
    assert "`gke-b200-serving:hfToken`" in rendered.plan


def test_outputs_have_no_secrets(stack: RenderedStack) -> None:
    assert stack.outputs["clusterName"] == "llm-serving"
    assert stack.outputs["getCredentials"].startswith("gcloud container clusters get-credentials llm-serving")
    assert "kubeconfig" not in json.dumps(stack.outputs)


def test_plan_lists_components_and_cost(stack: RenderedStack) -> None:
    assert "## Key settings" in stack.plan
    assert "## Capacity and cost" in stack.plan
    assert "### llm (llm-serving:gke:Cluster)" in stack.plan
