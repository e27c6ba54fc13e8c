"""The expectation plan.md, `plan` and bench-compare show: the figures goal sizing compares (the
stack's own, stacks/capacity/expectation.py) with those only the plan shows (per node, scaling,
routing factor, latency medians, the picker), and what they rest on in words: the measurements
cited, the load and the release they were taken at, how each figure was got at this node count,
and for a configuration never measured, why, the nearest measurements and how to measure it. And
what a count sized from a goal (stacks/capacity/planner.py) rests on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from components.hardware import B200_GPUS_PER_NODE
from schemas.vllm_releases import RELEASES
from stacks.capacity import measurements as measurement_file
from stacks.capacity.expectation import (
    Expectation,
    Throughput,
    basis_at,
    expect,
    interpolate,
    runs_read,
    throughput_of,
)
from stacks.capacity.measurements import (
    MEASUREMENTS_FILE,
    UNKNOWN,
    Configuration,
    Match,
    Measurement,
    Run,
    configuration_of,
    in_effect,
)
from stacks.capacity.planner import GOAL_UNITS, Sizing
from stacks.config.routing import RoutingMode
from stacks.config.stack import StackConfig

NEAREST_SHOWN = 3
FIELDS_SHOWN = 6
HOW_TO_MEASURE_GATEWAY = (
    "; in gateway mode the benchmark targets the Gateway (benchmark.target defaults to the routing mode), whose "
    "address exists once the stack is up: deploy, then set benchmark.gatewayAddress (the gatewayAddressCommand "
    "output), docs/gateway.md"
)
# The repository's measurements file, as the figures name it.
REPOSITORY_MEASUREMENTS = "/".join(MEASUREMENTS_FILE.parts[-3:])
HOW_TO_MEASURE = (
    "deploy the stack with `benchmark.enabled: true` (the in-cluster benchmark Job), then record its result "
    'with `bench-compare STACK LOG --record --source "WHO, WHERE"` (who measured it and where it is published; '
    "and `--nodes N`, the serving pods during the run, where an autoscaler or a schedule sets the count; the stack "
    "output `benchmarkCompare` is that command without these options): it is added to "
    f"{REPOSITORY_MEASUREMENTS} and the planner uses it for this configuration from then on"
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
class ExplainedExpectation(Expectation):
    """The figures goal sizing compares, with those only the plan shows and what they rest on: the
    assumptions in words, the measurements cited, and for a configuration never measured, why and how
    to measure it."""

    gpus: int
    routing: str
    per_node_tokens_per_second: float | None
    scaling_efficiency: float | None
    routing_factor: float | None
    tpot_median_ms: float | None
    ttft_median_ms: float | None
    # How the latency medians were got at this node count (measured, interpolated, extrapolated).
    latency_basis: str | None
    # How completed req/s were got at this node count (measured, interpolated, extrapolated), from the
    # node counts whose runs counted them (the throughput's basis may differ: 12 nodes have tok/s only).
    requests_basis: str | None
    requests_measured_nodes: tuple[int, ...]
    # How output tok/s were got from the runs that report them (None: derived from the total, or none).
    output_basis: str | None
    output_measured_nodes: tuple[int, ...]
    # The vLLM release the stack runs (its measurements may have run on another: `measurements`).
    release: str | None
    assumptions: tuple[str, ...]
    # Every measurement of the stack's configuration (`measurements`), and the vLLM releases of those whose
    # runs a figure at this node count reads (a newer run of one count may be on another release): the
    # throughput and what is made of it, the latency medians, the benchmark's count of completions.
    measurements: tuple[Citation, ...] = ()
    figure_releases: tuple[str, ...] = ()
    latency_releases: tuple[str, ...] = ()
    requests_releases: tuple[str, ...] = ()
    output_releases: tuple[str, ...] = ()
    not_measured: NotMeasured | None = None
    # Gateway routing: the Endpoint Picker image and whether a measurement with it exists (None: ClusterIP).
    picker: str | None = None
    gateway_overhead_measured: bool | None = None


# The figures only the plan shows, besides those goal sizing compares.
SHOWN_FIGURES = (
    "per_node_tokens_per_second",
    "scaling_efficiency",
    "routing_factor",
    "tpot_median_ms",
    "ttft_median_ms",
)
LATENCIES = ("tpot_median_ms", "ttft_median_ms")
# A figure of each kind whose runs the labels follow: the throughput, the latency medians, the completion count,
# the output tok/s.
READ_FIGURES = ("total_tokens_per_second", "tpot_median_ms", "requests_per_second", "output_tokens_per_second")


def explain(
    config: StackConfig, nodes: int, measurements: Sequence[Measurement], routing: RoutingMode | None = None
) -> ExplainedExpectation:
    """The stack's expectation at `nodes` nodes (stacks/capacity/expectation.py `expect`), explained."""
    mode = routing or config.routing.mode
    throughput = throughput_of(config, measurements, mode)
    expected = throughput.expect(nodes, config.workload.concurrency_per_node)
    key = throughput.configuration
    figures = {**vars(expected), "gpus": nodes * B200_GPUS_PER_NODE, "routing": key.routing}
    if mode is RoutingMode.gateway:
        figures |= {"picker": key.picker, "gateway_overhead_measured": throughput.match is not None}
    if throughput.match is None:
        not_measured = _not_measured(key, measurements)
        return ExplainedExpectation(
            **{**figures, "null_reasons": {**expected.null_reasons, **dict.fromkeys(SHOWN_FIGURES, "not measured")}},
            per_node_tokens_per_second=None,
            scaling_efficiency=None,
            routing_factor=None,
            tpot_median_ms=None,
            ttft_median_ms=None,
            latency_basis=None,
            requests_basis=None,
            requests_measured_nodes=(),
            output_basis=None,
            output_measured_nodes=(),
            release=None,
            assumptions=(
                f"not measured: {not_measured.reason}",
                *(f"nearest: {line}" for line in not_measured.nearest),
            ),
            not_measured=not_measured,
        )
    runs = throughput.match.runs
    per_node = throughput.per_node(nodes)
    assert per_node is not None
    factor = 1.0 if mode is RoutingMode.clusterip else None
    if mode is RoutingMode.gateway:
        base = throughput_of(config, measurements, RoutingMode.clusterip).per_node(nodes)
        factor = None if base is None else per_node / base
    tpot, ttft = (_median(runs, nodes, name) for name in LATENCIES)
    read = [measurements_read(throughput, nodes, figure) for figure in READ_FIGURES]
    latencies = tpot is not None and ttft is not None
    counted = tuple(run.nodes for run in runs if run.requests_per_second is not None)
    reported = tuple(run.nodes for run in runs if run.output_tokens_per_second is not None)
    return ExplainedExpectation(
        **{
            **figures,
            "null_reasons": expected.null_reasons
            | ({} if latencies else dict.fromkeys(LATENCIES, "no latency was published for these runs")),
        },
        per_node_tokens_per_second=per_node,
        scaling_efficiency=per_node / (runs[0].total_tokens_per_second / runs[0].nodes),
        routing_factor=factor,
        tpot_median_ms=tpot,
        ttft_median_ms=ttft,
        latency_basis=basis_at([run.nodes for run in runs if run.tpot_median_ms is not None], nodes)
        if latencies
        else None,
        requests_basis=basis_at(counted, nodes)
        if counted and expected.counted_requests_per_second is not None
        else None,
        requests_measured_nodes=counted,
        output_basis=basis_at(reported, nodes) if reported and expected.output_tokens_per_second is not None else None,
        output_measured_nodes=reported,
        release=key.vllm_release,
        assumptions=tuple(_assumptions(throughput, expected, config.workload.concurrency_per_node, latencies, read)),
        measurements=tuple(
            Citation(item.id, item.source, item.date, item.measured_release) for item in throughput.match.measurements
        ),
        figure_releases=_releases(read[0]),
        latency_releases=_releases(read[1]),
        requests_releases=_releases(read[2]),
        output_releases=_releases(read[3]),
    )


