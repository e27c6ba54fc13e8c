"""The stack's config as the Pulumi CLI hands it to the program, read offline from the files.

The CLI merges, lowest first: `Pulumi.yaml` defaults, the values of the stack's ESC environment,
the stack file's own `config` (pulumi/pulumi pkg/workspace/config.go `mergeConfig`); then it hands
every key, in every namespace, to the program (`PULUMI_CONFIG`). Offline:
- `secure:` values cannot be decrypted: each becomes a placeholder marked secret, which carries a
  digest of the ciphertext: a new ciphertext (`pulumi config set --secret` again) shows in a preview
  as a changed secret (`commands/engine/secrets.py`);
- an ESC environment cannot be opened: a key the program needs that the file leaves to it becomes
  a placeholder, and every key the file leaves out takes its default here although the environment
  may set it under `pulumi up`; the notes say so (plan.md and standard error);
- the HF token, which a real stack holds as a `secure:` value, gets a placeholder when the file
  has none.
"""

from __future__ import annotations

import decimal
import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from commands.io.console import hide_known_secrets, shown
from commands.stackfile import stackfile
from commands.stackfile.esc import StackEnvironment, merged_config
from common.input_files import InputError
from common.text import code_span
from stacks.load.loader import (
    PROVIDER_DEFAULTS,
    InvalidConfig,
    secret_env_keys,
    secret_setting_problem,
    unknown_setting_problem,
)
from stacks.load.plaintext_secrets import HF_TOKEN_KEY

ROOT = Path(__file__).resolve().parents[2]
# What the offline run stands in for a key only ESC would supply. A project id of the right shape
# (the program validates it), never a real one.
ESC_PROJECT_PLACEHOLDER = "project-from-esc"
ENVIRONMENT_KEY = "environment"
SECURE_PLACEHOLDER = "[secure:"
UNSET_PLACEHOLDER = "[unset secret:"
# Ends the placeholder of a secret the stack file leaves to its ESC environment (an `fn::secret`, an import).
FROM_ESC = " from ESC]"
PROJECT_KEY = "project"
# From here on Go's encoding/json writes a float in 'e' format (its floatEncoder), below it an integral one as digits.
GO_EXPONENT_FROM = 1e21


def ciphertext_digest(ciphertext: str) -> str:
    """A short digest of a `secure:` value's ciphertext (public: the ciphertext is in the stack file)."""
    return hashlib.sha256(ciphertext.encode()).hexdigest()[:12]


# A `secure:` value shorter than this is no ciphertext the Pulumi CLI writes (its base64 of a nonce and the
# encrypted value is longer): not looked for, it would be found in unrelated text.
CIPHERTEXT_MIN = 16


@dataclass(frozen=True)
class StackSettings:
    project: str
    stack: str
    config: dict[str, str]
    secret_keys: list[str]
    placeholders: list[str]
    environment: StackEnvironment = field(default_factory=StackEnvironment)
    # Keys the offline run stands in for because only the stack's ESC environment can supply them.
    esc_placeholders: list[str] = field(default_factory=list)
    # The `secure:` values of the stack file as written (ciphertexts): the stack's own, kept out of every output.
    ciphertexts: list[str] = field(default_factory=list)

    def value(self, key: str) -> Any:
        """A setting as the program reads it (objects decoded), or None."""
        text = self.config.get(key)
        if text is None or text[:1] not in "[{":
            return text
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            return text

    def known_secret_values(self) -> list[str]:
        """The stack's secret values the offline run knows: its secret keys' values that are not
        placeholders, and the literal `fn::secret` values of its inline ESC environment (its keys get
        placeholders, but the file holds the values). `secure:` values cannot be decrypted: their ciphertexts,
        which no output holds either (an attacker pasted one into a setting: it was written to the manifests), of
        CIPHERTEXT_MIN characters or more."""
        keys = [self.config[key] for key in self.secret_keys if key in self.config and key not in self.placeholders]
        ciphertexts = [text for text in self.ciphertexts if len(text) >= CIPHERTEXT_MIN]
        return [*keys, *self.environment.secret_literals, *ciphertexts]

    def unset_secret_keys(self) -> list[str]:
        """The secret keys Pulumi.yaml declares without a default that the stack file leaves unset and no ESC
        environment may set: the Pulumi CLI stops `pulumi up` on them before any step."""
        return [key for key in self.placeholders if self.config.get(key) == f"{UNSET_PLACEHOLDER}{key}]"]

    def namespace(self, namespace: str) -> dict[str, Any]:
        prefix = f"{namespace}:"
        return {key[len(prefix) :]: self.value(key) for key in sorted(self.config) if key.startswith(prefix)}


