"""A stack file as any Pulumi team writes it: engine settings (`pulumi:`), provider settings (`gcp:`,
`kubernetes:`) and Pulumi ESC imports (`environment:`), read as the CLI reads them."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from commands.engine import mocks
from commands.io.states import ESC_NOTE, UNSEEN_SETTINGS_MAX
from commands.preview.command import preview_states
from commands.stackfile import stack_settings
from commands.stackfile.esc import EnvironmentBlockError, StackEnvironment, merged_config, read_environment
from commands.stackfile.yaml_scalars import plain_scalar
from stacks.load.loader import InvalidConfig
from tests.rendered import ROOT, RenderedStack, run_render

PROJECT = "gke-b200-serving"
DEV = {f"{PROJECT}:environment": "dev", f"{PROJECT}:zones": ["us-central1-b"]}


def write_stack(tmp_path: Path, name: str, document: dict[str, Any]) -> Path:
    path = tmp_path / f"Pulumi.{name}.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def render_file(path: Path, out: Path) -> tuple[RenderedStack, str]:
    run = run_render(str(path), "--out", str(out))
    assert run.returncode == 0, run.stderr
    return RenderedStack(out), run.stderr


def test_every_resource_names_its_provider(stack: RenderedStack) -> None:
    """Why `pulumi:disable-default-providers: ["*"]` changes nothing: no resource of the render
    relies on a default provider (a component has none; a provider resource is its own)."""
    for record in stack.resources:
        if record["custom"] and not record["type"].startswith("pulumi:providers:"):
            assert record["provider"], f"{record['type']} {record['name']} uses a default provider"


def test_a_default_provider_is_refused_when_disabled(tmp_path: Path) -> None:
    """The offline engine refuses what the engine refuses, with its words."""
    path = write_stack(
        tmp_path,
        "denied",
        {"config": {**DEV, f"{PROJECT}:project": "my-llm-dev", "pulumi:disable-default-providers": ["gcp"]}},
    )
    program = tmp_path / "program.py"
    program.write_text("import pulumi_gcp as gcp\ngcp.compute.Network('net', auto_create_subnetworks=False)\n")
    settings = stack_settings.load_stack_settings("denied", path)
    with pytest.raises(mocks.DefaultProviderDeniedError, match="Default provider for 'gcp' disabled"):
        mocks.run_program(settings, program=program)
    allowed = stack_settings.load_stack_settings(
        "allowed", write_stack(tmp_path, "allowed", {"config": {**DEV, f"{PROJECT}:project": "my-llm-dev"}})
    )
    assert len(mocks.run_program(allowed, program=program).registrations) == 1


def test_gcp_project_and_region_stand_in_for_the_stack_keys(tmp_path: Path) -> None:
    own = write_stack(
        tmp_path, "same", {"config": {**DEV, f"{PROJECT}:project": "my-llm-dev", f"{PROJECT}:region": "us-central1"}}
    )
    (tmp_path / "provider").mkdir()
    provider = write_stack(
        tmp_path / "provider", "same", {"config": {**DEV, "gcp:project": "my-llm-dev", "gcp:region": "us-central1"}}
    )
    by_own, _ = render_file(own, tmp_path / "own")
    by_provider, notes = render_file(provider, tmp_path / "by-provider")
    assert by_provider.resources == by_own.resources
    assert "Provider settings not applied" not in notes
    gcp = by_provider.one("pulumi:providers:gcp")["inputs"]
    assert (gcp["project"], gcp["region"]) == ("my-llm-dev", "us-central1")


def test_esc_imports_render_with_placeholders_and_say_so(tmp_path: Path) -> None:
    path = write_stack(
        tmp_path,
        "esc",
        {"environment": ["my-org/gcp-dev", "llm/serving@7"], "config": {f"{PROJECT}:environment": "dev"}},
    )
    rendered, stderr = render_file(path, tmp_path / "out")
    note = next(line for line in stderr.splitlines() if line.startswith("note: Pulumi ESC"))
    assert "`my-org/gcp-dev`, `llm/serving@7`" in note and "`project` (`project-from-esc`)" in note
    assert note.removeprefix("note: ") in rendered.plan
    assert rendered.one("pulumi:providers:gcp")["inputs"]["project"] == stack_settings.ESC_PROJECT_PLACEHOLDER


def test_a_preview_says_what_the_esc_environment_may_change_unseen(tmp_path: Path, dev: RenderedStack) -> None:
    """An inline value ESC computes takes its default offline: the preview shows no change where `pulumi up` may
    roll every pod, and says so."""
    document = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    document["environment"] = {"values": {"seqs": 4096, "pulumiConfig": {"engine": {"maxNumSeqs": "${seqs}"}}}}
    rendered, _ = render_file(write_stack(tmp_path, "dev", document), tmp_path / "out")
    result = preview_states(dev.states, rendered.states)
    (warning,) = [warning for warning in result.warnings if "ESC environment supplies" in warning]
    assert warning.startswith("the new render could not see what its ESC environment supplies, so `pulumi up` may")
    assert "It computes `engine`." in warning
    assert not [warning for warning in preview_states(dev.states, dev.states).warnings]


@pytest.mark.parametrize(
    ("imports", "computed", "placeholders"),
    [
        (("myorg/serving-prod",), (), ["gke-b200-serving:project"]),
        ((), ("gke-b200-serving:engine",), []),
        (("a", "b/c@3"), ("gke-b200-serving:engine", "gke-b200-serving:routing"), ["gke-b200-serving:project"]),
        # a diff review: a secret ESC supplies stands in as [unset secret:... from ESC]; references 302 long, 50 of them
        ((f"{'o' * 100}/{'e' * 100}@{'v' * 100}",) * 50, (), ["gke-b200-serving:wandbApiKey"]),
        # a third diff review: keys of another namespace the program does not check, odd and many
        ((), ("kubernetes:we`ird", "kubernetes:a\nb", "kubernetes:" + "k" * 420, "kubernetes:"), []),
        ((), tuple(f"kubernetes:key{index}" for index in range(150)), []),
    ],
)
def test_every_esc_note_a_render_writes_is_one_a_preview_reads(
    imports: tuple[str, ...], computed: tuple[str, ...], placeholders: list[str]
) -> None:
    """A preview reads back only the note a render writes (commands/io/states.py ESC_NOTE): each form of it."""
    config = {
        key: stack_settings.ESC_PROJECT_PLACEHOLDER
        if key.endswith(":project")
        else f"{stack_settings.UNSET_PLACEHOLDER}{key} from ESC]"
        for key in placeholders
    }
    settings = stack_settings.StackSettings(
        "gke-b200-serving",
        "dev",
        config,
        [],
        [],
        StackEnvironment(imports=imports, computed_keys=computed),
        placeholders,
    )
    note = stack_settings.esc_note(settings)
    assert note is not None and ESC_NOTE.fullmatch(note) and len(note) <= UNSEEN_SETTINGS_MAX, note


def test_without_esc_a_missing_project_is_one_line(tmp_path: Path) -> None:
    path = write_stack(tmp_path, "bare", {"config": DEV})
    run = run_render(str(path), "--out", str(tmp_path / "out"))
    assert run.returncode == 2
    assert run.stderr.splitlines() == [
        "invalid stack config: project: required key is missing; set `project` or `gcp:project` "
        "(pulumi config set gcp:project PROJECT_ID), in the stack file or in an ESC environment it imports"
    ]


def test_engine_and_provider_settings_are_reported_for_what_they_do(tmp_path: Path) -> None:
    path = write_stack(
        tmp_path,
        "team",
        {
            "config": {
                **DEV,
                f"{PROJECT}:project": "my-llm-dev",
                "pulumi:tags": {"team": "ml-platform"},
                "pulumi:disable-default-providers": ["*"],
                "kubernetes:namespace": "default",
            }
        },
    )
    rendered, stderr = render_file(path, tmp_path / "out")
    assert "`team=ml-platform`" in rendered.plan and "label no resource" in rendered.plan
    assert "Default providers disabled" in rendered.plan
    assert "note: Provider settings not applied: `kubernetes:namespace`" in stderr
    labels = str(rendered.resources)
    assert "ml-platform" not in labels


def test_a_provider_key_with_control_characters_is_noted_escaped(tmp_path: Path) -> None:
    """An attacker: a `gcp:` key holding a line break and an ESC byte reached plan.md and the console raw (a line of
    its own, a terminal colour)."""
    key = "gcp:x\nverdict: ok \x1b[31m"
    path = write_stack(tmp_path, "keys", {"config": {**DEV, f"{PROJECT}:project": "my-llm-dev", key: 1}})
    rendered, stderr = render_file(path, tmp_path / "out")
    note = "Provider settings not applied: `gcp:x\\nverdict: ok \\x1b[31m`"
    assert note in rendered.plan and note in stderr
    assert "\x1b" not in rendered.plan and not any(line.startswith("verdict") for line in stderr.splitlines())


def test_an_inline_environment_is_merged_under_the_stack_file() -> None:
    environment = read_environment(
        {
            "imports": ["base"],
            "values": {
                "pulumiConfig": {
                    "capacity": {"nodes": 2, "sources": [{"type": "spot"}]},
                    "gcp:project": "from-esc",
                    "hfToken": {"fn::secret": "x"},
                    "region": "${region}",
                }
            },
        },
        PROJECT,
    )
    assert environment.imports == ("base",)
    assert environment.computed_keys == (f"{PROJECT}:hfToken", f"{PROJECT}:region")
    merged = merged_config(environment.literal_config, {f"{PROJECT}:capacity": {"nodes": 3}, "gcp:project": "mine"})
    assert merged[f"{PROJECT}:capacity"] == {"nodes": 3, "sources": [{"type": "spot"}]}
    assert merged["gcp:project"] == "mine"
    assert StackEnvironment().opaque is False and environment.opaque


def test_the_literal_esc_secrets_are_known_values(tmp_path: Path) -> None:
    """The program gets placeholders for the keys of `fn::secret`s offline, but the stack file holds
    their literal values: known, so that a copy of one pasted into a setting is found; so is a `secure:` value's
    ciphertext (no output holds it). A computed secret and an interpolation are not known."""
    document = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    document["environment"] = {
        "values": {
            "db": {"password": {"fn::secret": "Zebra-Horse-Battery"}},
            "pin": {"fn::secret": 12345678},
            "computed": {"fn::secret": {"fn::toBase64": "Not-A-Literal"}},
            "joined": {"fn::secret": "${db.password}-x"},
            "pulumiConfig": {"openaiKey": {"fn::secret": "Fox-Glove-Lantern"}, "dbPassword": "${db.password}"},
        }
    }
    document["config"][f"{PROJECT}:hfToken"] = {"secure": "v1:Y2lwaGVydGV4dA=="}
    document["config"][f"{PROJECT}:engine"] = {
        "secretEnv": {"OPENAI_API_KEY": "openaiKey", "DB_PASSWORD": "dbPassword"}
    }
    path = tmp_path / "Pulumi.esc.yaml"
    path.write_text(yaml.safe_dump(document))
    settings = stack_settings.load_stack_settings("esc", path)
    assert settings.environment.secret_literals == ("12345678", "Fox-Glove-Lantern", "Zebra-Horse-Battery")
    assert sorted(settings.known_secret_values()) == [
        "12345678",
        "Fox-Glove-Lantern",
        "Zebra-Horse-Battery",
        "v1:Y2lwaGVydGV4dA==",
    ]


@pytest.mark.parametrize(
    ("setting", "where"),
    [
        ({"engine": {"extraEnv": {"OPENAI_API_KEY": {"fn::secret": "sk-..."}}}}, "engine.extraEnv.OPENAI_API_KEY"),
        ({"engine": {"extraArgs": ["--api-key", {"fn::secret": "x"}]}}, "engine.extraArgs[1]"),
    ],
)
def test_an_esc_secret_inside_a_setting_is_refused(setting: dict[str, Any], where: str) -> None:
    """The render used to take such a setting as merely unknown (exit 0) while `pulumi up` gets it as one
    secret value and refuses it; a secret in a key of its own stays a computed key."""
    with pytest.raises(EnvironmentBlockError, match=rf"^pulumiConfig\.{re.escape(where)}: an ESC secret inside"):
        read_environment({"values": {"pulumiConfig": setting}}, PROJECT)
    own = read_environment({"values": {"pulumiConfig": {"openaiKey": {"fn::secret": "x"}}}}, PROJECT)
    assert own.computed_keys == (f"{PROJECT}:openaiKey",)


SECRET_VALUES = {"openai": {"fn::secret": "sk-..."}, "db": {"user": "app", "password": {"fn::secret": "x"}}}


@pytest.mark.parametrize(
    ("setting", "where"),
    [
        ({"engine": {"extraEnv": {"OPENAI_API_KEY": "${openai}"}}}, "engine.extraEnv.OPENAI_API_KEY"),
        ({"engine": {"extraArgs": ["--middleware-arg", "Bearer ${openai}"]}}, "engine.extraArgs[1]"),
        ({"engine": {"extraEnv": {"DSN": "postgres://${db.user}:${db.password}@db/runs"}}}, "engine.extraEnv.DSN"),
        ({"engine": {"extraEnv": {"DB": "${db}"}}}, "engine.extraEnv.DB"),  # an object holding a secret
        ({"engine": {"extraEnv": {"PW": '${db["password"]}'}}}, "engine.extraEnv.PW"),  # bracket syntax
        ({"engine": {"extraEnv": {"PW": "${db['password']}"}}}, "engine.extraEnv.PW"),
        ({"engine": {"extraEnv": {"NOTE": "x-${alias}"}}}, "engine.extraEnv.NOTE"),  # through another text
        ({"engine": {"extraEnv": {"NOTE": "x-${chain}"}}}, "engine.extraEnv.NOTE"),
        (
            {"wandbKey": {"fn::secret": "w"}, "engine": {"extraEnv": {"W": "${pulumiConfig.wandbKey}"}}},
            "engine.extraEnv.W",
        ),
    ],
)
def test_an_interpolated_esc_secret_inside_a_setting_is_refused(setting: dict[str, Any], where: str) -> None:
    """ESC makes a value that interpolates a secret secret too: inside a setting, the setting becomes one
    secret config value that `pulumi up` refuses, as an fn::secret written there."""
    values = {**SECRET_VALUES, "alias": "${openai}", "chain": "${alias}", "pulumiConfig": setting}
    with pytest.raises(EnvironmentBlockError, match=rf"^pulumiConfig\.{re.escape(where)}: an ESC secret inside"):
        read_environment({"values": values}, PROJECT)


def test_a_text_interpolating_only_plain_values_is_no_secret() -> None:
    values = {
        "region": "us-central1",
        "alias": "${region}",
        "pulumiConfig": {"engine": {"extraEnv": {"R": "${alias}"}}},
    }
    assert read_environment({"values": values}, PROJECT).computed_keys == (f"{PROJECT}:engine",)


@pytest.mark.parametrize("key", ["hfToken", f"{PROJECT}:hfToken"])
def test_a_secret_key_in_clear_text_in_the_environment_is_refused_as_under_config(tmp_path: Path, key: str) -> None:
    document = {
        "environment": {"values": {"pulumiConfig": {key: "hf_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZabcdefgh"}}},
        "config": {f"{PROJECT}:environment": "dev", f"{PROJECT}:project": "my-llm-dev"},
    }
    path = tmp_path / "Pulumi.esc.yaml"
    path.write_text(yaml.safe_dump(document))
    with pytest.raises(InvalidConfig, match="environment pulumiConfig: 'hfToken' is a secret and is "):
        stack_settings.load_stack_settings("esc", path)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"bogusKey": "${plain}"}, "invalid stack config: bogusKey: unknown key; allowed keys here: autoscaling, "),
        ({"regoin": "${plain}"}, "invalid stack config: regoin: unknown key; did you mean 'region'?"),
        ({"region": "${secret}"}, "invalid stack config: 'region': is a secret (pulumi config set --secret, or an ESC"),
        ({"region": {"fn::secret": "us-east1"}}, "invalid stack config: 'region': is a secret"),
        ({"dbPassword": "${secret}"}, "invalid stack config: 'dbPassword': is a secret"),
    ],
)
def test_a_key_the_environment_computes_is_refused_as_pulumi_up_refuses_it(
    tmp_path: Path, config: dict[str, Any], message: str
) -> None:
    """The key is known though its value is not: the program reads it, whatever ESC makes of the value."""
    values: dict[str, Any] = {"plain": "x", "secret": {"fn::secret": "Zq7pW3xKv9"}, "pulumiConfig": config}
    settings: dict[str, Any] = {**DEV, f"{PROJECT}:project": "my-llm-dev"}
    document = {"environment": {"values": values}, "config": settings}
    with pytest.raises(InvalidConfig) as refused:
        stack_settings.load_stack_settings("esc", write_stack(tmp_path, "esc", document))
    assert str(refused.value).startswith(message) and "Zq7pW3xKv9" not in str(refused.value)
    assert str(refused.value).endswith("(set by the stack file's inline ESC environment)")
    # a secret key engine.secretEnv names, and a whole computed engine (its secretEnv may name any key), are kept
    settings[f"{PROJECT}:engine"] = {"secretEnv": {"DB_PASSWORD": "dbPassword"}}
    values["pulumiConfig"] = {"dbPassword": "${secret}"}
    stack_settings.load_stack_settings("esc", write_stack(tmp_path, "esc", document))
    values["pulumiConfig"] = {"engine": "${plain}", "openaiKey": "${secret}"}
    stack_settings.load_stack_settings("esc", write_stack(tmp_path, "esc", document))
    # an imported environment may name the key in engine.secretEnv (not a setting); the stack file's own value wins
    document["environment"] = {"imports": ["shared/serving-engine"], "values": {**values, "pulumiConfig": config}}
    if "region" in config:
        with pytest.raises(InvalidConfig, match="'region': is a secret"):
            stack_settings.load_stack_settings("esc", write_stack(tmp_path, "esc", document))
    else:
        stack_settings.load_stack_settings("esc", write_stack(tmp_path, "esc", document))
    document["environment"] = {"values": {**values, "pulumiConfig": config}}
    settings.update({f"{PROJECT}:{key}": "us-central1" for key in config})
    stack_settings.load_stack_settings("esc", write_stack(tmp_path, "esc", document))


def test_an_interpolation_of_a_plain_value_or_a_whole_secret_key_is_kept() -> None:
    plain = {"engine": {"extraEnv": {"DB_USER": "${db.user}"}}, "openaiKey": "${openai}"}
    environment = read_environment({"values": {**SECRET_VALUES, "pulumiConfig": plain}}, PROJECT)
    assert set(environment.computed_keys) == {f"{PROJECT}:engine", f"{PROJECT}:openaiKey"}


def test_reading_a_stack_file_leaves_pyyaml_as_it_was() -> None:
    """The stack file reader keeps dates as text in its own loader only: PyYAML's SafeLoader still
    reads a date and SafeDumper still quotes a date-like string (bench-compare --record writes one)."""
    from commands.stackfile import stackfile

    assert stackfile._StrictLoader("d: 2026-11-20").get_single_data() == {"d": "2026-11-20"}
    assert str(yaml.safe_load("d: 2026-11-20")["d"]) == "2026-11-20"
    assert not isinstance(yaml.safe_load("d: 2026-11-20")["d"], str)
    assert yaml.safe_dump({"d": "2026-11-20"}) == "d: '2026-11-20'\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("yes", ("str", "yes")),
        ("Off", ("str", "Off")),
        ("TRUE", ("bool", True)),
        ("tRUE", ("str", "tRUE")),
        ("~", ("null", None)),
        ("1:30", ("str", "1:30")),
        ("010", ("int", 8)),
        ("08", ("float", 8.0)),
        ("1_000", ("int", 1000)),
        ("0o17", ("int", 15)),
        ("-0x1F", ("int", -31)),
        ("0b101", ("int", 5)),
        ("1e3", ("float", 1000.0)),
        (".5", ("float", 0.5)),
        ("1e999", ("str", "1e999")),
        ("18446744073709551615", ("int", 2**64 - 1)),
        ("+18446744073709551615", ("float", 2.0**64)),
        ("9" * 5_000, ("str", "9" * 5_000)),
        ("2024-1-2", ("str", "2024-1-2")),
        ("=", ("str", "=")),
        ("\u0663", ("str", "\u0663")),
    ],
)
def test_plain_scalars_are_read_as_the_cli_reads_them(text: str, expected: tuple[str, Any]) -> None:
    """yaml.v3's resolve (go-yaml/yaml resolve.go), which the CLI reads stack files with, not YAML 1.1's."""
    assert plain_scalar(text) == expected


def test_a_stack_file_value_is_the_value_pulumi_up_reads(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.scalars.yaml"
    path.write_text(
        "config:\n  gke-b200-serving:environment: dev\n  gke-b200-serving:project: my-llm-dev\n"
        "  gke-b200-serving:weights:\n    revision: 2024-1-2\n"
        "  gke-b200-serving:engine:\n    extraEnv: {D: '0o17', B: 1:30, C: =, A: yes}\n"
        "  gke-b200-serving:capacity:\n    nodes: 2.0\n"
        "  gke-b200-serving:workload:\n    concurrencyPerNode: 1e3\n    maxPromptTokens: 0.5\n"
        "    maxOutputTokens: 1.2345678901234567e20\n"
    )
    entries = stack_settings.load_stack_settings("scalars", path).config
    assert entries[f"{PROJECT}:weights"] == '{"revision":"2024-1-2"}'
    # Go's encoding/json: a mapping's keys sorted (the program sees them in that order)
    assert entries[f"{PROJECT}:engine"] == '{"extraEnv":{"A":"yes","B":"1:30","C":"=","D":"0o17"}}'
    # yaml.v3 reads 2.0 and 1e3 as floats, encoding/json writes them without a fraction: integers to the program
    assert entries[f"{PROJECT}:capacity"] == '{"nodes":2}'
    # Go writes a float's shortest digits: 123456789012345670000, not the float's exact 123456789012345667584
    assert entries[f"{PROJECT}:workload"] == (
        '{"concurrencyPerNode":1000,"maxOutputTokens":123456789012345670000,"maxPromptTokens":0.5}'
    )


def test_a_pulumi_config_in_the_shell_does_not_reach_the_program(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under `pulumi up` the language host replaces PULUMI_CONFIG with the stack's; the SDK reads a key
    the stack does not set from it, so offline a stray one set the cluster's name."""
    monkeypatch.setenv("PULUMI_CONFIG", '{"gke-b200-serving:cluster": "{\\"name\\": \\"from-the-shell\\"}"}')
    stack, _ = render_file(
        write_stack(tmp_path, "shell", {"config": {**DEV, f"{PROJECT}:project": "my-llm-dev"}}), tmp_path / "out"
    )
    assert "from-the-shell" not in json.dumps(stack.resources)