def _releases(read: Sequence[Measurement]) -> tuple[str, ...]:
    return tuple(sorted({item.measured_release for item in read}))


def _median(runs: Sequence[Run], nodes: int, attribute: str) -> float | None:
    """A latency median at `nodes`: the measured medians' line (none measured: None)."""
    points = [(run.nodes, value) for run in runs if (value := getattr(run, attribute)) is not None]
    return interpolate(points, nodes) if points else None


def node_counts(counts: Sequence[int]) -> str:
    """Node counts as labels show them: `1/2/4/8`."""
    return "/".join(str(count) for count in counts)


def _assumptions(
    throughput: Throughput,
    expected: Expectation,
    concurrency_per_node: int,
    latencies: bool,
    read: Sequence[Sequence[Measurement]],
) -> list[str]:
    """What the figures rest on, in words; `read`: the measurements each kind of figure reads."""
    assert throughput.match is not None and expected.basis is not None
    key, runs, nodes, counts = throughput.configuration, throughput.match.runs, expected.nodes, expected.measured_nodes
    read_once = list({item.id: item for figure_read in read for item in figure_read}.values())
    assumptions = [
        _source_line(key, throughput.match, read_once),
        *_release_lines(key, read_once),
        _load_line(key, concurrency_per_node),
        {
            "measured": f"total tok/s measured at {nodes} node(s)",
            "interpolated": f"total tok/s per node interpolated between the measured {node_counts(counts)} node(s)",
            "extrapolated": f"total tok/s extrapolated: {nodes} node(s) is outside the measured "
            f"{node_counts(counts)}; the nearest measured per-node figure is held (no further scaling loss "
            "assumed, an optimistic bound)",
        }[expected.basis],
    ]
    if expected.output_tokens_per_second is not None and all(run.output_tokens_per_second is None for run in runs):
        assert isinstance(key.input_tokens, int) and isinstance(key.output_tokens, int)
        assumptions.append(
            f"output tok/s = total x {key.output_tokens}/{key.input_tokens + key.output_tokens} (the load's mean "
            "output share; outputs run to their length)"
        )
    if expected.counted_requests_per_second is not None:
        assumptions.append(_completion_caveat(key, runs, nodes))
    if latencies:
        assumptions.append(
            "TPOT/TTFT: medians of the nearest measured node counts, under the full load; no other "
            "percentile (p90, p99) was measured, so the tail latency is not known"
        )
    return assumptions


