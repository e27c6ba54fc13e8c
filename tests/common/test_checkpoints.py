"""A checkpoint's size estimated from its name (common/checkpoints.py)."""

from __future__ import annotations

import pytest

from common.checkpoints import checkpoint_gib


def test_checkpoint_estimates() -> None:
    fp8 = checkpoint_gib("Qwen/Qwen3.5-27B-FP8")
    bf16 = checkpoint_gib("Qwen/Qwen3.5-27B")
    nvfp4 = checkpoint_gib("nvidia/Qwen3.5-397B-A17B-NVFP4")
    assert fp8 is not None and bf16 is not None and 25 < fp8 < 30 and bf16 == pytest.approx(2 * fp8)
    assert nvfp4 == pytest.approx(397e9 * 0.5 / 2**30 * 1.1)
    assert checkpoint_gib("org/no-size-in-name") is None
