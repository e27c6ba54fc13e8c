"""`python -m commands.settings_reference > docs/settings.md`: the settings reference, generated from the config model.

Every key a stack file may set, as the user writes it (camelCase, dotted from the top), with its
type, default, allowed values or bounds and the field's own description, then what each
environment preset sets. tests/commands/test_settings_reference.py fails when docs/settings.md is
not what this prints.
"""

from __future__ import annotations

import argparse
import enum
import sys
import types
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import yaml
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from common.sources import WRITEUP
from stacks.config.presets import PRESETS
from stacks.config.stack import StackConfig

GENERATOR = "python -m commands.settings_reference > docs/settings.md"


@dataclass(frozen=True)
class Section:
    """One table of the page: the keys of one model, at one path of the stack file."""

    path: str
    model: type[BaseModel]
    title: str


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _strip(annotation: Any) -> tuple[Any, list[Any]]:
    """The annotation without Annotated wrappers, and the metadata they carried."""
    metadata: list[Any] = []
    while get_origin(annotation) is Annotated:
        annotation, *extra = get_args(annotation)
        for item in extra:
            metadata.extend(item.metadata if isinstance(item, FieldInfo) else [item])
    return annotation, metadata


def _members(annotation: Any) -> list[Any]:
    """The members of a union (`X | None` included), or the annotation itself."""
    if get_origin(annotation) in (Union, types.UnionType):
        return list(get_args(annotation))
    return [annotation]


def _type_name(annotation: Any) -> str:
    annotation, _ = _strip(annotation)
    members = [member for member in _members(annotation) if member is not type(None)]
    nullable = len(members) < len(_members(annotation))
    if len(members) > 1:
        if all(_is_model(_strip(member)[0]) for member in members):
            text = "object (one of the kinds below, by `type`)"
        else:
            text = " or ".join(_type_name(member) for member in members)
    else:
        text = _single_type_name(members[0])
    return f"{text} or null" if nullable else text


def _single_type_name(annotation: Any) -> str:
    annotation, _ = _strip(annotation)
    origin = get_origin(annotation)
    if origin is list:
        return f"list of {_plural(_type_name(get_args(annotation)[0]))}"
    if origin is dict:
        key, value = get_args(annotation)
        return f"map of {_type_name(key)} to {_type_name(value)}"
    if origin is Literal:
        return "string" if all(isinstance(value, str) for value in get_args(annotation)) else "value"
    if _is_model(annotation):
        return "object"
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return "string"
    names = {bool: "boolean", int: "integer", float: "number", str: "string"}
    return names.get(annotation, getattr(annotation, "__name__", str(annotation)))


def _plural(name: str) -> str:
    if name.startswith("object"):
        return "objects" + name.removeprefix("object")
    return {"string": "strings", "integer": "integers", "number": "numbers", "boolean": "booleans"}.get(name, name)


def _choices(annotation: Any) -> list[str]:
    """The values an enum or Literal allows, in order."""
    annotation, _ = _strip(annotation)
    for member in (_strip(member)[0] for member in _members(annotation)):
        if get_origin(member) is Literal:
            return [str(value) for value in get_args(member)]
        if isinstance(member, type) and issubclass(member, enum.Enum):
            return [str(item.value) for item in member]
    return []


def _bounds(metadata: Sequence[Any], unit: str) -> list[str]:
    found: dict[str, Any] = {}
    for item in metadata:
        for name in ("ge", "gt", "le", "lt", "min_length", "max_length", "pattern"):
            value = getattr(item, name, None)
            if value is not None:
                found[name] = value
    parts: list[str] = []
    low = f"at least {found['ge']}" if "ge" in found else f"more than {found['gt']}" if "gt" in found else ""
    high = f"at most {found['le']}" if "le" in found else f"less than {found['lt']}" if "lt" in found else ""
    if "ge" in found and "le" in found:
        parts.append(f"{found['ge']} to {found['le']}")
    elif low or high:
        parts.append(", ".join(part for part in (low, high) if part))
    shortest, longest = found.get("min_length"), found.get("max_length")
    if shortest is not None and longest is not None:
        parts.append(f"{shortest} to {longest} {unit}")
    elif shortest is not None:
        parts.append(f"at least {shortest} {unit if shortest != 1 else unit.removesuffix('s')}")
    elif longest is not None:
        parts.append(f"at most {longest} {unit}")
    if "pattern" in found:
        parts.append(f"matches `{found['pattern']}`")
    return parts


def _allowed(info: FieldInfo) -> str:
    annotation, inner = _strip(info.annotation)
    metadata = [*info.metadata, *inner]
    members = [_strip(member)[0] for member in _members(annotation) if member is not type(None)]
    origin = get_origin(members[0]) if len(members) == 1 else None
    unit = "items" if origin is list else "entries" if origin is dict else "characters"
    choices = _choices(annotation)
    parts = [", ".join(f"`{value}`" for value in choices)] if choices else []
    parts += _bounds(metadata, unit)
    if origin is list:
        item = get_args(members[0])[0]
        choices = _choices(item)
        parts += [f"items: {', '.join(f'`{value}`' for value in choices)}"] if choices else []
        parts += [f"items {part}" for part in _bounds(_strip(item)[1], "characters")]
    if origin is dict:
        key, value = get_args(members[0])
        parts += [f"keys {part}" for part in _bounds(_strip(key)[1], "characters")]
        parts += [f"values {part}" for part in _bounds(_strip(value)[1], "characters")]
    return "; ".join(parts)


