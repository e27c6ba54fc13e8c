"""Kubernetes quantities (`500m`, `16Gi`, `1.5e3`) as the API server parses them: the config's checks
(stacks/) and the components that divide a quantity over containers (components/vllm.py) read one grammar."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

# apimachinery pkg/api/resource/quantity.go:
#   <quantity> ::= <signedNumber><suffix>; <suffix> ::= <binarySI> | <decimalExponent> | <decimalSI>
QUANTITY = re.compile(
    r"^(?P<number>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$"
)
# apimachinery caps a quantity at 2^63 - 1 base units ("Max" of int64Amount): anything larger is a typo.
QUANTITY_MAX = Decimal(2**63 - 1)
SUFFIX_FACTORS = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
    **{suffix: Decimal(1024) ** (index + 1) for index, suffix in enumerate(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"))},
}


def quantity_value(value: str) -> Decimal | None:
    """The number a Kubernetes quantity stands for, or None when it does not parse."""
    match = QUANTITY.fullmatch(value) if value.isascii() else None
    if match is None:
        return None
    suffix = match["suffix"] or ""
    try:
        number = Decimal(match["number"])
        if suffix not in SUFFIX_FACTORS:  # a decimal exponent, e3 or E-2 (`E` alone is exa, `Ei` exbi)
            return number * Decimal(10) ** int(suffix[1:])
        return number * SUFFIX_FACTORS[suffix]
    except (InvalidOperation, ValueError, OverflowError):
        return None
