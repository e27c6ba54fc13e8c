"""The capacity report a render writes: plan.md's capacity and cost sections, capacity.json and the
capacity chart (commands/render/capacity_report.py, plan_md.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from commands.plan.capacity_plan import capacity_plan
from commands.render.capacity_report import MODE_COLORS, chart_svg, lighter, nice_ticks, node_ticks
from common.sources import WRITEUP_URL
from tests.conftest import RenderStack
from tests.rendered import RenderedStack
from tests.variants import render_variant, stack_config


def test_plan_md_names_the_measurement_of_each_stack(dev: RenderedStack, staging: RenderedStack) -> None:
    assert "| total tok/s (input + output) | 95,317 |" in dev.plan
    assert "writeup-2026-03-dp8-mtp1-clusterip" in dev.plan
    assert "| total tok/s (input + output) | not measured |" in staging.plan, "its picker is not the measured one"
    assert "nearest: writeup-2026-03-dp8-mtp1-gateway differs in picker" in staging.plan
    assert "the published engine recipe" not in dev.plan


def test_plan_md_says_what_all_in_leaves_out(staging: RenderedStack) -> None:
    """A newcomer took staging's "all in" 144 USD/h for the whole bill: the gateway's picker pods and load balancer,
    Cloud NAT and the rest were named only in a preview's changes.md."""
    table_end = staging.plan.index("| Spot | Spot |")
    said = staging.plan.index("All in: the A4 (B200) nodes for the hours they run")
    assert table_end < said < staging.plan.index("Prices:")
    assert (
        "Not priced, though Google Cloud bills those the stack has: the gateway's Endpoint Picker pods" in staging.plan
    )


def test_plan_md_shows_the_cost_of_the_hours_that_run(dev: RenderedStack, staging: RenderedStack) -> None:
    assert "Running hours: 245 node-hours a month (56.3 a week)" in dev.plan
    assert "Running hours: 245..979 node-hours a month (56.3..225.3 a week)" in staging.plan
    assert "At its floor of 1 pod(s): total tok/s not measured, 2,000 concurrent requests." in staging.plan
    assert re.search(r"\| 144\.00 \| [0-9,]+\.\.[0-9,]+ \|", staging.plan), "a min..max monthly range"


def test_plan_md_shows_every_price_with_its_source_and_durations_in_days(prod: RenderedStack) -> None:
    assert "Flex-start (nodes live at most 7 days)" in prod.plan
    assert "604800" not in prod.plan
    for note in (WRITEUP_URL, "derived, not verified", "Cluster management fee and free tier", "730 h"):
        assert note in prod.plan
    assert "[chart](capacity.svg)" in prod.plan


def test_capacity_json_holds_every_source_and_the_chart_series(prod: RenderedStack) -> None:
    capacity = json.loads((prod.directory / "capacity.json").read_text())
    assert capacity["nodes"] == 12
    assert capacity["profile"] == "qwen3.5-27b-fp8"
    assert [source["type"] for source in capacity["sources"]] == ["flexStart", "spot"]
    spot = capacity["sources"][1]["costs"][0]
    assert spot["nodes_per_hour"] == pytest.approx(391.32)
    assert set(capacity["chart"]["modes"]) == {"clusterip", "gateway"}
    assert capacity["expectation"]["total_tokens_per_second"] == pytest.approx(1_103_941)
    assert capacity["expectation"]["measurements"][0]["id"] == "writeup-2026-03-dp8-mtp1-clusterip"
    assert capacity["chart"]["modes"]["clusterip"]["basis"][:2] == ["measured", "measured"]


def test_capacity_json_of_an_unmeasured_stack_has_nulls_with_reasons(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    rendered = render_variant("dev-engine", render_stack, tmp_path_factory)
    expectation = json.loads((rendered.directory / "capacity.json").read_text())["expectation"]
    assert expectation["total_tokens_per_second"] is None
    assert expectation["null_reasons"]["total_tokens_per_second"] == "not measured"
    assert "maxNumSeqs" in expectation["not_measured"]["nearest"][0]
    assert "**Not measured**" in rendered.plan
    assert "| total tok/s (input + output) | not measured |" in rendered.plan
    # the concurrency is the stack's setting, not a load this configuration was measured to serve (a review)
    assert "x workload.concurrencyPerNode, a setting: the clients the stack sends" in rendered.plan
    svg = (rendered.directory / "capacity.svg").read_text()
    assert "its throughput is not measured" in svg


def test_chart_is_byte_identical_without_a_date_with_round_labels(prod: RenderedStack, tmp_path: Path) -> None:
    rendered = (prod.directory / "capacity.svg").read_bytes()
    assert rendered.startswith(b"<?xml") and b"<svg" in rendered
    assert b"Generated with pygal" not in rendered
    assert not re.search(rb"20\d\d-\d\d-\d\d", rendered), "no date inside the SVG"
    assert b"this stack: 12 node(s), 1,103,941 tok/s" in rendered
    assert b"ClusterIP: 1-12 nodes, measured and interpolated" in rendered
    assert b"ClusterIP: extrapolated" in rendered
    measured, extrapolated = MODE_COLORS["clusterip"], lighter(MODE_COLORS["clusterip"])
    assert extrapolated != measured and extrapolated.encode() in rendered, "its own legend swatch, not the measured's"
    assert b"Inference Gateway:" not in rendered, "the gateway runs were measured with another picker"
    assert b"kozea.github.io" not in rendered, "no script is fetched from the web"
    labels = re.findall(rb'<text x="[^"]+" y="[^"]+" class="(?:major)?">([^<]+)</text>', rendered)
    assert labels and all(len(label) <= 5 for label in labels), "axis labels are round numbers"
    assert chart_svg(stack_config("prod"), capacity_plan("prod", stack_config("prod"))).encode() == rendered


def test_ticks_are_round() -> None:
    assert nice_ticks(1.84e6 / 1e6) == [0, 0.5, 1.0, 1.5, 2.0]
    assert nice_ticks(0.22, 4) == [0, 0.1, 0.2, 0.3, 0.4]
    assert nice_ticks(576) == [0, 200, 400, 600]
    assert node_ticks(18) == [0, 4, 8, 12, 16, 20]
    assert node_ticks(16) == list(range(0, 17, 2))
