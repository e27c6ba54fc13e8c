"""Read the stack's Pulumi config into the typed model, or fail with one clear line."""

from __future__ import annotations

import difflib
import functools
import json
import math
import re
from typing import Any, Literal, get_args, get_origin

import pulumi
import pulumi.runtime.config as runtime_config
from pydantic import BaseModel, ValidationError
from pydantic.alias_generators import to_camel

from common.input_files import depth_of
from common.model_ranges import allowed_range, may_be_null
from common.text import MESSAGE_MAX, escaped, kind_of_value
from components.capacity import CAPACITY_KINDS
from policies.redaction import MESSAGE_SECRETS, folded_secret_forms, hide_in_messages, redact_secrets
from stacks.capacity import measurements
from stacks.capacity.planner import SizingError, resolve
from stacks.config.cluster import EXISTING_CLUSTER_KEYS
from stacks.config.pattern_words import allowed_by
from stacks.config.presets import apply_preset
from stacks.config.profiles import apply_profile, foreign_checkpoint_problem
from stacks.config.quoting import quote
from stacks.config.stack import StackConfig
from stacks.load.checks import derived_problem
from stacks.load.plaintext_secrets import HF_TOKEN_KEY, plaintext_secret_problem

# Stack keys a provider setting stands in for when the stack leaves them out: any Pulumi team's
# stack file sets `gcp:project`; the stack's own gcp provider is explicit, so the key is read here.
PROVIDER_DEFAULTS = {"project": "gcp:project", "region": "gcp:region"}
MISSING_KEY_HINTS = {
    "project": "; set `project` or `gcp:project` (pulumi config set gcp:project PROJECT_ID), in the stack file "
    "or in an ESC environment it imports",
}
ALLOWED_KEYS_SHOWN = 200
PLAIN_KEY_PATH = re.compile(r"[A-Za-z0-9_.\[\]-]{1,80}")
# The deepest setting of the model is 4 levels (capacity.sources[].type); anything far deeper is a mistake.
MAX_CONFIG_DEPTH = 16
CAPACITY_TAGS = tuple(CAPACITY_KINDS)  # the tags of the capacity-source union
# A number or boolean as YAML writes one (a top-level setting the CLI turned into a string).
YAML_SCALAR = re.compile(r"[-+]?(?:\d[\d_]{0,30}(?:\.\d{0,30})?|\.\d{1,30})(?:[eE][-+]?\d{1,4})?|true|false|null")
UNION_MEMBER = re.compile(
    r"(constrained|function|json|lax|nullable|tagged)-.*|(literal|list|dict|tuple)\[.*\]|int|str|float|bool|none"
)


class InvalidConfig(pulumi.RunError):
    """Raised before any resource is declared; under `pulumi up` the message is the whole error.

    The message is always one short line: whitespace runs (newlines included) collapse to one space,
    other control characters are escaped, anything shaped like a token (a key path may hold one) is
    hidden, and it is cut at MESSAGE_MAX characters."""

    def __init__(self, message: str) -> None:
        one_line = " ".join(redact_secrets(hide_in_messages(message)).split())
        line = escaped(one_line)
        super().__init__(line if len(line) <= MESSAGE_MAX else line[: MESSAGE_MAX - 3] + "...")


def _parse(key: str, value: Any) -> Any:
    """A setting as the program reads it: objects and lists arrive JSON-encoded (a string that only
    looks like JSON stays a string), at most MAX_CONFIG_DEPTH levels deep."""
    parsed = value
    if isinstance(value, str) and value[:1] in "[{":
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            return value
        except RecursionError:
            parsed = None
            depth = MAX_CONFIG_DEPTH + 1
        else:
            depth = depth_of(parsed, MAX_CONFIG_DEPTH)
        if depth > MAX_CONFIG_DEPTH:
            raise InvalidConfig(
                f"invalid stack config: {quote(key, 80)}: nested deeper than {MAX_CONFIG_DEPTH} levels; "
                "a stack setting is a few levels deep"
            )
    return parsed


