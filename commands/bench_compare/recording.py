"""Recording a `bench-compare` result into a measurements file: the serving pods' start-up phases
from the benchmark Job's report, the new measurement of the stack's configuration, and the file's
text with it appended (the format and the reader are stacks/capacity/measurements.py)."""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from components import startup_report
from stacks.capacity.measurements import (
    MAX_MEASUREMENTS_BYTES,
    SPANS,
    Measurement,
    MeasurementsError,
    Run,
    StartupPhases,
    configuration_of,
    parse,
    read,
    startup_conditions,
    validation_line,
)
from stacks.config.stack import StackConfig


def started_cold(record: dict[str, Any]) -> bool:
    """A pod on a node made for it that pulled the engine image (components/startup_report.py)."""
    return record.get("nodeCreatedAfterPod") is True and record.get("imageWasCached") is False


def _seconds(record: dict[str, Any], name: str) -> float | None:
    """A phase of one pod's record, None when it lacks it (null, or not a number)."""
    value = (record.get("phases") or {}).get(name)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def pod_span(record: dict[str, Any], late: str, early: str | None) -> float | None:
    """One pod's own span from its `early` phase (its creation when None) to its `late` one, None when it lacks
    either end; a span below 0 counts as 0, as the planner's difference of medians does."""
    end, start = _seconds(record, late), 0.0 if early is None else _seconds(record, early)
    return None if end is None or start is None else max(0.0, end - start)


def startup_phases(records: Sequence[dict[str, Any]]) -> StartupPhases | None:
    """The median and largest of each phase over the STARTUP_PHASES records (None without any), and the median and
    largest of each pod's own span per planner phase (`SPANS`: not the difference of two medians, which is no pod's
    span): over the pods that started cold when there are any (a pod bound at once to a node that was up, or that found
    the image there, says nothing of a new replica's node and pull), else over all of them; a pod lacking either end of
    a span is left out of it, and a span below 0 counts as 0."""
    if not records:
        return None
    cold = [record for record in records if started_cold(record)]
    pods = cold or records
    median: dict[str, float] = {}
    largest: dict[str, float] = {}
    for name in startup_report.PHASES:
        values = [value for record in pods if (value := _seconds(record, name)) is not None]
        if values:
            median[name], largest[name] = statistics.median(values), max(values)
    spans: dict[str, float] = {}
    longest: dict[str, float] = {}
    for key, (late, early) in SPANS.items():
        values = [span for record in pods if (span := pod_span(record, late, early)) is not None]
        if values:
            spans[key], longest[key] = statistics.median(values), max(values)
    try:
        return StartupPhases(
            pods=len(records),
            cold_pods=len(cold),
            median_seconds=median,
            max_seconds=largest,
            median_span_seconds=spans,
            max_span_seconds=longest,
        )
    except ValidationError as error:
        raise MeasurementsError(f"cannot record the start-up report: {validation_line(error)}") from None


def record_id(stack: str, date: str, existing: Sequence[str]) -> str:
    base = re.sub(r"[^a-z0-9-]+", "-", f"{stack}-{date}".lower()).strip("-")[:56] or "run"
    candidate, number = base, 1
    while candidate in existing:
        number += 1
        candidate = f"{base}-{number}"
    return candidate


# A run's figures and the keys of the benchmark result they come from (components/bench_result.py).
# The line a new file holds (`measurements: []`, a comment after it or not), as `--record` rewrites it.
EMPTY_LIST_LINE = re.compile(
    r"(?P<bom>\ufeff?)measurements:[ \t]*\[[ \t]*\][ \t]*(?P<comment>[ \t]#[^\r\n]*)?(?P<newline>\r?\n)?$"
)
RUN_FIGURES = {
    "total_tokens_per_second": "total_token_throughput",
    "output_tokens_per_second": "output_throughput",
    "requests_per_second": "request_throughput",
    "tpot_median_ms": "median_tpot_ms",
    "ttft_median_ms": "median_ttft_ms",
}


