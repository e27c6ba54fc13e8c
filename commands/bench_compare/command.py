"""`bench-compare STACK [LOG|-] [--results CLIENT.json ...] [--record] [--nodes N]`: the benchmark
Job's summed result line (from its log, or combined from the clients' `--save-result` files) next to
the planner's expectation for the stack, and from a log the serving pods' start-up phases (its
STARTUP_PHASES lines: median and largest per phase, recorded with the result). `--record` appends
the result to the measurements file as a measurement of the stack's configuration at the run's node
count (`--nodes`, required where an autoscaler or schedule sets it; `--source`, `--date` name where
and when); the planner uses it for that configuration from then on. Exit status: 0 compared (and
recorded), 2 invalid stack config, unreadable result (a file that is not a regular file or is too
large, JSON that is malformed, too deep or holds NaN, a result without a figure the comparison
needs) or measurements file, 3 the run missed the plan: a failed request, total or output tok/s
more than --band (default 10%) below the planner's expectation, or a TTFT or TPOT median more than
--latency-band (default 50%) above the plan's measured median (recorded all the same with --record),
so CI can gate a rollout on it.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import sys
from pathlib import Path
from typing import Any, TypeGuard

from commands.bench_compare.recording import appended, new_measurement, startup_phases
from commands.engine.stack_config import add_stack_arguments, load_config, stack_of
from commands.io import output
from commands.io.cli import command_parser, path_argument
from commands.io.console import guarded, shown
from commands.plan.assumptions import ExplainedExpectation, is_the_repositorys
from commands.plan.capacity_plan import capacity_plan
from commands.plan.command import figure, measurements_from
from commands.stackfile import stack_settings
from common.input_files import MIB, InputError, parse_json, read_stream, read_text
from common.text import human_duration
from components import bench_result, startup_report
from stacks.capacity import measurements as measurement_file
from stacks.capacity.planner import benchmark_concurrency
from stacks.config.quoting import quote
from stacks.config.stack import StackConfig
from stacks.load.loader import InvalidConfig

# How far below the plan a run's throughput may land before the verdict is a miss: run-to-run spread
# of the write-up's own repeats at 1/2/4 nodes was 1.1-3.4% (95,317 / 190,000 / 376,074 vs
# 96,959 / 196,548 / 380,185 tok/s); 10% leaves room for a different client node and cluster without
# hiding a broken configuration (the gateway's ~35%).
DEFAULT_BAND_PERCENT = 10.0
MISSED_THE_PLAN = 3
# The figures the verdict judges: throughput, which the plan is sized by. Completed req/s (what the
# load completes at the planned tok/s) are shown only.
JUDGED = ("total tok/s", "output tok/s")
# The latency medians, judged where the plan has a measured one (no other percentile was measured):
# a miss is a median more than --latency-band above it. The write-up's own runs at one load per node
# had TTFT medians from 5,580 to 8,065 ms (the slowest 45% above the fastest) and TPOT medians from
# 44 to 47 ms across 1-12 nodes, so a band of 50% passes every run the write-up counted and fails a
# run at 2-4x the plan's latency with its throughput on plan (MTP off, a mis-set batch).
LATENCY_JUDGED = ("TTFT median (ms)", "TPOT median (ms)")
DEFAULT_LATENCY_BAND_PERCENT = 50.0
# What a log's `combine` may hold: one line (bench_result.COMBINE_NOTE is 91 characters).
COMBINE_MAX = 200


COMPARED = (
    ("total tok/s", "total_token_throughput", "total_tokens_per_second"),
    ("output tok/s", "output_throughput", "output_tokens_per_second"),
    ("completed req/s", "request_throughput", "requests_per_second"),
    ("TTFT median (ms)", "median_ttft_ms", "ttft_median_ms"),
    ("TPOT median (ms)", "median_tpot_ms", "tpot_median_ms"),
)


def comparison_rows(
    measured: dict[str, Any], expected: ExplainedExpectation
) -> list[tuple[str, float | None, float, float | None]]:
    """(figure, expected, measured, measured / expected) for every figure the planner predicts;
    expected and ratio None where the stack's configuration was not measured."""
    rows: list[tuple[str, float | None, float, float | None]] = []
    for label, measured_key, expected_key in COMPARED:
        value = getattr(expected, expected_key)
        want = None if value is None else float(value)
        got = float(measured[measured_key])
        rows.append((label, want, got, None if not want else got / want))
    return rows


