"""Secrets: the Hugging Face token stays a Pulumi secret end to end."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator

import pulumi.runtime.config as runtime_config
from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, ResourceValidationPolicy

from policies.settings import Setting, config_schema
from policies.values import as_mapping, known_strings

TOKEN_CONFIG_KEYS = Setting("tokenConfigKeys", ["hfToken"], "secret stack config keys that hold the Hugging Face token")
EMBEDDED_TOKEN = re.compile(r"(?<![A-Za-z0-9_])hf_[A-Za-z0-9_]{8,}")
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


def _secret_config_values(keys: list[str]) -> set[str]:
    """The decrypted values of the stack's token config: the engine gives a policy pack the stack
    config and the resource inputs with secrets decrypted, so the real secret is allowed to appear."""
    suffixes = tuple(f":{key}" for key in keys)
    sources = (runtime_config.get_config_env(), runtime_config.CONFIG.get())
    return {str(value) for settings in sources for key, value in settings.items() if key.endswith(suffixes) and value}


def _decoded(text: str) -> str:
    try:
        return base64.b64decode(text, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return ""


def _no_token_literal(args: ResourceValidationArgs, report: ReportViolation) -> None:
    allowed = _secret_config_values([str(key) for key in TOKEN_CONFIG_KEYS.read(args.get_config())])
    strings = list(known_strings(args.props))
    if args.resource_type == "kubernetes:core/v1:Secret":
        data = as_mapping(args.props.get("data"))
        strings += [(f"data.{key} (base64)", _decoded(text)) for key, text in known_strings(data)]
    for path, text in strings:
        if any(candidate not in allowed for candidate in token_candidates(text)):
            report(f"a Hugging Face token literal at {path}; set it with `pulumi config set --secret hfToken`")


NO_TOKEN_LITERAL = ResourceValidationPolicy(
    name="LLM-SEC-001",
    display_name="No Hugging Face token as a literal",
    description=(
        "A string that looks like a Hugging Face token (hf_...) in any resource input, other than the stack's own "
        "secret hfToken config value: keep the token a Pulumi secret end to end (pulumi config set --secret), "
        "never a literal in a manifest, an export or a log."
    ),
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_no_token_literal,
    config_schema=config_schema(TOKEN_CONFIG_KEYS),
)
