"""docs/settings.md is generated from the config model, and every key there is documented in place."""

from __future__ import annotations

from pydantic import BaseModel

from commands import settings_reference as reference
from commands.settings_reference import GENERATOR, sections, settings_markdown
from stacks.config.stack import StackConfig
from tests.rendered import ROOT, run_main

PAGE = ROOT / "docs" / "settings.md"


def test_settings_page_is_current() -> None:
    assert PAGE.read_text() == settings_markdown(), f"docs/settings.md is stale: run `make docs` ({GENERATOR})"


def test_the_command_prints_the_page() -> None:
    run = run_main(reference.main)
    assert (run.returncode, run.stdout, run.stderr) == (0, settings_markdown(), "")


def test_every_model_and_field_is_documented() -> None:
    models = {section.model for section in sections()}
    undocumented = [model.__name__ for model in models if not model.__doc__ or model.__doc__ == BaseModel.__doc__]
    assert not undocumented, f"models without a docstring: {undocumented}"
    missing = [
        f"{model.__name__}.{name}"
        for model in models
        for name, info in model.model_fields.items()
        if not (info.description and info.description.strip())
    ]
    assert not missing, f"fields without Field(description=...): {missing}"


def test_every_key_has_a_row() -> None:
    page = settings_markdown()
    for section in sections():
        for name, info in section.model.model_fields.items():
            key = info.alias or name
            assert f"| `{section.path + '.' if section.path else ''}{key}` |" in page


def test_nested_groups_lists_and_kinds_are_reached() -> None:
    paths = {section.path for section in sections()}
    assert {"cluster.network", "cluster.authorizedNetworks[]", "capacity.sources[]", "schedule.entries[]"} <= paths
    titles = {section.title for section in sections()}
    assert {f"`capacity.sources[]` with `type: {kind}`" for kind in ("spot", "flexStart", "reservation")} <= titles
    assert StackConfig in {section.model for section in sections()}


def test_a_row_says_type_default_bounds_and_meaning() -> None:
    page = settings_markdown()
    assert (
        "| `engine.gpuMemoryUtilization` | number | `0.92` | more than 0.0, at most 1.0 | `--gpu-memory-utilization`"
        in page
    )
    assert "| `capacity.nodes` | integer or null | `null` | 1 to 256 |" in page
    assert "| `environment` | string | required | `dev`, `staging`, `prod` |" in page
    # A string YAML would read as a number is shown quoted, as a stack file must write it.
    assert "| `engine.cpu` | string | `'200'` |" in page
