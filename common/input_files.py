"""Reading the files a command is given: bounded, regular files only, one clean line naming the file.

Every command reads through here (a render's resources.json, a policy config, benchmark results, a
log, a stack file, an output folder's manifest), so none of them can be made to read `/dev/zero`
until memory runs out, block forever on a FIFO, or print a traceback for JSON nested 100,000 deep:
* the path is `stat`ed first and anything but a regular file (a directory, a FIFO, a device, a
  socket) is refused before it is opened; it is then opened non-blocking and `fstat`ed again, so a
  file swapped for a FIFO in between is refused too;
* at most `limit` bytes are read; a longer file is refused, not truncated;
* JSON is strict: no NaN or Infinity, which Go's encoding/json and the Pulumi engine refuse too, nor
  a number beyond float64's range (1e400, which Python reads as infinity); no key twice in one
  object (the last would silently win); at most `max_depth` levels deep (Python's parser gives up
  with a RecursionError near 1,000 levels, which is reported as the same one line).
Standard library only, so every layer may use it.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
import sys
from pathlib import Path
from typing import Any, BinaryIO, TextIO

import yaml

KIB = 1024
MIB = 1024 * KIB
MAX_JSON_DEPTH = 64
# Objects and lists a JSON input may hold: a render's largest file holds a few thousand. Counted from the
# text's brackets before it is parsed (an upper bound: a bracket in a string counts too), so that 128 MiB of
# `{},` is refused at once instead of parsed into 44 million objects (109 s, 6.7 GB).
MAX_JSON_CONTAINERS = 1_000_000
# A YAML key shown as it is in a refusal; any other is quoted (and cut).
PLAIN_KEY = re.compile(r"[A-Za-z0-9_-]{1,64}")
# Digits of the largest float64 (1.8e308): a longer integer is out of its range.
FLOAT64_DIGITS = 309
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class InputError(ValueError):
    """A file or value a command was given cannot be used: one line naming it (exit status 2)."""


def size_text(limit: int) -> str:
    return f"{limit // MIB} MiB" if limit >= MIB else f"{limit // KIB} KiB"


def kind_of(mode: int) -> str:
    return next((kind for test, kind in _KINDS if test(mode)), "not a regular file")


def _os_problem(error: OSError) -> str:
    if isinstance(error, FileNotFoundError):
        return "no such file"
    if isinstance(error, PermissionError):
        return "permission denied"
    return error.strerror or type(error).__name__


def read_bytes(path: Path | str, limit: int) -> bytes:
    """The whole content of a regular file of at most `limit` bytes, or InputError naming the file."""
    try:
        before = os.stat(path)
    except ValueError:
        raise InputError(f"{path}: the path contains a NUL byte") from None
    except OSError as error:
        raise InputError(f"{path}: cannot read it ({_os_problem(error)})") from None
    if not stat.S_ISREG(before.st_mode):
        raise InputError(f"{path}: {kind_of(before.st_mode)}, not a regular file")
    try:
        descriptor = os.open(path, _OPEN_FLAGS)
    except OSError as error:
        raise InputError(f"{path}: cannot read it ({_os_problem(error)})") from None
    try:
        opened = os.fstat(descriptor)
        if not stat.S_ISREG(opened.st_mode):
            raise InputError(f"{path}: {kind_of(opened.st_mode)}, not a regular file")
        return _read_up_to(lambda size: os.read(descriptor, size), limit, str(path))
    except OSError as error:
        raise InputError(f"{path}: cannot read it ({_os_problem(error)})") from None
    finally:
        os.close(descriptor)


def _read_up_to(read: Any, limit: int, where: str) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while total <= limit:
        chunk = read(min(MIB, limit + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    if total > limit:
        raise InputError(f"{where}: larger than {size_text(limit)}; refusing to read it")
    return b"".join(chunks)


def decode(data: bytes, where: str) -> str:
    """UTF-8 text, or InputError naming the line and column of the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
        raise InputError(f"{where}:{line}:{column}: not valid UTF-8 (byte 0x{data[error.start]:02x})") from None


