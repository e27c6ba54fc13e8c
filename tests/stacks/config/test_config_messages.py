"""Every bad value of every setting is one line that names the key, says what is wrong and what is
allowed: a number is shown as a number, a pattern in words (stacks/config/pattern_words.py), and no
hostile value (a list or mapping for a scalar, a huge number, NaN, unicode) escapes as a crash."""

from __future__ import annotations

import copy
import math
import re
from typing import Any

import pytest

from stacks.config.pattern_words import PATTERN_WORDS
from stacks.config.quoting import quote
from stacks.config.stack import StackConfig
from stacks.load.loader import InvalidConfig, _allowed_keys, validate

BASE = {"environment": "dev", "project": "my-llm-dev", "region": "us-central1", "zones": ["us-central1-b"]}
HOSTILE: list[Any] = [["a"], {"x": 1}, 10**40, -1, 4096.5, math.nan, "\u00fcn\u00efc\u00f8d\u00e9\u202e", True]
LIST_ITEMS: dict[str, list[dict[str, Any]]] = {
    "capacity.sources": [{"type": "reservation", "name": "r1"}, {"type": "flexStart"}, {"type": "spot"}],
    "cluster.authorizedNetworks": [{"cidrBlock": "10.0.0.0/8", "displayName": "office"}],
    "schedule.entries": [{"name": "wake", "cron": "0 8 * * *", "replicas": 1}],
}
# A number quoted as if it had been a string in the stack file: "got '4096.5'", "'True'".
QUOTED_NUMBER = re.compile(r"'(-?[0-9][0-9.e+]*|True|False|None)'")


def _patterns(node: Any) -> set[str]:
    if isinstance(node, dict):
        found = {value for key, value in node.items() if key == "pattern" and isinstance(value, str)}
        return found.union(*(_patterns(value) for value in node.values() if not isinstance(value, str)))
    if isinstance(node, list):
        return set().union(*(_patterns(value) for value in node))
    return set()


def _settings() -> list[tuple[str, dict[str, Any]]]:
    """Every key of the model with each hostile value, at its place in a stack file."""
    cases = []
    for group, keys in _allowed_keys(StackConfig).items():
        if "[" in group:
            continue
        for key in keys:
            for value in HOSTILE:
                raw: dict[str, Any] = copy.deepcopy(BASE)
                node = raw
                for part in group.split(".") if group else []:
                    node = node.setdefault(part, {})
                node[key] = value
                cases.append((f"{group}.{key}".lstrip("."), raw))
    for path, items in LIST_ITEMS.items():
        group, key = path.split(".")
        for item in items:
            for field in [*item, "unknownKey"]:
                for value in HOSTILE:
                    cases.append((f"{path}[0].{field}", {**BASE, group: {key: [{**item, field: value}]}}))
    return cases


def test_every_pattern_of_the_model_has_its_words() -> None:
    schema = StackConfig.model_json_schema(by_alias=True)
    assert _patterns(schema) - PATTERN_WORDS.keys() == set()


def test_every_hostile_value_of_every_setting_is_one_line_naming_the_key() -> None:
    failures = []
    for key, raw in _settings():
        try:
            validate(raw)
        except InvalidConfig as error:
            message = str(error)
            named = message.removeprefix("invalid stack config: ")
            problems = [
                "not one line" if "\n" in message else "",
                "no key named" if not re.match(r"[A-Za-z\[\].0-9]+:", named) else "",
                "a raw pattern" if "match pattern" in message or "'^" in message else "",
                "a quoted number" if QUOTED_NUMBER.search(message) else "",
            ]
            if any(problems):
                failures.append(f"{key}={raw}: {', '.join(filter(None, problems))}: {message}")
        except Exception as error:  # any other exception is a crash: reported, not raised
            failures.append(f"{key}: {type(error).__name__}: {error}")
    assert failures == []


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (4096.5, "4096.5"),
        (True, "true"),
        (None, "null"),
        (-3, "-3"),
        (10**40, "a number of about 10^40"),
        (1e308, "1e+308"),
        ("4096.5", "'4096.5'"),
    ],
)
def test_a_number_is_quoted_as_a_number_and_a_string_as_a_string(value: Any, shown: str) -> None:
    assert quote(value) == shown


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ({"region": "mars-north1"}, "region: 'mars-north1' is not allowed; allowed: a Google Cloud region name"),
        ({"region": "us-central9"}, "region: 'us-central9' is not a Google Cloud region; allowed: one of the 42"),
        ({"engine": {"maxModelLen": 4096.5}}, "engine.maxModelLen: Input should be a valid integer (got 4096.5)"),
        # the CLI hands a top-level setting over as a string: a number there is still shown as one
        ({"region": "4096.5"}, "region: 4096.5 is not allowed; allowed: a Google Cloud region name"),
        ({"capacity": "5"}, "capacity: Input should be an object (got 5)"),
        # inside an object YAML keeps its types: a quoted number is a string, shown as one
        ({"engine": {"maxModelLen": "4096"}}, "engine.maxModelLen: Input should be a valid integer (got '4096')"),
        ({"cluster": {"name": "Bad_Name"}}, "cluster.name: 'Bad_Name' is not allowed; allowed: 1-40 lower-case"),
        ({"engine": {"extraEnv": {"bad-name": "1"}}}, "engine.extraEnv: the name 'bad-name' is not allowed"),
        ({"capacity": {"sources": [{"type": 7}]}}, "capacity.sources[0].type: 7 is not a capacity source"),
        ({"capacity": {"sources": [{}]}}, "capacity.sources[0].type: required key is missing; allowed: 'spot'"),
        (
            {"capacity": {"sources": [{"type": "spot", "name": "r"}]}},
            "capacity.sources[0].name: unknown key; allowed keys here: type",
        ),
        (
            {"engine": {"extraArgs": ["--x", 5]}},
            "engine.extraArgs[1]: Input should be a valid string (got 5); allowed: a text",
        ),
        (
            {"engine": {"extraEnv": {"A": None}}},
            "engine.extraEnv.A: Input should be a valid string; allowed: a text (in YAML",
        ),
        # a review: a switch or a group given another type said what is wrong and not what is allowed
        (
            {"routing": {"gateway": {"endpointPerRank": 1}}},
            "routing.gateway.endpointPerRank: Input should be a valid boolean (got 1); allowed: true or false",
        ),
        (
            {"warmCapacity": True},
            "warmCapacity: Input should be an object (got true); allowed: a mapping of enabled, nodes",
        ),
        (
            {"engine": {"speculative": 3}},
            "engine.speculative: Input should be an object (got 3); allowed: a mapping of method, numSpeculativeTokens "
            "or null",
        ),
        ({"engine": {"extraEnv": 5}}, "engine.extraEnv: Input should be an object (got 5); allowed: a mapping"),
    ],
)
def test_a_bad_value_says_what_is_allowed_in_words(settings: dict[str, Any], expected: str) -> None:
    with pytest.raises(InvalidConfig) as error:
        validate({**BASE, **settings})
    assert expected in str(error.value)


