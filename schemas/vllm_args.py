"""The `vllm serve` arguments of every vLLM release the stack pins, vendored in `schemas/vllm/` as one
table per release generated from that release's own argument parser, and a checker that holds a
command line against a table without importing vLLM.

`python -m schemas.vllm_args refresh VERSION --python PATH` (`make vllm-args VERSION=...
VLLM_PYTHON=...`) runs PATH, a Python with vllm==VERSION installed in a throwaway environment (vLLM
is never a dependency of this project), to build the serve parser exactly as `vllm serve` does and
writes `schemas/vllm/vllm-VERSION.json`: every option with all the option strings the parser
accepts, how many values it takes, its choices and its type, plus the real parser's verdict on the
command lines in `PROBES`. vLLM's CUDA extension needs the driver library, so `refresh` compiles
`schemas/vllm/libcuda_stub.c` in a temporary directory first. The table holds no date: refreshing
with the same environment rewrites it byte for byte.

`check_serve_args(argv, version)` reads only the table. It follows vLLM's `FlexibleArgumentParser`
(vllm/utils/argparse_utils.py; what it follows is the same at 0.19.0 and 0.33.0), then argparse: `--name=value` and
`--name value`, `_` read as `-` in a long option's name (up to its first `.`), `-O3` / `-O=3` /
`-O 3` for `--optimization-level`, `--json-arg.key value` merged into `--json-arg JSON`, `--model X`
moved in front as the model. It is stricter than vLLM in three places: a unique prefix of an option
(argparse's abbreviations) is refused, `--config FILE` is refused (the file is not read), and so is
`--help`.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.metadata
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DIRECTORY = Path(__file__).resolve().parent / "vllm"
STUB_SOURCE = DIRECTORY / "libcuda_stub.c"
GENERATOR = "schemas/vllm_args.py"
TABLE_FORMAT = 1
VERSION_PATTERN = re.compile(r"\d+\.\d+\.\d+")
# An image tag that names a release: vllm/vllm-openai:v0.19.0, optionally with @sha256:...
IMAGE_VERSION = re.compile(r":v?(\d+\.\d+\.\d+)(?:@sha256:[0-9a-f]{64})?$")
# A `transform` the checker applies to a value before its choices: vLLM's
# `lambda s: s.lower().replace("-", "_")` (--moe-backend and other kernel choices).
LOWER_SNAKE = "lower, - to _"
KIND_NAMES = {"int": "an integer", "float": "a number", "json": "JSON"}
# Where the checker refuses, on purpose, a line vLLM accepts (a probe's `stricter`).
STRICTER = ("abbreviation", "config-file", "help")


@dataclass(frozen=True)
class Probe:
    """A command line (the arguments after `vllm serve`) that `refresh` hands to the real parser; the
    table records its verdict and the tests hold the checker to it. `stricter` names the rule by
    which the checker refuses a line vLLM accepts."""

    name: str
    argv: tuple[str, ...]
    stricter: str | None = None


SPECULATIVE = '--speculative-config={"method":"mtp","num_speculative_tokens":1}'
# RECIPE.md section 2, plus the flags the recipe text adds and a served name, port and host.
RECIPE = (
    "--model=Qwen/Qwen3.5-27B-FP8",
    "--data-parallel-size=8",
    "--max-model-len=2560",
    "--max-num-batched-tokens=16384",
    "--kv-cache-dtype=fp8_e4m3",
    "--gpu-memory-utilization=0.92",
    "--enable-prefix-caching",
    "--enable-chunked-prefill",
    "--attention-backend=FLASHINFER",
    "-O3",
    SPECULATIVE,
    "--mamba-cache-mode=align",
    "--mamba-block-size=8",
    "--max-num-seqs=8192",
    "--served-model-name=x",
    "--port=8000",
    "--host=0.0.0.0",
)
# The stack's rendering of the recipe (components/vllm.py engine_args: the model path first).
RENDERED = (
    "/models/Qwen/Qwen3.5-27B-FP8",
    "--served-model-name=Qwen/Qwen3.5-27B-FP8",
    "--port=8000",
    "--data-parallel-size=8",
    "--tensor-parallel-size=1",
    "--max-model-len=2560",
    "--max-num-batched-tokens=16384",
    "--max-num-seqs=8192",
    "--kv-cache-dtype=fp8_e4m3",
    "--gpu-memory-utilization=0.92",
    "--enable-prefix-caching",
    "--enable-chunked-prefill",
    "--attention-backend=FLASHINFER",
    "-O3",
    SPECULATIVE,
    "--mamba-cache-mode=align",
    "--mamba-block-size=8",
    "--shutdown-timeout=15",
)
MODEL = "/models/m"
PROBES = (
    Probe("recipe", RECIPE),
    Probe("rendered", RENDERED),
    Probe("rendered-disabled", (MODEL, "--no-enable-prefix-caching", "--no-enable-chunked-prefill")),
    Probe("space-separated", (MODEL, "--max-model-len", "2560", "--kv-cache-dtype", "fp8_e4m3", "-dp", "8")),
    Probe("short-option-equals", (MODEL, "-dp=8", "-tp=1")),
    Probe("short-option-glued", (MODEL, "-dp8")),
    Probe("single-letter-glued", (MODEL, "-qfp8")),
    Probe("underscores", (MODEL, "--max_model_len=2560", "--enable_prefix_caching", "--kv_cache_dtype", "fp8_e4m3")),
    Probe("optimization-level-equals", (MODEL, "-O=3")),
    Probe("optimization-level-separate", (MODEL, "-O", "3")),
    Probe("optimization-level-long", (MODEL, "--optimization-level=3")),
    Probe("optimization-level-word", (MODEL, "-Odecode")),
    Probe("optimization-level-bare", (MODEL, "-O")),
    Probe("optimization-level-dotted", (MODEL, "-O.mode=3")),
    Probe(
        "dotted-json", (MODEL, "--speculative-config.method=mtp", "--speculative-config.num_speculative_tokens", "1")
    ),
    Probe("dotted-underscores", (MODEL, "--speculative_config.method=mtp")),
    Probe("dotted-short", (MODEL, "-cc.mode=3", "-cc.cudagraph_capture_sizes+=8,16")),
    Probe("dotted-unknown", (MODEL, "--no-such-config.key=1")),
    Probe("dotted-without-value", (MODEL, "--speculative-config.method")),
    Probe("dotted-flag", (MODEL, "--enable-prefix-caching.x=1")),
    Probe("model-option-last", ("--served-model-name=x", "--model", "/models/m")),
    Probe("served-name-without-model", ("--served-model-name=x", "--port=8000")),
    Probe("two-models", (MODEL, "/models/other")),
    Probe("negative-number", (MODEL, "--seed", "-1")),
    Probe("served-names", (MODEL, "--served-model-name", "a", "b")),
    Probe("misspelled", (MODEL, "--max-modle-len=2560")),
    Probe("abbreviation", (MODEL, "--max-model=2560"), stricter="abbreviation"),
    Probe("short-abbreviation", (MODEL, "-t", "1"), stricter="abbreviation"),
    Probe("ambiguous", (MODEL, "--max-num=8")),
    Probe("flag-with-value", (MODEL, "--enable-prefix-caching=true")),
    Probe("flag-with-empty-value", (MODEL, "--enable-prefix-caching=")),
    Probe("missing-value", (MODEL, "--max-model-len")),
    Probe("option-as-value", (MODEL, "--max-model-len", "--port=8000")),
    Probe("not-an-int", (MODEL, "--max-num-seqs=lots")),
    Probe("human-readable-int", (MODEL, "--max-model-len=2.5k")),
    Probe("not-json", (MODEL, "--speculative-config={method: mtp}")),
    Probe("kv-cache-dtype-nvfp4", (MODEL, "--kv-cache-dtype=nvfp4")),
    Probe("kv-cache-dtype-upper", (MODEL, "--kv-cache-dtype=FP8_E4M3")),
    Probe("mamba-cache-mode-all", (MODEL, "--mamba-cache-mode=all")),
    Probe("mamba-block-size-none", (MODEL, "--mamba-block-size=None")),
    Probe("moe-backend-spelling", (MODEL, "--moe-backend=FLASHINFER-CUTLASS")),
    Probe("attention-backend-unknown", (MODEL, "--attention-backend=NO_SUCH_BACKEND")),
    Probe("disable-form", (MODEL, "--disable-prefix-caching")),
    Probe("no-disable-form", (MODEL, "--no-disable-log-stats")),
    Probe("expert-parallel", (MODEL, "-dp", "8", "--enable-expert-parallel", "--language-model-only")),
    Probe("performance", (MODEL, "--performance-mode=throughput", "--async-scheduling")),
    Probe("cudagraph-capture-size", (MODEL, "--max-cudagraph-capture-size=512")),
    Probe("config-file", (MODEL, "--config", "/no/such/vllm-config.yaml")),
)


class NoTableError(ValueError):
    """No vendored table for a vLLM version."""


# ---------------------------------------------------------------- tables


def table_path(version: str, directory: Path = DIRECTORY) -> Path:
    return directory / f"vllm-{version}.json"


def versions(directory: Path = DIRECTORY) -> list[str]:
    """The vLLM versions that have a table, oldest first."""
    found = [path.name.removeprefix("vllm-").removesuffix(".json") for path in directory.glob("vllm-*.json")]
    return sorted(found, key=lambda version: tuple(int(part) for part in version.split(".")))


@cache
def table_for(version: str) -> dict[str, Any]:
    """The vendored table of `version`; `NoTableError` (one line naming the versions that have one) if none."""
    path = table_path(version)
    if not path.is_file():
        raise NoTableError(
            f"no vllm serve argument table for vLLM {version} (tables: {', '.join(versions()) or 'none'}); "
            f"generate one with `make vllm-args VERSION={version} VLLM_PYTHON=<python with vllm=={version}>`"
        )
    loaded: dict[str, Any] = json.loads(path.read_text())
    return loaded


def image_version(image: str) -> str:
    """The vLLM release an image reference names by its tag (`vllm/vllm-openai:v0.19.0[@sha256:...]`)."""
    match = IMAGE_VERSION.search(image)
    if match is None:
        raise NoTableError(
            f"image {image!r} names no vLLM release in its tag (like :v0.19.0), so no argument table applies"
        )
    return match.group(1)


def render_table(table: dict[str, Any]) -> str:
    """The one serialisation of a table: sorted keys, two-space indent, a final newline."""
    return json.dumps(table, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


# ---------------------------------------------------------------- checker


@dataclass(frozen=True)
class _Optional:
    """What argparse makes of a token that looks like an option (`_parse_optional`)."""

    token: str
    option_string: str | None  # the option it names; None if none or several
    explicit: str | None  # the value after `=` (or glued to a one-letter option)
    candidates: tuple[str, ...] = ()  # the options a prefix could stand for
    abbreviation: bool = False


class _Checker:
    def __init__(self, table: dict[str, Any]) -> None:
        self.version: str = table["vllm"]
        self.options: dict[str, dict[str, Any]] = table["options"]
        self.positionals: list[dict[str, Any]] = table["positionals"]
        self.accepted = {string: name for name, option in self.options.items() for string in option["option_strings"]}
        self.problems: list[str] = []

    def check(self, argv: Sequence[str]) -> list[str]:
        args = self._model_in_front(list(argv))
        if (
            args
            and args[0].startswith("-")
            and not any(re.match(r"^--config(=.+|$)", arg) for arg in args)
            and any(re.match(r"^--served[-_]model[-_]name(=.+|$)", arg) for arg in args)
        ):
            self.problems.append("the model must be the first argument when --served-model-name is given")
        if "--config" in args:
            self.problems.append("--config: a config file's arguments are not checked; render them as flags")
        self._parse(self._merge_dotted(self._normalise(args)))
        return self.problems

    def _model_in_front(self, args: list[str]) -> list[str]:
        """`vllm serve ... --model X ...` is read as `vllm serve X ...` (FlexibleArgumentParser.parse_args)."""
        for index, arg in enumerate(args):
            if re.match(r"^--model(=.+|$)", arg):
                if arg != "--model":
                    return [arg.removeprefix("--model="), *args[:index], *args[index + 1 :]]
                if index + 1 == len(args):
                    self.problems.append("--model: needs a value")
                    return args[:index]
                return [args[index + 1], *args[:index], *args[index + 2 :]]
        return args

    @staticmethod
    def _normalise(args: list[str]) -> list[str]:
        """Underscores to dashes in long option names (up to the first `.`); `-O<level>` forms."""
        processed: list[str] = []
        for index, arg in enumerate(args):
            if arg.startswith("--help="):
                processed.append("--help")
            elif arg.startswith("--"):
                key, equals, value = arg.partition("=")
                name, dot, rest = key[2:].partition(".")
                processed.append("--" + name.replace("_", "-") + dot + rest + equals + value)
            elif arg.startswith("-O") and arg != "-O":
                processed += ["--optimization-level", arg[3:] if arg[2] == "=" else arg[2:]]
            elif arg == "-O" and index + 1 < len(args) and args[index + 1] in {"0", "1", "2", "3"}:
                processed.append("--optimization-level")
            else:
                processed.append(arg)
        return processed

    def _merge_dotted(self, processed: list[str]) -> list[str]:
        """`--name.key value` and `--name.key=value` (`+` appends to a list) become `--name JSON` at
        the end, for any token that starts with `-` and has a `.` in its name."""
        dropped: set[int] = set()
        merged: dict[str, dict[str, Any]] = {}
        for index, token in enumerate(processed):
            if index in dropped or not token.startswith("-") or "." not in token:
                continue
            if "=" in token:
                name, value = token.split("=", 1)
                if "." not in name:
                    continue  # the dot is in the value
            elif index + 1 < len(processed):
                name, value = token, processed[index + 1]
                dropped.add(index + 1)
            else:
                self.problems.append(f"{token}: needs a value")
                dropped.add(index)
                continue
            if name.endswith("+"):
                name, value = name[:-1], json.dumps(value.split(","))
            key, *keys = name.split(".")
            try:
                parsed: Any = json.loads(value)
            except json.JSONDecodeError:
                parsed = value
            for nested in reversed(keys):
                parsed = {nested: parsed}
            _merge(merged.setdefault(key, {}), parsed)
            dropped.add(index)
        kept = [arg for index, arg in enumerate(processed) if index not in dropped]
        for key, settings in merged.items():
            kept += [key, json.dumps(settings)]
        return kept

    def _optional(self, token: str) -> _Optional | None:
        """argparse's `_parse_optional`: None for a positional (a value)."""
        if not token.startswith("-") or token == "-":
            return None
        name, equals, explicit = token.partition("=")
        if token in self.accepted:
            return _Optional(token, token, None)
        if equals and name in self.accepted:
            return _Optional(token, name, explicit)
        found = self._prefix_matches(token)
        if len(found) == 1:
            ((string, value),) = found
            glued = not token.startswith("--") and string == token[:2]
            return _Optional(token, string, value, (string,), abbreviation=not glued)
        if found or not (re.match(r"^-\d+$|^-\d*\.\d+$", token) or " " in token):
            return _Optional(token, None, None, tuple(string for string, _ in found))
        return None  # a negative number, or a value with a space in it

    def _prefix_matches(self, token: str) -> list[tuple[str, str | None]]:
        """argparse's `_get_option_tuples` (allow_abbrev is on): long options by prefix (before any
        `=`); a one-letter short option with its value glued on, or a short option by prefix."""
        if token.startswith("--"):
            prefix, equals, explicit = token.partition("=")
            return [(string, explicit if equals else None) for string in self.accepted if string.startswith(prefix)]
        found: list[tuple[str, str | None]] = []
        for string in self.accepted:
            if string == token[:2]:
                found.append((string, token[2:]))
            elif string.startswith(token):
                found.append((string, None))
        return found

    def _parse(self, processed: list[str]) -> None:
        positionals: list[str] = []
        index = 0
        while index < len(processed):
            token = processed[index]
            if token == "--":
                positionals += processed[index + 1 :]
                break
            optional = self._optional(token)
            index += 1
            if optional is None:
                positionals.append(token)
                continue
            following = self._values_after(processed, index)
            if optional.option_string is None:
                if optional.candidates:
                    self.problems.append(f"{token}: ambiguous, could be {', '.join(optional.candidates)}")
                else:
                    self.problems.append(f"{token}: no such option in vllm serve {self.version}")
                index += len(following)  # most likely its values
                continue
            if optional.abbreviation:
                self.problems.append(
                    f"{token}: write {optional.option_string} in full "
                    f"(vLLM {self.version} takes a unique prefix, a later release may not)"
                )
            index += self._consume(optional, following)
        allowed = sum(1 if positional["nargs"] in (None, "?") else len(positionals) for positional in self.positionals)
        for extra in positionals[allowed:]:
            self.problems.append(f"{extra}: an argument too many (the model is {positionals[0]})")

    def _values_after(self, processed: list[str], index: int) -> list[str]:
        values: list[str] = []
        for token in processed[index:]:
            if token == "--" or self._optional(token) is not None:
                break
            values.append(token)
        return values

    def _consume(self, optional: _Optional, following: list[str]) -> int:
        """Check one option's values; returns how many of the following tokens it takes."""
        assert optional.option_string is not None
        name = self.accepted[optional.option_string]
        option = self.options[name]
        nargs = option["nargs"]
        label = optional.token
        if name == "--help":
            self.problems.append(f"{label}: prints the help and exits")
            return 0
        if optional.explicit is not None:
            if nargs == 0:
                self.problems.append(f"{label}: {optional.option_string} takes no value")
            elif isinstance(nargs, int) and nargs > 1:
                self.problems.append(f"{label}: {optional.option_string} takes {nargs} values")
            else:
                self._check_value(label, option, optional.explicit)
            return 0
        wanted = {0: 0, 1: 1, "?": min(1, len(following)), "+": len(following), "*": len(following)}.get(nargs, nargs)
        if wanted > len(following) or (nargs == "+" and not following):
            self.problems.append(f"{label}: needs {'a value' if nargs in (1, '+') else f'{nargs} values'}")
            return len(following)
        for value in following[:wanted]:
            self._check_value(label, option, value)
        return int(wanted)

    def _check_value(self, label: str, option: dict[str, Any], value: str) -> None:
        problem = _value_problem(option, value)
        if problem:
            self.problems.append(f"{label}: {problem}")


