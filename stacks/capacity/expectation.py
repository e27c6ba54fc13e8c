"""What a stack of N A4 nodes should do: figures only from the measurements of its configuration.

Between two measured node counts the per-node figures are interpolated linearly; outside the
measured range the nearest measured per-node figure is held (no further scaling loss assumed: an
optimistic bound, marked "extrapolated"). Where nothing matches, every figure is None with the
reason. These are the figures goal sizing compares (stacks/capacity/planner.py); those only the plan
shows and what each rests on in words are commands/plan/assumptions.py's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from stacks.capacity.measurements import Configuration, Match, Measurement, Run, configuration_of, matching
from stacks.config.routing import RoutingMode
from stacks.config.stack import StackConfig


@dataclass(frozen=True)
class Expectation:
    """What a stack of `nodes` A4 nodes should do under its benchmark load, the figures goal sizing
    compares; None where not measured."""

    nodes: int
    total_tokens_per_second: float | None
    output_tokens_per_second: float | None
    concurrent_requests: int
    requests_per_second: float | None
    measured: bool
    basis: str | None
    measured_nodes: tuple[int, ...]
    null_reasons: dict[str, str]
    # The benchmark's own count of completions at this node count; `requests_per_second` is what a run
    # of exactly this load completes (the lower of this and the tok/s over the load's mean request).
    counted_requests_per_second: float | None


def interpolate(points: Sequence[tuple[float, float]], x: float) -> float:
    """Linear between sorted points; the nearest point's value outside them."""
    if x <= points[0][0]:
        return points[0][1]
    for (x0, y0), (x1, y1) in pairwise(points):
        if x <= x1:
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return points[-1][1]


def runs_read(counts: Sequence[int], nodes: int) -> tuple[int, ...]:
    """Which of the runs at sorted `counts` a figure at `nodes` reads, as `interpolate` takes them (their
    indexes): the run at `nodes`, else the two around it, else the nearest."""
    if nodes in counts:
        return (counts.index(nodes),)
    if counts[0] < nodes < counts[-1]:
        above = next(index for index, count in enumerate(counts) if count > nodes)
        return (above - 1, above)
    return (0,) if nodes < counts[0] else (len(counts) - 1,)


def output_from_shares(reported: Sequence[int], counts: Sequence[int]) -> bool:
    """Whether output tok/s are the total x the output share of the runs that report them (fewer node counts
    report output than total: the output then follows the total's scaling), not read per node."""
    return bool(reported) and set(reported) != set(counts)


def basis_at(counts: Sequence[int], nodes: int) -> str:
    """How a figure at `nodes` is got from runs at `counts`: measured, interpolated or extrapolated."""
    read = runs_read(counts, nodes)
    if len(read) == 2:
        return "interpolated"
    return "measured" if counts[read[0]] == nodes else "extrapolated"


@dataclass(frozen=True)
class Throughput:
    """The measurements of one configuration, ready to answer for any node count."""

    configuration: Configuration
    match: Match | None

    def per_node(self, nodes: int) -> float | None:
        if self.match is None:
            return None
        return interpolate([(run.nodes, run.total_tokens_per_second / run.nodes) for run in self.match.runs], nodes)

    def basis(self, nodes: int) -> str | None:
        return None if self.match is None else basis_at([run.nodes for run in self.match.runs], nodes)

    def expect(self, nodes: int, concurrency_per_node: int) -> Expectation:
        concurrent = nodes * concurrency_per_node
        if self.match is None:
            figures = ("total_tokens_per_second", "output_tokens_per_second", "requests_per_second")
            return Expectation(
                nodes=nodes,
                total_tokens_per_second=None,
                output_tokens_per_second=None,
                concurrent_requests=concurrent,
                requests_per_second=None,
                measured=False,
                basis=None,
                measured_nodes=(),
                null_reasons=dict.fromkeys(figures, "not measured"),
                counted_requests_per_second=None,
            )
        runs = self.match.runs
        counts = [run.nodes for run in runs]
        per_node = self.per_node(nodes)
        assert per_node is not None
        total = per_node * nodes
        null_reasons: dict[str, str] = {}
        output = self._output(runs, nodes, total, null_reasons)
        requests = self._per_node_figure(runs, nodes, "requests_per_second")
        if requests is None:
            null_reasons["requests_per_second"] = "not reported by the measurement"
        return Expectation(
            nodes=nodes,
            total_tokens_per_second=total,
            output_tokens_per_second=output,
            concurrent_requests=concurrent,
            requests_per_second=None if requests is None else self._completing(requests * nodes, total),
            measured=True,
            basis=basis_at(counts, nodes),
            measured_nodes=tuple(counts),
            null_reasons=null_reasons,
            counted_requests_per_second=None if requests is None else requests * nodes,
        )

    def _completing(self, counted: float, total: float) -> float:
        """What a run of exactly this load completes per second: the benchmark's count, or the measured
        tok/s over the load's mean request when that is lower (outputs run to their length, so every
        request is that long); the planner sizes a req/s goal by the same figure."""
        key = self.configuration
        if key.ignore_eos is True and isinstance(key.input_tokens, int) and isinstance(key.output_tokens, int):
            return min(counted, total / (key.input_tokens + key.output_tokens))
        return counted

    def _output(self, runs: Sequence[Run], nodes: int, total: float, null_reasons: dict[str, str]) -> float | None:
        shares = [
            (run.nodes, output / run.total_tokens_per_second)
            for run in runs
            if (output := run.output_tokens_per_second) is not None
        ]
        if shares and output_from_shares([count for count, _ in shares], [run.nodes for run in runs]):
            # Fewer node counts report output than total: their output share of the total, at this node count,
            # so the output follows the total's scaling (12 x one node's output ignored the loss between them).
            return total * interpolate(sorted(shares), nodes)
        measured = self._per_node_figure(runs, nodes, "output_tokens_per_second")
        if measured is not None:
            return measured * nodes
        key = self.configuration
        if key.ignore_eos is True and isinstance(key.input_tokens, int) and isinstance(key.output_tokens, int):
            share = key.output_tokens / (key.input_tokens + key.output_tokens)  # outputs run to their length
            return total * share
        null_reasons["output_tokens_per_second"] = "not reported, and outputs may stop early (EOS)"
        return None

    @staticmethod
    def _per_node_figure(runs: Sequence[Run], nodes: int, attribute: str) -> float | None:
        points = [(run.nodes, value / run.nodes) for run in runs if (value := getattr(run, attribute)) is not None]
        return interpolate(points, nodes) if points else None


def throughput_of(
    config: StackConfig, measurements: Sequence[Measurement], routing: RoutingMode | None = None
) -> Throughput:
    configuration = configuration_of(config, routing, config.capacity.nodes)
    return Throughput(configuration=configuration, match=matching(configuration, measurements))


def expect(
    config: StackConfig, nodes: int, measurements: Sequence[Measurement], routing: RoutingMode | None = None
) -> Expectation:
    return throughput_of(config, measurements, routing or config.routing.mode).expect(
        nodes, config.workload.concurrency_per_node
    )
