"""Read `Pulumi.yaml` and `Pulumi.<stack>.yaml` strictly: every problem in a file is a config error.

The offline render reads the stack file itself (under `pulumi up` the CLI does), so a file that
is not valid UTF-8, not valid YAML, not a mapping, has duplicate or non-string keys, YAML aliases,
keys in a namespace no part of the program reads or a misspelled one, the same key bare and
namespaced, a plaintext value for a `secret: true` key, an engine setting of the wrong shape or an
`environment:` block the CLI would not read stops the render with one line `FILE:LINE:COLUMN: what
is wrong`.

Namespaces: the project's (or bare keys), `pulumi:` (the engine's own settings) and the providers
the program declares resources of (`gcp:`, `kubernetes:`), as any Pulumi stack file may hold them.

Aliases are refused when the composer meets them, before anything is expanded: an alias bomb
("billion laughs") costs no more than reading its text, and the file size is capped.
"""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from commands.io.console import hide_known_secrets
from commands.stackfile.esc import EnvironmentBlockError, StackEnvironment, read_environment
from commands.stackfile.yaml_scalars import plain_scalar
from common.input_files import InputError, control_character, decode, depth_of, read_bytes, size_text
from stacks.config.quoting import quote
from stacks.load.loader import MAX_CONFIG_DEPTH, InvalidConfig
from stacks.load.plaintext_secrets import shaped_secret_problem

MAX_FILE_BYTES = 256 * 1024
# What the Pulumi CLI keeps in a stack file besides `config` (pulumi/pulumi sdk/go/common/workspace,
# the ProjectStack struct; recalled, not re-read at a tag here).
STACK_FILE_KEYS = ("config", "encryptedkey", "encryptionsalt", "environment", "secretsprovider")
# What a top-level key of a stack file looks like, mistyped or not (`confg`, `secretsProvider`), or a setting put
# beside `config:` instead of under it (`gke-b200-serving:environment`).
KEY_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,40}(?::[A-Za-z][A-Za-z0-9_.-]{0,60})?")
SECURE_KEY = "secure"
ENGINE_NAMESPACE = "pulumi"
PROVIDER_NAMESPACES = ("gcp", "kubernetes")
# Engine settings and the shape the CLI requires (pulumi/pulumi pkg/backend/stack.go
# GetEnvironmentTagsForCurrentStack for tags; pkg/resource/deploy/default_providers.go
# shouldDenyRequest for disable-default-providers).
TAGS_KEY = "pulumi:tags"
DISABLE_DEFAULT_PROVIDERS_KEY = "pulumi:disable-default-providers"
# The engine settings plan.md shows (stack_settings.engine_notes), and where else they go: a secret in one
# would be written in plain text.
SHOWN_ENGINE_SETTINGS = {
    TAGS_KEY: "which plan.md shows and the CLI sets on the stack in Pulumi Cloud",
    DISABLE_DEFAULT_PROVIDERS_KEY: "which plan.md shows",
}
ENGINE_SETTING_SECRET_HINT = "remove it; a secret goes only in a secret config key (pulumi config set --secret)"
TAG_NAME = re.compile(r"^[a-zA-Z0-9\-_.:]{1,40}$")
TAG_VALUE_MAX_BYTES = 256


