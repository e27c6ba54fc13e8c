"""The measurements file is read bounded, like every input: no device, FIFO, oversized file, alias or deep nesting."""

from __future__ import annotations

import datetime
import os
from pathlib import Path
from typing import get_args, get_origin

import pytest
import yaml
from pydantic import BaseModel

from common.model_ranges import _members
from stacks.capacity.measurements import (
    MAX_MEASUREMENTS_BYTES,
    MEASUREMENTS_FILE,
    MeasurementsError,
    Run,
    StartupPhases,
    load,
    parse,
    source_problem,
)


def test_a_device_is_refused_naming_it() -> None:
    with pytest.raises(MeasurementsError, match="/dev/zero"):
        load(Path("/dev/zero"))


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "measurements.yaml"
    os.mkfifo(fifo)
    with pytest.raises(MeasurementsError, match="not a regular file"):
        load(fifo)


def test_an_oversized_file_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "measurements.yaml"
    big.write_text("# " + "x" * MAX_MEASUREMENTS_BYTES)
    with pytest.raises(MeasurementsError, match=str(big)):
        load(big)


def test_an_alias_bomb_is_refused_before_anything_walks_it(tmp_path: Path) -> None:
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    levels += [f"a{n}: &a{n} [{', '.join([f'*a{n - 1}'] * 10)}]" for n in range(1, 9)]
    bomb = tmp_path / "measurements.yaml"
    bomb.write_text("\n".join(levels) + "\n")
    with pytest.raises(MeasurementsError, match="aliases and merge keys are expanded"):
        load(bomb)


def test_a_merge_key_bomb_is_refused_before_any_mapping_is_made(tmp_path: Path) -> None:
    """A merge key copies the mapping it names: 599 bytes of merges of merges took 3.2 GB and 275 s
    before `plan` ran out of memory."""
    levels = ["m0: &m0 {" + ", ".join(f"k{key}: 1" for key in range(10)) + "}"]
    levels += [f"m{n}: &m{n} {{<<: [{', '.join([f'*m{n - 1}'] * 10)}]}}" for n in range(1, 9)]
    bomb = tmp_path / "measurements.yaml"
    bomb.write_text("\n".join(levels) + "\n")
    with pytest.raises(MeasurementsError, match=f"^{bomb}: more than 100,000 values once its aliases and merge keys"):
        load(bomb)


def test_deep_nesting_is_refused_naming_the_file(tmp_path: Path) -> None:
    deep = tmp_path / "measurements.yaml"
    deep.write_text("[" * 200 + "]" * 200)
    with pytest.raises(MeasurementsError, match=str(deep)):
        load(deep)


@pytest.mark.parametrize(
    ("text", "refusal"),
    [
        ("measurements: []\nmeasurements: []\n", 'the key "measurements" appears twice in one mapping; keep one'),
        ("[" * 65 + "]" * 65, "nested deeper than 64 levels"),  # the JSON inputs' limit
        # Python reads no integer of more than 4,300 digits (a ValueError, which ended plan with exit status 1)
        (
            "measurements: [{runs: [{nodes: " + "9" * 5_000 + "}]}]\n",
            "measurements.0.runs.0.nodes: an integer too long to read; allowed: at most 4,300 digits",
        ),
        ("measurements: [{date: 2024-13-45}]\n", "measurements.0.date: month must be in 1..12"),  # a date that is none
        ('"a\\nkey": {measurements: 2024-02-30}\n', '"a\\nkey".measurements: day is out of range for month'),
    ],
)
def test_a_malformed_file_is_one_line_naming_it(tmp_path: Path, text: str, refusal: str) -> None:
    malformed = tmp_path / "measurements.yaml"
    malformed.write_text(text)
    with pytest.raises(MeasurementsError) as error:
        load(malformed)
    assert str(error.value) == f"{malformed}: {refusal}"


@pytest.mark.parametrize("character", ["\x00", "\x07", "\x1b"])
def test_a_control_character_is_one_line_at_its_line_and_column(tmp_path: Path, character: str) -> None:
    """YAML's reader refuses it before parsing: that ended plan, render and bench-compare with exit status 1."""
    malformed = tmp_path / "measurements.yaml"
    malformed.write_text(f"measurements: []\n# {character}\n")
    with pytest.raises(MeasurementsError) as error:
        load(malformed)
    assert str(error.value) == f"{malformed}:2:3: control character {character!r} is not allowed in YAML; remove it"


# 950: deeper than the YAML parser's own recursion reaches; 400,000 (within the size limit): libyaml's
# composer recurses in C and ends the process with a segmentation fault there, so the file is read with
# PyYAML's Python parser.
@pytest.mark.parametrize("depth", [200, 950, 400_000])
def test_deep_nesting_names_the_limit_not_the_parser(tmp_path: Path, depth: int) -> None:
    deep = tmp_path / "measurements.yaml"
    deep.write_text("m: " + "[" * depth + "]" * depth)
    with pytest.raises(MeasurementsError, match=f"^{deep}: .*nested deeper than 64 levels$") as error:
        load(deep)
    assert "recursion" not in str(error.value)


