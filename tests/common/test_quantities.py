"""Kubernetes quantities, on examples from apimachinery's grammar."""

from __future__ import annotations

from decimal import Decimal

import pytest

from common.quantities import quantity_value


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("4", 4),
        ("500m", Decimal("0.5")),
        ("16Gi", 16 * 2**30),
        ("1.5e3", 1500),
        (".5", Decimal("0.5")),
        ("2k", 2000),
        ("1E", 10**18),
        ("1Ei", 2**60),
        ("1E-2", Decimal("0.01")),
    ],
)
def test_quantities(text: str, value: Decimal) -> None:
    assert quantity_value(text) == value


@pytest.mark.parametrize("text", ["16GB", "1..5", "", "Gi", "4 Gi", "1e", "\u0664"])
def test_not_quantities(text: str) -> None:
    assert quantity_value(text) is None
