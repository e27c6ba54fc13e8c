"""Reading a render folder that a preview compares: bounded, shape-checked, secrets hidden.

A render is only read through its resources.json (at most RESOURCES_LIMIT bytes, JSON at most
MAX_JSON_DEPTH levels deep, every record shaped as `render` writes it: `commands.io.records`) and the
side files `commands.io.states` reads. A render never holds a secret (`render` refuses to write one), so
one that does was edited by hand, and what a preview writes (changes.md, changes.json, which CI posts to
the pull request) must not carry it on. So before the preview sees a document, `without_secrets` hides:
* in every string, keys included, anything shaped like a secret (`policies.redaction.hide_secrets`);
* every value of a Kubernetes Secret's payload (`data`, `stringData`, `binaryData`), whatever its key;
* every value whose name says it is a secret (`password: ...`, `myApiKey: ...`, an environment entry
  `{name: DB_PASSWORD, value: ...}`), unless the name says it holds a reference and the value is a name
  (`secretName: hf-token`);
* a digest (`secretDigests`, `settingDigests`) that is not shaped like one.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

from commands.io.output import unfinished_write
from commands.io.records import RENDER_SECRET_MARK, SECRET_DIGESTS, TRIGGER_DIGESTS, validated_records
from common.input_files import MIB, InputError, read_json
from policies.redaction import REDACTED, hide_secrets, is_secret_name, name_words
from policies.vllm_command import flag_read_as, flag_takes_text

RESOURCES_LIMIT = 64 * MIB
# The files of a render a preview reads (commands/io/states.py): one of them half-written refuses the folder.
RENDER_DATA = ("resources.json", "states.json", "outputs.json", "capacity.json")
SECRET_TYPE = "kubernetes:core/v1:Secret"
SECRET_KIND = "Secret"
SECRET_PAYLOADS = frozenset({"data", "stringData", "binaryData"})
# A digest as a render writes it (commands/engine/secrets.py `digest_of`).
SECRET_DIGEST = re.compile(r"unset|esc|(?:ciphertext|value) sha256:[0-9a-f]{12}")
# The digests of the stack settings a render was made from (states.json, `commands.io.states.setting_digests`).
SETTING_DIGESTS_KEY = "settingDigests"
# The stack settings a render was made from, as the config model resolves them (`commands.io.states.written_settings`).
SETTINGS_KEY = "settings"
SETTING_DIGEST = re.compile(r"sha256:[0-9a-f]{16}")
# A name ending so holds a reference to a secret (secretName, secretKeyRef, tokenSecretName), not one ...
REFERENCE_SUFFIXES = ("_name", "_names", "_ref", "_refs")
# ... when its value is a Kubernetes object name (RFC 1123 subdomain).
SUBDOMAIN_NAME = re.compile(r"[a-z0-9](?:[-a-z0-9.]{0,251}[a-z0-9])?")


# Named like a secret, but a list of what is secret: a resource option's output names.
LISTS_OF_SECRET_NAMES = frozenset({"additionalSecretOutputs"})
# A render's documents repeat their texts (of 13,746 keys and values in a staging states.json, 1,320
# differ): each short one is hidden once. Longer texts are hidden each time, so the cache stays small.
CACHED_TEXT_LENGTH = 1024
_hidden_short_text = functools.lru_cache(maxsize=16384)(hide_secrets)


def _hidden_text(text: str) -> str:
    return _hidden_short_text(text) if len(text) <= CACHED_TEXT_LENGTH else hide_secrets(text)


class PreviewInputError(InputError):
    """A directory is missing, is not a render, or holds malformed JSON (exit status 2)."""


def holds_a_secret(name: str, value: Any) -> bool:
    """Whether a value of this name (a mapping key, an environment variable) is a secret: a string or a
    number under a name `is_secret_name` takes; under a name that refers to one (a secret name with a
    reference suffix: tokenSecretName, secretKeyRef), unless the value is a Kubernetes object name."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)) or value == RENDER_SECRET_MARK:
        return False
    holds = _name_holds_a_secret(name)
    if holds is None:
        return not (isinstance(value, str) and SUBDOMAIN_NAME.fullmatch(value))
    return holds


