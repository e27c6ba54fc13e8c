"""What a PromQL query selects, to hold the stack's queries to the metrics components/metrics.py knows."""

from __future__ import annotations

import re

from components.metrics import KNOWN, Metric, MetricType

_SERIES = re.compile(r"\b([A-Za-z_][A-Za-z0-9_:]*)\{")


def series_names(query: str) -> set[str]:
    """The metric names a PromQL expression selects (every selector here carries a `{...}`)."""
    return set(_SERIES.findall(query))


def known_series(metric: Metric) -> set[str]:
    """The PromQL names under which a known metric can be selected."""
    if metric.type is MetricType.histogram:
        return {f"{metric.name}_bucket", f"{metric.name}_sum", f"{metric.name}_count"}
    return {metric.exposed_name}


# Every name a query may select.
KNOWN_SERIES = set().union(*(known_series(metric) for metric in KNOWN.values()))
