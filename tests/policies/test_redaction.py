"""Secret values the stack recognises by their shape alone, and look-alikes it must leave alone: a W&B key
of the current format is refused under any name; a git commit id or an image digest (the same 40 or 64
hex digits a legacy W&B key has) is not a secret by its value."""

from __future__ import annotations

import base64

import pytest

from policies.redaction import redact_secrets, secret_kinds

# Assembled at run time: this file holds no complete secret-shaped literal.
WANDB_V1 = "wandb" + "_v1_" + "E7z65cs8PnYoE4OoqnlUlABzZbZ_fJS2hyxPvtioe666B37gxopqxFPQFkSiyk7n4mxLtfB2Pa6tq"
WANDB_LOCAL = "local" + "-" + "0c" * 20
SERVICE_ACCOUNT_KEY = (
    '{\n  "type": "service_' + 'account",\n  "project_id": "p",\n  "client_email": "a@p.iam.gserviceaccount.com"\n}'
)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        (WANDB_V1, "a W&B API key"),
        (f"WANDB_KEY_FOR_RUNS={WANDB_V1}", "a W&B API key"),
        (WANDB_LOCAL, "a W&B API key"),
        ("host=db user=app password=" + "hunter2hunter2", "a password or key assignment"),
        ("https://example.com/hook?secret=" + "s3cr3tvalue&x=1", "a password or key assignment"),
        # a service account key file base64-encoded (as gcloud writes it, and compact), under a neutral name
        (base64.b64encode(SERVICE_ACCOUNT_KEY.encode()).decode(), "a GCP service account key"),
        (base64.b64encode(SERVICE_ACCOUNT_KEY.replace("\n", "\r\n").encode()).decode(), "a GCP service account key"),
        (
            "CREDS_B64=" + base64.b64encode(b'{"type":"service_' + b'account","project_id":"p"}').decode(),
            "a GCP service account key",
        ),
    ],
)
def test_a_secret_of_a_known_shape_is_found_under_any_name(text: str, kind: str) -> None:
    assert kind in secret_kinds(text)
    assert "***" in redact_secrets(text)


@pytest.mark.parametrize(
    "text",
    [
        "0c" * 20,  # a git commit id (weights.revision), or a legacy W&B key: only its variable's name tells
        "sha256:" + "ab" * 32,  # an image digest
        "vllm/vllm-openai@sha256:" + "cd" * 32,
        "local-model",
        "DSN=host=db password=$(DB_PASSWORD)",  # a reference the pod expands from a secretEnv variable
        "password=***",
        "engine.extraEnv.X_PASSWORD: holds a secret",  # a message naming a key keeps its name
        "secret:\n  secretName: hf-token",  # a manifest's secret volume
        "secret: {secretName: hf-token}",
        "MAX_TOKENS=8192",
        base64.b64encode(b'{"type": "authorized_user"}').decode(),  # base64 JSON of another kind
    ],
)
def test_look_alikes_are_not_secrets(text: str) -> None:
    assert secret_kinds(text) == []
    assert redact_secrets(text) == text


def test_the_stacks_own_placeholder_for_an_esc_secret_is_not_a_secret() -> None:
    assert secret_kinds("Placeholders stand in for `k` (`[unset secret:gke-b200-serving:wandbApiKey from ESC]`)") == []
