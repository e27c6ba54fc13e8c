"""The capacity planner against the write-up's tables, goal sizing and the cost of what runs (what a
render writes of it: tests/commands/render/test_capacity_report.py)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from commands.plan.capacity_plan import capacity_plan
from commands.render.plan_md import capacity_section
from common.sources import WRITEUP_URL
from stacks.capacity import measurements
from stacks.capacity.expectation import basis_at, expect, runs_read
from stacks.capacity.planner import SizingError, size
from stacks.config.capacity import TargetConfig
from stacks.config.routing import RoutingMode
from stacks.config.stack import StackConfig
from stacks.load.loader import InvalidConfig, validate
from tests.conftest import RenderStack
from tests.rendered import RenderedStack
from tests.variants import render_variant, stack_config, stack_settings

PUBLISHED_TOTAL = {1: 95_317, 2: 190_000, 4: 376_074, 8: 740_192, 12: 1_103_941}
PUBLISHED_GATEWAY = {2: 131_303, 4: 245_009, 8: 469_433}
PUBLISHED_REQUESTS_PER_SECOND = {1: 83, 2: 165, 4: 326, 8: 642}
TOLERANCE = 0.02


def write_up_runs() -> list[measurements.Measurement]:
    """The write-up's measurements in the repository's file (those citing it), and no other: the planner's
    arithmetic is checked on the published figures, which stay when a team records runs of its own."""
    return [item for item in measurements.load().measurements if WRITEUP_URL in item.source]


RUNS = write_up_runs()
# The Endpoint Picker the write-up's gateway runs used (the inferencepool chart v1.4.0).
MEASURED_PICKER = "registry.k8s.io/gateway-api-inference-extension/epp:v1.4.0"


def with_measured_picker(config: StackConfig) -> StackConfig:
    """A copy of a validated config that names the write-up's picker and its layout (one server for all ranks).
    No stack file can: that picker cannot read the config the stack declares (routing.gateway.eppImage refuses
    it), so only the planner's arithmetic for a measured gateway run is checked with it."""
    gateway = config.routing.gateway.model_copy(update={"epp_image": MEASURED_PICKER, "endpoint_per_rank": False})
    return config.model_copy(update={"routing": config.routing.model_copy(update={"gateway": gateway})})


def config_of(environment: str, **settings: Any) -> StackConfig:
    """The shipped stack file of an environment with some groups replaced; a goal replaces its node count."""
    raw = stack_settings(environment)
    if "target" in settings and "capacity" in raw:
        raw["capacity"] = {key: value for key, value in raw["capacity"].items() if key != "nodes"}
    return validate({**raw, **settings})


def clusterip(nodes: int) -> Any:
    return expect(config_of("prod"), nodes, RUNS, RoutingMode.clusterip)


@pytest.mark.parametrize(("nodes", "published"), sorted(PUBLISHED_TOTAL.items()))
def test_clusterip_throughput_is_the_scaling_table(nodes: int, published: int) -> None:
    expectation = clusterip(nodes)
    assert expectation.total_tokens_per_second == pytest.approx(published)
    assert expectation.basis == "measured"


@pytest.mark.parametrize(("nodes", "published"), sorted(PUBLISHED_GATEWAY.items()))
def test_gateway_throughput_is_the_gateway_runs(nodes: int, published: int) -> None:
    expectation = expect(with_measured_picker(config_of("prod")), nodes, RUNS, RoutingMode.gateway)
    assert expectation.total_tokens_per_second == pytest.approx(published)
    assert expectation.requests_per_second is None


@pytest.mark.parametrize(("nodes", "published"), sorted(PUBLISHED_REQUESTS_PER_SECOND.items()))
def test_requests_per_second_are_what_the_load_completes(nodes: int, published: int) -> None:
    """The write-up's count of completions implies ~1,152 tokens per request, not the load's 1,536: the
    row shows what a run of exactly this load completes (tok/s / 1,536), the count beside it."""
    expectation = clusterip(nodes)
    assert expectation.counted_requests_per_second == pytest.approx(published)
    assert expectation.total_tokens_per_second is not None
    assert expectation.requests_per_second == pytest.approx(expectation.total_tokens_per_second / 1536)
    assert expectation.requests_per_second < published
    assert expectation.concurrent_requests == 2000 * nodes


