"""Hostile corpus of secrets: every kind of secret in every input path; no output file or stream shows it.

Kinds: an AWS access key id and secret key, a GCP service account key (JSON), a PEM private key (also
both base64-encoded), OpenAI, GitHub and Slack tokens (a GitHub token, and an OpenAI key in an .env file, also
base64url-encoded), a W&B key (a legacy one is 40 hex digits, known only by its variable's name; the wandb_v1_
keys by their shape), a password, a password inside a connection string or in JSON, HTTP Basic credentials, a
Docker config's auth, and a credential known by its variable's name. Paths:
`engine.extraEnv` (under a neutral name and under the variable's own name), `engine.extraArgs` (as a flag's
value and as the value of a secret flag), a literal of the stack file's inline ESC environment, another
setting, the stack's tags, `bench-compare --record --source`, and an old render a preview reads. Config paths are
refused (exit 2, one line saying how to pass the secret) with nothing written; the others write the secret nowhere.
Each value carries CANARY, which no output may hold. The values are assembled at run time so that this file
holds no complete secret-shaped literal.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from commands.bench_compare.command import bench_compare_main
from commands.preview.command import main as preview_main
from stacks.capacity import measurements
from tests.rendered import ROOT, CommandRun, RenderedStack, run_main, run_render

CANARY = "Canary7Q"


def encoded_with_canary(text: str) -> str:
    """`text` base64-encoded with CANARY (8 base64 characters: 6 bytes) after its first 30 bytes: it decodes
    to the text with those bytes in it, and shows CANARY wherever the encoding is copied."""
    data = text.encode()
    return base64.b64encode(data[:30]).decode() + CANARY + base64.b64encode(data[30:]).decode()


def canary_after_encoding(text: str) -> str:
    """`text` base64url-encoded in whole 3-byte groups (spaces after it to the group's end), CANARY after it: it
    decodes to the text and 6 bytes more, and shows CANARY wherever the encoding is copied."""
    data = text.encode()
    return base64.urlsafe_b64encode(data + b" " * (-len(data) % 3)).decode() + CANARY


WRAPPED_ENV_FILE = "REGION=us-central1\nLOG_LEVEL=info\nGITHUB=gh" + "p_" + "a1" * 18


def wrapped_at_76(encoded: str) -> str:
    """`encoded` in lines of 76 characters, as `base64` writes it, that a YAML scalar folded into spaces."""
    return " ".join(encoded[at : at + 76] for at in range(0, len(encoded), 76))


KINDS: dict[str, tuple[str, str]] = {
    # kind: (variable it belongs in, value)
    "aws-access-key-id": ("AWS_ACCESS_KEY_ID", "AKIA" + "Z7QX3M5K" + CANARY.upper()),
    "aws-secret-access-key": ("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + CANARY + "xY"),
    "gcp-key-json": (
        "GOOGLE_SERVICE_ACCOUNT_KEY",
        json.dumps(
            {
                "type": "service_account",
                "private_key_id": "0c" * 20,
                "private_key": "-----BEGIN " + "PRIVATE KEY-----\nMIIEv" + CANARY + "\n-----END PRIVATE KEY-----\n",
                "client_email": "x@p.iam.gserviceaccount.com",
            }
        ),
    ),
    "pem-private-key": (
        "TLS_KEY",
        "-----BEGIN RSA " + "PRIVATE KEY-----\nMIIEow" + CANARY + "\n-----END RSA PRIVATE KEY-----",
    ),
    # the same, base64-encoded: a TLS bundle in a variable, a service account key file in another key order
    "encoded-pem-private-key": (
        "TLS_BUNDLE_B64",
        encoded_with_canary("-----BEGIN " + "PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0B\n-----END PRIVATE KEY-----\n"),
    ),
    "encoded-gcp-key-json": (
        "GOOGLE_CREDENTIALS_B64",
        encoded_with_canary(
            json.dumps(
                {
                    "type": "service_account",
                    "private_key_id": "0c" * 20,
                    "private_key": "-----BEGIN "
                    + "PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0B\n-----END PRIVATE KEY-----\n",
                    "client_email": "x@p.iam.gserviceaccount.com",
                },
                sort_keys=True,
            )
        ),
    ),
    "openai": ("OPENAI_API_KEY", "sk-" + "proj-" + CANARY + "abcdefghijklmnopqrstuvwxyz012345"),
    "github": ("GITHUB_TOKEN", "gh" + "p_" + CANARY + "abcdefghijklmnopqrstuvwxyz01"),
    "slack": ("SLACK_BOT_TOKEN", "xo" + "xb-1234567890-1234567890123-" + CANARY + "abc"),
    "wandb": ("WANDB_API_KEY", "0123456789abcdef0123456789abcdef" + CANARY),
    # the keys W&B issues since SDK 0.22.3: wandb_v1_ and 77 characters
    "wandb-v1": (
        "WANDB_API_KEY",
        "wandb" + "_v1_" + CANARY + "E7z65cs8PnYoE4OoqnlUl_fJS2hyxPvtioe666B37gxopqxFPQFkSiyk7n4m",
    ),
    "password": ("DB_PASSWORD", "correct-horse-" + CANARY),
    # a password inside a connection string under a neutral name
    "conninfo-password": ("DATABASE_DSN", "host=db user=app pass" + "word=" + CANARY + "-horse"),
    # a password in JSON (an engine's config file in a variable)
    "json-password": ("VLLM_CONFIG", '{"pass' + 'word": "' + CANARY + '-horse1"}'),
    # RFC 7617 Basic credentials and a Docker config's auth: base64 of user:password (CANARY is base64 too)
    "basic-auth": ("UPSTREAM_HEADER", "Basic " + "dXNlcjpw" + CANARY + "MTIzNA=="),
    "docker-auth": ("DOCKER_AUTH_CONFIG", '{"auths": {"r.example": {"au' + 'th": "dXNlcjpw' + CANARY + 'MTIzNA=="}}}'),
    # a password of digits and braces in a URL, tokens of PyPI, Telegram, DigitalOcean, a Discord webhook
    "url-password": ("REDIS_URL", "redis://:48213977}" + CANARY + "@cache.example.com:6379/0"),
    "pypi": ("TWINE_PASSWORD", "pypi-" + "AgEIcHlwaS5vcmc" + CANARY * 9),
    "telegram": ("TELEGRAM_BOT", "110201543:" + "AAHdqTcvCH1vGWJxfSeofSAs0K" + CANARY),
    "discord-webhook": ("ALERT_HOOK", "https://discord.com/api/" + "webhooks/123456789012345678/" + CANARY * 4),
    # tokens of gitleaks' rules: Vault, an Azure AD client secret, a Stripe test key, Grafana Cloud
    "vault": ("VAULT_TOKEN", "hvs." + CANARY * 12),
    "azure-ad-client-secret": ("AZURE_CLIENT_SECRET", "abc8Q~" + CANARY * 4 + "x"),
    "stripe-test": ("STRIPE_KEY", "sk_" + "test_" + CANARY * 3),
    "grafana-cloud": ("GRAFANA_TOKEN", "glc_" + CANARY * 5),
    # tokens of other kinds than Hugging Face's base64-encoded (a Secret's data value, an .env file encoded whole)
    "encoded-github": ("GITHUB_TOKEN_B64", canary_after_encoding("gh" + "p_" + "abcdefghijklmnopqrstuvwxyz0123456789")),
    "encoded-env-file": (
        "APP_ENV_B64",
        canary_after_encoding("REGION=us-central1\nOPENAI=sk-" + "proj-" + "abcdefghijklmnopqrstuvwxyz01\n"),
    ),
    # the same wrapped at 76 columns (`base64 .env`) and folded into spaces, the token across a break (an attacker)
    "wrapped-env-file": ("APP_ENV_B64", wrapped_at_76(canary_after_encoding(WRAPPED_ENV_FILE))),
    # a Google credential file's content, known by its variable's name only
    "google-credentials": ("GOOGLE_APPLICATION_CREDENTIALS_JSON", "anything-long-enough-" + CANARY),
}
# Kinds a value shows by its shape alone (the others only by the name of the setting holding them).
SHAPED = (
    "aws-access-key-id",
    "gcp-key-json",
    "pem-private-key",
    "encoded-pem-private-key",
    "encoded-gcp-key-json",
    "openai",
    "github",
    "slack",
    "wandb-v1",
    "conninfo-password",
    "json-password",
    "basic-auth",
    "docker-auth",
    "url-password",
    "pypi",
    "telegram",
    "discord-webhook",
    "vault",
    "azure-ad-client-secret",
    "stripe-test",
    "grafana-cloud",
    "encoded-github",
    "encoded-env-file",
    "wrapped-env-file",
)
PROJECT = "gke-b200-serving"


def stack_file(
    directory: Path,
    settings: dict[str, Any],
    environment: dict[str, Any] | None = None,
    engine_settings: dict[str, Any] | None = None,
) -> Path:
    document: dict[str, Any] = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    document["config"].update({f"{PROJECT}:{key}": value for key, value in settings.items()})
    document["config"].update(engine_settings or {})
    if environment is not None:
        document["environment"] = {"values": {"pulumiConfig": environment}}
    path = directory / "Pulumi.secrets.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def no_canary_anywhere(outcome: CommandRun, *folders: Path) -> None:
    assert CANARY not in outcome.stdout + outcome.stderr, outcome.stderr
    assert "Traceback" not in outcome.stderr
    for folder in folders:
        for path in folder.rglob("*") if folder.exists() else ():
            if path.is_file():
                assert CANARY not in path.read_text(errors="replace"), path


def refused(
    directory: Path, settings: dict[str, Any], *fragments: str, environment: Any = None, engine_settings: Any = None
) -> CommandRun:
    out = directory / "out"
    outcome = run_render(
        "secrets",
        "--config-file",
        str(stack_file(directory, settings, environment, engine_settings)),
        "--out",
        str(out),
    )
    assert outcome.returncode == 2, outcome.stdout + outcome.stderr
    lines = outcome.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("invalid stack config: "), outcome.stderr
    for fragment in fragments:
        assert fragment in lines[0]
    assert not out.exists(), "nothing is written"
    no_canary_anywhere(outcome, out)
    return outcome


def test_a_variable_named_by_a_secret_is_not_shown_in_another_case(tmp_path: Path) -> None:
    name = KINDS["aws-access-key-id"][1]
    outcome = refused(tmp_path, {"engine": {"extraEnv": {name: "1"}}}, "engine.secretEnv.VARIABLE: KEY")
    assert CANARY.lower() not in outcome.stderr.lower(), outcome.stderr


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_in_extra_env_under_its_own_name(kind: str, tmp_path: Path) -> None:
    variable, value = KINDS[kind]
    refused(tmp_path, {"engine": {"extraEnv": {variable: value}}}, f"engine.extraEnv.{variable}", "engine.secretEnv")


@pytest.mark.parametrize("kind", SHAPED)
def test_in_extra_env_under_a_neutral_name(kind: str, tmp_path: Path) -> None:
    refused(tmp_path, {"engine": {"extraEnv": {"MY_SETTING": KINDS[kind][1]}}}, "engine.extraEnv.MY_SETTING: holds")


@pytest.mark.parametrize("kind", SHAPED)
def test_in_extra_args_as_a_flag_value(kind: str, tmp_path: Path) -> None:
    refused(tmp_path, {"engine": {"extraArgs": [f"--chat-template={KINDS[kind][1]}"]}}, "engine.extraArgs[0]: holds")


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_in_extra_args_as_a_secret_flag(kind: str, tmp_path: Path) -> None:
    refused(
        tmp_path,
        {"engine": {"extraArgs": ["--api-key", KINDS[kind][1]]}},
        "engine.extraArgs[1]:",
        "engine.secretEnv.VLLM_API_KEY",
    )


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_from_an_inline_esc_environment(kind: str, tmp_path: Path) -> None:
    variable, value = KINDS[kind]
    refused(tmp_path, {}, f"engine.extraEnv.{variable}", environment={"engine": {"extraEnv": {variable: value}}})


@pytest.mark.parametrize("kind", SHAPED)
def test_in_another_setting(kind: str, tmp_path: Path) -> None:
    refused(tmp_path, {"weights": {"model": KINDS[kind][1]}}, "weights.model: holds")


@pytest.mark.parametrize("kind", SHAPED)
def test_in_the_stack_tags(kind: str, tmp_path: Path) -> None:
    """plan.md shows the stack's tags, and the CLI sets them on the stack in Pulumi Cloud."""
    refused(tmp_path, {}, "pulumi:tags.owner: holds", engine_settings={"pulumi:tags": {"owner": KINDS[kind][1]}})


def test_the_proper_path_renders_a_secret_reference_and_no_value(tmp_path: Path) -> None:
    """engine.secretEnv: the value stays a Pulumi secret in its own Kubernetes Secret, the pod reads it
    through valueFrom.secretKeyRef; a plain `hunter2` in the stack file would be refused, a `secure:` is not."""
    path = stack_file(
        tmp_path,
        {
            "openaiApiKey": {"secure": "v1:" + CANARY},
            "engine": {"secretEnv": {"OPENAI_API_KEY": "openaiApiKey", "VLLM_API_KEY": "openaiApiKey"}},
        },
    )
    out = tmp_path / "out"
    outcome = run_render("secrets", "--config-file", str(path), "--out", str(out))
    assert outcome.returncode == 0, outcome.stderr
    no_canary_anywhere(outcome, out)
    records = json.loads((out / "resources.json").read_text())
    secret = next(r for r in records if r["name"].endswith("engine-env-secret"))
    assert secret["inputs"]["metadata"]["name"] == "qwen-serving-engine-env"
    assert set(secret["inputs"]["stringData"]) == {"OPENAI_API_KEY", "VLLM_API_KEY"}
    assert all(value == "[secret]" for value in secret["inputs"]["stringData"].values())
    deployment = next(
        r for r in records if r["type"] == "kubernetes:apps/v1:Deployment" and r["name"] == "llm-vllm-deployment"
    )
    env = deployment["inputs"]["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {
        item["name"]: item["valueFrom"]["secretKeyRef"]
        for item in env
        if item["name"] in ("OPENAI_API_KEY", "VLLM_API_KEY")
    } == {
        "OPENAI_API_KEY": {"name": "qwen-serving-engine-env", "key": "OPENAI_API_KEY"},
        "VLLM_API_KEY": {"name": "qwen-serving-engine-env", "key": "VLLM_API_KEY"},
    }


def test_a_secret_setting_of_the_engine_is_refused(tmp_path: Path) -> None:
    """`pulumi config set --secret --path engine.extraEnv.X`: the program would get it decrypted."""
    refused(tmp_path, {"engine": {"extraEnv": {"X": {"secure": "v1:" + CANARY}}}}, "a secure value inside a setting")


@pytest.mark.parametrize("kind", (*SHAPED, "password"))
def test_record_source_writes_no_secret(kind: str, tmp_path: Path) -> None:
    file = tmp_path / "measurements.yaml"
    file.write_text(measurements.MEASUREMENTS_FILE.read_text())
    before = file.read_text()
    value = KINDS[kind][1] if kind != "password" else "postgres://admin:" + CANARY + "@db:5432/runs"
    log = ROOT / "tests" / "data" / "bench-job.log"
    outcome = run_main(bench_compare_main, "dev", str(log), "--measurements", str(file), "--record", "--source", value)
    assert outcome.returncode == 2, outcome.stderr
    assert "which would be written to the measurements file" in outcome.stderr and outcome.stderr.count("\n") == 1
    assert file.read_text() == before
    no_canary_anywhere(outcome)


@pytest.fixture(scope="module")
def dev_render(dev: RenderedStack) -> Path:
    """The session's render of dev (read, never written to)."""
    return dev.directory


def test_an_old_render_with_secrets_reaches_no_preview_file(dev_render: Path, tmp_path: Path) -> None:
    records = json.loads((dev_render / "resources.json").read_text())
    deployment = next(r for r in records if r["type"] == "kubernetes:apps/v1:Deployment")
    env = deployment["inputs"]["spec"]["template"]["spec"]["containers"][0]["env"]
    env += [{"name": variable, "value": value} for variable, value in KINDS.values() if value]
    deployment["inputs"]["metadata"].setdefault("annotations", {}).update({kind: KINDS[kind][1] for kind in SHAPED})
    old = tmp_path / "old"
    old.mkdir()
    (old / "resources.json").write_text(json.dumps(records))
    out = tmp_path / "out"
    outcome = run_main(preview_main, str(old), str(dev_render), "--out", str(out))
    assert outcome.returncode in (0, 1), outcome.stderr
    assert CANARY not in outcome.stdout + outcome.stderr
    for name in ("changes.md", "changes.json"):
        assert CANARY not in (out / name).read_text(), name