def _merge(original: dict[str, Any], update: dict[str, Any]) -> None:
    """vLLM's `recursive_dict_update` for dotted arguments."""
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(original.get(key), dict):
            _merge(original[key], value)
        elif isinstance(value, list) and isinstance(original.get(key), list):
            original[key] += value
        else:
            original[key] = value


def _value_problem(option: dict[str, Any], value: str) -> str | None:
    """The parser's conversion of one value (`type`) and its choices; None if it passes. Values of
    other types (vLLM's dataclass configs, human-readable integers) are left to vLLM."""
    converted: Any = value
    if option.get("optional") and value in ("", "None"):
        converted = None
    else:
        if option.get("transform") == LOWER_SNAKE:
            converted = value.lower().replace("-", "_")
        kind: str = option.get("type", "str")
        try:
            if kind == "int":
                converted = int(value)
            elif kind == "float":
                converted = float(value)
            elif kind == "json":
                converted = json.loads(value)
        except ValueError:
            return f"{value!r} is not {KIND_NAMES[kind]}"
    choices = option.get("choices")
    if choices is not None and converted not in choices:
        return f"{value!r} is not one of {', '.join(str(choice) for choice in choices)}"
    return None


def check_against(table: dict[str, Any], argv: Sequence[str]) -> list[str]:
    """What the parser of `table`'s release refuses in `argv` (the arguments after `vllm serve`)."""
    return _Checker(table).check(argv)


