"""Secrets named or placed in ways the shapes cannot see: refused by the name of the variable or flag that
holds them, and never quoted in the refusal."""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pytest

from policies.redaction import is_secret_name
from stacks.load.loader import InvalidConfig, load_stack, validate
from stacks.load.plaintext_secrets import plaintext_secret_problem
from tests.rendered import as_a_new_process

VALUE = "Canary4horse"


@pytest.mark.parametrize(
    "name",
    [
        "PGPASSWORD",
        "MYSQLPASSWORD",
        "REDIS_PASS",
        "SMTP_PASS",
        "SSL_KEY_PASSPHRASE",
        "wandbApiKey",
        "dbPassword",
        "UPSTREAM_AUTHORIZATION",
        # gitleaks' credential words, detect-secrets' other words
        "GOOGLE_APPLICATION_CREDENTIALS_JSON",
        "GOOGLE_CREDENTIALS",
        "DB_CREDS",
        "APPLICATION_KEY",
        "DB_CONTRASENA",
        "VAULT_SECRET_ID",  # an AppRole's secret id is the credential
        "CLIENT_SECRET_ID",
        "AWS_ACCESS_KEY_ID",
        "DB_PWD",  # pwd abbreviates password in any name but the shell's own
        "spring.datasource.password",  # dotted words
        "API_KEYS",  # plurals of the key and password words
        "db_passwords",
        "REDISCLI_AUTH",  # redis-cli's password
        # keys under a vendor's or a use's name, a webhook's URL
        *("NEW_RELIC_LICENSE_KEY", "LITELLM_MASTER_KEY", "OPENAI_KEY", "LANGSMITH_KEY", "SIGNING_KEY"),
        *("ENCRYPTION_KEY", "JWT_KEY", "SESSION_KEY", "GCP_SA_KEY", "TEAMS_WEBHOOK_URL", "slackWebhook"),
        # an attacker's names: a vendor's (NVIDIA's NGC) or a cipher's key, a password's abbreviation, a credential
        # as the last word, a passcode, a wallet's mnemonic, an authenticator's seed
        *("NGC_KEY", "SSH_KEY", "AES_KEY", "GPG_KEY", "PGP_KEY", "CIPHER_KEY", "DB_PW", "JWT", "BEARER"),
        *("SESSION_COOKIE", "PASSCODE", "PIN_CODE", "MNEMONIC", "TOTP_SEED"),
        # another attacker's: more vendors' keys, a personal access token, an auth header
        *("KAGGLE_KEY", "STRIPE_KEY", "SENDGRID_KEY", "TOGETHER_KEY", "GITHUB_PAT", "GH_PAT", "PAT", "AUTH_HEADER"),
    ],
)
def test_a_variable_named_like_a_secret_is_refused(name: str) -> None:
    problem = plaintext_secret_problem({"engine": {"extraEnv": {name: VALUE}}})
    assert problem is not None and problem.startswith(f"engine.extraEnv.{name}: is named like a secret")
    assert VALUE not in problem


@pytest.mark.parametrize(
    "name",
    [
        *("MAX_TOKENS", "VLLM_PASSES", "PASSTHROUGH", "COMPASS_MODE", "HF_TOKEN_FILE", "maxNumBatchedTokens"),
        *("speculative-config.num_speculative_tokens", "SECRETS", "TOKENS", "app.kubernetes.io/name"),
        # numbers about tokens: vLLM's integer flags, limits and lengths
        *("long-prefill-token-threshold", "dbo-decode-token-threshold", "MAX_TOKEN_LENGTH", "API_KEY_TIMEOUT"),
        # the new last words elsewhere in a name
        *("JWT_ISSUER", "COOKIE_SECURE", "PIN_MEMORY", "PW_MODE", "enable_pw_login", "SSH_KEY_TYPE"),
        *("PATH", "PAT_EXPIRY_DAYS", "ENABLE_AUTH", "AUTH_HEADER_NAME"),
    ],
)
def test_names_that_only_contain_the_words_are_not_secrets(name: str) -> None:
    assert not is_secret_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "GOOGLE_APPLICATION_CREDENTIALS",  # the path of the key file Application Default Credentials read
        "AWS_SHARED_CREDENTIALS_FILE",
        "DB_SECRET_NAME",
        "EOS_TOKEN_ID",
        "CREDENTIALS_ID",
        "OAUTH_TOKEN_URL",
        "secretName",
        "AUTH_MODE",  # gitleaks' auth, api and key are not words of their own
        "API_URL",
        "CACHE_KEY",
        *("SORT_KEY", "HASH_KEY", "WEBHOOK_TIMEOUT", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_HEADERS"),
        *("ALERT_WEBHOOK_ENABLED", "ALERT_WEBHOOK_URL_FILE", "SESSION_KEY_HEADER", "ENCRYPTION_KEY_VERSION"),
        *("ROUTING_KEY", "TLS_KEY", "SENTRY_DSN", "HF_HUB_DISABLE_IMPLICIT_TOKEN", "OTEL_EXPORTER_OTLP_CLIENT_KEY"),
        "PWD",  # the shell's working directory
        "OLDPWD",
    ],
)
def test_names_that_hold_where_or_which_a_secret_is_are_not_secrets(name: str) -> None:
    assert not is_secret_name(name)


