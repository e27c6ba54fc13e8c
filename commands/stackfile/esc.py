"""A stack file's `environment:` block: the Pulumi ESC environments the stack imports.

The block is a list of environment names, or an inline environment definition (a mapping with
`imports` and `values`) (pulumi/pulumi sdk/go/common/workspace/project.go, `Environment` and its
UnmarshalYAML: a list of names becomes `{"imports": [...]}`). Under `pulumi up` the CLI opens the
environment and merges its `values.pulumiConfig` into the stack's config, keys without a namespace
in the project's, the stack file's own values winning (JSON merge patch; pkg/workspace/config.go
`mergeConfig` and `toConfigMap`).

Offline nothing can be opened: an imported environment, and any value of an inline definition
that is an expression (`${...}`, `fn::...`), may supply any key. Literal `pulumiConfig` values of an
inline definition are in the file: they are read as the CLI would merge them.
"""

from __future__ import annotations

import functools
import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from commands.io.console import hide_known_secrets
from stacks.config.quoting import quote

# ESC environment names: letters, digits, '-', '_' and '.' (Pulumi ESC docs, "Environments"),
# referenced as [PROJECT/]NAME with an optional @VERSION (a revision number or tag).
ENVIRONMENT_REFERENCE = re.compile(r"^(?:[A-Za-z0-9_.-]{1,100}/)?[A-Za-z0-9_.-]{1,100}(?:@[A-Za-z0-9_.-]{1,100})?$")
DEFINITION_KEYS = ("imports", "values")
IMPORTS_MAX = 50
PULUMI_CONFIG = "pulumiConfig"
EXPRESSION_MARKERS = ("${",)
FUNCTION_PREFIX = "fn::"
SECURE_KEY = "secure"


class EnvironmentBlockError(ValueError):
    """The `environment:` block is not what the CLI accepts (the message names what is wrong)."""


@dataclass(frozen=True)
class StackEnvironment:
    """What the offline render can know of a stack's ESC environment."""

    imports: tuple[str, ...] = ()
    # Literal `values.pulumiConfig` entries of an inline definition, keyed `<namespace>:<key>`.
    literal_config: dict[str, Any] = field(default_factory=dict)
    # `values.pulumiConfig` keys whose values only ESC can compute (expressions, functions, secrets).
    computed_keys: tuple[str, ...] = ()
    # Of those, the ones ESC makes secrets (an `fn::secret`, or a text that interpolates one).
    secret_keys: tuple[str, ...] = ()
    # The literal values of the inline definition's `fn::secret`s: the program gets placeholders for their
    # keys offline, but the file holds them, so a copy pasted into a setting can be found.
    secret_literals: tuple[str, ...] = ()

    @property
    def opaque(self) -> bool:
        """Whether ESC may supply keys the offline render cannot see."""
        return bool(self.imports) or bool(self.computed_keys)

    @property
    def sources(self) -> str:
        names = [f"`{name}`" for name in self.imports]
        if self.computed_keys:
            names.append("the stack file's inline `environment` values")
        return ", ".join(names)


def _is_literal(value: Any) -> bool:
    if isinstance(value, str):
        return not any(marker in value for marker in EXPRESSION_MARKERS)
    if isinstance(value, list):
        return all(map(_is_literal, value))
    if isinstance(value, dict):
        return all(not str(key).startswith(FUNCTION_PREFIX) and _is_literal(item) for key, item in value.items())
    return True


SECRET_FUNCTION = "fn::secret"


def _is_secret(value: Any) -> bool:
    return isinstance(value, dict) and SECRET_FUNCTION in value


def _nested(value: Any, path: str) -> Iterator[tuple[str, Any]]:
    """Every value inside `value` (not `value` itself), depth first, with its path (`a.b`, `a[0]`); an
    `fn::secret` is not looked into."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        where = f"{path}[{key}]" if isinstance(value, list) else f"{path}.{key}" if path else str(key)
        yield where, item
        if not _is_secret(item):
            yield from _nested(item, where)


def _literal_leaves(value: Any) -> Iterator[str]:
    """The literal texts of an `fn::secret`'s argument: strings without an interpolation and numbers
    (as config strings); not what a function computes."""
    if isinstance(value, str) and _is_literal(value):
        yield value
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield str(value)
    elif isinstance(value, list):
        for item in value:
            yield from _literal_leaves(item)
    elif isinstance(value, dict) and not any(str(key).startswith(FUNCTION_PREFIX) for key in value):
        for item in value.values():
            yield from _literal_leaves(item)


def _secret_literals(values: dict[str, Any]) -> tuple[str, ...]:
    """The literal values of every `fn::secret` in `values` (`pulumiConfig` included)."""
    found = {
        text for _, item in _nested(values, "") if _is_secret(item) for text in _literal_leaves(item[SECRET_FUNCTION])
    }
    return tuple(sorted(found))


# `["key"]` or `['key']`: each quote's text runs to the first closing quote (linear on a long reference).
QUOTED_INDEX = re.compile(r"""\[\s*"([^"]*)"\s*\]|\[\s*'([^']*)'\s*\]""")


