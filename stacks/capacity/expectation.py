"""What a stack of N A4 nodes should do: figures only from the measurements of its configuration.

Between two measured node counts the per-node figures are interpolated linearly; outside the
measured range the nearest measured per-node figure is held (no further scaling loss assumed: an
optimistic bound, marked "extrapolated"). Where nothing matches, every figure is None with the
reason. Goal sizing reads these figures (stacks/capacity/planner.py); what each rests on in words,
the measurements it cites and how to measure the rest are commands/plan/assumptions.py's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from components.hardware import B200_GPUS_PER_NODE
from stacks.capacity.measurements import (
    Configuration,
    Match,
    Measurement,
    Run,
    configuration_of,
    matching,
)
from stacks.config.routing import RoutingMode
from stacks.config.stack import StackConfig


@dataclass(frozen=True)
class Expectation:
    """What a stack of `nodes` A4 nodes should do under its benchmark load; None where not measured."""

    nodes: int
    gpus: int
    routing: str
    total_tokens_per_second: float | None
    output_tokens_per_second: float | None
    per_node_tokens_per_second: float | None
    scaling_efficiency: float | None
    routing_factor: float | None
    concurrent_requests: int
    requests_per_second: float | None
    tpot_median_ms: float | None
    ttft_median_ms: float | None
    measured: bool = False
    basis: str | None = None
    measured_nodes: tuple[int, ...] = ()
    null_reasons: dict[str, str] = field(default_factory=dict)
    # Gateway routing: the Endpoint Picker image and whether a measurement with it exists (None: ClusterIP).
    picker: str | None = None
    gateway_overhead_measured: bool | None = None
    # How completed req/s were got at this node count (measured, interpolated, extrapolated), from the
    # node counts whose runs counted them (the throughput's basis may differ: 12 nodes have tok/s only).
    requests_basis: str | None = None
    requests_measured_nodes: tuple[int, ...] = ()
    # The benchmark's own count of completions at this node count; `requests_per_second` is what a run
    # of exactly this load completes (the lower of this and the tok/s over the load's mean request).
    counted_requests_per_second: float | None = None
    # The vLLM release the stack runs (its measurements may have run on another).
    release: str | None = None
    # How the latency medians were got at this node count (measured, interpolated, extrapolated).
    latency_basis: str | None = None


def _line(points: Sequence[tuple[float, float]], x: float) -> float:
    """Linear between sorted points; the nearest point's value outside them."""
    if x <= points[0][0]:
        return points[0][1]
    for (x0, y0), (x1, y1) in pairwise(points):
        if x <= x1:
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return points[-1][1]


def _basis(counts: Sequence[int], nodes: int) -> str:
    if nodes in counts:
        return "measured"
    return "interpolated" if counts[0] < nodes < counts[-1] else "extrapolated"