def check_serve_args(argv: Sequence[str], version: str) -> list[str]:
    """The problems of `vllm serve ARGV` for vLLM `version`, one line each; [] if its parser accepts
    it. `NoTableError` if `version` has no table."""
    return check_against(table_for(version), argv)


# ---------------------------------------------------------------- generator (runs inside vLLM's environment)


def _module(name: str) -> Any:
    return importlib.import_module(name)


def _serve_parser() -> tuple[Any, Any]:
    """`vllm`'s top-level parser with the `serve` subcommand, as vllm/entrypoints/cli/main.py builds
    it, and the serve parser itself; the platform is CUDA, as in the GPU image."""
    platforms, cuda, interface = (
        _module(name) for name in ("vllm.platforms", "vllm.platforms.cuda", "vllm.platforms.interface")
    )
    platforms._current_platform = cuda.CudaPlatform()
    # At 0.19.0 importing the serve command asks the device for its compute capability
    # (vllm/model_executor/layers/quantization/utils/w8a8_utils.py): answer B200's, 10.0.
    cuda.CudaPlatform.get_device_capability = classmethod(
        lambda cls, device_id=0: interface.DeviceCapability(major=10, minor=0)
    )
    flexible = _module("vllm.utils.argparse_utils").FlexibleArgumentParser
    command = _module("vllm.entrypoints.cli.serve").ServeSubcommand()
    top = flexible(prog="vllm", description="vLLM CLI")
    parser = command.subparser_init(top.add_subparsers(required=False, dest="subparser"))
    parser.set_defaults(dispatch_function=command.cmd)
    return top, parser


