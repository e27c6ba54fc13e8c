"""Secrets in plain-text settings: refused before anything is declared.

Every stack setting is plain text in what the stack writes and keeps: the Deployment's pod spec, the Pulumi state, the
rendered manifests, resources.json, states.json, plan.md, a preview's changes.md and changes.json (which CI posts to a
pull request) and the measurements file. A secret has one way in: a secret config key
(`pulumi config set --secret KEY VALUE`, or an ESC secret), the Hugging Face token as `hfToken`, any other as a key
`engine.secretEnv` names, which reaches the pod through a Kubernetes Secret (`valueFrom.secretKeyRef`). So a value
shaped like a secret anywhere in the settings (policies/redaction.py: the patterns of detect-secrets and the providers'
token formats), an engine variable or flag named like one (`*_API_KEY`, `*_PASSWORD`, `--api-key`), and a `secure:`
value nested inside a setting are refused, with the way to pass it properly.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from common.text import config_key_for
from policies.redaction import is_secret_name, secret_kinds
from schemas import vllm_args

SECURE_KEY = "secure"
# What vLLM reads from the environment in place of a secret flag (vllm/envs.py: VLLM_API_KEY; the
# OpenAI server takes `args.api_key or envs.VLLM_API_KEY`, vllm/entrypoints/openai/api_server.py).
FLAG_ENVIRONMENT = {"api-key": "VLLM_API_KEY"}
# The stack's own secret config key: the Hugging Face token (the download Job's Secret)
HF_TOKEN_KEY = "hfToken"


def secret_flag_of(flag: str) -> str:
    """The flag (without its dashes) that takes a secret, as `vllm serve` reads `flag`: a flag of the releases'
    tables named like a secret whose value is text (not --allow-credentials, an on/off flag, nor
    --long-prefill-token-threshold, a number); any prefix of one (argparse expands a unique prefix: --api-k is
    --api-key, and its value must not be quoted back either); another flag named like a secret. Empty: none."""
    if not flag:
        return ""
    flags = vllm_args.text_flags()
    if flag in flags:
        return flag if flags[flag] and is_secret_name(flag) else ""
    expansions = [name for name in flags if name.startswith(flag)]
    secret = sorted(name for name in expansions if flags[name] and is_secret_name(name))
    if secret or expansions:  # --max-num-batched-token abbreviates a number's flag: no secret
        return secret[0] if secret else ""
    return flag if is_secret_name(flag) else ""


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    """(path, text) of every key and string value in a setting."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield f"{path} (a key)", str(key)
            yield from _strings(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, f"{path}[{index}]")


def _nested_secure(value: Any, path: str) -> str | None:
    if isinstance(value, dict):
        if set(value) == {SECURE_KEY}:
            return path
        for key, item in value.items():
            found = _nested_secure(item, f"{path}.{key}")
            if found:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = _nested_secure(item, f"{path}[{index}]")
            if found:
                return found
    return None


HF_TOKEN_KIND = "a Hugging Face token"
HF_TOKEN_HINT = (
    "the token is the stack's secret hfToken (`pulumi config set --secret hfToken VALUE`), which only the "
    "download Job gets; the engine loads the weights from disk"
)


def _env_hint(name: str) -> str:
    if name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN") or config_key_for(name) == HF_TOKEN_KEY:
        return HF_TOKEN_HINT
    if secret_kinds(name):  # a key made of the name would show it again, in another case
        name, key = "VARIABLE", "KEY"
    else:
        key = config_key_for(name)
    return (
        f"store it with `pulumi config set --secret {key} VALUE` (or an ESC secret) and set "
        f"engine.secretEnv.{name}: {key}; it then reaches the pod from a Kubernetes Secret"
    )


def _flag_hint(flag: str) -> str:
    variable = FLAG_ENVIRONMENT.get(flag)
    if variable:
        key = config_key_for(variable)
        return (
            f"leave the flag out, run `pulumi config set --secret {key} VALUE` and set engine.secretEnv.{variable}: "
            f"{key} (vLLM reads --{flag} from {variable})"
        )
    return "give it to the engine as an environment variable from engine.secretEnv, not as a flag"


FLAG_START = re.compile(r"-{1,2}[A-Za-z]")