def secret_env_keys(settings: dict[str, Any], prefix: str) -> set[str]:
    """The config keys `engine.secretEnv` names (secrets, not settings of the model). The token and the
    stack's own settings are refused: `VLLM_API_KEY: hfToken` put the Hugging Face token, which only the
    download Job gets, in every serving pod and in every client's hands; `VLLM_API_KEY: project` took
    the project out of the settings ("project: required key is missing")."""
    engine = settings.get(f"{prefix}engine")
    engine = _parse("engine", engine) if isinstance(engine, str) else engine
    secret_env = engine.get("secretEnv") if isinstance(engine, dict) else None
    if not isinstance(secret_env, dict):
        return set()
    settings_of_the_model = {field.alias or name for name, field in StackConfig.model_fields.items()}
    for name, value in secret_env.items():
        variable = name if isinstance(name, str) and PLAIN_KEY_PATH.fullmatch(name) else quote(name, 80)
        if not isinstance(value, str):
            # `pulumi config set --secret --path engine.secretEnv.X VALUE` writes the secret itself here
            raise InvalidConfig(
                f"invalid stack config: engine.secretEnv.{variable}: is {kind_of_value(value)}, not the name of a "
                "secret config key; store the value with `pulumi config set --secret KEY VALUE` (no --path) and set "
                f"engine.secretEnv.{variable}: KEY"
            )
        if value == HF_TOKEN_KEY:
            raise InvalidConfig(
                f"invalid stack config: engine.secretEnv.{variable}: hfToken is the Hugging Face token, which "
                "only the download Job gets (the engine loads the weights from disk); give the variable a secret "
                "config key of its own (`pulumi config set --secret KEY VALUE`)"
            )
        if value in settings_of_the_model:
            raise InvalidConfig(
                f"invalid stack config: engine.secretEnv.{variable}: {quote(value, 40)} is a setting of the "
                "stack, not a secret config key; name a key of its own (`pulumi config set --secret KEY VALUE`)"
            )
    return {value for value in secret_env.values() if isinstance(value, str)}


def _stack_config() -> dict[str, str]:
    """Every config key of the running stack, as the SDK has them (its environment's and then the set ones)."""
    return {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}


def raw_project_config(project: str) -> dict[str, Any]:
    """All `<project>:<key>` settings of the running stack, objects decoded, the secrets left out (the token and the
    keys engine.secretEnv names); `project` and `region` from `gcp:project` and `gcp:region` when the stack does not
    set them. Any other secret key is refused: the program reads settings as plain text, so a secret setting
    (`pulumi config set --secret engine ...`, an ESC `fn::secret` value) would reach the pod spec and the state
    decrypted."""
    prefix = f"{project}:"
    settings = _stack_config()
    secrets = {HF_TOKEN_KEY, *secret_env_keys(settings, prefix)}
    for key in sorted(settings):
        if key.startswith(prefix) and key[len(prefix) :] not in secrets and runtime_config.is_config_secret(key):
            raise InvalidConfig(secret_setting_problem(key[len(prefix) :]))
    raw = {
        key[len(prefix) :]: _parse(key[len(prefix) :], value)
        for key, value in sorted(settings.items())
        if key.startswith(prefix) and key[len(prefix) :] not in secrets
    }
    for key, provider_key in PROVIDER_DEFAULTS.items():
        provider_value = settings.get(provider_key)
        if provider_value is None:
            continue
        if key not in raw:
            raw[key] = provider_value
        elif raw[key] != provider_value:
            raise InvalidConfig(
                f"invalid stack config: {key} {quote(raw[key])} and {provider_key} {quote(provider_value)} differ; "
                f"the stack puts every resource in {key} (its gcp provider is explicit): remove {provider_key} "
                "or give both the same value"
            )
    return raw


def secret_setting_problem(name: str) -> str:
    """The refusal of a setting given a secret (the program reads settings as plain text)."""
    return (
        f"invalid stack config: {quote(name, 80)}: is a secret (pulumi config set --secret, or an ESC "
        "secret), but the stack reads its settings as plain text and would write it decrypted to the pod "
        "spec and the state; keep the secret in a key of its own and name it in engine.secretEnv"
    )


