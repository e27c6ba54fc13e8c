"""vLLM's CUDA-graph capture grid: the sizes an engine captures, and the largest a workload needs."""

from __future__ import annotations

# vLLM's CUDA-graph capture grid (vllm@v0.19.0 and v0.33.0 vllm/config/vllm.py `_set_cudagraph_sizes`): 1, 2, 4, then
# multiples of 8 below 256, then multiples of 16 up to the largest size. A batch larger than the largest captured size
# runs without a CUDA graph, so a size matched to a workload is rounded up to the grid.
CAPTURE_GRID_FINE_BELOW = 256


def capture_grid_ceiling(tokens: int) -> int:
    """The smallest size of vLLM's capture grid that holds a batch of `tokens`."""
    for small in (1, 2, 4):
        if tokens <= small:
            return small
    step = 8 if tokens < CAPTURE_GRID_FINE_BELOW else 16
    return -(-tokens // step) * step


def workload_capture_size(
    concurrency_per_node: int, data_parallel_size: int, speculative_tokens: int, max_num_batched_tokens: int
) -> int:
    """The largest CUDA graph one engine needs: its share of the node's concurrent requests, each
    decoding 1 + speculative tokens per step, rounded up to the capture grid."""
    per_engine = -(-concurrency_per_node // data_parallel_size)
    return min(capture_grid_ceiling(per_engine * (1 + speculative_tokens)), max_num_batched_tokens)
