"""Policy config: one declaration gives a rule both its JSON schema (with the default the engine
fills in) and the value it reads, so the two never disagree."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pulumi_policy import PolicyConfigSchema


@dataclass(frozen=True)
class Setting:
    key: str
    default: Any
    description: str
    pattern: str | None = None  # a string setting's grammar, checked by the engine (gojsonschema) and check-policies

    @property
    def schema(self) -> dict[str, Any]:
        if isinstance(self.default, bool):
            kind: dict[str, Any] = {"type": "boolean"}
        elif isinstance(self.default, (int, float)):
            kind = {"type": "number"}
        elif isinstance(self.default, list):
            kind = {"type": "array", "items": {"type": "string"}}
        else:
            kind = {"type": "string"} | ({"pattern": self.pattern} if self.pattern else {})
        return {**kind, "default": self.default, "description": self.description}

    def read(self, config: Mapping[str, Any]) -> Any:
        return config.get(self.key, self.default)


def config_schema(*settings: Setting) -> Any:
    return PolicyConfigSchema(properties={setting.key: setting.schema for setting in settings})