def new_measurement(
    config: StackConfig,
    stack: str,
    date: str,
    measured: dict[str, Any],
    source: str,
    existing: Sequence[str],
    nodes: int,
    concurrency: int,
    startup: StartupPhases | None = None,
) -> Measurement:
    """A measurement of the stack's configuration from a `bench-compare` result: one run on `nodes`
    serving pods (A4 nodes) under the benchmark's `concurrency` requests in all."""
    try:
        run = Run(
            nodes=nodes,
            **{field: float(measured[key]) for field, key in RUN_FIGURES.items()},
            completed=int(measured["completed"]),
            failed=int(measured["failed"]),
        )
        configuration = configuration_of(config).model_copy(update={"concurrency_per_node": concurrency / nodes})
        return Measurement(
            id=record_id(stack, date, existing),
            source=source,
            date=date,
            measured_release=configuration.vllm_release,
            note=f"recorded by bench-compare --record from stack {stack}; {measured.get('clients')} client(s), "
            f"{measured.get('combine', '')}",
            configuration=configuration,
            runs=[run],
            startup=startup and startup.model_copy(update={"conditions": startup_conditions(config)}),
        )
    except ValidationError as error:  # a figure a run cannot hold, e.g. 0 tok/s
        first = error.errors(include_url=False)[0]
        field = str(first["loc"][0]) if first["loc"] else ""
        key = RUN_FIGURES.get(field, field)
        raise MeasurementsError(f"cannot record the result: {key} {first['msg'].lower()}") from None


def appended(path: Path, measurement: Measurement) -> str:
    """The file's text with one measurement appended, every existing line kept as it is, checked by
    reading it back; the caller writes it (`commands/io/output.py`, replace_file)."""
    # read afresh (not load()'s cache, keyed by a modification time two quick writers may share)
    current = parse(read(path), str(path))
    if any(item.id == measurement.id for item in current.measurements):
        raise MeasurementsError(f"{path}: a measurement with id {measurement.id} exists")
    recorded = measurement.model_dump(exclude={"id"})
    for item in current.measurements:
        if item.model_dump(exclude={"id"}) == recorded:
            raise MeasurementsError(
                f"{path}: this result is recorded already, as measurement {item.id} (the same configuration, "
                "runs, date and source); nothing was written"
            )
    entry = measurement.model_dump(mode="json", by_alias=True)
    entry["runs"] = [{key: value for key, value in run.items() if value is not None} for run in entry["runs"]]
    if entry["startup"] is None:
        del entry["startup"]
    text = yaml.safe_dump([entry], sort_keys=False, width=1000)
    original = read(path)
    newline = "\r\n" if original.split("\n", 1)[0].endswith("\r") else "\n"  # the file's own line ending
    text = text.replace("\n", newline)
    if not current.measurements:  # `measurements: []` (a new file): the list starts where the empty one stood
        return _started(path, original, text, measurement.id, newline)
    # the list's items as the file writes them: indented (as the repository's file) or not (PyYAML's default style)
    ending = "" if original.endswith("\n") else newline
    for indent in (2, 0, 4):
        updated = _checked_size(path, original + ending + _indented(text, indent))
        try:
            read_back = parse(updated, str(path)).measurements
        except MeasurementsError:
            continue
        if len(read_back) == len(current.measurements) + 1 and read_back[-1].id == measurement.id:
            return updated
    raise MeasurementsError(
        f"{path}: --record appends a measurement as a `- ` item of the block list under `measurements:`, and this "
        "file does not end with one (a flow list `[...]`, a `...` end marker, another key after the list); nothing "
        "was written: write the list in block style, last in the file"
    )


def _started(path: Path, original: str, entry: str, new_id: str, newline: str) -> str:
    """A file whose list is empty, with `entry` as its first item: the line `measurements: []` becomes the
    block list's key and the entry, every other line (comments before and after it) kept in place; a file
    that spells the empty list otherwise keeps its comment lines above the new list."""
    lines = original.splitlines(keepends=True)
    empty = [number for number, line in enumerate(lines) if EMPTY_LIST_LINE.match(line)]
    if len(empty) == 1:
        (number,) = empty
        line = EMPTY_LIST_LINE.match(lines[number])
        assert line is not None
        key = f"{line['bom']}measurements:{line['comment'] or ''}{line['newline'] or newline}"
        updated = _checked_size(path, "".join([*lines[:number], key, _indented(entry, 2), *lines[number + 1 :]]))
        if [item.id for item in parse(updated, str(path)).measurements] == [new_id]:
            return updated
    comments = "".join(line for line in lines if line.lstrip().startswith("#"))
    separator = "" if comments.endswith("\n") or not comments else newline
    return _checked_size(path, comments + separator + "measurements:" + newline + _indented(entry, 2))


def _indented(text: str, indent: int) -> str:
    return "".join(f"{' ' * indent}{line}" if line.strip() else line for line in text.splitlines(keepends=True))


def _checked_size(path: Path, updated: str) -> str:
    size = len(updated.encode())
    if size > MAX_MEASUREMENTS_BYTES:
        raise MeasurementsError(
            f"{path}: recording would grow it to {size:,} bytes, past the {MAX_MEASUREMENTS_BYTES:,} every reader "
            "accepts (plan, render and bench-compare would then refuse it); nothing was written: keep older "
            "measurements in another file and record into a new one with --measurements"
        )
    return updated
