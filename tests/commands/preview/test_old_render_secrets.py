"""Secrets edited by hand into a render folder a preview reads: hidden before the preview sees them.

A render never holds a secret (it refuses to write one), so a render folder that does was edited, and what
a preview writes (changes.md and changes.json, which CI posts to the pull request) must not carry it on:
a Kubernetes Secret's payload, whatever its keys, and any value whose name says it is a secret, in every
document the preview reads (resources.json, both states of states.json and their outputs, outputs.json,
capacity.json). A name that references a secret (`secretName: hf-token`) is not one.
"""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from commands.engine.secrets import digest_of
from commands.io.render_dir import SECRET_DIGEST, without_secrets
from commands.io.states import CONVERGED, FIRST_UP
from commands.preview.command import main as preview_main
from commands.stackfile.stack_settings import FROM_ESC, SECURE_PLACEHOLDER, UNSET_PLACEHOLDER
from policies.redaction import REDACTED
from tests.rendered import RenderedStack, run_main

CANARY = "PlainHunter2Canary"
SECRET_TYPE = "kubernetes:core/v1:Secret"
DEPLOYMENT_TYPE = "kubernetes:apps/v1:Deployment"
SIDE_FILES = ("resources.json", "states.json", "outputs.json", "capacity.json")


def _edited_records(records: list[dict[str, Any]]) -> None:
    """Secrets of no known shape where a render writes none: a Secret's payload and named values."""
    for record in records:
        inputs = record["inputs"]
        if record["type"] == SECRET_TYPE:
            inputs["data"] = {"db-password": base64.b64encode(f"b64{CANARY}".encode()).decode()}
            inputs["stringData"]["other"] = f"string-data-{CANARY}"
        if record["type"] == DEPLOYMENT_TYPE:
            inputs["metadata"]["annotations"] = {"password": f"annotation-{CANARY}", "dbPasswd": 12345678}
            inputs["metadata"]["labels"]["tokenSecretName"] = f"Label{CANARY}"


def hand_edited_copy(render: Path, directory: Path) -> Path:
    """A copy of `render` with secrets written into every document a preview reads."""
    shutil.copytree(render, directory)
    records = json.loads((directory / "resources.json").read_text())
    _edited_records(records)
    (directory / "resources.json").write_text(json.dumps(records))
    states = json.loads((directory / "states.json").read_text())
    for state in (FIRST_UP, CONVERGED):
        _edited_records(states[state])
        states["outputs"][state]["myApiKey"] = f"output-{CANARY}"
    (directory / "states.json").write_text(json.dumps(states))
    for name in ("outputs.json", "capacity.json"):
        document = json.loads((directory / name).read_text())
        document["db_secret"] = f"side-{CANARY}"
        (directory / name).write_text(json.dumps(document))
    return directory


def test_secrets_edited_into_an_old_render_reach_no_preview_file(dev: RenderedStack, tmp_path: Path) -> None:
    old = hand_edited_copy(dev.directory, tmp_path / "old")
    out = tmp_path / "out"
    outcome = run_main(preview_main, str(old), str(dev.directory), "--out", str(out))
    assert outcome.returncode == 0, outcome.stderr
    assert CANARY not in outcome.stdout + outcome.stderr
    changes = (out / "changes.md").read_text()
    assert CANARY not in changes + (out / "changes.json").read_text()
    assert "12345678" not in changes
    # the edits still show as changes, with their values hidden
    for path in ("data.db-password", "stringData.other", "metadata.annotations.password", "myApiKey"):
        assert f"`{path}`" in changes, path
    assert f"- {REDACTED}\n" in changes


def test_control_characters_edited_into_an_old_render_are_text_in_changes_md(
    dev: RenderedStack, tmp_path: Path
) -> None:
    """A name or value of OLD holding a line break, a terminal's escape sequence or a bidi override is written
    to changes.md escaped: it starts no heading and runs no escape where the file is shown."""
    old = tmp_path / "old"
    shutil.copytree(dev.directory, old)
    hostile = "\x1b]0;pwn\x07\n## injected\n\u202eb"
    states = json.loads((old / "states.json").read_text())
    for state in (FIRST_UP, CONVERGED):
        for record in states[state]:
            if record["type"] == DEPLOYMENT_TYPE:
                record["inputs"]["metadata"]["labels"]["edited"] = hostile
    (old / "states.json").write_text(json.dumps(states))
    out = tmp_path / "out"
    outcome = run_main(preview_main, str(old), str(dev.directory), "--out", str(out))
    assert outcome.returncode == 0, outcome.stderr
    changes = (out / "changes.md").read_text()
    assert "`metadata.labels.edited`" in changes, "the edit shows as a change"
    assert not any(char in changes for char in "\x1b\x07\u202e")
    assert "\n## injected" not in changes
    assert "\\x1b]0;pwn\\x07" in changes and "\\u202eb" in changes


