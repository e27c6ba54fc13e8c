"""Console scripts of the capacity planner.

`plan STACK [--json] [--measurements FILE]`: what the stack's nodes should do and cost, per capacity
source and pricing (the figures `render` writes to capacity.json); "not measured" where no
measurement of the stack's configuration exists.

`bench-compare STACK [LOG|-] [--results CLIENT.json ...] [--record] [--nodes N]`: the benchmark
Job's summed result line (from its log, or combined from the clients' `--save-result` files) next to
the planner's expectation for the stack. `--record` appends the result to the measurements file as a
measurement of the stack's configuration at the run's node count (`--nodes`, required where an
autoscaler or schedule sets it; `--source`, `--date` name where and when); the planner uses it for
that configuration from then on. Exit status: 0 compared (and
recorded), 2 invalid stack config, unreadable result (a file that is not a regular file or is too
large, JSON that is malformed, too deep or holds NaN, a result without a figure the comparison
needs) or measurements file.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import sys
from pathlib import Path
from typing import Any

from components import bench_result
from policies.cli import STACK_HELP, StackRef, command_parser, stack_ref
from policies.console import guarded
from policies.input_files import MIB, InputError, parse_json, read_json, read_stream, read_text
from stacks.capacity import measurements as measurement_file
from stacks.capacity.expectation import Expectation
from stacks.capacity.planner import CapacityPlan, benchmark_concurrency, human_duration, plan
from stacks.config.stack import StackConfig
from stacks.load.loader import InvalidConfig, raw_project_config, validate
from stacks.offline import engine, output, stack_settings

RECORDED_SOURCE = "in-cluster benchmark Job of this project (bench-compare --record)"


def load_config(stack: StackRef, command: str) -> StackConfig:
    """The stack's validated config; what the stack file leaves unknown offline (ESC) is said on stderr."""
    settings = stack_settings.load_stack_settings(stack.name, stack.file)
    engine.apply_settings(settings)
    config = validate(raw_project_config(settings.project))
    for note in stack_settings.stack_file_notes(settings):
        print(f"{command}: note: {note}", file=sys.stderr)
    return config


def add_stack_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("stack", metavar="STACK", help=STACK_HELP)
    parser.add_argument(
        "--config-file", type=Path, metavar="FILE", help="read the stack's settings from this file instead"
    )


def stack_of(args: argparse.Namespace) -> StackRef:
    """The STACK argument, with --config-file in place of its stack file when given."""
    stack = stack_ref(args.stack)
    return StackRef(stack.name, args.config_file) if args.config_file is not None else stack


def _figure(value: float | None, width: int, digits: int = 0) -> str:
    return f"{'not measured':>{width}}" if value is None else f"{value:>{width},.{digits}f}"


def plan_text(capacity: CapacityPlan) -> str:
    expected = capacity.expectation
    latency = (
        "not measured"
        if expected.tpot_median_ms is None or expected.ttft_median_ms is None
        else f"{expected.tpot_median_ms:,.0f} ms / {expected.ttft_median_ms / 1000:,.1f} s"
    )
    lines = [
        f"stack {capacity.stack}: {expected.nodes} A4 node(s), {expected.gpus} B200, {expected.routing} routing, "
        f"profile {capacity.profile}",
        f"  total tok/s          {_figure(expected.total_tokens_per_second, 14)}",
        f"  output tok/s         {_figure(expected.output_tokens_per_second, 14)}",
        f"  concurrent requests  {expected.concurrent_requests:>14,}",
        f"  completed req/s      {_figure(expected.requests_per_second, 14)}",
        f"  TPOT / TTFT median   {latency:>14}",
    ]
    if expected.not_measured is not None:
        lines += [
            f"not measured: {expected.not_measured.reason}",
            f"to measure: {expected.not_measured.how_to_measure}",
        ]
    lines += [
        f"running: {capacity.running.basis}",
        "",
        f"{'source':<44} {'pricing':<34} {'USD/h':>10} {'USD/month':>20} {'USD/M tok':>10} "
        f"{'at ' + format(capacity.utilization, '.0%'):>10}",
    ]
    for source in capacity.sources:
        for item in source.costs:
            month = (
                f"{item.total_per_month_max:,.0f}"
                if round(item.total_per_month_min) == round(item.total_per_month_max)
                else f"{item.total_per_month_min:,.0f}..{item.total_per_month_max:,.0f}"
            )
            per_million = " ".join(
                f"{'-':>10}" if value is None else f"{value:>10.3f}"
                for value in (item.usd_per_million_tokens_full_load, item.usd_per_million_tokens_at_utilization)
            )
            lines.append(
                f"{source.source:<44} {item.label:<34} {item.total_per_hour:>10,.2f} {month:>20} {per_million}"
            )
    if capacity.sizing is not None:
        sizing = capacity.sizing
        lines += ["", f"sized from target.{sizing.goal} {sizing.value:,.0f}: {sizing.nodes} node(s), {sizing.sized}"]
        lines += [f"caveat: {note}" for note in sizing.notes]
        if sizing.budget_per_hour is not None:
            lines.append(f"within USD {sizing.budget_per_hour:,.2f}/h: {', '.join(sizing.sources_within_budget)}")
    lines += ["", "assumptions:", *[f"  - {item}" for item in expected.assumptions]]
    lines += ["prices:", *[f"  - {item}" for item in capacity.pricing_notes]]
    return "\n".join(lines)