def _dotted(path: str) -> str:
    """`a[0].b` and `a["b"]` as `a.0.b` and `a.b`: one spelling for the paths of `values` and the references
    to them."""
    return re.sub(r"\[(\w+)\]", r".\1", QUOTED_INDEX.sub(lambda match: f".{match[1] or match[2]}", path))


def _nested_secret(value: Any, path: str) -> str | None:
    """The path of an `fn::secret` inside a setting's value (not the whole value), or None."""
    return next((where for where, item in _nested(value, path) if _is_secret(item)), None)


INTERPOLATION = re.compile(r"\$\{([^}]+)\}")


# A path of `values` is at most as deep as the stack file's nesting limit allows: a reference's deeper
# prefixes can name none.
DEEPEST_PATH = 256


def _prefixes(name: str) -> Iterator[str]:
    """`a`, `a.b`, `a.b.c` of `a.b.c` (the first DEEPEST_PATH)."""
    end = -1
    for _ in range(DEEPEST_PATH):
        end = name.find(".", end + 1)
        if end < 0:
            yield name
            return
        yield name[:end]


def _secret_paths(values: dict[str, Any]) -> set[str]:
    """The paths of `values` that are an `fn::secret` (`openai`, `db.password`), and of every text that
    interpolates one, also through other texts (`alias: ${openai}`, then `x-${alias}`): an interpolation of
    one, of a part of one or of an object holding one carries the secret. A worklist over two indexes of the
    texts' references (by each prefix, and by the whole name), so a long chain of aliases costs linear time."""
    secrets = {_dotted(where) for where, item in _nested(values, "") if _is_secret(item)}
    texts = [
        (_dotted(where), [_dotted(reference.strip()) for reference in references])
        for where, item in _nested(values, "")
        if isinstance(item, str) and (references := INTERPOLATION.findall(item))
    ]
    under: defaultdict[str, set[int]] = defaultdict(set)  # texts naming this path or a part of it
    naming: defaultdict[str, set[int]] = defaultdict(set)  # texts naming exactly this path
    for index, (_, names) in enumerate(texts):
        for name in names:
            naming[name].add(index)
            for prefix in _prefixes(name):
                under[prefix].add(index)
    pending, reached = list(secrets), set[int]()
    while pending:
        path = pending.pop()
        carrying = under.get(path, set()).union(
            *(naming.get(holder, ()) for holder in _prefixes(path) if holder != path)
        )
        for index in carrying - reached:
            reached.add(index)
            if texts[index][0] not in secrets:
                secrets.add(texts[index][0])
                pending.append(texts[index][0])
    return secrets


def _interpolates_a_secret(text: str, secrets: frozenset[str]) -> bool:
    """Whether a text references a secret path, a part of one (a prefix of the reference is one) or an
    object holding one (the reference is a prefix of one): set look-ups, not a scan of every secret."""
    holders = _holders(secrets)
    for reference in INTERPOLATION.findall(text):
        name = _dotted(reference.strip())
        if name in holders or any(prefix in secrets for prefix in _prefixes(name)):
            return True
    return False


@functools.lru_cache(maxsize=4)
def _holders(secrets: frozenset[str]) -> frozenset[str]:
    """Every prefix of every secret path: a reference to one of them reads an object holding a secret."""
    return frozenset(prefix for path in secrets for prefix in _prefixes(path))


def _nested_interpolated_secret(value: Any, path: str, secrets: frozenset[str]) -> str | None:
    """The path of a string inside a setting's value (not the whole value) that interpolates an ESC secret
    of `values` (`${openai}`): ESC marks it secret too ("combining secret and non-secret values can maintain
    secretness", https://www.pulumi.com/docs/esc/environments/syntax/builtin-functions/fn-secret/), so the
    whole setting becomes one secret value."""
    return next(
        (
            where
            for where, item in _nested(value, path)
            if isinstance(item, str) and _interpolates_a_secret(item, secrets)
        ),
        None,
    )


