"""The allowed range of every numeric field of a pydantic model, in words, by its key path: a refused
number (not a number, out of range, infinite) is told what is allowed ("an integer from 1 to 256"); and
the allowed length of every bounded list, with what its items may be ("a list of 1 to 8 items, each with
type 'spot', 'flexStart' or 'reservation'")."""

from __future__ import annotations

import functools
import types
from collections.abc import Sequence
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo

BOUND_WORDS = {"ge": "at least", "gt": "above", "le": "at most", "lt": "below"}


def _shown(bound: float) -> str:
    return f"{int(bound):,}" if float(bound).is_integer() else f"{bound:g}"


def bound_words(name: str, bound: float) -> str:
    """`at most 10,000`: one bound, by its name in pydantic's metadata and errors (`ge`, `gt`, `le`, `lt`)."""
    return f"{BOUND_WORDS[name]} {_shown(bound)}"


def range_words(metadata: Sequence[Any], integer: bool) -> str | None:
    """`an integer from 1 to 256`, `a number above 0 and at most 1`: the bounds a field's metadata
    declares (None when it declares none)."""
    bounds: dict[str, float] = {}
    for item in metadata:
        for name in BOUND_WORDS:
            if isinstance(getattr(item, name, None), int | float):
                bounds[name] = getattr(item, name)
    if not bounds:
        return None
    kind = "an integer" if integer else "a number"
    if "ge" in bounds and "le" in bounds:
        return f"{kind} from {_shown(bounds['ge'])} to {_shown(bounds['le'])}"
    parts = [bound_words(name, bounds[name]) for name in BOUND_WORDS if name in bounds]
    return f"{kind} {' and '.join(parts)}"


def _members(annotation: Any) -> list[tuple[Any, list[Any]]]:
    """The members of a union (Optional included), each without its Annotated wrapper and with the
    metadata that wrapper carried."""
    if get_origin(annotation) in (Union, types.UnionType):
        return [member for argument in get_args(annotation) for member in _members(argument)]
    if get_origin(annotation) is Annotated:
        inner, *extra = get_args(annotation)
        metadata = [part for item in extra for part in (item.metadata if isinstance(item, FieldInfo) else [item])]
        return [(member, metadata + more) for member, more in _members(inner)]
    return [(annotation, [])]


def _field_range(info: FieldInfo) -> str | None:
    """The range of a field whose every value is a number (or null); None for any other field."""
    members = [(member, metadata) for member, metadata in _members(info.annotation) if member is not type(None)]
    if not members or any(member not in (int, float) for member, _ in members):
        return None
    metadata = [*info.metadata, *(item for _, more in members for item in more)]
    return range_words(metadata, integer=all(member is int for member, _ in members))


def _models(annotation: Any, path: str) -> list[tuple[type[BaseModel], str]]:
    """The config models a field holds, each with the path of its keys (a list's items under `[]`)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [(annotation, path)]
    if get_origin(annotation) in (list, tuple):
        path += "[]"
    return [found for argument in get_args(annotation) for found in _models(argument, path)]


@functools.cache
def numeric_ranges(model: type[BaseModel], path: str = "") -> dict[str, str]:
    """Every numeric field's range in words, by its path as a message names it with list items as
    `[]` (`capacity.sources[].maxRunDurationSeconds`); a key two members of a union bound differently
    is left out (no one range is true of it)."""
    found: list[tuple[str, str]] = []
    for name, info in model.model_fields.items():
        key = f"{path}.{info.alias or name}" if path else info.alias or name
        words = _field_range(info)
        if words:
            found.append((key, words))
        for member, member_path in _models(info.annotation, key):
            found.extend(numeric_ranges(member, member_path).items())
    by_key: dict[str, set[str]] = {}
    for key, words in found:
        by_key.setdefault(key, set()).add(words)
    return {key: next(iter(words)) for key, words in by_key.items() if len(words) == 1}


def _one_of(values: Sequence[Any]) -> str:
    shown = [repr(value) for value in values]
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} or {shown[-1]}"


def _items_words(item: Any) -> str:
    """`, each with type 'spot' or 'flexStart'` for a list of tagged models, `, each one of 'mon', ...` for
    a list of literals; empty for other items."""
    members = [member for member, _ in _members(item)]
    tags = [
        tag
        for member in members
        if isinstance(member, type) and issubclass(member, BaseModel) and "type" in member.model_fields
        for tag in get_args(member.model_fields["type"].annotation)
    ]
    if tags and len(tags) == len(members):
        return f", each with type {_one_of(tags)}"
    if len(members) == 1 and get_origin(members[0]) is Literal:
        return f", each one of {_one_of(get_args(members[0]))}"
    return ""


def _length_words(info: FieldInfo) -> str | None:
    """`a list of 1 to 8 items`, `a list of at most 50 items`: a list field's declared length bounds."""
    lists = [(member, metadata) for member, metadata in _members(info.annotation) if get_origin(member) is list]
    if len(lists) != 1:
        return None
    member, metadata = lists[0]
    bounds = {
        name: getattr(item, name)
        for item in [*info.metadata, *metadata]
        for name in ("min_length", "max_length")
        if isinstance(getattr(item, name, None), int)
    }
    low, high = bounds.get("min_length"), bounds.get("max_length")
    if low is None and high is None:
        return None
    if low is not None and high is not None:
        count, last = f"{low} to {high}", high
    elif high is None:
        count, last = f"at least {low}", low
    else:
        count, last = f"at most {high}", high
    return f"a list of {count} item{'' if last == 1 else 's'}{_items_words(get_args(member)[0])}"


@functools.cache
def length_ranges(model: type[BaseModel], path: str = "") -> dict[str, str]:
    """Every bounded list field's allowed length (and items) in words, by its path as `numeric_ranges` names it."""
    found: dict[str, str] = {}
    for name, info in model.model_fields.items():
        key = f"{path}.{info.alias or name}" if path else info.alias or name
        words = _length_words(info)
        if words:
            found[key] = words
        for member, member_path in _models(info.annotation, key):
            found.update(length_ranges(member, member_path))
    return found


def allowed_range(model: type[BaseModel], loc: Sequence[int | str]) -> str:
    """`; allowed: an integer from 1 to 256` for the numeric field of `model` at a validation error's
    location (its keys, list items by index), when the model bounds it; `; allowed: a list of 1 to 8
    items, ...` for a bounded list there; else empty."""
    path = "".join("[]" if isinstance(part, int) else f".{part}" for part in loc).lstrip(".")
    words = numeric_ranges(model).get(path) or length_ranges(model).get(path)
    return f"; allowed: {words}" if words else ""


def may_be_null(model: type[BaseModel], loc: Sequence[int | str]) -> bool:
    """Whether the field of `model` at a validation error's location (keys by alias) may be null."""
    annotation: Any = None
    current: type[BaseModel] | None = model
    for part in loc:
        if isinstance(part, int) or current is None:
            return False
        info = next((field for name, field in current.model_fields.items() if (field.alias or name) == part), None)
        if info is None:
            return False
        annotation = info.annotation
        found = _models(annotation, "")
        current = found[0][0] if len(found) == 1 and not found[0][1] else None
    return type(None) in get_args(annotation)
