"""How a planned figure was got, in the words plan.md and `plan` print beside it."""

from __future__ import annotations

from commands.plan.assumptions import ExplainedExpectation


def measured_on(expected: ExplainedExpectation, basis: str | None, releases: tuple[str, ...] | None = None) -> str:
    """The basis (measured, interpolated, extrapolated) and, when the runs were on another vLLM release
    than the stack's, that their figures are carried over to it: an assumption the figure's own label
    says, not only the Assumptions list (which gives what changed between the releases). `releases`: those
    of the runs the figure reads (default: the throughput's)."""
    carried = sorted(set(expected.figure_releases if releases is None else releases) - {expected.release})
    if not carried:
        return basis or "not measured"
    runs = f"{basis} from runs" if basis in ("interpolated", "extrapolated") else basis
    return (
        f"{runs} on vLLM {'/'.join(carried)}, carried over to {expected.release}: assumed, not measured on "
        f"{expected.release}"
    )