def verdict(
    measured: dict[str, Any],
    expected: ExplainedExpectation,
    band_percent: float,
    latency_band_percent: float = DEFAULT_LATENCY_BAND_PERCENT,
) -> tuple[bool, str]:
    """(missed, the verdict line): a miss is a failed request, a judged throughput more than the band
    below the plan, or a latency median more than the latency band above the plan's measured one;
    with nothing planned (the configuration not measured) only failures are judged, and a median the
    plan has none for is named as not judged."""
    misses = []
    if measured["failed"]:
        misses.append(f"{measured['failed']:,} failed request(s)")
    rows = comparison_rows(measured, expected)
    throughput = [row for row in rows if row[0] in JUDGED]
    for label, want, _got, ratio in throughput:
        if want is not None and ratio is not None and ratio < 1 - band_percent / 100:
            misses.append(f"{label} {ratio:.1%} of the plan")
    unjudged = []
    for label, want, _got, ratio in (row for row in rows if row[0] in LATENCY_JUDGED):
        if want is None or ratio is None:
            unjudged.append(label.removesuffix(" (ms)"))
        elif ratio > 1 + latency_band_percent / 100:
            misses.append(f"{label.removesuffix(' (ms)')} {ratio:.1%} of the plan")
    band = f"band {band_percent:g}% below the plan"
    if len(unjudged) < len(LATENCY_JUDGED):
        band += f" for tok/s, {latency_band_percent:g}% above it for the measured latency medians"
    not_judged = f"; {' and '.join(unjudged)} not judged: no median measured for this configuration" if unjudged else ""
    if misses:
        return True, f"verdict: MISSED the plan ({band}): {'; '.join(misses)} (exit {MISSED_THE_PLAN}){not_judged}"
    if all(want is None for _, want, _, _ in throughput):
        return False, "verdict: no plan figure to judge against (configuration not measured); no failed request"
    return False, f"verdict: met the plan ({band}), no failed request{not_judged}"


def comparison_text(stack: str, measured: dict[str, Any], expected: ExplainedExpectation) -> str:
    lines = [
        f"stack {stack}: {expected.nodes} node(s), {expected.routing} routing; {measured['clients']} client(s), "
        f"{measured['completed']:,} completed / {measured['failed']:,} failed requests in "
        f"{human_duration(measured['duration_s'])}",
        f"{'figure':<20} {'expected':>14} {'measured':>14} {'ratio':>8}",
    ]
    for label, want, got, ratio in comparison_rows(measured, expected):
        shown_ratio = "-" if ratio is None else f"{ratio:.1%}"
        lines.append(f"{label:<20} {figure(want, 14)} {got:>14,.0f} {shown_ratio:>8}")
    lines.append(
        f"{'TTFT / TPOT / ITL p99':<20} {'':>14} "
        f"{measured['p99_ttft_ms']:,.0f} / {measured['p99_tpot_ms']:,.0f} / {measured['p99_itl_ms']:,.0f} ms "
        "(max of client p99s)"
    )
    lines.append(f"combined: {shown(measured.get('combine', 'not stated in the log'))}")
    if expected.not_measured is not None:
        lines.append(f"not measured before: {expected.not_measured.reason}; --record adds this result")
    return "\n".join(lines)


