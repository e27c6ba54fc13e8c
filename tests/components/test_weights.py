"""ModelWeights' identifiers on their own: a weights id is stable and specific to its revision."""

from __future__ import annotations

from components.weights import weights_id


def test_weights_id_is_stable_and_revision_specific() -> None:
    assert weights_id("Qwen/Qwen3.5-27B-FP8", "main") == weights_id("Qwen/Qwen3.5-27B-FP8", "main")
    assert weights_id("Qwen/Qwen3.5-27B-FP8", "main") != weights_id("Qwen/Qwen3.5-27B-FP8", "v2")