@dataclass(frozen=True)
class StackFile:
    """The `config` entries of a stack file keyed `<namespace>:<key>`, and which are `secure:`."""

    entries: dict[str, Any]
    secure_keys: list[str] = field(default_factory=list)
    environment: StackEnvironment = field(default_factory=StackEnvironment)


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses aliases (before expanding them) and duplicate or non-string keys, and reads
    plain scalars as the Pulumi CLI does (`commands.stackfile.yaml_scalars`)."""

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]
            raise yaml.MarkedYAMLError(
                # the anchor's name is not quoted: `*` may start a value meant literally, a password
                None,
                None,
                "YAML alias (a value starting with `*`) refused; write the value out, quoted if it starts with `*`",
                event.start_mark,
            )
        return super().compose_node(parent, index)  # type: ignore[no-any-return]

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[str] = set()
        for key_node, _ in node.value:
            if not isinstance(key_node, ScalarNode) or key_node.tag != "tag:yaml.org,2002:str":
                raise yaml.MarkedYAMLError(
                    None, None, f"mapping key {quote(_node_text(key_node))} is not a string", key_node.start_mark
                )
            if key_node.value in seen:
                raise yaml.MarkedYAMLError(
                    None, None, f"duplicate key {quote(key_node.value)}; each key may appear once", key_node.start_mark
                )
            seen.add(key_node.value)
        return super().construct_mapping(node, deep=True)

    def resolve(self, kind: type[Node], value: str | None, implicit: tuple[bool, bool]) -> str:
        """An untagged plain scalar gets the type the CLI's YAML library gives it (`yaml_scalars`);
        `<<` stays a merge key, which `construct_mapping` refuses as a key that is not a string."""
        if kind is ScalarNode and value is not None and implicit[0] and value != "<<":
            return YAML_TAG + plain_scalar(value)[0]
        return super().resolve(kind, value, implicit)  # type: ignore[no-untyped-call,no-any-return]

    def construct_go_scalar(self, node: Node) -> Any:
        """A null, boolean, integer or float as yaml.v3 reads it; an explicit tag it would not decode is refused."""
        kind, value = plain_scalar(str(node.value))
        wanted = node.tag.removeprefix(YAML_TAG)
        if kind == "int" and wanted == "float":
            return float(value)  # yaml.v3 turns an integer tagged !!float into a float
        if kind != wanted:
            raise yaml.constructor.ConstructorError(
                None, None, f"cannot decode {_shown_scalar(str(node.value))} as !!{wanted}", node.start_mark
            )
        return value


# Plain scalars are resolved by `resolve` above; the table still resolves `<<` (a merge key, refused).
# The loader gets a table of its own: the inherited one is PyYAML's, shared with every SafeLoader and
# SafeDumper of the process (a dumper without the timestamp resolver writes a date string unquoted).
_StrictLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}

YAML_TAG = "tag:yaml.org,2002:"
for _name in ("null", "bool", "int", "float"):
    _StrictLoader.add_constructor(YAML_TAG + _name, _StrictLoader.construct_go_scalar)
_SURROGATE = re.compile("[\ud800-\udfff]")
JSON_TAGS = frozenset(YAML_TAG + name for name in ("str", "int", "float", "bool", "null", "seq", "map"))


def _invalid(message: str) -> InvalidConfig:
    return InvalidConfig(f"invalid stack config: {message}")


def _node_text(node: Node) -> str:
    return str(node.value) if isinstance(node, ScalarNode) else f"<{type(node).__name__}>"


def _where(path: Path, mark: yaml.Mark | None) -> str:
    return f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)


# Values a refusal of a tagged scalar quotes: the words YAML 1.1 reads as booleans (the usual mistake) and
# values too short to be a secret (the console hides none under 3 characters). Any other value is not quoted:
# the file's own secret values are not known yet when its scalars are read.
# YAML 1.1's types (yaml.org/type): the tags a file may name that are no secret
YAML_TYPES = frozenset(
    [
        "binary",
        "bool",
        "float",
        "int",
        "map",
        "merge",
        "null",
        "omap",
        "pairs",
        "seq",
        "set",
        "str",
        "timestamp",
        "value",
        "yaml",
    ]
)
QUOTED_SCALARS = frozenset({"yes", "no", "on", "off", "y", "n"})


def _shown_scalar(value: str) -> str:
    return quote(value) if len(value) < 3 or value.lower() in QUOTED_SCALARS else "the value"


def _shown_tag(tag: str) -> str:
    """One of YAML's own tags by its short name (`!!binary`); any other is not quoted: `!` or `!!` may start a
    value meant literally, a password."""
    name = tag.removeprefix(YAML_TAG)
    return f"!!{name}" if tag.startswith(YAML_TAG) and name in YAML_TYPES else "(a word after `!`)"


def _check_tags(node: Node, path: Path) -> None:
    """Only JSON's types: a `!!binary`, `!!set` or custom tag is not a config value."""
    stack = [node]
    while stack:
        current = stack.pop()
        if current.tag not in JSON_TAGS:
            raise _invalid(
                f"{_where(path, current.start_mark)}: YAML tag {_shown_tag(current.tag)} is not allowed; "
                "use plain strings, numbers, booleans, lists and mappings (quote a value that starts with `!`)"
            )
        if isinstance(current, ScalarNode) and _SURROGATE.search(current.value):
            # The CLI's YAML scanner refuses these escapes (go-yaml/yaml scannerc.go: "found invalid
            # Unicode character escape code"); PyYAML keeps them as lone surrogates.
            raise _invalid(
                f"{_where(path, current.start_mark)}: a \\u escape of U+D800-U+DFFF (a UTF-16 surrogate) is not a "
                "character; write the character itself"
            )
        if isinstance(current, SequenceNode):
            stack.extend(current.value)
        elif isinstance(current, MappingNode):
            stack.extend(value for _, value in current.value)
            stack.extend(key for key, _ in current.value)


