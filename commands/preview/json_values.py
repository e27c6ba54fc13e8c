"""A JSON document held in a string input (a dashboard's `dashboardJson`, an alert's conditions) is
diffed as parsed JSON, path by path, instead of as two long lines: only what changed is shown, at
the path where it changed (`mosaicLayout.tiles[3].widget.title`)."""

from __future__ import annotations

import json
from typing import Any

from commands.engine.property_paths import Segment, format_path

# A side of a path that the other document does not have.
MISSING = object()
# A string shorter than this is shown whole; a JSON document worth a path diff is longer.
LONG_VALUE = 200


def parsed_json(value: Any) -> Any:
    """The object or array a long string holds, else MISSING."""
    if not isinstance(value, str) or len(value) < LONG_VALUE or value.lstrip()[:1] not in ("{", "["):
        return MISSING
    try:
        parsed = json.loads(value)
    except ValueError:
        return MISSING
    return parsed if isinstance(parsed, (dict, list)) else MISSING


def json_paths_diff(old: Any, new: Any, path: tuple[Segment, ...] = ()) -> list[tuple[str, Any, Any]]:
    """(path, old, new) of every leaf that differs; MISSING where a side has none. Objects key by
    key, arrays index by index (an array that grows or shrinks: the extra items added or removed);
    an object or array that one side adds or removes is shown leaf by leaf too."""
    if (old is MISSING and new in ({}, [])) or (new is MISSING and old in ({}, [])):
        return [(format_path(path) or "(the document)", old, new)]
    if isinstance(new, (dict, list)) and old is MISSING:
        old = {} if isinstance(new, dict) else []
    if isinstance(old, (dict, list)) and new is MISSING:
        new = {} if isinstance(old, dict) else []
    if isinstance(old, dict) and isinstance(new, dict):
        return [
            entry
            for key in sorted(set(old) | set(new))
            for entry in json_paths_diff(old.get(key, MISSING), new.get(key, MISSING), (*path, key))
        ]
    if isinstance(old, list) and isinstance(new, list):
        return [
            entry
            for index in range(max(len(old), len(new)))
            for entry in json_paths_diff(
                old[index] if index < len(old) else MISSING, new[index] if index < len(new) else MISSING, (*path, index)
            )
        ]
    if old is not MISSING and new is not MISSING and old == new:
        return []
    return [(format_path(path) or "(the document)", old, new)]


def json_diff(old: Any, new: Any) -> list[tuple[str, Any, Any]] | None:
    """The path-level diff of two long JSON strings, or None when either is not one."""
    before, after = parsed_json(old), parsed_json(new)
    if before is MISSING or after is MISSING:
        return None
    return json_paths_diff(before, after)


def compact(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(", ", ": "))


def json_diff_document(diff: list[tuple[str, Any, Any]]) -> list[dict[str, Any]]:
    """The path diff as `changes.json` carries it: `path`, and `old` / `new` where a side has a value."""
    return [
        {"path": path, **({"old": old} if old is not MISSING else {}), **({"new": new} if new is not MISSING else {})}
        for path, old, new in diff
    ]