def _words(item: Any) -> list[Any]:
    """A flag item split at its first blank ("--api-key VALUE"); any other item whole."""
    if isinstance(item, str) and FLAG_START.match(item) and len(item.split(maxsplit=1)) == 2:
        return item.split(maxsplit=1)
    return [item]


PLAIN_TEXT = "which the stack writes in plain text to the pod spec, the state, the manifests and plan.md"


def _engine_problem(engine: dict[str, Any]) -> str | None:
    env = engine.get("extraEnv")
    if isinstance(env, dict):
        for name, value in env.items():
            # the value's own kind first, then the name (`DB_PWD=...` is also an assignment's shape)
            kinds = secret_kinds(value) if isinstance(value, str) else []
            named = is_secret_name(str(name))
            if not kinds and not named and isinstance(value, str):
                kinds = secret_kinds(f"{name}={value}")
            if kinds or named:
                what = f"holds {kinds[0]}" if kinds else "is named like a secret"
                hint = HF_TOKEN_HINT if kinds and kinds[0] == HF_TOKEN_KIND else _env_hint(str(name))
                return f"engine.extraEnv.{name}: {what}, {PLAIN_TEXT}; {hint}"
    args = engine.get("extraArgs")
    if isinstance(args, list):
        previous_flag = ""
        # a flag and its value in one item ("--api-key VALUE") land in the pod spec all the same
        words = [(index, word) for index, item in enumerate(args) for word in _words(item)]
        for position, (index, token) in enumerate(words):
            if not isinstance(token, str):
                if previous_flag:  # a number after a secret flag is its value too; never quote it
                    return f"engine.extraArgs[{index}]: gives --{previous_flag} a secret, {PLAIN_TEXT}; " + _flag_hint(
                        previous_flag
                    )
                continue
            flag = re.sub(r"^-+", "", token.split("=", 1)[0]).replace("_", "-") if token.startswith("-") else ""
            kinds = secret_kinds(token)
            secret_flag = secret_flag_of(flag)
            valued = (secret_flag and "=" in token) or (not flag and previous_flag)
            if kinds or valued:
                what = f"holds {kinds[0]}" if kinds else f"gives --{secret_flag or previous_flag} a secret"
                hint = (
                    HF_TOKEN_HINT if kinds and kinds[0] == HF_TOKEN_KIND else _flag_hint(secret_flag or previous_flag)
                )
                return f"engine.extraArgs[{index}]: {what}, {PLAIN_TEXT}; {hint}"
            if secret_flag and position == len(words) - 1:
                return f"engine.extraArgs[{index}]: --{secret_flag} takes a secret; {_flag_hint(secret_flag)}"
            previous_flag = secret_flag if "=" not in token else ""
    return None


def plaintext_secret_problem(raw: dict[str, Any]) -> str | None:
    """One line for the first secret in a plain-text setting of the stack (as the CLI hands them to the
    program, ESC's merged in), or None."""
    for key in sorted(raw):
        nested = _nested_secure(raw[key], key)
        if nested:
            return (
                f"{nested}: a secure value inside a setting (pulumi config set --secret --path) is handed to the "
                f"program decrypted and written in plain text; keep the secret in a key of its own and name it "
                f"in engine.secretEnv"
            )
    engine = raw.get("engine")
    if isinstance(engine, dict):
        problem = _engine_problem(engine)
        if problem:
            return problem
    for key in sorted(raw):
        problem = shaped_secret_problem(raw[key], key)
        if problem:
            return problem
    return None


SECRET_KEY_HINT = "a secret goes only in a secret config key that engine.secretEnv names"


def shaped_secret_problem(
    value: Any, path: str, written_to: str = PLAIN_TEXT, hint: str = SECRET_KEY_HINT
) -> str | None:
    """One line for the first string or key of a value shaped like a secret (`path.key`, `path[0]`), saying
    where it would be written (`written_to`) and what to do instead; None when there is none. Never quotes it."""
    for where, text in _strings(value, path):
        kinds = secret_kinds(text)
        if kinds:
            return f"{where}: holds {kinds[0]}, {written_to}; {HF_TOKEN_HINT if kinds[0] == HF_TOKEN_KIND else hint}"
    return None
