"""Quoting a bad value in a one-line message: a short, escaped prefix, never the whole value; and a
duration as a message or plan.md writes it.

A number or a boolean is shown as the stack file spells it (4096.5, true), never as a string: a
message that says "got '4096.5'" reads as if the value had been quoted in the file."""

from __future__ import annotations

import math

from policies.redaction import redact_secrets

QUOTE_LIMIT = 40
# The longest one-line message a command or the program prints (longer ones are cut).
MESSAGE_MAX = 400
# Integers up to this many digits are shown in full; longer ones by their order of magnitude.
DIGITS_SHOWN = 15


def _number(value: int | float) -> str:
    if isinstance(value, float):
        return repr(value)  # 4096.5, 1e+308, nan, inf
    if abs(value) < 10**DIGITS_SHOWN:
        return str(value)
    magnitude = math.floor(math.log10(abs(value)))
    return f"a number of about {'-' if value < 0 else ''}10^{magnitude}"


def escaped(text: str) -> str:
    """The text with every character that is not printable (a line break too) escaped as Python spells it."""
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in text)


def quote(value: object, limit: int = QUOTE_LIMIT) -> str:
    """At most `limit` characters of the value, control characters and non-ASCII escaped, tokens hidden;
    numbers, booleans and null as the stack file spells them, without quotes."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int | float):
        return _number(value)
    text = redact_secrets(value if isinstance(value, str) else repr(value))
    prefix = text[:limit].encode("ascii", "backslashreplace").decode("ascii")
    shown = escaped(prefix).replace("'", "\\'")
    return f"'{shown}{'...' if len(text) > limit else ''}'"


def without_value(error: Exception, value: str) -> str:
    """A library's error text with the value it quotes replaced by 'it': the message quotes the value
    once, cut and escaped (`quote`), never a second time in full."""
    return str(error).replace(repr(value), "it").replace(value, "it") if value else str(error)


def human_duration(seconds: float) -> str:
    """604800 -> '7 days', 5400 -> '1 h 30 min', 45 -> '45 s'."""
    remaining = round(seconds)
    parts = []
    for unit, size_seconds in (("day", 86_400), ("h", 3_600), ("min", 60), ("s", 1)):
        count, remaining = divmod(remaining, size_seconds)
        if count:
            plural = "s" if unit == "day" and count > 1 else ""
            parts.append(f"{count} {unit}{plural}")
    return " ".join(parts) or "0 s"
