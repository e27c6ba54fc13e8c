"""`bench-compare`: a recorded benchmark result against the planner's expected figures."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from commands.bench_compare.command import bench_compare_main, checked_result
from common.input_files import InputError
from tests.rendered import ROOT, run_main

DATA = ROOT / "tests" / "data"
CLIENT_RESULTS = [DATA / "vllm-bench-client-1.json", DATA / "vllm-bench-client-2.json"]
JOB_LOG = DATA / "bench-job.log"
BANDS = "band 10% below the plan for tok/s, 50% above it for the measured latency medians"


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
    # a client's --save-result file given as the log says where it goes
    assert bench_compare_main(["dev", str(CLIENT_RESULTS[0])]) == 2
    assert "a client's --save-result file; give those with --results" in capsys.readouterr().err


def test_bench_compare_gives_a_verdict_and_a_non_zero_exit_on_a_miss(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """CI gates a rollout on the exit status: 3 when the run misses the plan by more than the band or
    had failed requests, 0 when it meets it."""
    assert bench_compare_main(["dev", str(JOB_LOG)]) == 0
    assert f"verdict: met the plan ({BANDS}), no failed request" in capsys.readouterr().out
    line = next(line for line in JOB_LOG.read_text().splitlines() if line.startswith("BENCH_RESULT "))
    result = json.loads(line.removeprefix("BENCH_RESULT "))
    slow = tmp_path / "slow.log"
    # fewer input tokens in the same time: the counts agree with the rate (bench-compare checks they do)
    input_tokens = round(80_000 * result["duration_s"]) - result["total_output_tokens"]
    slow_result = result | {"total_token_throughput": 80_000.0, "total_input_tokens": input_tokens}
    slow.write_text("BENCH_RESULT " + json.dumps(slow_result) + "\n")
    assert bench_compare_main(["dev", str(slow)]) == 3
    out = capsys.readouterr().out
    assert f"verdict: MISSED the plan ({BANDS}): total tok/s 83.9% of the plan (exit 3)" in out
    assert bench_compare_main(["dev", str(slow), "--band", "20"]) == 0
    capsys.readouterr()
    text = JOB_LOG.read_text()
    failed = tmp_path / "failed.log"
    failed.write_text(text.replace('"failed":0', '"failed":12'))
    assert bench_compare_main(["dev", str(failed)]) == 3
    assert f"MISSED the plan ({BANDS}): 12 failed request(s) (exit 3)" in capsys.readouterr().out
    with pytest.raises(SystemExit) as refused:
        bench_compare_main(["dev", str(JOB_LOG), "--band", "150"])
    assert refused.value.code == 2


def test_latency_medians_are_judged_where_the_plan_measured_them(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run on plan in throughput but at 4x the TTFT and 3x the TPOT median of the plan is a miss
    (exit 3), so CI can gate a rollout on a latency regression; --latency-band sets how far above."""
    line = next(line for line in JOB_LOG.read_text().splitlines() if line.startswith("BENCH_RESULT "))
    result = json.loads(line.removeprefix("BENCH_RESULT "))
    slow = tmp_path / "slow.log"
    slow.write_text(
        "BENCH_RESULT "
        + json.dumps(
            result
            | {"median_ttft_ms": result["median_ttft_ms"] * 4, "p99_ttft_ms": result["p99_ttft_ms"] * 4}
            | {"median_tpot_ms": 132.0, "p99_tpot_ms": 186.0}  # a run's p99 is not below its median
        )
        + "\n"
    )
    assert bench_compare_main(["dev", str(slow)]) == 3
    out = capsys.readouterr().out
    assert (
        "verdict: MISSED the plan (band 10% below the plan for tok/s, 50% above it for the measured latency "
        "medians): TTFT median 401.8% of the plan; TPOT median 300.0% of the plan (exit 3)"
    ) in out
    assert bench_compare_main(["dev", str(slow), "--latency-band", "400"]) == 0
    assert "verdict: met the plan" in capsys.readouterr().out
    for refused_band in ("-5", "nan", "inf", "10%"):
        with pytest.raises(SystemExit) as refused:
            bench_compare_main(["dev", str(JOB_LOG), "--latency-band", refused_band])
        assert refused.value.code == 2


def test_a_median_the_plan_has_none_for_is_named_not_judged() -> None:
    from dataclasses import replace

    from commands.bench_compare.command import verdict
    from commands.plan.capacity_plan import capacity_plan
    from stacks.load.loader import validate

    expected = capacity_plan("dev", validate({"environment": "dev", "project": "my-llm-dev"})).expectation
    line = next(line for line in JOB_LOG.read_text().splitlines() if line.startswith("BENCH_RESULT "))
    measured = json.loads(line.removeprefix("BENCH_RESULT ")) | {"median_ttft_ms": 1e6, "median_tpot_ms": 1e6}
    missed, text = verdict(measured, replace(expected, ttft_median_ms=None, tpot_median_ms=None), 10)
    assert not missed
    assert text == (
        "verdict: met the plan (band 10% below the plan), no failed request; TTFT median and TPOT median not "
        "judged: no median measured for this configuration"
    )
    missed, text = verdict(measured, replace(expected, ttft_median_ms=None), 10)
    assert (
        missed
        and "TPOT median" in text
        and text.endswith("TTFT median not judged: no median measured for this configuration")
    )


