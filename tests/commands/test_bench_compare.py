"""`bench-compare`: a recorded benchmark result against the planner's expected figures."""

from __future__ import annotations

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
    assert bench_compare_main(["dev", "--results", *map(str, CLIENT_RESULTS)]) == 0
    assert "99.6%" in capsys.readouterr().out


def test_bench_compare_without_a_result_line_fails_cleanly(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "empty.log"
    log.write_text("no result here\n")
    assert bench_compare_main(["dev", str(log)]) == 2
    assert "no line starting with 'BENCH_RESULT'" in capsys.readouterr().err
