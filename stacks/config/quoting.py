"""Quoting a bad value in a one-line message: a short, escaped prefix with any token hidden, never the whole value.

A number or a boolean is shown as the stack file spells it (4096.5, true), never as a string: a message that says "got
'4096.5'" reads as if the value had been quoted in the file."""

from __future__ import annotations

import ipaddress

from common.text import escaped, shown_number, without_value
from policies.redaction import redact_quoted

QUOTE_LIMIT = 40


def quote(value: object, limit: int = QUOTE_LIMIT) -> str:
    """At most `limit` characters of the value, control characters and non-ASCII escaped, tokens hidden;
    numbers, booleans and null as the stack file spells them, without quotes."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int | float):
        return shown_number(value)
    text = redact_quoted(value if isinstance(value, str) else repr(value))
    prefix = text[:limit].encode("ascii", "backslashreplace").decode("ascii")
    shown = escaped(prefix).replace("'", "\\'")
    return f"'{shown}{'...' if len(text) > limit else ''}'"


def ipv4_network(value: str, example: str = "") -> ipaddress.IPv4Network:
    """The IPv4 CIDR block `value`, or a one-line ValueError (naming `example` as one that is)."""
    try:
        return ipaddress.IPv4Network(value)
    except ValueError as error:
        like = f" like {example}" if example else ""
        raise ValueError(f"{quote(value)} is not an IPv4 CIDR block{like} ({without_value(error, value)})") from None
