"""What a stack of N A4 nodes should do: figures only from the measurements of its configuration.

Between two measured node counts the per-node figures are interpolated linearly; outside the
measured range the nearest measured per-node figure is held (no further scaling loss assumed: an
optimistic bound, marked "extrapolated"). Where nothing matches, every figure is None with the
reason, the nearest measurements and how to measure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from components.hardware import B200_GPUS_PER_NODE
from stacks.capacity.measurements import (
    MEASUREMENTS_FILE,
    Configuration,
    Match,
    Measurement,
    Run,
    configuration_of,
    matching,
    nearest,
)
from stacks.config.releases import RELEASES
from stacks.config.routing import RoutingMode
from stacks.config.stack import StackConfig

NEAREST_SHOWN = 3
FIELDS_SHOWN = 6
HOW_TO_MEASURE_GATEWAY = (
    "; in gateway mode point the benchmark at the Gateway first: benchmark.target gateway and "
    "benchmark.gatewayAddress (the gatewayAddressCommand output), docs/gateway.md"
)
HOW_TO_MEASURE = (
    "deploy the stack with `benchmark.enabled: true` (the in-cluster benchmark Job), then record its result "
    "with `bench-compare STACK LOG --record` (the stack output `benchmarkCompare` is that command without "
    "--record): it is added to "
    f"{MEASUREMENTS_FILE.parent.parent.name}/{MEASUREMENTS_FILE.parent.name}/{MEASUREMENTS_FILE.name} "
    "and the planner uses it for this configuration from then on"
)
COMPLETION_GAP = 0.1


@dataclass(frozen=True)
class Citation:
    id: str
    source: str
    date: str
    measured_release: str


@dataclass(frozen=True)
class NotMeasured:
    reason: str
    how_to_measure: str
    nearest: tuple[str, ...]


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
    assumptions: tuple[str, ...]
    measured: bool = False
    basis: str | None = None
    measured_nodes: tuple[int, ...] = ()
    measurements: tuple[Citation, ...] = ()
    not_measured: NotMeasured | None = None
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
    # The vLLM release the stack runs (its measurements may have run on another: `measurements`).
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


def _counts(counts: Sequence[int]) -> str:
    return "/".join(str(count) for count in counts)


@dataclass(frozen=True)
class Throughput:
    """The measurements of one configuration, ready to answer for any node count."""

    configuration: Configuration
    match: Match | None
    nearest: tuple[tuple[Measurement, tuple[str, ...]], ...]

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
        assumptions = [self._source_line(), *self._release_lines(), self._load_line(concurrency_per_node)]
        basis = _basis(counts, nodes)
        assumptions.append(
            {
                "measured": f"total tok/s measured at {nodes} node(s)",
                "interpolated": f"total tok/s per node interpolated between the measured {_counts(counts)} node(s)",
                "extrapolated": f"total tok/s extrapolated: {nodes} node(s) is outside the measured "
                f"{_counts(counts)}; the nearest measured per-node figure is held (no further scaling loss "
                "assumed, an optimistic bound)",
            }[basis]
        )
        output = self._output(runs, nodes, total, assumptions, null_reasons)
        requests = self._per_node_figure(runs, nodes, "requests_per_second")
        counted = tuple(run.nodes for run in runs if run.requests_per_second is not None)
        if requests is None:
            null_reasons["requests_per_second"] = "not reported by the measurement"
        else:
            assumptions.append(self._completion_caveat(runs))
        completing = None if requests is None else self._completing(requests * nodes, total)
        tpot = self._latency(runs, nodes, "tpot_median_ms")
        ttft = self._latency(runs, nodes, "ttft_median_ms")
        if tpot is None or ttft is None:
            null_reasons.update(
                {key: "no latency was published for these runs" for key in ("tpot_median_ms", "ttft_median_ms")}
            )
        else:
            assumptions.append(
                "TPOT/TTFT: medians of the nearest measured node counts, under the full load; no other "
                "percentile (p90, p99) was measured, so the tail latency is not known"
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
            assumptions=tuple(assumptions),
            measured=True,
            basis=basis,
            measured_nodes=tuple(counts),
            measurements=tuple(
                Citation(item.id, item.source, item.date, item.measured_release) for item in self.match.measurements
            ),
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

    def _completion_caveat(self, runs: Sequence[Run]) -> str:
        """Completed req/s are the benchmark's count; where they disagree with the measured tok/s and
        the load's mean request length, say by how much a run of exactly this load would differ."""
        counted = [run for run in runs if run.requests_per_second is not None]
        line = f"completed req/s as the benchmark counted them at {_counts([run.nodes for run in counted])} node(s)"
        key = self.configuration
        if not (isinstance(key.input_tokens, int) and isinstance(key.output_tokens, int)):
            return line
        tokens = key.input_tokens + key.output_tokens
        ratios = [run.total_tokens_per_second / (run.requests_per_second or 1) / tokens for run in counted]
        ratio = sum(ratios) / len(ratios)
        if abs(1 - ratio) <= COMPLETION_GAP:
            return line
        if ratio > 1 or key.ignore_eos is not True:
            return (
                f"{line}; caveat: they imply ~{ratio * tokens:,.0f} tokens per request, not the load's {tokens:,}, "
                f"so a run of exactly this load completes ~{abs(1 - ratio):.0%} {'fewer' if ratio < 1 else 'more'} "
                "requests per second than shown while its tok/s matches"
            )
        return (
            f"completed req/s = total tok/s / the load's {tokens:,} tokens per request (outputs run to their "
            f"length), what a run of exactly this load completes; the benchmark counted ~{1 / ratio - 1:.0%} more "
            f"at {_counts([run.nodes for run in counted])} node(s), ~{ratio * tokens:,.0f} tokens per request"
        )

    def _source_line(self) -> str:
        assert self.match is not None
        ids = ", ".join(item.id for item in self.match.measurements)
        key = self.configuration
        speculative = "no speculative decoding" if key.speculative == "off" else key.speculative.upper()
        return (
            f"measured: {ids} (stacks/capacity/measurements.yaml), the configuration of this stack: profile "
            f"{key.profile}, vLLM {key.vllm_release}{self._carried_over()}, DP {key.data_parallel_size} x TP "
            f"{key.tensor_parallel_size}"
            f"{' + EP' if key.expert_parallel is True else ''}, {speculative}, KV cache {key.kv_cache_dtype}, "
            f"max-model-len {key.max_model_len}, {key.routing} routing; source: "
            + "; ".join(dict.fromkeys(item.source for item in self.match.measurements))
        )

    def _carried_over(self) -> str:
        assert self.match is not None
        releases = sorted(
            {item.measured_release for item in self.match.measurements} - {self.configuration.vllm_release}
        )
        return f" (the runs were on vLLM {'/'.join(releases)}, carried over: see below)" if releases else ""

    def _release_lines(self) -> list[str]:
        assert self.match is not None
        release = self.configuration.vllm_release
        lines = []
        for item in self.match.measurements:
            if item.measured_release != release and release in RELEASES:
                lines.append(
                    f"assumed, not measured: {item.id} ran on vLLM {item.measured_release}, and its figures are "
                    f"taken for vLLM {release}, {RELEASES[release].why}; no run on {release} says what that "
                    "does to throughput"
                )
        return lines

    def _load_line(self, concurrency_per_node: int) -> str:
        key = self.configuration
        eos = ", outputs to full length (ignore EOS)" if key.ignore_eos is True else ""
        return (
            f"load: {key.dataset} prompts, input {key.input_tokens} / output {key.output_tokens} tokens (range ratio "
            f"{key.range_ratio}){eos}, unique prompts (0% prefix-cache hits), {concurrency_per_node:,} concurrent "
            f"requests per node, for a stack sized for prompts up to {key.max_prompt_tokens} and outputs up to "
            f"{key.max_output_tokens} tokens; other request shapes are not modelled"
        )

    def _output(
        self, runs: Sequence[Run], nodes: int, total: float, assumptions: list[str], null_reasons: dict[str, str]
    ) -> float | None:
        measured = self._per_node_figure(runs, nodes, "output_tokens_per_second")
        if measured is not None:
            return measured * nodes
        key = self.configuration
        if key.ignore_eos is True and isinstance(key.input_tokens, int) and isinstance(key.output_tokens, int):
            share = key.output_tokens / (key.input_tokens + key.output_tokens)
            assumptions.append(
                f"output tok/s = total x {key.output_tokens}/{key.input_tokens + key.output_tokens} (the load's mean "
                "output share; outputs run to their length)"
            )
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
        key = self.configuration
        picker = f" through the picker {key.picker}" if key.picker else ""
        reason = (
            f"no measurement in stacks/capacity/measurements.yaml is of this configuration (profile {key.profile}, "
            f"{key.model}, vLLM {key.vllm_release}, {key.routing} routing{picker}, and the engine and load settings)"
        )
        shown = []
        for measurement, differences in self.nearest[:NEAREST_SHOWN]:
            measured_picker = measurement.configuration.picker
            named = [
                # A gateway run of another picker: name the one that was measured.
                f"picker (measured: {measured_picker})"
                if field == "picker" and isinstance(measured_picker, str) and key.picker
                else field
                for field in differences
            ]
            listed = ", ".join(named[:FIELDS_SHOWN]) + (", ..." if len(named) > FIELDS_SHOWN else "")
            shown.append(f"{measurement.id} differs in {listed}")
        how = HOW_TO_MEASURE + (HOW_TO_MEASURE_GATEWAY if key.routing == RoutingMode.gateway.value else "")
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
            routing=key.routing,
            total_tokens_per_second=None,
            output_tokens_per_second=None,
            per_node_tokens_per_second=None,
            scaling_efficiency=None,
            routing_factor=None,
            concurrent_requests=concurrent,
            requests_per_second=None,
            tpot_median_ms=None,
            ttft_median_ms=None,
            assumptions=(f"not measured: {reason}", *(f"nearest: {line}" for line in shown)),
            not_measured=NotMeasured(reason=reason, how_to_measure=how, nearest=tuple(shown)),
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
        nearest=tuple((item, tuple(differences)) for item, differences in nearest(configuration, measurements)),
    )


def expect(
    config: StackConfig, nodes: int, measurements: Sequence[Measurement], routing: RoutingMode | None = None
) -> Expectation:
    mode = routing or config.routing.mode
    throughput = throughput_of(config, measurements, mode)
    clusterip = throughput_of(config, measurements, RoutingMode.clusterip) if mode is RoutingMode.gateway else None
    return throughput.expect(nodes, config.workload.concurrency_per_node, clusterip)