def _reader_problem(path: Path, text: str, error: yaml.reader.ReaderError) -> InvalidConfig:
    """A character YAML refuses (a NUL byte, another control character), at its line and column."""
    return _invalid(f"{path}:{control_character(text, error)}")


def read_yaml(path: Path) -> tuple[Any, Node | None]:
    """The document of a YAML file and its root node, or InvalidConfig naming file:line:column."""
    if not os.path.lexists(path):
        raise _invalid(f"{path}: file not found")
    try:
        text = decode(read_bytes(path, MAX_FILE_BYTES), str(path))
    except InputError as error:
        larger = f"larger than {size_text(MAX_FILE_BYTES)}"
        raise _invalid(str(error).replace(larger, f"{larger}; a stack file is a few lines")) from None
    try:
        loader = _StrictLoader(text)  # the reader checks every character here: a NUL byte fails at once
    except yaml.reader.ReaderError as error:
        raise _reader_problem(path, text, error) from None
    try:
        root = loader.get_single_node()
        if root is None:
            return None, None
        _check_tags(root, path)
        return loader.construct_document(root), root
    except yaml.reader.ReaderError as error:
        raise _reader_problem(path, text, error) from None
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        problem = " ".join(str(error.problem or error.context or "invalid YAML").split())
        if problem == "but found another document":  # the composer's words for a second `---` document
            problem = "a second YAML document starts here; allowed: one document, the stack's `config:` mapping"
        raise _invalid(f"{_where(path, mark)}: {problem}") from None
    except yaml.YAMLError as error:
        raise _invalid(f"{path}: invalid YAML ({' '.join(str(error).split())[:120]})") from None
    except RecursionError:
        raise _invalid(f"{path}: nested too deeply; a stack file is a few levels deep") from None
    finally:
        loader.dispose()


def _key_marks(root: Node | None, *path: str) -> dict[str, yaml.Mark]:
    """Where each key of the mapping at `path` starts, for messages."""
    node = root
    for part in path:
        if not isinstance(node, MappingNode):
            return {}
        node = next((value for key, value in node.value if key.value == part), None)
    if not isinstance(node, MappingNode):
        return {}
    return {str(key.value): key.start_mark for key, _ in node.value}


def stack_files(root: Path) -> list[str]:
    return sorted(path.name for path in root.glob("Pulumi.*.yaml"))


def read_project(project_file: Path) -> tuple[str, dict[str, Any]]:
    """The project name and its config schema from Pulumi.yaml."""
    document, _ = read_yaml(project_file)
    if not isinstance(document, dict) or not isinstance(document.get("name"), str):
        raise _invalid(f"{project_file}: not a Pulumi project file (a mapping with a 'name')")
    schema = document.get("config") or {}
    if not isinstance(schema, dict):
        raise _invalid(f"{project_file}: 'config' must be a mapping")
    return document["name"], schema