@pytest.mark.parametrize(
    "args",
    [
        ["--api-key " + VALUE],  # flag and value in one item
        ["--served-model-name", "qwen", "--api-key", 31415926],  # a numeric value
        ["--db-password  " + VALUE],
        ["--api-ke=" + VALUE],  # argparse expands a unique prefix: --api-key
        ["--api-k " + VALUE],
        ["--api", VALUE],
    ],
)
def test_a_secret_flag_value_is_refused_without_quoting_it(args: list[Any]) -> None:
    problem = plaintext_secret_problem({"engine": {"extraArgs": args}})
    assert problem is not None and "a secret" in problem
    assert VALUE not in problem and "31415926" not in problem


def test_a_bearer_credential_is_refused_wherever_it_is() -> None:
    """An `Authorization: Bearer ...` header for the engine (a middleware's setting) carries the key."""
    header = "Authorization: Bearer " + VALUE + "0123456789abcdefXYZ"
    for engine in ({"extraArgs": [f"--x-header={header}"]}, {"extraEnv": {"UPSTREAM_HEADERS": header}}):
        problem = plaintext_secret_problem({"engine": engine})
        assert problem is not None and "holds a bearer token" in problem and VALUE not in problem


@pytest.mark.parametrize(
    "args",
    [
        ["--long-prefill-token-threshold", "512"],  # an integer (the vendored tables' type)
        ["--dbo-decode-token-threshold", "32"],
        ["--allow-credentials"],  # on or off, no value
        ["--allow-credentials", "--max-num-seqs", "64"],
        ["--max-num-batched-token", "8192"],  # abbreviates a number's flag (refused as such, not as a secret)
    ],
)
def test_a_flag_whose_value_cannot_be_a_secret_is_not_refused(args: list[Any]) -> None:
    assert plaintext_secret_problem({"engine": {"extraArgs": args}}) is None


@pytest.mark.parametrize("value", [VALUE + "!", 31415926, [VALUE]])
def test_a_secret_pasted_where_secret_env_names_a_key_is_not_quoted(value: Any) -> None:
    """engine.secretEnv maps a variable to the config key holding its secret; a user who pastes the secret in
    the key's place must not see it echoed in the refusal."""
    with pytest.raises(InvalidConfig) as refused:
        validate({"environment": "dev", "project": "my-llm-dev", "engine": {"secretEnv": {"REDISCLI_AUTH": value}}})
    message = str(refused.value)
    assert message.startswith("invalid stack config: engine.secretEnv.REDISCLI_AUTH: ")
    assert VALUE not in message and "31415926" not in message


@pytest.mark.parametrize(
    ("name", "key"), [("OPENAI_API_KEY", "openaiApiKey"), ("DB PASSWORD", "dbPassword"), ("db-password", "dbPassword")]
)
def test_the_hint_names_a_config_key_the_cli_takes_as_one_word(name: str, key: str) -> None:
    """An attacker: `DB PASSWORD` was hinted as `pulumi config set --secret db password VALUE` (two arguments)."""
    problem = plaintext_secret_problem({"engine": {"extraEnv": {name: VALUE}}})
    assert problem is not None and f"pulumi config set --secret {key} VALUE" in problem


@pytest.mark.parametrize("name", ["HF-TOKEN", "hf.token", "HF TOKEN"])
def test_a_name_that_makes_the_hf_token_key_gets_the_hf_token_hint(name: str) -> None:
    """A review: `HF-TOKEN` was hinted as `pulumi config set --secret hfToken VALUE` (the stack's own token,
    overwritten) and `engine.secretEnv.HF-TOKEN: hfToken`, which the loader refuses."""
    problem = plaintext_secret_problem({"engine": {"extraEnv": {name: VALUE}}})
    assert problem is not None and "secretEnv" not in problem and "the token is the stack's secret hfToken" in problem


