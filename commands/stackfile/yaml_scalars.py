"""Plain YAML scalars read as the Pulumi CLI reads them, not as PyYAML does.

The CLI parses `Pulumi.yaml` and stack files with gopkg.in/yaml.v3 (pulumi/pulumi
sdk/go/common/encoding/marshal.go, `yamlMarshaler.Unmarshal`; sdk/go.mod pins v3.0.1) into
`interface{}` values (sdk/go/common/workspace/loaders.go, LoadProjectStackBytes), and the config
values become JSON from there (sdk/go/common/resource/config/object.go). yaml.v3 resolves an untagged
plain scalar by YAML 1.2's core schema (go-yaml/yaml resolve.go, `resolve`); PyYAML's SafeLoader by
YAML 1.1's. Where they differ, the offline render would read another value than `pulumi up` does:
* `yes`, `no`, `on`, `off` (any case) are booleans to PyYAML, strings to yaml.v3: only
  true/True/TRUE and false/False/FALSE are booleans;
* `1:30` is the base-60 number 90 to PyYAML, a string to yaml.v3 ("base 60 floats are a bad idea");
* `1e3`, `1.5e3` (an exponent without a sign or a dot) and `0o17` are strings to PyYAML, numbers to
  yaml.v3;
* `=` is YAML 1.1's `value` type to PyYAML, a string to yaml.v3.
yaml.v3's rules, as `resolve` applies them: a fixed table first (null, booleans, .inf and .nan
spellings); then, for a scalar that starts with a digit or a sign, an integer by Go's
`strconv.ParseInt(s, 0, 64)` after removing every `_` (prefixes 0x, 0o, 0b, and a leading 0 for
octal), an unsigned one by `ParseUint`, then a float matching its `yamlStyleFloat` pattern that
`ParseFloat` reads without overflow; for one that starts with `.`, whatever `ParseFloat` reads;
everything else is a string (a timestamp too: decoded into `interface{}` it keeps its text, decode.go).
"""

from __future__ import annotations

import math
import re
from typing import Any

from common.input_files import YAML_12_FLOAT

# yaml.v3's table of fixed spellings (resolve.go, resolveMapList).
FIXED: dict[str, tuple[str, Any]] = {
    **dict.fromkeys(("", "~", "null", "Null", "NULL"), ("null", None)),
    **dict.fromkeys(("true", "True", "TRUE"), ("bool", True)),
    **dict.fromkeys(("false", "False", "FALSE"), ("bool", False)),
    **dict.fromkeys((".nan", ".NaN", ".NAN"), ("float", math.nan)),
    **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), ("float", math.inf)),
    **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), ("float", -math.inf)),
}
# Go's ParseInt with base 0 (the underscores already removed): sign, then 0x / 0o / 0b / 0 prefix or decimal.
_GO_INTEGER = re.compile(
    r"^(?P<sign>[-+]?)(?:0[xX](?P<hex>[0-9a-fA-F]+)|0[bB](?P<binary>[01]+)|0[oO]?(?P<octal>[0-7]+)|(?P<decimal>0|[1-9][0-9]*))$"
)
_BASES = (("hex", 16), ("octal", 8), ("binary", 2), ("decimal", 10))
# What Go's ParseFloat reads of a scalar that starts with "." (no underscores, no hex floats: no prefix).
_DOT_FLOAT = re.compile(r"^\.[0-9]+([eE][-+]?[0-9]+)?$")
INT64_MIN, INT64_MAX, UINT64_MAX = -(2**63), 2**63 - 1, 2**64 - 1


def _go_integer(text: str) -> int | None:
    match = _GO_INTEGER.match(text)
    if match is None:
        return None
    if match["decimal"] is not None and len(match["decimal"]) > 20:
        return None  # beyond 64 bits, and short of Python's digit limit for int()
    digits, base = next((match[name], base) for name, base in _BASES if match[name] is not None)
    value = int(digits, base) * (-1 if match["sign"] == "-" else 1)
    if INT64_MIN <= value <= INT64_MAX or (not match["sign"] and value <= UINT64_MAX):
        return value  # ParseInt, or ParseUint (which takes no sign)
    return None


def _finite_float(text: str) -> float | None:
    value = float(text)
    return value if math.isfinite(value) else None  # ParseFloat's range error: not a float


def plain_scalar(text: str) -> tuple[str, Any]:
    """The type (`null`, `bool`, `int`, `float` or `str`) and value yaml.v3 gives an untagged plain scalar."""
    if text in FIXED:
        return FIXED[text]
    if text.startswith(".") and _DOT_FLOAT.match(text) and (value := _finite_float(text)) is not None:
        return "float", value
    if text[0] in "+-0123456789":  # ASCII only, as Go's table
        plain = text.replace("_", "")
        if (integer := _go_integer(plain)) is not None:
            return "int", integer
        if YAML_12_FLOAT.match(plain) and (number := _finite_float(plain)) is not None:
            return "float", number
    return "str", text
