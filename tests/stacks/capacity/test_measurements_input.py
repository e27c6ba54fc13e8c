"""The measurements file is read bounded, like every input: no device, FIFO, oversized file, alias or deep nesting."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from stacks.capacity.measurements import MAX_MEASUREMENTS_BYTES, MeasurementsError, load


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
    with pytest.raises(MeasurementsError, match="aliases are expanded"):
        load(bomb)


def test_deep_nesting_is_refused_naming_the_file(tmp_path: Path) -> None:
    deep = tmp_path / "measurements.yaml"
    deep.write_text("[" * 200 + "]" * 200)
    with pytest.raises(MeasurementsError, match=str(deep)):
        load(deep)


@pytest.mark.parametrize("depth", [200, 950])  # 950: deeper than the YAML parser's own recursion reaches
def test_deep_nesting_names_the_limit_not_the_parser(tmp_path: Path, depth: int) -> None:
    deep = tmp_path / "measurements.yaml"
    deep.write_text("m: " + "[" * depth + "]" * depth)
    with pytest.raises(MeasurementsError, match=f"^{deep}: .*nested deeper than 64 levels$") as error:
        load(deep)
    assert "recursion" not in str(error.value)


def test_an_integer_of_thousands_of_digits_is_one_line(tmp_path: Path) -> None:
    """Python refuses to read an integer of more than 4,300 digits (a ValueError, which ended plan with
    exit status 1); it is a malformed file like any other."""
    digits = tmp_path / "measurements.yaml"
    digits.write_text("measurements: [{runs: [{nodes: " + "9" * 5_000 + "}]}]\n")
    with pytest.raises(MeasurementsError, match=f"^{digits}: Exceeds the limit"):
        load(digits)
