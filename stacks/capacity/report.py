"""The planner's files in a render: `capacity.json` and the `capacity.svg` chart plan.md links.

The chart is drawn with pygal (pure-Python SVG charts, ~0.1 s to import; matplotlib cost ~2 s of
CPU to import here, close to the whole Pulumi SDK), imported only when a chart is drawn. The SVG
is byte-identical between renders: pygal's per-chart uuid is fixed and no script is linked.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from stacks.capacity.planner import SCALING, CapacityPlan, budget_pricing, cost, expect, plan, storage_of
from stacks.config.capacity import MAX_NODES
from stacks.config.routing import RoutingMode
from stacks.config.stack import StackConfig

CHART_FILE = "capacity.svg"

CAPACITY_FILE = "capacity.json"
CHART_MIN_NODES = 16
ROUTING_LABELS = {RoutingMode.clusterip: "ClusterIP", RoutingMode.gateway: "Inference Gateway"}


def chart_node_counts(nodes: int) -> list[int]:
    return list(range(1, min(MAX_NODES, max(CHART_MIN_NODES, nodes + nodes // 2)) + 1))


def chart_series(config: StackConfig, nodes: int) -> dict[str, Any]:
    """The numbers the chart draws: per routing mode, total tok/s and all-in USD per million tokens
    at full load with the first capacity source's pricing, by node count."""
    first = config.capacity.sources[0]
    kind = budget_pricing(first, config.pricing)
    storage = storage_of(config)
    counts = chart_node_counts(nodes)
    series: dict[str, Any] = {"nodes": counts, "pricing": kind, "modes": {}}
    for mode in RoutingMode:
        totals = [expect(count, mode, config.workload.concurrency_per_node).total_tokens_per_second for count in counts]
        per_million = [
            cost(kind, count, total, storage, config.pricing).usd_per_million_tokens_full_load
            for count, total in zip(counts, totals, strict=True)
        ]
        series["modes"][mode.value] = {"totalTokensPerSecond": totals, "usdPerMillionTokens": per_million}
    return series


def write_chart(path: Path, config: StackConfig, capacity: CapacityPlan) -> None:
    path.write_text(chart_svg(config, capacity), encoding="utf-8")


def chart_svg(config: StackConfig, capacity: CapacityPlan) -> str:
    return _svg(capacity, chart_series(config, capacity.nodes))


def _svg(capacity: CapacityPlan, series: dict[str, Any]) -> str:
    chosen = capacity.expectation
    return _draw_chart(capacity.stack, json.dumps(series), chosen.nodes, chosen.total_tokens_per_second, chosen.routing)


@functools.lru_cache(maxsize=16)  # variants of a stack that leave the numbers alone draw the same chart
def _draw_chart(
    stack: str, series_json: str, chosen_nodes: int, chosen_tokens_per_second: float, chosen_routing: str
) -> str:
    import pygal

    series = json.loads(series_json)
    counts = series["nodes"]
    chart = pygal.XY(
        title=f"Stack {stack}: throughput and cost by node count",
        x_title="A4 nodes (8x B200 each)",
        y_title="expected total tok/s (millions)",
        width=900,
        height=520,
        legend_at_bottom=True,
        legend_at_bottom_columns=2,
        truncate_legend=-1,
        include_x_axis=True,
        xrange=(0, counts[-1]),
        js=[],  # no script fetched from the web: the SVG stands alone
    )
    # pygal names every chart with a fresh uuid4; a fixed one keeps two renders byte-identical
    chart.uuid = "capacity"
    for mode in RoutingMode:
        label = ROUTING_LABELS[mode]
        values = series["modes"][mode.value]
        chart.add(
            f"{label}: total tok/s (millions)",
            [(count, value / 1e6) for count, value in zip(counts, values["totalTokensPerSecond"], strict=True)],
            show_dots=False,
        )
        chart.add(
            f"{label}: USD per million tokens, all in, full load, {series['pricing']} (right axis)",
            [(count, value) for count, value in zip(counts, values["usdPerMillionTokens"], strict=True)],
            secondary=True,
            show_dots=False,
            stroke_style={"dasharray": "6, 4"},
        )
    chart.add(
        "published runs (ClusterIP)",
        [(run.nodes, run.total_tokens_per_second / 1e6) for run in SCALING],
        stroke=False,
        dots_size=4,
    )
    chart.add(
        f"this stack: {chosen_nodes} node(s), {chosen_tokens_per_second:,.0f} tok/s ({chosen_routing})",
        [(chosen_nodes, chosen_tokens_per_second / 1e6)],
        stroke=False,
        dots_size=8,
    )
    svg: bytes = chart.render()
    return svg.decode("utf-8")


def capacity_files(stack: str, config: StackConfig) -> dict[str, str]:
    """`capacity.json` and the chart of a render, by file name (the render writes them)."""
    capacity = plan(stack, config)
    series = chart_series(config, capacity.nodes)
    document = {**capacity.to_json(), "chart": series}
    return {
        CAPACITY_FILE: json.dumps(document, indent=2, sort_keys=True) + "\n",
        CHART_FILE: _svg(capacity, series),
    }