def read_text(path: Path | str, limit: int) -> str:
    return decode(read_bytes(path, limit), str(path))


# A number as YAML 1.2's core schema writes it (`9.5e4`, `95e3`, `.5`): PyYAML, a YAML 1.1 reader, takes the
# forms without a dot or a signed exponent as text.
YAML_12_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")


def yaml_12_number(value: object) -> object:
    """A text that YAML 1.2 reads as a number, as that number; anything else as it is."""
    return float(value) if isinstance(value, str) and YAML_12_FLOAT.match(value) else value


def read_stream(stream: TextIO | BinaryIO | None, limit: int, where: str = "standard input") -> str:
    """At most `limit` bytes of an open stream (standard input), decoded as UTF-8. A process started with
    its standard input closed has none (`sys.stdin` is None)."""
    if stream is None:
        raise InputError(f"{where}: cannot read it (it is closed)")
    source = getattr(stream, "buffer", stream)
    try:
        data = _read_up_to(source.read, limit, where)
    except OSError as error:
        raise InputError(f"{where}: cannot read it ({_os_problem(error)})") from None
    return decode(data if isinstance(data, bytes) else str(data).encode(), where)


def _refuse_constant(name: str) -> Any:
    raise InputError(f"{name} is not a JSON number (use a finite number)")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise InputError(f"the number {text[:40]} is out of range (use a finite number)")
    return value


