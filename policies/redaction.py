"""Secrets in text: finding them (for the no-secret policies, the stack config and every written file) and
hiding them (for messages, error lines and what a command copies). Imports nothing of the project, so every
layer and the policy pack alone may use it.

Hugging Face tokens have their own rules below (the stack's own secret). Every other kind is a pattern of
a well-kept scanner, Yelp/detect-secrets at v1.5.0 (`detect_secrets/plugins/<file>.py`, named per pattern)
or gitleaks (`config/gitleaks.toml`, named per rule), a provider's documented token format, or an HTTP
credential's RFC; the names of settings that hold secrets follow detect-secrets' keyword plugin
(`keyword.py`, DENYLIST) plus `token` and gitleaks' credential words. Neither scanner is a dependency: the
pack must run with only pulumi and pulumi-policy installed.
"""

from __future__ import annotations

import base64
import contextlib
import contextvars
import functools
import hashlib
import html
import json
import re
import threading
import unicodedata
import urllib.parse
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

# No look-behind: a token glued to other text ("Xhf_...", "=hf_...") is still a token.
EMBEDDED_TOKEN = re.compile(r"hf_[A-Za-z0-9_]{8,}")
# What a message or an error line hides: anything shaped like a token, however short (a token cut short in a
# quoted value), but a name of lower-case words (a folder `hf_cache` in a path the line names).
TOKEN_LIKE = re.compile(r"hf_[A-Za-z0-9_-]+")
REDACTED_TOKEN = "hf_***"
# names of Hugging Face packages and functions that also start with hf_, and the components' argument
# hf_token (stacks/serving_stack.py), which a message about the arguments must be able to name
NOT_TOKENS = frozenset({"hf_transfer", "hf_xet", "hf_token"})


def _looks_like_token(text: str) -> bool:
    suffix = text[3:]
    return any(char.isupper() or char.isdigit() for char in suffix) or (len(suffix) >= 30 and "_" not in suffix)


def token_candidates(text: str) -> Iterator[str]:
    """A whole value that starts with hf_, or a real-looking token inside a longer text (a script,
    a URL); lower-case identifiers such as hf_hub_download are not tokens."""
    if "hf_" not in text:
        return
    stripped = text.strip()
    if stripped.startswith("hf_") and len(stripped) > 3 and " " not in stripped and stripped not in NOT_TOKENS:
        yield stripped
        return
    yield from (match for match in EMBEDDED_TOKEN.findall(text) if _looks_like_token(match))


def redact_tokens(text: str) -> str:
    """The text with everything shaped like a Hugging Face token (hf_...) replaced by hf_***, for
    messages and error lines, which may quote an input but must never show a token."""
    return TOKEN_LIKE.sub(
        lambda match: (
            REDACTED_TOKEN if match.group() not in NOT_TOKENS and _token_like(match.group()) else match.group()
        ),
        text,
    )


def _token_like(text: str) -> bool:
    """Whether a message's hf_ word may be (part of) a token: a capital or a digit after hf_ (a token's 34
    characters are mixed-case letters and digits, so its first few hold one), or a run of 30 or more."""
    suffix = text[3:]
    return not suffix or any(char.isupper() or char.isdigit() for char in suffix) or len(suffix) >= 30


def hide_tokens(text: str) -> str:
    """The text with every token `token_candidates` finds replaced by hf_***, for what a command copies
    from a file it was given into its own output (a preview quotes an old render's values)."""
    if "hf_" not in text:
        return text
    for candidate in sorted(set(token_candidates(text)), key=len, reverse=True):
        text = text.replace(candidate, REDACTED_TOKEN)
    return text


# ---------------------------------------------------------------- other secrets (every kind but hf_ tokens)


@dataclass(frozen=True)
class SecretPattern:
    """One kind of secret: its pattern, and the literal texts one of which every match contains (the
    pattern's search runs only on a text that holds one: a substring test is far cheaper than a regex).

    `within_a_line`: no match holds a line break or looks past one (every character it takes is neither,
    and what it looks at around a match is a character class a line break is not in), so a long text is
    searched only in its lines that hold a needle: what it finds and hides is the same, and a pattern
    the engine tries at every character (a word's left edge, a URL's scheme) skips the rest of a render."""

    kind: str
    pattern: re.Pattern[str]
    needles: tuple[str, ...]
    within_a_line: bool = False
    # A match is a secret only where this says so (None: every match), as the hf_ rules take a token only
    # where it looks like one.
    confirm: Callable[[str], bool] | None = None

    def may_match(self, text: str) -> bool:
        return any(needle in text for needle in self.needles)

    def matches(self, text: str) -> Iterator[str]:
        """Every secret of this kind in the text, in order (the matches `confirm` takes)."""
        return (
            match.group()
            for match in self.pattern.finditer(text)
            if self.confirm is None or self.confirm(match.group())
        )

    def _found(self, text: str) -> bool:
        if self.confirm is None:
            return self.pattern.search(text) is not None
        return any(True for _ in self.matches(text))

    def _hidden(self, text: str) -> str:
        """The text with each match hidden; what a pattern's group `kept` holds stays (an option's name)."""
        if self.confirm is None and "kept" not in self.pattern.groupindex:
            return self.pattern.sub(REDACTED, text)
        confirm = self.confirm or (lambda _: True)
        kept = "kept" in self.pattern.groupindex
        return self.pattern.sub(
            lambda match: ((match["kept"] if kept else "") + REDACTED) if confirm(match.group()) else match.group(),
            text,
        )

    def _by_lines(self, text: str) -> bool:
        return self.within_a_line and len(text) > LINE_BY_LINE_FROM

    def _lines_with_a_needle(self, text: str) -> Iterator[tuple[int, int, int]]:
        """Each line of the text (as `str.splitlines` cuts it) that holds a needle, in order: where it
        starts, where its line break starts, and where the next line starts. Found from the needles,
        so that a long text's other lines cost nothing. Each needle's next place is kept and looked for
        again only once passed: a needle the text lacks is looked for once, not once per line (a text of
        many short lines with `curl` made that quadratic, 25 s for 400 KB)."""
        next_at = {needle: text.find(needle) for needle in self.needles}
        line_start = 0
        while True:
            for needle, at in next_at.items():
                if 0 <= at < line_start:
                    next_at[needle] = text.find(needle, line_start)
            first = min((at for at in next_at.values() if at >= 0), default=-1)
            if first < 0:
                return
            previous_break = max(text.rfind(char, line_start, first) for char in LINE_BREAKS)
            if previous_break >= 0:
                line_start = previous_break + 1
            found = LINE_BREAK.search(text, first)
            end = found.start() if found else len(text)
            next_line = end + 2 if text.startswith("\r\n", end) else min(end + 1, len(text))
            yield line_start, end, next_line
            line_start = next_line
            if line_start >= len(text):
                return

    def search(self, text: str) -> bool:
        if not self.may_match(text):
            return False
        if self._by_lines(text):
            return any(self._found(text[start:end]) for start, end, _ in self._lines_with_a_needle(text))
        return self._found(text)

    def hide(self, text: str) -> str:
        if not self.may_match(text):
            return text
        if self._by_lines(text):
            pieces, done = [], 0
            for start, _, next_line in self._lines_with_a_needle(text):
                pieces += [text[done:start], self._hidden(text[start:next_line])]
                done = next_line
            return "".join([*pieces, text[done:]])
        return self._hidden(text)


# Below this length a text is searched whole: finding its lines costs more than the search it saves.
LINE_BY_LINE_FROM = 4096
# Where `str.splitlines` cuts a line ("\r\n" is one break).
LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
LINE_BREAK = re.compile(f"[{LINE_BREAKS}]")


REDACTED = "***"
# A value that is not a placeholder: a reference the pod or a shell expands from a secretEnv variable (`$(X)`,
# `${X}`, `$X`), an already hidden ***, a `{{ template }}`, a word in brackets (`<password>`, `[secret]`,
# `{db_password}`: keyword.py's FALSE_POSITIVES), or an absolute path (`PWD=/workspace`, a file that holds
# the secret). Not any value that starts with one of those signs: `$3cr3t`, `(S3cret99)` and `*Ab12...` are
# passwords. A tokenizer's special tokens (`<|endoftext|>`, `</s>`, `<extra_id_0>`, `<0x00>`, DeepSeek's
# `<` and a full-width vertical line, U+FF5C, or a U+2581) are none either.
PLAIN_VALUE = (
    r"(?!\$[({A-Za-z_]|\*\*\*|\{\{|/|<[|/\uff5c\u2581]|<[A-Za-z0-9_ .-]*>|\[[A-Za-z_ .-]*\]|\([A-Za-z_ .-]*\)"
    r"|\{[A-Za-z_ .-]*\})"
)
# After a key's `:` (JSON, YAML) a `{` or `[` also starts a flow mapping or list (`secret: {secretName: x}`).
PLAIN_YAML_VALUE = r"(?![{[])" + PLAIN_VALUE
# The base64 of user-id:password (RFC 7617 section 2; a Docker config's auth): 8 characters or more in whole
# groups of 4, with a digit, + / = or a capital past the first (prose after "Basic", `Basic Settings`, is
# one word of letters), ending where the base64 alphabet does.
BASE64_CREDENTIALS = (
    r"(?=[A-Za-z0-9+/=]{8})(?=[A-Za-z0-9+/]*[0-9+/=]|[A-Za-z0-9+/]+[A-Z])(?:[A-Za-z0-9+/]{4})+"
    r"(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?(?![A-Za-z0-9+/=])"
)
# The words a key holding a secret ends in (keyword.py's DENYLIST, gitleaks' credential words): `:` after
# one of them and a quoted value is a secret (dbPassword, secret_key, hfToken, GOOGLE_CREDENTIALS).
KEY_WORDS = (
    *("password", "passwd", "passphrase", "pwd", "secret", "token", "credential", "credentials", "creds"),
    *(
        f"{kind}{separator}key"
        for kind in ("api", "access", "secret", "private", "client", "auth", "app", "service", "account")
        for separator in ("", "_", "-")
    ),
)

# After a key's `:`, a quoted value of one word (also in escaped JSON, `\\"...\\"`) that is no placeholder and
# not letters only.
QUOTED_WORD = r"[ \t]*\\*[\"']" + PLAIN_YAML_VALUE + r"(?=[^\s\"'\\]*[^A-Za-z_.\s\"'\\-])[^\s\"'\\]{4,}\\*[\"']"

# The same unquoted, after a space: 8 characters or more up to a space, quote, comma or semicolon ...
UNQUOTED_WORD = r"[ \t]+" + PLAIN_YAML_VALUE + r"(?=[^\s\"'\\,;]*[^A-Za-z_.\s\"'\\,;-])[^\s\"'\\,;]{8,}(?![^\s\"'\\,;])"
# ... and after a key that may hold a reference (a secret's, a token's), not a Kubernetes object's name (lower
# case, in parts joined by `-` or `.`: `secret: my-secret-01` names one); a password's key never holds a name.
UNQUOTED_NOT_A_NAME = r"(?=[ \t]+(?![a-z0-9]+(?:[-.][a-z0-9]+)+(?![^\s\"'\\,;])))" + UNQUOTED_WORD
PASSWORD_WORDS = ("password", "passwd", "passphrase", "pwd")
# The kind every assignment of a secret word to a value is found as.
ASSIGNMENT_KIND = "a password or key assignment"
PASSPHRASE_WORDS = ("password", "passwd", "passphrase")
# A quoted value with a space in it, and three words or more unquoted (each bounded: a hostile line is read
# once from each `:`).
QUOTED_PHRASE = r"[ \t]*\\*[\"']" + PLAIN_YAML_VALUE + r"(?=[^\"'\\\n]{0,200}[ \t])[^\"'\\\n]{3,200}\\*[\"']"
UNQUOTED_PHRASE = (
    r"[ \t]+" + PLAIN_YAML_VALUE + r"[^\s\"'\\]{2,100}(?:[ \t]+[^\s\"'\\]{2,100}){2,20}" + f"[^\"'\\\\{LINE_BREAKS}]*+"
)
# The words a long option that takes a secret ends in (`--api-key`, `--hf-token`, `--client-secret`); not
# `secret` alone, the Pulumi CLI's switch.
OPTION_WORDS = (
    *(word for word in KEY_WORDS if word not in ("secret", "credential", "credentials", "creds")),
    *("auth", "client-secret", "client_secret", "app-secret", "api-secret", "shared-secret"),
)
# A long option whose name ends in one of them (`--api-key`, `--hf-token`), and the blanks before its value.
SECRET_OPTION = r"(?<![A-Za-z0-9_-])--(?:[A-Za-z0-9]{1,30}[-_]){0,6}(?i:" + "|".join(OPTION_WORDS) + r")[ \t]+"
# One character of a value in bash's ANSI-C quotes (`$'...'`), where `\'` is one.
ANSI_C_CHARACTER = r"(?:[^'\\\r\n]|\\.)"


