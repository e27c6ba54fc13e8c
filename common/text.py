"""How a number, a duration and an unprintable character read in a one-line message and in plan.md:
the same in the program's messages (stacks/) and the commands' output (commands/)."""

from __future__ import annotations

import bisect
import math
import re

# The longest one-line message a command or the program prints (longer ones are cut).
MESSAGE_MAX = 400
# Integers up to this many digits are shown in full; longer ones by their order of magnitude.
DIGITS_SHOWN = 15


def shown_number(value: int | float) -> str:
    """A number as a stack file spells it (4096.5, 1e+308, nan); an integer of many digits by its magnitude."""
    if isinstance(value, float):
        return repr(value)
    if abs(value) < 10**DIGITS_SHOWN:
        return str(value)
    magnitude = math.floor(math.log10(abs(value)))
    return f"a number of about {'-' if value < 0 else ''}10^{magnitude}"


def kind_of_value(value: object) -> str:
    """What a decoded config value is, in words (never the value: it may be a secret)."""
    if isinstance(value, dict):
        return "an encrypted value" if "secure" in value else "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    return "true or false" if isinstance(value, bool) else "a number" if isinstance(value, int | float) else "null"


BACKTICK_RUN = re.compile(r"`+")


def code_span(text: str) -> str:
    """A markdown inline code span of the text, whatever backticks it holds (CommonMark: a longer run of backticks
    around it, and a space inside where it starts or ends with one), so that a value from a file closes no span
    early and adds no markup of its own."""
    longest = max((len(run) for run in BACKTICK_RUN.findall(text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


# What may open a link or image (`[`, when a `](`, `][` or `]:` follows anywhere: link texts may nest brackets), HTML
# or an autolink (`<` and a letter, `/`, `!` or `?`), or take a backslash escape (a backslash before ASCII
# punctuation, which would un-escape what follows), and what GitHub's extended autolinks start at (GFM spec,
# "Autolinks (extension)": a scheme's `://`, `www.` at a word's start or after `_`): escaped, and nothing else, so that
# prose such as `labels["x"]` or `addresses[0]` reads as it is.
MARKUP_SIGN = r"\[|<(?=[A-Za-z/!?])|\\(?=[!-/:-@\[-`{-~])|:(?=//)|(?<=(?<![A-Za-z0-9.-])www)\."
# An e-mail address as GFM links it (a local part, `@`, a domain with a `.`; also after `mailto:`): GFM links those
# after the text is parsed, escapes or not (cmark-gfm links `a\@b.com` and `a&#64;b.com`, an attacker's check), so
# it is shown as a code span instead. The local part starts where its characters do (each read once).
ADDRESS_LIKE = r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]++@[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)+"
INERT_SIGNS = re.compile(f"{ADDRESS_LIKE}|{MARKUP_SIGN}")


def inert(text: str) -> str:
    """Markdown prose with what would open a link, an image or HTML outside its code spans escaped (CommonMark: a
    run of backticks opens a span that the next run of the same length closes, else it is text), so that a value
    from a file in it adds no markup of its own; what the code spans hold, and the rest, stay as they are."""
    spans, at = [], 0
    while (opening := BACKTICK_RUN.search(text, at)) is not None:
        width = len(opening.group())
        closing = next((run for run in BACKTICK_RUN.finditer(text, opening.end()) if len(run.group()) == width), None)
        if closing is not None:
            spans.append((opening.end(), closing.start()))
        at = closing.end() if closing is not None else opening.end()
    link_end = max(text.rfind("]("), text.rfind("]["), text.rfind("]:"))

    starts = [
        start for start, _ in spans
    ]  # in order, and apart: the span a sign may be in is the last that starts before

    def escape(sign: re.Match[str]) -> str:
        index = bisect.bisect_right(starts, sign.start()) - 1
        inside = index >= 0 and sign.start() < spans[index][1]
        if inside:
            return sign.group()
        if "@" in sign.group():  # a space apart from a code span it touches, which would otherwise run into it
            before = " " if sign.start() > 0 and text[sign.start() - 1] == "`" else ""
            after = " " if text.startswith("`", sign.end()) else ""
            return before + code_span(sign.group()) + after
        plain = sign.group() == "[" and sign.start() > link_end
        return sign.group() if plain else "\\" + sign.group()

    return INERT_SIGNS.sub(escape, text)


def escaped(text: str) -> str:
    """The text with every character that is not printable (a line break too) escaped as Python spells it."""
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in text)


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


def without_value(error: Exception, value: str) -> str:
    """A library's error text with the value it quotes replaced by 'it': the message quotes the value
    once, cut and escaped (stacks/config/quoting.py `quote`), never a second time in full."""
    return str(error).replace(repr(value), "it").replace(value, "it") if value else str(error)


def config_key_for(name: str) -> str:
    """A config key name for an environment variable: OPENAI_API_KEY -> openaiApiKey (any run of characters other
    than ASCII letters and digits separates words: `DB PASSWORD` -> dbPassword, one word as the CLI takes it)."""
    parts = [part for part in re.split(r"[^a-z0-9]+", name.lower()) if part]
    return (parts[0] + "".join(part.capitalize() for part in parts[1:])) if parts else "engineSecret"