def _finite_int(text: str) -> int:
    """An integer a float64 can hold: Go's encoding/json decodes a number into an interface{} as a
    float64 and refuses one out of its range (Python would read it, or give up on its digit limit)."""
    value = int(text) if len(text.lstrip("-")) <= FLOAT64_DIGITS else None
    if value is None or abs(value) > sys.float_info.max:
        raise InputError(f"the number {text[:40]} is out of range (use a finite number)")
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object whose keys appear once: with a repeated key the last one would silently win."""
    document: dict[str, Any] = {}
    for key, value in pairs:
        if key in document:
            raise InputError(f"the key {json.dumps(key)[:80]} appears twice in one object; keep one")
        document[key] = value
    return document


def depth_of(value: Any, limit: int) -> int:
    """How deeply lists and objects nest in `value`, counted up to `limit` + 1 (iteratively)."""
    deepest = 0
    containers: list[tuple[dict[str, Any] | list[Any], int]] = [(value, 1)] if isinstance(value, (dict, list)) else []
    while containers:
        item, depth = containers.pop()
        if depth > deepest:
            deepest = depth
            if depth > limit:
                return depth
        children = item.values() if isinstance(item, dict) else item
        containers.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return deepest


def parse_json(text: str, where: str, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """Strict JSON of at most `max_depth` levels and MAX_JSON_CONTAINERS objects and lists, or InputError
    `where[:line:column]: problem`."""
    if text.count("{") + text.count("[") > MAX_JSON_CONTAINERS:
        raise InputError(
            f"{where}: more than {MAX_JSON_CONTAINERS:,} objects and lists (a render writes a few thousand); not read"
        )
    try:
        value = json.loads(
            text,
            parse_constant=_refuse_constant,
            parse_float=_finite_float,
            parse_int=_finite_int,
            object_pairs_hook=_unique_keys,
        )
    except InputError as error:
        raise InputError(f"{where}: {error}") from None
    except json.JSONDecodeError as error:
        raise InputError(f"{where}:{error.lineno}:{error.colno}: not valid JSON ({error.msg})") from None
    except RecursionError:
        raise InputError(f"{where}: nested deeper than {max_depth} levels") from None
    except ValueError as error:  # e.g. an integer of more digits than Python converts
        raise InputError(f"{where}: not valid JSON ({error})") from None
    if depth_of(value, max_depth) > max_depth:
        raise InputError(f"{where}: nested deeper than {max_depth} levels")
    return value


def read_json(path: Path | str, limit: int, max_depth: int = MAX_JSON_DEPTH) -> Any:
    return parse_json(read_text(path, limit), str(path), max_depth)


def _keyed_children(node: yaml.Node) -> list[tuple[yaml.Node | int, yaml.Node]]:
    """The values a node holds, each with its key node (a mapping's values, a merge key's mappings among
    them) or its index (a sequence's items)."""
    if isinstance(node, yaml.MappingNode):
        return list(node.value)
    if isinstance(node, yaml.SequenceNode):
        return list(enumerate(node.value))
    return []


def _yaml_children(node: yaml.Node) -> list[yaml.Node]:
    return [child for _, child in _keyed_children(node)]


def _repeated_key(node: yaml.Node) -> str | None:
    """The first key a mapping node writes twice (a merge key `<<` may come back: each merges more)."""
    if not isinstance(node, yaml.MappingNode):
        return None
    seen: set[str] = set()
    for key, _ in node.value:
        if isinstance(key, yaml.ScalarNode) and key.tag != "tag:yaml.org,2002:merge":
            if key.value in seen:
                return str(key.value)
            seen.add(key.value)
    return None


def _yaml_problem(root: yaml.Node, max_values: int, max_depth: int) -> str | None:
    """What makes the composed document too large once aliases and merge keys are expanded (each use of
    a node counted again), too deep, or a mapping with a key twice; None when nothing does. Worked out
    per node over the graph, never by expanding it."""
    values: dict[int, int] = {}
    depth: dict[int, int] = {}
    pending: list[tuple[yaml.Node, bool]] = [(root, False)]
    open_nodes: set[int] = set()
    while pending:
        node, children_done = pending.pop()
        if id(node) in values:
            continue
        children = _yaml_children(node)
        if not children_done:
            if id(node) in open_nodes:
                return "a value that contains itself (an alias of an enclosing anchor)"
            open_nodes.add(id(node))
            repeated = _repeated_key(node)
            if repeated is not None:
                return f"the key {json.dumps(repeated)[:80]} appears twice in one mapping; keep one"
            pending.append((node, True))
            pending.extend((child, False) for child in children if id(child) not in values)
            continue
        open_nodes.discard(id(node))
        values[id(node)] = 1 + sum(values[id(child)] for child in children)
        if values[id(node)] > max_values:
            return _too_many_values(max_values)
        is_collection = isinstance(node, (yaml.MappingNode, yaml.SequenceNode))
        depth[id(node)] = is_collection + max((depth[id(child)] for child in children), default=0)
        if depth[id(node)] > max_depth:
            return f"nested deeper than {max_depth} levels"
    return None


def _too_many_values(max_values: int) -> str:
    return f"more than {max_values:,} values once its aliases and merge keys are expanded"


class _TooManyNodesError(Exception):
    """The composer met more nodes than the input may hold values."""


class _UnreadableValueError(Exception):
    """A value PyYAML's constructor could not make, with the node it was made of."""

    def __init__(self, node: yaml.Node, error: ValueError) -> None:
        super().__init__(str(error))
        self.node = node
        self.error = error


class _LocatingLoader(yaml.SafeLoader):
    """SafeLoader that says which node a value could not be made of (a date that is none, an integer
    longer than Python reads): the constructor's own ValueError names no key; and that stops composing past
    `max_nodes` nodes, before the whole tree of a file of a million scalars is built (30 s, 520 MB)."""

    max_nodes: int | None = None
    _composed = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        self._composed += 1
        if self.max_nodes is not None and self._composed > self.max_nodes:
            raise _TooManyNodesError
        return super().compose_node(parent, index)  # type: ignore[no-untyped-call,no-any-return]

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)  # type: ignore[no-untyped-call]
        except ValueError as error:
            raise _UnreadableValueError(node, error) from None