def unknown_setting_problem(name: str) -> str | None:
    """The loader's refusal of a stack key that is no setting (None when it is one)."""
    settings = _allowed_keys(StackConfig)[""]
    return None if name in settings else f"invalid stack config: {_unknown_key_message(name, name, settings)}"


def _unknown_key_message(key: str, name: str, candidates: list[str]) -> str:
    near = difflib.get_close_matches(to_camel(name), candidates, n=1, cutoff=0.6)
    if near:
        return f"{key}: unknown key; did you mean '{near[0]}'?"
    allowed = ", ".join(candidates)
    shown = allowed if len(allowed) <= ALLOWED_KEYS_SHOWN else allowed[:ALLOWED_KEYS_SHOWN] + "..."
    return f"{key}: unknown key; allowed keys here: {shown}"


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
    loc = tuple(part for part in first["loc"] if part not in CAPACITY_TAGS and not _union_member(part))
    key = _shown_key(loc)
    if first["type"] == "extra_forbidden":
        candidates = allowed_keys.get(_schema_path(first["loc"][:-1]), [])
        message = _unknown_key_message(key, str(loc[-1]), candidates)
    elif first["type"] in ("union_tag_invalid", "union_tag_not_found"):
        given = first.get("input")
        tag = given.get("type") if isinstance(given, dict) else None
        wrong = "required key is missing" if tag is None else f"{quote(tag)} is not a capacity source"
        message = (
            f"{key}.type: {wrong}; allowed: {', '.join(repr(tag) for tag in CAPACITY_TAGS)} "
            "(A4 has no on-demand capacity)"
        )
    elif first["type"] == "missing":
        message = f"{key}: required key is missing{MISSING_KEY_HINTS.get(key, '')}"
    elif first["type"] == "value_error" and not key:
        message = first["msg"].removeprefix("Value error, ")
    elif first["type"] == "string_pattern_mismatch":
        message = _pattern_message(loc, first)
    else:
        detail = first["msg"].removeprefix("Value error, ")
        got = first.get("input")
        quoted_already = first["type"] == "value_error"
        shown = (
            ""
            if isinstance(got, (dict, list)) or got is None or quoted_already or tuple(loc[:2]) == SECRET_ENV
            else f" (got {_shown_input(first['loc'], got)})"
        )
        message = f"{key}: {detail}{shown}{_allowed_for(first, loc, allowed_keys)}"
    more = len(problems) - 1
    suffix = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
    return f"invalid stack config: {message}{suffix}"


# engine.secretEnv's values name config keys; one pasted with the secret in its place would be the secret.
SECRET_ENV = ("engine", "secretEnv")
NOT_SHOWN = "not shown: a secret pasted in place of a key's name would be"

# A text setting given another YAML type: a bare 5, true or null (or an empty value) is no text.
TEXT_ALLOWED = "; allowed: a text (in YAML, put a value that reads as a number, true/false or null in quotes)"
BOOLEAN_ALLOWED = "; allowed: true or false"
MAPPING_TYPES = ("model_type", "model_attributes_type", "dict_type")


def _allowed_for(problem: Any, loc: tuple[int | str, ...], allowed_keys: dict[str, list[str]]) -> str:
    """What a value of another type or out of range may be, in words (empty where the model says nothing)."""
    if problem["type"] == "string_type":
        return TEXT_ALLOWED
    if problem["type"] == "bool_type":
        return BOOLEAN_ALLOWED
    if problem["type"] in MAPPING_TYPES:
        return _mapping_allowed(allowed_keys.get(_schema_path(problem["loc"])), may_be_null(StackConfig, loc))
    return allowed_range(StackConfig, loc)


def _mapping_allowed(keys: list[str] | None, nullable: bool) -> str:
    """What a group of settings (or a mapping) given another YAML type allows: its keys, when it has fixed ones, and
    null where the group may be null (`engine.speculative: null` turns it off)."""
    mapping = f"a mapping of {', '.join(keys)}" if keys else "a mapping (key: value lines)"
    return f"; allowed: {mapping}{' or null' if nullable else ''}"