def _completion_caveat(key: Configuration, runs: Sequence[Run], nodes: int) -> str:
    """Completed req/s are the benchmark's count; where they disagree with the measured tok/s and
    the load's mean request length, say by how much a run of exactly this load would differ. Judged on
    the runs the figure at `nodes` reads: a recorded run whose count matches its tok/s is not averaged
    with the write-up's runs that counted a third more (that blend is true of no run)."""
    reporting = [run for run in runs if run.requests_per_second is not None]
    counted = [reporting[index] for index in runs_read([run.nodes for run in reporting], nodes)]
    line = f"completed req/s as the benchmark counted them at {node_counts([run.nodes for run in counted])} node(s)"
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
        f"at {node_counts([run.nodes for run in counted])} node(s), ~{ratio * tokens:,.0f} tokens per request"
    )


def measurements_read(
    throughput: Throughput, nodes: int, figure: str = "total_tokens_per_second"
) -> tuple[Measurement, ...]:
    """The measurements whose runs a figure at `nodes` reads (`runs_read`, of the runs that have it).
    Another node count may read runs of another measurement (the newest run of each count is kept)."""
    if throughput.match is None:
        return ()
    having = [
        (run.nodes, source)
        for run, source in zip(throughput.match.runs, throughput.match.run_sources, strict=True)
        if getattr(run, figure) is not None
    ]
    if not having:
        return ()
    read = runs_read([count for count, _ in having], nodes)
    by_id = {having[index][1].id: having[index][1] for index in read}
    return tuple(by_id.values())