def _measurements(path: Path | None) -> list[measurement_file.Measurement]:
    return list(measurement_file.load(path).measurements)


PLAN_EXIT_CODES = {0: "printed", 2: "invalid stack config, stack name, arguments, stack file or measurements file"}


@guarded("plan", bad_input=(measurement_file.MeasurementsError,), as_is=(InvalidConfig,))
def plan_main(argv: list[str] | None = None) -> int:
    parser = command_parser(
        "plan",
        "Capacity and cost of a stack, from the planner: the figures `render` writes to capacity.json.",
        PLAN_EXIT_CODES,
    )
    add_stack_arguments(parser)
    parser.add_argument(
        "--measurements", type=Path, metavar="FILE", help="another measurements file (default: the repository's)"
    )
    parser.add_argument("--json", action="store_true", help="print capacity.json's figures as JSON")
    args = parser.parse_args(argv)
    measurements = _measurements(args.measurements)
    stack = stack_of(args)
    capacity = plan(stack.name, load_config(stack, "plan"), measurements=measurements)
    print(json.dumps(capacity.to_json(), indent=2, sort_keys=True) if args.json else plan_text(capacity))
    return 0


COMPARED = (
    ("total tok/s", "total_token_throughput", "total_tokens_per_second"),
    ("output tok/s", "output_throughput", "output_tokens_per_second"),
    ("completed req/s", "request_throughput", "requests_per_second"),
    ("TTFT median (ms)", "median_ttft_ms", "ttft_median_ms"),
    ("TPOT median (ms)", "median_tpot_ms", "tpot_median_ms"),
)


