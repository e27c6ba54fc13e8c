"""The key of a shared compile cache: one folder per engine configuration.

vLLM keys its own torch.compile artifacts by a hash of its configuration (vllm/compilation/backends.py
of v0.19.0 and v0.33.0: `VLLM_CACHE_ROOT/torch_compile_cache/<hash_key>/rank_<rank>_<dp_rank>`),
but Triton's, TorchInductor's and FlashInfer's caches are keyed by their own kernel hashes and an
autotune result may depend on the engine's settings. A cache that many pods share therefore gets one
folder per configuration: a hash of the image (its tag names the vLLM release; the digest pins the
bytes; the registry is left out), every `vllm serve` argument (the checkpoint, the profile's flags, extraArgs) but
the drain time (`--shutdown-timeout`, which follows the capacity sources and compiles nothing: adding a Flex-start
source must not send every pod to an empty folder), and every environment variable of the engine except the cache
locations themselves. Another release, profile or
flag set is another folder and never reads a stale entry; the same configuration on another pod reads
what the first one wrote. The component that mounts the cache and the policy that checks it both
compute the key here. Standard library only, so every layer may use it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence

KEY_LENGTH = 16
# Where the caches are, not what is in them: left out of the key so that moving them keeps the key.
LOCATION_VARIABLES = frozenset(
    {
        "HOME",
        "XDG_CACHE_HOME",
        "VLLM_CACHE_ROOT",
        "TRITON_CACHE_DIR",
        "TORCHINDUCTOR_CACHE_DIR",
        "FLASHINFER_WORKSPACE_BASE",
    }
)


DRAIN_FLAG = "--shutdown-timeout"


def compile_cache_key(image: str, args: Sequence[str], env: Mapping[str, str]) -> str:
    """16 hex characters of the SHA-256 of the image, the serve arguments and the environment."""
    document = {
        # The repository name, tag and digest: the same image through a registry mirror keeps its key.
        "image": image.rsplit("/", 1)[-1],
        "args": [arg for arg in args if not arg.startswith(DRAIN_FLAG)],
        "env": {name: value for name, value in sorted(env.items()) if name not in LOCATION_VARIABLES},
    }
    digest = hashlib.sha256(json.dumps(document, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    return f"cfg-{digest[:KEY_LENGTH]}"
