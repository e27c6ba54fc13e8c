"""A model checkpoint's size estimated from its name (`Qwen/Qwen3.5-27B-FP8`): parameter count x bytes per
parameter, for a check before anything is declared (a disk too small for the download)."""

from __future__ import annotations

import re

PARAMETER_BILLIONS = re.compile(r"([0-9]+(?:\.[0-9]+)?)b(?![a-z0-9])")
ONE_BYTE_DTYPES = ("fp8", "int8", "w8a8")
HALF_BYTE_DTYPES = ("int4", "awq", "gptq", "nvfp4", "mxfp4", "w4a16", "4bit")
# Embeddings, norms, MTP heads and vision towers stay in 16 bits in quantized checkpoints.
CHECKPOINT_OVERHEAD = 1.1


def checkpoint_gib(model: str) -> float | None:
    """An estimate of a checkpoint's size from its name: parameter count x bytes per parameter."""
    name = model.lower()
    counts = [float(count) for count in PARAMETER_BILLIONS.findall(name)]
    if not counts:
        return None
    if any(marker in name for marker in HALF_BYTE_DTYPES):
        bytes_per_parameter = 0.5
    elif any(marker in name for marker in ONE_BYTE_DTYPES):
        bytes_per_parameter = 1.0
    else:
        bytes_per_parameter = 2.0
    return max(counts) * 1e9 * bytes_per_parameter / 2**30 * CHECKPOINT_OVERHEAD
