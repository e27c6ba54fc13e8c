"""Every numeric setting is bounded on both sides, tightly enough that every figure the planner
computes from it stays finite (1e308 as a price once overflowed to infinity and crashed the render),
and a refused number is told the allowed range."""

from __future__ import annotations

import copy
import math
from typing import Any

import pytest
from pydantic import BaseModel

from common.model_ranges import _members, numeric_ranges
from components.capacity import CAPACITY_KINDS
from stacks.config.pricing import PricingConfig
from stacks.config.stack import StackConfig
from stacks.load.loader import InvalidConfig, validate

BASE = {"environment": "dev", "project": "my-llm-dev", "region": "us-central1", "zones": ["us-central1-b"]}
# The registered capacity kinds as a refusal names them ('spot', 'flexStart' or 'reservation').
KINDS_IN_WORDS = ", ".join(f"'{kind}'" for kind in list(CAPACITY_KINDS)[:-1]) + f" or '{list(CAPACITY_KINDS)[-1]}'"
REFUSED = ["x", 10**40, -(10**6), 1e308, math.nan, math.inf, 2.5e9]


def _numeric_fields(model: type[BaseModel], path: str = "", seen: frozenset[type] = frozenset()) -> list[Any]:
    """(key, bounds) of every field of the model and the models it holds that takes a number."""
    found = []
    for name, info in model.model_fields.items():
        key = f"{path}.{info.alias or name}" if path else info.alias or name
        members = _members(info.annotation)
        numbers = [metadata for member, metadata in members if member in (int, float)]
        if numbers:
            bounds = {
                bound
                for item in [*info.metadata, *numbers[0]]
                for bound in ("ge", "gt", "le", "lt")
                if hasattr(item, bound)
            }
            found.append((key, bounds))
        for member, _ in members:
            for inner in (member, *getattr(member, "__args__", ())):
                if isinstance(inner, type) and issubclass(inner, BaseModel) and inner not in seen:
                    found += _numeric_fields(inner, key, seen | {inner})
    return found


def test_every_numeric_setting_has_a_lower_and_an_upper_bound() -> None:
    fields = _numeric_fields(StackConfig)
    assert len(fields) > 60
    unbounded = [key for key, bounds in fields if not ({"ge", "gt"} & bounds and {"le", "lt"} & bounds)]
    assert unbounded == []


def _with(key: str, value: Any) -> dict[str, Any]:
    raw: dict[str, Any] = copy.deepcopy(BASE)
    *groups, leaf = key.split(".")
    node = raw
    for group in groups:
        node = node.setdefault(group, {})
    node[leaf] = value
    return raw


@pytest.mark.parametrize(
    "field", [info.alias for info in PricingConfig.model_fields.values() if info.annotation is float]
)
def test_a_price_no_real_price_comes_near_is_refused_naming_the_key_and_range(field: str) -> None:
    with pytest.raises(InvalidConfig) as error:
        validate(_with(f"pricing.{field}", 1e308))
    assert f"pricing.{field}: " in str(error.value)
    assert "; allowed: a number from " in str(error.value)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("pricing.utilization", 5e-324),  # USD per million tokens at that load divided by it: infinite
        ("timeToServe.imagePullMibps", 5e-324),  # the image pull phase divided by it: infinite seconds
        ("autoscaling.targetKvCacheUsage", 1e-5),  # the HPA's target rounded to 0m, which Kubernetes refuses
    ],
)
def test_a_divisor_near_zero_is_refused(key: str, value: float) -> None:
    with pytest.raises(InvalidConfig, match=f"{key}: .*; allowed: a number from "):
        validate(_with(key, value))


RANGED_KEYS = sorted(key for key in numeric_ranges(StackConfig) if "[]" not in key)


def test_a_numeric_refusal_names_the_allowed_range() -> None:
    missing = []
    for key in RANGED_KEYS:
        for value in REFUSED:
            try:
                validate(_with(key, value))
            except InvalidConfig as error:
                if f"{key}: " in str(error) and f"; allowed: {numeric_ranges(StackConfig)[key]}" not in str(error):
                    missing.append(str(error))
    assert missing == []


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        (
            "capacity.nodes",
            "1e309",
            "capacity.nodes: Input should be a valid integer (got '1e309'); allowed: an integer from 1 to 256",
        ),
        (
            "pricing.spotPerNodeHour",
            "1e309",
            "Input should be a valid number (got '1e309'); allowed: a number from 0 to 10,000",
        ),
        (
            "pricing.spotPerNodeHour",
            math.nan,
            "pricing.spotPerNodeHour: infinite or NaN; allowed: a number from 0 to 10,000",
        ),
        ("target.budgetPerHour", 0, "; allowed: a number above 0 and at most 10,000,000"),
        ("benchmark.rangeRatio", 1, "; allowed: a number at least 0 and below 1"),
    ],
)
def test_the_range_in_words(key: str, value: Any, expected: str) -> None:
    with pytest.raises(InvalidConfig) as error:
        validate(_with(key, value))
    assert expected in str(error.value)


def test_a_capacity_source_setting_names_its_range() -> None:
    raw = {**BASE, "capacity": {"sources": [{"type": "flexStart", "maxRunDurationSeconds": 1.5}]}}
    with pytest.raises(InvalidConfig) as error:
        validate(raw)
    assert "capacity.sources[0].maxRunDurationSeconds: " in str(error.value)
    assert "; allowed: an integer from 600 to 604,800" in str(error.value)


@pytest.mark.parametrize(
    ("settings", "key", "allowed"),
    [
        (
            {"capacity": {"sources": []}},
            "capacity.sources",
            "a list of 1 to 8 items, each with type " + KINDS_IN_WORDS,
        ),
        ({"zones": [f"us-central1-{zone}" for zone in "abcdf"]}, "zones", "a list of 1 to 4 items"),
        (
            {"schedule": {"businessHours": {"days": []}}},
            "schedule.businessHours.days",
            "a list of at least 1 item, each one of 'mon', 'tue', 'wed', 'thu', 'fri', 'sat' or 'sun'",
        ),
        ({"engine": {"extraArgs": ["--x"] * 65}}, "engine.extraArgs", "a list of at most 64 items"),
    ],
)
def test_a_list_of_the_wrong_length_is_told_the_allowed_length_and_items(
    settings: dict[str, Any], key: str, allowed: str
) -> None:
    with pytest.raises(InvalidConfig) as error:
        validate({**BASE, **settings})
    assert str(error.value).startswith(f"invalid stack config: {key}: ")
    assert str(error.value).endswith(f"; allowed: {allowed}")
