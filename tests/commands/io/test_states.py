"""What a render's states tell a preview: the settings that changed between two renders (commands/io/states.py)."""

from __future__ import annotations

import dataclasses

from commands.io.states import RenderStates, changed_settings


def states(digests: dict[str, str]) -> RenderStates:
    return RenderStates([], None, None, setting_digests={key: f"sha256:{value:0>16}" for key, value in digests.items()})


def test_a_group_that_differs_only_by_a_field_one_release_lacks_did_not_change() -> None:
    """A release that adds a setting (a new field of routing.gateway, at its default) changes the digests of its
    groups: a preview named routing.gateway behind every change of the update, though no stack file changed."""
    old = states({"routing": "1", "routing.gateway": "2", "routing.gateway.eppImage": "3", "engine": "4"})
    grown = {"routing": "5", "routing.gateway": "6", "routing.gateway.eppImage": "3", "routing.gateway.newField": "7"}
    assert changed_settings(old, states({**grown, "engine": "4"})) == frozenset()
    moved = {**grown, "routing.gateway.eppImage": "8", "engine": "4"}
    assert changed_settings(old, states(moved)) == frozenset({"routing", "routing.gateway", "routing.gateway.eppImage"})


def test_a_group_set_to_or_from_null_changed_as_a_whole() -> None:
    old = states({"engine": "1", "engine.speculative": "2"})
    new = states({"engine": "3", "engine.speculative": "4", "engine.speculative.method": "5"})
    assert changed_settings(old, new) == frozenset({"engine", "engine.speculative"})
    # the fields of the side that sets the group are not named apart, written or not
    written = dataclasses.replace(new, settings={"engine": {"speculative": {"method": "mtp"}}})
    assert changed_settings(old, written) == frozenset({"engine", "engine.speculative"})
    assert changed_settings(old, states({"engine": "1", "engine.speculative": "2"})) == frozenset()


def test_a_setting_one_release_lacks_that_the_stack_file_sets_changed() -> None:
    """Upgraded and set in the same update: the old render has no digest of the new setting, and the group's common
    fields agree; the new render's written settings show the file sets it, so it is named, not "no setting"."""
    old = states({"routing": "1", "routing.gateway": "2", "routing.gateway.eppImage": "3"})
    grown = {"routing": "5", "routing.gateway": "6", "routing.gateway.eppImage": "3", "routing.gateway.address": "7"}
    new = states(grown)
    assert changed_settings(old, new) == frozenset()
    new = dataclasses.replace(new, settings={"routing": {"gateway": {"address": "llm-ip"}}})
    assert changed_settings(old, new) == frozenset({"routing", "routing.gateway", "routing.gateway.address"})
