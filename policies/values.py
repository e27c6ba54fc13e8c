"""Reading property values the way the policy engine hands them over.

Mappings and lists arrive as read-only proxies (not dict/list) that raise `UnknownValueError` when
a rule reads a value that is unknown at preview; numbers arrive as floats; Kubernetes quantities
and annotations as strings. Every rule reads through these helpers.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pulumi_policy.proxy import UnknownValueError


def as_mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def as_list(value: Any) -> list[Any]:
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [value[index] for index in range(len(value))]
    return []


def dig(value: Any, *path: str) -> Any:
    """The value at a key path, None where a key is missing (an unknown value still raises)."""
    for key in path:
        mapping = as_mapping(value)
        if key not in mapping:
            return None
        value = mapping[key]
    return value


def as_number(value: Any) -> float | None:
    """A finite number, or None (a bool, a non-number, "nan" and "inf" are no usable number)."""
    if isinstance(value, bool):
        return None
    number: float | None = None
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return None
    return number if number is not None and math.isfinite(number) else None


def as_text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def cpu_cores(quantity: Any) -> float | None:
    """A Kubernetes CPU quantity ("500m", "10", 10) in cores."""
    if isinstance(quantity, str) and quantity.endswith("m"):
        millis = as_number(quantity[:-1])
        return None if millis is None else millis / 1000
    return as_number(quantity)


def number_text(value: float) -> str:
    """8.0 -> "8", 0.95 -> "0.95": numbers in messages as a user wrote them."""
    return str(int(value)) if float(value).is_integer() else str(value)


def known_strings(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """Every string leaf with its dotted path, skipping values unknown at preview (an unknown
    value is computed by a provider, so it cannot be a literal written in the program)."""
    if isinstance(value, str):
        yield path, value
        return
    if isinstance(value, Mapping):
        for key in value:
            try:
                item = value[key]
            except UnknownValueError:
                continue
            yield from known_strings(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, Sequence):
        for index in range(len(value)):
            try:
                item = value[index]
            except UnknownValueError:
                continue
            yield from known_strings(item, f"{path}[{index}]")