CURL_OPTION_REACH = 512
# What a client's command line may hold between the command and its password option, as curl's user option.
CLIENT_OPTION_REACH = f"[^|;&{LINE_BREAKS}]{{0,{CURL_OPTION_REACH}}}?"
# A closing quote that ends the value: a blank, a separator or the end follows it, not more of a shell line
# (`printf "password="; cat "$FILE"` quotes no value).
QUOTE_ENDS_A_WORD = r"(?=[\s;&,)|}\]]|$)"


def after_a_key_ending_in(words: tuple[str, ...]) -> str:
    """A look-behind (any case) at a `:` right after a key ending in one of the words, bare or with its
    closing quote (also escaped, `\\"`), with up to two spaces or tabs before the `:` (`"password" : ...`,
    as JSON writers that align keys put it). One look-behind per width, each an alternation of that width's ends:
    the pattern starts at the `:`, which the engine finds fast, and looks back only where a quoted value
    follows, instead of starting at a word it would try at every character of a render (5 s for a
    snapshot's 10 MB of renders, against 0.1 s)."""
    spaces = ("", " ", "\t", "  ", " \t", "\t ", "\t\t")
    ends = [word + closing + gap + ":" for word in words for closing in ("", '"', "'", '\\"') for gap in spaces]
    widths = sorted({len(end) for end in ends})
    by_width = ("(?<=" + _as_trie([end for end in ends if len(end) == width]) + ")" for width in widths)
    return "(?i:" + "|".join(by_width) + ")"


def _as_trie(texts: list[str]) -> str:
    """A pattern that matches exactly these texts, their common beginnings written once (`pass(?:word|wd)`):
    the engine tries the alternatives of a plain list one by one, at every `:` of a render that a quoted
    value follows; the tree settles most of them at the first character (5x faster on a render)."""
    tree: dict[str, Any] = {}
    for text in texts:
        node = tree
        for char in text:
            node = node.setdefault(char, {})
        node[""] = {}

    def pattern_of(node: dict[str, Any]) -> str:
        if not node:
            return ""
        branches = [re.escape(char) + pattern_of(child) for char, child in sorted(node.items())]
        return branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"

    return pattern_of(tree)