def differences(mine: Configuration, other: Configuration) -> list[str]:
    """The camelCase names of the fields where two configurations differ (an unknown differs from anything)."""
    ours, theirs = mine.model_dump(mode="json"), other.model_dump(mode="json")
    aliases = {name: field.alias or name for name, field in Configuration.model_fields.items()}
    return [aliases[name] for name in ours if ours[name] != theirs[name] or UNKNOWN in (ours[name], theirs[name])]


def is_the_repositorys(path: Path) -> bool:
    """Whether `path` is the repository's measurements file (by where it resolves to; unreadable: no)."""
    try:
        return path.resolve() == measurement_file.MEASUREMENTS_FILE.resolve()
    except OSError:
        return False


def measurements_file_name() -> str:
    """The measurements file the figures come from, as a user finds it: the repository's by its path in
    the repository, another (`--measurements FILE`) by its file name (plan.md goes into pull requests: a
    path on the machine that rendered it would name its folders and user, and open for no reader)."""
    path = in_effect()
    return REPOSITORY_MEASUREMENTS if is_the_repositorys(path) else f"the given file {path.name}"


def _source_line(key: Configuration, match: Match, read: Sequence[Measurement]) -> str:
    ids = ", ".join(item.id for item in match.measurements)
    speculative = "no speculative decoding" if key.speculative == "off" else key.speculative.upper()
    return (
        f"measured: {ids} ({measurements_file_name()}), the configuration of this stack: profile "
        f"{key.profile}, vLLM {key.vllm_release}{_carried_over(key, read)}, DP {key.data_parallel_size} x TP "
        f"{key.tensor_parallel_size}"
        f"{' + EP' if key.expert_parallel is True else ''}, {speculative}, KV cache {key.kv_cache_dtype}, "
        f"max-model-len {key.max_model_len}, {key.routing} routing; source: "
        + "; ".join(dict.fromkeys(item.source for item in match.measurements))
    )


def _carried_over(key: Configuration, read: Sequence[Measurement]) -> str:
    releases = sorted({item.measured_release for item in read} - {key.vllm_release})
    return f" (the runs were on vLLM {'/'.join(releases)}, carried over: see below)" if releases else ""


def _release_lines(key: Configuration, read: Sequence[Measurement]) -> list[str]:
    release = key.vllm_release
    lines = []
    for item in read:
        if item.measured_release != release and release in RELEASES:
            lines.append(
                f"assumed, not measured: {item.id} ran on vLLM {item.measured_release}, and its figures are "
                f"taken for vLLM {release}, {RELEASES[release].why}; no run on {release} says what that "
                "does to throughput"
            )
    return lines


def _load_line(key: Configuration, concurrency_per_node: int) -> str:
    eos = ", outputs to full length (ignore EOS)" if key.ignore_eos is True else ""
    return (
        f"load: {key.dataset} prompts, input {key.input_tokens} / output {key.output_tokens} tokens (range ratio "
        f"{key.range_ratio}){eos}, unique prompts (0% prefix-cache hits), {concurrency_per_node:,} concurrent "
        f"requests per node, for a stack sized for prompts up to {key.max_prompt_tokens} and outputs up to "
        f"{key.max_output_tokens} tokens; other request shapes are not modelled"
    )


def _nearest(configuration: Configuration, measurements: Sequence[Measurement]) -> list[tuple[Measurement, list[str]]]:
    """The measurements of the same profile, with the fields where each differs, fewest first."""
    same_profile = [item for item in measurements if item.configuration.profile == configuration.profile]
    ranked = [(item, differences(item.configuration, configuration)) for item in same_profile]
    return sorted(ranked, key=lambda pair: len(pair[1]))


