"""What each pattern of the config model allows, in words: a bad value's message says what is allowed,
never the raw regular expression (tests/stacks/config/test_config_messages.py checks that every
pattern of the model has its words here)."""

from __future__ import annotations

from common.grammars import GRAMMAR_WORDS
from components.capacity import CAPACITY_KIND_PATTERN, CAPACITY_KINDS
from stacks.config.operations import CLOCK_TIME
from stacks.config.routing import PROXY_SUBNET_REFERENCE
from stacks.config.stack import GCP_REGION

ENV_NAME = r"^[A-Z_][A-Z0-9_]{0,127}$"

PATTERN_WORDS: dict[str, str] = {
    GCP_REGION: "a Google Cloud region name like us-central1 or europe-west4 (lower case)",
    CLOCK_TIME: "a time of day HH:MM on the 24-hour clock, like 08:00 or 19:30",
    **GRAMMAR_WORDS,
    PROXY_SUBNET_REFERENCE: "a subnetwork name (1-63 lower-case letters, digits and hyphens, a letter first), or "
    "projects/PROJECT/regions/REGION/subnetworks/NAME, or that path's https://www.googleapis.com/compute/v1/ URL",
    ENV_NAME: "an environment variable name of 1-128 upper-case letters, digits and underscores, not starting with "
    "a digit, like MY_SETTING",
    r"^[A-Za-z][A-Za-z0-9_-]{0,63}$": "a config key of 1-64 ASCII letters, digits, '_' and '-', a letter first",
    r"^[A-Z_0-9]+$": "upper-case letters, digits and underscores, like FLASHINFER",
    r"^[a-z0-9_]+$": "lower-case letters, digits and underscores, like qwen3",
    r"^[a-z][a-z0-9]+$": "a Compute Engine machine family like c4 or n2 (lower-case letters and digits, a letter "
    "first)",
    r"^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$": "1-40 lower-case letters, digits and hyphens, a letter first and no "
    "hyphen last",
    r"^[a-z]([-a-z0-9]{0,20}[a-z0-9])?$": "1-22 lower-case letters, digits and hyphens, a letter first and no "
    "hyphen last",
    r"^[\x20-\x7e]{1,64}$": "1-64 printable ASCII characters",
    r"^[^@\s:\x00-\x1f\x7f]+@[^@\s:/\x00-\x1f\x7f]+\.[^@\s:/\x00-\x1f\x7f]+$": "an email address like "
    "oncall@example.com (without `:` or `/`)",
    r"^projects/[a-z][a-z0-9-]{4,28}[a-z0-9]/notificationChannels/[0-9]+$": "a Cloud Monitoring notification channel, "
    "projects/PROJECT_ID/notificationChannels/NUMBER",
    r"^sha256:[0-9a-f]{64}$": "an image digest: sha256: and 64 lower-case hexadecimal digits",
    # the measurements file (stacks/capacity/measurements.py): a measurement's id and date
    r"^[a-z0-9][a-z0-9-]{0,62}$": "1-63 lower-case letters, digits and hyphens, a letter or digit first",
    r"^\d{4}-\d{2}(-\d{2})?$": "a date YYYY-MM or YYYY-MM-DD",
    r"^\d+\.\d+\.\d+$": "a vLLM release like 0.19.0 (the version its image tag names)",
    CAPACITY_KIND_PATTERN: f"a capacity source type: {', '.join(CAPACITY_KINDS)}",
    r"^[0-9]{1,7} (s|MiB/s)$": "seconds (`60 s`) or a throughput (`2400 MiB/s`), as bench-compare --record writes it",
}


def allowed_by(pattern: str) -> str:
    """The words for a pattern of the model; one the table misses is still not shown raw."""
    return PATTERN_WORDS.get(pattern, "the form docs/settings.md gives for this key")
