"""Secrets: the Hugging Face token stays a Pulumi secret end to end."""

from __future__ import annotations

import base64
import binascii
import re

import pulumi.runtime.config as runtime_config
from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, ResourceValidationPolicy

from policies.redaction import ASSIGNMENT_KIND, is_secret_name, secret_kinds, token_candidates
from policies.settings import Setting, config_schema
from policies.values import as_mapping, known_strings
from policies.vllm_command import flag_read_as, vllm_servers

SECRET_TYPE = "kubernetes:core/v1:Secret"

TOKEN_CONFIG_KEYS = Setting("tokenConfigKeys", ["hfToken"], "secret stack config keys that hold the Hugging Face token")


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


def _is_token_payload(resource_type: str, path: str) -> bool:
    """The one place the token may sit: the payload of a Kubernetes Secret."""
    return resource_type == SECRET_TYPE and path.startswith(("stringData.", "data."))


def _no_token_literal(args: ResourceValidationArgs, report: ReportViolation) -> None:
    own_tokens = _secret_config_values([str(key) for key in TOKEN_CONFIG_KEYS.read(args.get_config())])
    strings = list(known_strings(args.props))
    if args.resource_type == SECRET_TYPE:
        data = as_mapping(args.props.get("data"))
        strings += [(f"data.{key} (base64)", _decoded(text)) for key, text in known_strings(data)]
    for path, text in strings:
        if _is_token_payload(args.resource_type, path) and text in own_tokens:
            continue
        if any(token in text for token in own_tokens):
            report(f"the stack's own Hugging Face token at {path}; it belongs only in the token Secret")
        elif any(True for _ in token_candidates(text)):
            report(f"a Hugging Face token literal at {path}; set it with `pulumi config set --secret hfToken`")


NO_TOKEN_LITERAL = ResourceValidationPolicy(
    name="LLM-SEC-001",
    display_name="No Hugging Face token as a literal",
    description=(
        "A string that looks like a Hugging Face token (hf_...), or the stack's own secret hfToken value, anywhere "
        "but the payload of a Kubernetes Secret: keep the token a Pulumi secret end to end (pulumi config set "
        "--secret) that only the token Secret carries; pasted into extraEnv, extraArgs or any other input it lands "
        "in a manifest, the state and the pod spec in plain text."
    ),
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_no_token_literal,
    config_schema=config_schema(TOKEN_CONFIG_KEYS),
)


def _no_remote_code(args: ResourceValidationArgs, report: ReportViolation) -> None:
    for server in vllm_servers(args.resource_type, args.props):
        if server.has("trust-remote-code"):
            report(
                f"container {server.container_name} runs vLLM with --trust-remote-code: Python from the model "
                "repository executes in the serving pod"
            )


NO_REMOTE_CODE = ResourceValidationPolicy(
    name="LLM-SEC-002",
    display_name="No --trust-remote-code",
    description=(
        "vLLM with --trust-remote-code imports and runs Python files from the model repository: whoever can push to "
        "that repository (or a revision the stack follows) runs code next to the GPUs and the mounted weights. "
        "Qwen 3.5 needs no remote code in vLLM 0.19; pin a commit revision if a model really does."
    ),
    enforcement_level=EnforcementLevel.ADVISORY,
    validate=_no_remote_code,
)


def _no_cors_wildcard(args: ResourceValidationArgs, report: ReportViolation) -> None:
    for server in vllm_servers(args.resource_type, args.props):
        origins = server.value("allowed-origins")
        if origins is not None and "*" in origins:
            report(
                f"container {server.container_name} sets --allowed-origins {origins[:40]}: any web page may call "
                "the API from a browser"
            )


NO_CORS_WILDCARD = ResourceValidationPolicy(
    name="LLM-SEC-003",
    display_name="No CORS wildcard set on the engine",
    description=(
        "An explicit --allowed-origins with '*' lets any web page a user of the internal network opens call the "
        "OpenAI API from the browser (cross-site requests to an unauthenticated endpoint). Name the origins that "
        "need browser access instead."
    ),
    enforcement_level=EnforcementLevel.ADVISORY,
    validate=_no_cors_wildcard,
)


HF_TOKEN_KIND = "a Hugging Face token"
# The token's own variable names are LLM-SEC-001's.
HF_TOKEN_VARIABLES = frozenset({"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"})
ENV_VALUE = re.compile(r"\.env\[[0-9]+\]\.value$")
# A container's argument list item: `--api-key=VALUE`, or `--api-key` whose value is the next item.
ARGUMENT = re.compile(r"^(?P<list>.*\.(?:args|command))\[(?P<index>[0-9]+)\]$")
SECRET_FLAG = re.compile(r"^-{1,2}(?P<name>[A-Za-z][\w-]*)(?:(?P<equals>=)(?P<value>.*)|\s+(?P<spaced>\S.*))?$", re.S)