def read_stack_file(stack: str, stack_file: Path, project: str, schema: dict[str, Any]) -> StackFile:
    """The stack file's config, checked as the CLI checks it, and stricter where the CLI is lax."""
    if not os.path.lexists(stack_file):  # anything else that is there is refused by read_yaml, naming its kind
        found = ", ".join(stack_files(stack_file.parent)) or "none"
        raise _invalid(f"{stack_file}: stack file not found; stack files in {stack_file.parent}: {found}")
    document, root = read_yaml(stack_file)
    if document is None:
        document = {}
    if not isinstance(document, dict):
        raise _invalid(f"{_where(stack_file, root.start_mark if root else None)}: the file must be a mapping")
    top_marks = _key_marks(root)
    for key in document:
        if key not in STACK_FILE_KEYS:
            # a file given by mistake (a .pgpass, a shadow file) makes a whole line a key: quoted only when it
            # reads as a key name (a typo of one); otherwise the line is not shown
            named = (
                quote(key)
                if isinstance(key, str) and KEY_NAME.fullmatch(key)
                else "(a whole line, not shown: is this a stack file?)"
            )
            raise _invalid(
                f"{_where(stack_file, top_marks.get(key))}: unknown top-level key {named}; "
                f"allowed: {', '.join(STACK_FILE_KEYS)}"
            )
    entries = document.get("config")
    if entries is None and document.get("environment") is None:
        # the program would refuse its first required setting, naming no file
        raise _invalid(
            f"{stack_file}: sets no config (no 'config' and no 'environment'); a stack sets at least "
            f"{project}:environment and {project}:project"
        )
    if entries is None:
        entries = {}
    if not isinstance(entries, dict):
        raise _invalid(f"{_where(stack_file, top_marks.get('config'))}: 'config' must be a mapping")
    try:
        environment = read_environment(document.get("environment"), project)
    except EnvironmentBlockError as error:
        raise _invalid(f"{_where(stack_file, top_marks.get('environment'))}: {error}") from None
    hide_known_secrets(environment.secret_literals)  # a refusal below may quote a setting one was pasted into
    for key, value in environment.literal_config.items():
        namespace, _, name = key.partition(":")
        spec = schema.get(name) if namespace == project else None
        if isinstance(spec, dict) and spec.get("secret"):
            # A secret key in clear text in the stack file: as the CLI refuses it under `config:`.
            raise _invalid(
                f"{_where(stack_file, top_marks.get('environment'))}: environment pulumiConfig: {quote(name)} is a "
                f"secret and is written in clear text; allowed: {{fn::secret: ...}} in the environment, or remove it "
                f"and run `pulumi config set --secret {name}`"
            )
        problem = _namespace_problem(key, project) or _engine_setting_problem(key, value)
        if problem:
            raise _invalid(f"{_where(stack_file, top_marks.get('environment'))}: environment pulumiConfig: {problem}")
    marks = _key_marks(root, "config")
    config: dict[str, Any] = {}
    secure_keys: list[str] = []
    for key, value in entries.items():
        where = _where(stack_file, marks.get(key))
        namespace, _, name = key.partition(":") if ":" in key else ("", "", key)
        if not name:
            raise _invalid(f"{where}: config key {quote(key)} has no name after the namespace")
        in_project = not namespace or namespace == project
        if not in_project and (problem := _namespace_problem(key, project)):
            raise _invalid(f"{where}: {problem}")
        full_key = f"{project}:{name}" if in_project else key
        if full_key in config:
            raise _invalid(
                f"{where}: {quote(name)} is set both bare and as {quote(full_key)}; keep one "
                f"(bare keys belong to the project namespace)"
            )
        if value is None:
            raise _invalid(f"{where}: config key {quote(key)} has no value; set one or remove the key")
        if depth_of(value, MAX_CONFIG_DEPTH) > MAX_CONFIG_DEPTH:
            raise _invalid(f"{where}: config key {quote(key)} is nested deeper than {MAX_CONFIG_DEPTH} levels")
        secure = isinstance(value, dict) and set(value) == {SECURE_KEY}
        spec = schema.get(name) if in_project else None
        if isinstance(spec, dict) and spec.get("secret") and not secure:
            # The CLI's own words (pulumi/pulumi sdk/go/common/workspace, validateStackConfigValue).
            raise _invalid(
                f"{where}: Stack '{stack}' with configuration key '{name}' must be encrypted as it's secret; "
                f"remove the plaintext and run `pulumi config set --secret {name}`"
            )
        if secure:
            if not isinstance(value[SECURE_KEY], str):
                raise _invalid(f"{where}: 'secure' must hold the encrypted text as a string")
            secure_keys.append(full_key)
        elif problem := _engine_setting_problem(full_key, value):
            raise _invalid(f"{where}: {problem}")
        config[full_key] = value
    return StackFile(config, secure_keys, environment)