def _pattern_message(loc: tuple[int | str, ...], problem: Any) -> str:
    """A value or a mapping's name that does not have its key's form: what is allowed in words, never the
    pattern itself."""
    allowed = allowed_by(str(problem.get("ctx", {}).get("pattern", "")))
    got = _shown_input(tuple(problem["loc"]), problem.get("input"))
    if loc and loc[-1] == "[key]":
        return f"{_shown_key(loc[:-2])}: the name {got} is not allowed; allowed: {allowed}"
    if tuple(loc[:2]) == SECRET_ENV:
        got = f"the config key it names ({NOT_SHOWN})"
    return f"{_shown_key(loc)}: {got} is not allowed; allowed: {allowed}"


def _shown_input(loc: tuple[int | str, ...], value: Any) -> str:
    """A bad value as the stack file spells it. The CLI hands a top-level setting to the program as a
    string (`region: 4096.5` arrives as '4096.5'), so there a number or boolean is shown unquoted; inside an
    object YAML's types are kept, and a quoted '5' is shown as the string it is."""
    if len(loc) == 1 and isinstance(value, str) and YAML_SCALAR.fullmatch(value):
        return value
    return quote(value)


def _shown_key(loc: tuple[int | str, ...]) -> str:
    key = _location(loc)
    return key if not key or PLAIN_KEY_PATH.fullmatch(key) else quote(key, 80)


def _union_member(part: int | str) -> bool:
    """A part of an error's location that names the member of a union pydantic tried (`constrained-int`,
    `literal['workload']`), not a key of the stack file."""
    return isinstance(part, str) and UNION_MEMBER.fullmatch(part) is not None


def _schema_path(loc: tuple[int | str, ...]) -> str:
    """A config path as `_allowed_keys` names it: list items as `[]`, a capacity source as `<type>`."""
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += "[]"
        elif part in CAPACITY_TAGS:
            path += f"<{part}>"
        else:
            path += f".{part}" if path else str(part)
    return path


def _models_in(annotation: Any, listed: bool = False) -> list[tuple[type[BaseModel], bool]]:
    """The config models an annotation holds (through Optional, unions and Annotated), and whether each
    is an item of a list."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [(annotation, listed)]
    in_list = listed or get_origin(annotation) in (list, tuple)
    return [found for argument in get_args(annotation) for found in _models_in(argument, in_list)]


@functools.cache  # the models are fixed; the answer is only read
def _allowed_keys(model: type[BaseModel], path: str = "") -> dict[str, list[str]]:
    """Every object's keys by its `_schema_path`: an optional group (`target`) like a required one, a
    list's items under `[]`, each capacity source type under `<type>`."""
    keys: dict[str, list[str]] = {path: []}
    for name, field in model.model_fields.items():
        alias = field.alias or name
        keys[path].append(alias)
        for member, listed in _models_in(field.annotation):
            member_path = (f"{path}.{alias}" if path else alias) + ("[]" if listed else "")
            tag = member.model_fields.get("type")
            tags = get_args(tag.annotation) if tag is not None and get_origin(tag.annotation) is Literal else ()
            keys.update(_allowed_keys(member, member_path + "".join(f"<{value}>" for value in tags)))
    keys[path].sort()
    return keys


def _non_finite_loc(value: Any, loc: tuple[int | str, ...] = ()) -> tuple[int | str, ...] | None:
    """Where the first infinity or NaN of a document is (an empty location: the document itself)."""
    if isinstance(value, float) and not math.isfinite(value):
        return loc
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found = _non_finite_loc(item, (*loc, key))
        if found is not None:
            return found
    return None


