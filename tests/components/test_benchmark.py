"""The benchmark's result line (components/bench_result.py): recorded clients combined; the Job ships the combiner."""

from __future__ import annotations

import json
from typing import Any

import pytest

from components import bench_result
from tests.rendered import ROOT

DATA = ROOT / "tests" / "data"
CLIENT_RESULTS = [DATA / "vllm-bench-client-1.json", DATA / "vllm-bench-client-2.json"]
JOB_LOG = DATA / "bench-job.log"


def test_combining_recorded_client_results() -> None:
    clients = bench_result.load_results(CLIENT_RESULTS)
    summary = bench_result.combine(clients)
    assert summary["clients"] == 2
    assert summary["completed"] == 20_000
    assert summary["total_token_throughput"] == pytest.approx(47_641.6 + 47_259.9, abs=1)
    assert summary["request_throughput"] == pytest.approx(10_000 / 322.4137 + 10_000 / 324.8702)
    assert summary["median_ttft_ms"] == pytest.approx((8_057.91 + 8_144.62) / 2)
    assert summary["p99_ttft_ms"] == 21_876.05
    assert summary["p99_itl_ms"] == 115.30
    assert summary["duration_s"] == 324.8702


def test_result_line_of_the_recorded_job_log_matches_the_client_files() -> None:
    from_log = bench_result.parse_line(JOB_LOG.read_text())
    combined = bench_result.combine(bench_result.load_results(CLIENT_RESULTS))
    # the shortest client's time, which bounds the summed throughputs; the sample log predates it
    shortest = min(json.loads(path.read_text())["duration"] for path in CLIENT_RESULTS)
    assert combined.pop("duration_min_s") == shortest <= combined["duration_s"]
    assert from_log == pytest.approx(combined)


def test_the_job_runs_the_combiner_it_ships(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    for path in CLIENT_RESULTS:
        (tmp_path / path.name.replace("vllm-bench-", "")).write_text(path.read_text())
    assert bench_result.main(["bench_result", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert printed.count("\n") == 1 and printed.startswith("BENCH_RESULT {")
    assert json.loads(printed.removeprefix("BENCH_RESULT "))["clients"] == 2
