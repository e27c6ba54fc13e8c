"""VllmEngine's helpers on their own: the rollout wait grows with the nodes and the capacity sources;
a quantity is shared over containers."""

from __future__ import annotations

import pytest

from components.vllm import rollout_wait, share


def test_rollout_wait_grows_with_nodes_and_sources() -> None:
    small, more_nodes, more_sources = rollout_wait(1, 1, 1), rollout_wait(4, 1, 1), rollout_wait(1, 3, 1)
    assert more_nodes.update_minutes == 4 * small.update_minutes
    assert more_nodes.create_minutes == small.create_minutes
    assert more_sources.create_minutes > small.create_minutes


@pytest.mark.parametrize(
    ("quantity", "parts", "part"),
    [
        ("1800Gi", 8, "225Gi"),
        ("100", 8, "12500m"),
        ("500m", 8, "62m"),
        ("1e3", 8, "125"),
        ("10Gi", 3, str(10 * 2**30 // 3)),
        ("7", 1, "7"),
        ("2E", 2, "1E"),  # E is exa, not an exponent
        ("2Ei", 2, "1Ei"),
    ],
)
def test_a_quantity_is_shared_in_its_own_unit_where_it_divides(quantity: str, parts: int, part: str) -> None:
    assert share(quantity, parts) == part


@pytest.mark.parametrize("quantity", ["-8", "+8", "16u", "4n", "16GB", ""])
def test_a_quantity_a_container_cannot_take_a_part_of_is_refused(quantity: str) -> None:
    with pytest.raises(ValueError, match="cannot divide"):
        share(quantity, 2)
