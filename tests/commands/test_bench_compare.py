"""`bench-compare`: a recorded benchmark result against the planner's expected figures."""

from __future__ import annotations

import json
from typing import Any

import pytest

from commands.bench_compare.command import bench_compare_main
from tests.rendered import ROOT

DATA = ROOT / "tests" / "data"
CLIENT_RESULTS = [DATA / "vllm-bench-client-1.json", DATA / "vllm-bench-client-2.json"]
JOB_LOG = DATA / "bench-job.log"


def test_bench_compare_reports_measured_against_expected(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_compare_main(["dev", str(JOB_LOG)]) == 0
    report = capsys.readouterr().out
    assert "stack dev: 1 node(s), clusterip routing; 2 client(s), 20,000 completed / 0 failed" in report
    assert "total tok/s                  95,317         94,901    99.6%" in report
    # The planned req/s is what this load completes (tok/s over its 1,536-token requests), as the run did.
    assert "completed req/s                  62             62    99.6%" in report
    assert bench_compare_main(["dev", "--results", *map(str, CLIENT_RESULTS)]) == 0
    assert "99.6%" in capsys.readouterr().out


def test_bench_compare_without_a_result_line_fails_cleanly(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "empty.log"
    log.write_text("no result here\n")
    assert bench_compare_main(["dev", str(log)]) == 2
    assert "no line starting with 'BENCH_RESULT'" in capsys.readouterr().err


def test_bench_compare_gives_a_verdict_and_a_non_zero_exit_on_a_miss(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """CI gates a rollout on the exit status: 3 when the run misses the plan by more than the band or
    had failed requests, 0 when it meets it."""
    assert bench_compare_main(["dev", str(JOB_LOG)]) == 0
    assert "verdict: met the plan (band 10% below the plan), no failed request" in capsys.readouterr().out
    line = next(line for line in JOB_LOG.read_text().splitlines() if line.startswith("BENCH_RESULT "))
    result = json.loads(line.removeprefix("BENCH_RESULT "))
    slow = tmp_path / "slow.log"
    slow.write_text("BENCH_RESULT " + json.dumps(result | {"total_token_throughput": 80_000.0}) + "\n")
    assert bench_compare_main(["dev", str(slow)]) == 3
    out = capsys.readouterr().out
    assert "verdict: MISSED the plan (band 10% below the plan): total tok/s 83.9% of the plan (exit 3)" in out
    assert bench_compare_main(["dev", str(slow), "--band", "20"]) == 0
    capsys.readouterr()
    text = JOB_LOG.read_text()
    failed = tmp_path / "failed.log"
    failed.write_text(text.replace('"failed":0', '"failed":12'))
    assert bench_compare_main(["dev", str(failed)]) == 3
    assert "MISSED the plan (band 10% below the plan): 12 failed request(s) (exit 3)" in capsys.readouterr().out
    with pytest.raises(SystemExit) as refused:
        bench_compare_main(["dev", str(JOB_LOG), "--band", "150"])
    assert refused.value.code == 2
