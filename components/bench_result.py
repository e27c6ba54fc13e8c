"""Combine the `--save-result` JSON files of N parallel `vllm bench serve` clients into ONE line.

Standard library only: the benchmark Job runs this very file (`python3 -c <source> DIR`) inside the
vLLM image, and `bench-compare` imports it to parse what the Job printed.

Fields read are those `vllm bench serve --save-result` writes (vllm-project/vllm,
vllm/benchmarks/serve.py: `completed`, `failed`, `duration`, `total_input_tokens`,
`total_output_tokens`, `request_throughput`, `output_throughput`, `total_token_throughput`,
`median_<metric>_ms`, `p99_<metric>_ms` with `--metric-percentiles` including 99).

How clients are combined (they run at the same time against the same endpoint):
- throughputs (total tok/s, output tok/s, req/s) and request/token counts: summed, the published
  method ("sum throughput across clients", the write-up's method); the longest client duration is kept;
- medians: the mean of the clients' medians weighted by their completed requests, an estimate of
  the pooled median (the exact one needs per-request data);
- p99: the largest client p99, an upper bound of the pooled p99.
"""

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

RESULT_PREFIX = "BENCH_RESULT "
SUMMED = (
    "completed",
    "failed",
    "total_input_tokens",
    "total_output_tokens",
    "request_throughput",
    "output_throughput",
    "total_token_throughput",
)
LATENCY_METRICS = ("ttft", "tpot", "itl")
COMBINE_NOTE = "throughputs summed; medians request-weighted mean of client medians; p99 max of client p99s"


def combine(results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One summary dict from the per-client result dicts."""
    if not results:
        raise ValueError("no client results to combine")
    summary: dict[str, Any] = {"clients": len(results), "combine": COMBINE_NOTE}
    for key in SUMMED:
        summary[key] = sum(result[key] for result in results)
    summary["duration_s"] = max(result["duration"] for result in results)
    # the shortest client's: what bounds the summed throughputs (each client's is its count over its own time)
    summary["duration_min_s"] = min(result["duration"] for result in results)
    weights = [result["completed"] for result in results]
    total_weight = sum(weights) or 1
    for metric in LATENCY_METRICS:
        medians = [result[f"median_{metric}_ms"] for result in results]
        summary[f"median_{metric}_ms"] = sum(m * w for m, w in zip(medians, weights, strict=True)) / total_weight
        summary[f"p99_{metric}_ms"] = max(result[f"p99_{metric}_ms"] for result in results)
    return summary


def result_line(summary: dict[str, Any]) -> str:
    return RESULT_PREFIX + json.dumps(summary, sort_keys=True, separators=(",", ":"))


def parse_line(text: str) -> dict[str, Any]:
    """The summary from the last result line in a log (e.g. `kubectl logs job/...`)."""
    lines = [line for line in text.splitlines() if line.startswith(RESULT_PREFIX)]
    if not lines:
        raise ValueError(f"no line starting with {RESULT_PREFIX.strip()!r} found")
    summary: dict[str, Any] = json.loads(lines[-1][len(RESULT_PREFIX) :])
    return summary


def load_results(paths: Sequence[Path | str]) -> list[dict[str, Any]]:
    return [json.loads(Path(path).read_text()) for path in paths]


def main(argv: Sequence[str]) -> int:
    directory = Path(argv[1])
    print(result_line(combine(load_results(sorted(directory.glob("client-*.json"))))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
