"""engine.secretEnv names secret config keys of their own: not the Hugging Face token, not a setting."""

from __future__ import annotations

import pytest

from stacks.load.loader import InvalidConfig, secret_env_keys

PREFIX = "gke-b200-serving:"


def test_the_keys_secret_env_names_are_secrets() -> None:
    settings = {f"{PREFIX}engine": '{"secretEnv": {"VLLM_API_KEY": "vllmApiKey"}}'}
    assert secret_env_keys(settings, PREFIX) == {"vllmApiKey"}


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("hfToken", "engine.secretEnv.VLLM_API_KEY: hfToken is the Hugging Face token, which only the download Job"),
        ("project", "engine.secretEnv.VLLM_API_KEY: 'project' is a setting of the stack, not a secret config key"),
        ("warmCapacity", "engine.secretEnv.VLLM_API_KEY: 'warmCapacity' is a setting of the stack"),
    ],
)
def test_the_token_and_the_settings_are_refused(key: str, message: str) -> None:
    """`VLLM_API_KEY: hfToken` rendered, and put the token in every serving pod and every client's hands;
    `VLLM_API_KEY: project` was refused as "project: required key is missing"."""
    with pytest.raises(InvalidConfig) as refused:
        secret_env_keys({f"{PREFIX}engine": {"secretEnv": {"VLLM_API_KEY": key}}}, PREFIX)
    assert str(refused.value).startswith(f"invalid stack config: {message}")


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        ({"secure": "v1:AAAABBBBCCCC"}, "an encrypted value"),
        ({"fn::secret": "sk-live"}, "an object"),
        (["openaiApiKey"], "a list"),
        (12, "a number"),
        (True, "true or false"),
        (None, "null"),
    ],
)
def test_a_value_that_is_not_a_key_name_is_refused_by_its_kind(value: object, kind: str) -> None:
    """`pulumi config set --secret --path engine.secretEnv.X VALUE` writes the secret itself in the map: it failed with
    "TypeError: unhashable type: 'dict'" (exit 1) and would have under `pulumi up` too."""
    with pytest.raises(InvalidConfig) as refused:
        secret_env_keys({f"{PREFIX}engine": {"secretEnv": {"OPENAI_API_KEY": value}}}, PREFIX)
    assert str(refused.value).startswith(
        f"invalid stack config: engine.secretEnv.OPENAI_API_KEY: is {kind}, not the name of a secret config key; "
    )
    assert "sk-live" not in str(refused.value) and "AAAABBBB" not in str(refused.value)
