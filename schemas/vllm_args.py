"""The `vllm serve` arguments of every vLLM release the stack pins, vendored in `schemas/vllm/` as one
table per release generated from that release's own argument parser (`schemas/vllm_args_refresh.py`),
and a checker that holds a command line against a table without importing vLLM.

`check_serve_args(argv, version)` reads only the table. It follows vLLM's `FlexibleArgumentParser`
(vllm/utils/argparse_utils.py; what it follows is the same at 0.19.0 and 0.33.0), then argparse: `--name=value` and
`--name value`, `_` read as `-` in a long option's name (up to its first `.`), `-O3` / `-O=3` /
`-O 3` for `--optimization-level`, `--json-arg.key value` merged into `--json-arg JSON`, `--model X`
moved in front as the model. It is stricter than vLLM in three places: a unique prefix of an option
(argparse's abbreviations) is refused, `--config FILE` is refused (the file is not read), and so is
`--help`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DIRECTORY = Path(__file__).resolve().parent / "vllm"
STUB_SOURCE = DIRECTORY / "libcuda_stub.c"
GENERATOR = "schemas/vllm_args_refresh.py"
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
# the benchmark write-up, plus the flags the recipe text adds and a served name, port and host.
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
    "--reasoning-parser=qwen3",
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


# The types of a `vllm serve` flag's value that are numbers.
NUMBER_TYPES = frozenset({"int", "float", "human_readable_int", "human_readable_int_or_auto"})


@cache
def text_flags() -> dict[str, bool]:
    """Every flag of the vendored tables (without its dashes), and whether its value can be text: it takes
    one (an on/off flag, nargs 0, takes none) and not a number."""
    flags: dict[str, bool] = {}
    for version in versions():
        for spec in table_for(version)["options"].values():
            text = spec.get("nargs") != 0 and spec.get("type") not in NUMBER_TYPES
            for option in (*spec.get("option_strings", ()), *spec.get("negative_option_strings", ())):
                flags[option.lstrip("-")] = flags.get(option.lstrip("-"), False) or text
    return flags


# The policy pack's copy of the tables (it ships on its own and imports nothing of schemas/): per release,
# each option string with the flag it sets, how many values it takes and whether a value can be text.
PACK_FLAGS = ROOT / "policies" / "vllm_flags.json"


def pack_flags(directory: Path = DIRECTORY) -> dict[str, Any]:
    """What `policies/vllm_command.py` reads to parse a `vllm serve` command line as vLLM does: for every
    option string, `[flag, nargs, text]`; the flag is the option's `dest` in dashes (an alias such as
    `--device-memory-utilization` sets `gpu-memory-utilization`), a negative form is its own flag."""
    releases: dict[str, Any] = {}
    for version in versions(directory):
        strings: dict[str, list[Any]] = {}
        for spec in json.loads(table_path(version, directory).read_text())["options"].values():
            text = spec.get("nargs") != 0 and spec.get("type") not in NUMBER_TYPES
            negative = set(spec.get("negative_option_strings", ()))
            for string in spec["option_strings"]:
                flag = string.lstrip("-") if string in negative else spec["dest"].replace("_", "-")
                strings[string] = [flag, spec.get("nargs"), text]
        releases[version] = strings
    return {"generator": f"{GENERATOR} pack-flags, from schemas/vllm/vllm-*.json", "releases": releases}


def render_pack_flags(table: dict[str, Any]) -> str:
    """The pack table's one serialisation: one option string per line, sorted."""
    releases = [
        f"  {json.dumps(version)}: {{\n"
        + ",\n".join(f"    {json.dumps(string)}: {json.dumps(entry)}" for string, entry in sorted(strings.items()))
        + "\n  }"
        for version, strings in sorted(table["releases"].items())
    ]
    return f'{{"generator": {json.dumps(table["generator"])},\n"releases": {{\n' + ",\n".join(releases) + "\n}}\n"


@cache
def short_flags() -> dict[str, str]:
    """Every one-dash option string of the vendored tables (`-tp`, `-q`, `-sc`...) and the flag it sets."""
    return {
        string: spec["dest"].replace("_", "-")
        for version in versions()
        for spec in table_for(version)["options"].values()
        for string in spec["option_strings"]
        if not string.startswith("--")
    }


def flag_name(token: str) -> str | None:
    """The long name (no dashes, dashes for underscores) a `vllm serve` token sets, '' for an unknown
    short flag, None when the token is not a flag."""
    if token.startswith("--"):
        return token[2:].split("=", 1)[0].split(".", 1)[0].replace("_", "-")
    if token.startswith("-O"):
        return "optimization-level"
    if token.startswith("-") and len(token) > 1 and not _is_number(token):
        return short_flags().get(token.split("=", 1)[0], "")
    return None


def _is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def extra_arg_values(extra_args: list[str], flag: str) -> Iterator[tuple[int, str]]:
    """(index, value) of every `--flag=value`, `--flag value` (or its short form) in extra arguments."""
    for index, token in enumerate(extra_args):
        if flag_name(token) != flag:
            continue
        if "=" in token:
            yield index, token.split("=", 1)[1]
        elif index + 1 < len(extra_args):
            yield index, extra_args[index + 1]


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
                    self.problems.append(f"{_name_of(token)}: ambiguous, could be {', '.join(optional.candidates)}")
                else:
                    self.problems.append(f"{_name_of(token)}: no such option in vllm serve {self.version}")
                index += len(following)  # most likely its values
                continue
            if optional.abbreviation:
                self.problems.append(
                    f"{_name_of(token)}: write {optional.option_string} in full "
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


OPTION_NAME = re.compile(r"-{1,2}[A-Za-z0-9_.-]*")


def _name_of(token: str) -> str:
    """An option as a problem names it: its name, and `...` for what is glued to it (`--api-key:VALUE`, `--x=VALUE`,
    `-pVALUE`), which may be a secret (an attacker: a password after `--api-key:` was quoted whole)."""
    name = OPTION_NAME.match(token)
    shown = name.group() if name else ""
    return token if shown == token else f"{shown}{token[len(shown) : len(shown) + 1]}..."