def result_line_with(**changes: Any) -> str:
    line = next(line for line in JOB_LOG.read_text().splitlines() if line.startswith("BENCH_RESULT "))
    return "BENCH_RESULT " + json.dumps(json.loads(line.removeprefix("BENCH_RESULT ")) | changes) + "\n"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"completed": 0, "failed": 0}, "no request completed or failed; allowed: a run that sent requests"),
        ({"duration_s": 0}, "'duration_s' is 0 though 20,000 requests completed; allowed: > 0"),
        ({"completed": 0, "failed": 5}, "'total_token_throughput' is 94,901"),
        ({"output_throughput": 9e6}, "'output_throughput' is 9,000,000, above 'total_token_throughput' 94,901"),
        ({"total_token_throughput": 1e308}, "'total_token_throughput' is 1e+308; allowed: at most"),
        ({"completed": 10**300}, "'completed' is 1e+300; allowed: at most"),
        ({"duration_s": 1e-300}, "'duration_s' is 1e-300 s for 20,000 completed requests; allowed: a run of at most"),
        ({"p99_ttft_ms": 1e300}, "'p99_ttft_ms' is 1e+300; allowed: at most"),
    ],
    ids=[
        "nothing-sent",
        "no-duration",
        "throughput-without-requests",
        "output-above-total",
        "huge-rate",
        "huge-count",
        "instant-run",
        "huge-latency",
    ],
)
def test_a_result_no_run_can_produce_is_refused_not_judged(
    tmp_path: Any, capsys: pytest.CaptureFixture[str], changes: dict[str, Any], message: str
) -> None:
    """The gate passed `met the plan` on a result line claiming the plan's throughput with no request done."""
    log = tmp_path / "edited.log"
    log.write_text(result_line_with(**changes))
    assert bench_compare_main(["dev", str(log)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert message in line


def test_each_client_counts_once_and_must_have_run_the_stacks_model(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """One client's file given twice doubled its throughput: the gate said `met the plan` for half the load."""
    first = str(CLIENT_RESULTS[0])
    assert bench_compare_main(["dev", "--results", first, first]) == 2
    assert "given twice; give each client's --save-result file once" in capsys.readouterr().err
    copy = tmp_path / "copy.json"
    copy.write_bytes(CLIENT_RESULTS[0].read_bytes())
    assert bench_compare_main(["dev", "--results", first, str(copy)]) == 2
    assert f"the same result as {first}" in capsys.readouterr().err
    other = tmp_path / "other-model.json"
    other.write_text(json.dumps(json.loads(CLIENT_RESULTS[1].read_text()) | {"model_id": "meta-llama/Llama-3-8B"}))
    assert bench_compare_main(["dev", "--results", first, str(other)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert "'model_id' is 'meta-llama/Llama-3-8B'; allowed: the stack's model, 'Qwen/Qwen3.5-27B-FP8'" in line


def test_a_client_run_against_the_checkpoint_with_a_served_name_is_the_stacks_model(tmp_path: Any) -> None:
    """`vllm bench serve --model CHECKPOINT --served-model-name NAME` writes the checkpoint as model_id."""
    stack = tmp_path / "Pulumi.named.yaml"
    document = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    document["config"]["gke-b200-serving:engine"] = {"servedModelName": "qwen"}
    stack.write_text(yaml.safe_dump(document))
    results = [str(path) for path in CLIENT_RESULTS]  # their model_id: the checkpoint
    assert bench_compare_main(["named", "--config-file", str(stack), "--results", *results]) == 0


def test_a_log_with_a_byte_order_mark_is_read(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """An attacker: a log saved with a UTF-8 byte order mark was 'no line starting with BENCH_RESULT'."""
    log = tmp_path / "bom.log"
    log.write_text("\ufeff" + JOB_LOG.read_text())
    assert bench_compare_main(["dev", str(log)]) == 0
    assert "total tok/s                  95,317" in capsys.readouterr().out


def test_a_client_result_with_a_byte_order_mark_is_read(tmp_path: Any) -> None:
    """A --save-result file saved again with a UTF-8 byte order mark was 'not valid JSON (Unexpected UTF-8 BOM)'."""
    first, *others = CLIENT_RESULTS
    marked = tmp_path / first.name
    marked.write_text("\ufeff" + first.read_text())
    assert bench_compare_main(["dev", "--results", str(marked), *map(str, others)]) == 0


@pytest.mark.parametrize("option", [["--source", "a title"], ["--date", "2026-11-01"]])
def test_an_option_of_record_without_record_is_refused_not_ignored(option: list[str]) -> None:
    """An attacker: `--source` and `--date` without `--record` were ignored, exit 0, as if the result were recorded."""
    refused = run_main(bench_compare_main, "dev", str(JOB_LOG), *option)
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr.startswith(f"bench-compare: {option[0]} is only read with --record"), refused.stderr


def test_options_may_come_between_the_stack_and_the_log(capsys: pytest.CaptureFixture[str]) -> None:
    """`bench-compare dev --band 5 run.log` said `unrecognized arguments: run.log` (LOG is optional)."""
    assert bench_compare_main(["dev", "--band", "5", str(JOB_LOG)]) == 0
    assert "verdict: met the plan (band 5%" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("change", "message"),
    [
        # 2,000 completed in 325 s is ~6 req/s, not 62: the gate passed on counts no run of those figures holds
        ({"completed": 2000}, "'request_throughput' is 61.8 but 'completed' over 'duration_s' is 6.2 per second"),
        ({"total_token_throughput": 500_000.0}, "'total_token_throughput' is 500,000.0 but 'total_input_tokens'"),
        ({"clients": 1, "request_throughput": 63.0}, "(1 client(s)); allowed: about 61.6"),
        # a doubled figure where the shortest client ran 300 s, and one multiplied by a client count edited to match
        ({"duration_min_s": 300.0, "total_token_throughput": 2 * 94901.49329288935}, "allowed: 93,595.8 to 103,402.6"),
        ({"clients": 50, "duration_min_s": 324.0, "request_throughput": 50 * 61.79757617378438}, "is 3,089.9"),
        # without the shortest client's time, up to `clients` times the counts' rate
        ({"total_token_throughput": 3 * 94901.49329288935}, "allowed: 93,595.8 to 190,973.3"),
        # an attacker: a shortest time of 1e-300 s let any throughput pass, and be recorded
        ({"duration_min_s": 1e-300, "total_token_throughput": 9e8}, "is 900,000,000.0 but 'total_input_tokens'"),
        ({"duration_min_s": 400.0}, "'duration_min_s' is 400.0; allowed: the shortest client's seconds, above 0"),
        ({"duration_min_s": "soon"}, "'duration_min_s' is 'soon'; allowed"),
        # credited no shorter than 1/clients of the longest: held to `clients` times the counts' rate
        ({"duration_min_s": 1.0, "total_token_throughput": 3 * 94901.49329288935}, "allowed: 93,595.8 to 190,973.3"),
        # latencies no run has: no time to a first token, a p99 below the median
        ({"median_ttft_ms": 0}, "'median_ttft_ms' is 0 though requests completed; allowed: above 0"),
        ({"p99_tpot_ms": 10.0}, "'p99_tpot_ms' is 10.0, below 'median_tpot_ms' 44.2; allowed: at least the median"),
    ],
)
def test_a_throughput_that_its_counts_and_duration_do_not_give_is_refused(
    change: dict[str, Any], message: str, tmp_path: Any
) -> None:
    """vLLM's throughputs are counts over the run's duration (vllm/benchmarks/serve.py `calculate_metrics`);
    summed over clients, between the quotient and 25% above it."""
    line = next(line for line in JOB_LOG.read_text().splitlines() if line.startswith("BENCH_RESULT "))
    result = json.loads(line.removeprefix("BENCH_RESULT "))
    edited = tmp_path / "edited.log"
    edited.write_text("BENCH_RESULT " + json.dumps(result | change) + "\n")
    run = run_main(bench_compare_main, "dev", str(edited))
    assert run.returncode == 2 and message in run.stderr and run.stderr.count("\n") == 1
    assert "verdict" not in run.stdout


def test_a_run_with_one_slow_client_is_judged_not_refused(tmp_path: Any) -> None:
    """Each client's throughput is its count over its own time: with one client 30% slower the sum is ~15%
    above the counts over the longest time, a real (degraded) run the line's duration_min_s accounts for."""
    from components import bench_result

    slow, fast = (json.loads(path.read_text()) for path in CLIENT_RESULTS)
    for key in ("request_throughput", "output_throughput", "total_token_throughput"):
        slow[key] /= 1.3
    slow["duration"] *= 1.3
    log = tmp_path / "slow-client.log"
    log.write_text(bench_result.result_line(bench_result.combine([slow, fast])) + "\n")
    run = run_main(bench_compare_main, "dev", str(log))
    assert run.returncode in (0, 3), run.stderr


@pytest.mark.parametrize(("key", "unit"), [("clients", "clients"), ("completed", "requests"), ("failed", "requests")])
def test_a_count_beyond_any_run_is_refused_in_its_own_unit(key: str, unit: str) -> None:
    """`"clients": 1e300` was refused as "at most ... requests" (an attacker)."""
    figures = ("request_throughput",)
    with pytest.raises(InputError, match=f"'{key}' is 1e\\+300; allowed: at most [0-9,]+ {unit}$"):
        checked_result({key: 1e300, "request_throughput": 1.0}, "run.json", (), (key, *figures))