def _type_of(convert: Any) -> dict[str, Any]:
    """The type of an action's values: `str`, `int`, `float` or `json` (which the checker converts,
    `optional` if "" and "None" give None, `transform` if the value is rewritten first); otherwise
    the converting function's name, which the checker does not follow."""
    if convert is None or convert in (str, int, float):
        return {"type": getattr(convert, "__name__", "str")}
    if convert is json.loads:
        return {"type": "json"}
    name = getattr(convert, "__name__", type(convert).__name__)
    code = getattr(convert, "__code__", None)
    cells = getattr(convert, "__closure__", None) or ()
    inner = {
        cell_name: cell.cell_contents for cell_name, cell in zip(code.co_freevars if code else (), cells, strict=True)
    }
    if name == "_optional_type" and "return_type" in inner:  # vllm/engine/arg_utils.py optional_type
        return {**_type_of(inner["return_type"]), "optional": True}
    if name == "_parse_type" and "return_type" in inner:  # parse_type: ValueError becomes a usage error
        return _type_of(inner["return_type"])
    if name == "<lambda>" and _lowers_snake(convert):
        return {"type": "str", "transform": LOWER_SNAKE}
    return {"type": name}


def _lowers_snake(convert: Any) -> bool:
    try:
        return bool(convert("Ab-C_d") == "ab_c_d" and convert("x") == "x")
    except Exception:
        return False


