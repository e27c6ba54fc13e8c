"""Policy config: one declaration gives a rule both its JSON schema (with the default the engine
fills in) and the value it reads, so the two never disagree.

The schema bounds every value: a number by its minimum and maximum (both required), a list is of
names (printable ASCII without spaces) and is not empty unless it says it may be, a string by its
pattern. `pulumi preview --policy-pack-config` validates a config against it (gojsonschema), and
`check-policies --config` / `render --policy-config` do the same before any rule runs
(commands/check_policies/pack_config.py), so a rule never reads `-5` seconds or an empty list.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pulumi_policy import PolicyConfigSchema

# An item of a list setting: a GPU type, a region, a model name fragment, a Service or config key name.
NAME_PATTERN = "^[!-~]{1,256}$"
NAME_WORDS = "names of 1-256 printable ASCII characters without spaces"


@dataclass(frozen=True)
class Setting:
    key: str
    default: Any
    description: str
    pattern: str | None = None  # a string setting's grammar, checked by the engine (gojsonschema) and check-policies
    minimum: float | None = None  # a number setting's range, both ends required
    maximum: float | None = None
    may_be_empty: bool = False  # a list setting: whether [] means something (nothing allowed, none known)
    # a list setting's items: their grammar and what it allows in words (default: NAME_PATTERN, NAME_WORDS)
    item_pattern: str | None = None
    item_words: str | None = None

    def __post_init__(self) -> None:
        if not _is_number(self.default):
            return
        if self.minimum is None or self.maximum is None:
            raise TypeError(f"policy setting {self.key}: a number setting needs a minimum and a maximum")
        if not self.minimum <= self.default <= self.maximum:
            raise TypeError(f"policy setting {self.key}: the default {self.default} is outside its range")

    @property
    def schema(self) -> dict[str, Any]:
        if isinstance(self.default, bool):
            kind: dict[str, Any] = {"type": "boolean"}
        elif _is_number(self.default):
            kind = {"type": "number", "minimum": self.minimum, "maximum": self.maximum}
        elif isinstance(self.default, list):
            items = {
                "type": "string",
                "pattern": self.item_pattern or NAME_PATTERN,
                "description": self.item_words or NAME_WORDS,
            }
            kind = {"type": "array", "items": items, "minItems": 0 if self.may_be_empty else 1}
        else:
            kind = {"type": "string"} | ({"pattern": self.pattern} if self.pattern else {})
        return {**kind, "default": self.default, "description": self.description}

    def read(self, config: Mapping[str, Any]) -> Any:
        return config.get(self.key, self.default)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _shown(number: float) -> str:
    return f"{int(number):,}" if float(number).is_integer() else f"{number:g}"


def allowed_words(schema: Mapping[str, Any]) -> str:
    """What a setting's schema allows, in words: `a number from 0 to 30`, `a non-empty list of names ...`."""
    kind = schema.get("type")
    if kind == "number":
        return f"a number from {_shown(schema['minimum'])} to {_shown(schema['maximum'])}"
    if kind == "array":
        items = (schema.get("items") or {}).get("description") or NAME_WORDS
        return f"a {'' if schema.get('minItems', 0) == 0 else 'non-empty '}list of {items}"
    if kind == "boolean":
        return "true or false"
    return "a string of the default's form" if "pattern" in schema else "a string"


def config_schema(*settings: Setting) -> Any:
    return PolicyConfigSchema(properties={setting.key: setting.schema for setting in settings})
