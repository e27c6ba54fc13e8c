"""`plan STACK [--json] [--measurements FILE]`: what the stack's nodes should do and cost, per capacity
source and pricing, and the planning figure of its time to serve (the figures `render` writes to
capacity.json); "not measured" where no measurement of the stack's configuration exists.
"""

from __future__ import annotations

import sys
from pathlib import Path

from commands.engine.stack_config import add_stack_arguments, load_config, stack_of
from commands.io.cli import command_parser, path_argument
from commands.io.console import guarded
from commands.io.output import json_text
from commands.plan.assumptions import ExplainedExpectation, node_counts
from commands.plan.capacity_plan import CapacityPlan, capacity_plan
from commands.plan.figures import measured_on
from stacks.capacity import measurements as measurement_file
from stacks.capacity.time_to_serve import planning_figure
from stacks.load.loader import InvalidConfig


def figure(value: float | None, width: int, digits: int = 0) -> str:
    return f"{'not measured':>{width}}" if value is None else f"{value:>{width},.{digits}f}"


def counted_basis(expected: ExplainedExpectation) -> str:
    """How the benchmark's count of completions at this node count was had, as plan.md says it."""
    counted = node_counts(expected.requests_measured_nodes)
    if expected.requests_basis == "extrapolated":
        return f"extrapolated: no run at {expected.nodes} node(s) counted requests (counted at {counted} node(s))"
    return f"{expected.requests_basis} (counted at {counted} node(s))"


def time_to_serve_line(seconds: int, basis: str) -> str:
    return (
        f"time to serve: ~{seconds / 60:,.0f} min for a new replica on a new node, {basis}; every phase: "
        "plan.md's Time to serve (render)"
    )


def plan_text(capacity: CapacityPlan, serve: tuple[int, str]) -> str:
    expected = capacity.expectation
    latency = (
        "not measured"
        if expected.tpot_median_ms is None or expected.ttft_median_ms is None
        else f"{expected.tpot_median_ms:,.0f} ms / {expected.ttft_median_ms / 1000:,.1f} s"
    )
    lines = [
        f"stack {capacity.stack}: {expected.nodes} A4 node(s), {expected.gpus} B200, {expected.routing} routing, "
        f"profile {capacity.profile}",
        f"  total tok/s          {figure(expected.total_tokens_per_second, 14)}",
        f"  output tok/s         {figure(expected.output_tokens_per_second, 14)}",
        f"  concurrent requests  {expected.concurrent_requests:>14,}",
        f"  completed req/s      {figure(expected.requests_per_second, 14)}",
        f"  TPOT / TTFT median   {latency:>14}  (no p90/p99 measured)",
    ]
    if expected.total_tokens_per_second is not None:
        lines.append(f"figures: {measured_on(expected, expected.basis)}")
    if expected.requests_per_second is not None and expected.counted_requests_per_second is not None:
        lines.append(
            f"completed req/s: what this load completes (total tok/s over its mean request); the benchmark counted "
            f"{expected.counted_requests_per_second:,.0f}, {counted_basis(expected)}"
        )
    if expected.not_measured is not None:
        lines += [
            f"not measured: {expected.not_measured.reason}",
            f"to measure: {expected.not_measured.how_to_measure}",
        ]
    lines += [
        time_to_serve_line(*serve),
        f"running: {capacity.running.basis}",
        "",
        "USD per million tokens: total (input + output) at full load and at the load below, and output only",
        f"{'source':<44} {'pricing':<34} {'USD/h':>10} {'USD/month':>20} {'USD/M tot':>10} "
        f"{'at ' + format(capacity.utilization, '.0%'):>10} {'USD/M out':>10}",
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
                for value in (
                    item.usd_per_million_tokens_full_load,
                    item.usd_per_million_tokens_at_utilization,
                    item.usd_per_million_output_tokens_full_load,
                )
            )
            lines.append(
                f"{source.source:<44} {item.label:<34} {item.total_per_hour:>10,.2f} {month:>20} {per_million}"
            )
    if capacity.sizing is not None:
        sizing = capacity.sizing
        achieved = "" if sizing.achieved is None else f" ({sizing.achieved:,.0f} {sizing.unit} expected there)"
        lines += [
            "",
            f"sized from target.{sizing.goal} {sizing.value:,.0f} {sizing.unit}: {sizing.nodes} node(s){achieved}, "
            f"{sizing.sized}",
        ]
        lines += [f"caveat: {note}" for note in sizing.notes]
        if sizing.budget_per_hour is not None:
            lines.append(sizing.budget_line())
    lines += ["", "assumptions:", *[f"  - {item}" for item in expected.assumptions]]
    lines += ["prices:", *[f"  - {item}" for item in capacity.pricing_notes]]
    return "\n".join(lines)


def measurements_from(path: Path | None) -> list[measurement_file.Measurement]:
    return list(measurement_file.load(path).measurements)


PLAN_EXIT_CODES = {0: "printed", 2: "invalid stack config, stack name, arguments, stack file or measurements file"}


@guarded("plan", bad_input=(measurement_file.MeasurementsError,), as_is=(InvalidConfig,))
def plan_main(argv: list[str] | None = None) -> int:
    parser = command_parser(
        "plan",
        "Capacity and cost of a stack, from the planner: the figures `render` writes to capacity.json. A stack with "
        "a `target` (a total or output tok/s, concurrent requests or req/s goal; docs/capacity.md) is sized from it.",
        PLAN_EXIT_CODES,
    )
    add_stack_arguments(parser)
    parser.add_argument(
        "--measurements",
        type=path_argument,
        metavar="FILE",
        help="another measurements file (default: the repository's)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print capacity.json's figures as JSON (of its timeToServe the planning figure only, no chart)",
    )
    args = parser.parse_args(argv)
    with measurement_file.using(args.measurements):  # every figure, and the file they cite, from that file
        measurements = measurements_from(args.measurements)
        stack = stack_of(args)
        config = load_config(stack, "plan")
        capacity = capacity_plan(stack.name, config, measurements=measurements)
        seconds, basis = planning_figure(config)
    text = (
        json_text({**capacity.to_json(), "timeToServe": {"planning_seconds": seconds, "planning_basis": basis}})
        if args.json
        else plan_text(capacity, (seconds, basis))
    )
    # One write: print() writes a text longer than its buffer, then the line break apart, which a reader that has
    # closed the pipe after the first (`plan prod --json | head -c1`) turns into exit 141 now and then.
    sys.stdout.write(f"{text}\n")
    return 0


if __name__ == "__main__":
    sys.exit(plan_main())
