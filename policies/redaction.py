"""Hugging Face tokens in text: finding them (for the no-token policy and every written file) and hiding
them (for messages and error lines). Imports nothing, so every layer may use it."""

from __future__ import annotations

import re
from collections.abc import Iterator

# No look-behind: a token glued to other text ("Xhf_...", "=hf_...") is still a token.
EMBEDDED_TOKEN = re.compile(r"hf_[A-Za-z0-9_]{8,}")
# What a message or an error line hides: anything shaped like a token, however short.
TOKEN_LIKE = re.compile(r"hf_[A-Za-z0-9_-]+")
REDACTED_TOKEN = "hf_***"
# names of Hugging Face packages and functions that also start with hf_
NOT_TOKENS = frozenset({"hf_transfer", "hf_xet"})


def _looks_like_token(text: str) -> bool:
    suffix = text[3:]
    return any(char.isupper() or char.isdigit() for char in suffix) or (len(suffix) >= 30 and "_" not in suffix)


def token_candidates(text: str) -> Iterator[str]:
    """A whole value that starts with hf_, or a real-looking token inside a longer text (a script,
    a URL); lower-case identifiers such as hf_hub_download are not tokens."""
    stripped = text.strip()
    if stripped.startswith("hf_") and len(stripped) > 3 and " " not in stripped and stripped not in NOT_TOKENS:
        yield stripped
        return
    yield from (match for match in EMBEDDED_TOKEN.findall(text) if _looks_like_token(match))


def redact_tokens(text: str) -> str:
    """The text with everything shaped like a Hugging Face token (hf_...) replaced by hf_***, for
    messages and error lines, which may quote an input but must never show a token."""
    return TOKEN_LIKE.sub(lambda match: match.group() if match.group() in NOT_TOKENS else REDACTED_TOKEN, text)


def hide_tokens(text: str) -> str:
    """The text with every token `token_candidates` finds replaced by hf_***, for what a command copies
    from a file it was given into its own output (a preview quotes an old render's values)."""
    for candidate in sorted(set(token_candidates(text)), key=len, reverse=True):
        text = text.replace(candidate, REDACTED_TOKEN)
    return text
