"""Kubernetes CronJob schedules as the API server parses them (robfig/cron's standard parser)."""

from __future__ import annotations

WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
# Kubernetes CronJob schedules are parsed by robfig/cron's standard parser: five fields, numbers,
# `*`, ranges, steps, lists, and month/weekday names, or one of the descriptors below. A generic
# cron library would also accept seconds, years, `L`, `W` and `#`, which the API server refuses.
CRON_DESCRIPTORS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
CRON_FIELDS: tuple[tuple[str, int, int, tuple[str, ...]], ...] = (
    ("minute", 0, 59, ()),
    ("hour", 0, 23, ()),
    ("day of month", 1, 31, ()),
    ("month", 1, 12, ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")),
    ("day of week", 0, 7, ("sun", "mon", "tue", "wed", "thu", "fri", "sat")),
)


def _cron_value(token: str, low: int, high: int, names: tuple[str, ...], field: str) -> int:
    if token.lower() in names:
        return names.index(token.lower()) + (low if field == "month" else 0)
    if not token.isdigit() or not low <= int(token) <= high:
        raise ValueError(f"'{token}' is not a {field} ({low}-{high}{', or a name' if names else ''})")
    return int(token)


def validate_cron(expression: str) -> str:
    """Check a CronJob schedule against the grammar the Kubernetes API server accepts."""
    if expression.startswith("@"):
        if expression not in CRON_DESCRIPTORS:
            raise ValueError(f"'{expression}' is not a cron descriptor; allowed: {', '.join(CRON_DESCRIPTORS)}")
        return expression
    if "TZ=" in expression:
        raise ValueError("set schedule.timeZone instead of CRON_TZ/TZ in the expression (Kubernetes refuses it)")
    fields = expression.split()
    if len(fields) != len(CRON_FIELDS):
        raise ValueError(
            f"'{expression}' has {len(fields)} fields; a cron schedule has 5 (minute hour day month weekday)"
        )
    for text, (field, low, high, names) in zip(fields, CRON_FIELDS, strict=True):
        for part in text.split(","):
            span, _, step = part.partition("/")
            if step and (not step.isdigit() or int(step) == 0):
                raise ValueError(f"'{part}': the step of the {field} field must be a positive number")
            if span in ("*", "?"):
                continue
            first, _, last = span.partition("-")
            start = _cron_value(first, low, high, names, field)
            if last and _cron_value(last, low, high, names, field) < start:
                raise ValueError(f"'{span}': the {field} range runs backwards")
    return expression
