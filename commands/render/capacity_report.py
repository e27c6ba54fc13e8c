"""The planner's files in a render: `capacity.json` and the `capacity.svg` chart plan.md links.

The chart is drawn with pygal (pure-Python SVG charts, ~0.1 s to import; matplotlib cost ~2 s of
CPU to import here, close to the whole Pulumi SDK), imported only when a chart is drawn. It shows,
per routing mode that has a measurement of the stack's configuration, expected total tok/s by node
count: solid over the measured range, dotted and lighter where extrapolated, the measured runs as
dots; all-in USD per million tokens for the stack's routing on the right axis; this stack's point. Where nothing
is measured it shows the all-in USD per hour instead and says so. Axis labels are round numbers
(fixed ticks on both axes), the legend is one entry a row under the plot inside the frame, and the
SVG is byte-identical on any day: a fixed chart id, no script, and pygal's "Generated ... on DATE"
comment removed.
"""

from __future__ import annotations

import functools
import json
import math
from typing import Any

from commands.io.output import json_document
from commands.io.states import CAPACITY_FILE
from commands.plan.capacity_plan import CapacityPlan, capacity_plan, cost
from commands.plan.hours import running_hours
from commands.render.time_to_serve import time_to_serve
from schemas.vllm_releases import image_release
from stacks.capacity.expectation import throughput_of
from stacks.capacity.measurements import Measurement
from stacks.capacity.planner import budget_pricing, known, storage_of
from stacks.config.capacity import MAX_NODES
from stacks.config.routing import RoutingMode
from stacks.config.stack import StackConfig

CHART_FILE = "capacity.svg"
CHART_MIN_NODES = 16
ROUTING_LABELS = {RoutingMode.clusterip.value: "ClusterIP", RoutingMode.gateway.value: "Inference Gateway"}
MODE_COLORS = {RoutingMode.clusterip.value: "#1f5fa8", RoutingMode.gateway.value: "#d9730d"}
COST_COLOR = "#3a8a3a"
STACK_COLOR = "#c0392b"
WIDTH = 900
PLOT_HEIGHT = 430
LEGEND_FONT_SIZE = 14
LEGEND_ROW_HEIGHT = 21  # pygal spaces bottom legend rows 1.5 x the font size apart
LEGEND_SPACING = 10
NICE_STEPS = (1, 2, 2.5, 5, 10)
TICKS = 6


NODE_STEPS = (1, 2, 4, 5, 10, 20, 25, 50, 100)
NODE_TICKS_MAX = 8


def node_ticks(top: int) -> list[int]:
    """Round node-count ticks from 0 to at least `top`: at most 8 steps of 1, 2, 4, 5, 10, 20, ..."""
    step = next(step for step in NODE_STEPS if top / step <= NODE_TICKS_MAX)
    return list(range(0, math.ceil(top / step) * step + 1, step))


