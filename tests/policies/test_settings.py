"""Every policy setting declares its range, and the pack's config schema (what `pulumi preview
--policy-pack-config` validates a config against) carries it."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft7Validator

from commands.check_policies.runner import check_records
from policies.pack import POLICIES
from policies.settings import Setting
from tests.policy_stacks import serving_stack


def _schemas() -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (policy.name, key, schema)
        for policy in POLICIES
        if policy.config_schema is not None
        for key, schema in policy.config_schema.properties.items()
    ]


def test_every_setting_of_the_pack_is_bounded() -> None:
    unbounded = []
    for name, key, schema in _schemas():
        kind = schema["type"]
        bounded = {
            "number": {"minimum", "maximum"} <= schema.keys(),
            "array": "minItems" in schema and "pattern" in schema["items"],
            "string": "pattern" in schema,
            "boolean": True,
        }[kind]
        if not bounded:
            unbounded.append(f"{name}.{key}")
    assert unbounded == []


def test_every_default_fits_its_own_schema() -> None:
    for name, key, schema in _schemas():
        assert list(Draft7Validator(schema).iter_errors(schema["default"])) == [], f"{name}.{key}"


@pytest.mark.parametrize(
    ("name", "key", "value"),
    [
        ("LLM-GPU-003", "maxSpotGraceSeconds", -5),
        ("LLM-GPU-003", "maxSpotGraceSeconds", 1e308),
        ("LLM-GPU-004", "a4Regions", []),
        ("LLM-GPU-001", "allowedGpuTypes", ["nvidia-b200\x1b[2J"]),
        ("LLM-VLLM-013", "mtpModels", [""]),
    ],
)
def test_the_schema_refuses_a_value_out_of_range(name: str, key: str, value: Any) -> None:
    schema = next(schema for policy, setting, schema in _schemas() if (policy, setting) == (name, key))
    assert list(Draft7Validator(schema).iter_errors(value)) != []


@pytest.mark.parametrize("key", ["hybridModels", "mtpModels", "noNvfp4KvCacheModels", "moeModels", "allowedServices"])
def test_a_list_of_models_or_names_may_be_empty_for_a_team_that_has_none(key: str) -> None:
    schemas = [schema for _, setting, schema in _schemas() if setting == key]
    assert schemas and all(list(Draft7Validator(schema).iter_errors([])) == [] for schema in schemas)


def test_a_number_setting_without_a_range_is_a_declaration_error() -> None:
    with pytest.raises(TypeError, match="needs a minimum and a maximum"):
        Setting("limit", 5, "a limit")
    with pytest.raises(TypeError, match="outside its range"):
        Setting("limit", 50, "a limit", minimum=0, maximum=30)


def test_a_long_configured_region_list_is_named_a_dozen_at_a_time() -> None:
    """A policy config of 120,000 regions was printed whole in each LLM-GPU-004 line (an attacker)."""
    config = {"LLM-GPU-004": {"a4Regions": [f"region{index}" for index in range(5000)]}}
    messages = [
        violation.message for violation in check_records(serving_stack(), config) if violation.policy == "LLM-GPU-004"
    ]
    assert messages and all(len(message) < 800 and "and 4,988 more" in message for message in messages)
