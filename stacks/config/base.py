"""The base every config model shares (camelCase keys, no unknown keys, no coercion) and shared value types."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, model_validator
from pydantic.alias_generators import to_camel

from common.grammars import image_problem, quantity_problem
from common.text import escaped
from stacks.config.quoting import quote

EXTRA_ARGS_MAX = 64
EXTRA_VALUE_MAX = 1024


def checked(problem: str, value: str) -> str:
    if problem:
        raise ValueError(f"{quote(value)} {problem}")
    return value


def checked_image(value: str) -> str:
    return checked(image_problem(value), value)


def checked_quantity(value: str) -> str:
    return checked(quantity_problem(value), value)


def checked_printable(value: str) -> str:
    # Not quoted: a value of several lines is where a password sits on the line after its key, which no pattern finds.
    if (at := next((index for index, char in enumerate(value) if not char.isprintable()), None)) is not None:
        raise ValueError(
            f"has an unprintable character ({escaped(value[at])}, character {at + 1}); allowed: printable text"
        )
    if len(value) > EXTRA_VALUE_MAX:
        raise ValueError(f"is longer than {EXTRA_VALUE_MAX} characters")
    return value


Image = Annotated[str, AfterValidator(checked_image)]
Quantity = Annotated[str, AfterValidator(checked_quantity)]


class ConfigModel(BaseModel):
    """The base of every config model: camelCase keys, unknown keys refused, no type coercion, immutable."""

    model_config = ConfigDict(
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        frozen=True,
        use_enum_values=False,
        # no coercion: `nodes: true` or `nodes: "12"` is not 12; no infinities or NaN
        strict=True,
        allow_inf_nan=False,
    )


class SwitchedGroup(ConfigModel):
    """A group with an `enabled` switch: on as soon as the group sets any other key, unless it says `enabled: false`."""

    @model_validator(mode="before")
    @classmethod
    def _on_when_configured(cls, data: Any) -> Any:
        if isinstance(data, dict) and "enabled" not in data and data:
            return {**data, "enabled": True}
        return data
