"""The layout the two wings keep: `stacks/` holds what `pulumi up` runs and stays small enough to read,
the console scripts live outside it and outside the policy pack, the config becomes component Args in
one module, a capacity-source kind is spelled out in few places, and the tests mirror the packages."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

from components.capacity import CAPACITY_KINDS
from tests.rendered import ROOT

PRODUCT_PACKAGES = ("commands", "common", "components", "policies", "schemas", "stacks")
STACKS_MAX_LINES = 7_000
ARGS_MODULES_MAX = 2
KIND_MODULES_MAX = 3
COMMON_CHANGES = (
    "A fifth model profile",
    "A new policy",
    "A new capacity source",
    "A new preview replacement rule",
    "A new console command",
    "A new kind of secret (a token format)",
)


def _modules(package: str) -> list[Path]:
    return sorted(path for path in (ROOT / package).rglob("*.py") if "__pycache__" not in path.parts)


def _product_modules() -> list[Path]:
    return [ROOT / "__main__.py", *(path for package in PRODUCT_PACKAGES for path in _modules(package))]


def test_stacks_holds_at_most_7000_lines() -> None:
    lines = sum(len(path.read_text().splitlines()) for path in _modules("stacks"))
    assert lines <= STACKS_MAX_LINES, (
        f"stacks/ has {lines} lines: what only the commands run goes to commands/, what both wings read to common/"
    )


def test_console_scripts_live_outside_stacks_and_the_policy_pack() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts
    for name, target in scripts.items():
        module = target.split(":")[0]
        assert module.split(".")[0] not in ("stacks", "policies"), f"console script {name} points into {module}"


def test_component_args_are_built_in_at_most_two_modules_of_stacks() -> None:
    building = set()
    for path in _modules("stacks"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and ast.unparse(node.func).split(".")[-1].endswith("Args"):
                building.add(path.relative_to(ROOT).as_posix())
    assert building and len(building) <= ARGS_MODULES_MAX, sorted(building)


def test_each_capacity_source_kind_is_spelled_out_in_at_most_three_product_modules() -> None:
    spelled: dict[str, set[str]] = {kind: set() for kind in CAPACITY_KINDS}
    for path in _product_modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and node.value in spelled:
                spelled[node.value].add(path.relative_to(ROOT).as_posix())
    for kind, modules in spelled.items():
        assert 1 <= len(modules) <= KIND_MODULES_MAX, f"{kind!r} is spelled out in {sorted(modules)}"


def test_the_tests_mirror_the_packages_and_the_wings_subpackages() -> None:
    wings_subpackages = [
        path.parent.relative_to(ROOT).as_posix()
        for wing in ("commands", "stacks")
        for path in (ROOT / wing).glob("*/__init__.py")
    ]
    for package in (*PRODUCT_PACKAGES, *wings_subpackages):
        assert (ROOT / "tests" / package / "__init__.py").is_file(), f"no tests/{package}/"


def test_the_contributor_guide_says_where_each_common_change_goes() -> None:
    guide = (ROOT / "CONTRIBUTING.md").read_text()
    headings = {line.lstrip("#").strip() for line in guide.splitlines() if line.startswith("### ")}
    assert set(COMMON_CHANGES) <= headings, sorted(set(COMMON_CHANGES) - headings)
    assert "## How to check a change" in guide


def test_every_subpackage_of_the_commands_has_its_place_in_their_layers() -> None:
    """lint-imports only checks the modules a contract names: a command left out of the layers could import
    any other command unchecked."""
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (layers,) = [
        contract["layers"]
        for contract in contracts
        if contract["type"] == "layers" and contract["layers"][0].startswith("commands.")
    ]
    layered = {name.strip() for layer in layers for name in layer.split("|")}
    subpackages = {f"commands.{path.parent.name}" for path in (ROOT / "commands").glob("*/__init__.py")}
    assert subpackages <= layered, sorted(subpackages - layered)
