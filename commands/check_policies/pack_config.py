"""Policy config (`check-policies --config FILE`, as for `pulumi preview --policy-pack-config FILE`),
checked against the pack's own policies before any rule runs: one line naming what is wrong.

What the engine accepts (pulumi/pulumi pkg/resource/analyzer/config.go, parsePolicyPackConfig and
extractEnforcementLevel, and sdk/go/common/apitype/policy.go, EnforcementLevel.IsValid, read at
commit 18817b606ff1):
* empty content means no config; otherwise the file is a JSON object;
* each value is either an enforcement level string (the short form `{"POLICY": "mandatory"}`) or an
  object whose optional `enforcementLevel` is such a string and whose other keys are the policy's
  settings, validated against the policy's config schema (a JSON schema of type object: gojsonschema
  there, `jsonschema` here);
* the levels are advisory, mandatory, remediate and disabled; the key `all` sets the level of every
  policy.
Stricter than the engine, which ignores them silently: a key that names no policy of this pack, a
setting the policy does not declare, and settings under `all` are refused, with the closest name.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from jsonschema import Draft7Validator

from common.input_files import InputError
from policies.redaction import redact_quoted
from policies.settings import allowed_words
from policies.values import known_strings

ALL_POLICIES = "all"
LEVEL_KEY = "enforcementLevel"
LEVELS = ("advisory", "mandatory", "remediate", "disabled")


class PolicyConfigError(InputError):
    """The policy config does not fit the pack (exit status 2)."""


def _nearest(word: str, choices: Sequence[str]) -> str:
    near = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"; did you mean '{near[0]}'?" if near else ""


def _shown(value: Any, limit: int = 60) -> str:
    """The value as JSON, secrets hidden before it is cut (a cut token no longer has its shape)."""
    text = redact_quoted(json.dumps(value))
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _level(value: Any, where: str) -> str:
    if not isinstance(value, str) or value not in LEVELS:
        raise PolicyConfigError(
            f"{where}: {_shown(value)} is not an enforcement level; allowed: {', '.join(LEVELS)}"
            + (_nearest(value.lower(), LEVELS) if isinstance(value, str) else "")
        )
    return value


def _schema(policy: Any) -> dict[str, Any]:
    schema = policy.config_schema
    properties: dict[str, Any] = dict(schema.properties) if schema is not None else {}
    document: dict[str, Any] = {"type": "object", "properties": properties}
    if schema is not None and schema.required:
        document["required"] = list(schema.required)
    return document


def _settings(policy: Any, entry: Mapping[str, Any], where: str) -> None:
    schema = _schema(policy)
    declared = sorted(schema["properties"])
    for key in entry:
        if key != LEVEL_KEY and key not in declared:
            allowed = f"; its settings: {', '.join(declared)}" if declared else "; it has no settings"
            raise PolicyConfigError(
                f"{where}: {_shown(key)} is not a setting of {policy.name}{_nearest(key, declared) or allowed}"
            )
    settings = {key: value for key, value in entry.items() if key != LEVEL_KEY}
    for path, text in known_strings(settings):
        if not text.isprintable():
            # Python's `$` in a schema pattern matches before a last line break, Go's (the engine's) does not
            # (a platform review: "us-central1\n" passed here)
            declared = schema["properties"].get(path.split("[")[0].split(".")[0], {})
            allowed = f"; allowed: {allowed_words(declared)}" if "type" in declared else ""
            raise PolicyConfigError(f"{where}.{path}: {_shown(text)} holds a control character{allowed}")
    for error in sorted(Draft7Validator(schema).iter_errors(settings), key=lambda error: list(map(str, error.path))):
        key = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in error.path) or ".(settings)"
        declared = schema["properties"].get(str(error.path[0]) if error.path else "", {})
        # a pattern is no words to a reader: say the value is not allowed, and what is
        problem = f"{_shown(error.instance)} is not allowed" if error.validator == "pattern" else error.message
        allowed = f"; allowed: {allowed_words(declared)}" if "type" in declared else ""
        default = f" (default {_shown(declared['default'])})" if "default" in declared else ""
        raise PolicyConfigError(f"{where}{key}: {problem}{allowed}{default}")


def check_policy_config(config: Any, policies: Sequence[Any], where: str) -> dict[str, Any]:
    """The config, if it fits `policies`; PolicyConfigError for the first problem."""
    if config is None:
        return {}
    if not isinstance(config, dict):
        raise PolicyConfigError(f"{where}: policy config must be a JSON object of policy names")
    by_name = {policy.name: policy for policy in policies}
    for name, entry in config.items():
        label = f"{where}: {name}"
        if name != ALL_POLICIES and name not in by_name:
            example = next(iter(by_name), "")
            hint = _nearest(name, sorted(by_name)) or f"; allowed: {ALL_POLICIES} or a policy id like {example}"
            raise PolicyConfigError(f"{where}: {_shown(name)} is not a policy of this pack{hint}")
        if isinstance(entry, str):
            _level(entry, label)
            continue
        if not isinstance(entry, dict):
            raise PolicyConfigError(
                f"{label}: {_shown(entry)} is not a valid value; must be an enforcement level string or an object"
            )
        if LEVEL_KEY in entry:
            _level(entry[LEVEL_KEY], f"{label}.{LEVEL_KEY}")
        if name == ALL_POLICIES:
            extra = sorted(key for key in entry if key != LEVEL_KEY)
            if extra:
                raise PolicyConfigError(f"{label}: only {LEVEL_KEY} applies to all policies, not {_shown(extra[0])}")
            continue
        _settings(by_name[name], entry, label)
    return config