def _decoded(text: str) -> Iterator[str]:
    """What an encoded text may hold: its base64 and base64url decoding (its last partial group dropped),
    its hex decoding, its percent-decoding; as Latin-1 text, so that every byte is one character. A run that
    starts as hex and goes on as base64 (`68665fLS0t...`) is read both ways."""
    if text.startswith("hf%"):
        yield urllib.parse.unquote(text)
        return
    if text.lower().startswith("68665f"):
        with contextlib.suppress(ValueError):
            yield bytes.fromhex(text[: len(text) // 2 * 2]).decode("latin-1")
    whole = text[: len(text) // 4 * 4]
    for table in (None, b"-_"):
        with contextlib.suppress(ValueError):
            yield base64.b64decode(whole, altchars=table, validate=True).decode("latin-1")


# private_key.py, the whole block (also JSON-escaped: '\\n' between its lines) up to its END line
PRIVATE_KEY = re.compile(
    r"-----BEGIN[A-Z0-9 ]{0,30}PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END[A-Z0-9 ]{0,30}-----|\Z)"
    r"|PuTTY-User-Key-File-\d",
    re.DOTALL,
)


def encoded_needles(literal: str) -> tuple[str, ...]:
    """The base64 encoding of `literal` at each of the three places it may start in a 3-byte group, each cut to
    the characters that its bytes alone decide: from a 4-character group's first character, its third, its fourth
    (the same in base64url where none is + or /). For `hf_`: aGZf, hmX and oZl, the encoded Hugging Face rule's."""
    return aligned_encodings(literal.encode("latin-1"), 3, base64.b64encode)


def aligned_encodings(data: bytes, group: int, encode: Callable[[bytes], bytes]) -> tuple[str, ...]:
    """The encodings of `data` at each place it may start in one of the encoding's byte groups (base64: 3 bytes to
    4 characters; base32: 5 to 8), each cut to the characters that its bytes alone decide: what a text that holds
    `data` anywhere holds once encoded whole."""
    bits = 8 * group // len(encode(bytes(group)))
    return tuple(
        encode(bytes(lead) + data).decode("ascii")[(8 * lead + bits - 1) // bits : 8 * (lead + len(data)) // bits]
        for lead in range(group)
    )


# `-----BEGIN` base64-encoded (LS0tLS1CRUdJT, 0tLS0tQkVHSU, tLS0tLUJFR0lO)
ENCODED_BEGIN = encoded_needles("-----BEGIN")
LINE_BREAKS_IN_A_RUN = re.compile(r"\\r|\\n|[\r\n]")
# What every encoded `-----BEGIN` holds wherever a line break cuts it: the encoding of its dashes.
ENCODED_DASHES = ("LS0t", "0tLS", "tLS0")


def _encoded_private_key(run: str) -> bool:
    """Whether a run of base64 characters (its line breaks dropped) decodes to a text with a private key,
    read from each of its first four characters (the encoding may start after a word glued to it)."""
    joined = LINE_BREAKS_IN_A_RUN.sub("", run)
    if not any(needle in joined for needle in ENCODED_BEGIN):
        return False
    return any(PRIVATE_KEY.search(decoded) for start in range(4) for decoded in _decoded(joined[start:]))


def _real_token(text: str) -> bool:
    """A token in the text as the hf_ rules find one inside a longer text (not an identifier: hf_transfer)."""
    return any(_looks_like_token(match) for match in EMBEDDED_TOKEN.findall(text))


SECRET_PATTERNS: tuple[SecretPattern, ...] = (
    # aws.py
    SecretPattern(
        "an AWS access key id",
        re.compile(r"(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}"),
        ("A3T", "ABIA", "ACCA", "AKIA", "ASIA"),
    ),
    # private_key.py, the whole block (also JSON-escaped: '\\n' between its lines) up to its END line
    SecretPattern("a private key", PRIVATE_KEY, ("-----BEGIN", "PuTTY-User-Key-File-")),
    # the same block base64-encoded, alone or inside what is encoded (a TLS bundle, a service account key
    # file in any key order: its private_key): a run of base64 or base64url characters, wrapped or not
    # (`base64` breaks lines at 76; also JSON-escaped breaks), holding the encoding of `-----BEGIN` at one
    # of the three places it may fall in its 3-byte groups, that decodes to a private key
    SecretPattern(
        "an encoded private key",
        re.compile(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{12,}(?:(?:\r?\n|(?:\\r)?\\n)[A-Za-z0-9+/_-]+)*={0,2}"),
        ENCODED_DASHES,
        confirm=_encoded_private_key,
    ),
    # a private key's DER body in base64 without its PEM lines (a key pasted from between BEGIN and END): the
    # encoding of the ASN.1 header RSA (PKCS#8 and PKCS#1, 2048-4096 bits), EC (PKCS#8; SEC1 P-256 and P-384)
    # and Ed25519 keys start with, as OpenSSL writes them (checked against keys the cryptography package made);
    # a public key's header (...AAOC...) is another
    SecretPattern(
        "a private key",
        re.compile(
            r"(?:MII[A-Za-z0-9+/]{3}IBADANBgkqhkiG9w0BAQEFAASC|MII[A-Za-z0-9+/]{3}IBAAKCA[QYg]EA"
            r"|MIG[A-Za-z0-9+/]AgEAMB[AM]GByqGSM49AgEG|MHcCAQEEI|MIGkAgEBBDC|MC4CAQAwBQYDK2VwBCIEI)[A-Za-z0-9+/]{20,}"
        ),
        ("IBADANBgkqhkiG9w0BAQEFAASC", "IBAAKCA", "GByqGSM49AgEG", "MHcCAQEEI", "MIGkAgEBBDC", "MC4CAQAwBQYDK2Vw"),
    ),
    # an AWS STS session token (the temporary credentials' third part): the base64 of its header, which names
    # `aws` or `origin_ec`, then the token
    SecretPattern(
        "an AWS session token",
        re.compile(r"(?:AQoDYXdzE|FQoGZXIvYXdzE|FwoGZXIvYXdzE|IQoJb3JpZ2luX2Vj)[A-Za-z0-9+/]{40,}={0,2}"),
        ("AQoDYXdzE", "FQoGZXIvYXdzE", "FwoGZXIvYXdzE", "IQoJb3JpZ2luX2Vj"),
    ),
    # a Google Cloud service account key file (JSON, "Create and delete service account keys"): its
    # private_key_id, also inside escaped JSON; its private_key is the block above
    SecretPattern(
        "a GCP service account key", re.compile(r'private_key_id\\*"\s*:\s*\\*"[0-9a-f]{40}'), ("private_key_id",)
    ),
    # the same file base64-encoded (as a Kubernetes Secret's data or GOOGLE_CREDENTIALS-style variables
    # carry it): the encoding of its first bytes, `{"type": "service_account"` as gcloud writes it
    # (two-space indent, LF or CRLF) or compact
    SecretPattern(
        "a GCP service account key",
        re.compile(
            r"eyJ0eXBlIjogInNlcnZpY2VfYWNjb3Vu|ewogICJ0eXBlIjogInNlcnZpY2VfYWNjb3Vu|eyJ0eXBlIjoic2VydmljZV9hY2NvdW50"
            r"|ew0KICAidHlwZSI6ICJzZXJ2aWNlX2FjY291bnQi"
        ),
        ("eyJ0eXBlIjo", "ewogICJ0eXBlIjog", "ew0KICAidHlwZSI6"),
    ),
    # Google API keys: AIza + 35 characters (gitleaks, config/gitleaks.toml, gcp-api-key)
    SecretPattern("a Google API key", re.compile(r"AIza[0-9A-Za-z_-]{35}"), ("AIza",)),
    # openai.py; project, service account and admin keys carry a prefix. What may come before the 20
    # characters and T3BlbkFJ is bounded (a key is under 200 characters): unbounded, the engine walked back
    # through the rest of a run of key characters from every `sk-` in it (200 KB of `sk-sk-...`: 168 s). A prefixed
    # key starts a word, as gitleaks' openai-api-key (`\b(sk-(?:proj|svcacct|admin)-...`) reads it: a name such as
    # `task-proj-management-board-2024` (an attacker) is none.
    SecretPattern(
        "an OpenAI API key",
        re.compile(
            r"sk-[A-Za-z0-9_-]{0,200}[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9_-]{20,}"
            r"|(?<![A-Za-z0-9])sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}"
        ),
        ("sk-",),
    ),
    # Anthropic API keys: sk-ant-api03-... (gitleaks, anthropic-api-key)
    SecretPattern("an Anthropic API key", re.compile(r"sk-ant-(?:api|admin)[0-9]{2}-[A-Za-z0-9_-]{20,}"), ("sk-ant-",)),
    # Weights & Biases API keys: wandb/wandb sdk/lib/auth/validation.py (check_api_key, at b6e29505) takes
    # an optional prefix and a dash, then 40+ word characters. Recognisable by value: the keys W&B issues
    # since SDK 0.22.3 (wandb_v1_ and 77 more, 86 in all), and a server's local-<40 hex> (not the end of a
    # longer word; checked after `local-`, since a pattern that starts with a look-behind is tried at every
    # character of the text, one that starts with a word only where the word is). A legacy cloud key is 40
    # bare hex digits, the shape of a git commit id: found by its variable's name only.
    SecretPattern(
        "a W&B API key",
        re.compile(r"wandb_v1_[A-Za-z0-9_]{40,}|local-(?<![A-Za-z0-9]local-)[0-9a-f]{40}(?![0-9a-f])"),
        ("wandb_v1_", "local-"),
    ),
    # github_token.py; fine-grained tokens github_pat_ (GitHub blog, "Introducing fine-grained personal
    # access tokens", 2022-10-18)
    SecretPattern(
        "a GitHub token",
        re.compile(r"(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9_]{36}|github_pat_[A-Za-z0-9_]{22,}"),
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    # slack.py (tokens and incoming webhooks); xoxe/xapp tokens of Slack's token types page
    SecretPattern(
        "a Slack token",
        re.compile(
            r"xox(?:a|b|p|o|s|r|e)-(?:[0-9]+-)+[A-Za-z0-9]+|xapp-[0-9]-[A-Za-z0-9-]{10,}"
            r"|https://hooks\.slack\.com/services/T[A-Za-z0-9_]+/B[A-Za-z0-9_]+/[A-Za-z0-9_]+"
        ),
        ("xox", "xapp-", "https://hooks.slack.com/services/T"),
    ),
    # a Hugging Face token encoded (the hf_ rules above read it only in the clear): base64 or base64url from
    # the start of the 4-character group that holds `hf_` at each of the three places it may fall in its
    # 3 bytes (aGZf; one character then [GWm2]hmX; three then oZl and 8, 9, + or /), hex with every byte
    # after `68665f` a token character, or percent-encoded (`hf%5F`); a token only where the decoded text
    # holds one the hf_ rules take (`hf_hub_download` in a base64 JSON config is none)
    SecretPattern(
        "an encoded Hugging Face token",
        re.compile(
            r"aGZf[A-Za-z0-9+/_-]{12,}|[A-Za-z0-9+/_-][GWm2]hmX[A-Za-z0-9+/_-]{12,}"
            r"|[A-Za-z0-9+/_-]{3}oZl[89+/_-][A-Za-z0-9+/_-]{12,}"
            r"|(?i:68665f(?:3[0-9]|4[1-9a-f]|5[0-9af]|6[1-9a-f]|7[0-9a]){8,})|hf%5[Ff][A-Za-z0-9_%]{8,}"
        ),
        ("aGZf", "hmX", "oZl", "68665", "hf%5"),
        confirm=lambda text: any(_real_token(decoded) for decoded in _decoded(text)),
    ),
    # stripe.py (standard sk_live_ and restricted rk_live_ keys), sendgrid.py, twilio.py (an account SID
    # and an API key SID), square_oauth.py and npm.py (its npm_ tokens), as read in the detect-secrets fork
    # checkov bundles (bc-detect-secrets 1.5.52); mailchimp.py's keys as Mailchimp issues them (32 hex
    # digits, the data center) and on their own; an Artifactory API key as gitleaks' artifactory-api-key
    # takes it (AKCp and 69 characters; artifactory.py's AKC and 10 is also a model's name)
    # gitleaks' stripe-access-token: secret and restricted keys, live, test and prod
    SecretPattern(
        "a Stripe key",
        re.compile(r"(?:sk|rk)_(?:test|live|prod)_[a-zA-Z0-9]{10,99}"),
        ("k_live_", "k_test_", "k_prod_"),
    ),
    SecretPattern("a SendGrid API key", re.compile(r"SG\.[a-zA-Z0-9_-]{22}\.[a-zA-Z0-9_-]{43}"), ("SG.",)),
    SecretPattern("a Twilio key", re.compile(r"(?:AC|SK)[a-z0-9]{32}"), ("AC", "SK")),
    SecretPattern("a Square OAuth secret", re.compile(r"sq0csp-[0-9A-Za-z\\\-_]{43}"), ("sq0csp-",)),
    SecretPattern(
        "a Mailchimp API key",
        re.compile(r"(?<![0-9a-z])[0-9a-f]{32}-us[0-9]{1,2}(?![0-9a-z])"),
        ("-us",),
        within_a_line=True,
    ),
    SecretPattern("an npm token", re.compile(r"npm_[A-Za-z0-9-]{36}"), ("npm_",)),
    SecretPattern(
        "an Artifactory API key", re.compile(r"(?<![A-Za-z0-9_])AKCp[A-Za-z0-9]{69}(?![A-Za-z0-9_])"), ("AKCp",)
    ),
    # a credential in a URL's query string: a token or key parameter (`?token=...`, `&api_key=...`,
    # `?access_token=...`, as OAuth 2.0 bearer tokens may travel, RFC 6750 section 2.3) and the signature of
    # a signed URL (Cloud Storage V4 `X-Goog-Signature`, S3 `X-Amz-Signature`, Azure SAS `sig`), which
    # grants access to whoever holds the URL; a value with a digit (`?auth=optional` is none). The value
    # ends at a `?` too: the digit look-ahead then stops at the next parameter a line repeats, where it
    # scanned to the line's end from every one (`?token=` 16,000 times took minutes).
    SecretPattern(
        "a credential in a URL's query",
        re.compile(
            r"(?i)[?&](?:token|key|api_?key|access_?token|auth|x-goog-signature|x-amz-signature|x-amz-security-token"
            r"|sig|signature)=(?![$*{[(<])(?=[^\s&#\"'<>?]*[0-9])[^\s&#\"'<>?]{8,}"
        ),
        ("?", "&"),
        within_a_line=True,
    ),
    # Google OAuth 2.0 access tokens (what `gcloud auth print-access-token` prints: ya29. and the token)
    SecretPattern("a Google OAuth access token", re.compile(r"ya29\.[0-9A-Za-z_-]{20,}"), ("ya29.",)),
    # azure_storage_key.py: an Azure Storage account key (88 base64 characters) in a connection string
    SecretPattern(
        "an Azure Storage account key",
        re.compile(r"(?i)AccountKey=[A-Za-z0-9+/]{86,88}={0,2}"),
        ("AccountKey=", "accountkey=", "ACCOUNTKEY="),
    ),
    # NVIDIA API keys (build.nvidia.com, NGC): nvapi- and the key
    SecretPattern("an NVIDIA API key", re.compile(r"nvapi-[A-Za-z0-9_-]{20,}"), ("nvapi-",)),
    # GitLab personal, deploy, feed, runner and OAuth tokens by their documented prefixes (GitLab docs,
    # "Token prefixes"; gitleaks' gitlab-pat rule: glpat- and 20 characters)
    SecretPattern(
        "a GitLab token",
        re.compile(r"(?:glpat|gldt|glft|glrt|glsoat|gloas)-[A-Za-z0-9_-]{20,}"),
        ("glpat-", "gldt-", "glft-", "glrt-", "glsoat-", "gloas-"),
    ),
    # pypi_token.py: PyPI API tokens (macaroons; the base64 of their header names pypi.org or test.pypi.org)
    SecretPattern(
        "a PyPI token",
        re.compile(r"pypi-Ag(?:EIcHlwaS5vcmc|ENdGVzdC5weXBpLm9yZw)[A-Za-z0-9_-]{70,}"),
        ("pypi-Ag",),
    ),
    # telegram_token.py: a Telegram bot token (the bot's id, a colon and the secret), its secret starting
    # with A as gitleaks' telegram-bot-api-token takes it: 35 characters, or 34 as in the Bot API docs'
    # example (110201543:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw); not glued to a longer number or word
    SecretPattern(
        "a Telegram bot token",
        re.compile(r"(?<![0-9])[0-9]{8,10}:A[0-9A-Za-z_-]{33,34}(?![0-9A-Za-z_-])"),
        (":A",),
        within_a_line=True,
    ),
    # a Discord webhook URL: whoever holds it posts as the webhook (Discord developer docs, "Webhook
    # Resource", Execute Webhook: /webhooks/{webhook.id}/{webhook.token})
    SecretPattern(
        "a Discord webhook",
        re.compile(
            r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/(?:v[0-9]+/)?webhooks/[0-9]+/[A-Za-z0-9_-]{20,}"
        ),
        ("discord.com/api/", "discordapp.com/api/"),
    ),
    # LLM tracing services' keys by their prefixes: Langfuse's secret keys (sk-lf- and a UUID) and LangSmith's
    # personal and service keys (lsv2_pt_, lsv2_sk_)
    SecretPattern("a Langfuse secret key", re.compile(r"sk-lf-[0-9a-f]{8}-[0-9a-f-]{27}"), ("sk-lf-",)),
    SecretPattern("a LangSmith API key", re.compile(r"lsv2_(?:pt|sk)_[A-Za-z0-9]{20,}(?:_[A-Za-z0-9]+)?"), ("lsv2_",)),
    # a Google OAuth client secret as Google issues them (GOCSPX- and 28 characters; gitleaks'
    # gcp-client-secret) and DigitalOcean's personal, OAuth and refresh tokens (dop_v1_, doo_v1_, dor_v1_
    # and 64 hex digits; gitleaks' digitalocean-pat, -access-token, -refresh-token)
    SecretPattern("a Google OAuth client secret", re.compile(r"GOCSPX-[A-Za-z0-9_-]{28}"), ("GOCSPX-",)),
    SecretPattern("a DigitalOcean token", re.compile(r"do[por]_v1_[a-f0-9]{64}"), ("dop_v1_", "doo_v1_", "dor_v1_")),
    # Tokens of services a platform team holds, each with its gitleaks rule (config/gitleaks.toml at
    # gitleaks/gitleaks@b58d3f10): a prefix no word starts with, so a match is the token.
    *(
        SecretPattern(kind, re.compile(pattern), needles)
        for kind, pattern, needles in (
            # pulumi-api-token: Pulumi Cloud access tokens
            ("a Pulumi access token", r"(?<![A-Za-z0-9])pul-[a-f0-9]{40}", ("pul-",)),
            # vault-service-token, vault-batch-token (the legacy `s.` form is too short to tell)
            ("a Vault token", r"(?<![A-Za-z0-9])(?:hvs\.[\w-]{90,120}|hvb\.[\w-]{138,300})", ("hvs.", "hvb.")),
            # databricks-api-token
            ("a Databricks token", r"(?<![A-Za-z0-9])dapi[a-f0-9]{32}(?:-\d)?", ("dapi",)),
            # azure-ad-client-secret: three characters, a digit, Q~ and 31-34 more
            (
                "an Azure AD client secret",
                r"(?<![a-zA-Z0-9_~.])[a-zA-Z0-9_~.]{3}\dQ~[a-zA-Z0-9_~.-]{31,34}(?![a-zA-Z0-9_~.-])",
                ("Q~",),
            ),
            # age-secret-key
            ("an age secret key", r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}", ("AGE-SECRET-KEY-1",)),
            # grafana-api-key, grafana-cloud-api-token, grafana-service-account-token
            (
                "a Grafana token",
                r"(?i:eyJrIjoi)[A-Za-z0-9]{70,400}={0,3}|(?<![A-Za-z0-9])(?:glc_[A-Za-z0-9+/]{32,400}={0,3}"
                r"|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8})",
                ("eyJrIjoi", "glc_", "glsa_"),
            ),
            # huggingface-organization-api-token
            ("a Hugging Face organization token", r"api_org_[A-Za-z]{34}", ("api_org_",)),
            # hashicorp-tf-api-token: HCP Terraform / Terraform Enterprise
            ("a Terraform Cloud token", r"(?i:[a-z0-9]{14})\.atlasv1\.[a-zA-Z0-9_=-]{60,70}", (".atlasv1.",)),
            # doppler-api-token, 1password-service-account-token, prefect-api-token, linear-api-key
            ("a Doppler token", r"dp\.pt\.[a-zA-Z0-9]{43}", ("dp.pt.",)),
            ("a 1Password service account token", r"ops_eyJ[a-zA-Z0-9+/]{250,}={0,3}", ("ops_eyJ",)),
            ("a Prefect API key", r"(?<![A-Za-z0-9])pnu_[a-zA-Z0-9]{36}", ("pnu_",)),
            ("a Linear API key", r"lin_api_[a-zA-Z0-9]{40}", ("lin_api_",)),
            # perplexity-api-key, notion-api-token, sentry-user-token, shopify-access-token, rubygems-api-token,
            # postman-api-token, planetscale-api-token and -password, sendinblue-api-token, openshift-user-token
            ("a Perplexity API key", r"pplx-[a-zA-Z0-9]{48}", ("pplx-",)),
            ("a Notion token", r"(?<![A-Za-z0-9])ntn_[0-9]{11}[A-Za-z0-9]{35}", ("ntn_",)),
            ("a Sentry token", r"sntryu_[a-f0-9]{64}", ("sntryu_",)),
            ("a Shopify token", r"shpat_[a-fA-F0-9]{32}", ("shpat_",)),
            ("a RubyGems API key", r"rubygems_[a-f0-9]{48}", ("rubygems_",)),
            ("a Postman API key", r"PMAK-[a-fA-F0-9]{24}-[a-fA-F0-9]{34}", ("PMAK-",)),
            ("a PlanetScale credential", r"pscale_(?:tkn|pw)_[\w=.-]{32,64}", ("pscale_tkn_", "pscale_pw_")),
            ("a Brevo (Sendinblue) API key", r"xkeysib-[a-f0-9]{64}-[a-zA-Z0-9]{16}", ("xkeysib-",)),
            ("an OpenShift token", r"sha256~[\w-]{43}", ("sha256~",)),
            # dynatrace-api-token, new-relic-user-api-key, -insert-key and -browser-api-token, gitlab-ptt, -rrt and
            # -cicd-job-token, sentry-org-token, heroku-api-key-v2, shopify-shared-secret, -custom-access-token and
            # -private-app-access-token, sourcegraph-access-token, atlassian-api-token, mailgun-private-api-token,
            # flyio-access-token (an attacker: each was written to the manifests)
            ("a Dynatrace token", r"dt0c01\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}", ("dt0c01.",)),
            (
                "a New Relic key",
                r"(?<![A-Za-z0-9])(?:NRAK-[A-Za-z0-9]{27}|NRII-[A-Za-z0-9-]{32}|NRJS-[a-f0-9]{19})",
                ("NRAK-", "NRII-", "NRJS-"),
            ),
            (
                "a GitLab token",
                r"glptt-[0-9a-f]{40}|GR1348941[\w-]{20}|glcbt-[0-9a-zA-Z]{1,5}_[0-9a-zA-Z_-]{20}",
                ("glptt-", "GR1348941", "glcbt-"),
            ),
            ("a Sentry token", r"sntrys_eyJ[A-Za-z0-9+/=_]{40,}", ("sntrys_",)),
            ("a Heroku API key", r"HRKU-AA[0-9a-zA-Z_-]{58}", ("HRKU-",)),
            ("a Shopify token", r"shp(?:ss|ca|pa)_[a-fA-F0-9]{32}", ("shpss_", "shpca_", "shppa_")),
            ("a Sourcegraph token", r"sgp_(?:[a-fA-F0-9]{16}_|local_)?[a-fA-F0-9]{40}", ("sgp_",)),
            ("an Atlassian API token", r"ATATT3[A-Za-z0-9_=-]{186}", ("ATATT3",)),
            # with the word mailgun before it, as gitleaks' rule has it (`key-` and 32 hex digits alone is a cache key)
            (
                "a Mailgun API key",
                r"(?i:mailgun)[ \t\w.-]{0,20}[\s'\"]{0,3}[:=][\s'\"=]{0,5}key-[a-f0-9]{32}(?![A-Za-z0-9])",
                ("ailgun", "AILGUN", "ailGun", "AILgun"),
            ),
            (
                "a Fly.io token",
                r"fo1_[\w-]{43}|fm1[ar]_[A-Za-z0-9+/]{100,}={0,3}|fm2_[A-Za-z0-9+/]{100,}={0,3}",
                ("fo1_", "fm1a_", "fm1r_", "fm2_"),
            ),
            # tokens of registries and model APIs, by the prefix their providers document
            ("a Docker Hub access token", r"dckr_(?:pat|oat)_[A-Za-z0-9_-]{20,}", ("dckr_pat_", "dckr_oat_")),
            ("an OpenRouter API key", r"sk-or-v1-[0-9a-f]{64}", ("sk-or-v1-",)),
            ("a Groq API key", r"(?<![A-Za-z0-9])gsk_[A-Za-z0-9]{40,}", ("gsk_",)),
            ("an xAI API key", r"(?<![A-Za-z0-9])xai-[A-Za-z0-9]{60,}", ("xai-",)),
            ("a Replicate API token", r"(?<![A-Za-z0-9_])r8_[A-Za-z0-9]{37}", ("r8_",)),
            ("a Pinecone API key", r"pcsk_[A-Za-z0-9]{4,10}_[A-Za-z0-9]{40,}", ("pcsk_",)),
            ("a Tailscale key", r"tskey-[a-z]+-[A-Za-z0-9]{6,}-[A-Za-z0-9]{16,}", ("tskey-",)),
            # more gitleaks rules with a prefix of their own (an attacker: each was written to the manifests):
            # aws-amazon-bedrock-api-key-long-lived and -short-lived, alibaba-access-key-id, gitlab-kubernetes-agent-
            # token, -feature-flag-client-token, -incoming-mail-token, -session-cookie, artifactory-reference-token,
            # cloudflare-origin-ca-key, harness-api-key, square-access-token, 1password-secret-key,
            # adobe-client-secret, airtable-personnal-access-token, clickhouse-cloud-api-secret-key, clojars-api-token,
            # duffel-api-token, easypost-api-token and -test-api-token, flutterwave-secret-key and -encryption-key,
            # frameio-api-token, infracost-api-token, intra42-client-secret, maxmind-license-key, octopus-deploy-
            # api-key, planetscale-oauth-token, readme-api-token, scalingo-api-token, settlemint-*-access-token,
            # shippo-api-token, authress-service-client-access-key; none taken inside a run of base64 (gitleaks' \b
            # takes `+` and `/` for a boundary, so a blob's `/EAAA...` was a Square token)
            (
                "an Amazon Bedrock API key",
                r"(?<![A-Za-z0-9+/])ABSK[A-Za-z0-9+/]{109,269}={0,2}|bedrock-api-key-YmVkcm9jay5hbWF6b25hd3MuY29t",
                ("ABSK", "bedrock-api-key-"),
            ),
            ("an Alibaba Cloud AccessKey ID", r"(?<![A-Za-z0-9+/])LTAI[A-Za-z0-9]{20}(?![A-Za-z0-9])", ("LTAI",)),
            (
                "a GitLab token",
                r"glagent-[0-9a-zA-Z_-]{50}|glffct-[0-9a-zA-Z_-]{20}|glimt-[0-9a-zA-Z_-]{25}"
                r"|_gitlab_session=[0-9a-z]{32}",
                ("glagent-", "glffct-", "glimt-", "_gitlab_session="),
            ),
            ("an Artifactory reference token", r"(?<![A-Za-z0-9+/])cmVmd[A-Za-z0-9]{59}(?![A-Za-z0-9])", ("cmVmd",)),
            (
                "a Cloudflare origin CA key",
                r"(?<![A-Za-z0-9+/])v1\.0-[a-f0-9]{24}-[a-f0-9]{146}(?![A-Za-z0-9])",
                ("v1.0-",),
            ),
            (
                "a Harness API key",
                r"(?<![A-Za-z0-9+/])(?:pat|sat)\.[a-zA-Z0-9_-]{22}\.[a-zA-Z0-9]{24}\.[a-zA-Z0-9]{20}",
                ("pat.", "sat."),
            ),
            (
                "a Square access token",
                r"(?<![A-Za-z0-9+/])(?:EAAA|sq0atp-)[\w-]{22,60}(?![\w+/=-])",
                ("EAAA", "sq0atp-"),
            ),
            (
                "a 1Password secret key",
                r"(?<![A-Za-z0-9+/])A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}"
                r"-[A-Z0-9]{5}(?![A-Za-z0-9])",
                ("A3-",),
            ),
            ("an Adobe client secret", r"(?<![A-Za-z0-9+/])p8e-[A-Za-z0-9]{32}(?![A-Za-z0-9])", ("p8e-",)),
            ("an Airtable token", r"(?<![A-Za-z0-9+/])pat[A-Za-z0-9]{14}\.[a-f0-9]{64}(?![A-Za-z0-9])", ("pat",)),
            ("a ClickHouse Cloud secret", r"(?<![A-Za-z0-9+/])4b1d[A-Za-z0-9]{38}(?![A-Za-z0-9])", ("4b1d",)),
            ("a Clojars token", r"(?i:CLOJARS_[a-z0-9]{60})", ("CLOJARS_", "clojars_")),
            ("a Duffel token", r"duffel_(?:test|live)_[A-Za-z0-9_=-]{43}", ("duffel_",)),
            ("an EasyPost key", r"(?<![A-Za-z0-9+/])EZ[AT]K[A-Za-z0-9]{54}(?![A-Za-z0-9])", ("EZAK", "EZTK")),
            (
                "a Flutterwave key",
                r"FLWSECK_TEST-(?:[a-hA-H0-9]{32}-X|[a-hA-H0-9]{12})",
                ("FLWSECK_TEST-",),
            ),
            ("a Frame.io token", r"fio-u-[A-Za-z0-9_=-]{64}", ("fio-u-",)),
            ("an Infracost token", r"(?<![A-Za-z0-9+/])ico-[a-zA-Z0-9]{32}(?![A-Za-z0-9])", ("ico-",)),
            ("a 42 Intra secret", r"(?<![A-Za-z0-9+/])s-s4t2(?:ud|af)-[a-fA-F0-9]{64}", ("s-s4t2ud-", "s-s4t2af-")),
            (
                "a MaxMind license key",
                r"(?<![A-Za-z0-9+/])[A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk(?![A-Za-z0-9])",
                ("_mmk",),
            ),
            ("an Octopus Deploy key", r"(?<![A-Za-z0-9+/])API-[A-Z0-9]{26}(?![A-Za-z0-9])", ("API-",)),
            ("a PlanetScale credential", r"pscale_oauth_[\w=.-]{32,64}", ("pscale_oauth_",)),
            ("a ReadMe token", r"(?<![A-Za-z0-9+/])rdme_[a-z0-9]{70}(?![A-Za-z0-9])", ("rdme_",)),
            ("a Scalingo token", r"(?<![A-Za-z0-9+/])tk-us-[\w-]{48}(?![\w-])", ("tk-us-",)),
            (
                "a SettleMint token",
                r"(?<![A-Za-z0-9+/])sm_[aps]at_[a-zA-Z0-9]{16}(?![A-Za-z0-9])",
                ("sm_aat_", "sm_pat_", "sm_sat_"),
            ),
            ("a Shippo token", r"shippo_(?:live|test)_[a-fA-F0-9]{40}", ("shippo_",)),
            (
                "an Authress key",
                r"(?<![A-Za-z0-9+/])(?:sc|ext|scauth|authress)_[A-Za-z0-9]{5,30}\.[a-z0-9]{4,6}\.acc[_-][a-z0-9-]{10,32}"
                r"\.[a-z0-9+/_=-]{30,120}",
                ("acc_", "acc-"),
            ),
        )
    ),
    # jwt.py: three base64url parts, the first two JSON objects ({" is eyJ). A token starts where a run of
    # base64url characters does (after `Bearer `, `=`, a quote; not glued to the end of a word): tried at
    # every `eyJ` inside a run, the engine read the rest of the run from each (200 KB of `eyJeyJ...`: 28 s).
    SecretPattern(
        "a JSON web token",
        re.compile(r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}+\.eyJ[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]{8,}"),
        ("eyJ",),
    ),
    # an HTTP bearer credential (RFC 6750 section 2.1, `Bearer b64token`): an `Authorization` header
    # passed to the engine (`--middleware`, a header variable) carries the key itself; the word on its
    # own (no word character before it, checked after the word as above). A scheme's name is case-insensitive
    # (RFC 7235 section 2.1): `BEARER` too (the needles find it in its usual cases, `Bearer`, `bearer`, `BEARER`)
    SecretPattern(
        "a bearer token",
        re.compile(r"(?i:bearer)(?<!\w(?i:bearer))\s+[A-Za-z0-9._~+/-]{20,}=*"),
        ("earer", "EARER"),
    ),
    # an HTTP basic credential (RFC 7617 section 2, `Basic` and the base64 of user-id:password): the word on
    # its own, in any case, as for Bearer
    SecretPattern(
        "an HTTP basic credential",
        re.compile(r"(?i:basic)(?<!\w(?i:basic))\s+" + BASE64_CREDENTIALS),
        ("asic", "ASIC"),
    ),
    # a Docker config's registry credential (config.json, `{"auths": {REGISTRY: {"auth": BASE64}}}`, the
    # base64 of user:password as for Basic; also a `.dockerconfigjson` in escaped JSON): a key that ends in auth
    SecretPattern(
        "a registry credential (a Docker config auth)",
        re.compile(r'auth\\*"\s*:\s*\\*"' + BASE64_CREDENTIALS),
        ('auth"', 'auth\\"'),
    ),
    # basic_auth.py: a password in a URL (scheme://user:password@host), also with no user name
    # (redis://:password@host, as Redis clients take a password alone). Before the `@` a colon only ever
    # parts user and password (RFC 3986 section 3.2.1: the port follows the host), so digits alone are a
    # password too; braces and a single quote may be in one. Not a reference the pod or ESC expands in
    # its place (`$(DB_PASSWORD)`, `${db.password}`, `{{ .password }}`); a double quote ends the URL (JSON).
    # The password runs to the last `@` before the path, as the URL Standard's parser reads the authority (an
    # `@` seen again is percent-encoded into the user info) and Python's urllib.parse (`rpartition('@')`):
    # `https://admin:p@ss@db` hid `p@` only and showed `ss`.
    # a token as a URL's user, with no password (an Azure DevOps personal access token, 52 characters or more, in
    # `https://TOKEN@dev.azure.com/...`): 40 letters and digits or more with a digit, longer than a user's or an
    # organization's name (`https://fabrikam-engineering-2024@dev.azure.com`) and than a Sentry DSN's public key
    # (32 hex digits, which "are safe to keep public", Sentry docs "Data Source Name (DSN)")
    SecretPattern(
        "a token in a URL",
        re.compile(r"[A-Za-z][A-Za-z0-9+.-]{0,20}://(?=[A-Za-z0-9]{0,200}[0-9])[A-Za-z0-9]{40,}@"),
        ("://",),
        within_a_line=True,
    ),
    SecretPattern(
        "a password in a URL",
        re.compile(
            r"[A-Za-z][A-Za-z0-9+.-]{0,20}://[^\s:/@\"]*:(?!\$[({]|\{\{|[0-9]*/)[^\s@\"]{1,256}+(?:@[^\s@\"/]{1,256}+)*@"
        ),
        ("://",),
        within_a_line=True,
    ),
    # keyword.py's assignments of a secret word to a literal inside a value (`password=...` in a libpq
    # conninfo, a query string's `secret=...`, `password = "..."`, a shell line's `DB_PASSWORD=...` or
    # `aws_secret_access_key=...`): the word on its own or as the last part of a name (after `_`; the password
    # words after any letters too, libpq's PGPASSWORD; `pwd` on its own only, `work_pwd` is a folder, but
    # MySQL's MYSQL_PWD, redis-cli's REDISCLI_AUTH, an Azure connection string's SharedAccessKey and AccountKey;
    # `api-key` with a hyphen too (an OTLP header, OTEL_EXPORTER_OTLP_HEADERS=api-key=...); the key words of the
    # `:` patterns below as a name's last part (DB_PASS, PRIVATE_KEY, SIGNING_KEY, CREDENTIALS: an attacker's
    # `APP_ENV_LINE: "DB_PASS=... PRIVATE_KEY=..."` reached the manifests), and the other words the names' rule
    # below refuses (SECRET_KEY, Rails' SECRET_KEY_BASE, ENCRYPTION_KEY, SESSION_KEY, DB_PW, PASSCODE, PIN_CODE: an
    # attacker's `SECRET_KEY=...` in a value rendered with exit 0); a token, HF_TOKEN,
    # right before the `=` (not code's `token = f.read()`) and with a
    # value that is not a number nor starts a query's next parameter), then `=`
    # and the value on one line, also in a shell's ANSI-C quotes (`PASSWORD=$'...'`, bash "QUOTING"); not a
    # reference the pod expands from a secretEnv variable
    # (`$(DB_PASSWORD)`, `${...}`) or an already hidden ***. `(?=[pscamt])`: the words' first letters, which
    # the engine tests faster than the look-behind (4x on a render).
    SecretPattern(
        ASSIGNMENT_KIND,
        re.compile(
            r"(?i)(?=[pscamtredjh])(?:(?<![A-Za-z0-9_])pwd|(?<![A-Za-z0-9])mysql_pwd|password|passwd|passphrase"
            r"|(?<![A-Za-z0-9])rediscli_auth|sharedaccesskey|(?<![A-Za-z0-9])accountkey"
            # these words also name what is no secret (SKIP_PASS=false, PASS=on-demand, SERVICE_KEY=my-service,
            # --private-key=file.pem): not before a value of letters, `_`, `.` and `-` only, as the `:` patterns below
            # (gitleaks' generic-api-key allowlist); a narrower guard had let `DB_PASS=hunter2`-like values through
            r"|(?<![A-Za-z0-9])(?:pass|creds|credentials?|pw|passcode|pin[_-]?code|mnemonic|secret[_-]?key[_-]base"
            r"|(?:private|client|auth|service|app|account|signing|master|secret|encryption|decryption|session|jwt|hmac)"
            r"[_-]?key)(?![\"']?[ \t]*=[ \t]*[\"']?"
            # ... nor before a GCP resource's name (a KMS key, a Secret Manager secret), a URI with no user in it
            # (`sm://...`) or a key file's relative path (`keys/jwt.pem`): where the secret is, not the secret
            r"(?:[A-Za-z_.-]+|projects/[\w./-]+|[A-Za-z][A-Za-z0-9+.-]{0,20}://[^\s\"'&;,@]*"
            r"|[\w./-]*\.(?:pem|key|crt|json|p12|jwk))(?![^\s\"'&;,]))"
            r"|(?<![A-Za-z0-9])(?:secret|client[_-]?secret|api[_-]?key|access[_-]?key|auth[_-]?token|access[_-]?token"
            r"|token(?==(?![0-9]+(?![^\s\"'&;,]))(?![?=]))))[\"']?[ \t]*=[ \t]*"
            # bash's ANSI-C quotes, whose \' is part of the value; a quoted value to its closing quote on the line
            # (`PASSWORD="two words&more"`); else $"...", "...", '...' or none, to a blank or quote, and past a `&`,
            # `;` or `,` unless a query's or a list's next key follows it (`password=ab&cd12` is one value:
            # generated passwords hold those signs; `password=x&user=bob` ends at the `&`)
            + rf"(?:\$'{ANSI_C_CHARACTER}{{4,}}'"
            + "".join(
                rf"|\$?{quote}" + PLAIN_VALUE + rf"(?![;&|])[^{quote}\\\n]{{4,200}}{quote}" + QUOTE_ENDS_A_WORD
                for quote in ('"', "'")
            )
            + r"|(?:\$(?=[\"']))?[\"']?"
            + PLAIN_VALUE
            + r"(?:[^\s\"'&;,]|[&;,](?![A-Za-z_][A-Za-z0-9_.-]{0,60}=)){4,}+)"
        ),
        ("=",),
        within_a_line=True,
    ),
    # the same in JSON or YAML (keyword.py, FOLLOWED_BY_COLON_QUOTES_REQUIRED_REGEX: `"password": "..."`,
    # `api_key: '...'`, also JSON inside a JSON string, `\"secret_key\": \"...\"`): `:` after a key that
    # ends in a secret word, and a quoted value of one word, so that prose (`"note": "a secret: see the
    # docs"`), a placeholder (`"<password>"`, `"${DB_PASSWORD}"`, `"[secret]"`) or a tokenizer's special
    # tokens (`"eos_token": "</s>"`) is not one; nor a value of letters only (gitleaks, generic-api-key's
    # allowlist `^[a-zA-Z_.-]+$`: the render's own `"stringData.token": "unset"`). Unquoted (`password: x`)
    # is not taken: YAML's own keys (`automountServiceAccountToken: false`) and `secret:PROJECT:KEY` (an ESC
    # placeholder) have that shape. The match is the value (`"password"***`).
    SecretPattern(
        ASSIGNMENT_KIND,
        re.compile(f":(?={QUOTED_WORD}){after_a_key_ending_in(KEY_WORDS)}{QUOTED_WORD}"),
        (':"', ":'", ": ", ":\t", ":\\"),
    ),
    # ... and unquoted inside a text (`password: hunter2pass99`, an HTTP header's `X-Api-Key: ...`,
    # `AWS_SECRET_ACCESS_KEY: ...`): a space after the `:` and a value of 8 characters or more with a digit or
    # a sign in it, so that YAML's own keys (`automountServiceAccountToken: false`), a reference by name
    # (`secret: hf-token`) and an ESC placeholder (`secret:PROJECT:KEY`, no space) are not one.
    SecretPattern(
        ASSIGNMENT_KIND,
        re.compile(
            f":(?={UNQUOTED_WORD})(?:{after_a_key_ending_in(PASSWORD_WORDS)}{UNQUOTED_WORD}"
            f"|{after_a_key_ending_in(tuple(word for word in KEY_WORDS if word not in PASSWORD_WORDS))}"
            f"{UNQUOTED_NOT_A_NAME})",
        ),
        (": ", ":\t"),
        # searched over the whole text: it starts at a `:` and reads no further than the line's next space,
        # where a search line by line would cut a render's every `key: value` line out (28x slower)
    ),
    # a passphrase (`password: correct horse battery staple`, `"password": "Tr0ub4dor&3 x"`): after a key that
    # ends in a password word and starts a line, a value or an object's entry (not prose, `the root password: use
    # ...`, nor a comment), a quoted value with a space in it, or three words or more unquoted, to the line's end.
    # One word of letters alone is still no secret (the patterns above), a phrase is: a password field holds no
    # prose.
    SecretPattern(
        ASSIGNMENT_KIND,
        re.compile(
            rf"(?:^|(?<=[\"'{{,{LINE_BREAKS}]))[ \t]*\\*[\"']?[A-Za-z0-9_-]{{0,40}}"
            f"(?i:{'|'.join(PASSPHRASE_WORDS)})"
            r"\\*[\"']?[ \t]{0,2}:"
            f"(?:{QUOTED_PHRASE}|{UNQUOTED_PHRASE})",
        ),
        tuple(needle for word in PASSPHRASE_WORDS for needle in (word[1:], word[1:].upper())),
        within_a_line=True,
    ),
    # the same option with its value in bash's ANSI-C quotes, whose \' is part of it (`--api-key $'ab\'cd...'`): the
    # quoted value whole (the pattern after this one would stop at the \' and show the rest), with that pattern's
    # exceptions (a placeholder or reference, a number, letters only)
    SecretPattern(
        ASSIGNMENT_KIND,
        re.compile(
            rf"(?P<kept>{SECRET_OPTION})\$'(?![0-9]+')"
            + PLAIN_VALUE
            + rf"(?={ANSI_C_CHARACTER}{{0,200}}[^A-Za-z_.\s'\\-]){ANSI_C_CHARACTER}{{8,200}}'"
        ),
        ("--",),
        within_a_line=True,
    ),
    # a long option that takes a secret with its value after a space, as a command line in a text holds it
    # (`EXTRA_OPTS="--api-key VALUE"`, `--hf-token VALUE`, `--password VALUE`; the `=` form is above): an option
    # whose name ends in a secret word, then a value that is no other option, reference or placeholder and not
    # letters only, no number (`--eos-token 151645`) and no relative path (`--client-key ~/.kube/admin.key`), of 8
    # characters or more as an unquoted value after a `:`; quoted or not; the option is kept (`--api-key ***`). Not
    # `--max-num-batched-tokens 8192` (the name must end in the word), nor the Pulumi CLI's `--secret`, a switch
    # (`pulumi config set --secret KEY`), nor vLLM's `--allow-credentials` switch.
    SecretPattern(
        ASSIGNMENT_KIND,
        re.compile(
            rf"(?P<kept>{SECRET_OPTION}(?:\$(?=[\"']))?[\"']?)(?!-|[0-9]+(?![^\s\"'`\\,;()])|~/|\.{{1,2}}/)"
            + PLAIN_VALUE
            + r"(?=[^\s\"'`\\,;()]{0,200}[^A-Za-z_.\s\"'`\\,;()-])[^\s\"'`\\,;()]{8,200}[^\s\"'`\\,;()]*+"
        ),
        ("--",),
        within_a_line=True,
    ),
    # an HTTP `Authorization` header with any scheme but Bearer and Basic above (`Token`, Elastic's `ApiKey`,
    # Dynatrace's `Api-Token`, Splunk's `Splunk`, `GenieKey`, `SSWS`: RFC 7235 section 4.2, credentials =
    # auth-scheme and a token), also quoted as JSON writes it and as an OTLP exporter's header variable gives it
    # (`OTEL_EXPORTER_OTLP_HEADERS=Authorization=ApiKey ...`); and the header names tracing backends take their
    # key in (Honeycomb's x-honeycomb-team, SigNoz's signoz-ingestion-key, an ingest or license key); a value with
    # a digit (`Authorization: see docs.example.com` is prose). Every repeat is bounded: a line of a hostile
    # file is read once from each start, not again from each letter of a long word.
    SecretPattern(
        ASSIGNMENT_KIND,
        re.compile(
            r"(?i)(?:authorization[\"']?[ \t]*[:=][ \t]*[\"']?[A-Za-z][A-Za-z0-9._-]{0,30}[ \t]+"
            r"|(?:x-honeycomb-team|(?<![A-Za-z0-9])(?:[a-z0-9]{1,30}[_-])?ingest(?:ion)?[_-]?key|license[_-]?key)"
            r"[\"']?[ \t]*[:=][ \t]*[\"']?)" + PLAIN_VALUE + r"(?=[A-Za-z0-9._~+/=-]{0,200}[0-9])[A-Za-z0-9._~+/=-]{8,}"
        ),
        ("uthorization", "UTHORIZATION", "oneycomb", "ONEYCOMB", "ngest", "NGEST", "icense", "ICENSE"),
        within_a_line=True,
    ),
    # curl's user option (`curl -u user:password`, `--user user:password`, also in a variable of curl's
    # options, CURL_OPTS=-u ...; -su, -ualice:..., a quoted user:password): the password after the user's
    # colon; not a reference ($PASS, ${...}); not past the curl command (`| sh && docker run -u 1000:1000`). The
    # option within CURL_OPTION_REACH characters of `curl`: an unbounded reach made a line of many `curl`s
    # quadratic (40 KB: 7 s). The user's option is the cluster's first u (curl takes the rest as its value): any u
    # had let `curl -uuu...` end the cluster at each one and read the rest again (32 KB: 1.5 s).
    SecretPattern(
        ASSIGNMENT_KIND,
        re.compile(
            f"(?i)(?<![A-Za-z0-9])curl(?![A-Za-z0-9])[^|;&{LINE_BREAKS}]{{0,{CURL_OPTION_REACH}}}?"
            + r"(?<![\w-])(?:-[A-TV-Za-tv-z]*u[ \t]*|--user(?:[ \t]+|=))[\"']?"
            + PLAIN_VALUE
            + r"[^\s:'\"]+:"
            + PLAIN_VALUE
            + r"[^\s'\"]{4,}"
        ),
        ("curl", "CURL", "Curl"),
        within_a_line=True,
    ),
    # the password options of other clients, as a command line in a value holds them (an attacker: each was written to
    # the manifests): MySQL's and MariaDB's `-pPASSWORD` (glued: `-p PASSWORD` prompts and takes the database name),
    # sshpass's `-p PASSWORD`, redis-cli's (and its kin's) `-a PASSWORD` or `--pass PASSWORD`, and a registry login's
    # `-p PASSWORD`, `-p=...`, `-pPASSWORD` (docker, podman, nerdctl, buildah, skopeo, oras, helm registry); the option
    # within CURL_OPTION_REACH characters of the command, not past its end (`|`, `;`, `&`), a value that is no
    # reference ($PASS, ${...}); case-sensitive (`-P3306` is MySQL's port)
    SecretPattern(
        ASSIGNMENT_KIND,
        re.compile(
            r"(?<![A-Za-z0-9_-])(?:(?:mysql(?:dump|admin|import|check|show|pump)?|mariadb(?:-dump|-admin|-import"
            r"|-check|-show)?)(?![A-Za-z0-9_-])"
            + CLIENT_OPTION_REACH
            + r"(?<![\w-])-p(?=[^\s=])|sshpass[ \t]+-p[ \t]*|(?:redis-cli|valkey-cli|keydb-cli|redis-benchmark)"
            r"(?![A-Za-z0-9_-])"
            + CLIENT_OPTION_REACH
            + r"(?<![\w-])(?:-a|--pass)[ \t]+|(?:docker|podman|nerdctl|buildah|skopeo|oras|helm[ \t]+registry)"
            r"(?![A-Za-z0-9_-])[^|;&\n]{0,80}?[ \t]login(?![A-Za-z0-9_-])"
            + CLIENT_OPTION_REACH
            + r"(?<![\w-])-p(?:[ \t]+|=|(?=[^\s=])))"
            # a quoted value to its closing quote (a blank may be in it), else to a blank; no reference, `$X` or
            # `cat ...` in backquotes
            + rf"(?:\"{PLAIN_VALUE}[^\"\n]{{4,200}}\"|'{PLAIN_VALUE}[^'\n]{{4,200}}'|{PLAIN_VALUE}(?!`)[^\s'\"]{{4,}})"
        ),
        ("mysql", "mariadb", "sshpass", "redis-", "valkey-cli", "keydb-cli", "login"),
        within_a_line=True,
    ),
    # a key and its value apart (`aws configure set aws_secret_access_key VALUE`, the AWS CLI's form): the
    # key's name, blanks, and 40 characters of an AWS secret access key
    SecretPattern(
        ASSIGNMENT_KIND,
        re.compile(r"(?i)aws_secret_access_key[ \t]+" + PLAIN_VALUE + r"[A-Za-z0-9/+=]{40}(?![A-Za-z0-9/+=])"),
        ("ecret_access_key", "ECRET_ACCESS_KEY"),
        within_a_line=True,
    ),
    # a netrc entry (curl and ftp's ~/.netrc: `machine HOST login USER password PASSWORD`): a host name with
    # a dot, and a password that is not letters only (prose: `machine learning login page password reset`)
    SecretPattern(
        ASSIGNMENT_KIND,
        re.compile(
            r"(?i)machine[ \t]+[\w-]+(?:\.[\w-]+)+[ \t]+login[ \t]+\S+[ \t]+password[ \t]+"
            + PLAIN_VALUE
            + r"(?=\S*[^A-Za-z\s])\S{4,}"
        ),
        ("machine", "MACHINE"),
        within_a_line=True,
    ),
)
# Names of settings (environment variables, flags) whose value is a secret whatever it looks like (a W&B
# key is 40 hex digits, a password anything): keyword.py's DENYLIST, plus access/secret keys and tokens and
# gitleaks' credential words (config/gitleaks.toml, generic-api-key: credential, creds), as a whole part of
# the name (API_KEY, WANDB_API_KEY, DB_PASSWORD, GITHUB_TOKEN, GOOGLE_CREDENTIALS_JSON, --api-key,
# --hf-token, spring.datasource.password; not MAX_TOKENS or --tokenizer), and the plurals of the key and
# password words (API_KEYS, passwords; not tokens or secrets, which name counts and Kubernetes' lists of
# references). gitleaks' access, api, auth and key are not words of their own
# here: gitleaks takes them only with a value of high entropy, and by name alone they would refuse AUTH_MODE,
# API_URL or CACHE_KEY.
SECRET_NAME_WORDS = re.compile(
    r"(?:^|_)(?:api_?key|app_?key|application_?key|auth_?key|service_?key|account_?key|db_?key|database_?key"
    r"|priv_?key|private_?key|client_?key|access_?keys?|secret_?keys?|secret_?access_?key|db_?pass|database_?pass"
    r"|key_?pass|pass|[a-z0-9]*(?:password|passwd|passphrase)s?|pwd|secret[eo]?|contrase(?:n|ñ)a|token|auth_?token"
    r"|rediscli_auth"
    r"|access_?token|api_?token|authorization|credentials?|creds|api_?keys"
    r"|passcodes?|pin_?codes?|mnemonics?|(?:t?otp|mfa)_?seeds?"
    r")(?:_|$)"
    # a key under its use's or vendor's name, as the name's last word (SESSION_KEY, not SESSION_KEY_HEADER)
    r"|(?:^|_)(?:license|master|signing|encryption|decryption|jwt|session|sa|hmac|ingest|ingestion|integration"
    r"|openai|anthropic|gemini|cohere|mistral|groq|openrouter|pinecone|langsmith|langfuse|honeycomb|wandb|hf|ngc"
    r"|nvidia|ssh|aes|gpg|pgp|cipher|kaggle|stripe|sendgrid|mapbox|together|deepseek|twilio|mailgun)_?key$"
    # a personal access token under its vendor's name (GITHUB_PAT, GH_PAT, DOCKERHUB_PAT), an auth header
    r"|(?:^|_)pat$|(?:^|_)auth_?headers?$"
    # a credential that is the name's last word: a password's abbreviation (DB_PW), a JSON web token, a bearer
    # token, a session cookie (not JWT_ISSUER, COOKIE_SECURE)
    r"|(?:^|_)(?:pw|jwt|bearer|cookie)s?$"
)
# A webhook's URL is its credential: whoever holds it posts (Teams, PagerDuty, Mattermost, Zapier): a name that
# ends in the webhook or its URL (TEAMS_WEBHOOK_URL, SLACK_WEBHOOK; not WEBHOOK_URL_FILE nor WEBHOOK_ENABLED).
WEBHOOK_NAME = re.compile(r"(?:^|_)webhooks?(?:_urls?|_uri|_endpoint|_token|_secret|_key)?$")
# detect-secrets finds its keywords anywhere in a name (keyword.py, DENYLIST_REGEX has no left anchor, and
# its DENYLIST has `pass` and `app_key`); here only the password words may follow other letters, so that
# libpq's PGPASSWORD and a REDIS_PASS are secrets and MAX_TOKENS or --tokenizer still are not.
CAMEL_HUMP = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


# Every kind's literal texts in one search: a text that holds none of them (most strings of a render)
# holds no secret of those kinds, found with one search instead of one per kind.
ANY_NEEDLE = re.compile("|".join(re.escape(needle) for pattern in SECRET_PATTERNS for needle in pattern.needles))


# ---------------------------------------------------------------- the kinds above base64-encoded


# A literal of two bytes decides two characters of its encoding at two of the three places, a pair every text
# holds: a kind with a needle that short (Twilio's AC, a URL query's ?, an assignment's =) is not looked for by its
# needles; a run that holds one is still decoded and read as a text (ENCODING_LAYERS).
ENCODED_LITERAL_LENGTH = 3


def _noun(kind: str) -> str:
    """A kind's name without its article: "GitHub token" of "a GitHub token"."""
    return kind.split(" ", 1)[1]


def _encodable_kinds(patterns: tuple[SecretPattern, ...]) -> dict[str, tuple[SecretPattern, ...]]:
    """The kinds whose every needle is ENCODED_LITERAL_LENGTH characters or more, with their patterns: the
    tokens by their fixed prefixes (ghp_, github_pat_, sk-ant-, AKIA, glpat-, xox, nvapi-, pul-, hvs....) and
    the credentials by their literal texts (a Slack webhook's URL, a Docker config's `auth"`, `://`); not an
    encoded rule's own kind, nor a kind that has one (a private key's)."""
    by_kind: dict[str, list[SecretPattern]] = {}
    for pattern in patterns:
        by_kind.setdefault(pattern.kind, []).append(pattern)
    return {
        kind: tuple(group)
        for kind, group in by_kind.items()
        if not kind.startswith("an encoded ")
        and f"an encoded {_noun(kind)}" not in by_kind
        and (
            kind in ENCODED_LITERALS_OF_KIND
            or all(len(needle) >= ENCODED_LITERAL_LENGTH for pattern in group for needle in pattern.needles)
        )
    }


# A kind whose needles are too short to look for encoded (an assignment's `=` or `: `), looked for by the words its
# patterns need before them instead (their stems, in three cases: `DB_PASS`, `MYSQL_PWD`, `REDISCLI_AUTH`, `apiKey`),
# and by its patterns' longer needles (`curl`, a tracing header's name): an encoded `.env` with `DB_PASSWORD=...` (an
# attacker: likelier in a variable than an encoded token) had passed. Its patterns then read the decoded text, their own
# exceptions with them (a placeholder, a value of letters only).
ENCODED_LITERALS_OF_KIND = {
    ASSIGNMENT_KIND: tuple(
        dict.fromkeys(
            [
                *(
                    cased
                    for word in ("pass", "pwd", "secret", "token", "cred", "auth", "key")
                    for cased in (word, word.upper(), word.title())
                ),
                *(
                    needle
                    for pattern in SECRET_PATTERNS
                    if pattern.kind == ASSIGNMENT_KIND
                    for needle in pattern.needles
                    if len(needle) >= ENCODED_LITERAL_LENGTH
                ),
            ]
        )
    )
}


# A secret of those kinds base64- or base64url-encoded (RFC 4648 sections 4 and 5: a Kubernetes Secret's `data`
# value pasted into a variable, a Docker config's JSON encoded whole, an environment variable that holds base64) is
# found as "an encoded <kind>": a run of the two alphabets' characters, ENCODED_RUN_LENGTH or more (the encoding of
# 20 bytes: an AWS access key id, the shortest of these tokens; a shorter credential, `redis://:pw@db`, is not read
# encoded) and its `=` padding, that holds one of the encoded needles of a kind's literals (encoded_needles) and
# that decodes, from one of its first four characters (the encoding may start after a word glued to it), to a text
# where that kind's own patterns find a secret: `ghp_` and its 36 characters, not `ghp_` alone nor `sk-` in prose.
# A run ends at a line break (the private key's rule reads through them). The needles are looked for in each run,
# not with a substring test over the whole text (SecretPattern.may_match): the 349 needles took 75 ms over a render
# of three stacks (1.6 MB), one search of them all 25 ms; its runs are found in 2.5 ms.
ENCODED_RUN_LENGTH = 27
BASE64_RUN_CHARACTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-")
# Each byte of a text (a non-ASCII character as one `?`) as x where it is one of those characters, else a space:
# runs found with `bytes.find` in C (a regex tried at every letter took 15 ms over the render).
RUN_CLASSES = bytes(ord("x") if chr(byte) in BASE64_RUN_CHARACTERS else ord(" ") for byte in range(256))
LONG_RUN = b"x" * ENCODED_RUN_LENGTH
URL_SAFE_AS_STANDARD = str.maketrans("-_", "+/")
# What a run decodes to is kept by the run (a render repeats its names and digests in every file); a longer run
# is decoded again each time.
KEPT_RUN_LENGTH = 1024


# An encoding wrapped (`base64`'s 76 columns, PEM's 64), then folded into spaces by a YAML plain or quoted scalar, or
# kept as JSON's `\n`: a decoder that skips what is not base64 (Python's b64decode by default) reads it whole, and a
# token whose encoding a break cut had passed. A run of whole 4-character groups (16 characters or more) goes on past
# such a break when the next line ends as a run does (not a YAML key's `name:`); the breaks are dropped to decode.
WRAP = re.compile(r"(?:\r?\n|\\r\\n|\\n|[ \t])[ \t]*(?=[A-Za-z0-9+/_-])")
WRAP_ENDS = frozenset(" \t\r\n=\"'\\")
WRAP_BREAK = re.compile(r"\s+|\\r|\\n")


class EncodedSecrets:
    """The secrets of the encodable kinds of `patterns`, base64- or base64url-encoded."""

    def __init__(self, patterns: tuple[SecretPattern, ...]) -> None:
        self.patterns = _encodable_kinds(patterns)
        literals: dict[str, set[str]] = {}
        for kind, group in self.patterns.items():
            for literal in ENCODED_LITERALS_OF_KIND.get(kind) or [
                needle for pattern in group for needle in pattern.needles
            ]:
                literals.setdefault(literal, set()).add(kind)
        # every literal's encoded needles, in the standard alphabet (a run is read with base64url's - and _ as + and
        # /), in one search
        self.needles = tuple(sorted({needle for literal in literals for needle in encoded_needles(literal)}))
        self.any_needle = re.compile(_as_trie(list(self.needles)))
        # in a decoded text, where each literal starts (`(?=...)`: overlapping ones too), the shortest one at each
        # place, and the kinds such a literal may stand for: its own and those of every literal it begins
        self.literal_starts = re.compile(f"(?=({_as_trie(list(literals))}))")
        self.kinds_of_literal = {
            literal: {kind for longer, kinds in literals.items() if longer.startswith(literal) for kind in kinds}
            for literal in literals
        }
        self._kept_run_kinds = functools.lru_cache(maxsize=16384)(self._decoded_run_kinds)

    def _decoded_run_kinds(self, run: str, layer: int = 1) -> tuple[str, ...]:
        """The kinds of secret the run decodes to, as "an encoded <kind>": of the kinds of `patterns` where it
        holds one of their needles, in the patterns' order; then, for a run ENCODING_LAYERS encodings deep or less,
        any kind in what it decodes to read again as a text (`_layer_kinds`)."""
        run = WRAP_BREAK.sub("", run)
        needled = self.any_needle.search(run.translate(URL_SAFE_AS_STANDARD)) is not None
        found: set[str] = set()
        inner: list[str] = []
        for decoded in _run_decodings(run):
            if needled:
                found |= self._needle_kinds(decoded, found)
            if layer <= ENCODING_LAYERS:
                inner += [kind for kind in _layer_kinds(decoded, layer + 1) if kind not in inner]
        own = tuple(f"an encoded {_noun(kind)}" for kind in self.patterns if kind in found)
        return own + tuple(kind for kind in inner if kind not in own)

    def _needle_kinds(self, decoded: str, found: set[str]) -> set[str]:
        """The kinds not yet `found` whose literal the decoded text holds and whose own patterns find a secret there."""
        literals = set(self.literal_starts.findall(decoded))
        candidates = {kind for literal in literals for kind in self.kinds_of_literal[literal]} - found
        return {kind for kind in candidates if any(pattern.search(decoded) for pattern in self.patterns[kind])}

    def run_kinds(self, run: str, layer: int = 1) -> tuple[str, ...]:
        """The kinds of secret a run decodes to (`_decoded_run_kinds`), kept for a run that is not long; `layer`:
        how many encodings deep the run is."""
        if len(run) <= KEPT_RUN_LENGTH:
            return self._kept_run_kinds(run, layer)
        return self._decoded_run_kinds(run, layer)

    @staticmethod
    def runs(text: str) -> Iterator[tuple[int, int]]:
        """Where each run of ENCODED_RUN_LENGTH base64 or base64url characters or more starts and ends, its `=`
        padding with it, in order."""
        if len(text) < ENCODED_RUN_LENGTH:
            return
        classes = text.encode("ascii", "replace").translate(RUN_CLASSES)
        at = classes.find(LONG_RUN)
        while at >= 0:
            end = classes.find(b" ", at + ENCODED_RUN_LENGTH)
            end = len(text) if end < 0 else end
            segment = at
            while (end - segment) % 4 == 0 and end - segment >= 16 and (wrap := WRAP.match(text, end)) is not None:
                found = classes.find(b" ", wrap.end())
                found = len(text) if found < 0 else found
                if found < len(text) and text[found] not in WRAP_ENDS:  # a YAML key's name, `name:`, is no line of it
                    break
                segment, end = wrap.end(), found
            end += 2 if text.startswith("==", end) else 1 if text.startswith("=", end) else 0
            yield at, end
            at = classes.find(LONG_RUN, end)

    def kinds(self, text: str, layer: int = 1) -> list[str]:
        """The kinds of secret the text's runs decode to, first found first."""
        found: list[str] = []
        for run in dict.fromkeys(text[start:end] for start, end in self.runs(text)):  # each once: names repeat
            found += [kind for kind in self.run_kinds(run, layer) if kind not in found]
        return found

    def matches(self, text: str) -> Iterator[str]:
        """Every run that decodes to a secret, in order."""
        return (text[start:end] for start, end in self.runs(text) if self.run_kinds(text[start:end]))

    def hide(self, text: str) -> str:
        """The text with each run that decodes to a secret replaced by ***, whole."""
        pieces, done = [], 0
        for start, end in self.runs(text):
            if self.run_kinds(text[start:end]):
                pieces += [text[done:start], REDACTED]
                done = end
        return "".join([*pieces, text[done:]]) if pieces else text


ENCODED_SECRETS = EncodedSecrets(SECRET_PATTERNS)

# How many encodings inside one another a run is read through: a text base64-encoded whole that holds an encoded
# secret (a Secret manifest's `data` pasted base64-encoded, a token encoded twice) had passed, as had one encoded
# once of a kind without needles long enough to look for (a Twilio key), hex of any kind but Hugging Face's (that
# has a rule of its own), and base64 of UTF-16. Every run of ENCODED_RUN_LENGTH characters or more is decoded (a
# render of three stacks holds about 150 distinct ones, all decoded in about 2 ms) and what it decodes to read as a
# text; garbage holds no run that long, so a deeper layer is read only where there is one.
ENCODING_LAYERS = 3
# Hex digits that may decode to a secret (40 or more: 20 bytes, the shortest of the encodable tokens), also after a
# prefix glued to them in the run (`0x`, `val_`)
HEX_STRETCH = re.compile(r"[0-9A-Fa-f]{40,}")


def _run_decodings(run: str) -> list[str]:
    """What a run (its line breaks dropped) may decode to, each once: its hex stretches, from either of their first
    two digits (a hex letter of a prefix may start one), and its base64 and base64url from each of its first four
    characters (the encoding may start after a word glued to it)."""
    texts = [
        bytes.fromhex(digits[: len(digits) // 2 * 2]).decode("latin-1")
        for stretch in HEX_STRETCH.findall(run)
        for digits in (stretch, stretch[1:])
    ]
    body = run.rstrip("=")
    for start in range(4):
        groups = body[start:]
        groups = groups[:-1] if len(groups) % 4 == 1 else groups  # a last character alone is no byte
        # its own padding dropped and the whole groups' put back: a token's last bytes are in the last group
        texts += _decoded(groups + "=" * (-len(groups) % 4))
    return list(dict.fromkeys(texts))


def _layer_kinds(decoded: str, layer: int) -> list[str]:
    """What a run's decoding holds, read as a text (its UTF-16, the NUL bytes between ASCII characters dropped),
    each as "an encoded <kind>"."""
    text = decoded.replace("\x00", "") if decoded.count("\x00") * 3 >= len(decoded) > 0 else decoded
    return [
        kind if kind.startswith("an encoded ") else f"an encoded {_noun(kind)}"
        for kind in _kinds(text, decoded=True, layer=layer)
    ]


def _kinds(text: str, decoded: bool = False, layer: int = 1) -> list[str]:
    """`decoded`: the text behind escapes or an encoding, where only a real-looking token counts (not a whole
    value that merely starts with hf_, as `hf%5Ftransfer_enabled` decodes to); `layer`: how many encodings deep
    the text is."""
    tokens = _real_token(text) if decoded else any(True for _ in token_candidates(text))
    kinds = ["a Hugging Face token"] if tokens else []
    if ANY_NEEDLE.search(text) is not None:
        kinds += [pattern.kind for pattern in SECRET_PATTERNS if pattern.search(text)]
    return list(dict.fromkeys(kinds + ENCODED_SECRETS.kinds(text, layer)))


# JSON's `\u0068`, `\/` and `\t` and a URL's `%68`: a program that reads the value (vLLM's JSON flags, an OTLP
# header, a JSON config in a variable) decodes them back into the secret (`https:\/\/hooks.slack.com\/...`). And
# HTML's character references (`&#95;`, `&lowbar;`), which a Markdown page (changes.md on a pull request) shows as the
# character. Not JSON's `\"` nor `\\`: every JSON text of a render holds them, and no secret needs them.
ESCAPE_SHAPE = (
    r"\\u[0-9A-Fa-f]{4}|%[0-9A-Fa-f]{2}|\\[/t]|&(?:#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});"
)
ESCAPE = re.compile(ESCAPE_SHAPE)
JSON_ESCAPE = re.compile(r"\\u([0-9A-Fa-f]{4})")
JSON_SHORT_ESCAPE = re.compile(r"\\([/t])")
HUGE_REFERENCE = re.compile(r"&#0*+[0-9]{8,};?|&#[xX]0*+[0-9A-Fa-f]{7,};?")
LEADING_ZEROS = re.compile(r"(&#[xX]?)0++(?=[0-9A-Fa-f])")


def unescaped(text: str) -> str | None:
    """The text with its JSON (`\\uXXXX`, `\\/`, `\\t`), HTML and URL escapes decoded; None when it has none. HTML's
    are whatever `html.unescape` reads (`&#0095;`, `&#95` without its `;`: an attacker's token passed a narrower
    shape), so the text is decoded when it holds an `&` at all."""
    if "&" not in text and ESCAPE.search(text) is None:
        return None
    decoded = JSON_ESCAPE.sub(lambda match: chr(int(match[1], 16)), text)
    decoded = JSON_SHORT_ESCAPE.sub(lambda match: "/" if match[1] == "/" else "\t", decoded)
    # a reference past U+10FFFF is U+FFFD to html.unescape, but past 4,300 digits Python refuses to read its number
    decoded = HUGE_REFERENCE.sub("\ufffd", LEADING_ZEROS.sub(r"\1", decoded))
    decoded = urllib.parse.unquote(html.unescape(decoded))
    return None if decoded == text else decoded


# How many layers of escapes are read through: a value escaped again (`ghp%255F...`, a URL in another URL's query)
# decodes to the secret after two (an attacker wrote a GitHub token so, then one in four layers).
ESCAPE_LAYERS = 8


def _escaped_kinds(text: str) -> list[str]:
    """The kinds of secret behind the text's JSON or URL escapes, up to ESCAPE_LAYERS deep (none without an escape)."""
    decoded = unescaped(text)
    for _ in range(ESCAPE_LAYERS):
        if decoded is None:
            return []
        kinds = _kinds(decoded, decoded=True) or (
            _kinds(visible, decoded=True) if (visible := as_read(decoded)) != decoded else []
        )
        if kinds:
            return kinds
        decoded = unescaped(decoded)
    return []


def secret_kinds(text: str) -> list[str]:
    """What kinds of secret the text holds ("a Hugging Face token", "an AWS access key id", ...), first
    found first, also behind JSON and URL escapes; empty when none."""
    if len(text) <= KEPT_TEXT_LENGTH:
        return list(_short_text_kinds(text))
    key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    with _long_text_lock:
        kinds = _long_text_kinds.get(key)
    if kinds is None:
        kinds = _text_kinds(text)
        with _long_text_lock:
            if len(_long_text_kinds) >= KEPT_LONG_TEXTS:
                del _long_text_kinds[next(iter(_long_text_kinds))]
            _long_text_kinds[key] = kinds
    return list(kinds)


def _text_kinds(text: str) -> tuple[str, ...]:
    return tuple(_kinds(text) or _escaped_kinds(text) or _kinds_as_read(text))


def _kinds_as_read(text: str) -> list[str]:
    """The kinds of secret the text holds as a reader reads it (`as_read`); none where that is the text itself."""
    visible = as_read(text)
    return [] if visible == text else _kinds(visible) or _escaped_kinds(visible)


def as_read(text: str) -> str:
    """The text as a reader (or a program that normalises it) reads it: compatibility forms as their plain characters
    (NFKC: fullwidth letters, a no-break space), the characters Unicode says a reader does not see dropped (a
    zero-width space or joiner, a soft hyphen, a bidi control, a variation selector: category Cf and
    Default_Ignorable_Code_Point). A token pasted with a zero-width space inside had its kind missed, and a message
    refusing the value quoted the token (an attacker: 39 of a GitHub token's 40 characters). Letters of another script
    that look alike (a Cyrillic O, U+041E, in PASSWORD) are not folded."""
    if text.isascii():
        return text
    folded = unicodedata.normalize("NFKC", text)
    dropped = {ord(char): None for char in set(folded) if _ignorable(char)}
    return folded.translate(dropped) if dropped else folded


# Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties.txt) beyond category Cf: characters a reader does not
# see, some of them printable to Python (a variation selector, the combining grapheme joiner, the Hangul fillers), so
# a stack value may hold them (a platform review: `ghp_` and U+FE0F inside a token rendered with exit 0).
DEFAULT_IGNORABLE = (
    (0x034F, 0x034F),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0xE0000, 0xE0FFF),
)


def _ignorable(char: str) -> bool:
    code = ord(char)
    return unicodedata.category(char) == "Cf" or any(low <= code <= high for low, high in DEFAULT_IGNORABLE)


# A text is often scanned again: a render's files by the render and then by the writer every command writes
# through, the files of one render in the next, a record's strings by each no-secret policy. Its kinds are kept:
# a short text's by the text, a long one's by its digest (so that what is kept stays small).
KEPT_TEXT_LENGTH = 1024
KEPT_LONG_TEXTS = 4096
_short_text_kinds = functools.lru_cache(maxsize=16384)(_text_kinds)
_long_text_kinds: dict[bytes, tuple[str, ...]] = {}
_long_text_lock = threading.Lock()


# A name that ends so holds where a secret is, not the secret (HF_TOKEN_FILE, --ssl-keyfile, TOKEN_PATH,
# SECRET_NAME, TOKEN_URL; gitleaks' generic-api-key allowlist has the same: key_file, secret_name,
# token_url). Not `_id`: Vault's AppRole SECRET_ID is the credential itself, and a cloud's access key id is
# half of one (gitleaks allows key_id only with a low-entropy value).
REFERENCE_SUFFIXES = (
    *("_file", "_path", "_dir", "_files", "_paths", "_dirs", "_location"),
    *("_name", "_names", "_url", "_uri", "_endpoint"),
)
# A name that ends so holds a number about tokens or keys, not one (vLLM's --long-prefill-token-threshold and
# --dbo-decode-token-threshold take integers; MAX_TOKEN_LENGTH, TOKEN_TTL).
QUANTITY_SUFFIXES = (
    *("_threshold", "_thresholds", "_limit", "_limits", "_size", "_sizes", "_count", "_counts"),
    *("_length", "_len", "_budget", "_timeout", "_ttl", "_interval"),
)
# An `_id` names an identifier (EOS_TOKEN_ID, CREDENTIALS_ID), except after a word whose id is a credential.
CREDENTIAL_ID = re.compile(r"(?:secret[eo]?|password|passwd|passphrase|pwd|pass|access_?key|secret_?key)_ids?$")
# Names that hold where a secret is, or how to get one, without saying so: Application Default Credentials
# read the key file at the path GOOGLE_APPLICATION_CREDENTIALS gives (Google Cloud, "How Application
# Default Credentials works"); get_credentials is gcloud's verb (`gcloud container clusters
# get-credentials` writes a kubeconfig entry), and a value of that name is the command (the stack output
# getCredentials). PWD and OLDPWD are the shell's working directories (POSIX, Shell and Utilities, "Shell
# Variables"), not a password, which `pwd` abbreviates in any other name (DB_PWD). huggingface_hub's
# HF_HUB_DISABLE_IMPLICIT_TOKEN is a switch.
REFERENCE_NAMES = frozenset(
    {"google_application_credentials", "get_credentials", "pwd", "oldpwd", "hf_hub_disable_implicit_token"}
    # OpenTelemetry's exporter variables: the client key's file (OTLP Exporter Configuration, "Certificate file")
    | {f"otel_exporter_otlp{signal}_client_key" for signal in ("", "_traces", "_metrics", "_logs")}
)


@functools.lru_cache(maxsize=4096)  # a render's documents repeat the same few hundred keys
def name_words(name: str) -> str:
    """A name as its words joined by `_`, lower case: wandbApiKey, WANDB_API_KEY, --wandb-api-key,
    wandb.api.key and a Kubernetes annotation's wandb.ai/api-key alike; as read (`as_read`), without blanks around
    it (`DB_PASS\u200bWORD` and `DB_PASSWORD ` name a password too)."""
    return CAMEL_HUMP.sub("_", as_read(name).strip()).lower().replace("-", "_").replace(".", "_").replace("/", "_")


@functools.lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """Whether a setting of this name (an environment variable, a flag without its dashes) holds a secret."""
    normal = name_words(name)
    if WEBHOOK_NAME.search(normal) is not None:
        return True
    if normal.endswith(REFERENCE_SUFFIXES + QUANTITY_SUFFIXES) or normal in REFERENCE_NAMES:
        return False
    if normal.endswith(("_id", "_ids")) and CREDENTIAL_ID.search(normal) is None:
        return False
    return SECRET_NAME_WORDS.search(normal) is not None


def _hide_patterns(text: str) -> str:
    # the encoded runs first: a pattern that hides a part of one (a Twilio key's shape inside it) would cut it
    text = ENCODED_SECRETS.hide(text)
    if ANY_NEEDLE.search(text) is None:
        return text
    for pattern in SECRET_PATTERNS:
        text = pattern.hide(text)
    return text


# A hidden span against an escape: the match may have stopped at it, the secret going on behind it.
HIDDEN_AT_AN_ESCAPE = re.compile(f"{re.escape(REDACTED)}(?:{ESCAPE_SHAPE})|(?:{ESCAPE_SHAPE}){re.escape(REDACTED)}")


# How much of a secret's end shows that the rest of it was left behind an escape (a shorter rest shows no more).
SECRET_TAIL = 3


def _secret_tails(text: str) -> set[str]:
    """The last characters of every secret of the patterns' kinds the text holds."""
    return {
        secret[-SECRET_TAIL:]
        for secrets in (
            *(pattern.matches(text) for pattern in SECRET_PATTERNS if pattern.may_match(text)),
            ENCODED_SECRETS.matches(text),
        )
        for secret in secrets
    }


def _escaped_secret_hidden(text: str, original: str) -> str:
    """The whole text hidden when a secret is left behind its JSON or URL escapes: no span of the text is it, or
    a span hidden up to an escape leaves the end of a secret the escapes make whole (`sk-...\\u0041...`; not a key
    hidden whole before an `%26`, an escaped `&`)."""
    if _escaped_kinds(text):
        return REDACTED
    if HIDDEN_AT_AN_ESCAPE.search(text) and (decoded := unescaped(original)) is not None:
        shown = unescaped(text) or text
        if any(tail in shown for tail in _secret_tails(decoded)):
            return REDACTED
    if _kinds_as_read(text):
        return REDACTED  # a secret that format characters or compatibility forms cut or disguise
    return text


def redact_secrets(text: str) -> str:
    """redact_tokens, and every other kind of secret replaced by ***: for messages and error lines."""
    return _escaped_secret_hidden(_hide_patterns(redact_tokens(text)), text)


# `user:password@host` without a scheme (a gateway address, a proxy as curl's -x takes it): in a message quoting a
# bad value only, where hiding more costs nothing (an image's `name:tag@sha256:...` is left as it is). The password
# runs to the last `@` of its run, as a URL's parsers read it (Python's urllib.parse: `rpartition('@')`): one that
# holds an `@` (`admin:p@ssw0rd@proxy`) had its end shown. Looked for only in a run of characters a password may hold,
# up to its last `@` (each run read once): searched over the whole text, each `=` of a long run of `x:=` read the rest
# of it again (80 KB: 3 s), and a bound on the password left a longer one shown.
RUN_TO_AN_AT = re.compile(r"(?<![^\s\"'])[^\s\"']*@(?!sha[0-9]+:)")
USER_PASSWORD = re.compile(r"(?<![A-Za-z0-9._%+@-])(?!mailto:)([A-Za-z0-9._%+@-]+):(?!\$[({]|//|[0-9]+/)[^\s\"']+@")


def redact_quoted(text: str) -> str:
    """redact_secrets, and a password before a host's `@` hidden: for a bad value a message quotes."""
    return RUN_TO_AN_AT.sub(lambda run: USER_PASSWORD.sub(r"\1:***@", run.group()), redact_secrets(text))


def hide_secrets(text: str) -> str:
    """hide_tokens, and every other kind of secret replaced by ***: for what a command copies from a
    file it was given into its own output."""
    return _escaped_secret_hidden(_hide_patterns(hide_tokens(text)), text)


def folded_secret_forms(secrets: Iterable[str]) -> frozenset[str]:
    """Known secret values as `hide_folded` looks for them: their letters and digits, lower case, and their ASCII ones
    alone (as a config key made of a name keeps them); none shorter than KNOWN_ENCODED_MIN so (a few letters are in
    many texts)."""
    return frozenset(
        form for secret in secrets for fold in FOLDS for form in (fold(secret),) if len(form) >= KNOWN_ENCODED_MIN
    )


def _letters_and_digits(char: str) -> bool:
    return char.isalnum() and len(char.lower()) == 1


def _ascii_letters_and_digits(char: str) -> bool:
    return char.isascii() and char.isalnum()


def _fold_with(keep: Callable[[str], bool]) -> Callable[[str], str]:
    return lambda text: "".join(char.lower() for char in text if keep(char))


FOLD_KEEPS = (_letters_and_digits, _ascii_letters_and_digits)
FOLDS = tuple(map(_fold_with, FOLD_KEEPS))
# How a quote escapes a character outside ASCII (`\\xcb`, `\\uff33`), and a control character (`\\n`, `\\t`, `\\r`):
# no letter of the value it shows. A quote leaves a backslash of the value as it is, so `\\n` may also be the value's
# own backslash and n: each reading is tried.
PYTHON_ESCAPES = (
    re.compile(r"\\(?:x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8})"),
    re.compile(r"\\(?:[ntr]|x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8})"),
)


def hide_folded(text: str, forms: frozenset[str]) -> str:
    """The text with every span that spells one of the `folded_secret_forms` in another case or with other separators
    replaced by ***: a message that turns a name into a config key (`ZQ9_SECRET_VALUE_77XYZ` -> `zq9SecretValue77xyz`)
    showed a secret value the stack's own filter hides only as written (an attacker)."""
    if not forms:
        return text
    spans: list[tuple[int, int]] = []
    escapes = [
        {index for match in escape.finditer(text) for index in range(*match.span())} for escape in PYTHON_ESCAPES
    ]
    for kept in (
        *([index for index, char in enumerate(text) if keep(char)] for keep in FOLD_KEEPS),
        # as a quote shows it, a letter outside ASCII escaped (`\\xcb`): the escape is no letter of the value
        *(
            [index for index, char in enumerate(text) if _ascii_letters_and_digits(char) and index not in skip]
            for skip in escapes
        ),
    ):
        folded = "".join(text[index].lower() for index in kept)
        for form in forms:
            start = folded.find(form)
            while start >= 0:
                spans.append((kept[start], kept[start + len(form) - 1] + 1))
                start = folded.find(form, start + 1)
    for start, end in sorted(_merged(spans), reverse=True):
        text = text[:start] + REDACTED + text[end:]
    return text


# The stack's own secret values, folded, that a message made while a command or program runs hides
# (`hide_in_messages`): set by the console as it learns them and by the program from its secret config.
MESSAGE_SECRETS: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar("message_secrets", default=frozenset())


def hide_in_messages(text: str) -> str:
    """`hide_folded` with the secret values known in this context (MESSAGE_SECRETS): for a message before it is cut
    short or escaped, which would leave a part or an escaped form of a secret that no later filter finds."""
    return hide_folded(text, MESSAGE_SECRETS.get())


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def known_secret_texts(secrets: Iterable[str]) -> set[str]:
    """The texts that show a known secret value: the value and its JSON-escaped form (a JSON file holds
    that). As the Pulumi CLI's filter of secrets (pulumi/pulumi sdk/go/common/util/logging/log.go
    `CreateFilter`), not a value shorter than three characters nor true or false: every file holds those;
    each also without its leading and trailing blanks. A value of KNOWN_ENCODED_MIN characters or more is also
    found encoded (`known_encodings`)."""
    texts: set[str] = set()
    # also without the blanks around it: a YAML block scalar (`|`) keeps the value's last line break
    for secret in {form for value in secrets for form in (value, value.strip())}:
        if len(secret) >= 3 and secret.lower() not in ("true", "false"):
            texts |= {secret, json.dumps(secret)[1:-1]}
            if len(secret) >= KNOWN_ENCODED_MIN:
                texts |= known_encodings(secret)
    return texts


# A known value shorter than this is not looked for encoded: the few characters its bytes alone decide in an
# encoding (a 3-character value: 2 to 4) are in many texts, and would be refused or hidden there.
KNOWN_ENCODED_MIN = 8


def _base64_forms(data: bytes) -> set[str]:
    standard = aligned_encodings(data, 3, base64.b64encode)
    return {*standard, *(needle.translate(STANDARD_AS_URL_SAFE) for needle in standard)}


STANDARD_AS_URL_SAFE = str.maketrans("+/", "-_")


def known_encodings(secret: str) -> set[str]:
    """A known secret value as the encodings a program or a pod decodes put it into a text: hex (either case),
    base64 and base64url (RFC 4648 sections 4 and 5) alone or inside what is encoded, that base64 encoded again
    (a Secret's `data` value of a file that holds one), base32 (section 6, either case), and base64 of its UTF-16
    (PowerShell's `-EncodedCommand`). Escapes (JSON, HTML, URL) are read through where it is looked for
    (`holds_known_secret`), so they need no form of their own here. A compressed value is not found."""
    data = secret.encode("utf-8", "surrogatepass")
    base64_forms = _base64_forms(data)
    base32_forms = aligned_encodings(data, 5, base64.b32encode)
    return {
        data.hex(),
        data.hex().upper(),
        *base64_forms,
        *(twice for once in base64_forms for twice in _base64_forms(once.encode("ascii"))),
        *base32_forms,
        *(form.lower() for form in base32_forms),
        *(
            form
            for codec in ("utf-16-le", "utf-16-be")
            for form in _base64_forms(secret.encode(codec, "surrogatepass"))
        ),
    }


def holds_known_secret(text: str, known: set[str]) -> bool:
    """Whether the text shows one of the `known_secret_texts`, as written or behind its JSON, HTML or URL escapes
    (up to ESCAPE_LAYERS deep: `%2F`, `\\u002f` and `&#47;` are each a `/` to what reads them)."""
    if not known:
        return False
    decoded: str | None = text
    for _ in range(ESCAPE_LAYERS + 1):
        if decoded is None:
            return False
        for shown in dict.fromkeys((decoded, as_read(decoded))):
            if any(secret in shown for secret in known) or _in_a_wrapped_run(shown, known):
                return True
        decoded = unescaped(decoded)
    return False


def _in_a_wrapped_run(text: str, known: set[str]) -> bool:
    """Whether an encoding wrapped onto lines (`base64`'s 76 columns, folded into spaces by a YAML scalar) holds one
    of the texts once its breaks are dropped, as a decoder reads it."""
    for start, end in EncodedSecrets.runs(text):
        run = text[start:end]
        if WRAP_BREAK.search(run) is not None:
            joined = WRAP_BREAK.sub("", run)
            if any(secret in joined for secret in known):
                return True
    return False
