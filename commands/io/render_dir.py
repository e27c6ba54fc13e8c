"""Reading a render folder that a preview compares: bounded, shape-checked, tokens hidden.

A render is only read through its resources.json (at most RESOURCES_LIMIT bytes, JSON at most
MAX_JSON_DEPTH levels deep, every record shaped as `render` writes it: `commands.io.records`). Every
string in it, keys included, has anything shaped like a Hugging Face token replaced by hf_*** before
the preview sees it: a render never holds a token (`render` refuses to write one), so one that does
was edited by hand, and what a preview writes (changes.md, changes.json, which CI posts to the pull
request) must not carry it on.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from commands.io.records import validated_records
from common.input_files import MIB, InputError, read_json
from policies.redaction import REDACTED, hide_secrets, is_secret_name

RESOURCES_LIMIT = 64 * MIB


class PreviewInputError(InputError):
    """A directory is missing, is not a render, or holds malformed JSON (exit status 2)."""


def without_tokens(value: Any) -> Any:
    if isinstance(value, str):
        return hide_secrets(value)
    if isinstance(value, dict):
        # an environment variable named like a secret (DB_PASSWORD) holds one, whatever its value looks like
        if isinstance(value.get("name"), str) and isinstance(value.get("value"), str) and is_secret_name(value["name"]):
            value = {**value, "value": REDACTED}
        return {hide_secrets(key): without_tokens(item) for key, item in value.items()}
    if isinstance(value, list):
        return [without_tokens(item) for item in value]
    return value


def load_render(directory: Path) -> list[dict[str, Any]]:
    """The resource records of a render folder, checked and with tokens hidden."""
    if not directory.is_dir():
        raise PreviewInputError(f"{directory}: no such render directory")
    path = directory / "resources.json"
    if not path.exists():
        raise PreviewInputError(f"{directory}: not a render directory (no resources.json)")
    try:
        document = read_json(path, RESOURCES_LIMIT)
        return validated_records(without_tokens(document), str(path))
    except InputError as error:
        raise PreviewInputError(str(error)) from None
