"""vLLM's CUDA-graph capture grid, and the largest graph a workload needs (common/cuda_graphs.py)."""

from __future__ import annotations

import pytest

from common.cuda_graphs import capture_grid_ceiling, workload_capture_size


@pytest.mark.parametrize(
    ("tokens", "size"), [(1, 1), (3, 4), (5, 8), (9, 16), (250, 256), (255, 256), (256, 256), (257, 272), (500, 512)]
)
def test_sizes_round_up_to_vllms_capture_grid(tokens: int, size: int) -> None:
    assert capture_grid_ceiling(tokens) == size


def test_the_workload_size_is_one_engines_share_of_the_node() -> None:
    # The recipe: 2,000 requests over 8 engines, 2 tokens per decode step with MTP-1.
    assert workload_capture_size(2000, 8, 1, 16384) == 512
    assert workload_capture_size(256, 8, 1, 16384) == 64
    assert workload_capture_size(256, 8, 0, 16384) == 32
    assert workload_capture_size(100_000, 8, 1, 16384) == 16384
