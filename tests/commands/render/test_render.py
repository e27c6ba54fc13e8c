"""The offline render: files, shapes, determinism and secrets."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from commands.engine import mocks
from commands.io import output
from commands.render import command as render
from commands.stackfile import stack_settings
from tests.conftest import RenderStack
from tests.rendered import (
    ROOT,
    STACK_FILES,
    CommandRun,
    RenderedStack,
    as_a_new_process,
    assert_same_files,
    run_program,
    run_render,
)

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
        assert RECORD_KEYS <= set(record) <= RECORD_KEYS | {"secretDigests"}
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


def test_one_process_renders_every_stack_file_as_separate_processes_would(
    render_stack: RenderStack, command_line_render: tuple[CommandRun, Path]
) -> None:
    """The command-line contract, in a real process: every stack file in one `render` run, plus one
    that violates a mandatory policy (exit status: the worst of them), byte-identical to the
    in-process renders the rest of the suite asserts on."""
    run, out = command_line_render
    assert run.returncode == 1, run.stderr
    assert "violating: mandatory LLM-VLLM-006" in run.stderr
    assert "Traceback" not in run.stderr
    assert sorted(path.name for path in out.iterdir()) == sorted([*STACK_FILES, "violating"])
    for name in STACK_FILES:
        assert_same_files(render_stack(name).directory, out / name)


def test_several_stacks_exit_with_the_worst_status(tmp_path: Path) -> None:
    invalid = tmp_path / "Pulumi.broken.yaml"
    invalid.write_text(yaml.safe_dump({"config": {"gke-b200-serving:environment": "qa"}}))
    # prod: a shipped stack without advisories (dev follows the branch main, LLM-WGT-003)
    run = run_render("prod", str(invalid), "--out", str(tmp_path / "out"))
    assert run.returncode == 2
    # prod's lines: the unset token, the stack file's example model commit, its wake read over the bound
    token, example, wake, broken = run.stderr.splitlines()
    assert token.startswith("prod: note: `hfToken` is not set: `pulumi up` stops before any step")
    assert example.startswith("prod: note: weights.revision is the stack file's EXAMPLE commit")
    assert wake.startswith("prod: note: time to serve: 12 node(s) waking at once")
    assert broken.startswith("broken: invalid stack config: environment")
    assert (tmp_path / "out" / "prod" / "resources.json").is_file()
    assert not (tmp_path / "out" / "broken").exists()


@pytest.mark.parametrize(
    "args",
    [("dev", "dev"), ("dev", "staging", "--config-file", "Pulumi.dev.yaml")],
    ids=["stack-twice", "config-file-with-several"],
)
def test_ambiguous_stack_arguments_are_refused(args: tuple[str, ...]) -> None:
    run = run_render(*args)
    assert run.returncode == 2
    assert run.stderr.count("\n") == 1 and run.stderr.startswith("render: ")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_lines_on_a_terminal_only() -> None:
    on_terminal = Terminal()
    report = render.terminal_progress("dev", on_terminal)
    for stage in ("loading config", "running the program", "writing 12 manifests", "checking policies"):
        report(stage)
    assert on_terminal.getvalue().splitlines() == [
        "render dev: loading config",
        "render dev: running the program",
        "render dev: writing 12 manifests",
        "render dev: checking policies",
    ]
    assert render.terminal_progress("dev", io.StringIO()) is render.quiet


def test_a_render_reports_every_stage(tmp_path: Path) -> None:
    stages: list[str] = []
    as_a_new_process(render.render, "dev", out=tmp_path / "out", progress=stages.append)
    manifests = len(list((tmp_path / "out" / "manifests").iterdir()))
    assert stages == ["loading config", "running the program", f"writing {manifests} manifests", "checking policies"]


def test_piped_output_is_one_summary_line_per_stack(tmp_path: Path) -> None:
    run = run_render("prod", "--out", str(tmp_path / "out"))
    assert run.returncode == 0
    # the token the stack file leaves unset, its example model commit and its wake read, as plan.md says them
    token, note, wake = run.stderr.splitlines()
    assert token.startswith("note: `hfToken` is not set")
    assert note.startswith("note: weights.revision is the stack file's EXAMPLE commit")
    assert wake.startswith("note: time to serve: 12 node(s) waking at once share 2,400 MiB/s")
    assert len(run.stdout.splitlines()) == 1 and run.stdout.startswith("rendered stack prod: ")


def test_canary_token_never_leaves_the_program() -> None:
    """The decrypted token, as the CLI hands it to the program, reaches only the Secret's input
    (a secret the render redacts): no other record, manifest or output carries it."""
    settings = stack_settings.load_stack_settings("prod")
    token_key = f"{settings.project}:hfToken"
    settings.config[token_key] = CANARY
    settings.placeholders.remove(token_key)
    result = run_program(settings)
    records = render.resource_records(result.registrations)
    files = {
        "resources.json": json.dumps(records),
        **render.manifest_texts(records),
        "outputs.json": json.dumps(render.plain(result.outputs)),
    }
    assert output.token_leaks(files, settings.known_secret_values()) == []
    secret = next(record for record in records if record["type"] == "kubernetes:core/v1:Secret")
    assert secret["inputs"]["stringData"] == {"token": "[secret]"}


def render_shipped_with(tmp_path: Path, shipped: str, stack: str, config: dict[str, Any]) -> tuple[CommandRun, Path]:
    """`render STACK` of the shipped stack file `shipped` with `config` entries set (full keys), into tmp_path/out."""
    stack_doc = yaml.safe_load((ROOT / f"Pulumi.{shipped}.yaml").read_text())
    stack_doc["config"].update(config)
    config_file = tmp_path / f"Pulumi.{stack}.yaml"
    config_file.write_text(yaml.safe_dump(stack_doc))
    out = tmp_path / "out"
    return run_render(stack, "--config-file", str(config_file), "--out", str(out)), out


def test_plaintext_token_in_a_stack_file_is_refused_like_the_cli(tmp_path: Path) -> None:
    run, out = render_shipped_with(tmp_path, "prod", "canary", {"gke-b200-serving:hfToken": CANARY})
    assert run.returncode == 2, run.stderr
    assert "Stack 'canary' with configuration key 'hfToken' must be encrypted as it's secret" in run.stderr
    assert CANARY not in run.stdout + run.stderr
    assert not out.exists()


ESC_SECRET = "Zebra-Horse-Battery-77"


@pytest.mark.parametrize(
    ("values", "engine"),
    [
        # the value of a key engine.secretEnv names, pasted under a neutral name
        ({"pulumiConfig": {"openaiKey": {"fn::secret": ESC_SECRET}}}, {"extraEnv": {"MY_SETTING": ESC_SECRET}}),
        # an ESC secret the key interpolates, pasted inside a longer value
        (
            {"openai": {"fn::secret": ESC_SECRET}, "pulumiConfig": {"openaiKey": "${openai}"}},
            {"extraEnv": {"MY_NOTE": f"run {ESC_SECRET} today"}},
        ),
        # encoded inside a longer value, as a pod decodes it: base64, and URL escapes
        (
            {"pulumiConfig": {"openaiKey": {"fn::secret": ESC_SECRET}}},
            {"extraEnv": {"MY_BLOB": base64.b64encode(f"key={ESC_SECRET}\n".encode()).decode()}},
        ),
        (
            {"pulumiConfig": {"openaiKey": {"fn::secret": ESC_SECRET}}},
            {"extraEnv": {"MY_URL": "https://example.com/?k=" + ESC_SECRET.replace("-", "%2D")}},
        ),
    ],
    ids=["whole-value", "inside-a-value", "base64", "url-escaped"],
)
def test_an_esc_secret_pasted_into_a_setting_is_written_nowhere(
    values: dict[str, Any], engine: dict[str, Any], tmp_path: Path
) -> None:
    """The stack file's inline ESC environment holds the secret's literal value; the program only gets a
    placeholder for its key offline, and a copy pasted into a plain setting would reach the manifests and
    the state: refused as a token is, nothing written, the value shown nowhere."""
    stack_doc = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    stack_doc["environment"] = {"values": values}
    stack_doc["config"]["gke-b200-serving:engine"] = {"secretEnv": {"OPENAI_API_KEY": "openaiKey"}, **engine}
    config_file = tmp_path / "Pulumi.esc.yaml"
    config_file.write_text(yaml.safe_dump(stack_doc))
    out = tmp_path / "out"
    run = run_render("esc", "--config-file", str(config_file), "--out", str(out))
    assert run.returncode == 1, run.stderr
    assert "render: a secret would be written to manifests/" in run.stderr and "nothing was written" in run.stderr
    assert f"(a secret value of the stack is in engine.extraEnv.{next(iter(engine['extraEnv']))})" in run.stderr
    assert ESC_SECRET not in run.stdout + run.stderr
    assert not out.exists()


def test_the_stacks_own_ciphertext_pasted_into_a_setting_is_written_nowhere(tmp_path: Path) -> None:
    """An attacker: `hfToken`'s `secure:` value pasted into a plain setting was written to the manifests and the
    state (it cannot be decrypted offline, so it was no known secret)."""
    ciphertext = "v1:Xq3bT0pKhxNRs7yZ:" + "Lp0bQ2" * 6
    settings = {
        "gke-b200-serving:hfToken": {"secure": ciphertext},
        "gke-b200-serving:engine": {"extraEnv": {"MY_SETTING": ciphertext}},
    }
    run, out = render_shipped_with(tmp_path, "dev", "cipher", settings)
    assert run.returncode == 1, run.stderr
    assert "(a secret value of the stack is in engine.extraEnv.MY_SETTING)" in run.stderr
    assert ciphertext not in run.stdout + run.stderr and not out.exists()


def test_an_esc_secret_in_a_setting_only_states_json_holds_names_that_setting(tmp_path: Path) -> None:
    """An attacker: a proxy-only subnet's name in ClusterIP mode reaches no manifest, only states.json's settings;
    the refusal named the file, not the setting to take it out of."""
    secret = "kx7qm2zp9wv4ab"
    stack_doc = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    stack_doc["environment"] = {"values": {"pulumiConfig": {"wandbKey": {"fn::secret": secret}}}}
    stack_doc["config"]["gke-b200-serving:engine"] = {"secretEnv": {"WANDB_API_KEY": "wandbKey"}}
    stack_doc["config"]["gke-b200-serving:routing"] = {"gateway": {"existingProxySubnet": secret}}
    config_file = tmp_path / "Pulumi.esc.yaml"
    config_file.write_text(yaml.safe_dump(stack_doc))
    run = run_render("esc", "--config-file", str(config_file), "--out", str(tmp_path / "out"))
    assert run.returncode == 1, run.stderr
    assert (
        "would be written to states.json (a secret value of the stack is in routing.gateway.existingProxySubnet)"
        in (run.stderr)
    )
    assert secret not in run.stdout + run.stderr and not (tmp_path / "out").exists()


def test_a_setting_made_an_esc_secret_is_hidden_in_the_preview_from_the_render_that_held_it(tmp_path: Path) -> None:
    """An attacker: a value under a neutral setting (no secret's shape, so rendered), then moved into the stack
    file's ESC environment as docs/security.md says; `render --against` the old render wrote it into changes.md
    and changes.json (the scan of the stack's own secrets ran before the preview's files were added)."""
    old_doc = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    old_doc["config"]["gke-b200-serving:engine"] = {"extraEnv": {"MY_SETTING": ESC_SECRET}}
    new_doc = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    new_doc["environment"] = {"values": {"pulumiConfig": {"mySetting": {"fn::secret": ESC_SECRET}}}}
    new_doc["config"]["gke-b200-serving:engine"] = {"secretEnv": {"MY_SETTING": "mySetting"}}
    (tmp_path / "Pulumi.old.yaml").write_text(yaml.safe_dump(old_doc))
    (tmp_path / "Pulumi.new.yaml").write_text(yaml.safe_dump(new_doc))
    old, new = tmp_path / "old", tmp_path / "new"
    assert run_render("dev", "--config-file", str(tmp_path / "Pulumi.old.yaml"), "--out", str(old)).returncode == 0
    run = run_render(
        "dev", "--config-file", str(tmp_path / "Pulumi.new.yaml"), "--out", str(new), "--against", str(old)
    )
    assert run.returncode == 0, run.stderr
    changes = (new / "changes.md").read_text()
    assert "- ***" in changes and "MY_SETTING" in changes
    assert not [path.name for path in new.rglob("*") if path.is_file() and ESC_SECRET in path.read_text()]


def dev_with_esc_secret(secret: str) -> dict[str, Any]:
    """The dev stack file's document with an inline ESC environment that holds `secret` as an fn::secret, in a key
    engine.secretEnv names."""
    stack_doc: dict[str, Any] = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    stack_doc["environment"] = {"values": {"pulumiConfig": {"openaiKey": {"fn::secret": secret}}}}
    stack_doc["config"]["gke-b200-serving:engine"] = {"secretEnv": OPENAI_KEY}
    return stack_doc


OPENAI_KEY = {"OPENAI_API_KEY": "openaiKey"}


@pytest.mark.parametrize(
    ("setting", "imports"),
    [
        ({"gke-b200-serving:region": ESC_SECRET}, None),
        ({"gke-b200-serving:engine": {"maxNumSeqs": ESC_SECRET, "secretEnv": OPENAI_KEY}}, None),
        ({"gke-b200-serving:region": "a" * 30 + ESC_SECRET}, None),  # the quote's 40 characters end inside it
        ({}, [f"{ESC_SECRET}!"]),  # an import's name, refused before the environment's values are read
    ],
    ids=["region", "engine.maxNumSeqs", "cut-short-by-the-quote", "import-name"],
)
def test_a_refusal_that_quotes_a_pasted_esc_secret_hides_it(
    setting: dict[str, Any], imports: list[str] | None, tmp_path: Path
) -> None:
    """Validation refuses the setting before anything is written and its message quotes the value: the
    console hides the stack file's own secret values, as it hides anything shaped like a token, also the
    part of one a quote cut short."""
    stack_doc = dev_with_esc_secret(ESC_SECRET)
    stack_doc["config"].update(setting)
    if imports is not None:
        stack_doc["environment"]["imports"] = imports
    config_file = tmp_path / "Pulumi.esc.yaml"
    config_file.write_text(yaml.safe_dump(stack_doc))
    run = run_render("esc", "--config-file", str(config_file), "--out", str(tmp_path / "out"))
    assert run.returncode == 2, run.stderr
    assert run.stderr.startswith("invalid stack config: ") and "***" in run.stderr, run.stderr
    assert ESC_SECRET not in run.stdout + run.stderr
    assert ESC_SECRET[:10] not in run.stdout + run.stderr


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
    cluster_name = stack.one("gcp:container/cluster:Cluster")["inputs"]["name"]
    assert stack.outputs["clusterName"] == cluster_name
    assert stack.outputs["getCredentials"].startswith(f"gcloud container clusters get-credentials {cluster_name} ")
    assert "kubeconfig" not in json.dumps(stack.outputs)


def test_plan_lists_components_and_cost(stack: RenderedStack) -> None:
    assert "## Key settings" in stack.plan
    assert "## Capacity and cost" in stack.plan
    assert "### llm (llm-serving:gke:Cluster)" in stack.plan


SHORT_CANARY = "hf_CANARYabc123XYZ"


@pytest.mark.parametrize(
    "settings",
    [
        {"engine": {"maxModelLen": SHORT_CANARY}},
        {"capacity": {"nodes": SHORT_CANARY}},
        {"cluster": {"namespace": SHORT_CANARY}},
        {"region": SHORT_CANARY},
        {"weights": {"revision": SHORT_CANARY}},
        {"engine": {"extraEnv": {SHORT_CANARY: "x"}}},
        {"engine": {"extraEnv": {"A": SHORT_CANARY}}},
        {"engine": {"extraEnv": {"A": "hf_CANARY"}}},
        {"engine": {"extraArgs": [f"--lora-modules=x{SHORT_CANARY}"]}},
    ],
    ids=lambda settings: json.dumps(settings)[:40],
)
def test_a_token_in_any_field_reaches_no_file_and_no_line(settings: dict[str, object], tmp_path: Path) -> None:
    """Refused (exit 2), rejected by a policy (exit 1) or rendered: in every case neither stderr, stdout
    nor any written file shows the token."""
    stack_doc = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    stack_doc["config"].update({f"gke-b200-serving:{key}": value for key, value in settings.items()})
    config_file = tmp_path / "Pulumi.canary.yaml"
    config_file.write_text(yaml.safe_dump(stack_doc))
    out = tmp_path / "out"
    run = run_render("canary", "--config-file", str(config_file), "--out", str(out))
    assert run.returncode in (1, 2), run.stdout
    assert "CANARY" not in run.stdout + run.stderr
    written = [path for path in out.rglob("*") if path.is_file()] if out.exists() else []
    assert all("CANARY" not in path.read_text() for path in written)


PASTED = "Zebra+Horse/Battery-77"  # no tag name either


@pytest.mark.parametrize(
    ("line", "shown"),
    [
        (f"pulumi:tags: {{{PASTED}: v}}", "stack tag names may only contain"),  # refused while the file is read
        (f"gke-b200-serving:maxNodes: !!int {PASTED}", "cannot decode the value as !!int"),
    ],
    ids=["tag-name", "tagged-scalar"],
)
def test_a_refusal_while_the_stack_file_is_read_hides_a_pasted_esc_secret(
    line: str, shown: str, tmp_path: Path
) -> None:
    config_file = tmp_path / "Pulumi.esc.yaml"
    config_file.write_text(yaml.safe_dump(dev_with_esc_secret(PASTED)).replace("config:\n", f"config:\n  {line}\n", 1))
    run = run_render("esc", "--config-file", str(config_file), "--out", str(tmp_path / "out"))
    assert run.returncode == 2, run.stderr
    assert shown in run.stderr
    assert PASTED not in run.stdout + run.stderr


def test_the_shipped_example_commit_is_named_before_pulumi_up(prod: RenderedStack, dev: RenderedStack) -> None:
    """Pulumi.prod.yaml pins an example model commit that passes every check and fails the download Job."""
    assert "weights.revision is the stack file's EXAMPLE commit" in prod.plan
    assert "EXAMPLE commit" not in dev.plan


def test_the_plan_says_the_accelerator_quota_the_stack_needs(prod: RenderedStack, staging: RenderedStack) -> None:
    """Each consumption option needs the quota Google names for it and a project starts with little: prod's 12 A4
    nodes are 96 B200 GPUs; staging's ceiling of 4, 32. Spot and Flex-start may share preemptible quota (a review:
    the plan said each needed its own)."""
    assert "Quota: up to 96 B200 GPUs (12 A4 node(s) at the most) in us-central1" in prod.plan
    assert "one preemptible quota of that size may serve both" in " ".join(prod.plan.split())
    assert "Quota: up to 32 B200 GPUs (4 A4 node(s) at the most)" in staging.plan


def test_an_old_render_it_cannot_read_is_refused_under_the_commands_own_name(tmp_path: Path) -> None:
    """`render --against` said `preview:` for an OLD it could not read."""
    run = run_render("dev", "--out", str(tmp_path / "out"), "--against", str(tmp_path / "missing"))
    assert run.returncode == 2 and run.stderr == (
        f"render: {tmp_path / 'missing'}: no such render directory; allowed: a render folder (`render STACK --out DIR` "
        "writes one)\n"
    )
    assert not (tmp_path / "out").exists()


def test_the_programs_warnings_are_notes_as_pulumi_up_shows_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An existing cluster that does not collect DCGM: the program warns (components/existing_cluster.py), and
    the render says so on the console and in plan.md, once for its two runs."""

    def without_dcgm(name: str, location: str, project: str) -> dict[str, Any]:
        cluster = mocks.stand_in_cluster(name, location, project)
        monitoring = {**cluster["monitoringConfigs"][0], "enableComponents": ["SYSTEM_COMPONENTS"]}
        return {**cluster, "monitoringConfigs": [monitoring]}

    class WithoutDcgm(mocks.OfflineMocks):
        def __init__(self, existing_images: frozenset[str] = frozenset()) -> None:
            super().__init__(existing_images, existing_cluster=without_dcgm)

    monkeypatch.setattr(mocks, "OfflineMocks", WithoutDcgm)
    doc = yaml.safe_load((ROOT / "Pulumi.staging.yaml").read_text())
    doc["config"]["gke-b200-serving:cluster"] = {"existing": True, "name": "platform-autopilot"}
    doc["config"]["gke-b200-serving:autoscaling"] = {"metricsAdapter": "existing"}
    (tmp_path / "Pulumi.shared.yaml").write_text(yaml.safe_dump(doc))
    run = run_render(str(tmp_path / "Pulumi.shared.yaml"), "--out", str(tmp_path / "out"))
    assert run.returncode == 0, run.stderr
    warned = [line for line in run.stderr.splitlines() if "does not collect" in line]
    assert len(warned) == 1 and warned[0].startswith("note: the program warns: cluster platform-autopilot"), warned
    assert "DCGM" in warned[0]
    plan = (tmp_path / "out" / "plan.md").read_text()
    assert "The program warns (`pulumi up` shows these as warnings):\n\n- cluster platform-autopilot does not" in plan