@functools.lru_cache(maxsize=4096)
def _name_holds_a_secret(name: str) -> bool | None:
    """Whether a value of this name is a secret; None: one unless it is a Kubernetes object name."""
    normal = name_words(name)
    stem = next((normal.removesuffix(suffix) for suffix in REFERENCE_SUFFIXES if normal.endswith(suffix)), None)
    if stem is None:
        return is_secret_name(name)
    return None if is_secret_name(stem) else False


FLAG = re.compile(r"(-{1,2})([A-Za-z0-9][\w.-]*)(?:([=\s])\s*(.*))?", re.DOTALL)
# A flag and its value inside a longer command line (`sh -c "vllm serve --api-key V"`); not a reference to where
# the key is ($KEY, ${KEY}, Kubernetes' $(KEY), ${KEY:?message}, $1, "$@", ${KEYS[0]}, a file read by $(cat PATH)
# or $(< PATH)) that ends the word, but a default (`${KEY:-V}` is V when KEY is unset), another command's output
# (`$(printf V)`), text glued to a reference, and `$` in single quotes, which the shell does not expand. The value
# may follow a line continuation (`\` and a line break), sit in quotes (`'...'`, `"..."`, `$'...'`, escaped
# `\"...\"`, after empty quotes) and be several (vLLM's --api-key takes one or more).
VARIABLE = (
    r"\$(?:[A-Za-z_]\w*|[0-9@*#?]|\{[A-Za-z_]\w*(?:\[[^\]]{0,64}\])?(?::?\?[^}]{0,256})?\}|\([A-Za-z_]\w*\)"
    r"|\((?:cat\s+|<\s*)[^\s)]{1,256}\))(?=[\"']?(?:[\s;&|\\]|$))"
)
FLAG_IN_A_LINE = re.compile(
    r"(?<!\S)(-{1,2})([A-Za-z0-9][\w.-]*)((?:[=\s]|\\\n)\s*(?:\\\n\s*)*(?:\$'|\\?'(?!-)|(?:\\?[\"'])*(?!-)(?!"
    + VARIABLE
    + r")))((?!\\\n)[^\s\"'](?:[^\s\"']|[\"'](?=[\"']?[^\s\"']))*(?:[\"']?[ \t]+(?![-$])[\"'$]?[^\s\"']+)*)"
)
# A secret flag whose first value is a reference, and the values after it that are none (vLLM's --api-key takes
# several).
VALUES_AFTER_A_REFERENCE = re.compile(
    r"(?<!\S)(-{1,2})([A-Za-z0-9][\w.-]*)((?:[=\s]|\\\n)\s*(?:\\\n\s*)*[\"']?"
    + VARIABLE
    + r"[\"']?(?:[ \t]|\\\n)\s*(?:\\\n\s*)*[\"']?)((?![-$])[^\s\"']+(?:[\"']?[ \t]+[\"']?(?![-$])[^\s\"']+)*)"
)


@functools.lru_cache(maxsize=4096)
def _secret_flag(name: str, long: bool = True) -> bool:
    """Whether a flag named so takes a secret: named like one, or a `--` abbreviation vLLM's parser expands to
    one (`--api-k` is `--api-key`; policies/vllm_command.py reads the pinned releases' options); not an option
    of vLLM's that takes no text (`--allow-credentials`, on or off)."""
    named = is_secret_name(name) or (long and is_secret_name(flag_read_as(name)))
    return named and flag_takes_text(name)