def _namespace_problem(key: str, project: str) -> str:
    """Why a namespaced key outside the project's is refused ("" when it is one the program reads)."""
    namespace = key.partition(":")[0]
    if namespace == project or namespace in (ENGINE_NAMESPACE, *PROVIDER_NAMESPACES):
        return ""
    return _foreign_namespace(key, namespace, project)


def _engine_setting_problem(key: str, value: Any) -> str:
    """The engine's settings of a known shape, checked as the CLI checks them (its words), and those plan.md
    shows for a secret first (a shape problem's message may quote a tag's name), as the project's settings are
    checked."""
    if key in SHOWN_ENGINE_SETTINGS and (
        secret := shaped_secret_problem(value, key, SHOWN_ENGINE_SETTINGS[key], ENGINE_SETTING_SECRET_HINT)
    ):
        return secret
    if key == TAGS_KEY:
        if not isinstance(value, dict):
            return f"{TAGS_KEY} must be an object of strings (stack tag name: value)"
        for name, tag in value.items():
            if not isinstance(tag, str):
                return f"{TAGS_KEY}[{quote(name, 40)}] must be a string"
            if problem := _tag_problem(name, tag):
                return f"{TAGS_KEY}[{quote(name, 40)}]: {problem}"
    if key == DISABLE_DEFAULT_PROVIDERS_KEY and not (
        isinstance(value, list) and all(isinstance(item, str) for item in value)
    ):
        return f"{DISABLE_DEFAULT_PROVIDERS_KEY} must be a list of package names or '*' (e.g. [\"*\"])"
    return ""


def _tag_problem(name: str, value: str) -> str:
    """Pulumi Cloud's rules for stack tags (pulumi/pulumi pkg/util/validation/stack.go, ValidateStackTags:
    names of 1-40 alphanumerics, '-', '_', '.', ':'; values of at most 256 bytes), and printable values:
    plan.md shows them."""
    if not TAG_NAME.fullmatch(name):
        return "stack tag names may only contain alphanumerics, hyphens, underscores, periods, or colons (1-40)"
    if len(value.encode()) > TAG_VALUE_MAX_BYTES:
        return f"the value is longer than {TAG_VALUE_MAX_BYTES} bytes"
    if not value.isprintable():
        return "the value holds a control character; allowed: printable text"
    return ""


def _foreign_namespace(key: str, namespace: str, project: str) -> str:
    known = [project, ENGINE_NAMESPACE, *PROVIDER_NAMESPACES]
    near = difflib.get_close_matches(namespace.lower(), known, n=1, cutoff=0.6)
    if near:
        return (
            f"config key {quote(key)}: namespace {quote(namespace)} is not one this program reads; "
            f"did you mean '{near[0]}:'?"
        )
    return (
        f"config key {quote(key)}: namespace {quote(namespace)} is not read by this program; allowed: '{project}:' "
        f"or bare keys, '{ENGINE_NAMESPACE}:' engine settings, "
        + " and ".join(f"'{name}:'" for name in PROVIDER_NAMESPACES)
        + " provider settings"
    )