def _default(info: FieldInfo) -> str:
    if info.is_required():
        return "required"
    value = info.default if info.default is not PydanticUndefined else info.get_default(call_default_factory=True)
    if isinstance(value, BaseModel):
        return "see below"
    return f"`{_value_text(value)}`"


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_defaults=True)
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def _value_text(value: Any) -> str:
    """The value as a stack file writes it (YAML flow style: `1.34` quoted, as a bare 1.34 is a number)."""
    text = yaml.safe_dump(_plain(value), default_flow_style=True, width=1_000_000, sort_keys=False).strip()
    return text.removesuffix("...").strip()


def _nested_models(annotation: Any) -> list[type[BaseModel]]:
    """The models a field holds: itself, as a list's items, in a union, or as null or a model."""
    annotation, _ = _strip(annotation)
    models: list[type[BaseModel]] = []
    for member in (_strip(member)[0] for member in _members(annotation)):
        if get_origin(member) is list:
            models += _nested_models(get_args(member)[0])
        elif _is_model(member):
            models.append(member)
    return models


def sections(model: type[BaseModel] = StackConfig, path: str = "") -> Iterator[Section]:
    """The model's table, then those of the models its fields hold, depth first in field order."""
    yield Section(path, model, f"`{path}`" if path else "Top level")
    for name, info in model.model_fields.items():
        key = f"{path}.{info.alias or name}" if path else info.alias or name
        annotation, _ = _strip(info.annotation)
        in_list = any(get_origin(_strip(member)[0]) is list for member in _members(annotation))
        nested = _nested_models(info.annotation)
        for child in nested:
            child_path = f"{key}[]" if in_list else key
            if len(nested) > 1:
                kind = _choices(child.model_fields["type"].annotation)[0]
                for section in sections(child, child_path):
                    yield Section(
                        section.path,
                        section.model,
                        f"`{child_path}` with `type: {kind}`" if section.path == child_path else section.title,
                    )
            else:
                yield from sections(child, child_path)


def _cell(text: str) -> str:
    """One table cell: one line, pipes escaped, and `<`/`>` outside code spans as entities (not HTML)."""
    parts = " ".join(text.split()).replace("|", "\\|").split("`")
    for index in range(0, len(parts), 2):
        parts[index] = parts[index].replace("<", "&lt;").replace(">", "&gt;")
    return "`".join(parts)


def _table(section: Section) -> list[str]:
    lines = [
        f"## {section.title}",
        "",
        _cell(section.model.__doc__ or ""),
        "",
        "| key | type | default | allowed | description |",
        "|---|---|---|---|---|",
    ]
    for name, info in section.model.model_fields.items():
        key = info.alias or name
        full = f"{section.path}.{key}" if section.path else key
        lines.append(
            f"| `{full}` | {_cell(_type_name(info.annotation))} | {_cell(_default(info))} | "
            f"{_cell(_allowed(info))} | {_cell(info.description or '')} |"
        )
    return [*lines, ""]


def _flatten(settings: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in settings.items():
        path = f"{prefix}.{key}" if prefix else key
        if isinstance(value, dict) and value:
            flat |= _flatten(value, path)
        else:
            flat[path] = value
    return flat


def _presets_table() -> list[str]:
    environments = list(PRESETS)
    flat = {environment: _flatten(PRESETS[environment]) for environment in environments}
    keys = sorted({key for settings in flat.values() for key in settings})
    lines = [
        "## Environment presets",
        "",
        "What each `environment` sets before the stack file's own keys are laid over it "
        "(`stacks/config/presets.py`; objects merge key by key, lists replace; a stack that gives a "
        "`target` does not inherit `capacity.nodes`). A blank cell leaves the model default above.",
        "",
        "| key | " + " | ".join(f"`{environment}`" for environment in environments) + " |",
        "|---|" + "---|" * len(environments),
    ]
    for key in keys:
        cells = [f"`{_value_text(flat[env][key])}`" if key in flat[env] else "" for env in environments]
        lines.append(f"| `{key}` | " + " | ".join(_cell(cell) for cell in cells) + " |")
    return [*lines, ""]


def settings_markdown() -> str:
    lines = [
        "# Settings reference",
        "",
        f"<!-- generated by `{GENERATOR}` from stacks/config/; do not edit -->",
        "",
        "Every key a stack file (`Pulumi.<stack>.yaml`) may set under `config:`, as `gke-b200-serving:KEY` or",
        "bare `KEY`, written camelCase; nested keys are YAML objects (`cluster: {name: ...}`), and `[]` marks",
        'the items of a list. Unknown keys are refused, values are not coerced (`"12"` is not 12), and a bad',
        "value stops the run with one line naming the key (exit 2) before anything is declared. The",
        "defaults are the model's; the environment presets at the end replace some of them. The Hugging",
        "Face token is not part of this model: it is the Pulumi secret `hfToken`",
        "(`pulumi config set --secret hfToken ...`). A figure a description gives as the write-up's is from",
        f"{WRITEUP}.",
        "",
    ]
    for section in sections():
        lines += _table(section)
    lines += _presets_table()
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    argparse.ArgumentParser(prog="python -m commands.settings_reference", description=__doc__).parse_args(argv)
    sys.stdout.write(settings_markdown())
    return 0


if __name__ == "__main__":
    sys.exit(main())
