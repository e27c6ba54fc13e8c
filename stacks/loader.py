"""Read the stack's Pulumi config into the typed model, or fail with one clear line."""

from __future__ import annotations

import json
from typing import Any, get_args

import pulumi
import pulumi.runtime.config as runtime_config
from pydantic import ValidationError

from stacks.config import StackConfig
from stacks.planner import SizingError, resolve
from stacks.presets import apply_preset

HF_TOKEN_KEY = "hfToken"


class InvalidConfig(pulumi.RunError):
    """Raised before any resource is declared; under `pulumi up` the message is the whole error."""


def _parse(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def raw_project_config(project: str) -> dict[str, Any]:
    """All `<project>:<key>` settings of the running stack, objects decoded, the secret left out."""
    prefix = f"{project}:"
    settings = {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
    return {
        key[len(prefix) :]: _parse(value)
        for key, value in sorted(settings.items())
        if key.startswith(prefix) and key[len(prefix) :] != HF_TOKEN_KEY
    }


def _location(loc: tuple[int | str, ...]) -> str:
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path


def describe(error: ValidationError, allowed_keys: dict[str, list[str]]) -> str:
    """One line for the first problem: the key, what is wrong, what is allowed."""
    problems = error.errors(include_url=False)
    first = problems[0]
    loc = tuple(part for part in first["loc"] if part not in ("spot", "flexStart", "reservation"))
    key = _location(loc)
    if first["type"] == "extra_forbidden":
        parent = _location(loc[:-1])
        allowed = ", ".join(allowed_keys.get(parent, []))
        message = f"{key}: unknown key; allowed keys here: {allowed}"
    elif first["type"] == "union_tag_invalid":
        context = first.get("ctx", {})
        message = (
            f"{key}.type: '{context.get('tag')}' is not a capacity source; allowed: "
            f"{context.get('expected_tags')} (A4 has no on-demand capacity)"
        )
    elif first["type"] == "missing":
        message = f"{key}: required key is missing"
    elif first["type"] == "value_error" and not key:
        message = first["msg"].removeprefix("Value error, ")
    else:
        detail = first["msg"].removeprefix("Value error, ")
        got = first.get("input")
        shown = "" if isinstance(got, (dict, list)) or got is None else f" (got {got!r})"
        message = f"{key}: {detail}{shown}"
    more = len(problems) - 1
    suffix = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
    return f"invalid stack config: {message}{suffix}"


def _allowed_keys(model: type[Any], path: str = "") -> dict[str, list[str]]:
    from pydantic import BaseModel

    keys: dict[str, list[str]] = {path: []}
    for name, field in model.model_fields.items():
        alias = field.alias or name
        keys[path].append(alias)
        # an optional group (`target: TargetConfig | None`) lists its keys like a required one
        for annotation in (field.annotation, *get_args(field.annotation)):
            if isinstance(annotation, type) and issubclass(annotation, BaseModel):
                keys.update(_allowed_keys(annotation, f"{path}.{alias}" if path else alias))
    keys[path].sort()
    return keys


def validate(raw: dict[str, Any]) -> StackConfig:
    """The typed config with a `target` already resolved to `capacity.nodes` by the planner."""
    try:
        config = StackConfig.model_validate(apply_preset(raw))
    except ValidationError as error:
        raise InvalidConfig(describe(error, _allowed_keys(StackConfig))) from None
    try:
        return resolve(config)
    except SizingError as error:
        raise InvalidConfig(f"invalid stack config: {error}") from None


def load() -> tuple[StackConfig, pulumi.Output[str]]:
    """The validated stack config and the Hugging Face token (a secret Output)."""
    config = validate(raw_project_config(pulumi.get_project()))
    hf_token = pulumi.Config().require_secret(HF_TOKEN_KEY)
    return config, hf_token
