"""The engine's property-path syntax (`spec.containers[0].env`, `metadata.labels["app.kubernetes.io/name"]`):
parsed into segments and written back; `[*]` is any list index."""

from __future__ import annotations

import re

Segment = str | int

_SEGMENT = re.compile(r'\["((?:[^"\\]|\\.)*)"\]|\[(\d+|\*)\]|\.?([^.\[\]]+)')


def parse_path(path: str) -> tuple[Segment, ...]:
    """`spec.containers[0].env` -> ("spec", "containers", 0, "env"); `[*]` stays the string "*"."""
    segments: list[Segment] = []
    for quoted, index, key in _SEGMENT.findall(path):
        if quoted:
            segments.append(quoted.replace('\\"', '"'))
        elif index:
            segments.append("*" if index == "*" else int(index))
        else:
            segments.append(key)
    return tuple(segments)


def format_path(segments: tuple[Segment, ...]) -> str:
    text = ""
    for segment in segments:
        if isinstance(segment, int):
            text += f"[{segment}]"
        elif re.search(r'[.\[\]"/ ]', segment):
            text += '["' + segment.replace('"', '\\"') + '"]'
        else:
            text += f".{segment}" if text else segment
    return text


def _same_segment(rule: Segment, changed: Segment) -> bool:
    return rule == changed or (rule == "*" and isinstance(changed, int))


def path_touches(rule_path: str, changed_path: str) -> bool:
    """True when a change at `changed_path` touches `rule_path` (one is a prefix of the other)."""
    rule, changed = parse_path(rule_path), parse_path(changed_path)
    shorter = min(len(rule), len(changed))
    return all(_same_segment(rule[i], changed[i]) for i in range(shorter))