def _imports(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise EnvironmentBlockError("'environment' imports must be a list of ESC environment names")
    if len(value) > IMPORTS_MAX:
        raise EnvironmentBlockError(f"'environment' imports {len(value)} environments; at most {IMPORTS_MAX}")
    names: list[str] = []
    for item in value:
        # An import may also be a one-key mapping `NAME: {merge: false}` (ESC's import options).
        name = next(iter(item)) if isinstance(item, dict) and len(item) == 1 else item
        if not isinstance(name, str) or not ENVIRONMENT_REFERENCE.fullmatch(name):
            raise EnvironmentBlockError(
                f"'environment' import {quote(name if isinstance(name, str) else str(item), 60)} is not an ESC "
                "environment name; allowed: [PROJECT/]NAME[@VERSION] of letters, digits, '-', '_' and '.'"
            )
        names.append(name)
    return tuple(names)


def read_environment(block: Any, project: str) -> StackEnvironment:
    """The stack file's `environment:` value, checked; keys of `pulumiConfig` get the project's
    namespace when they have none (as the CLI's `toConfigMap` does)."""
    if block is None:
        return StackEnvironment()
    if isinstance(block, list):
        return StackEnvironment(imports=_imports(block))
    if not isinstance(block, dict):
        raise EnvironmentBlockError(
            "'environment' must be a list of ESC environment names or an inline environment definition "
            "(a mapping with 'imports' and 'values')"
        )
    unknown = sorted(set(block) - set(DEFINITION_KEYS))
    if unknown:
        raise EnvironmentBlockError(
            f"'environment' has the unknown key {quote(unknown[0], 40)}; allowed: {', '.join(DEFINITION_KEYS)}"
        )
    values = block.get("values") or {}
    if not isinstance(values, dict):
        raise EnvironmentBlockError("'environment.values' must be a mapping")
    # a refusal below (an import's name, a setting) may quote a text one of these values was pasted into
    hide_known_secrets(_secret_literals(values))
    imports = _imports(block["imports"]) if block.get("imports") is not None else ()
    pulumi_config = values.get(PULUMI_CONFIG) or {}
    if not isinstance(pulumi_config, dict):
        raise EnvironmentBlockError(f"'environment.values.{PULUMI_CONFIG}' must be a mapping of config keys")
    literal: dict[str, Any] = {}
    computed: list[str] = []
    secret: list[str] = []
    secrets = frozenset(_secret_paths(values))
    for key, value in pulumi_config.items():
        nested = _nested_secret(value, str(key)) or _nested_interpolated_secret(value, str(key), secrets)
        if nested:
            # The CLI makes a setting with a secret inside it one secret config value (pulumi/pulumi@1b594989
            # pkg/workspace/config.go `toConfigMap`, sdk/go/common/resource/config/object.go `MarshalString`:
            # an object is secure when any value in it is), which the program gets decrypted and `pulumi up`
            # refuses (stacks/load/loader.py raw_project_config); offline the setting was merely unknown.
            raise EnvironmentBlockError(
                f"{PULUMI_CONFIG}.{nested}: an ESC secret inside a setting reaches the program decrypted and would "
                "be written in plain text (`pulumi up` refuses it); make it a config key of its own "
                f"(`{PULUMI_CONFIG}: {{KEY: {{{SECRET_FUNCTION}: ...}}}}`) and name that key in engine.secretEnv"
            )
        full_key = key if ":" in key else f"{project}:{key}"
        if _is_literal(value):
            literal[full_key] = value
        else:
            computed.append(full_key)
        if _is_secret(value) or (isinstance(value, str) and _interpolates_a_secret(value, secrets)):
            secret.append(full_key)
    return StackEnvironment(imports, literal, tuple(sorted(computed)), tuple(sorted(secret)), _secret_literals(values))


def merged_config(environment: dict[str, Any], stack: dict[str, Any]) -> dict[str, Any]:
    """The environment's config under the stack file's: objects merge key by key, any other stack
    value replaces the environment's (the CLI's JSON merge patch, stack values preferred)."""
    merged = dict(environment)
    for key, value in stack.items():
        base = merged.get(key)
        if isinstance(base, dict) and isinstance(value, dict) and set(value) != {SECURE_KEY}:
            merged[key] = merged_config(base, value)
        else:
            merged[key] = value
    return merged