def _choice_key(choice: Any) -> tuple[int, Any]:
    return (0, choice) if isinstance(choice, int | float) else (1, choice) if isinstance(choice, str) else (2, "")


def _option_table(parser: Any) -> dict[str, dict[str, Any]]:
    strings: dict[int, list[str]] = {}
    for string, action in parser._option_string_actions.items():
        strings.setdefault(id(action), []).append(string)
    options: dict[str, dict[str, Any]] = {}
    # vLLM's own record of `deprecated=True` arguments (for Pythons before 3.13; a class attribute at 0.19.0)
    deprecated: set[Any] = getattr(parser, "_deprecated", set())
    for action in parser._actions:
        if not action.option_strings:
            continue
        name = next((string for string in action.option_strings if string.startswith("--")), action.option_strings[0])
        entry: dict[str, Any] = {
            "action": type(action).__name__,
            "dest": action.dest,
            "nargs": 1 if action.nargs is None else action.nargs,
            "option_strings": sorted(strings[id(action)]),
        }
        if action.nargs != 0:
            entry.update(_type_of(action.type))
        if action.choices is not None:
            choices = list(action.choices)
            if not all(choice is None or isinstance(choice, str | int | float) for choice in choices):
                raise ValueError(f"{name}: choices {choices!r} are not plain values")
            if entry["type"] not in ("str", "int", "float"):
                raise ValueError(f"{name}: choices on a {entry['type']} value, which the checker cannot convert")
            entry["choices"] = sorted(choices, key=_choice_key)
        if isinstance(action, argparse.BooleanOptionalAction):
            negative = []
            for string in strings[id(action)]:
                namespace = argparse.Namespace()
                action(parser, namespace, None, string)
                if getattr(namespace, action.dest) is False:
                    negative.append(string)
            entry["negative_option_strings"] = sorted(negative)
        if action in deprecated:
            entry["deprecated"] = True
        if action.required:
            entry["required"] = True
        if name in options:
            raise ValueError(f"{name}: two actions")
        options[name] = entry
    return options