# Text the shell expands to what the line itself writes: a default or an alternative (`${KEY:-VALUE}`, `-`, `:=`,
# `=`, `:+`, `+`: POSIX "Shell Command Language", 2.6.2 Parameter Expansion), a command that prints its own
# arguments (`$(printf VALUE)`, `echo` in backticks), ANSI-C quoting (`$'VALUE'`, bash).
WRITTEN_BY_THE_SHELL = re.compile(
    r"\$\{[A-Za-z_]\w*:?[-=+][\"']?([^$`}\"'][^}]{0,256})\}|\$\s*\(\s*(?:printf|echo)\s+[\"']?([^$`)\"'][^)]{0,256})\)"
    r"|`(?:printf|echo)\s+[\"']?([^$`\"'][^`]{0,256})`|\$'([^']{1,256})'"
)
# A reference to where the value comes from: a variable, a parameter expansion, a command's output (as the pack's
# shell reading splits them too: `$ ( VAR )`).
REFERENCE = re.compile(r"\$\s*(?:[A-Za-z_]\w*|[0-9@*#?]|\{[^}]{0,256}\}|\([^)]{0,256}\))|`[^`]{0,256}`")


def _literal_of(value: str) -> str:
    """The text a flag's value writes into the pod spec: what the shell expands to text written in the line itself
    (WRITTEN_BY_THE_SHELL), and text glued to a reference (`${KEY}TEXT`, `$KEY,TEXT`); nothing for a value only read
    from the environment ($VAR, ${VAR}, Kubernetes' $(VAR), $(cat ...), backticks), else the value."""
    written = WRITTEN_BY_THE_SHELL.search(value)
    if written is not None:
        return _written(written)
    value = value.strip("\"'")  # quotes a shell removes (in an argument list, text no key looks like)
    if not value.startswith(("$", "`")):
        return value
    return REFERENCE.sub("", value).strip("\"' ,;})")


def _written(match: re.Match[str]) -> str:
    """The text a WRITTEN_BY_THE_SHELL match writes."""
    return next(group for group in match.groups() if group)


def _secret_flag_values(strings: dict[str, str]) -> dict[str, str]:
    """Container arguments that give a flag named like a secret (`--api-key`) a literal value: where, by
    the flag's name as written."""
    found: dict[str, str] = {}
    for path, text in strings.items():
        argument = ARGUMENT.match(path)
        flag = SECRET_FLAG.match(text) if argument else None
        if not argument or not flag or not is_secret_name(flag["name"]):
            continue
        following = strings.get(f"{argument['list']}[{int(argument['index']) + 1}]")
        apart = following if flag["equals"] is None and following and not following.startswith("-") else None
        # a literal, not $(VAR), which Kubernetes expands from the container's environment (a Secret)
        if _literal_of(flag["value"] or flag["spaced"] or apart or ""):
            found[f"{path}: --{flag['name']}"] = flag["name"]
    return found


def _secret_flags_vllm_reads(args: ResourceValidationArgs, written_apart: set[str]) -> list[str]:
    """`vllm serve` options that vLLM reads as a secret flag with a value, where no argument of its own
    says so: an abbreviation argparse expands (`--api-k KEY` is `--api-key KEY`), or a flag inside a
    shell script (`sh -c "vllm serve ... --api-key KEY"`)."""
    found = []
    for server in vllm_servers(args.resource_type, args.props):
        for flag, written in server.spelled.items():
            if (
                _literal_of(server.flags.get(flag) or "")
                and is_secret_name(flag)
                and written.lstrip("-") not in written_apart
            ):
                read_as = "" if written == f"--{flag}" else f" (vLLM reads --{flag})"
                found.append(f"container {server.container_name}: {written}{read_as}")
    return found


CONFIG_MAP_TYPE = "kubernetes:core/v1:ConfigMap"
# A variable read from a ConfigMap: `...env[3].valueFrom.configMapKeyRef.name` (its own name at `...env[3].name`).
CONFIG_MAP_KEY_REF = re.compile(r"\.valueFrom\.configMapKeyRef\.name$")
# A secret flag and its value inside a text (a script in a ConfigMap, a variable's value): not a reference
# ($KEY, "$KEY"), nor a line continuation (`\`).
FLAG_IN_A_TEXT = re.compile(r"(?<!\S)(-{1,2})([A-Za-z][\w-]*)(?:=|\s+)(?:[\"'](?![$\-\\`])|(?![\"'$\-\\`]))([^\s\"']+)")
# No secret: a value that names an environment variable (API_KEY_VARIABLE: VLLM_API_KEY) or reads one ($KEY,
# `cat key`), a placeholder (<key>), or letters and dashes only (`true`, `disabled`, `X-Api-Key`, prose), as
# gitleaks' generic-api-key allowlist leaves letter-only values.
NO_SECRET_VALUE = re.compile(r"[$`<].*|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[A-Za-z-]+", re.S)