def _existing_cluster_problem(raw: dict[str, Any]) -> str | None:
    """With `cluster.existing`, a key of the stack file that only shapes a cluster this stack would
    create (release channel, network, protection...) has no effect: refused, not ignored."""
    cluster = raw.get("cluster")
    if not (isinstance(cluster, dict) and cluster.get("existing") is True):
        return None
    extra = sorted(set(cluster) - set(EXISTING_CLUSTER_KEYS))
    if not extra:
        return None
    return (
        f"cluster.{extra[0]}: has no effect with cluster.existing (the stack does not manage that cluster); "
        f"remove it; allowed with existing: {', '.join(EXISTING_CLUSTER_KEYS)}"
    )


def validate(raw: dict[str, Any]) -> StackConfig:
    """The typed config, or InvalidConfig for the first problem, before anything is declared. The
    profile's settings lie under the preset's and the stack's own; a `target` is resolved to
    `capacity.nodes` by the planner before the derived checks.

    Validation goes through JSON in strict mode: a number is never read from a string or a bool (`nodes: true` is not 1,
    `nodes: "12"` is not 12); infinities and NaN are refused. The CLI hands top-level values to the program as strings
    and objects as JSON, so every typed number or bool of the model sits inside an object and keeps its YAML type.
    """
    problem = plaintext_secret_problem(raw) or _existing_cluster_problem(raw)
    if problem:
        raise InvalidConfig(f"invalid stack config: {problem}")
    own = apply_preset(raw)
    merged = apply_profile(own)
    non_finite = _non_finite_loc(merged)
    if non_finite is not None:
        allowed = allowed_range(StackConfig, non_finite) or "; allowed: a finite number"
        raise InvalidConfig(f"invalid stack config: {_location(non_finite) or '(value)'}: infinite or NaN{allowed}")
    document = json.dumps(merged)
    try:
        # by_name=False: only the camelCase keys; `max_model_len` is an unknown key, not a synonym
        config = StackConfig.model_validate_json(document, by_alias=True, by_name=False)
    except ValidationError as error:
        raise InvalidConfig(describe(error, _allowed_keys(StackConfig))) from None
    foreign = foreign_checkpoint_problem(config.serving_profile, config.weights.model, own)
    if foreign:
        raise InvalidConfig(f"invalid stack config: {foreign}")
    try:
        measurements.load()
    except measurements.MeasurementsError as error:
        raise InvalidConfig(f"invalid measurements file: {error}") from None
    try:
        config = resolve(config)
    except SizingError as error:
        raise InvalidConfig(f"invalid stack config: {error}") from None
    problem = derived_problem(config)
    if problem:
        raise InvalidConfig(f"invalid stack config: {problem}")
    return config


def secret_env_problem(config: StackConfig, project: str) -> str | None:
    """A key engine.secretEnv names that is not set, or not a secret."""
    for name, key in config.engine.secret_env.items():
        full_key = f"{project}:{key}"
        setting = f"engine.secretEnv.{name}"
        if runtime_config.get_config(full_key) is None:
            return (
                f"{setting}: names a config key that is not set ({NOT_SHOWN}); run `pulumi config set --secret KEY "
                "VALUE` with the key it names (or set it as a secret in an ESC environment the stack imports)"
            )
        if not runtime_config.is_config_secret(full_key):
            return (
                f"{setting}: names a config key that is plain text, in the stack file or a PULUMI_CONFIG_ variable "
                f"({NOT_SHOWN}); remove it and run `pulumi config set --secret KEY VALUE` with the key it names"
            )
    return None


def load_stack() -> tuple[StackConfig, pulumi.Output[str]]:
    """The validated stack config and the Hugging Face token (a secret Output)."""
    project = pulumi.get_project()
    # the CLI hides a secret value in the program's error as written only, not a key made of it nor a part of it
    secrets = [value for key, value in _stack_config().items() if runtime_config.is_config_secret(key)]
    MESSAGE_SECRETS.set(MESSAGE_SECRETS.get() | folded_secret_forms(secrets))
    config = validate(raw_project_config(project))
    problem = secret_env_problem(config, project)
    if problem:
        raise InvalidConfig(f"invalid stack config: {problem}")
    hf_token = pulumi.Config().require_secret(HF_TOKEN_KEY)
    return config, hf_token