def test_a_shipped_render_reads_as_written(stack: RenderedStack) -> None:
    """A render holds no secret, so nothing in it is hidden: previews of the shipped stacks do not change."""
    for name in SIDE_FILES:
        document = json.loads((stack.directory / name).read_text())
        assert without_secrets(document) == document, name


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        # a Secret's payload, whatever its keys (a record's inputs, or any object of kind Secret)
        (
            {"type": SECRET_TYPE, "inputs": {"data": {"a": "eA==", "b": "[secret]"}, "binaryData": {"c": "eQ=="}}},
            {"type": SECRET_TYPE, "inputs": {"data": {"a": REDACTED, "b": "[secret]"}, "binaryData": {"c": REDACTED}}},
        ),
        ({"kind": "Secret", "stringData": {"x": ["y", 1]}}, {"kind": "Secret", "stringData": {"x": [REDACTED] * 2}}),
        ({"kind": "ConfigMap", "data": {"x": "y"}}, {"kind": "ConfigMap", "data": {"x": "y"}}),
        # a value whose name says it is a secret, camelCase or not, a string or a number
        (
            {"password": "x", "myApiKey": "y", "db_secret": "z", "pin": 1, "DB_PASSWORD": 42.5},
            {"password": REDACTED, "myApiKey": REDACTED, "db_secret": REDACTED, "pin": 1, "DB_PASSWORD": REDACTED},
        ),
        ({"env": [{"name": "DB_PASSWORD", "value": "x"}]}, {"env": [{"name": "DB_PASSWORD", "value": REDACTED}]}),
        # not a secret: the render's own mark, a flag, a list of names, a reference holding a name
        (
            {"token": "[secret]", "automountServiceAccountToken": False, "additionalSecretOutputs": ["data"]},
            {"token": "[secret]", "automountServiceAccountToken": False, "additionalSecretOutputs": ["data"]},
        ),
        (
            {"secretName": "hf-token", "tokenSecretName": "a.b", "secretKeyRef": {"name": "env", "key": "API_KEY"}},
            {"secretName": "hf-token", "tokenSecretName": "a.b", "secretKeyRef": {"name": "env", "key": "API_KEY"}},
        ),
        # a command line: the value of a flag named like a secret, in the next item, after `=` or a space
        (
            {"args": ["--port", "8", "--api-key", "v1", "--hf-token=v2", "--db-password v3", "--tokenizer", "t"]},
            {
                "args": [
                    "--port",
                    "8",
                    "--api-key",
                    REDACTED,
                    f"--hf-token={REDACTED}",
                    f"--db-password {REDACTED}",
                    "--tokenizer",
                    "t",
                ]
            },
        ),
        # ... even a value that starts with `-` (vLLM would refuse the line; the preview shows it all the same)
        ({"args": ["--api-key", "-x7Kq9Zw2", "--port", "8"]}, {"args": ["--api-key", REDACTED, "--port", "8"]}),
        # ... and a secret flag hidden so still has its own value hidden
        ({"args": ["--api-key", "--db-password", "pw7Kq9Zw2"]}, {"args": ["--api-key", REDACTED, REDACTED]}),
        # an annotation's key with a domain prefix, named like a secret
        (
            {"annotations": {"db.example.com/password": "Zq7pW3xKv9", "example.com/api-key": "Yp6oV2wJu8", "a/b": "c"}},
            {"annotations": {"db.example.com/password": "***", "example.com/api-key": "***", "a/b": "c"}},
        ),
        # a JSON text (a dashboard's): a letter-only secret under a secret's name is hidden as in a document
        (
            {"dashboardJson": '{"title": "t", "dbPassword": "correcthorsebatterystaple"}'},
            {"dashboardJson": '{"title": "t", "dbPassword": "***"}'},
        ),
        ({"dashboardJson": '{"title": "t",  "n": 1}'},) * 2,
        # the stack output that holds gcloud's get-credentials command
        ({"getCredentials": "gcloud container clusters get-credentials llm"},) * 2,
        # ... but a reference that is not a name is hidden
        ({"secretName": "Hunter2!", "tokenSecretName": 7}, {"secretName": REDACTED, "tokenSecretName": REDACTED}),
        # digests are shown, so one not shaped like a digest is hidden
        (
            {"secretDigests": {"stringData.token": "unset", "data.API_KEY": "value sha256:0123456789ab", "x": "a"}},
            {"secretDigests": {"stringData.token": "unset", "data.API_KEY": "value sha256:0123456789ab", "x": "***"}},
        ),
        # ... and so is an object, a list or a number in a digest's place, at any depth
        (
            {"metadata": {"secretDigests": {"a": {"password": "Zq7pW3xKv9Lm2Rt8"}, "b": ["Zq7pW3xKv9"], "c": 12345}}},
            {"metadata": {"secretDigests": {"a": "***", "b": "***", "c": "***"}}},
        ),
        ({"settingDigests": {"a": {"apiKey": "Zq7pW3xKv9Lm2Rt8"}}}, {"settingDigests": {"a": "***"}}),
        # a secret flag's value inside a shell line, or in `args` after a `command` that ends with the flag
        (
            {"args": ["vllm serve --api-key Zq7pW3xKv9 --port 8000", "echo --api-key $KEY"]},
            {"args": ["vllm serve --api-key *** --port 8000", "echo --api-key $KEY"]},
        ),
        (
            {"command": ["vllm", "serve", "--api-key"], "args": ["Zq7pW3xKv9", "--port", "8000"]},
            {"command": ["vllm", "serve", "--api-key"], "args": ["***", "--port", "8000"]},
        ),
        # ... a value written into a `$` form: a default, a command's output, after empty or escaped quotes; a plain
        # variable, ${VARIABLE} or Kubernetes' $(VARIABLE) shows
        (
            {
                "args": [
                    "sh -c 'vllm serve m --api-key \"${UNSET:-Zq7pW3xKv9}\"'",
                    "x --api-key $(printf Zq7pW3xKv9) --port 8",
                    'x --api-key=""Zq7pW3xKv9',
                    'x --api-key \\"Zq7pW3xKv9\\"',
                    "x --api-key ${KEY} --other $(KEY)",
                    'x --api-key "$KEY"Zq7pW3xKv9 --api-key $(cat /etc/key); x --api-key "${KEY:?set it}" $1',
                    'x --api-key $KEY "Zq7pW3xKv9" Yp6oV2wJu8 --api-key $KEY,Zq7pW3xKv9',
                ]
            },
            {
                "args": [
                    "sh -c 'vllm serve m --api-key \"***\"'",
                    "x --api-key *** --port 8",
                    'x --api-key=""***',
                    'x --api-key \\"***"',
                    "x --api-key ${KEY} --other $(KEY)",
                    'x --api-key "*** --api-key $(cat /etc/key); x --api-key "${KEY:?set it}" $1',
                    'x --api-key $KEY "*** --api-key ***',
                ]
            },
        ),
        # a JSON text nested past what can be read: what it holds is not known
        ({"note": "[" * 600 + '{"name": "DB_PASSWORD", "value": "Zq7pW3xKv9"}' + "]" * 600}, {"note": "***"}),
        # a flag that takes several values (vLLM's --api-key takes one or more keys): every one up to the next flag
        (
            {"args": ["--api-key", "Zq7pW3xKv9", "Yp6oV2wJu8", "--port", "8", "--api-key=Xo5nU1vIt7", "Wn4mT0uHs6"]},
            {"args": ["--api-key", "***", "***", "--port", "8", "--api-key=***", "***"]},
        ),
        (
            {"args": ["vllm serve --api-key Zq7pW3xKv9 Yp6oV2wJu8 --port 8000"]},
            {"args": ["vllm serve --api-key *** --port 8000"]},
        ),
        # ... after a flag that takes no value, and quoted
        (
            {"args": ["vllm serve m --enable-prefix-caching --api-key Zq7pW3xKv9", 'serve --api-key "Zq7pW3xKv9" -x']},
            {"args": ["vllm serve m --enable-prefix-caching --api-key ***", 'serve --api-key "***" -x']},
        ),
        (
            {"command": ["vllm", "serve", "--api-key"], "args": ["Zq7pW3xKv9", "Yp6oV2wJu8", "--port", "8000"]},
            {"command": ["vllm", "serve", "--api-key"], "args": ["***", "***", "--port", "8000"]},
        ),
        # the payload of a Secret's patch, as of a Secret
        (
            {"type": "kubernetes:core/v1:SecretPatch", "inputs": {"stringData": {"hf": "Zq7pW3xKv9Lm2Rt8"}}},
            {"type": "kubernetes:core/v1:SecretPatch", "inputs": {"stringData": {"hf": "***"}}},
        ),
        # an environment variable named like a secret, whatever its value's shape
        (
            {"env": [{"name": "DB_PASSWORD", "value": {"v": "Zq7pW3xKv9Lm2Rt8"}}, {"name": "API_KEY", "value": ["x"]}]},
            {"env": [{"name": "DB_PASSWORD", "value": "***"}, {"name": "API_KEY", "value": "***"}]},
        ),
        # an abbreviation vLLM's parser expands to a secret flag (`--api-k` is `--api-key`), as an item or in a line
        (
            {
                "args": ["--api-k", "Zq7pW3xKv9", "--api-ke=Yp6oV2wJu8"],
                "command": ["sh -c 'vllm  serve --api-k X0o5nU1'"],
            },
            {"args": ["--api-k", "***", "--api-ke=***"], "command": ["sh -c 'vllm  serve --api-k ***'"]},
        ),
        # a flag in any text, not only a command's list: an output, an annotation; `$` in single quotes is literal
        (
            {"scaleByHand": "vllm serve --api-key Zq7pW3xKv9", "note": "x --api-key '$Zq7pW3xKv9'"},
            {"scaleByHand": "vllm serve --api-key ***", "note": "x --api-key '***'"},
        ),
        # a list or an object under a name that says it holds secrets
        (
            {"apiKeys": ["Zq7pW3xKv9"], "credentials": {"v": "Yp6oV2wJu8"}, "password": {"a": ["Xo5nU1vIt7"]}},
            {"apiKeys": ["***"], "credentials": {"v": "***"}, "password": {"a": ["***"]}},
        ),
        # ... also beside a name, unless it is a pod volume's reference to a Secret
        (
            {"credentials": {"name": "ops", "value": "Zq7pW3xKv9"}, "secret": {"secretName": "hf", "defaultMode": 288}},
            {"credentials": {"name": "***", "value": "***"}, "secret": {"secretName": "hf", "defaultMode": 288}},
        ),
        # a header's {key, value}; a flag at the start of a text; after a line continuation, a second quoted
        # value, ANSI-C quoting
        (
            {"headers": [{"key": "X-API-KEY", "value": "Zq7pW3xKv9"}]},
            {"headers": [{"key": "X-API-KEY", "value": "***"}]},
        ),
        (
            {"value": "--api-key Zq7pW3xKv9", "a": "m \\\n --api-key \\\n Zq7pW3xKv9", "b": "--api-key $'Zq7pW3xKv9'"},
            {"value": "--api-key ***", "a": "m \\\n --api-key \\\n ***", "b": "--api-key ***"},
        ),
        ({"args": ['vllm serve m --api-key k1 "Zq7pW3xKv9"']}, {"args": ['vllm serve m --api-key ***"']}),
        # an option of vLLM's that takes no value is no secret flag: the next one is shown
        ({"args": ["--allow-credentials", "--enable-log-requests"]},) * 2,
    ],
)
def test_what_is_hidden(document: dict[str, Any], expected: dict[str, Any]) -> None:
    assert without_secrets(document) == expected


@pytest.mark.parametrize(
    "plaintext",
    [
        f"{UNSET_PLACEHOLDER}p:hfToken]",
        f"{UNSET_PLACEHOLDER}p:hfToken{FROM_ESC}",
        f"{SECURE_PLACEHOLDER}p:k ciphertext 0123456789ab]",
        "x",
        {"a": 1},
    ],
)
def test_every_digest_a_render_writes_is_kept(plaintext: Any) -> None:
    assert SECRET_DIGEST.fullmatch(digest_of(plaintext))
