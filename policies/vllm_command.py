"""vLLM servers in pod templates: which containers run `vllm serve`, and their engine flags."""

from __future__ import annotations

import bisect
import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from policies.kubernetes import PodTemplate, container_gpus, pod_template
from policies.values import as_list, as_mapping, as_number, as_text, dig

FP8_KV_DTYPES = ("fp8", "fp8_e4m3", "fp8_e5m2")
# `--max-num-seqs` when unset: vLLM picks 1024 for the API server on GPUs with >= 70 GiB, less on smaller ones.
DEFAULT_MAX_NUM_SEQS = 1024
DEFAULT_GPU_MEMORY_UTILIZATION = 0.9
API_SERVER_MODULE = "vllm.entrypoints.openai.api_server"
IMAGE_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?")
PARAMETER_BILLIONS = re.compile(r"(\d+(?:\.\d+)?)b(?![a-z0-9])")
SPECULATIVE_TOKENS = re.compile(r"num_speculative_tokens\D{0,4}(\d+)")
SPECULATIVE_METHOD = re.compile(r"method\W{0,4}([\w-]+)")
# Every option string of each pinned vLLM release's `vllm serve`: [the flag it sets, nargs, takes text]
# (generated from schemas/vllm/ by `python -m schemas.vllm_args_refresh pack-flags`: the pack ships alone).
FLAGS_FILE = Path(__file__).resolve().parent / "vllm_flags.json"
# argparse reads these as values, not options (vLLM's parser has no option that looks like a negative number).
NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")


# vLLM's human-readable integers (vllm/engine/arg_utils.py `human_readable_int` in v0.19.0, vllm/utils/
# argparse_utils.py in v0.33.0): `32k` is 32,000 and `32K` 32,768; a binary suffix takes a whole number only.
HUMAN_READABLE_INT = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")
DECIMAL_MULTIPLIERS = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
BINARY_MULTIPLIERS = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def human_readable_int(value: str) -> float | None:
    """The integer vLLM reads from `32k` or `4K`, or None when it is not one."""
    match = HUMAN_READABLE_INT.fullmatch(value.strip())
    if match is None:
        return None
    number, suffix = match.groups()
    if suffix in DECIMAL_MULTIPLIERS:
        return float(int(float(number) * DECIMAL_MULTIPLIERS[suffix]))
    return float(int(number) * BINARY_MULTIPLIERS[suffix]) if number.isdigit() else None


@dataclass(frozen=True)
class Speculative:
    method: str
    tokens: int

    @property
    def is_mtp(self) -> bool:
        return "mtp" in self.method


@dataclass(frozen=True)
class VllmServer:
    """One `vllm serve` container, its flags read as vLLM's parser reads them: by the flag an option string
    sets (`--max_model_len`, `--max-model` and `--max-model-len` are `max-model-len`; the alias
    `--device-memory-utilization` is `gpu-memory-utilization`); `spelled`: each flag as written."""

    template: PodTemplate
    container: Mapping[str, Any]
    model: str
    flags: Mapping[str, str | None]
    spelled: Mapping[str, str] = field(default_factory=dict)

    @property
    def container_name(self) -> str:
        return as_text(self.container.get("name"))

    @property
    def image(self) -> str:
        return as_text(self.container.get("image"))

    @property
    def gpus(self) -> float:
        return container_gpus(self.container)

    def has(self, flag: str) -> bool:
        return flag in self.flags

    def value(self, flag: str) -> str | None:
        return self.flags.get(flag)

    def number(self, flag: str, default: float) -> float:
        value = self.flags.get(flag)
        parsed = as_number(value)
        if parsed is None and value is not None:
            parsed = human_readable_int(value)
        return default if parsed is None else parsed

    @property
    def model_names(self) -> str:
        """The model path and served names, lower-cased, for matching model families."""
        return f"{self.model} {self.value('served-model-name') or ''}".lower()

    @property
    def parallel_gpus(self) -> float:
        """The GPUs this server drives: one rank's with `--data-parallel-rank` (vLLM's external
        data-parallel load balancing runs one `vllm serve` per rank), else every rank's."""
        ranks = 1 if "data-parallel-rank" in self.flags else self.number("data-parallel-size", 1)
        return ranks * self.number("tensor-parallel-size", 1) * self.number("pipeline-parallel-size", 1)

    @property
    def fp8_kv_cache(self) -> bool:
        return (self.value("kv-cache-dtype") or "auto") in FP8_KV_DTYPES

    @property
    def speculative(self) -> Speculative | None:
        text = self.value("speculative-config")
        if text is None:
            legacy = self.value("num-speculative-tokens")
            return None if legacy is None else Speculative("", int(as_number(legacy) or 0))
        try:
            parsed = as_mapping(json.loads(text))
            method, tokens = as_text(parsed.get("method")), as_number(parsed.get("num_speculative_tokens"))
        except (ValueError, RecursionError):
            method_match, tokens_match = SPECULATIVE_METHOD.search(text), SPECULATIVE_TOKENS.search(text)
            method = method_match.group(1) if method_match else ""
            tokens = float(tokens_match.group(1)) if tokens_match else None
        return Speculative(method.lower(), int(tokens or 0))

    @property
    def image_version(self) -> tuple[int, int, int] | None:
        return _image_version(self.image)

    @property
    def weights_mount(self) -> Mapping[str, Any] | None:
        """The volume mount a local --model path lies on (the deepest one)."""
        if not self.model.startswith("/"):
            return None
        mounts = [
            as_mapping(mount)
            for mount in as_list(self.container.get("volumeMounts"))
            if f"{self.model}/".startswith(as_text(dig(mount, "mountPath")).rstrip("/") + "/")
        ]
        return max(mounts, key=lambda mount: len(as_text(mount.get("mountPath"))), default=None)

    @property
    def weights_volume(self) -> Mapping[str, Any]:
        mount = self.weights_mount or {}
        volumes = (as_mapping(volume) for volume in as_list(self.template.spec.get("volumes")))
        return next((volume for volume in volumes if mount and volume.get("name") == mount.get("name")), {})

    @property
    def weights_claim(self) -> str:
        return as_text(dig(self.weights_volume, "persistentVolumeClaim", "claimName"))

    def weights_gb_estimate(self) -> float | None:
        """Weight size from the parameter count and the quantization in the model's name."""
        names = self.model_names
        match = PARAMETER_BILLIONS.search(names)
        if not match:
            return None
        bytes_per_parameter = 0.5 if ("fp4" in names or "int4" in names) else 1.0 if "fp8" in names else 2.0
        return float(match.group(1)) * bytes_per_parameter