def _secret_flags_in_texts(resource_type: str, strings: dict[str, str]) -> list[str]:
    """A ConfigMap's entries and containers' variable values that give a secret flag a value (`serve.sh:
    vllm serve --api-key KEY`, VLLM_EXTRA="--api-key KEY"), and a ConfigMap entry named like a secret with a
    value (VLLM_API_KEY, which a container's envFrom makes a variable): a ConfigMap is no Secret."""
    found = []
    for path, text in strings.items():
        in_config_map = resource_type == CONFIG_MAP_TYPE and path.startswith(("data.", "binaryData."))
        if not (in_config_map or ENV_VALUE.search(path)):
            continue
        # what the shell writes from the line itself is the text it holds
        written = WRITTEN_BY_THE_SHELL.sub(_written, text)
        entry = path.split(".", 1)[1]
        if in_config_map and written and not NO_SECRET_VALUE.fullmatch(written) and is_secret_name(entry):
            found.append(f"{path}: a ConfigMap entry named like a secret")
        # an abbreviation is vLLM's (`--api-k`) only in a `vllm` command line, and only of a `--` option
        abbreviations = "vllm" in text
        flags = [
            match[2]
            for match in FLAG_IN_A_TEXT.finditer(written)
            if not NO_SECRET_VALUE.fullmatch(match[3])
            and (
                is_secret_name(match[2])
                or (abbreviations and match[1] == "--" and is_secret_name(flag_read_as(match[2])))
            )
        ]
        if flags:
            found.append(f"{path}: --{flags[0]}")
    return found


def _no_secret_literal(args: ResourceValidationArgs, report: ReportViolation) -> None:
    strings = dict(known_strings(args.props))
    apart = _secret_flag_values(strings)
    flagged = [
        *apart,
        *_secret_flags_vllm_reads(args, {name.replace("_", "-") for name in apart.values()}),
        *_secret_flags_in_texts(args.resource_type, strings),
    ]
    for where in flagged:
        report(
            f"{where} takes a secret and is given a literal value; pass it through the environment from a Kubernetes "
            "Secret instead (vLLM reads --api-key from the variable VLLM_API_KEY, which engine.secretEnv sets)"
        )
    for path, text in strings.items():
        if _is_token_payload(args.resource_type, path):
            continue
        kinds = [kind for kind in secret_kinds(text) if kind != HF_TOKEN_KIND]
        if kinds == [ASSIGNMENT_KIND] and flagged and not secret_kinds(FLAG_IN_A_TEXT.sub("", text)):
            continue  # the secret flag's own report above says it (the text's `--api-key KEY`, and nothing else)
        if kinds:
            report(f"{kinds[0]} at {path}; keep it a Pulumi secret in a Kubernetes Secret (engine.secretEnv)")
            continue
        if CONFIG_MAP_KEY_REF.search(path):
            name = strings.get(CONFIG_MAP_KEY_REF.sub(".name", path), "")
            if is_secret_name(name) and name not in HF_TOKEN_VARIABLES:
                report(
                    f"{path}: the variable {name} is named like a secret and read from a ConfigMap, which is plain "
                    "text; read it from a Kubernetes Secret (valueFrom.secretKeyRef; engine.secretEnv)"
                )
        if ENV_VALUE.search(path) and text:
            name = strings.get(path[: -len("value")] + "name", "")
            if is_secret_name(name) and name not in HF_TOKEN_VARIABLES:
                report(
                    f"{path}: the variable {name} is named like a secret and holds a literal value; read it from a "
                    "Kubernetes Secret (valueFrom.secretKeyRef; engine.secretEnv)"
                )


NO_SECRET_LITERAL = ResourceValidationPolicy(
    name="LLM-SEC-004",
    display_name="No other secret as a literal",
    description=(
        "A string shaped like a secret other than the Hugging Face token in the clear (one base64-, hex- or "
        "percent-encoded, an AWS access key id, a private key (also base64-encoded), a "
        "GCP service account key, Google (API keys, OAuth access tokens), OpenAI, Anthropic, GitHub, GitLab, Slack, "
        "W&B (wandb_v1_), Stripe, SendGrid, Twilio, Square, Mailchimp, npm, Artifactory or NVIDIA keys and tokens, an "
        "Azure Storage account key, a JSON web token, a bearer token, a password in a URL, a token or signature in a "
        "URL's query, or a password or key assigned inside a value; each also base64-, base64url- or hex-encoded, "
        "wrapped or not, encoded again up to three encodings deep: the patterns of detect-secrets, "
        "policies/redaction.py), or a container variable named like one "
        "(*_API_KEY, *_PASSWORD, *_TOKEN...) with a literal value, or a container argument named like one "
        "(--api-key VALUE, also abbreviated as vLLM's parser expands it, --api-k VALUE, or in a shell line, a "
        "ConfigMap's script or a variable's value; also a value the shell writes from the line itself, "
        "${KEY:-VALUE}, $(printf VALUE), or glued to a variable, ${KEY}VALUE; not one only read from the "
        "environment, $KEY, ${KEY}, $(KEY), $(cat FILE)), or a ConfigMap entry named like one, anywhere but the "
        "payload of a Kubernetes Secret: "
        "a literal lands in the manifests, the state and the pod spec in plain text; the stack passes such values "
        "as secret config keys through engine.secretEnv."
    ),
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_no_secret_literal,
)