def _flag_values_hidden(items: list[Any]) -> list[Any]:
    """A command line (a container's args) with the value of every flag named like a secret hidden:
    `--api-key=V`, `--api-key V` in one item, `--api-key` and V in the next, or inside a shell line.
    The item after such a flag is hidden even when it starts with `-`: a secret may (`-x7Kq...`); a secret
    flag hidden so still has its own value hidden. So is every item after those up to the next flag: a flag
    may take several values (vLLM's --api-key takes one or more keys)."""
    hidden = [item if not isinstance(item, str) or item.startswith("-") else _line_flags_hidden(item) for item in items]
    for index, item in enumerate(items):  # the flags as written: one hidden as a value still hides its own
        match = FLAG.fullmatch(item) if isinstance(item, str) else None
        if match is None or not _secret_flag(match[2], match[1] == "--"):
            continue
        if match[3] is not None:
            hidden[index] = f"{match[1]}{match[2]}{match[3]}{REDACTED}"
            values = index + 1
        elif index + 1 < len(hidden):
            hidden[index + 1] = REDACTED
            values = index + 2
        else:
            continue
        end = _next_flag(items, values)
        hidden[values:end] = [REDACTED] * (end - values)
    return hidden


def _next_flag(items: list[Any], start: int) -> int:
    """Where the first item at or after `start` that is a flag (starts with `-`) is, or the list's end: the
    items before it are the values of the flag before `start`."""
    return next(
        (index for index in range(start, len(items)) if isinstance(items[index], str) and items[index].startswith("-")),
        len(items),
    )


def _line_flags_hidden(line: str) -> str:
    """A command line in one string with the value of every flag named like a secret hidden."""
    if "-" not in line:
        return line
    for pattern in (FLAG_IN_A_LINE, VALUES_AFTER_A_REFERENCE):
        line = pattern.sub(
            lambda match: (
                f"{match[1]}{match[2]}{match[3]}{REDACTED}" if _secret_flag(match[2], match[1] == "--") else match[0]
            ),
            line,
        )
    return line


def _ends_with_a_secret_flag(command: Any) -> bool:
    """Whether a container's `command` ends with a flag named like a secret and no value: its `args` go on."""
    last = command[-1] if isinstance(command, list) and command else None
    match = FLAG.fullmatch(last) if isinstance(last, str) else None
    return match is not None and match[3] is None and _secret_flag(match[2], match[1] == "--")