def test_between_and_beyond_the_measured_counts() -> None:
    three = clusterip(3)
    assert three.basis == "interpolated"
    assert 3 * 94_019 < (three.total_tokens_per_second or 0) < 3 * 95_000
    sixteen = clusterip(16)
    assert sixteen.basis == "extrapolated"
    assert sixteen.total_tokens_per_second == pytest.approx(16 * 1_103_941 / 12), "the nearest per-node figure holds"
    one_gateway = expect(with_measured_picker(config_of("prod")), 1, RUNS, RoutingMode.gateway)
    assert one_gateway.basis == "extrapolated"
    assert one_gateway.total_tokens_per_second == pytest.approx(131_303 / 2)


def test_a_gateway_with_another_picker_is_not_measured() -> None:
    expectation = expect(stack_config("staging"), 4, RUNS)
    assert expectation.total_tokens_per_second is None
    assert expectation.null_reasons["total_tokens_per_second"] == "not measured"
    measured = expect(with_measured_picker(stack_config("staging")), 4, RUNS)
    assert measured.total_tokens_per_second == 245_009


def test_the_write_up_s_gateway_runs_do_not_stand_for_the_per_rank_layout() -> None:
    """A platform review: the measured configuration left routing.gateway.endpointPerRank out, so the write-up's one
    server for all ranks was printed as measured for a `vllm serve` per rank (and a report of one for the other)."""
    one_server = with_measured_picker(stack_config("staging"))
    gateway = one_server.routing.gateway.model_copy(update={"endpoint_per_rank": True})
    per_rank = one_server.model_copy(update={"routing": one_server.routing.model_copy(update={"gateway": gateway})})
    assert expect(one_server, 4, RUNS).total_tokens_per_second == 245_009
    assert expect(per_rank, 4, RUNS).null_reasons["total_tokens_per_second"] == "not measured"
    assert measurements.configuration_of(per_rank).endpoint_per_rank is True
    assert (
        measurements.configuration_of(stack_config("dev")).endpoint_per_rank is None
    )  # ClusterIP routing has no such layout


NOT_MEASURED: dict[str, dict[str, Any]] = {
    "tensor parallel 8": {"engine": {"dataParallelSize": 1, "tensorParallelSize": 8}},
    "another release": {"engine": {"image": "vllm/vllm-openai:v0.33.0"}},
    "a longer context": {"engine": {"maxModelLen": 4096}},
    "another scheduler size": {"engine": {"maxNumSeqs": 4096}},
    "an extra flag": {"engine": {"extraArgs": ["--seed=1"]}},
    "another load": {"benchmark": {"inputLen": 2048}},
    "more concurrency": {"workload": {"concurrencyPerNode": 3000}},
    "other request sizes": {"workload": {"maxPromptTokens": 256, "maxOutputTokens": 2048}},
    "longer outputs only": {"workload": {"maxOutputTokens": 1024}},
    "MTP-3": {"engine": {"speculative": {"numSpeculativeTokens": 3}}},
    "another checkpoint": {
        "weights": {"model": "meta-llama/Llama-3.1-70B-Instruct", "sizeGib": 400},
        "engine": {"speculative": None, "mambaCacheMode": None, "mambaBlockSize": None, "reasoningParser": None},
    },
    "the 35B-A3B profile": {"profile": "qwen3.5-35b-a3b-fp8"},
    "the 122B-A10B profile": {"profile": "qwen3.5-122b-a10b-fp8"},
    "the 397B NVFP4 profile": {"profile": "qwen3.5-397b-a17b-nvfp4"},
    "the 397B NVFP4 profile in the write-up's layout": {
        "profile": "qwen3.5-397b-a17b-nvfp4",
        "engine": {"dataParallelSize": 1, "tensorParallelSize": 8},
    },
}


@pytest.mark.parametrize("change", sorted(NOT_MEASURED))
def test_a_stack_off_the_measured_configuration_gets_no_figure(change: str) -> None:
    config = config_of("dev", **NOT_MEASURED[change])
    capacity = capacity_plan("dev", config)
    expectation = capacity.expectation
    figures = (
        expectation.total_tokens_per_second,
        expectation.output_tokens_per_second,
        expectation.requests_per_second,
        expectation.tpot_median_ms,
        expectation.ttft_median_ms,
    )
    assert figures == (None,) * 5
    assert expectation.not_measured is not None
    assert "bench-compare" in expectation.not_measured.how_to_measure
    assert "benchmark.enabled: true" in expectation.not_measured.how_to_measure
    assert expectation.null_reasons["total_tokens_per_second"] == "not measured"
    assert all(item.usd_per_million_tokens_full_load is None for source in capacity.sources for item in source.costs)