@pytest.mark.parametrize("text", ["", "# only a comment\n", "encryptionsalt: v1:abc\n"])
def test_a_stack_file_without_config_names_itself(text: str, tmp_path: Path) -> None:
    """An empty stack file was refused as "environment: required key is missing", naming no file."""
    stack_file = tmp_path / "Pulumi.empty.yaml"
    stack_file.write_text(text)
    with pytest.raises(InvalidConfig, match=rf"^invalid stack config: {re.escape(str(stack_file))}: sets no config"):
        stack_settings.load_stack_settings("empty", stack_file)


@pytest.mark.parametrize(
    ("values", "imports", "left_to_esc"),
    [
        ({"r": "us-central1", "pulumiConfig": {"region": "${r}"}}, None, False),  # computes another key only
        ({"pulumiConfig": {"hfToken": {"fn::secret": "hf_" + "Q" * 34}}}, None, True),
        ({}, ["myorg/llm-secrets"], True),  # an import may set it
    ],
    ids=["computes-another-key", "computes-it", "imports"],
)
def test_a_secret_key_the_file_leaves_out_is_left_to_esc_only_where_esc_may_set_it(
    values: dict[str, Any], imports: list[str] | None, left_to_esc: bool, tmp_path: Path
) -> None:
    """A review: an inline environment that computes `region` labelled an unset hfToken `from ESC` (`[secret, esc]` in
    a preview), though nothing under `pulumi up` sets it."""
    document = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    document["environment"] = {**({"values": values} if values else {}), **({"imports": imports} if imports else {})}
    settings = stack_settings.load_stack_settings("dev", write_stack(tmp_path, "dev", document))
    assert settings.config["gke-b200-serving:hfToken"].endswith(stack_settings.FROM_ESC) == left_to_esc


@pytest.mark.parametrize(
    ("token", "environment", "stops"),
    [
        (None, None, True),
        ({"secure": "v1:Zm9yLXRlc3RzLW9ubHk=:not-a-real-ciphertext"}, None, False),
        (None, {"imports": ["myorg/llm-secrets"]}, False),
    ],
    ids=["unset", "secure", "left-to-an-import"],
)
def test_an_unset_hf_token_says_pulumi_up_stops(
    token: dict[str, str] | None, environment: dict[str, Any] | None, stops: bool, tmp_path: Path
) -> None:
    """A day-2 tester: Pulumi.yaml declares hfToken without a default, so the Pulumi CLI stops `pulumi up` on a stack
    that leaves it unset ("is missing configuration value"); plan.md listed it as a secret that cannot be decrypted."""
    document = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    if token:
        document["config"]["gke-b200-serving:hfToken"] = token
    if environment:
        document["environment"] = environment
    settings = stack_settings.load_stack_settings("dev", write_stack(tmp_path, "dev", document))
    notes = [note for note in stack_settings.unset_secret_notes(settings) if "missing configuration value" in note]
    assert bool(notes) == stops
    assert settings.unset_secret_keys() == (["gke-b200-serving:hfToken"] if stops else [])
