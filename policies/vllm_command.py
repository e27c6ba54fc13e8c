"""vLLM servers in pod templates: which containers run `vllm serve`, and their engine flags."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
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
    """One `vllm serve` container; flag names normalized (`--max_model_len` == `--max-model-len`)."""

    template: PodTemplate
    container: Mapping[str, Any]
    model: str
    flags: Mapping[str, str | None]

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
        last_part = self.image.split("@", 1)[0].rsplit("/", 1)[-1]
        if ":" not in last_part:
            return None
        match = IMAGE_VERSION.match(last_part.rsplit(":", 1)[1])
        if not match:
            return None
        major, minor, patch = match.groups()
        return int(major), int(minor), int(patch or 0)

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


def _serve_arguments(container: Mapping[str, Any]) -> list[str] | None:
    """The words after `vllm serve` (or the API server module), None when the container is no vLLM server."""
    command = [str(word) for word in as_list(container.get("command"))]
    words = command + [str(word) for word in as_list(container.get("args"))]
    for index, word in enumerate(words):
        if word.rsplit("/", 1)[-1] == "vllm" and words[index + 1 : index + 2] == ["serve"]:
            return words[index + 2 :]
        if word == API_SERVER_MODULE:
            return words[index + 1 :]
        if "vllm serve" in word:
            try:
                script = shlex.split(word)
            except ValueError:
                script = word.split()
            start = next(
                (i for i in range(len(script) - 1) if script[i].endswith("vllm") and script[i + 1] == "serve"), None
            )
            if start is not None:
                return script[start + 2 :]
    if not command and "vllm-openai" in as_text(container.get("image")):
        return words
    return None


def _parse_flags(words: list[str]) -> tuple[str, dict[str, str | None]]:
    model = ""
    flags: dict[str, str | None] = {}
    index = 0
    while index < len(words):
        word = words[index]
        following = words[index + 1] if index + 1 < len(words) else None
        if word.startswith("--"):
            name, has_value, value = word[2:].partition("=")
            if not has_value and following is not None and not following.startswith("-"):
                value, has_value = following, "="
                index += 1
            flags[name.replace("_", "-")] = value if has_value else None
        elif not model and not word.startswith("-"):
            model = word
        index += 1
    return flags.pop("model", None) or model, flags


def vllm_servers(resource_type: str, props: Mapping[str, Any]) -> list[VllmServer]:
    template = pod_template(resource_type, props)
    if template is None:
        return []
    servers = []
    for container in template.containers:
        words = _serve_arguments(container)
        if words is None:
            continue
        model, flags = _parse_flags(words)
        servers.append(VllmServer(template, container, model, flags))
    return servers