def _key_text(key: yaml.Node | int) -> str:
    if isinstance(key, int):
        return str(key)
    text = str(key.value) if isinstance(key, yaml.ScalarNode) else "?"
    return text if PLAIN_KEY.fullmatch(text) else json.dumps(text)[:40]


def _key_path(root: yaml.Node, target: yaml.Node) -> str:
    """The dotted keys from the root to `target` (list items by index, as pydantic names them)."""
    pending: list[tuple[yaml.Node, tuple[yaml.Node | int, ...]]] = [(root, ())]
    seen: set[int] = set()
    while pending:
        node, path = pending.pop()
        if node is target:
            return ".".join(map(_key_text, path))
        if id(node) in seen:
            continue
        seen.add(id(node))
        pending.extend((child, (*path, key)) for key, child in _keyed_children(node))
    return ""


def _error_line(error: Exception) -> str:
    """A parser's or constructor's message on one short line."""
    return " ".join(str(error).split())[:200]


def _marked_line(where: str, error: yaml.MarkedYAMLError) -> str:
    """`where:LINE:COLUMN: problem`, the parser's words without the excerpt of the file it quotes (a file given by
    mistake may hold a password there)."""
    mark = error.problem_mark or error.context_mark
    problem = " ".join(str(error.problem or error.context or "invalid YAML").split())[:200]
    return f"{where}:{mark.line + 1}:{mark.column + 1}: {problem}" if mark is not None else f"{where}: {problem}"


def _unreadable_line(failure: _UnreadableValueError, root: yaml.Node) -> str:
    path = _key_path(root, failure.node)[:200]
    if "Exceeds the limit" in str(failure.error):
        problem = f"an integer too long to read; allowed: at most {sys.get_int_max_str_digits():,} digits"
    else:
        problem = _error_line(failure.error)
    return f"{path}: {problem}" if path else problem


def control_character(text: str, error: yaml.reader.ReaderError) -> str:
    """`LINE:COLUMN: what is wrong and what to do` for a character YAML refuses (a NUL byte, another control
    character) in `text`."""
    before = text[: error.position]
    line, column = before.count("\n") + 1, error.position - (before.rfind("\n") + 1) + 1
    character = error.character if isinstance(error.character, str) else chr(error.character)
    return f"{line}:{column}: control character {character!r} is not allowed in YAML; remove it"


def parse_yaml(text: str, where: str, max_values: int, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """Safe YAML of at most `max_values` values nested at most `max_depth` levels once its aliases and
    merge keys are expanded, each mapping's keys once, or InputError `where: problem`. The limits hold
    for the composed nodes, before any value is made: a merge key (`<<: *a`) copies the mapping it
    names, so a few hundred bytes of merges of merges took gigabytes once made."""
    try:
        loader = _LocatingLoader(text)  # its reader refuses a control character here, before any parsing
    except yaml.reader.ReaderError as error:
        raise InputError(f"{where}:{control_character(text, error)}") from None
    loader.max_nodes = 2 * max_values + 1  # a mapping's keys are nodes too, and no value of their own
    try:
        root = loader.get_single_node()
        if root is None:
            return None
        problem = _yaml_problem(root, max_values, max_depth)
        if problem is not None:
            raise InputError(f"{where}: {problem}")
        try:
            return loader.construct_document(root)
        except _UnreadableValueError as failure:  # a date that is none (2024-13-45), an integer Python will not read
            raise InputError(f"{where}: {_unreadable_line(failure, root)}") from None
    except InputError:
        raise
    except _TooManyNodesError:
        raise InputError(f"{where}: {_too_many_values(max_values)}") from None
    except RecursionError:  # the composer gives up near 1,000 levels
        raise InputError(f"{where}: nested deeper than {max_depth} levels") from None
    except yaml.MarkedYAMLError as error:
        raise InputError(_marked_line(where, error)) from None
    except (yaml.YAMLError, ValueError) as error:
        raise InputError(f"{where}: {_error_line(error)}") from None
    finally:
        loader.dispose()