@pytest.mark.parametrize("model", [Run, StartupPhases])
def test_every_figure_the_planner_computes_with_is_bounded_on_both_sides(model: type[BaseModel]) -> None:
    for name, info in model.model_fields.items():
        members = _members(info.annotation)
        per_phase = [member for member, _ in members if get_origin(member) is dict]
        if per_phase:  # seconds per phase or span (also where it may be missing): the bounds are on the values
            members = _members(get_args(per_phase[0])[1])
        if any(isinstance(member, type) and issubclass(member, BaseModel) for member, _ in members):
            continue  # no figure: what the start-up report's pods started under
        metadata = [*info.metadata, *(item for member, more in members if member is not type(None) for item in more)]
        bounds = {
            bound for item in metadata for bound in ("ge", "gt", "le", "lt") if getattr(item, bound, None) is not None
        }
        assert {"ge", "gt"} & bounds and {"le", "lt"} & bounds, f"{model.__name__}.{name}: {bounds}"


@pytest.mark.parametrize(
    ("figure", "value", "allowed"),
    [
        ("nodes", True, "an integer from 1 to 10,000"),
        ("nodes", "two", "an integer from 1 to 10,000"),
        ("totalTokensPerSecond", "fast", "a number from 0.001 to 1,000,000,000,000"),
        ("totalTokensPerSecond", 10**400, "a number from 0.001 to 1,000,000,000,000"),
    ],
)
def test_a_figure_of_another_type_says_what_is_allowed(
    tmp_path: Path, figure: str, value: object, allowed: str
) -> None:
    document = yaml.safe_load(MEASUREMENTS_FILE.read_text())
    document["measurements"][0]["runs"][0][figure] = value
    path = tmp_path / "measurements.yaml"
    path.write_text(yaml.safe_dump(document))
    with pytest.raises(MeasurementsError, match=f"runs.0.{figure}: .*; allowed: {allowed}$"):
        load(path)


@pytest.mark.parametrize(
    ("figure", "value", "bound"),
    [
        (
            "totalTokensPerSecond",
            1e308,
            r"1e\+308 is out of range; allowed: a number from 0\.001 to 1,000,000,000,000$",
        ),
        ("ttftMedianMs", 1e300, "out of range; allowed: a number above 0 and at most 1,000,000,000$"),
        ("nodes", 10**9, "1000000000 is out of range; allowed: an integer from 1 to 10,000$"),
        # a rate the planner divides by (5e-324 tokens/s made the completion caveat divide by zero)
        ("totalTokensPerSecond", 5e-324, r"5e-324 is out of range; allowed: a number from 0\.001 to"),
        ("requestsPerSecond", 1e-320, r"1e-320 is out of range; allowed: a number from 0\.001 to"),
    ],
)
def test_a_figure_no_run_comes_near_is_refused_naming_the_file(
    tmp_path: Path, figure: str, value: float, bound: str
) -> None:
    """A figure the planner multiplies or divides by (1e308 tokens/s made the plan's figures infinite and
    ended the command with exit status 1) is a malformed file: one line naming the file and the bound."""
    document = yaml.safe_load(MEASUREMENTS_FILE.read_text())
    document["measurements"][0]["runs"][0][figure] = value
    path = tmp_path / "measurements.yaml"
    path.write_text(yaml.safe_dump(document))
    with pytest.raises(MeasurementsError, match=f"^{path}: .*{bound}") as error:
        load(path)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(
    ("spans", "refusal"),
    [
        ({"pod": -5}, "startup.medianSpanSeconds.pod: -5 is out of range; allowed: at least 0"),
        ({"pod": 1e8}, "startup.medianSpanSeconds.pod: 100000000.0 is out of range; allowed: at most 10,000,000"),
        ({"pod": "soon"}, "startup.medianSpanSeconds.pod: Input should be a valid number (got 'soon'); allowed: "),
        (
            {"lunch": 5},
            "startup: unknown span 'lunch'; allowed: node, imagePull, engineStart, pod",
        ),
        # a platform review: a hand-edited pod span of 5,000 s beside a slowest pod ready at 1,100 s was read
        ({"pod": 10}, "startup: the pod span is above the largest readySeconds; allowed: at most it"),
    ],
)
def test_a_span_no_pod_can_have_or_of_no_phase_is_refused_in_one_line(
    tmp_path: Path, spans: dict[str, object], refusal: str
) -> None:
    """Each pod's span feeds the planner like the phases: bounded, and known keys only (node, imagePull, engineStart,
    pod); a report without spans (recorded before they were kept) reads."""
    document = yaml.safe_load(MEASUREMENTS_FILE.read_text())
    startup = {"pods": 1, "coldPods": 1, "medianSeconds": {"readySeconds": 9}, "maxSeconds": {"readySeconds": 9}}
    document["measurements"][0]["startup"] = startup
    path = tmp_path / "measurements.yaml"
    path.write_text(yaml.safe_dump(document))
    read = load(path).measurements[0].startup
    assert read is not None and read.median_span_seconds is None
    document["measurements"][0]["startup"] = {**startup, "medianSpanSeconds": spans}
    path.write_text(yaml.safe_dump(document))
    with pytest.raises(MeasurementsError, match=f"^{path}: measurements.0.") as error:
        load(path)
    assert refusal in str(error.value) and "\n" not in str(error.value)


