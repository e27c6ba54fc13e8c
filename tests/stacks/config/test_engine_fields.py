"""One list of vLLM engine settings (components/vllm.py ENGINE_FIELDS, the flags' fields): the
engine config holds each, a profile sets all but the stack's own, and the Args take each by name."""

from __future__ import annotations

from components.vllm import ENGINE_FIELDS, PROFILE_ENGINE_FIELDS, STACK_ENGINE_FIELDS
from stacks.args import engine_flags
from stacks.config.engine import EngineConfig
from stacks.config.profiles import PROFILE_ENGINE_KEYS, ProfileName, profile_of


def test_the_engine_config_holds_every_engine_flag() -> None:
    assert set(ENGINE_FIELDS) <= set(EngineConfig.model_fields)
    # the engine settings that are no flag: the name clients send, and the secret environment (the
    # component's own Args: its values come from secret config, never the flags)
    assert set(EngineConfig.model_fields) - set(ENGINE_FIELDS) == {"served_model_name", "secret_env"}


def test_a_profile_sets_every_engine_flag_but_the_stacks_own() -> None:
    assert PROFILE_ENGINE_KEYS == PROFILE_ENGINE_FIELDS
    assert set(PROFILE_ENGINE_FIELDS) | set(STACK_ENGINE_FIELDS) == set(ENGINE_FIELDS)
    assert not set(PROFILE_ENGINE_FIELDS) & set(STACK_ENGINE_FIELDS)


def test_the_flags_carry_each_setting_of_a_profile() -> None:
    for name in ProfileName:
        engine = profile_of(name).engine
        flags = engine_flags(engine)
        assert flags.max_num_seqs == engine.max_num_seqs and flags.kv_cache_dtype == engine.kv_cache_dtype.value
        assert flags.extra_args == tuple(engine.extra_args)