def _config_string(value: Any) -> str:
    """A setting as the CLI hands it to the program (pulumi/pulumi sdk/go/common/resource/config/value.go,
    `unmarshalValue`): a mapping or list as Go's encoding/json writes what yaml.v3 read, its keys sorted and a float
    with no fraction as an integer (`nodes: 2.0` and `nodes: 1e3` reach the program as 2 and 1000)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(_integral_floats_as_ints(value), sort_keys=True, separators=(",", ":"))
    return str(value)


def _integral_floats_as_ints(value: Any) -> Any:
    """What encoding/json writes as an integer, as one: a float with no fraction under 1e21 (its floatEncoder writes
    those in 'f' format, the rest in 'e' format, as Python's json module does)."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer() and abs(value) < GO_EXPONENT_FROM:
        return int(decimal.Decimal(repr(value)))  # the shortest digits that read back as it, as Go writes them
    if isinstance(value, dict):
        return {key: _integral_floats_as_ints(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_integral_floats_as_ints(item) for item in value]
    return value


def check_project(project: str | None, root: Path = ROOT) -> None:
    """The PROJECT of a stack named `ORG/PROJECT/NAME` is this one's, as the Pulumi CLI requires ("provided
    project name ... doesn't match Pulumi.yaml", pkg/backend/httpstate). A wrong name is bad input to the
    command, which names itself before the line."""
    own, _ = stackfile.read_project(root / "Pulumi.yaml")
    if project is not None and project != own:
        raise InputError(
            f"stack project {project!r} is not this project ({own!r} in Pulumi.yaml); name the stack NAME, "
            f"ORG/{own}/NAME or the path of its stack file"
        )


def load_stack_settings(stack: str, config_file: Path | None = None, root: Path = ROOT) -> StackSettings:
    """Read Pulumi.yaml and the stack file the way the CLI hands them to the program.

    Every problem in either file is an `InvalidConfig` (exit 2) naming file:line:column
    (`commands.stackfile.stackfile`). From then on the console hides the secret values the stack file
    holds (`known_secret_values`): a refusal that quotes a setting one was pasted into shows ***."""
    project, schema = stackfile.read_project(root / "Pulumi.yaml")
    stack_file = stackfile.read_stack_file(stack, config_file or root / f"Pulumi.{stack}.yaml", project, schema)
    environment = stack_file.environment

    entries = merged_config(environment.literal_config, stack_file.entries)
    config: dict[str, str] = {}
    secret_keys: list[str] = list(stack_file.secure_keys)
    placeholders: list[str] = list(stack_file.secure_keys)
    for key, spec in schema.items():
        if isinstance(spec, dict) and "default" in spec:
            config[f"{project}:{key}"] = _config_string(spec["default"])
    ciphertexts: list[str] = []
    for full_key, value in entries.items():
        if full_key in stack_file.secure_keys:
            ciphertext = str(value.get("secure")) if isinstance(value, dict) else ""
            ciphertexts.append(ciphertext)
            config[full_key] = f"{SECURE_PLACEHOLDER}{full_key} ciphertext {ciphertext_digest(ciphertext)}]"
        else:
            config[full_key] = _config_string(value)
    for key, spec in schema.items():
        full_key = f"{project}:{key}"
        if isinstance(spec, dict) and spec.get("secret"):
            secret_keys.append(full_key)
            if full_key not in config:
                config[full_key] = (
                    f"{UNSET_PLACEHOLDER}{full_key}{FROM_ESC if _left_to_esc(environment, full_key) else ']'}"
                )
                placeholders.append(full_key)
    _check_computed_keys(project, config, environment, set(stack_file.entries))
    esc_placeholders = _esc_placeholders(project, config, environment) if environment.opaque else []
    if environment.opaque:
        # A secret engine.secretEnv names and the file leaves to ESC (an `fn::secret` value or an import).
        for key in sorted(secret_env_keys(config, f"{project}:")):
            full_key = f"{project}:{key}"
            if full_key not in config and _left_to_esc(environment, full_key):
                config[full_key] = f"{UNSET_PLACEHOLDER}{full_key}{FROM_ESC}"
                secret_keys.append(full_key)
                placeholders.append(full_key)
                esc_placeholders.append(full_key)
    settings = StackSettings(
        project,
        stack,
        config,
        sorted(set(secret_keys)),
        sorted(placeholders),
        environment,
        esc_placeholders,
        ciphertexts,
    )
    hide_known_secrets(settings.known_secret_values())
    return settings


def _left_to_esc(environment: StackEnvironment, full_key: str) -> bool:
    """Whether ESC may supply a key the stack file does not set: an imported environment may, and the inline one
    does where its `pulumiConfig` computes the key (an `fn::secret`, an interpolation)."""
    return bool(environment.imports) or full_key in environment.computed_keys


def _check_computed_keys(
    project: str, config: dict[str, str], environment: StackEnvironment, in_the_stack_file: set[str]
) -> None:
    """Refuse what `pulumi up` refuses of a key the inline ESC environment computes, known from the key and the form
    of its value alone (the program reads the key, whatever ESC makes of the value): a setting given an ESC secret
    (engine.secretEnv names no setting), and a key that is no setting unless an imported environment or a computed
    `engine` may name it in engine.secretEnv. A key the stack file sets too is left alone (its own value wins)."""
    prefix = f"{project}:"
    open_ended = bool(environment.imports) or f"{prefix}engine" in environment.computed_keys
    secrets = {HF_TOKEN_KEY, *secret_env_keys(config, prefix)}
    for full_key in environment.computed_keys:
        name = full_key.removeprefix(prefix)
        if not full_key.startswith(prefix) or name in secrets or full_key in in_the_stack_file:
            continue
        unknown, secret = unknown_setting_problem(name), full_key in environment.secret_keys
        if unknown is not None and open_ended:
            continue
        # in the program's order: a secret key first (raw_project_config), then an unknown one (validate)
        problem = secret_setting_problem(name) if secret else unknown
        if problem:
            raise InvalidConfig(f"{problem} (set by the stack file's inline ESC environment)")


def _esc_placeholders(project: str, config: dict[str, str], environment: StackEnvironment) -> list[str]:
    """Stand in for what the program needs and only the stack's ESC environment can supply."""
    environment_key = f"{project}:{ENVIRONMENT_KEY}"
    if environment_key not in config:
        raise InvalidConfig(
            f"invalid stack config: {ENVIRONMENT_KEY}: not in the stack file; ESC environment(s) "
            f"{environment.sources} may supply it, but an offline render cannot open them and the environment "
            "preset decides what the stack declares: set it in the stack file"
        )
    project_key = f"{project}:{PROJECT_KEY}"
    if project_key in config or PROVIDER_DEFAULTS[PROJECT_KEY] in config:
        return []
    config[project_key] = ESC_PROJECT_PLACEHOLDER
    return [project_key]


# The model commit the shipped prod stack file pins as an example (it names no real commit).
EXAMPLE_REVISION = "0123456789abcdef0123456789abcdef01234567"


# How many keys, and how much of each, the note lists: a preview reads it back only in that form (commands/io/states.py
# ESC_NOTE: names in code spans of at most 400 characters, no backtick or line break).
NOTE_KEYS_MAX = 100
NOTE_KEY_CHARS = 400


def _noted(name: str) -> str:
    """A name in a code span of one line, its control characters escaped (a key may hold an ESC byte)."""
    return "`" + (shown(name.replace("`", "'"))[:NOTE_KEY_CHARS] or "(empty)") + "`"


def _listed(items: list[str]) -> str:
    more = len(items) - NOTE_KEYS_MAX
    return ", ".join(items[:NOTE_KEYS_MAX]) + (f", and {more:,} more" if more > 0 else "")


def esc_note(settings: StackSettings) -> str | None:
    """What the offline run could not see of the stack's ESC environment (None: nothing)."""
    environment = settings.environment
    if not environment.opaque:
        return None
    stand_ins = _listed(
        [f"{_noted(key.partition(':')[2])} ({_noted(settings.config[key])})" for key in settings.esc_placeholders]
    )
    computed = _listed([_noted(key.partition(":")[2]) for key in environment.computed_keys])
    return (
        f"Pulumi ESC: the stack imports {environment.sources}, which an offline render cannot open. "
        + (f"Placeholders stand in for {stand_ins}. " if stand_ins else "")
        + (f"It computes {computed}. " if computed else "")
        + "Keys the stack file leaves out take their defaults here; under `pulumi up` the environment's "
        "`pulumiConfig` may set them (the stack file's own values win)."
    )


def stack_file_notes(settings: StackSettings) -> list[str]:
    """What the offline run could not know or does not apply, for plan.md and standard error."""
    notes: list[str] = []
    if EXAMPLE_REVISION in json.dumps(settings.config.get(f"{settings.project}:weights", "")):
        notes.append(
            f"weights.revision is the stack file's EXAMPLE commit ({EXAMPLE_REVISION}), not a commit of the model: "
            "set the real one (the first column of `git ls-remote https://huggingface.co/MODEL main`) before "
            "`pulumi up`, or the download Job fails"
        )
    note = esc_note(settings)
    if note:
        notes.append(note)
    ignored = {
        key: value
        for key, value in settings.config.items()
        if key.partition(":")[0] in stackfile.PROVIDER_NAMESPACES and key not in PROVIDER_DEFAULTS.values()
    }
    if ignored:
        notes.append(
            "Provider settings not applied: "
            + ", ".join(_noted(key) for key in sorted(ignored))
            + " are read by default providers only, and every resource of this stack uses an explicit one "
            "(its project and region come from the stack's own keys)."
        )
    return notes


def unset_secret_notes(settings: StackSettings) -> list[str]:
    """What `pulumi up` would stop on before any step (`StackSettings.unset_secret_keys`), for a render."""
    return [
        f"`{name}` is not set: `pulumi up` stops before any step (\"Stack '{settings.stack}' is missing configuration "
        f"value '{name}'\": Pulumi.yaml declares it without a default); set it with "
        f"`pulumi config set --secret {name} VALUE`"
        for name in (key.partition(":")[2] for key in settings.unset_secret_keys())
    ]


def engine_notes(settings: StackSettings) -> list[str]:
    """The engine's own settings (`pulumi:`), said as what they do (plan.md only)."""
    notes: list[str] = []
    tags = settings.value(stackfile.TAGS_KEY)
    if isinstance(tags, dict) and tags:
        notes.append(
            "Stack tags (`pulumi:tags`; the CLI sets them on the stack in Pulumi Cloud, they label no resource): "
            + ", ".join(code_span(f"{name}={value}") for name, value in sorted(tags.items()))
        )
    disabled = settings.value(stackfile.DISABLE_DEFAULT_PROVIDERS_KEY)
    if isinstance(disabled, list) and disabled:
        notes.append(
            "Default providers disabled (`pulumi:disable-default-providers`): "
            + ", ".join(f"`{name}`" for name in disabled)
            + "; every resource and look-up of this stack names its provider, so nothing changes."
        )
    return notes
