"""One list of vLLM engine settings (components/vllm.py ENGINE_FIELDS, the flags' fields): the
engine config holds each, a profile sets all but the stack's own, the Args take each by name, and a
measurement's configuration matches each but those it leaves out."""

from __future__ import annotations

import typing
from enum import Enum
from typing import Any

import pytest
from pydantic.alias_generators import to_camel

from commands.plan.assumptions import differences as configuration_differences
from components.vllm import ENGINE_FIELDS, PROFILE_ENGINE_FIELDS, STACK_ENGINE_FIELDS, EngineFlags
from stacks.args import engine_flags
from stacks.capacity.measurements import (
    MEASURED_AS,
    MEASURED_ENGINE_FIELDS,
    NOT_MEASURED,
    Configuration,
    configuration_of,
)
from stacks.config.engine import EngineConfig, SpeculativeConfig, WorkloadConfig
from stacks.config.profiles import ProfileName, profile_of
from stacks.load.loader import validate


def test_the_engine_config_holds_every_engine_flag() -> None:
    assert set(ENGINE_FIELDS) <= set(EngineConfig.model_fields)
    # the engine settings that are no flag: the name clients send, and the secret environment (the
    # component's own Args: its values come from secret config, never the flags)
    assert set(EngineConfig.model_fields) - set(ENGINE_FIELDS) == {"served_model_name", "secret_env"}


def test_a_profile_sets_every_engine_flag_but_the_stacks_own() -> None:
    assert set(PROFILE_ENGINE_FIELDS) | set(STACK_ENGINE_FIELDS) == set(ENGINE_FIELDS)
    assert not set(PROFILE_ENGINE_FIELDS) & set(STACK_ENGINE_FIELDS)


def test_the_flags_carry_each_setting_of_a_profile() -> None:
    for name in ProfileName:
        engine = profile_of(name).engine
        flags = engine_flags(engine, WorkloadConfig().concurrency_per_node)
        assert flags.max_num_seqs == engine.max_num_seqs and flags.kv_cache_dtype == engine.kv_cache_dtype.value
        assert flags.extra_args == tuple(engine.extra_args)


def _another(name: str, value: Any) -> Any:  # noqa: PLR0911 (one answer per kind of value)
    """Another value of a setting's kind, as a stack file could give it."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, Enum):
        return next(member for member in type(value) if member is not value)
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        return f"{value}-other"
    if isinstance(value, list):
        return [*value, "--other"]
    if isinstance(value, dict):
        return {**value, "OTHER": "1"}
    if isinstance(value, SpeculativeConfig):
        return None
    assert value is None
    return 4096 if int in typing.get_args(typing.get_type_hints(EngineFlags)[name]) else "other"


def test_a_measurement_names_only_engine_settings_of_the_one_list() -> None:
    assert set(ENGINE_FIELDS) >= NOT_MEASURED and set(MEASURED_AS) <= set(MEASURED_ENGINE_FIELDS)
    engine_keys = {MEASURED_AS.get(name, name) for name in MEASURED_ENGINE_FIELDS}
    assert engine_keys <= set(Configuration.model_fields)
    # the file's own names for three of them
    assert {"expert_parallel", "prefix_caching", "chunked_prefill"} <= engine_keys


@pytest.mark.parametrize("name", ENGINE_FIELDS)
def test_each_engine_setting_is_matched_by_a_measurement_unless_left_out(name: str) -> None:
    """Changing one engine setting of a stack changes the configuration a measurement must match in
    that setting's key alone, except for the settings a measurement leaves out."""
    config = validate({"environment": "dev", "project": "my-llm-dev"})
    changed = config.model_copy(
        update={"engine": config.engine.model_copy(update={name: _another(name, getattr(config.engine, name))})}
    )
    differences = configuration_differences(configuration_of(changed), configuration_of(config))
    if name in NOT_MEASURED - {"image"}:
        assert differences == []
    elif name == "image":  # matched by its release
        assert differences == ["vllmRelease"]
    else:
        assert differences == [to_camel(MEASURED_AS.get(name, name))]
