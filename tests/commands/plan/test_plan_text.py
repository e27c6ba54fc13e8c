"""What `plan` prints says how each figure was had, as plan.md does."""

from __future__ import annotations

import pytest

from commands.plan.command import plan_main
from tests.rendered import run_main


@pytest.mark.parametrize(
    ("stack", "counted"),
    [
        # no run at 12 nodes counted requests: the count is the per-node count at 8 nodes held
        ("prod", "the benchmark counted 963, extrapolated: no run at 12 node(s) counted requests"),
        ("dev", "the benchmark counted 83, measured (counted at 1/2/4/8 node(s))"),
    ],
)
def test_the_benchmarks_count_of_completions_says_its_basis(stack: str, counted: str) -> None:
    run = run_main(plan_main, stack)
    assert run.returncode == 0
    assert counted in run.stdout