@pytest.mark.parametrize(
    ("field", "value", "refusal"),
    [
        (
            "measuredRelease",
            "banana",
            "measurements.0.measuredRelease: 'banana' is not allowed; allowed: a vLLM release",
        ),
        ("date", "2999-01-01", "measurements.0.date: 2999-01-01 is in the future; allowed: the date the run was made"),
        ("date", "2026-13", "measurements.0.date: 2026-13 is no day of the calendar; allowed: a date YYYY-MM"),
        ("date", "2026-02-30", "measurements.0.date: 2026-02-30 is no day of the calendar"),
    ],
)
def test_a_release_or_date_no_run_can_have_is_refused(tmp_path: Path, field: str, value: str, refusal: str) -> None:
    """plan.md prints both beside the figures ("measured on vLLM banana")."""
    document = yaml.safe_load(MEASUREMENTS_FILE.read_text())
    document["measurements"][0][field] = value
    path = tmp_path / "measurements.yaml"
    path.write_text(yaml.safe_dump(document))
    with pytest.raises(MeasurementsError, match=f"^{path}: {refusal}"):
        load(path)


def test_a_run_dated_today_anywhere_on_earth_is_accepted(tmp_path: Path) -> None:
    """UTC+14 is a day ahead of UTC: a run recorded there today carries tomorrow's UTC date."""
    tomorrow = datetime.datetime.now(datetime.UTC).date() + datetime.timedelta(days=1)
    document = yaml.safe_load(MEASUREMENTS_FILE.read_text())
    document["measurements"][0]["date"] = tomorrow.isoformat()
    path = tmp_path / "measurements.yaml"
    path.write_text(yaml.safe_dump(document))
    assert load(path).measurements[0].date == tomorrow.isoformat()


@pytest.mark.parametrize(
    ("source", "refused"),
    [
        ("Google Cloud blog https://cloud.g\u043e\u043egle.com/blog/b200-run", True),  # Cyrillic o: another site
        ("https://ops@b\u00fccher.de/run", True),
        ("https://cloud.google.com/blog/products/compute/b200", False),
        ("https://xn--bcher-kva.de/run", False),  # the same name in its ASCII form
        ("team run on 2026-11-20, Ärger-free", False),  # prose may hold any letter
        ("Google Cloud blog \u201chttps://cloud.google.com\u201d", False),  # quotes around the URL
        ("https://vllm.ai\u3002", False),  # an ideographic full stop after it
    ],
)
def test_a_sources_host_is_ascii(source: str, refused: bool) -> None:
    problem = source_problem(source, "plan.md shows it")
    assert (problem is not None and "letters outside ASCII" in problem) is refused, problem


def test_a_number_no_float_reads_names_the_key_and_what_is_allowed() -> None:
    """`gpuMemoryUtilization: 1e99999` said "...gpuMemoryUtilization.float: Input should be a valid number": a
    key of no file (the union member pydantic tried) and nothing allowed (an attacker)."""
    text = MEASUREMENTS_FILE.read_text().replace("gpuMemoryUtilization: 0.", "gpuMemoryUtilization: 1e99999 #", 1)
    with pytest.raises(MeasurementsError) as error:
        parse(text, "m.yaml")
    assert str(error.value) == (
        "m.yaml: measurements.0.configuration.gpuMemoryUtilization: Input should be a valid number (got '1e99999'); "
        "allowed: a finite number or unknown"
    )


@pytest.mark.parametrize(
    ("figure", "message"),
    [
        ("1e308", "1e+308 is out of range; allowed: a number from 0.001 to 1,000,000,000,000"),
        ("-0.0", "-0.0 is out of range; allowed: a number from 0.001 to 1,000,000,000,000"),
    ],
)
def test_a_figure_out_of_its_range_is_quoted_with_the_range(figure: str, message: str) -> None:
    """An attacker: `totalTokensPerSecond: 1e308` said "Input should be less than or equal to 1000000000000", neither
    the value nor what is allowed."""
    document = yaml.safe_load(MEASUREMENTS_FILE.read_text())
    document["measurements"][0]["runs"][0]["totalTokensPerSecond"] = float(figure)
    with pytest.raises(MeasurementsError) as error:
        parse(yaml.safe_dump(document), "m.yaml")
    assert str(error.value) == f"m.yaml: measurements.0.runs.0.totalTokensPerSecond: {message}"
