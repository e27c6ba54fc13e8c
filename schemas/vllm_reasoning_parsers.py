"""The `--reasoning-parser` names each pinned vLLM release registers, vendored in
`schemas/vllm/reasoning-parsers.json` beside the argument tables.

The argument tables cannot hold them: the parser takes any string (0.19.0) and vLLM checks the name
only when the API server starts (vllm/entrypoints/openai/api_server.py `validate_api_server_args`:
`KeyError: invalid reasoning parser: NAME (chose from {...})`), so a name the release does not
register crash-loops the pods. The names are ReasoningParserManager.list_registered(): the keys of
`_REASONING_PARSERS_TO_REGISTER` in vllm/reasoning/__init__.py (registered lazily) plus any
`@ReasoningParserManager.register_module("name")` under vllm/reasoning/ (counted even where its module
is not imported at start-up: the list may be wider than vLLM's, never narrower); a
`--reasoning-parser-plugin` file or a general plugin can add more. `refresh` reads them from the
release's wheel, without importing or installing vLLM:

    pip download vllm==VERSION --no-deps --only-binary :all: --python-version 3.12 \
      --platform manylinux_2_28_x86_64 --platform manylinux_2_31_x86_64 -d /tmp/vllm-wheel
    make reasoning-parsers VERSION=VERSION WHEEL=/tmp/vllm-wheel/vllm-VERSION-...whl
"""

from __future__ import annotations

import ast
import hashlib
import json
import sys
import zipfile
from functools import cache
from pathlib import Path
from typing import Any

from schemas.vllm_args import DIRECTORY, render_table

TABLE = DIRECTORY / "reasoning-parsers.json"
GENERATOR = "schemas/vllm_reasoning_parsers.py"
PACKAGE = "vllm/reasoning/"
REGISTRY = "_REASONING_PARSERS_TO_REGISTER"


@cache
def _releases() -> dict[str, Any]:
    releases: dict[str, Any] = json.loads(TABLE.read_text())["releases"]
    return releases


def registered(version: str) -> tuple[str, ...] | None:
    """The reasoning parser names vLLM `version` registers, or None when none are vendored for it."""
    release = _releases().get(version)
    return None if release is None else tuple(release["names"])


def _registry_keys(tree: ast.Module) -> list[str]:
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Dict):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(target, ast.Name) and target.id == REGISTRY for target in targets):
                return [
                    key.value for key in node.value.keys if isinstance(key, ast.Constant) and isinstance(key.value, str)
                ]
    return []


def _decorated_names(tree: ast.Module) -> list[str]:
    """Names given to `@ReasoningParserManager.register_module(...)` (a string or a list of strings)."""
    names: list[str] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr != "register_module":
            continue
        given = [*node.args[:1], *(keyword.value for keyword in node.keywords if keyword.arg == "name")]
        for value in given:
            items = value.elts if isinstance(value, ast.List | ast.Tuple) else [value]
            names += [item.value for item in items if isinstance(item, ast.Constant) and isinstance(item.value, str)]
    return names


def names_in_wheel(wheel: Path) -> list[str]:
    """Every reasoning parser name the wheel's vllm/reasoning/ registers, sorted."""
    found: set[str] = set()
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.namelist():
            if member.startswith(PACKAGE) and member.endswith(".py"):
                tree = ast.parse(archive.read(member))
                found.update(_decorated_names(tree))
                if member == PACKAGE + "__init__.py":
                    found.update(_registry_keys(tree))
    if not found:
        raise ValueError(f"{wheel}: no reasoning parser registered in {PACKAGE} (not a vLLM wheel?)")
    return sorted(found)


def refresh(version: str, wheel: Path, table: Path = TABLE) -> None:
    """Record `version`'s names from its wheel (named vllm-VERSION-...) in the vendored table."""
    if not wheel.name.startswith(f"vllm-{version}-"):
        raise ValueError(f"{wheel.name} is not a wheel of vllm {version}")
    document = json.loads(table.read_text())
    document["releases"][version] = {
        "names": names_in_wheel(wheel),
        "source": f"vllm/reasoning/ of the vllm=={version} wheel from PyPI ({wheel.name}): the keys of "
        f"{REGISTRY} in __init__.py and any register_module names",
        "wheel_sha256": hashlib.sha256(wheel.read_bytes()).hexdigest(),
    }
    table.write_text(render_table(document))


if __name__ == "__main__":  # pragma: no cover - the Makefile's entry point
    refresh(sys.argv[1], Path(sys.argv[2]))
