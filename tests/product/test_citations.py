"""What the product cites: public sources a user can open (titles and links), never the team's notes
(a RECIPE.md, a ../shared path), a project issue number, or an upstream issue or pull request by bare
number (a link says which repository it is in)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from common.sources import UNCITABLE, WRITEUP, WRITEUP_TITLE, WRITEUP_URL
from tests.rendered import ROOT, RenderedStack

# Vendored third-party files are quoted as published; common/sources.py spells out what the rule finds.
VENDORED = ("schemas/crds/", "uv.lock", "common/sources.py")


def product_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return [ROOT / name for name in listed if not name.startswith(("tests/", *VENDORED)) and (ROOT / name).is_file()]


def uncitable(text: str) -> list[str]:
    return [match.group(0) for match in UNCITABLE.finditer(text)]


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("see RECIPE.md section 2", ["RECIPE.md"]),
        ("(RECIPE section 9)", ["RECIPE section"]),
        ("../shared/RECIPE.md", ["../shared/RECIPE.md"[:9], "RECIPE.md"]),
        ("quoted in project issue 12", ["issue 12"]),
        ("the fix of #37618", ["#37618"]),
        ("https://github.com/vllm-project/vllm/pull/38083", []),
        ("RECIPE = (", []),
        ("a ## heading and &#8212; and [#1234](url)", []),
        ("vllm#55673", ["vllm#55673"]),
        ("hashicorp/terraform-provider-google#7637", []),
    ],
)
def test_the_pattern_finds_what_a_user_cannot_open(text: str, found: list[str]) -> None:
    assert uncitable(text) == found


def test_no_product_file_cites_the_notes_or_an_issue_number() -> None:
    files = product_files()
    assert len(files) > 100, "the listing found the repository's files"
    offenders = {
        str(path.relative_to(ROOT)): hits
        for path in files
        if (hits := uncitable(path.read_text(encoding="utf-8", errors="replace")))
    }
    assert offenders == {}


def test_no_render_output_cites_the_notes_or_an_issue_number(stack: RenderedStack) -> None:
    offenders = {
        str(path.relative_to(stack.directory)): hits
        for path in sorted(stack.directory.rglob("*"))
        if path.is_file() and (hits := uncitable(path.read_text(encoding="utf-8", errors="replace")))
    }
    assert offenders == {}


def test_the_write_up_is_cited_by_title_and_link(dev: RenderedStack) -> None:
    assert WRITEUP_TITLE in WRITEUP and WRITEUP_URL in WRITEUP
    assert "Medium, Google Cloud - Community, March 2026" in WRITEUP
    assert WRITEUP_TITLE in dev.plan and WRITEUP_URL in dev.plan
    measurements = (ROOT / "stacks" / "capacity" / "measurements.yaml").read_text()
    assert WRITEUP_TITLE in measurements and WRITEUP_URL in measurements


def test_time_to_serve_cites_its_sources_by_link(dev: RenderedStack) -> None:
    # plan.md's Time to serve table and capacity.json: a measured phase names the write-up by title and
    # link (it said "the write-up (Google Cloud - Community, March 2026)"), every goal source has a link
    time_to_serve = json.loads((dev.directory / "capacity.json").read_text())["timeToServe"]
    measured = [phase["source"] for phase in time_to_serve["phases"] if phase["basis"] == "measured"]
    assert measured, "the node and pod phases are the write-up's"
    for source in measured:
        assert WRITEUP_TITLE in source and WRITEUP_URL in source, source
    for source in time_to_serve["goal_sources"]:
        assert "https://" in source, source


# generated from the policies' reasons (make docs), where a reason cites no figure of the write-up
GENERATED_DOCS = ("docs/policies.md",)


def test_a_docs_page_that_leans_on_the_write_up_links_it() -> None:
    pages = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
    unlinked = [
        str(page.relative_to(ROOT))
        for page in pages
        if str(page.relative_to(ROOT)) not in GENERATED_DOCS
        and "write-up" in (text := page.read_text(encoding="utf-8"))
        and WRITEUP_URL not in text
    ]
    assert unlinked == []


def test_the_policy_pack_cites_the_write_up_as_the_product_does() -> None:
    """The pack runs without common/ and keeps its own copy of the citation."""
    from policies import sources as pack_sources

    assert pack_sources.WRITEUP == WRITEUP
