"""Secrets in a render: redacted everywhere, with a short digest beside each so that a preview can say
that one changed without showing it.

A render redacts every secret input to `[secret]` (`render.plain`). Each record that has secret inputs
also carries `secretDigests`: input path -> digest. What is digested is what the offline run holds:

* a `secure:` value cannot be decrypted offline, so the program sees a placeholder that carries a
  digest of the ciphertext (`stack_settings.load_stack_settings`): its digest says "ciphertext". The
  ciphertext is public (it is in the stack file), so nothing secret is digested; but a value set again
  with `pulumi config set --secret` gets a new ciphertext even when it is the same value (the secrets
  providers encrypt with a random nonce), so a changed ciphertext means "may have changed";
* a value computed by the program (the kubeconfig built from the cluster's outputs) is digested as
  is, truncated to 48 bits. A truncated digest does not protect a short or guessable value (its few
  candidates can be tried one by one); the values digested here are long (a kubeconfig) or public.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from commands.engine import mocks
from commands.engine.property_paths import Segment, format_path
from commands.io.records import RENDER_SECRET_MARK
from commands.stackfile import stack_settings

DIGEST_HEX = 12
UNSET = "unset"
CIPHERTEXT = "ciphertext"
# a secret the stack file leaves to its ESC environment: what ESC makes of it is not read offline
FROM_ESC = "esc"


def digest_of(plaintext: Any) -> str:
    """`ciphertext <hex>` for an offline `secure:` placeholder, `esc` for a secret the stack file leaves to its
    ESC environment, `unset` for one it does not set at all, `value sha256:<hex>` for anything else."""
    text = plaintext if isinstance(plaintext, str) else json.dumps(plaintext, sort_keys=True)
    if text.startswith(stack_settings.UNSET_PLACEHOLDER):
        return FROM_ESC if text.endswith(stack_settings.FROM_ESC) else UNSET
    if text.startswith(stack_settings.SECURE_PLACEHOLDER):
        return f"{CIPHERTEXT} sha256:{text.rsplit(' ', 1)[-1].rstrip(']')}"
    return "value sha256:" + hashlib.sha256(b"llm-serving render secret\0" + text.encode()).hexdigest()[:DIGEST_HEX]


def secret_digests(inputs: Any, path: tuple[Segment, ...] = (), secret: bool = False) -> dict[str, str]:
    """Input path -> digest of every secret leaf in engine-shaped inputs (before redaction): the
    leaves a render writes as `[secret]` (a secret object keeps its keys, `render.redacted`)."""
    if isinstance(inputs, dict) and inputs.get(mocks.SECRET_SIG) == mocks.SECRET_MARK:
        return secret_digests(inputs.get("value"), path, secret=True)
    found: dict[str, str] = {}
    if isinstance(inputs, dict):
        for key, value in inputs.items():
            found |= secret_digests(value, (*path, key), secret)
    elif isinstance(inputs, (list, tuple)):
        for index, value in enumerate(inputs):
            found |= secret_digests(value, (*path, index), secret)
    elif secret:
        found[format_path(path)] = digest_of(inputs)
    return found


def secret_shown(digest: str | None) -> str:
    """How a redacted secret appears in a preview: its digest, never its value."""
    return f"[secret, {digest}]" if digest else RENDER_SECRET_MARK


def shown_kind(shown: object) -> str:
    """What `secret_shown` showed: `ciphertext`, `esc`, `unset` or `value` (`digest_of`); '' for anything else."""
    if not isinstance(shown, str) or not shown.startswith("[secret, "):
        return ""
    return shown.removeprefix("[secret, ").split(" ", 1)[0].removesuffix("]")
