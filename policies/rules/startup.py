"""Start-up caches: a compile cache that several pods share is keyed by their configuration."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, ResourceValidationPolicy

from policies.values import as_list, as_mapping, as_text, dig
from policies.vllm_command import VllmServer, vllm_servers

GCS_FUSE_DRIVER = "gcsfuse.csi.storage.gke.io"
# Where vLLM and the libraries it drives keep compiled and autotuned kernels (vllm envs.py
# VLLM_CACHE_ROOT; Triton TRITON_CACHE_DIR; TorchInductor TORCHINDUCTOR_CACHE_DIR; FlashInfer
# FLASHINFER_WORKSPACE_BASE).
CACHE_VARIABLES = ("VLLM_CACHE_ROOT", "TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "FLASHINFER_WORKSPACE_BASE")


KEY_LENGTH = 16
# The variables that say where the caches are, left out of the key.
LOCATION_VARIABLES = frozenset({"HOME", "XDG_CACHE_HOME", *CACHE_VARIABLES})
# The drain time follows the capacity sources and compiles nothing: left out of the key.
DRAIN_FLAG = "--shutdown-timeout"


def compile_cache_key(image: str, args: list[str], env: Mapping[str, str]) -> str:
    """The stack's key of a configuration (common/compile_cache.py computes the same; the pack is loaded
    from its own folder, where the project's common/ is not importable, and a test keeps the two equal)."""
    document = {
        "image": image.rsplit("/", 1)[-1],
        "args": [arg for arg in args if not arg.startswith(DRAIN_FLAG)],
        "env": {name: value for name, value in sorted(env.items()) if name not in LOCATION_VARIABLES},
    }
    digest = hashlib.sha256(json.dumps(document, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    return f"cfg-{digest[:KEY_LENGTH]}"


def _literal_env(container: Mapping[str, Any]) -> dict[str, str] | None:
    """The container's environment, None when a value comes from elsewhere (then no key can be checked)."""
    env: dict[str, str] = {}
    for item in as_list(container.get("env")):
        entry = as_mapping(item)
        if "value" not in entry:
            return None
        env[as_text(entry.get("name"))] = as_text(entry.get("value"))
    return env


def _only_dir(mount_options: str) -> str | None:
    for option in mount_options.split(","):
        name, _, value = option.strip().partition("=")
        if name in ("only-dir", "only_dir"):
            return value
    return None


def shared_cache_problems(server: VllmServer) -> list[str]:
    """How a Cloud Storage FUSE volume that holds the engine's compile caches fails to be keyed."""
    env = _literal_env(server.container)
    if env is None:
        return []
    volumes = {
        as_text(volume.get("name")): volume
        for volume in (as_mapping(item) for item in as_list(server.template.spec.get("volumes")))
    }
    problems = []
    for mount in (as_mapping(item) for item in as_list(server.container.get("volumeMounts"))):
        volume = volumes.get(as_text(mount.get("name")), {})
        if as_text(dig(volume, "csi", "driver")) != GCS_FUSE_DRIVER:
            continue
        root = as_text(mount.get("mountPath")).rstrip("/") + "/"
        cached = [name for name in CACHE_VARIABLES if f"{env.get(name, '')}/".startswith(root)]
        if not cached:
            continue
        folder = _only_dir(as_text(dig(volume, "csi", "volumeAttributes", "mountOptions")))
        args = [str(word) for word in as_list(server.container.get("args"))]
        expected = compile_cache_key(server.image, args, env)
        if folder is None:
            problems.append(
                f"{', '.join(cached)} lie on Cloud Storage volume {mount.get('name')} without an only-dir folder: "
                f"every configuration shares one cache; mount only-dir={expected}"
            )
        elif folder != expected:
            problems.append(
                f"{', '.join(cached)} lie on folder {folder} of Cloud Storage volume {mount.get('name')}, but this "
                f"container's image, arguments and environment key to {expected} (a stale or another "
                "configuration's cache)"
            )
    return problems


def _compile_cache_keyed(args: ResourceValidationArgs, report: ReportViolation) -> None:
    for server in vllm_servers(args.resource_type, args.props):
        for problem in shared_cache_problems(server):
            report(f"container {server.container_name}: {problem}")


COMPILE_CACHE_KEYED = ResourceValidationPolicy(
    name="LLM-VLLM-015",
    display_name="A shared compile cache is keyed by the engine's configuration",
    description=(
        "When vLLM's compile caches (VLLM_CACHE_ROOT, Triton, TorchInductor, FlashInfer) lie on a Cloud Storage "
        "volume other pods mount too, the volume's only-dir folder must be the key of this container's image, "
        "serve arguments (but the drain time) and environment: Triton's, Inductor's and FlashInfer's caches "
        "are keyed by their kernels only, so another release, profile or flag set sharing the folder could load "
        "artifacts built for another configuration, and a folder left from an earlier configuration is stale."
    ),
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_compile_cache_keyed,
)