def _plain(value: Any) -> Any:
    """A parsed value as JSON; an object other than a dict, list or scalar by its type name."""
    return json.loads(json.dumps(value, default=lambda other: f"<{type(other).__name__}>"))


def _one_line(message: str) -> str:
    """A message on one line, without object addresses (`<function loads at 0x7f...>`)."""
    return re.sub(r" at 0x[0-9a-f]+", "", " ".join(message.split()))


def _real_verdict(top: Any, parser: Any, argv: Sequence[str]) -> dict[str, Any]:
    """What `vllm serve ARGV` makes of its arguments (parsing only: before `ServeSubcommand.validate`)."""
    stdout, stderr = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            namespace = top.parse_args(["serve", *argv])
    except SystemExit as exit_:
        message = stderr.getvalue().split(": error: ", 1)[-1]
        return {"accepted": False, "error": _one_line(message) or f"exit status {exit_.code}"}
    except Exception as error:
        return {"accepted": False, "error": _one_line(f"{type(error).__name__}: {error}")}
    dests = {action.dest for action in parser._actions if action.dest != "help"}
    return {
        "accepted": True,
        "values": {
            dest: _plain(getattr(namespace, dest))
            for dest in sorted(dests)
            if hasattr(namespace, dest) and getattr(namespace, dest) != parser.get_default(dest)
        },
    }