def test_the_write_ups_other_rows_count_where_they_match() -> None:
    """Its runs without MTP and with MTP-2 were at gpu-mem 0.95 (its table), not the recipe's 0.92."""
    at_095 = {"gpuMemoryUtilization": 0.95}
    without_mtp = expect(config_of("dev", engine={"speculative": None, **at_095}), 1, RUNS)
    assert without_mtp.total_tokens_per_second == pytest.approx(66_021)
    mtp_two = expect(config_of("dev", engine={"speculative": {"numSpeculativeTokens": 2}, **at_095}), 1, RUNS)
    assert mtp_two.total_tokens_per_second == pytest.approx(90_567)
    mtp_one = expect(config_of("dev", engine=at_095), 1, RUNS)
    assert mtp_one.total_tokens_per_second == pytest.approx(95_391)
    for engine in ({"speculative": None}, {"speculative": {"numSpeculativeTokens": 2}}):
        at_092 = expect(config_of("dev", engine=engine), 1, RUNS)
        assert at_092.total_tokens_per_second is None, "a configuration never run is not measured"
    recorded_only = {item.id: item for item in RUNS}
    assert not recorded_only["writeup-2026-03-tp8-start"].configuration.complete
    assert not recorded_only["writeup-2026-03-397b-nvfp4-tp8-ep"].configuration.complete


def test_a_reservation_is_priced_on_demand_and_with_both_commitments() -> None:
    config = config_of("prod", capacity={"sources": [{"type": "reservation", "name": "a4"}, {"type": "spot"}]})
    sources = capacity_plan("prod", config).sources
    assert [cost_.pricing for cost_ in sources[0].costs] == ["onDemand", "commit1y", "commit3y"]
    assert [cost_.pricing for cost_ in sources[1].costs] == ["spot"]
    on_demand, one_year, three_year = (cost_.node_per_hour for cost_ in sources[0].costs)
    assert three_year < one_year < on_demand


def test_free_tier_credit_offsets_the_cluster_fee() -> None:
    config = config_of("dev", pricing={"clusterFreeTier": True})
    assert capacity_plan("dev", config).sources[0].costs[0].cluster_fee_per_hour == 0


# ---------------------------------------------------------------- the cost of what runs


@pytest.mark.parametrize(
    ("environment", "target", "nodes"),
    [
        ("dev", {"totalTokensPerSecond": 500_000}, 6),
        ("dev", {"outputTokensPerSecond": 100_000}, 4),
        ("dev", {"concurrentRequests": 10_000}, 5),
        ("dev", {"requestsPerSecond": 300}, 5),  # 326 counted at 4 nodes, but ~245 at the load
    ],
)
def test_goal_sizing_picks_the_smallest_node_count(environment: str, target: dict[str, float], nodes: int) -> None:
    config = config_of(environment, target=target)
    assert config.nodes == nodes
    assert config.target is not None
    sizing = size(config, config.target)
    assert sizing.nodes == nodes
    below, at = expect(config, nodes - 1, RUNS), expect(config, nodes, RUNS)
    goal, value = config.target.goal()
    figure = {
        "totalTokensPerSecond": "total_tokens_per_second",
        "outputTokensPerSecond": "output_tokens_per_second",
        "concurrentRequests": "concurrent_requests",
        "requestsPerSecond": "requests_per_second",
    }[goal]
    if goal == "requestsPerSecond":
        assert below.requests_per_second and below.total_tokens_per_second and at.requests_per_second
        assert at.total_tokens_per_second
        # the lower of the benchmark's count and the measured tok/s over the load's 1,536-token request
        assert min(below.requests_per_second, below.total_tokens_per_second / 1536) < value
        assert value <= min(at.requests_per_second, at.total_tokens_per_second / 1536)
        assert sizing.achieved == pytest.approx(at.total_tokens_per_second / 1536)
    else:
        assert getattr(below, figure) < value <= getattr(at, figure)
        assert sizing.achieved == getattr(at, figure)