@dataclass(frozen=True)
class Throughput:
    """The measurements of one configuration, ready to answer for any node count."""

    configuration: Configuration
    match: Match | None

    def per_node(self, nodes: int) -> float | None:
        if self.match is None:
            return None
        return _line([(run.nodes, run.total_tokens_per_second / run.nodes) for run in self.match.runs], nodes)

    def basis(self, nodes: int) -> str | None:
        return None if self.match is None else _basis([run.nodes for run in self.match.runs], nodes)

    def expect(self, nodes: int, concurrency_per_node: int, clusterip: Throughput | None = None) -> Expectation:
        routing = self.configuration.routing
        concurrent = nodes * concurrency_per_node
        if self.match is None:
            return self._not_measured(nodes, concurrent)
        runs = self.match.runs
        counts = [run.nodes for run in runs]
        per_node = self.per_node(nodes)
        assert per_node is not None
        total = per_node * nodes
        first = runs[0]
        efficiency = per_node / (first.total_tokens_per_second / first.nodes)
        factor = None
        if routing == RoutingMode.clusterip.value:
            factor = 1.0
        elif clusterip is not None and (base := clusterip.per_node(nodes)) is not None:
            factor = per_node / base
        null_reasons: dict[str, str] = {}
        basis = _basis(counts, nodes)
        output = self._output(runs, nodes, total, null_reasons)
        requests = self._per_node_figure(runs, nodes, "requests_per_second")
        counted = tuple(run.nodes for run in runs if run.requests_per_second is not None)
        if requests is None:
            null_reasons["requests_per_second"] = "not reported by the measurement"
        completing = None if requests is None else self._completing(requests * nodes, total)
        tpot = self._latency(runs, nodes, "tpot_median_ms")
        ttft = self._latency(runs, nodes, "ttft_median_ms")
        if tpot is None or ttft is None:
            null_reasons.update(
                {key: "no latency was published for these runs" for key in ("tpot_median_ms", "ttft_median_ms")}
            )
        return Expectation(
            nodes=nodes,
            gpus=nodes * B200_GPUS_PER_NODE,
            routing=routing,
            total_tokens_per_second=total,
            output_tokens_per_second=output,
            per_node_tokens_per_second=per_node,
            scaling_efficiency=efficiency,
            routing_factor=factor,
            concurrent_requests=concurrent,
            requests_per_second=completing,
            tpot_median_ms=tpot,
            ttft_median_ms=ttft,
            measured=True,
            basis=basis,
            measured_nodes=tuple(counts),
            null_reasons=null_reasons,
            requests_basis=_basis(counted, nodes) if counted and requests is not None else None,
            requests_measured_nodes=counted,
            counted_requests_per_second=None if requests is None else requests * nodes,
            release=self.configuration.vllm_release,
            latency_basis=None
            if tpot is None or ttft is None
            else _basis([run.nodes for run in runs if run.tpot_median_ms is not None], nodes),
            **self._picker(),
        )

    def _completing(self, counted: float, total: float) -> float:
        """What a run of exactly this load completes per second: the benchmark's count, or the measured
        tok/s over the load's mean request when that is lower (outputs run to their length, so every
        request is that long); the planner sizes a req/s goal by the same figure."""
        key = self.configuration
        if key.ignore_eos is True and isinstance(key.input_tokens, int) and isinstance(key.output_tokens, int):
            return min(counted, total / (key.input_tokens + key.output_tokens))
        return counted

    def _picker(self) -> dict[str, Any]:
        if self.configuration.routing != RoutingMode.gateway.value:
            return {}
        return {"picker": self.configuration.picker, "gateway_overhead_measured": self.match is not None}

    def _output(self, runs: Sequence[Run], nodes: int, total: float, null_reasons: dict[str, str]) -> float | None:
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
        return _line(points, nodes) if points else None

    @staticmethod
    def _latency(runs: Sequence[Run], nodes: int, attribute: str) -> float | None:
        points = [(run.nodes, value) for run in runs if (value := getattr(run, attribute)) is not None]
        return _line(points, nodes) if points else None

    def _not_measured(self, nodes: int, concurrent: int) -> Expectation:
        figures = (
            "total_tokens_per_second",
            "output_tokens_per_second",
            "per_node_tokens_per_second",
            "scaling_efficiency",
            "routing_factor",
            "requests_per_second",
            "tpot_median_ms",
            "ttft_median_ms",
        )
        return Expectation(
            nodes=nodes,
            gpus=nodes * B200_GPUS_PER_NODE,
            routing=self.configuration.routing,
            total_tokens_per_second=None,
            output_tokens_per_second=None,
            per_node_tokens_per_second=None,
            scaling_efficiency=None,
            routing_factor=None,
            concurrent_requests=concurrent,
            requests_per_second=None,
            tpot_median_ms=None,
            ttft_median_ms=None,
            null_reasons=dict.fromkeys(figures, "not measured"),
            **self._picker(),
        )


def throughput_of(
    config: StackConfig, measurements: Sequence[Measurement], routing: RoutingMode | None = None
) -> Throughput:
    configuration = configuration_of(config, routing, config.capacity.nodes)
    return Throughput(
        configuration=configuration,
        match=matching(configuration, measurements),
    )


def expect(
    config: StackConfig, nodes: int, measurements: Sequence[Measurement], routing: RoutingMode | None = None
) -> Expectation:
    mode = routing or config.routing.mode
    throughput = throughput_of(config, measurements, mode)
    clusterip = throughput_of(config, measurements, RoutingMode.clusterip) if mode is RoutingMode.gateway else None
    return throughput.expect(nodes, config.workload.concurrency_per_node, clusterip)
