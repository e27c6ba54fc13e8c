"""Quoting a bad value in a one-line message: a short, escaped prefix, never the whole value."""

from __future__ import annotations

from policies.redaction import redact_secrets

QUOTE_LIMIT = 40


def quote(value: object, limit: int = QUOTE_LIMIT) -> str:
    """At most `limit` characters of the value, control characters and non-ASCII escaped, tokens hidden."""
    text = redact_secrets(value if isinstance(value, str) else repr(value))
    prefix = text[:limit].encode("ascii", "backslashreplace").decode("ascii")
    shown = "".join(char if char.isprintable() else repr(char)[1:-1] for char in prefix).replace("'", "\\'")
    return f"'{shown}{'...' if len(text) > limit else ''}'"