@pytest.mark.parametrize(("goal", "nodes"), [(240_000, 4), (250_000, 5)])
def test_goal_sizing_through_a_measured_gateway(goal: int, nodes: int) -> None:
    config = with_measured_picker(stack_config("staging"))
    assert size(config, TargetConfig.model_validate({"totalTokensPerSecond": goal})).nodes == nodes
    with pytest.raises(SizingError, match=re.escape("(not reported by the measurement")):
        size(config, TargetConfig.model_validate({"requestsPerSecond": 300}))


def test_a_gateway_goal_with_the_shipped_picker_is_refused() -> None:
    """The default picker (llm-d-router) has no measurement: no throughput goal can size it. A newcomer found the
    clusterip form of staging measured only by switching it by hand: the refusal now says so."""
    refused = "target.totalTokensPerSecond: cannot size without a measurement"
    with pytest.raises(InvalidConfig, match=re.escape(refused)) as error:
        config_of("staging", target={"totalTokensPerSecond": 240_000})
    assert str(error.value).endswith("; this stack with routing.mode clusterip is measured and sizes from it")
    with pytest.raises(InvalidConfig, match=re.escape(refused)) as unmeasured:
        config_of("staging", target={"totalTokensPerSecond": 240_000}, engine={"maxNumSeqs": 1000})
    assert "routing.mode clusterip" not in str(unmeasured.value), "measured in neither routing: no such hint"


def test_budget_names_the_capacity_sources_that_meet_it() -> None:
    config = config_of("prod", target={"totalTokensPerSecond": 700_000, "budgetPerHour": 500})
    assert config.target is not None
    sizing = size(config, config.target)
    assert sizing.nodes == 8
    assert sizing.sources_within_budget == ("Spot",)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (
            {"target": {"totalTokensPerSecond": 5e7, "maxNodes": 16}},
            "invalid stack config: target.totalTokensPerSecond: 50,000,000 total tok/s is out of reach within "
            "target.maxNodes 16",
        ),
        (
            {"target": {"totalTokensPerSecond": 700_000, "budgetPerHour": 100}},
            "invalid stack config: target.budgetPerHour: USD 100.00/h is below the cheapest capacity source for the "
            "8 node(s) the goal needs (Spot, USD 287.48/h all in); it affords 2 node(s) there: raise the budget or "
            "lower the goal to what 2 node(s) give",
        ),
        (
            {"target": {"totalTokensPerSecond": 700_000, "budgetPerHour": 20}},
            "invalid stack config: target.budgetPerHour: USD 20.00/h is below the cheapest capacity source for the "
            "8 node(s) the goal needs (Spot, USD 287.48/h all in); it affords no node there (1 costs USD 36.38/h): "
            "raise the budget",
        ),
        (
            {"target": {"totalTokensPerSecond": 700_000}, "capacity": {"nodes": 3}},
            "invalid stack config: capacity.nodes and target are mutually exclusive",
        ),
        ({"target": {}}, "invalid stack config: target: give exactly one goal"),
        (
            {"target": {"concurrentRequests": 100, "requestsPerSecond": 3}},
            "invalid stack config: target: give exactly one goal",
        ),
        (
            {"target": {"tokens": 1}},
            "invalid stack config: target.tokens: unknown key; allowed keys here: budgetPerHour",
        ),
        (
            {
                "target": {"totalTokensPerSecond": 100_000},
                "profile": "qwen3.5-35b-a3b-fp8",
                "engine": {"imageDigest": "sha256:" + "ab" * 32},
            },
            "invalid stack config: target.totalTokensPerSecond: cannot size without a measurement (not measured "
            "for profile qwen3.5-35b-a3b-fp8",
        ),
        (
            {"routing": {"mode": "gateway", "gateway": {"eppImage": MEASURED_PICKER}}},
            f"invalid stack config: routing.gateway.eppImage: '{MEASURED_PICKER}' is the "
            "gateway-api-inference-extension picker, which reads an EndpointPickerConfig of "
            "inference.networking.x-k8s.io/v1alpha1",
        ),
        (
            {"target": {"totalTokensPerSecond": 300_000}, "routing": {"mode": "gateway"}},
            "invalid stack config: target.totalTokensPerSecond: cannot size without a measurement (not measured for "
            "profile qwen3.5-27b-fp8",
        ),
    ],
)
def test_unreachable_unmeasured_or_ambiguous_goals_are_one_line_errors(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidConfig) as error:
        config_of("prod", **settings)
    assert str(error.value).startswith(message)
    assert "\n" not in str(error.value)


