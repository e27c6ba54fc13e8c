"""The bounded reader of standard input."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest

from common.input_files import InputError, read_stream
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
