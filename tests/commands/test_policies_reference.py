"""docs/policies.md's list of rules, generated from the pack (`python -m commands.policies_reference`)."""

from __future__ import annotations

from commands import policies_reference
from policies.pack import POLICIES
from tests.rendered import ROOT


def test_docs_list_every_rule() -> None:
    readme = (ROOT / "docs" / "policies.md").read_text()
    assert policies_reference.with_rules(readme) == readme, "run `python -m commands.policies_reference`"
    for policy in POLICIES:
        assert f"| {policy.name} | {policy.enforcement_level.value} |" in readme