LOG_LIMIT = 64 * MIB
RESULT_LIMIT = 64 * MIB
# What one client's `--save-result` file must hold for `bench_result.combine`, and what the summed
# line must hold for the comparison (counts are whole numbers; every figure finite and not negative).
CLIENT_COUNTS = ("completed", "failed", "total_input_tokens", "total_output_tokens")
CLIENT_FIGURES = (
    "duration",
    "request_throughput",
    "output_throughput",
    "total_token_throughput",
    *(f"{kind}_{metric}_ms" for metric in bench_result.LATENCY_METRICS for kind in ("median", "p99")),
)
SUMMARY_COUNTS = ("clients", "completed", "failed", "total_input_tokens", "total_output_tokens")
# A run's length: no benchmark runs for months (a duration of 1e308 s printed a 300-digit count of days).
DURATIONS = ("duration", "duration_s")
SUMMARY_FIGURES = (
    "duration_s",
    *(measured for _, measured, _ in COMPARED),
    *(f"p99_{metric}_ms" for metric in bench_result.LATENCY_METRICS),
)


def _finite_number(value: object) -> TypeGuard[float]:
    """A JSON number (not a boolean) that is finite as a float64."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an integer beyond float64, e.g. summed over clients
        return False


def _bound(key: str) -> tuple[float, str] | None:
    """The largest value a run's figure may have (the measurements file's bounds): far above any real run."""
    if key.endswith("_throughput"):
        return measurement_file.MAX_RATE, "per second"
    if key.endswith("_ms"):
        return measurement_file.MAX_MILLISECONDS, "ms"
    if key in ("completed", "failed"):
        return measurement_file.MAX_REQUESTS, "requests"
    if key == "clients":
        return measurement_file.MAX_REQUESTS, "clients"
    return None


def checked_result(value: Any, where: str, counts: tuple[str, ...], figures: tuple[str, ...]) -> dict[str, Any]:
    """`value` if it is an object holding every count (a whole number) and figure (a finite number, not
    negative); otherwise InputError naming the key."""
    if not isinstance(value, dict):
        raise InputError(f"{where}: a benchmark result must be a JSON object")
    for key in (*counts, *figures):
        number = value.get(key)
        if key not in value:
            raise InputError(f"{where}: '{key}' is missing; is this a `vllm bench serve --save-result` result?")
        if not _finite_number(number):
            raise InputError(f"{where}: '{key}' is {quote(number)}; allowed: a finite number")
        if number < 0 or (key in counts and number != int(number)):
            raise InputError(f"{where}: '{key}' is {number}; allowed: a {'whole ' if key in counts else ''}number >= 0")
        if key in DURATIONS and number > measurement_file.MAX_SECONDS:
            raise InputError(
                f"{where}: '{key}' is {number:.3g} s; allowed: at most {measurement_file.MAX_SECONDS:,.0f} s"
            )
        bound = _bound(key)
        if bound is not None and number > bound[0]:
            raise InputError(f"{where}: '{key}' is {number:.3g}; allowed: at most {bound[0]:,.0f} {bound[1]}")
    if not isinstance(value.get("combine", ""), str):
        raise InputError(f"{where}: 'combine' is {quote(value['combine'])}; allowed: a string")
    if not value.get("combine", "").isprintable() or len(value.get("combine", "")) > COMBINE_MAX:
        # shown on a line of its own and kept in the measurements file's note: a line break would start a
        # line of the log's choosing (`verdict: met the plan`)
        raise InputError(
            f"{where}: 'combine' holds a line break or another unprintable character, or is over {COMBINE_MAX} "
            "characters; allowed: one line of text"
        )
    if value.get("clients", 1) < 1:
        raise InputError(f"{where}: 'clients' is {value['clients']}; allowed: at least 1")
    return value


def consistent(summary: dict[str, Any], where: str) -> dict[str, Any]:
    """`summary` if its counts and figures can come from one run: some request completed or failed, a
    run with completed requests took time, and one without any has no throughput. A result edited by
    hand or cut short otherwise passes the gate (`met the plan`) on figures no run produced."""
    completed, failed = summary["completed"], summary["failed"]
    if not completed and not failed:
        raise InputError(f"{where}: no request completed or failed; allowed: a run that sent requests")
    if completed and not summary["duration_s"]:
        raise InputError(f"{where}: 'duration_s' is 0 though {completed:,} requests completed; allowed: > 0")
    if not completed:
        for key in (key for _, key, _ in COMPARED if key.endswith("_throughput")):
            if summary[key]:
                raise InputError(f"{where}: '{key}' is {summary[key]:,} though no request completed; allowed: 0")
    if completed and completed / summary["duration_s"] > measurement_file.MAX_RATE:
        raise InputError(
            f"{where}: 'duration_s' is {summary['duration_s']:.3g} s for {completed:,} completed requests; allowed: "
            f"a run of at most {measurement_file.MAX_RATE:,.0f} requests per second"
        )
    if summary["output_throughput"] > summary["total_token_throughput"]:
        raise InputError(
            f"{where}: 'output_throughput' is {summary['output_throughput']:,.0f}, above 'total_token_throughput' "
            f"{summary['total_token_throughput']:,.0f}; allowed: at most the total (input + output)"
        )
    if completed:
        _rates_match_counts(summary, where)
        _latencies_ordered(summary, where)
    return summary


def _latencies_ordered(summary: dict[str, Any], where: str) -> None:
    """A run whose requests completed took time to its first token, and no percentile is below the median."""
    if not summary["median_ttft_ms"]:
        raise InputError(f"{where}: 'median_ttft_ms' is 0 though requests completed; allowed: above 0")
    for metric in bench_result.LATENCY_METRICS:
        median, p99 = summary.get(f"median_{metric}_ms"), summary[f"p99_{metric}_ms"]
        if isinstance(median, (int, float)) and p99 < median:
            raise InputError(
                f"{where}: 'p99_{metric}_ms' is {p99:,.1f}, below 'median_{metric}_ms' {median:,.1f}; allowed: at "
                "least the median"
            )


# How far a throughput may be from its count over the duration: vLLM's figures are those quotients
# (vllm/benchmarks/serve.py `calculate_metrics` in 0.33.0: request_throughput=completed / dur_s,
# output_throughput=sum(actual_output_lens) / dur_s, total_token_throughput=(total_input + output) / dur_s),
# rounded in the log.
RATE_TOLERANCE = 0.01
RATES_OF_COUNTS = (
    ("request_throughput", ("completed",)),
    ("output_throughput", ("total_output_tokens",)),
    ("total_token_throughput", ("total_input_tokens", "total_output_tokens")),
)


def _rates_match_counts(summary: dict[str, Any], where: str) -> None:
    """Each throughput against its count over `duration_s`. One client's is the quotient itself. Summed over
    clients (`duration_s` the longest client's), each client's is its count over its own time, so the sum lies
    between the counts over the longest time and over the shortest (`duration_min_s`, which the Job's line
    holds, components/bench_result.py); a line without it, or with a shortest under 1/clients of the longest, is
    held to `clients` times the quotient, as if a client had run in 1/clients of the longest time."""
    clients = int(summary["clients"] or 1)
    shortest = summary.get("duration_min_s")
    if shortest is not None and not (_finite_number(shortest) and 0 < shortest <= summary["duration_s"]):
        raise InputError(
            f"{where}: 'duration_min_s' is {quote(shortest)}; allowed: the shortest client's seconds, above 0 and at "
            "most 'duration_s'"
        )
    if shortest is not None and shortest < summary["duration_s"] / clients:
        shortest = None  # credited no shorter than 1/clients of the longest, as a line without it is
    for rate, counts in RATES_OF_COUNTS:
        count = sum(summary[key] for key in counts)
        quotient = count / summary["duration_s"]
        if clients == 1:
            low, high = quotient * (1 - RATE_TOLERANCE), quotient * (1 + RATE_TOLERANCE)
        elif isinstance(shortest, (int, float)) and 0 < shortest <= summary["duration_s"]:
            low, high = quotient * (1 - RATE_TOLERANCE), count / shortest * (1 + RATE_TOLERANCE)
        else:
            low, high = quotient * (1 - RATE_TOLERANCE), quotient * clients * (1 + RATE_TOLERANCE)
        if not low <= summary[rate] <= high:
            spelled = " + ".join(f"'{key}'" for key in counts)
            allowed = f"{low:,.1f} to {high:,.1f}" if clients > 1 else f"about {quotient:,.1f}"
            figure = summary[rate]
            shown_rate = f"{figure:,.1f}" if figure >= 0.1 or not figure else f"{figure:.3g}"
            raise InputError(
                f"{where}: '{rate}' is {shown_rate} but {spelled} over 'duration_s' is {quotient:,.1f} per "
                f"second ({clients} client(s)); allowed: {allowed}"
            )


def result_from_log(text: str, where: str) -> dict[str, Any]:
    """The summary of the last result line of a log (e.g. `kubectl logs job/...`)."""
    prefix = bench_result.RESULT_PREFIX
    # A log saved by a Windows editor or PowerShell begins with a byte order mark, no character of its first line.
    lines = text.removeprefix("\ufeff").splitlines()
    numbered = [(number, line) for number, line in enumerate(lines, 1) if line.startswith(prefix)]
    if not numbered:
        hint = (
            ": it looks like a client's --save-result file; give those with --results FILE [FILE ...]"
            if text.lstrip().startswith("{") and '"request_throughput"' in text
            else " (the benchmark Job's log: kubectl logs job/NAME, once it has completed)"
        )
        raise InputError(f"{where}: no line starting with {bench_result.RESULT_PREFIX.strip()!r} found{hint}")
    number, line = numbered[-1]
    at = f"{where}:{number}"
    summary = parse_json(line[len(bench_result.RESULT_PREFIX) :], at)
    return consistent(checked_result(summary, at, SUMMARY_COUNTS, SUMMARY_FIGURES), at)


def startup_from_log(text: str, where: str) -> measurement_file.StartupPhases | None:
    """The serving pods' start-up phases from the log's STARTUP_PHASES lines (the last line per pod)."""
    prefix = startup_report.PREFIX
    by_pod: dict[str, dict[str, Any]] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.startswith(prefix):
            continue
        record = parse_json(line[len(prefix) :], f"{where}:{number}")
        if not isinstance(record, dict) or not isinstance(record.get("pod"), str):
            raise InputError(f"{where}:{number}: a {prefix.strip()} line must be an object naming its 'pod'")
        if not isinstance(record.get("phases"), dict):
            raise InputError(f"{where}:{number}: 'phases' must be an object of seconds per phase")
        for name, value in record["phases"].items():
            if name not in startup_report.PHASES:
                allowed = ", ".join(startup_report.PHASES)
                raise InputError(f"{where}:{number}: unknown phase {quote(name)}; allowed: {allowed}")
            if value is not None and not (_finite_number(value) and 0 <= value <= measurement_file.MAX_SECONDS):
                raise InputError(
                    f"{where}:{number}: phase '{name}' is {quote(value)}; allowed: seconds from 0 to "
                    f"{measurement_file.MAX_SECONDS:,.0f}, or null"
                )
        by_pod[record["pod"]] = record
    if len(by_pod) > measurement_file.MAX_REPORTED_PODS:
        raise InputError(
            f"{where}: {prefix.strip()} lines of {len(by_pod):,} pods; allowed: at most "
            f"{measurement_file.MAX_REPORTED_PODS:,}, one line per serving pod"
        )
    return startup_phases(list(by_pod.values()))


def startup_text(startup: measurement_file.StartupPhases | None) -> str:
    if startup is None:
        return (
            "start-up: no STARTUP_PHASES line in the log (the report runs after the clients: fetch the log once the "
            "Job has completed, kubectl logs job/NAME)"
        )
    cells = [
        f"{name} {startup.median_seconds[name]:,.0f}/{startup.max_seconds[name]:,.0f}"
        for name in startup_report.PHASES
        if name in startup.median_seconds
    ]
    figures = ", ".join(cells) or "no phase reported"
    longest = startup.max_span_seconds or {}
    spans = [
        f"{key} ({early or 'created'} to {late}) {value:,.0f}" + (f"/{longest[key]:,.0f}" if key in longest else "")
        for key, value in (startup.median_span_seconds or {}).items()
        for late, early in [measurement_file.SPANS[key]]
    ]
    span_line = f"\nstart-up spans of each pod, s, median/max: {', '.join(spans)}" if spans else ""
    if startup.cold_pods:
        pods = (
            f"{startup.cold_pods} of {startup.pods} pod(s) that started cold (on a node made for it, the image pulled)"
        )
        return f"start-up of {pods}, s since created, median/max: {figures}{span_line}"
    return (
        f"start-up of {startup.pods} pod(s), s since created, median/max: {figures}; none was on a node made "
        "for it with the image pulled (a node that was up, the image there, or the node not readable): "
        f"the engine's phases count, not the node, image and pod phases of a new replica{span_line}"
    )


def result_from_clients(paths: list[Path], served_model: str, model: str) -> dict[str, Any]:
    """The clients' results summed, each client once and each a run of the stack's model: `model_id`,
    which `vllm bench serve --save-result` writes from its `--model` (the served name, as the stack's
    Job passes it, or the checkpoint with `--served-model-name`); a result without it is taken as is."""
    results = []
    seen: dict[str, Path] = {}
    for path in paths:
        # A result saved again by a Windows editor begins with a byte order mark, which RFC 8259 lets a reader ignore.
        document = parse_json(read_text(path, RESULT_LIMIT).removeprefix("\ufeff"), str(path))
        result = checked_result(document, str(path), CLIENT_COUNTS, CLIENT_FIGURES)
        ran = result.get("model_id", served_model)
        if ran not in (served_model, model):
            allowed = " or ".join(quote(name, 80) for name in dict.fromkeys((served_model, model)))
            raise InputError(f"{path}: 'model_id' is {quote(ran, 80)}; allowed: the stack's model, {allowed}")
        same = seen.setdefault(json.dumps(result, sort_keys=True), path)
        if same is not path:
            twice = "given twice" if same.resolve() == path.resolve() else f"the same result as {same}"
            raise InputError(f"{path}: {twice}; give each client's --save-result file once")
        results.append(result)
    combined = bench_result.combine(results)
    return consistent(checked_result(combined, "the combined results", SUMMARY_COUNTS, SUMMARY_FIGURES), "--results")


def run_nodes(config: StackConfig, given: int | None) -> int:
    """The serving pods (A4 nodes) a benchmark run had: --nodes, else the count the stack runs where nothing
    but the stack sets it (capacity.nodes, or an autoscaler's fixed count). Where an autoscaler or a schedule
    step decides it, the count during the run is not known here and --nodes is required: a result compared
    or kept at the wrong count misses or meets the plan wrongly, and would give every later plan of the
    configuration a wrong per-node figure."""
    ceiling = config.max_replicas
    allowed = f"allowed: 1 to {ceiling}, the serving pods during the run"
    if given is not None:
        if not 1 <= given <= ceiling:
            raise InputError(f"--nodes {given}: out of range; {allowed}")
        return given
    decides = config.pod_count_decider
    if decides is None:
        return config.initial_replicas
    raise InputError(
        f"--nodes: required, {decides}; {allowed} (`kubectl get deployment -n {config.cluster.namespace} "
        f"{config.routing.service_name}` shows how many are ready now)"
    )


def _source(text: str) -> str:
    source = " ".join(text.split())
    if not source:
        raise argparse.ArgumentTypeError("empty; say who measured it, where")
    problem = measurement_file.source_problem(
        source, shown_in="would be written to the measurements file and every plan"
    )
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return source


def _date(text: str) -> str:
    try:
        day = datetime.date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date YYYY-MM-DD") from None
    if day > measurement_file.latest_run_date():
        raise argparse.ArgumentTypeError(
            f"{day} is in the future; allowed: the date the run was made, today or earlier"
        )
    return day.isoformat()


BENCH_COMPARE_EXIT_CODES = {
    0: "compared (and recorded with --record): the run met the plan, or there was no plan figure to judge",
    2: "invalid stack config, stack name or arguments; an unreadable or malformed result or measurements file; "
    "with --record, a measurements file that is a symbolic link or another user's, that the file system protects "
    "(chattr +i, or +a on its folder), would receive a token or would grow past the readers' size limit (nothing "
    "written)",
    MISSED_THE_PLAN: "the run missed the plan: a failed request, total or output tok/s more than --band below "
    "the expectation, or a TTFT or TPOT median more than --latency-band above the plan's measured one (recorded "
    "all the same with --record)",
}


def _percent(text: str) -> float:
    try:
        percent = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of percent") from None
    if not math.isfinite(percent) or percent < 0:
        raise argparse.ArgumentTypeError(f"{percent:g} is not a percentage of 0 or more")
    return percent


def _band(text: str) -> float:
    band = _percent(text)
    if band >= 100:
        raise argparse.ArgumentTypeError(f"{band:g} is not a percentage from 0 to below 100")
    return band


# A latency band above this lets no median miss the plan (1e308% passed as a band): at most 11x the median.
LATENCY_BAND_MAX_PERCENT = 1000.0


def _latency_band(text: str) -> float:
    band = _percent(text)
    if band > LATENCY_BAND_MAX_PERCENT:
        raise argparse.ArgumentTypeError(
            f"{band:g} would pass a median of any latency; allowed: a percentage from 0 to "
            f"{LATENCY_BAND_MAX_PERCENT:g} (a median 11 times the plan's)"
        )
    return band


def in_a_checkout() -> bool:
    """The commands run from the project's repository (its pyproject.toml beside the stack files), not
    from an installed wheel, where the repository's measurements file sits in site-packages."""
    return (stack_settings.ROOT / "pyproject.toml").is_file()


@guarded("bench-compare", bad_input=(measurement_file.MeasurementsError,), as_is=(InvalidConfig,))
def bench_compare_main(argv: list[str] | None = None) -> int:
    parser = command_parser(
        "bench-compare",
        "Compare the benchmark Job's result with the planner's expectation for the stack; --record keeps it.",
        BENCH_COMPARE_EXIT_CODES,
    )
    add_stack_arguments(parser)
    parser.add_argument(
        "log", nargs="?", metavar="LOG", help="a log holding the BENCH_RESULT line, or - for standard input"
    )
    parser.add_argument(
        "--results",
        nargs="+",
        type=path_argument,
        metavar="FILE",
        help="the clients' --save-result JSON files instead of LOG",
    )
    parser.add_argument(
        "--measurements",
        type=path_argument,
        metavar="FILE",
        help="another measurements file (default: the repository's)",
    )
    parser.add_argument("--record", action="store_true", help="append the result to the measurements file")
    parser.add_argument(
        "--source",
        type=_source,
        help="with --record, required: who measured it and where it is published (a public URL or a title); "
        "plan.md prints it beside the figure",
    )
    parser.add_argument(
        "--band",
        type=_band,
        default=DEFAULT_BAND_PERCENT,
        metavar="PERCENT",
        help=f"how far below the plan total or output tok/s may be before the verdict is a miss, exit "
        f"{MISSED_THE_PLAN} (default {DEFAULT_BAND_PERCENT:g})",
    )
    parser.add_argument(
        "--latency-band",
        type=_latency_band,
        default=DEFAULT_LATENCY_BAND_PERCENT,
        metavar="PERCENT",
        help="how far above the plan's measured TTFT or TPOT median the run's may be before the verdict is a "
        f"miss, exit {MISSED_THE_PLAN} (default {DEFAULT_LATENCY_BAND_PERCENT:g}; a median the plan has none for "
        "is not judged)",
    )
    parser.add_argument("--date", type=_date, help="when it ran, YYYY-MM-DD (with --record; default today, UTC)")
    parser.add_argument(
        "--nodes",
        type=int,
        metavar="N",
        help="serving pods (A4 nodes) during the run (default: the count the stack runs; required when an "
        "autoscaler or schedule sets the count)",
    )
    args = parser.parse_intermixed_args(argv)  # LOG may follow options given after STACK
    if bool(args.results) == bool(args.log):
        parser.error("give a log (or -) or --results, one of the two")
    if not args.record and (given := [name for name in ("source", "date") if getattr(args, name) is not None]):
        parser.error(f"--{given[0]} is only read with --record (it describes the result --record appends)")
    if args.record and args.source is None:
        # a reader of the plan must be able to open or look up the figure's source
        parser.error(
            "--record needs --source: who measured it and where it is published (a public URL or a title), which "
            "plan.md prints beside the figure"
        )
    path = args.measurements or measurement_file.MEASUREMENTS_FILE
    if args.record and args.measurements is None and not in_a_checkout():
        raise InputError(
            f"--record: the default measurements file is inside the installed package ({path}), which an "
            "upgrade replaces; give the file to record into with --measurements FILE (a copy in your repository)"
        )
    if args.record and not path.exists() and not path.is_symlink():
        raise InputError(
            f"--measurements {shown(path)}: no such file; --record appends to a measurements file: start a new one "
            "with the line `measurements: []`"
        )
    measurements = measurements_from(path)
    stack = stack_of(args)
    config = load_config(stack, "bench-compare")
    startup = None
    if args.results:
        measured = result_from_clients(args.results, config.served_model_name, config.weights.model)
    else:
        where = "standard input" if args.log == "-" else args.log
        text = read_stream(sys.stdin, LOG_LIMIT) if args.log == "-" else read_text(args.log, LOG_LIMIT)
        measured = result_from_log(text, where)
        startup = startup_from_log(text, where)
    nodes = run_nodes(config, args.nodes)
    with measurement_file.using(args.measurements):  # the figures, and the file they cite, from that file
        expected = capacity_plan(stack.name, config, nodes=nodes, measurements=measurements).expectation
    text = comparison_text(stack.name, measured, expected)
    missed, verdict_line = verdict(measured, expected, args.band, args.latency_band)
    if not args.results:
        text += "\n" + startup_text(startup)
    if args.record:
        if not measured["completed"]:
            raise InputError("no request completed: nothing to record")
        date = args.date or datetime.datetime.now(datetime.UTC).date().isoformat()
        # Under the lock the file is read again: another --record may have appended since the plan read it.
        with output.locked_file(path):
            recorded = measurement_file.parse(measurement_file.read(path), str(path)).measurements
            entry = new_measurement(
                config,
                stack.name,
                date,
                measured,
                args.source,
                [item.id for item in recorded],
                nodes=nodes,
                concurrency=benchmark_concurrency(config),
                startup=startup,
            )
            known = stack_settings.load_stack_settings(stack.name, stack.file).known_secret_values()
            output.replace_file(path, appended(path, entry), known)
        text += f"\nrecorded as measurement {entry.id} in {shown(path)}"
        if is_the_repositorys(path):
            text += (
                "; run `make docs` before committing it (the preview's table of traced settings is keyed on this file)"
            )
    print(f"{text}\n{verdict_line}")
    return MISSED_THE_PLAN if missed else 0


if __name__ == "__main__":
    sys.exit(bench_compare_main())