# The entry points that run vLLM's OpenAI server: `vllm serve`, `python -m vllm.entrypoints.cli.main serve`
# (what the `vllm` script runs) and the server module itself.
CLI_MODULE = "vllm.entrypoints.cli.main"
# Kubernetes expands $(VAR) in a container's command and args from its environment ($$ escapes it).
VARIABLE_REFERENCE = re.compile(r"(?<!\$)\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")
# A shell's $VAR and ${VAR} (not $(command), which it runs).
SHELL_VARIABLE = re.compile(r"\$(?:([A-Za-z_][A-Za-z0-9_]*)|\{([A-Za-z_][A-Za-z0-9_]*)\})")
# How deep vLLM's dotted form nests here (`--a.b.c=1`); deeper is left unread (5,000 levels broke json.dumps).
DOTTED_DEPTH_MAX = 16


def _serve_words(words: list[str]) -> list[str] | None:
    """The words after the entry point, None when none of them runs vLLM's server."""
    for index, word in enumerate(words):
        if word.rsplit("/", 1)[-1] in ("vllm", CLI_MODULE) and words[index + 1 : index + 2] == ["serve"]:
            return words[index + 2 :]
        if word == API_SERVER_MODULE:
            return words[index + 1 :]
    return None


def _variables(container: Mapping[str, Any]) -> dict[str, str]:
    """The container's literal environment, each value with $(VAR) of the variables before it expanded, as
    Kubernetes expands them (a value from a Secret or a ConfigMap is not known here)."""
    variables: dict[str, str] = {}
    for item in map(as_mapping, as_list(container.get("env"))):
        if isinstance(item.get("value"), str):
            variables[as_text(item.get("name"))] = _expanded(item["value"], variables)
    return variables


def _expanded(word: str, variables: Mapping[str, str]) -> str:
    return VARIABLE_REFERENCE.sub(lambda match: variables.get(match[1], match[0]), word)


def _script_words(line: str, variables: Mapping[str, str]) -> list[str]:
    """A shell line's words, its separators (`&&`, `;`, `|`) apart, with $VAR and ${VAR} of the container's
    environment expanded as the shell expands them."""
    line = SHELL_VARIABLE.sub(lambda match: variables.get(match[1] or match[2], match[0]), line)
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:  # an unclosed quote
        return line.split()


def _serve_arguments(container: Mapping[str, Any]) -> list[str] | None:
    """The words after `vllm serve` (or another entry point of vLLM's server), in the argument list or in a
    shell line of it (`sh -c "cd /x && exec vllm  serve ..."`), with $(VAR) expanded as Kubernetes expands it
    (and $VAR in a shell line as the shell does); None when the container is no vLLM server."""
    command = [str(word) for word in as_list(container.get("command"))]
    variables = _variables(container)
    words = [_expanded(word, variables) for word in command + [str(word) for word in as_list(container.get("args"))]]
    found = _serve_words(words)
    for word in words if found is None else ():
        if "vllm" in word and any(character.isspace() or character in ";&|" for character in word):
            found = _serve_words(_script_words(word, variables))
            if found is not None:
                break
    if found is None and not command and "vllm-openai" in as_text(container.get("image")):
        return words
    return found


@cache
def _release_options() -> dict[str, dict[str, list[Any]]]:
    releases: dict[str, dict[str, list[Any]]] = json.loads(FLAGS_FILE.read_text())["releases"]
    return releases


