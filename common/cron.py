"""Kubernetes CronJob schedules as the API server parses them (robfig/cron's standard parser)."""

from __future__ import annotations

import functools
import importlib.resources
import math

from common.text import escaped

WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
# Kubernetes CronJob schedules are parsed by robfig/cron's standard parser (kubernetes
# pkg/apis/batch/validation/validation.go: github.com/robfig/cron/v3, cron.ParseStandard): five fields,
# numbers, `*`, ranges, steps, lists, and month/weekday names, or one of the descriptors below. A
# generic cron library would also accept seconds, years, `L`, `W` and `#`, which the API server
# refuses. Its bounds (robfig/cron v3 spec.go): the day of week is 0-6, so `7` for Sunday, which other
# crons accept, is refused ("end of range (7) above maximum (6)").
CRON_DESCRIPTORS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
CRON_FIELDS: tuple[tuple[str, int, int, tuple[str, ...]], ...] = (
    ("minute", 0, 59, ()),
    ("hour", 0, 23, ()),
    ("day of month", 1, 31, ()),
    ("month", 1, 12, ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")),
    ("day of week", 0, 6, ("sun", "mon", "tue", "wed", "thu", "fri", "sat")),
)


# robfig/cron reads a number with Go's strconv.Atoi: ASCII digits only (no full-width or superscript digit),
# within int64.
INT64_MAX = 2**63 - 1


def _number(token: str) -> int | None:
    return int(token) if token.isascii() and token.isdigit() and int(token) <= INT64_MAX else None


def _cron_value(token: str, low: int, high: int, names: tuple[str, ...], field: str) -> int:
    if token.lower() in names:
        return names.index(token.lower()) + (low if field == "month" else 0)
    number = _number(token)
    if number is None or not low <= number <= high:
        sunday = "; Sunday is 0 or sun (Kubernetes refuses 7)" if field == "day of week" else ""
        shown = escaped(token[:20])
        raise ValueError(f"'{shown}' is not a {field} ({low}-{high}{', or a name' if names else ''}){sunday}")
    return number


# The most days each month has (February 29 in leap years: a schedule for that day fires every 4 years).
MONTH_DAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
STAR = ("*", "?")


def _field_values(text: str, low: int, high: int, names: tuple[str, ...], field: str) -> set[int]:
    """The values a (valid) field selects; as robfig/cron reads it, `N/step` runs from N to the maximum."""
    values: set[int] = set()
    for part in text.split(","):
        span, _, step = part.partition("/")
        if span in STAR:
            start, end = low, high
        else:
            first, _, last = span.partition("-")
            start = _cron_value(first, low, high, names, field)
            end = _cron_value(last, low, high, names, field) if last else (high if step else start)
        values.update(range(start, end + 1, int(step) if step else 1))
    return values


def _has_star(text: str) -> bool:
    """Whether robfig/cron marks the field as `*` (parser.go getRange: a part `*` or `?` with no step
    above 1 sets starBit); `*/2` is a restriction, `*,1` and `*/1` are not."""
    parts = (part.partition("/") for part in text.split(","))
    return any(span in STAR and (not step or int(step) == 1) for span, _, step in parts)


def _never_fires(expression: str, fields: list[str]) -> str:
    """Why a schedule can never fire (30 February, 31 April), or ''. robfig/cron matches a day when both
    day fields match if either is starred, and when either matches otherwise (spec.go dayMatches): so
    only a starred weekday with an unstarred day of month can leave no day at all."""
    day_field, month_field, weekday_field = fields[2], fields[3], fields[4]
    if not _has_star(weekday_field) or _has_star(day_field):
        return ""
    days = _field_values(day_field, *CRON_FIELDS[2][1:], CRON_FIELDS[2][0])
    months = _field_values(month_field, *CRON_FIELDS[3][1:], CRON_FIELDS[3][0])
    if any(day <= MONTH_DAYS[month - 1] for day in days for month in months):
        return ""
    month_names = ", ".join(CRON_FIELDS[3][3][month - 1] for month in sorted(months))
    return (
        f"'{expression}' never fires: day {', '.join(map(str, sorted(days)))} does not occur in {month_names}; "
        "allowed: a day of the month that exists in the months given"
    )


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
            if "/" in part and not _number(step):
                raise ValueError(
                    f"'{escaped(part[:40])}': the step of the {field} field must be a positive number of ASCII "
                    f"digits, at most {INT64_MAX}"
                )
            if span in ("*", "?"):
                continue
            first, dash, last = span.partition("-")
            start = _cron_value(first, low, high, names, field)
            if dash and _cron_value(last, low, high, names, field) < start:
                raise ValueError(f"'{span}': the {field} range runs backwards")
    never = _never_fires(expression, fields)
    if never:
        raise ValueError(never)
    return expression


# The longest IANA zone name is 32 characters (America/Argentina/ComodRivadavia); a longer value is
# refused before anything reads it.
IANA_ZONE_MAX = 64


@functools.cache
def _iana_zones() -> frozenset[str]:
    return frozenset(importlib.resources.files("tzdata").joinpath("zones").read_text().split())


def is_iana_zone(name: str) -> bool:
    """Whether a CronJob's `timeZone` is an IANA time zone name: one of the pinned tzdata package's list, the
    same on every machine. The zoneinfo files of the machine that renders held more (`localtime`,
    `posixrules`, `right/UTC`), which are no IANA names and which the API server, reading Go's embedded tz
    database, may not know."""
    return len(name) <= IANA_ZONE_MAX and name in _iana_zones()


def led_cron(cron: str, lead_seconds: int) -> str:
    """A business-hours cron (`M H * * DAYS`) fired `lead_seconds` earlier (whole minutes, rounded
    up); before midnight it fires on the day before each day."""
    minute, hour, _, _, days = cron.split()
    start = int(hour) * 60 + int(minute) - math.ceil(lead_seconds / 60)
    shift = 1 if start < 0 else 0
    start %= 24 * 60
    weekdays = sorted({(int(day) - shift) % 7 for day in days.split(",")})
    return f"{start % 60} {start // 60} * * {','.join(str(day) for day in weekdays)}"
