"""The planner's files in a render: `capacity.json` and the `capacity.svg` chart plan.md links.

matplotlib is imported only here and only when a chart is drawn, so a render pays for it once and
nothing else does. The SVG is byte-identical between renders: fixed `svg.hashsalt`, no date
metadata, text kept as text.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from stacks.config import MAX_NODES, RoutingMode, StackConfig
from stacks.plan import CHART_FILE
from stacks.planner import SCALING, CapacityPlan, budget_pricing, cost, expect, plan, storage_of

CAPACITY_FILE = "capacity.json"
CHART_MIN_NODES = 16
ROUTING_STYLES = {
    RoutingMode.clusterip: ("ClusterIP", "tab:blue"),
    RoutingMode.gateway: ("Inference Gateway", "tab:orange"),
}


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
    import matplotlib

    matplotlib.use("svg")
    from matplotlib.figure import Figure

    series = chart_series(config, capacity.nodes)
    counts = series["nodes"]
    with matplotlib.rc_context({"svg.hashsalt": "capacity-chart", "svg.fonttype": "none", "font.size": 9}):
        figure = Figure(figsize=(8, 4.5))
        throughput_axis = figure.add_subplot()
        cost_axis = throughput_axis.twinx()
        for mode in RoutingMode:
            label, color = ROUTING_STYLES[mode]
            values = series["modes"][mode.value]
            throughput_axis.plot(
                counts, [value / 1e6 for value in values["totalTokensPerSecond"]], color=color, label=f"{label} tok/s"
            )
            cost_axis.plot(
                counts, values["usdPerMillionTokens"], color=color, linestyle="--", label=f"{label} USD/M tokens"
            )
        throughput_axis.scatter(
            [run.nodes for run in SCALING],
            [run.total_tokens_per_second / 1e6 for run in SCALING],
            color="black",
            marker="x",
            zorder=3,
            label="measured (ClusterIP)",
        )
        chosen = capacity.expectation
        throughput_axis.scatter(
            [chosen.nodes], [chosen.total_tokens_per_second / 1e6], s=90, facecolors="none", edgecolors="red", zorder=4
        )
        throughput_axis.annotate(
            f"this stack: {chosen.nodes} nodes, {chosen.total_tokens_per_second:,.0f} tok/s",
            (chosen.nodes, chosen.total_tokens_per_second / 1e6),
            textcoords="offset points",
            xytext=(8, -14),
            color="red",
        )
        throughput_axis.set_xlabel("A4 nodes (8x B200 each)")
        throughput_axis.set_ylabel("expected total tok/s (millions)")
        cost_axis.set_ylabel(f"USD per million tokens, all in, full load ({series['pricing']})")
        throughput_axis.set_ylim(bottom=0)
        cost_axis.set_ylim(bottom=0)
        throughput_axis.grid(alpha=0.3)
        handles, labels = throughput_axis.get_legend_handles_labels()
        cost_handles, cost_labels = cost_axis.get_legend_handles_labels()
        throughput_axis.legend(handles + cost_handles, labels + cost_labels, loc="lower right", fontsize=7)
        throughput_axis.set_title(f"Stack {capacity.stack}: throughput and cost by node count")
        figure.tight_layout()
        figure.savefig(path, format="svg", metadata={"Date": None})


def write_capacity(out_dir: Path, stack: str, config: StackConfig) -> CapacityPlan:
    """Write `capacity.json` and the chart into a render's output directory."""
    capacity = plan(stack, config)
    document = {**capacity.to_json(), "chart": chart_series(config, capacity.nodes)}
    (out_dir / CAPACITY_FILE).write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    write_chart(out_dir / CHART_FILE, config, capacity)
    return capacity