def _payload_hidden(value: Any) -> Any:
    """A Secret's payload with every leaf but the render's own mark hidden (its keys are not secret)."""
    if isinstance(value, dict):
        return {hide_secrets(str(key)): _payload_hidden(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_payload_hidden(item) for item in value]
    return value if value == RENDER_SECRET_MARK else REDACTED


def _digests_hidden(value: Any, shape: re.Pattern[str]) -> Any:
    """Digests shaped as a render writes them; anything else in their place hidden whole (a preview shows
    them), a nested object or list, a number or a string."""
    if not isinstance(value, dict):
        return without_secrets(value)
    return {
        hide_secrets(str(path)): digest if isinstance(digest, str) and shape.fullmatch(digest) else REDACTED
        for path, digest in value.items()
    }


DIGEST_SHAPES = {SECRET_DIGESTS: SECRET_DIGEST, TRIGGER_DIGESTS: SECRET_DIGEST, SETTING_DIGESTS_KEY: SETTING_DIGEST}


def without_secrets(value: Any, secret_object: bool = False) -> Any:
    """A document of a render folder with every secret hidden (the module's docstring says which);
    `secret_object`: `value` is a Kubernetes Secret's inputs."""
    if isinstance(value, str):
        return _hidden_short_string(value) if len(value) <= CACHED_TEXT_LENGTH else _string_hidden(value)
    if isinstance(value, list):
        return [without_secrets(item) for item in _flag_values_hidden(value)]
    if not isinstance(value, dict):
        return value
    # an environment variable, or a header's {key, value}
    name, held = value.get("name", value.get("key")), value.get("value")
    # an environment variable named like a secret (DB_PASSWORD), whatever its value's shape
    if isinstance(name, str) and (
        holds_a_secret(name, held) or (isinstance(held, (dict, list)) and _name_holds_a_secret(name) is True)
    ):
        value = {**value, "value": REDACTED}
    args = value.get("args")
    if _ends_with_a_secret_flag(value.get("command")) and isinstance(args, list) and args:
        # the runtime joins command and args: the first item and every one up to the next flag are its values
        values = _next_flag(args, 1)
        value = {**value, "args": [REDACTED] * values + args[values:]}
    secret_object = secret_object or value.get("kind") == SECRET_KIND
    # a Secret's record, or its patch's (kubernetes:core/v1:SecretPatch): the same payload fields
    secret_record = isinstance(value.get("type"), str) and value["type"].startswith(SECRET_TYPE)
    return {
        _hidden_text(key): _hidden_entry(key, item, secret_object, secret_record and key == "inputs")
        for key, item in value.items()
    }


def _string_hidden(text: str) -> str:
    return _json_text_hidden(_line_flags_hidden(hide_secrets(text)))


_hidden_short_string = functools.lru_cache(maxsize=16384)(_string_hidden)


def _json_text_hidden(text: str) -> str:
    """A text that holds a JSON object or array (a dashboard's JSON) with what `without_secrets` hides in it read
    as a document: a secret under a secret's name is a name only once the text is read as JSON. Written again only
    when something is hidden."""
    if text.lstrip()[:1] not in ("{", "["):
        return text
    try:
        document = json.loads(text)
        if not isinstance(document, (dict, list)):
            return text
        hidden = without_secrets(document)
    except ValueError:  # not JSON
        return text
    except RecursionError:  # nested past what the parser or the walk reads: what it holds is not known
        return REDACTED
    return text if hidden == document else json.dumps(hidden, ensure_ascii=False)


def _holds_secrets(key: str, item: Any) -> bool:
    """A list or an object under a name that says it holds secrets (`apiKeys: [...]`, `credentials: {...}`); not
    a list of what is secret (`additionalSecretOutputs`) nor a pod volume's reference to a Secret (`secret`,
    which names it in `secretName`)."""
    if isinstance(item, list):
        return key not in LISTS_OF_SECRET_NAMES and _name_holds_a_secret(key) is True
    if not isinstance(item, dict) or (key == "secret" and "secretName" in item):
        return False
    return _name_holds_a_secret(key) is True


def _hidden_entry(key: str, item: Any, in_a_secret: bool, secret_inputs: bool) -> Any:
    """The value `item` of `key` in a mapping (of a Kubernetes Secret when `in_a_secret`), hidden."""
    if in_a_secret and key in SECRET_PAYLOADS:
        return _payload_hidden(item)
    if key in DIGEST_SHAPES:
        return _digests_hidden(item, DIGEST_SHAPES[key])
    if holds_a_secret(key, item):
        return REDACTED
    if _holds_secrets(key, item):
        return _payload_hidden(item)
    return without_secrets(item, secret_object=secret_inputs)


def load_render(directory: Path) -> list[dict[str, Any]]:
    """The resource records of a render folder, checked and with secrets hidden."""
    if not directory.is_dir():
        what = "not a directory" if directory.exists() else "no such render directory"
        raise PreviewInputError(f"{directory}: {what}; allowed: a render folder (`render STACK --out DIR` writes one)")
    path = directory / "resources.json"
    if not path.exists():
        raise PreviewInputError(f"{directory}: not a render directory (no resources.json)")
    stopped = unfinished_write(directory, RENDER_DATA)
    if stopped is not None:
        raise PreviewInputError(stopped)
    try:
        document = read_json(path, RESOURCES_LIMIT)
        return validated_records(without_secrets(document), str(path))
    except InputError as error:
        raise PreviewInputError(str(error)) from None