class NoCloud(pulumi.runtime.Mocks):
    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        return f"{args.name}-id", args.inputs

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        return {}, None


def refusal_under_pulumi_up(settings: dict[str, str], secret_key: str) -> str:
    """The message `load_stack` refuses the stack's `settings` with, as under `pulumi up`: `secret_key` is a secret
    config key (its value hidden by the CLI's filter as written only)."""
    project = "gke-b200-serving"
    refusals: list[str] = []

    @pulumi.runtime.test  # type: ignore[untyped-decorator]
    def pulumi_up() -> None:
        pulumi.runtime.set_all_config(
            {f"{project}:{key}": value for key, value in settings.items()}, [f"{project}:{secret_key}"]
        )
        with pytest.raises(InvalidConfig) as refused:
            load_stack()
        refusals.append(str(refused.value))

    def run() -> None:
        pulumi.runtime.set_mocks(NoCloud(), project=project, stack="dev", preview=False)
        pulumi_up()

    as_a_new_process(run)
    (message,) = refusals
    return message


@pytest.mark.parametrize(
    "secret",
    [
        "ZQ9_SECRET_VALUE_77XYZ",
        "Zq9\u00e9_SECRET_VALUE_77XYZ",  # a config key made of the name keeps its ASCII letters only
        "ZQ9_S\u00cbCRET_VALUE_77XYZ",  # refused for its letters, quoted with the letter escaped
        "Zq9SecretValue77xyz" * 4 + "_ABCDEFGHIJ",  # longer than a message keeps: hidden before it is cut
    ],
)
def test_under_pulumi_up_a_refusal_hides_a_secret_value_in_any_case_and_spelling(secret: str) -> None:
    """The CLI hides a secret config value in the program's error as written only: a refusal that turned a variable
    named with one into a config key (`ZQ9_...` -> `zq9...`) showed it in another spelling (an attacker), and a
    reviewer found its part a cut message kept, and its quote with a letter escaped."""
    engine = {"secretEnv": {"OPENAI_API_KEY": "openaiKey"}, "extraEnv": {secret: "x"}}
    settings = {"environment": "dev", "project": "my-llm-dev", "openaiKey": secret, "engine": json.dumps(engine)}
    message = refusal_under_pulumi_up(settings, "openaiKey")
    assert "engine.extraEnv" in message and "***" in message, message
    assert "zq9" not in message.lower() and "77xyz" not in message.lower() and "cret_value" not in message.lower()


@pytest.mark.parametrize("cut", ["\n", "\t", "\r"])
def test_a_refusal_hides_a_secret_value_a_control_character_cuts_in_its_quote(cut: str) -> None:
    """An attacker: a secret config value pasted into a setting with a line break inside was quoted as
    `'Qm7vX2pL\\n9tR4wZ8k'`, whose escape put a letter between its halves, and the filter let it through."""
    secret = "Qm7vX2pL9tR4wZ8k"
    settings = {
        "environment": "dev",
        "project": "my-llm-dev",
        "openaiKey": secret,
        "region": f"{secret[:8]}{cut}{secret[8:]}",
        "engine": json.dumps({"secretEnv": {"OPENAI_API_KEY": "openaiKey"}}),
    }
    message = refusal_under_pulumi_up(settings, "openaiKey")
    assert message.startswith("invalid stack config: region: '***'"), message
    assert "9tR4wZ8k" not in message and "Qm7vX2pL" not in message


def test_a_value_of_several_lines_is_refused_without_its_text() -> None:
    """A password on the line after its key is a shape no pattern finds (docs/security.md): the refusal of a value
    with a line break names where the break is, and quotes none of it (an attacker)."""
    engine = {"extraEnv": {"MY_A": "user: bob\npassword:\n  Zq8hunter2xyz"}}
    with pytest.raises(InvalidConfig) as refused:
        validate({"environment": "dev", "project": "my-llm-dev", "engine": engine})
    message = str(refused.value)
    assert "engine.extraEnv.MY_A: has an unprintable character (\\n, character 10); allowed: printable text" in message
    assert "hunter2" not in message and "bob" not in message
