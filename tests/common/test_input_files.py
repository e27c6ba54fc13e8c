"""The bounded reader of standard input."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest

from common import input_files
from common.input_files import InputError, parse_json, parse_yaml, read_stream
from tests.rendered import ROOT


def test_standard_input_is_read_up_to_its_limit() -> None:
    assert read_stream(io.BytesIO(b"BENCH_RESULT {}\n"), 1024) == "BENCH_RESULT {}\n"


def test_a_closed_standard_input_is_one_line_not_a_failure() -> None:
    """`bench-compare dev - <&-`: Python sets sys.stdin to None, which failed with an AttributeError (exit 1)."""
    with pytest.raises(InputError, match="standard input: cannot read it"):
        read_stream(None, 1024)
    closed = subprocess.run(  # started with no file descriptor 0, as a shell's `<&-` does
        [sys.executable, "-m", "commands.bench_compare.command", "dev", "-"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        preexec_fn=lambda: os.close(0),
    )
    assert (closed.returncode, closed.stderr) == (2, "bench-compare: standard input: cannot read it (it is closed)\n")


@pytest.mark.timeout(60)  # a guard against a hang only: the refusal comes before any parsing
def test_a_json_input_of_millions_of_objects_is_refused_before_it_is_parsed() -> None:
    """128 MiB of `{},` (within a states.json's size limit) took 109 s and 6.7 GB to parse (an attacker)."""
    text = "[" + "{}," * 3_000_000 + "{}]"
    with pytest.raises(InputError, match=r"^x\.json: more than 1,000,000 objects and lists"):
        parse_json(text, "x.json")
    assert parse_json("[" + "{}," * 1000 + "{}]", "x.json") == [{}] * 1001


@pytest.mark.timeout(60)
def test_a_yaml_input_of_too_many_values_stops_composing() -> None:
    """A 1 MiB measurements file of 524,287 scalars was composed whole before its count was checked (30 s): here
    the same at a fiftieth of the size and limit."""
    text = "[" + ",".join(["0"] * 10_486) + "]"
    with pytest.raises(InputError, match=r"more than 2,000 values"):
        parse_yaml(text, "m.yaml", 2_000)
    loader = input_files._LocatingLoader(text)
    loader.max_nodes = 10
    with pytest.raises(input_files._TooManyNodesError):
        loader.get_single_node()
    assert loader._composed == 11  # it stopped at the eleventh node, not after the 524,287th


def test_a_mapping_of_as_many_pairs_as_values_allowed_is_read() -> None:
    """A mapping's keys are composed as nodes too: 60,000 pairs under a limit of 100,000 values were refused (here
    the same at a hundredth)."""
    text = "\n".join(f"k{index}: {index}" for index in range(600))
    assert len(parse_yaml(text, "m.yaml", 1_000)) == 600