@pytest.mark.parametrize(
    ("alerts", "refusal"),
    [
        # a right-to-left override shows a reader another address (plan.md printed it as it is)
        ({"email": "ops\u202e@moc.elpmaxe.com"}, "alerts.email: has an unprintable character (\\u202e, character 4)"),
        (
            {"email": "ops\u200b@example.com"},
            "has an unprintable character (\\u200b, character 4); allowed: printable text",
        ),
        # user:password@host is no address, and its password would reach plan.md and the state (an attacker)
        ({"email": "admin:Zq8hunter2xyz@example.com"}, "monitoring.alerts.email: 'admin:***@example.com' is not"),
        # a channel id of other digits than ASCII's, which Cloud Monitoring does not take
        ({"notificationChannel": "projects/my-proj1/notificationChannels/\u0664\u0665"}, "is not allowed; allowed:"),
    ],
)
def test_alert_addresses_read_as_they_are(alerts: dict[str, str], refusal: str) -> None:
    with pytest.raises(InvalidConfig) as refused:
        validate({"environment": "dev", "project": "my-llm-dev", "monitoring": {"alerts": alerts}})
    assert refusal in str(refused.value)


@pytest.mark.parametrize(
    "value",
    [
        "AKIA" + "QWERTYUIOP" + "\u200b" + "ASDFGH",  # an AWS key id with a zero-width space in it
        "ghp_" + "aB3dE" * 2 + "\u200b" + "aB3dE" * 5 + "x",  # a GitHub token so
        "passw" + "\u200bord=Hunt3r2" + "Xyzzy9",  # an assignment whose key a zero-width space cuts
        "PASSWORD\xa0=\xa0Hunt3r2" + "Xyzzy9",  # no-break spaces around its `=`
    ],
)
def test_a_refused_value_with_format_characters_shows_no_secret(value: str) -> None:
    """An attacker: a token pasted with a zero-width space in it was refused for its control character, and the
    refusal quoted it (the whole AWS key id, 39 of a GitHub token's 40 characters)."""
    with pytest.raises(InvalidConfig) as refused:
        validate({**BASE, "engine": {"extraEnv": {"NOTE": value}}})
    message = str(refused.value)
    assert message.count("\n") == 0 and "engine.extraEnv.NOTE" in message
    assert "QWERTYUIOP" not in message and "aB3dE" not in message and "Hunt3r2" not in message


@pytest.mark.parametrize("zone", ["localtime", "right/UTC", "posixrules", "posix/UTC", "Local"])
def test_a_time_zone_is_an_iana_name_whatever_the_machine_holds(zone: str) -> None:
    """The render machine's zoneinfo files made `localtime` and `right/UTC` pass; the pinned tzdata list decides."""
    schedule = {"timeZone": zone, "entries": [{"name": "wake", "cron": "0 8 * * 1-5", "replicas": 1}]}
    with pytest.raises(InvalidConfig, match="is not an IANA time zone"):
        validate({"environment": "dev", "project": "my-llm-dev", "schedule": schedule})


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("admin:S3cret99@10.0.0.1", "'admin:***@10.0.0.1'"),  # a gateway address with a user and password
        ("vllm:v0.19.0@sha256:abc", "'vllm:v0.19.0@sha256:abc'"),  # an image by tag and digest
        ("10.0.0.1:8000", "'10.0.0.1:8000'"),
        ("ubuntu:22.04@sha512:abc", "'ubuntu:22.04@sha512:abc'"),
        ("mailto:ml-oncall@example.com", "'mailto:ml-oncall@example.com'"),  # an address, shown to be fixed
    ],
)
def test_a_quoted_value_hides_a_password_before_a_hosts_at(value: str, shown: str) -> None:
    """An attacker's finding: benchmark.gatewayAddress 'admin:S3cret99@10.0.0.1' was quoted whole in its refusal."""
    assert quote(value) == shown