def dump(output: Path) -> None:
    """Write the table of the vLLM installed in this Python to `output` (what `refresh` runs)."""
    top, parser = _serve_parser()
    table = {
        "format": TABLE_FORMAT,
        "generator": GENERATOR,
        "parser": "vllm.entrypoints.cli.serve.ServeSubcommand().subparser_init(), under the `vllm` parser",
        "python": f"{sys.version_info.major}.{sys.version_info.minor}",
        "vllm": importlib.metadata.version("vllm"),
        "positionals": [
            {"dest": action.dest, "nargs": 1 if action.nargs is None else action.nargs}
            for action in parser._actions
            if not action.option_strings
        ],
        "options": _option_table(parser),
        "probes": {
            probe.name: {"argv": list(probe.argv), **_real_verdict(top, parser, probe.argv)} for probe in PROBES
        },
    }
    output.write_text(render_table(table))


# ---------------------------------------------------------------- refresh (runs in the project's environment)


@contextlib.contextmanager
def _stub_library() -> Iterator[Path]:
    """A directory with libcuda.so.1 compiled from the vendored stub."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise ValueError("no C compiler (cc or gcc) on PATH to build the libcuda stub")
    with tempfile.TemporaryDirectory(prefix="vllm-args-") as directory:
        built = subprocess.run(
            [compiler, "-shared", "-fPIC", "-o", f"{directory}/libcuda.so.1", str(STUB_SOURCE)],
            capture_output=True,
            text=True,
            check=False,
        )
        if built.returncode != 0:
            raise ValueError(f"{compiler} could not build {STUB_SOURCE.name}: {_last_line(built.stderr)}")
        yield Path(directory)


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


def refresh(version: str, python: Path, directory: Path = DIRECTORY, timeout: float = 1800) -> Path:
    """Regenerate the table of `version` with `python`, a Python with vllm==`version` installed."""
    if not VERSION_PATTERN.fullmatch(version):
        raise ValueError(f"{version!r} is not a vLLM release version like 0.33.0")
    if not (python.is_file() and os.access(python, os.X_OK)):
        raise ValueError(f"{python}: not a Python executable (VLLM_PYTHON: a Python with vllm=={version})")
    environment = {name: value for name, value in os.environ.items() if not name.startswith("VLLM_")}
    with _stub_library() as stub:
        output = stub / "table.json"
        environment.update(
            LD_LIBRARY_PATH=os.pathsep.join(filter(None, [str(stub), environment.get("LD_LIBRARY_PATH")])),
            PYTHONHASHSEED="0",
            VLLM_LOGGING_LEVEL="ERROR",
        )
        run = subprocess.run(
            [str(python), "-m", "schemas.vllm_args", "dump", str(output)],
            cwd=ROOT,
            env=environment,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if run.returncode != 0 or not output.is_file():
            raise ValueError(f"{python} could not build vLLM's serve parser: {_last_line(run.stderr)}")
        table = json.loads(output.read_text())
    if table["vllm"] != version:
        raise ValueError(f"{python} has vllm {table['vllm']}, not {version}")
    path = table_path(version, directory)
    path.write_text(render_table(table))
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m schemas.vllm_args", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    refresh_parser = commands.add_parser("refresh", help="regenerate the table of one vLLM release")
    refresh_parser.add_argument("version", help="the vLLM release, like 0.33.0")
    refresh_parser.add_argument("--python", type=Path, required=True, help="a Python with that vLLM installed")
    check_parser = commands.add_parser("check", help="check `vllm serve` arguments against a table")
    check_parser.add_argument("version")
    check_parser.add_argument("args", nargs=argparse.REMAINDER, help="the arguments after `vllm serve` (after --)")
    dump_parser = commands.add_parser("dump", help="(run by refresh inside vLLM's environment)")
    dump_parser.add_argument("output", type=Path)
    args = parser.parse_args(argv)
    try:
        if args.command == "refresh":
            print(f"wrote {refresh(args.version, args.python).relative_to(ROOT)}")
        elif args.command == "check":
            problems = check_serve_args(args.args[1:] if args.args[:1] == ["--"] else args.args, args.version)
            for problem in problems:
                print(problem)
            return 1 if problems else 0
        else:
            dump(args.output)
    except (OSError, ValueError, subprocess.TimeoutExpired) as error:
        print(f"vllm-args: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