def _not_measured(key: Configuration, measurements: Sequence[Measurement]) -> NotMeasured:
    picker = f" through the picker {key.picker}" if key.picker else ""
    reason = (
        f"no measurement in {measurements_file_name()} is of this configuration (profile {key.profile}, "
        f"{key.model}, vLLM {key.vllm_release}, {key.routing} routing{picker}, and the engine and load settings)"
    )
    shown = []
    for measurement, differences in _nearest(key, measurements)[:NEAREST_SHOWN]:
        measured_picker, layout = measurement.configuration.picker, measurement.configuration.endpoint_per_rank
        named = [
            # A gateway run of another picker or layout: name the one that was measured.
            f"picker (measured: {measured_picker})"
            if field == "picker" and isinstance(measured_picker, str) and key.picker
            else f"endpointPerRank (measured: {str(layout).lower()})"
            if field == "endpointPerRank" and isinstance(layout, bool) and key.endpoint_per_rank is not None
            else field
            for field in differences
        ]
        listed = ", ".join(named[:FIELDS_SHOWN]) + (", ..." if len(named) > FIELDS_SHOWN else "")
        shown.append(f"{measurement.id} differs in {listed}")
    how = HOW_TO_MEASURE + (HOW_TO_MEASURE_GATEWAY if key.routing == RoutingMode.gateway.value else "")
    return NotMeasured(reason=reason, how_to_measure=how, nearest=tuple(shown))


@dataclass(frozen=True)
class ExplainedSizing(Sizing):
    """A count sized from a goal, with what it rests on beyond a measured figure: an extrapolation,
    the completion caveat."""

    sized: str = "the ceiling: capacity.nodes, every pod up; an autoscaler or schedule runs fewer"
    notes: tuple[str, ...] = ()
    # The capacity source the ComputeClass tries first (capacity.sources[0]): what runs whenever it has room.
    tried_first: str = ""

    @property
    def unit(self) -> str:
        return GOAL_UNITS[self.goal]

    def budget_line(self) -> str:
        """Which sources the budget holds for, and whether it holds for the one GKE tries first."""
        budget, within = f"USD {self.budget_per_hour:,.2f}/h (all in)", ", ".join(self.sources_within_budget)
        if self.tried_first in self.sources_within_budget:
            return f"Within the budget of {budget}: {within}; a fallback to any other source costs more."
        return (
            f"Over the budget of {budget} whenever GKE gets its first choice, {self.tried_first} (capacity.sources "
            f"tries it first): only {within}, a fallback, is within it; put it first or raise the budget."
        )


def explain_sizing(config: StackConfig, sizing: Sizing, measurements: Sequence[Measurement]) -> ExplainedSizing:
    met = expect(config, sizing.nodes, measurements)
    notes = _sizing_notes(sizing.goal, met, _request_tokens(config))
    return ExplainedSizing(**vars(sizing), notes=notes, tried_first=config.capacity.sources[0].label)


def _request_tokens(config: StackConfig) -> int | None:
    """The load's mean request (input + output tokens) when outputs run to their length, else None."""
    key = configuration_of(config, nodes=config.capacity.nodes)
    if key.ignore_eos is True and isinstance(key.input_tokens, int) and isinstance(key.output_tokens, int):
        return key.input_tokens + key.output_tokens
    return None


def _sizing_notes(goal: str, met: Expectation, request_tokens: int | None) -> tuple[str, ...]:
    """Where the chosen count rests on more than a measured figure: an extrapolation beyond the
    measured node counts, and for a req/s goal the rate it was sized at."""
    notes = []
    if met.basis == "extrapolated" and goal != "concurrentRequests":
        notes.append(
            f"{met.nodes} node(s) is outside the measured {'/'.join(str(count) for count in met.measured_nodes)}: "
            "the per-node figure is held there, an optimistic bound"
        )
    counted, total = met.counted_requests_per_second, met.total_tokens_per_second
    if goal == "requestsPerSecond" and request_tokens and counted is not None and total is not None:
        implied = total / request_tokens
        if implied < counted:
            notes.append(
                f"req/s sized at the measured tok/s over the load's mean request of {request_tokens:,} tokens "
                f"(~{implied:,.0f} req/s at {met.nodes} node(s)), below the benchmark's count of completions "
                f"(~{counted:,.0f}): the count meets the goal by both"
            )
    return tuple(notes)