def chart_node_counts(nodes: int) -> list[int]:
    """1 up to the first round tick at or above max(16, 1.5 x the stack's nodes)."""
    return list(range(1, node_ticks(min(MAX_NODES, max(CHART_MIN_NODES, nodes + nodes // 2)))[-1] + 1))


def chart_series(config: StackConfig, nodes: int, measurements: list[Measurement] | None = None) -> dict[str, Any]:
    """The numbers the chart draws: per routing mode, total tok/s (None where not measured), how
    each figure was got (measured, interpolated, extrapolated) and the measured runs; all-in USD per
    million tokens at full load and all-in USD per hour with the first capacity source's pricing."""
    runs = known(measurements)
    first = config.capacity.sources[0]
    kind = budget_pricing(first, config.pricing)
    storage = storage_of(config)
    hours = running_hours(config)
    counts = chart_node_counts(nodes)
    series: dict[str, Any] = {
        "nodes": counts,
        "pricing": kind,
        "routing": config.routing.mode.value,
        "release": image_release(config.engine.image),
        "modes": {},
    }
    owns = not config.cluster.existing
    series["usdPerHour"] = [
        cost(kind, count, None, storage, config.pricing, hours, owns_cluster=owns).total_per_hour for count in counts
    ]
    for mode in RoutingMode:
        throughput = throughput_of(config, runs, mode)
        totals = [None if (per_node := throughput.per_node(count)) is None else per_node * count for count in counts]
        series["modes"][mode.value] = {
            "totalTokensPerSecond": totals,
            "basis": [throughput.basis(count) for count in counts],
            "measuredRuns": []
            if throughput.match is None
            else [[run.nodes, run.total_tokens_per_second] for run in throughput.match.runs],
            # The releases the runs were on where not the stack's: their figures are carried over to it.
            "carriedOverFrom": []
            if throughput.match is None
            else sorted(
                {item.measured_release for item in throughput.match.measurements}
                - {throughput.configuration.vllm_release}
            ),
            "usdPerMillionTokens": [
                cost(
                    kind, count, total, storage, config.pricing, hours, owns_cluster=owns
                ).usd_per_million_tokens_full_load
                for count, total in zip(counts, totals, strict=True)
            ],
        }
    return series


def chart_svg(config: StackConfig, capacity: CapacityPlan) -> str:
    return _svg(capacity, chart_series(config, capacity.nodes))


def _svg(capacity: CapacityPlan, series: dict[str, Any]) -> str:
    chosen = capacity.expectation
    figures = json.dumps(series, allow_nan=False)
    return _draw_chart(capacity.stack, figures, chosen.nodes, chosen.total_tokens_per_second)


def nice_ticks(highest: float, intervals: int | None = None) -> list[float]:
    """Round ticks from 0 reaching `highest`, 1, 2, 2.5 or 5 x 10^n apart: about five, or exactly
    `intervals` (the right axis shares the left axis's gridlines)."""
    if highest <= 0:
        return [float(index) for index in range((intervals or 1) + 1)]
    raw = highest / (intervals or TICKS - 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(power * factor for factor in NICE_STEPS if power * factor >= raw)
    count = intervals or math.ceil(highest / step - 1e-9)
    return [round(index * step, 10) for index in range(count + 1)]


def _label(value: float) -> str:
    return f"{round(value, 6):g}"


def _cropped(height: float) -> Any:
    """pygal reserves the bottom legend's height once per axis when a series sits on the secondary
    axis (pygal 3.1.3 graph/graph.py `_compute_margin` loops over both series groups): the chart is
    drawn that much taller and the blank strip under the legend is cut off."""

    def crop(root: Any) -> Any:
        root.set("viewBox", f"0 0 {WIDTH} {height:g}")
        return root

    return crop


def _without_render_date(root: Any) -> Any:
    """pygal writes 'Generated with pygal VERSION (...) on YYYY-MM-DD' as a comment: drop it."""
    for child in list(root):
        if not isinstance(child.tag, str) and "Generated with pygal" in (child.text or ""):
            root.remove(child)
    return root


def _left_title_center(root: Any) -> float | None:
    """The vertical centre pygal gave the left axis title (its `rotate(-90 x y)`)."""
    for element in root.iter():
        transform = element.get("transform", "") if isinstance(element.tag, str) else ""
        if element.get("class") == "title" and transform.startswith("rotate(-90 "):
            return float(transform.removesuffix(")").split()[-1])
    return None


def _right_axis_title(title: str, x: float) -> Any:
    def add(root: Any) -> Any:
        from pygal.etree import etree

        y = _left_title_center(root) or 0.0
        text = etree.SubElement(root, "text", {"class": "title", "x": f"{x:g}", "y": f"{y:g}"})
        text.set("transform", f"rotate(90 {x:g} {y:g})")
        text.set("text-anchor", "middle")
        text.set("style", "font-size:14px")
        text.text = title
        return root

    return add


@functools.lru_cache(maxsize=16)  # variants of a stack that leave the numbers alone draw the same chart
def _draw_chart(stack: str, series_json: str, chosen_nodes: int, chosen_tokens_per_second: float | None) -> str:
    import pygal
    from pygal.style import Style

    series = json.loads(series_json)
    counts = series["nodes"]
    # Throughput only where the stack's own configuration is measured; then the other routing mode too
    # where that is measured (the same configuration but the routing), for comparison.
    modes = {mode: values for mode, values in series["modes"].items() if values["measuredRuns"]}
    lines: list[tuple[str, list[tuple[float, float | None]], dict[str, Any], str]] = []
    if series["routing"] in modes:
        primary_top = max(value for values in modes.values() for value in values["totalTokensPerSecond"]) / 1e6
        own = series["modes"][series["routing"]]["usdPerMillionTokens"]
        secondary_values = [value for value in own if value is not None]
        for mode, values in modes.items():
            label, color = ROUTING_LABELS[mode], MODE_COLORS[mode]
            measured = [run[0] for run in values["measuredRuns"]]
            low, high = measured[0], measured[-1]
            points = list(zip(counts, values["totalTokensPerSecond"], strict=True))
            if low < high:
                lines.append(
                    (
                        f"{label}: {low}-{high} nodes, measured and interpolated",
                        [(count, total / 1e6 if low <= count <= high else None) for count, total in points],
                        {"show_dots": False, "stroke_style": {"width": 3}},
                        color,
                    )
                )
            outside = [(count, total / 1e6) for count, total in points if count <= low or count >= high]
            lines.append(
                (
                    f"{label}: extrapolated (per-node figure held)",
                    _broken(outside, low, high),
                    {"show_dots": False, "stroke_style": {"width": 3, "dasharray": "3, 6"}},
                    lighter(color),
                )
            )
            lines.append(
                (
                    (f"{label}: measured runs" if low < high else f"{label}: measured at {low} node(s) only")
                    + _carried_over(values.get("carriedOverFrom", []), series.get("release")),
                    [(run[0], run[1] / 1e6) for run in values["measuredRuns"]],
                    {"stroke": False, "dots_size": 4},
                    color,
                )
            )
        y_title = "total tok/s (millions)"
        right_title = f"USD per million total tokens (input + output, {series['pricing']}, all in)"
        title = f"Stack {stack}: measured throughput and cost by node count"
        if secondary_values:
            lines.append(
                (
                    f"USD per million total tokens (input + output), all in, full load, {series['pricing']} "
                    f"({ROUTING_LABELS[series['routing']]}, right axis)",
                    [(count, value) for count, value in zip(counts, own, strict=True)],
                    {"secondary": True, "show_dots": False, "stroke_style": {"width": 2, "dasharray": "8, 4"}},
                    COST_COLOR,
                )
            )
        if chosen_tokens_per_second is not None:
            lines.append(
                (
                    f"this stack: {chosen_nodes} node(s), {chosen_tokens_per_second:,.0f} tok/s",
                    [(chosen_nodes, chosen_tokens_per_second / 1e6)],
                    {"stroke": False, "dots_size": 7},
                    STACK_COLOR,
                )
            )
    else:
        primary_top = max(series["usdPerHour"])
        secondary_values = []
        y_title = "USD per hour (all in)"
        right_title = ""  # no right axis
        title = f"Stack {stack}: its throughput is not measured; cost by node count"
        lines.append(
            (
                f"USD per hour, all in, every node up, {series['pricing']} (throughput: see plan.md)",
                list(zip(counts, series["usdPerHour"], strict=True)),
                {"show_dots": False, "stroke_style": {"width": 3}},
                COST_COLOR,
            )
        )
        lines.append(
            (
                f"this stack: {chosen_nodes} node(s)",
                [(chosen_nodes, series["usdPerHour"][chosen_nodes - 1])],
                {"stroke": False, "dots_size": 7},
                STACK_COLOR,
            )
        )
    ticks = nice_ticks(primary_top)
    secondary_ticks = nice_ticks(max(secondary_values), len(ticks) - 1) if secondary_values else None
    x_ticks = node_ticks(counts[-1])
    # pygal colours series in order, those of the left axis first, then those of the right axis
    ordered = [line for line in lines if not line[2].get("secondary")] + [
        line for line in lines if line[2].get("secondary")
    ]
    legend_height = 2 * LEGEND_SPACING + LEGEND_ROW_HEIGHT * len(lines)
    doubled = LEGEND_SPACING + LEGEND_FONT_SIZE * (len(lines) - 1) * 1.5 + LEGEND_FONT_SIZE if secondary_ticks else 0
    chart = pygal.XY(
        title=title,
        x_title="A4 nodes (8x B200 each)",
        y_title=y_title,
        width=WIDTH,
        height=PLOT_HEIGHT + legend_height + doubled,
        legend_at_bottom=True,
        legend_at_bottom_columns=1,
        truncate_legend=-1,
        allow_interruptions=True,
        include_x_axis=True,
        xrange=(0, x_ticks[-1]),
        x_labels=x_ticks,
        range=(0, ticks[-1]),
        y_labels=ticks,
        secondary_range=None if secondary_ticks is None else (0, secondary_ticks[-1]),
        value_formatter=_label,
        x_value_formatter=_label,
        margin_right=50 if secondary_ticks else 20,
        style=Style(
            colors=tuple(color for _, _, _, color in ordered),
            background="white",
            plot_background="white",
            legend_font_size=LEGEND_FONT_SIZE,
        ),
        js=[],  # no script fetched from the web: the SVG stands alone
    )
    # pygal names every chart with a fresh uuid4; a fixed one keeps two renders byte-identical
    chart.uuid = "capacity"
    chart.add_xml_filter(_without_render_date)
    if secondary_ticks:
        chart.add_xml_filter(_right_axis_title(right_title, WIDTH - 20))
    if doubled:
        chart.add_xml_filter(_cropped(PLOT_HEIGHT + legend_height))
    for label, values, options, _ in ordered:
        chart.add(label, values, **options)
    svg: bytes = chart.render()
    return svg.decode("utf-8")


def _carried_over(releases: list[str], release: str | None) -> str:
    if not releases:
        return ""
    return f" (vLLM {'/'.join(releases)}, carried over to {release or 'the stack release'}: assumed)"


def lighter(color: str, white: float = 0.4) -> str:
    """The colour mixed with white: the extrapolated line, whose legend swatch (a filled square in
    pygal, whatever the line's dashes) then differs from the measured range's."""
    channels = (int(color[index : index + 2], 16) for index in (1, 3, 5))
    return "#" + "".join(f"{round(channel + (255 - channel) * white):02x}" for channel in channels)


def _broken(points: list[tuple[int, float]], low: int, high: int) -> list[tuple[float, float | None]]:
    """The extrapolated stretches below and above the measured range, with a gap between them."""
    below = [point for point in points if point[0] <= low]
    above = [point for point in points if point[0] >= high]
    gap: list[tuple[float, float | None]] = [(low, None)] if below and above and len(below) > 1 else []
    return [*(below if len(below) > 1 else []), *gap, *(above if len(above) > 1 else [])]


def capacity_files(stack: str, config: StackConfig) -> dict[str, str]:
    """`capacity.json` and the chart of a render, by file name (the render writes them)."""
    capacity = capacity_plan(stack, config)
    series = chart_series(config, capacity.nodes)
    document = {**capacity.to_json(), "chart": series, "timeToServe": time_to_serve(config).to_json()}
    return {
        CAPACITY_FILE: json_document(document),
        CHART_FILE: _svg(capacity, series),
    }