@dataclass(frozen=True)
class ReleaseOptions:
    """One release's option strings (or every pinned release's): what each sets, and the long ones sorted, so
    that the one a prefix abbreviates is found by bisection (a line of 100,000 unknown flags took 20 s)."""

    strings: Mapping[str, list[Any]]
    long: tuple[str, ...]


@cache
def _options_of(version: tuple[int, int, int] | None) -> ReleaseOptions:
    """The option strings of the release the image names, or of every pinned release (the newest wins)."""
    releases = _release_options()
    named = ".".join(map(str, version)) if version else ""
    strings = releases.get(named)
    if strings is None:
        strings = {}
        for release in sorted(releases, key=lambda text: tuple(int(part) for part in text.split("."))):
            strings.update(releases[release])
    return ReleaseOptions(strings, tuple(sorted(string for string in strings if string.startswith("--"))))


def _image_version(image: str) -> tuple[int, int, int] | None:
    last_part = image.split("@", 1)[0].rsplit("/", 1)[-1]
    if ":" not in last_part:
        return None
    match = IMAGE_VERSION.match(last_part.rsplit(":", 1)[1])
    if not match:
        return None
    major, minor, patch = match.groups()
    return int(major), int(minor), int(patch or 0)


@lru_cache(maxsize=4096)
def _pinned_option(name: str) -> list[Any] | None:
    """What the option `--name` is to vLLM's parser of any pinned release: [flag, nargs, takes text], or None."""
    return _option("--" + name.replace("_", "-"), _options_of(None))


def flag_read_as(name: str) -> str:
    """The flag (no dashes) vLLM's parser of any pinned release reads the option `--name` as: `api-k` is
    `api-key`, `device-memory-utilization` is `gpu-memory-utilization`; the name itself when none."""
    known = _pinned_option(name)
    return str(known[0]) if known else name


def flag_takes_text(name: str) -> bool:
    """Whether vLLM's option `--name` (of any pinned release) takes a text value: not an on/off flag nor a
    number's; an option vLLM does not have may."""
    known = _pinned_option(name)
    return known is None or bool(known[2])


def _is_option(word: str) -> bool:
    return word.startswith("-") and word != "-" and not NEGATIVE_NUMBER.match(word)


def _option(written: str, options: ReleaseOptions) -> list[Any] | None:
    """What argparse makes of an option string: itself, or the one long option it is a prefix of."""
    if written in options.strings:
        return options.strings[written]
    if not written.startswith("--"):
        return None
    start = bisect.bisect_left(options.long, written)
    matches = [string for string in options.long[start : start + 2] if string.startswith(written)]
    return options.strings[matches[0]] if len(matches) == 1 else None


def _parse_flags(words: list[str], options: ReleaseOptions) -> tuple[str, dict[str, str], dict[str, str | None]]:
    model = ""
    flags: dict[str, str | None] = {}
    spelled: dict[str, str] = {}
    dotted: dict[str, dict[str, Any]] = {}
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        if not _is_option(word):
            model = model or word
            continue
        written, has_value, value = word.partition("=")
        written, dot, keys = written.partition(".")  # vLLM turns underscores to dashes up to the first `.`
        if written.startswith("--"):
            written = "--" + written[2:].replace("_", "-")
        known = _option(written, options)
        if known is None and not written.startswith("--"):
            continue  # an unknown short option: vLLM refuses it; what it takes is unknown
        name, nargs = (known[0], known[1]) if known else (written[2:], None)
        if not has_value and nargs != 0:
            values: list[str] = []
            while index < len(words) and not _is_option(words[index]) and (nargs in ("+", "*") or not values):
                values.append(words[index])
                index += 1
            value, has_value = " ".join(values), "=" if values else ""
        if dot:  # vLLM's dotted form of a JSON flag: `--speculative-config.method=mtp` (FlexibleArgumentParser)
            _merge_dotted(dotted.setdefault(name, {}), keys, value)
        else:
            flags[name] = value if has_value else None
        spelled[name] = written
    flags |= {name: json.dumps(merged) for name, merged in dotted.items()}  # vLLM appends them last
    return flags.pop("model", None) or model, spelled, flags


def _merge_dotted(merged: dict[str, Any], keys: str, value: str) -> None:
    *parents, last = keys.split(".")
    if len(parents) >= DOTTED_DEPTH_MAX:
        return
    for key in parents:
        if not isinstance(merged.get(key), dict):
            merged[key] = {}
        merged = merged[key]
    try:
        merged[last] = json.loads(value)
    except (ValueError, RecursionError):  # not JSON, or nested beyond the parser
        merged[last] = value


def vllm_servers(resource_type: str, props: Mapping[str, Any]) -> list[VllmServer]:
    template = pod_template(resource_type, props)
    if template is None:
        return []
    servers = []
    for container in template.containers:
        words = _serve_arguments(container)
        if words is None:
            continue
        model, spelled, flags = _parse_flags(words, _options_of(_image_version(as_text(container.get("image")))))
        servers.append(VllmServer(template, container, model, flags, spelled))
    return servers