def comparison_rows(
    measured: dict[str, Any], expected: Expectation
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


def comparison_text(stack: str, measured: dict[str, Any], expected: Expectation) -> str:
    lines = [
        f"stack {stack}: {expected.nodes} node(s), {expected.routing} routing; {measured['clients']} client(s), "
        f"{measured['completed']:,} completed / {measured['failed']:,} failed requests in "
        f"{human_duration(measured['duration_s'])}",
        f"{'figure':<20} {'expected':>14} {'measured':>14} {'ratio':>8}",
    ]
    for label, want, got, ratio in comparison_rows(measured, expected):
        shown_ratio = "-" if ratio is None else f"{ratio:.1%}"
        lines.append(f"{label:<20} {_figure(want, 14)} {got:>14,.0f} {shown_ratio:>8}")
    lines.append(
        f"{'TTFT / TPOT / ITL p99':<20} {'':>14} "
        f"{measured['p99_ttft_ms']:,.0f} / {measured['p99_tpot_ms']:,.0f} / {measured['p99_itl_ms']:,.0f} ms "
        "(max of client p99s)"
    )
    lines.append(f"combined: {measured.get('combine', 'not stated in the log')}")
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
SUMMARY_COUNTS = ("clients", "completed", "failed")
SUMMARY_FIGURES = (
    "duration_s",
    *(measured for _, measured, _ in COMPARED),
    *(f"p99_{metric}_ms" for metric in bench_result.LATENCY_METRICS),
)


def _finite(number: float) -> bool:
    try:
        return math.isfinite(number)
    except OverflowError:  # an integer beyond float64, e.g. summed over clients
        return False


def checked_result(value: Any, where: str, counts: tuple[str, ...], figures: tuple[str, ...]) -> dict[str, Any]:
    """`value` if it is an object holding every count (a whole number) and figure (a finite number, not
    negative); otherwise InputError naming the key."""
    if not isinstance(value, dict):
        raise InputError(f"{where}: a benchmark result must be a JSON object")
    for key in (*counts, *figures):
        number = value.get(key)
        if key not in value:
            raise InputError(f"{where}: '{key}' is missing; is this a `vllm bench serve --save-result` result?")
        if isinstance(number, bool) or not isinstance(number, (int, float)) or not _finite(number):
            raise InputError(f"{where}: '{key}' is {json.dumps(number)[:40]}; allowed: a finite number")
        if number < 0 or (key in counts and number != int(number)):
            raise InputError(f"{where}: '{key}' is {number}; allowed: a {'whole ' if key in counts else ''}number >= 0")
    if not isinstance(value.get("combine", ""), str):
        raise InputError(f"{where}: 'combine' is {json.dumps(value['combine'])[:40]}; allowed: a string")
    if value.get("clients", 1) < 1:
        raise InputError(f"{where}: 'clients' is {value['clients']}; allowed: at least 1")
    return value


def result_from_log(text: str, where: str) -> dict[str, Any]:
    """The summary of the last result line of a log (e.g. `kubectl logs job/...`)."""
    prefix = bench_result.RESULT_PREFIX
    numbered = [(number, line) for number, line in enumerate(text.splitlines(), 1) if line.startswith(prefix)]
    if not numbered:
        raise InputError(f"{where}: no line starting with {bench_result.RESULT_PREFIX.strip()!r} found")
    number, line = numbered[-1]
    at = f"{where}:{number}"
    summary = parse_json(line[len(bench_result.RESULT_PREFIX) :], at)
    return checked_result(summary, at, SUMMARY_COUNTS, SUMMARY_FIGURES)


def result_from_clients(paths: list[Path]) -> dict[str, Any]:
    results = [
        checked_result(read_json(path, RESULT_LIMIT), str(path), CLIENT_COUNTS, CLIENT_FIGURES) for path in paths
    ]
    return checked_result(bench_result.combine(results), "the combined results", SUMMARY_COUNTS, SUMMARY_FIGURES)


def run_nodes(config: StackConfig, given: int | None) -> int:
    """The serving pods (A4 nodes) a benchmark run had: --nodes, else capacity.nodes where nothing
    but the stack sets the count. Where an autoscaler or a schedule step decides it, the count during
    the run is not known here and --nodes is required (a result kept at the wrong count would give
    every later plan of the configuration a wrong per-node figure)."""
    ceiling = config.max_replicas
    if given is not None:
        if not 1 <= given <= ceiling:
            raise InputError(f"--nodes {given}: allowed 1 to {ceiling}, the stack's most serving pods")
        return given
    scaling = config.autoscaling
    counts = {replicas for _, _, replicas in config.schedule_steps() if replicas}
    if scaling.enabled and scaling.min_replicas < ceiling:
        decides = f"its autoscaler runs {scaling.min_replicas}..{ceiling} pods"
    elif counts - {config.nodes}:
        decides = f"its schedule sets {'/'.join(str(count) for count in sorted(counts))} pods"
    else:
        return config.nodes
    raise InputError(f"--record: {decides}; give --nodes N, the serving pods during the run")


def _source(text: str) -> str:
    source = " ".join(text.split())
    if not source:
        raise argparse.ArgumentTypeError("empty; say who measured it, where")
    return source


def _date(text: str) -> str:
    try:
        return datetime.date.fromisoformat(text).isoformat()
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date YYYY-MM-DD") from None


BENCH_COMPARE_EXIT_CODES = {
    0: "compared (and recorded with --record)",
    2: "invalid stack config, stack name or arguments; an unreadable or malformed result or measurements file; "
    "with --record, a measurements file that is a symbolic link or would receive a token (nothing written)",
}


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
        "--results", nargs="+", type=Path, metavar="FILE", help="the clients' --save-result JSON files instead of LOG"
    )
    parser.add_argument(
        "--measurements", type=Path, metavar="FILE", help="another measurements file (default: the repository's)"
    )
    parser.add_argument("--record", action="store_true", help="append the result to the measurements file")
    parser.add_argument(
        "--source", type=_source, default=RECORDED_SOURCE, help="who measured it, where (with --record)"
    )
    parser.add_argument("--date", type=_date, help="when it ran, YYYY-MM-DD (with --record; default today, UTC)")
    parser.add_argument(
        "--nodes",
        type=int,
        metavar="N",
        help="serving pods (A4 nodes) during the run (default capacity.nodes; required with --record when an "
        "autoscaler or schedule sets the count)",
    )
    args = parser.parse_args(argv)
    if bool(args.results) == bool(args.log):
        parser.error("give a log (or -) or --results, one of the two")
    path = args.measurements or measurement_file.MEASUREMENTS_FILE
    measurements = _measurements(path)
    stack = stack_of(args)
    config = load_config(stack, "bench-compare")
    if args.results:
        measured = result_from_clients(args.results)
    elif args.log == "-":
        measured = result_from_log(read_stream(sys.stdin, LOG_LIMIT), "standard input")
    else:
        measured = result_from_log(read_text(args.log, LOG_LIMIT), args.log)
    nodes = run_nodes(config, args.nodes) if args.record or args.nodes is not None else config.nodes
    expected = plan(stack.name, config, nodes=nodes, measurements=measurements).expectation
    text = comparison_text(stack.name, measured, expected)
    if args.record:
        if not measured["completed"]:
            raise InputError("no request completed: nothing to record")
        date = args.date or datetime.datetime.now(datetime.UTC).date().isoformat()
        entry = measurement_file.new_measurement(
            config,
            stack.name,
            date,
            measured,
            args.source,
            [item.id for item in measurements],
            nodes=nodes,
            concurrency=benchmark_concurrency(config),
        )
        output.replace_file(path, measurement_file.appended(path, entry))
        text += f"\nrecorded as measurement {entry.id} in {path}"
    print(text)
    return 0