def test_concurrency_goals_need_no_measurement() -> None:
    config = config_of("dev", profile="qwen3.5-397b-a17b-nvfp4", target={"concurrentRequests": 4_000})
    assert config.nodes == 4, "1,024 concurrent requests per node for the 397B profile"


def test_a_goal_replaces_the_presets_node_count() -> None:
    config = config_of("staging", target={"concurrentRequests": 4_000})
    assert config.nodes == 2, "the staging preset's 4 nodes do not apply to a goal-sized stack"


# ---------------------------------------------------------------- render


def test_an_extrapolated_figure_claims_no_scaling_efficiency() -> None:
    section = capacity_section(
        capacity_plan(
            "dev", config_of("dev", capacity={"nodes": 3}, engine={"speculative": None, "gpuMemoryUtilization": 0.95})
        ),
        "c",
    )
    assert (
        "| total tok/s (input + output) | 198,063 | 66,021 per node, extrapolated: no run at 3 node(s); the nearest "
        "per-node figure of the runs at 1 node(s) held, scaling not measured here (runs on vLLM 0.18.0, carried "
        "over to 0.19.0: assumed, not measured on 0.19.0) |"
    ) in section
    assert "scaling efficiency" not in section


def test_goal_sized_stack_deploys_the_planned_node_count(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    rendered = render_variant("dev-goal", render_stack, tmp_path_factory)
    (deployment,) = rendered.kind("Deployment")
    assert deployment["spec"]["replicas"] == 6
    assert "6 (the ceiling), sized by the planner from target.totalTokensPerSecond 500,000" in rendered.plan
    assert "It sized the ceiling" in rendered.plan


def test_a_goal_is_answered_in_its_own_unit() -> None:
    config = config_of("dev", target={"requestsPerSecond": 500})
    section = "\n".join(capacity_section(capacity_plan("dev", config), "capacity.svg"))
    assert "Sized from target.requestsPerSecond 500 req/s: 9 node(s), the smallest count within target.maxNodes" in (
        section
    )
    assert "(541 req/s expected there)" in section
    tokens = config_of("dev", target={"totalTokensPerSecond": 500_000})
    assert re.search(
        r"\(5\d\d,\d{3} total tok/s expected there\)", "\n".join(capacity_section(capacity_plan("dev", tokens), "c"))
    )


def test_an_existing_cluster_pays_no_cluster_fee() -> None:
    existing = config_of("dev", cluster={"existing": True, "name": "platform-autopilot"})
    planned = capacity_plan("dev", existing)
    assert {item.cluster_fee_per_hour for source in planned.sources for item in source.costs} == {0.0}
    assert any("no cluster fee" in note for note in planned.pricing_notes)
    # and the line that says what a month adds up does not name the fee it just left out
    assert not any("cluster fee for all" in note for note in planned.pricing_notes)
    own = capacity_plan("dev", config_of("dev"))
    assert {item.cluster_fee_per_hour for source in own.sources for item in source.costs} == {0.10}
    assert any("cluster fee for all" in note for note in own.pricing_notes)


def test_cost_is_given_per_million_total_and_output_tokens(dev: RenderedStack) -> None:
    assert "per M total tokens (input + output), nodes only" in dev.plan
    assert "per M output tokens, all in" in dev.plan
    planned = capacity_plan("dev", config_of("dev"))
    (spot,) = planned.sources[0].costs
    assert spot.usd_per_million_tokens_full_load is not None and spot.usd_per_million_output_tokens_full_load
    assert spot.usd_per_million_output_tokens_full_load == pytest.approx(3 * spot.usd_per_million_tokens_full_load)


def test_no_latency_percentile_beyond_the_median_is_claimed(dev: RenderedStack) -> None:
    assert "no other percentile (p90, p99) was measured, so the tail latency is not known" in dev.plan
    assert "| TPOT median (no p90/p99 measured) | 44 ms |" in dev.plan
    assert "| TTFT median (no p90/p99 measured) | 8.1 s |" in dev.plan


def test_req_s_at_a_node_count_never_counted_is_labelled_extrapolated(prod: RenderedStack) -> None:
    assert (
        "| completed req/s | 719 | what this load completes: the total tok/s (measured) over the load's mean "
        "request (see Assumptions); the benchmark counted 963, extrapolated: no run at 12 node(s) counted "
        "requests (counted at 1/2/4/8 node(s))"
    ) in prod.plan


def test_a_row_measured_on_another_release_says_it_is_carried_over(dev: RenderedStack) -> None:
    """The recipe's runs were on vLLM 0.18.0 and the stack runs 0.19.0: no row calls them plainly
    measured; each says carried over, an assumption."""
    carried = "on vLLM 0.18.0, carried over to 0.19.0: assumed, not measured on 0.19.0"
    rows = [
        line for line in dev.plan.splitlines() if line.startswith(("| total tok/s", "| completed", "| TPOT", "| TTFT"))
    ]
    assert len(rows) == 4
    assert all(carried in row for row in rows), rows
    assert "| 95,317 per node (measured)" not in dev.plan


@pytest.mark.parametrize("nodes", [3, 16])
def test_every_row_off_a_measured_node_count_says_how_it_was_got(nodes: int) -> None:
    config = config_of("dev", capacity={"nodes": nodes})
    section = "\n".join(capacity_section(capacity_plan("dev", config), "c.svg"))
    basis = "interpolated" if nodes == 3 else "extrapolated"
    rows = [line for line in section.splitlines() if line.startswith(("| total tok/s", "| TPOT", "| TTFT"))]
    assert all(basis in row for row in rows), rows
    if basis == "extrapolated":
        assert "extrapolated as the total is" in section
        assert f"per million tokens at the total tok/s above, {basis}" in section


def test_every_price_cites_a_public_page_and_a_derived_one_says_how() -> None:
    """Each price note names where it comes from by title and URL; a derived price says from what and
    how (x (1 - discount)); a price the stack sets is named as the stack's, not as the write-up's."""
    notes = capacity_plan("dev", config_of("dev")).pricing_notes
    for note in notes[:-1]:
        assert "https://" in note or note.startswith("no cluster fee"), note
    derived = [note for note in notes if "derived, not verified" in note]
    assert len(derived) == 3
    assert all("(1 - " in note and "cloud.google.com" in note for note in derived), derived
    own = capacity_plan(
        "dev", config_of("dev", pricing={"spotPerNodeHour": 40.0, "flexStartPerNodeHour": 50.0})
    ).pricing_notes
    assert "Spot per A4 node-hour USD 40.00: set by this stack (pricing.spotPerNodeHour)" in own
    assert "Flex-start per node-hour USD 50.00: set by this stack (pricing.flexStartPerNodeHour)" in own
    assert not any("write-up" in note and note.startswith("Spot") for note in own)


def test_the_write_ups_pod_figure_says_it_is_carried_over_to_the_stacks_release(dev: RenderedStack) -> None:
    from common.sources import WRITEUP_VLLM_RELEASE

    pod = next(line for line in dev.plan.splitlines() if line.startswith("| pod: scheduled to ready |"))
    assert f"on vLLM {WRITEUP_VLLM_RELEASE}; carried over to 0.19.0: assumed, not measured on 0.19.0" in pod
    cited = [item for item in RUNS if WRITEUP_URL in item.source]
    assert cited and {item.measured_release for item in cited} == {WRITEUP_VLLM_RELEASE}


@pytest.mark.parametrize(
    ("nodes", "read", "basis"),
    [
        (1, (0,), "extrapolated"),
        (2, (0,), "measured"),
        (6, (1, 2), "interpolated"),
        (12, (3,), "measured"),
        (16, (3,), "extrapolated"),
    ],
)
def test_a_figure_reads_the_run_at_its_node_count_else_the_two_around_else_the_nearest(
    nodes: int, read: tuple[int, ...], basis: str
) -> None:
    counts = [2, 4, 8, 12]
    assert runs_read(counts, nodes) == read and basis_at(counts, nodes) == basis


@pytest.mark.parametrize("goal", ["totalTokensPerSecond", "outputTokensPerSecond", "concurrentRequests"])
def test_an_unreachable_goal_names_each_figure_once(goal: str) -> None:
    """A newcomer: a goal out of reach gave "1,471,921 total tok/s there as sized, 1,471,921 total tok/s"."""
    with pytest.raises(InvalidConfig) as error:
        config_of("prod", target={goal: 10_000_000, "maxNodes": 16})
    figures = str(error.value).split("routing gives ")[1].split(")")[0].split(", ")
    units = [figure.split(" ", 1)[1].removesuffix(" there as sized") for figure in figures]
    assert len(units) == len(set(units)) and "concurrent requests" in units and "total tok/s" in units, figures
