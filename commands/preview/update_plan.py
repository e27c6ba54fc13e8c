"""The engine's plan from one state to another, offline: match resources, diff their inputs, decide
update or replace, spread replacements, and how each replacement is ordered.

Engine and provider behaviour modelled here, with its source:
* Resources are matched by URN: type, logical name and the parent chain's types
  (pulumi/pulumi sdk/go/common/resource/urn.go).
* A provider's DiffConfig that asks for replacement replaces every resource the provider manages
  (pulumi/pulumi pkg/resource/deploy/step_generator.go `providerChanged`).
* A replaced resource's computed outputs are unknown at preview, so inputs built from them change to
  unknown in every resource that uses them; on an immutable field that is a replacement too.
* `ignoreChanges` paths are not diffs (processIgnoreChanges); `replaceOnChanges` paths turn updates
  into replacements (applyReplaceOnChanges).
* A `replacementTrigger` that changes replaces the resource without asking its provider, so only the
  `deleteBeforeReplace` option orders it; a side without a trigger (a state from before it) is no change
  (pulumi/pulumi@1b594989 pkg/resource/deploy/step_generator.go `shouldTriggerReplace`).
* A resource is replaced with every resource its `replaceWith` option names, and deleted before one
  replaced delete-first (`findDependentCascadeReplacements`).
* A field the provider keeps when the program drops it (Optional+Computed,
  `commands/preview/computed_fields.py`) is no diff: "no change: the old value stays".
* A secret is compared by its digest (`commands/engine/secrets.py`), never by its value.
* Replacement order: the provider decides unless the `deleteBeforeReplace` option is set
  (pulumi/pulumi@1b594989 pkg/resource/deploy/step_generator.go:2030-2046). pulumi-kubernetes deletes
  first when the object keeps its explicit name and namespace (pulumi/pulumi-kubernetes
  provider/pkg/provider/provider.go Diff, `deleteBeforeReplace`). pulumi-gcp auto-names every `name`
  input (pulumi/pulumi-gcp@ed6078aa provider/resources.go:3014 `prov.SetAutonaming(255, "-")`,
  pulumi/pulumi-terraform-bridge@59de6c66 pkg/tfbridge/info/autonaming.go), and the bridge's Diff
  deletes first whenever the program set such a name itself (pkg/tfbridge/provider.go:1275-1276,
  `nameRequiresDeleteBeforeReplace` in pkg/tfbridge/schema.go:193-245): a replacement never creates a
  second object under the same name, it deletes the old one first. The Helm release creates first.
* Before deleting a resource replaced delete-first, the engine deletes every resource that depends on
  it (dependsOn, property dependencies, provider, deletedWith) and would be replaced with it: the
  dependent's Diff with the inputs built from the replace set made unknown, or its provider in the
  replace set, transitively (pulumi/pulumi@1b594989 pkg/resource/deploy/step_generator.go
  `calculateDependentReplacements` with pkg/resource/graph/dependency_graph.go `DependingOn`; the
  dependents are deleted in reverse dependency order by `NewDeleteReplacementStep`, then re-created
  when the program registers them again, "Case 1: recreating"). A Kubernetes provider whose
  kubeconfig is unknown asks for replacement (pulumi/pulumi-kubernetes@94977969
  provider/pkg/provider/provider.go `DiffConfig`: "We can't tell for sure if a computed value has
  changed ... force a replacement"), so a cluster replaced delete-first deletes every Kubernetes
  object on it first, whatever their own provider would choose.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pulumi.runtime import mocks as pulumi_mocks

from commands.engine import mocks
from commands.engine.property_paths import Segment, format_path, parse_path, path_touches
from commands.engine.secrets import secret_shown
from commands.io.records import RENDER_SECRET_MARK, SECRET_DIGESTS, TRIGGER_DIGESTS
from commands.io.render_dir import PreviewInputError
from commands.io.states import Record
from commands.preview.changes import (
    ACTIONS,
    MISSING,
    InputChange,
    KeptValue,
    Preview,
    ProviderEffect,
    ResourceChange,
    Unknown,
    value_at,
)
from commands.preview.computed_fields import computed_fields_holding
from commands.preview.provider_effects import delete_effect, update_effect
from commands.preview.replacement_rules import ReplacementRule, is_kubernetes_object, rule_for
from commands.preview.setting_sources import SettingValues, name_settings

TRIGGER = "replacementTrigger"
BY_OPTION = "the deleteBeforeReplace option"
BY_KUBERNETES = "pulumi-kubernetes (same name and namespace)"
BY_GCP_BRIDGE = "pulumi-gcp (the program sets its name)"
BY_ENGINE = "the engine (replaced with {root}, which is deleted first)"
BY_ENGINE_DELETE = (
    "the engine, before {root}, which is replaced delete-first: this is built from it (or from what is deleted first "
    "with it)"
)
FOLLOWS_A_REPLACEMENT = "it follows the replacement of what it depends on, whose change names no setting"


def _by_name(records: list[Record]) -> dict[str, Record]:
    """Logical name -> record; a component wins when a name is shared (parents are components)."""
    named: dict[str, Record] = {}
    for record in sorted(records, key=lambda record: record["custom"], reverse=True):
        named[record["name"]] = record
    return named


def index_by_urn(records: list[Record], where: str) -> dict[str, Record]:
    """URN without the stack and project parts: `<parent types $ ... $ type>::<name>`, as the engine builds it."""
    named = _by_name(records)

    def qualified_type(record: Record) -> str:
        """The types from the root parent down, walked up without recursion (a chain of a thousand parents
        is no render's, but is read) and stopped at a parent seen already (a cycle)."""
        types, seen = [str(record["type"])], {record["name"]}
        while (parent := named.get(record["parent"]) if record.get("parent") else None) and parent["name"] not in seen:
            types.append(str(parent["type"]))
            seen.add(parent["name"])
            record = parent
        return "$".join(reversed(types))

    indexed: dict[str, Record] = {}
    for record in records:
        urn = f"{qualified_type(record)}::{record['name']}"
        if urn in indexed:
            raise PreviewInputError(f"{where}: two resources share the URN {urn}")
        indexed[urn] = record
    return indexed


def diff_values(old: Any, new: Any, path: tuple[Segment, ...] = ()) -> list[tuple[tuple[Segment, ...], Any, Any]]:
    """Leaf-level differences; lists of equal length element by element, others as a whole.

    An object added or removed is diffed field by field against nothing: the providers diff set
    fields (a new `privateClusterConfig` with only `enablePrivateNodes` does not touch the ForceNew
    `privateClusterConfig.masterIpv4CidrBlock`; pulumi-kubernetes' `PatchPropertiesChanged` matches
    a force-new path only where the patch holds a value)."""
    if isinstance(new, dict) and old is MISSING:
        old = {}
    if isinstance(old, dict) and new is MISSING:
        new = {}
    if isinstance(old, dict) and isinstance(new, dict):
        found = []
        for key in sorted(set(old) | set(new)):
            found += diff_values(old.get(key, MISSING), new.get(key, MISSING), (*path, key))
        return found
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        found = []
        for index, (old_item, new_item) in enumerate(zip(old, new, strict=True)):
            found += diff_values(old_item, new_item, (*path, index))
        return found
    return [] if old == new else [(path, old, new)]


def values_at(value: Any, path: tuple[Segment, ...] = ()) -> list[tuple[tuple[Segment, ...], Any]]:
    if isinstance(value, dict):
        return [leaf for key in sorted(value) for leaf in values_at(value[key], (*path, key))]
    if isinstance(value, list):
        return [leaf for index, item in enumerate(value) for leaf in values_at(item, (*path, index))]
    return [(path, value)]


def _ignored(path: str, ignore_changes: list[str]) -> bool:
    changed = parse_path(path)
    return (
        any(len(parse_path(ignore)) <= len(changed) and path_touches(ignore, path) for ignore in ignore_changes)
        or "*" in ignore_changes
    )


def _trigger_changed(old_options: dict[str, Any], new_options: dict[str, Any]) -> bool:
    """Compared as the engine compares property values: a bool is not the number 1; a secret by its digests."""
    old, new = old_options.get(TRIGGER), new_options.get(TRIGGER)
    if old is None or new is None:
        return False
    return any(
        json.dumps(old_options.get(key), sort_keys=True) != json.dumps(new_options.get(key), sort_keys=True)
        for key in (TRIGGER, TRIGGER_DIGESTS)
    )


def _replace_on_changes(path: str, replace_on_changes: list[str]) -> bool:
    return "*" in replace_on_changes or any(path_touches(entry, path) for entry in replace_on_changes)


def _mock_references(record: Record) -> set[str]:
    """Strings by which other inputs carry this resource's computed outputs in a render: the id and
    the outputs the offline mocks add (selfLink, cluster endpoint), all unknown while it is replaced."""
    resource_id, state = mocks.OfflineMocks().new_resource(
        pulumi_mocks.MockResourceArgs(record["type"], record["name"], record["inputs"], "", "", record["custom"])
    )
    computed = {
        value for key, value in state.items() if key not in record["inputs"] and key != "id" and isinstance(value, str)
    }
    return {resource_id, *computed}


@dataclass(frozen=True)
class _Carried:
    """How other inputs carry a resource's outputs: its id and computed outputs (`_mock_references`), or its name (a
    disk's in a volume's handle, a volume's in a claim)."""

    name: str
    references: frozenset[str]
    names: frozenset[str]

    @classmethod
    def of(cls, record: Record) -> _Carried:
        inputs = record["inputs"]
        names = (inputs.get("name"), (inputs.get("metadata") or {}).get("name"))
        return cls(
            record["name"],
            frozenset(_mock_references(record)),
            frozenset(name for name in names if isinstance(name, str) and name),
        )

    def forces(self, record: Record, rule: ReplacementRule) -> bool:
        """`record` has an input carrying these outputs at a path whose unknown value forces a replacement."""
        for segments, value in values_at(record["inputs"]):
            carried = isinstance(value, str) and (
                any(reference in value for reference in self.references)
                or any(value == name or value.endswith(f"/{name}") for name in self.names)
            )
            if carried and rule.forces_replacement(format_path(segments), value, Unknown(self.name)):
                return True
        return False


def _urn_of_name(indexed: dict[str, Record]) -> dict[str, str]:
    """Logical name -> URN; a custom resource wins a shared name (providers and dependencies are custom)."""
    return {record["name"]: urn for urn, record in sorted(indexed.items(), key=lambda item: item[1]["custom"])}


def _location(record: Record) -> str:
    inputs = record["inputs"]
    return str(inputs.get("location") or inputs.get("region") or inputs.get("zone") or "")


class UpdatePlanner:
    def __init__(
        self,
        old: dict[str, Record],
        new: dict[str, Record],
        changed: frozenset[str] | None = None,
        values: SettingValues | None = None,
    ) -> None:
        self.old, self.new, self.changed, self.values = old, new, changed, values
        self.new_by_name = _by_name(list(new.values()))
        self.urn_of_name = _urn_of_name(new)
        self.old_urn_of_name = _urn_of_name(old)
        self.changes: dict[str, ResourceChange] = {}
        self.kept: list[KeptValue] = []

    def plan(self) -> tuple[list[ResourceChange], int]:
        for urn in sorted(set(self.old) | set(self.new)):
            if urn not in self.old:
                self.changes[urn] = ResourceChange(urn, self.new[urn], "create")
            elif urn not in self.new:
                effect = delete_effect(self.old[urn])
                self.changes[urn] = ResourceChange(
                    urn, self.old[urn], "delete", effect=ProviderEffect(*effect) if effect else None
                )
            else:
                self._diff(urn)
        name_settings(
            [change for change in self.changes.values() if change.action != "same"],
            self.old,
            self.new,
            self.changed,
            self.values,
        )
        self._propagate_replacements()
        for change in self.changes.values():
            if change.action != "same" and not change.config_keys and not change.no_config_keys:
                change.no_config_keys = FOLLOWS_A_REPLACEMENT
        for change in self.changes.values():
            if change.action == "replace":
                change.delete_first_by = self._delete_first_by(change)
                change.delete_before_replace = bool(change.delete_first_by)
                self._not_kept_when_replaced(change)
        self._delete_dependents_first()
        changes = sorted(
            (change for change in self.changes.values() if change.action != "same"),
            key=lambda change: (ACTIONS.index(change.action), change.urn),
        )
        return changes, sum(change.action == "same" for change in self.changes.values())

    def _diffs(self, old: Record, new: Record) -> list[tuple[str, Any, Any]]:
        """Input paths that differ, with secrets compared by their digests and shown as them."""
        old_digests, new_digests = old.get(SECRET_DIGESTS, {}), new.get(SECRET_DIGESTS, {})
        found = []
        for segments, old_value, new_value in diff_values(old["inputs"], new["inputs"]):
            path = format_path(segments)
            found.append(
                (
                    path,
                    secret_shown(old_digests.get(path)) if path in old_digests else old_value,
                    secret_shown(new_digests.get(path)) if path in new_digests else new_value,
                )
            )
        for path in sorted(set(old_digests) & set(new_digests)):
            unchanged_redaction = value_at(old["inputs"], parse_path(path)) == value_at(new["inputs"], parse_path(path))
            if old_digests[path] != new_digests[path] and unchanged_redaction:
                found.append((path, secret_shown(old_digests[path]), secret_shown(new_digests[path])))
        return found

    def _kept(self, urn: str, new: Record, path: str, old_value: Any, new_value: Any) -> bool:
        """A dropped Optional+Computed field (the outermost one dropped): recorded once, no diff."""
        if new_value is not MISSING or old_value is MISSING:
            return False
        dropped = [
            entry
            for entry in computed_fields_holding(new["type"], path)
            if value_at(new["inputs"], parse_path(entry.path)) is MISSING
        ]
        if not dropped:
            return False
        entry = dropped[0]
        if not any(kept.urn == urn and kept.path == entry.path for kept in self.kept):
            old_whole = value_at(self.old[urn]["inputs"], parse_path(entry.path))
            by_hand = (
                entry.by_hand.format(name=new["inputs"].get("name", new["name"]), location=_location(new))
                if entry.by_hand
                else None
            )
            self.kept.append(KeptValue(urn, entry.path, old_whole, entry.explicit_off, by_hand, entry.source))
        return True

    def _not_kept_when_replaced(self, change: ResourceChange) -> None:
        """A replacement is created from the program's inputs alone: nothing of the old state stays."""
        for kept in [kept for kept in self.kept if kept.urn == change.urn]:
            self.kept.remove(kept)
            change.inputs.append(InputChange(kept.path, kept.old, MISSING, False))

    def _diff(self, urn: str) -> None:
        old, new = self.old[urn], self.new[urn]
        rule = rule_for(new["type"])
        ignore = list(new["options"].get("ignoreChanges") or [])
        replace_on = list(new["options"].get("replaceOnChanges") or [])
        change = ResourceChange(urn, new, "same", no_rule=new["custom"] and rule is None)
        for path, old_value, new_value in self._diffs(old, new):
            if _ignored(path, ignore) or self._kept(urn, new, path, old_value, new_value):
                continue
            replaces = new["custom"] and (
                (rule is not None and rule.forces_replacement(path, old_value, new_value))
                or _replace_on_changes(path, replace_on)
            )
            effect = None if replaces else update_effect(new["type"], path, old_value, new_value)
            change.inputs.append(
                InputChange(path, old_value, new_value, replaces, ProviderEffect(*effect) if effect else None)
            )
            if replaces:
                change.replaced_because.append(f"{path} changed")
        if new["custom"] and _trigger_changed(old["options"], new["options"]):
            change.replaced_because.append("its replacementTrigger changed")
        if change.inputs or change.replaced_because:
            change.action = "replace" if change.replaced_because else "update"
        self.changes[urn] = change

    def _propagate_replacements(self) -> None:
        """Replacements spread through providers and through inputs built from replaced outputs."""
        settled = False
        while not settled:
            settled = True
            replaced = {urn for urn, change in self.changes.items() if change.action == "replace"}
            for change in self.changes.values():
                if change.action in ("create", "delete") or not change.record["custom"]:
                    continue
                if (
                    self._follow_provider(change, replaced)
                    or self._follow_inputs(change, replaced)
                    or self._follow_replace_with(change, replaced)
                ):
                    settled = False

    def _follow_replace_with(self, change: ResourceChange, replaced: set[str]) -> bool:
        """A resource whose `replaceWith` option names a replaced resource is replaced with it, and deleted before it
        when that one is deleted first (pulumi/pulumi@1b594989 pkg/resource/deploy/step_generator.go: "marked for
        replacement because ... (in its ReplaceWith list) is being replaced", `findDependentCascadeReplacements`)."""
        grew = False
        for name in change.record["options"].get("replaceWith") or []:
            urn = self.urn_of_name.get(name)
            if urn not in replaced or urn in change.replaced_with or urn == change.urn:
                continue
            change.action = "replace"
            change.replaced_because.append(f"it is replaced with {name} (its replaceWith option)")
            change.replaced_with.add(urn)
            grew = True
        return grew

    def _follow_provider(self, change: ResourceChange, replaced: set[str]) -> bool:
        """The engine checks the provider first: a replaced provider replaces the resource, no Diff call;
        so does a provider reference that moved to another provider (another URN: a new parent or
        name) whose DiffConfig, given the old provider's inputs, asks for replacement
        (pulumi/pulumi@1b594989 pkg/resource/deploy/step_generator.go `providerChanged`, :2800-2879:
        the *new* provider's DiffConfig decides; a replacement is ReplaceKeys ["provider"], created
        first)."""
        provider_urn = self.urn_of_name.get(change.record.get("provider") or "")
        reason = f"its provider {change.record.get('provider')} is replaced"
        if provider_urn in replaced and reason not in change.replaced_because:
            change.action = "replace"
            change.replaced_because.insert(0, reason)
            change.replaced_with.add(provider_urn)
            change.config_keys |= self.changes[provider_urn].config_keys
            return True
        old_provider_urn = self.old_urn_of_name.get(self.old[change.urn].get("provider") or "")
        if provider_urn is None or old_provider_urn is None or old_provider_urn == provider_urn:
            return False
        moved = f"its provider moved from {old_provider_urn} to {provider_urn}"
        config = self._provider_config_replaces(self.old[old_provider_urn], self.new[provider_urn])
        if not config or any(reason.startswith(moved) for reason in change.replaced_because):
            return False
        change.action = "replace"
        change.replaced_because.insert(0, f"{moved}, whose DiffConfig replaces on {', '.join(config)}")
        # the settings behind the new provider (created, or changed itself) are behind this replacement
        moved_to = self.changes.get(provider_urn)
        if moved_to is not None:
            change.config_keys |= moved_to.config_keys
        return True

    def _provider_config_replaces(self, old: Record, new: Record) -> list[str]:
        """The configuration paths on which a provider's DiffConfig asks for replacement, old -> new."""
        rule = rule_for(new["type"])
        if rule is None or old["type"] != new["type"]:
            return []
        return [path for path, before, after in self._diffs(old, new) if rule.forces_replacement(path, before, after)]

    def _follow_inputs(self, change: ResourceChange, replaced: set[str]) -> bool:
        record = change.record
        rule = rule_for(record["type"])
        grew = False
        for dependency in record["options"].get("dependsOn") or []:
            dependency_urn = self.urn_of_name.get(dependency)
            if dependency_urn not in replaced:
                continue
            source = self.changes[dependency_urn]
            references = _mock_references(source.record)
            known = {existing.path for existing in change.inputs}
            for segments, value in values_at(record["inputs"]):
                path = format_path(segments)
                derived = isinstance(value, str) and any(reference in value for reference in references)
                # a provider's redacted inputs (kubeconfig) are built from what it depends on
                derived |= record["type"].startswith("pulumi:providers:") and value == RENDER_SECRET_MARK
                if not derived or _ignored(path, record["options"].get("ignoreChanges") or []):
                    continue
                replaces = rule is not None and rule.forces_replacement(path, value, Unknown(dependency))
                if path in known:
                    # changed anyway; still unknown while the dependency is replaced, so replaced with it
                    if replaces:
                        change.replaced_with.add(dependency_urn)
                    continue
                change.inputs.append(InputChange(path, value, Unknown(dependency), replaces))
                change.config_keys |= source.config_keys  # an update it follows comes from the same settings
                grew = True
                if replaces:
                    change.replaced_because.append(f"{path} depends on {dependency}, which is replaced")
                    change.replaced_with.add(dependency_urn)
        if grew:
            change.action = "replace" if change.replaced_because else "update"
        return grew

    def _replaced_with_closure(self, root: str, by_source: dict[str, list[ResourceChange]]) -> list[ResourceChange]:
        """The replacements the engine deletes before `root` when `root` is replaced delete-first:
        those replaced because of `root` (its outputs made unknown, or it is their provider),
        transitively (`calculateDependentReplacements`); `by_source`: the replacements by what each is replaced with."""
        found: dict[str, ResourceChange] = {}
        pending = [root]
        while pending:
            for change in by_source.get(pending.pop(), ()):
                if change.urn != root and change.urn not in found:
                    found[change.urn] = change
                    pending.append(change.urn)
        return list(found.values())

    def _delete_dependents_first(self) -> None:
        """A replacement the provider or the option would create first is deleted first when a
        resource it is replaced with is deleted first; named after the outermost such resource."""
        roots = sorted(
            (change for change in self.changes.values() if change.action == "replace" and change.delete_before_replace),
            key=lambda change: change.urn,
        )
        by_source: dict[str, list[ResourceChange]] = {}
        for change in self.changes.values():
            if change.action == "replace":
                for source in sorted(change.replaced_with):
                    by_source.setdefault(source, []).append(change)
        closures = {root.urn: self._replaced_with_closure(root.urn, by_source) for root in roots}
        inner = {change.urn for closure in closures.values() for change in closure}
        for root in roots:
            if root.urn in inner:
                continue
            for change in closures[root.urn]:
                if not change.deleted_first_with:
                    change.deleted_first_with = root.urn
                if not change.delete_before_replace:
                    change.delete_before_replace = True
                    change.delete_first_by = BY_ENGINE.format(root=root.urn)
            self._deletes_built_from(root, closures[root.urn])

    def _deletes_built_from(self, root: ResourceChange, replaced: list[ResourceChange]) -> None:
        """The deletes the engine makes before `root`, replaced delete-first: an old resource the program no longer
        declares is still diffed on its old inputs with what it takes from `root` (or from one deleted before it)
        unknown (`calculateDependentReplacements`); where that forces its replacement, it goes first (a volume built
        from a disk, then the claim bound to that volume)."""
        first = {record["name"]: _Carried.of(record) for record in (self.old[root.urn], *(c.record for c in replaced))}
        grew = True
        while grew:
            grew = False
            for change in self.changes.values():
                if change.action != "delete" or change.deleted_first_with:
                    continue
                record = self.old[change.urn]
                rule = rule_for(record["type"])
                sources = [first[name] for name in record["options"].get("dependsOn") or [] if name in first]
                if rule is not None and any(source.forces(record, rule) for source in sources):
                    change.deleted_first_with = root.urn
                    change.delete_first_by = BY_ENGINE_DELETE.format(root=root.urn)
                    first[record["name"]] = _Carried.of(record)
                    grew = True

    def _delete_first_by(self, change: ResourceChange) -> str:
        """Who makes the replacement delete first ('' when the replacement is created first)."""
        if change.options.get("deleteBeforeReplace"):
            return BY_OPTION
        record = change.record
        if change.replaced_because[0].startswith("its provider"):
            return ""  # the engine replaces without asking the provider's Diff
        if record["type"].startswith("gcp:") and "name" in record["inputs"]:
            return BY_GCP_BRIDGE
        if not is_kubernetes_object(record["type"]):
            return ""
        old_metadata = self.old[change.urn]["inputs"].get("metadata") or {}
        new_metadata = record["inputs"].get("metadata") or {}
        same = bool(new_metadata.get("name")) and all(
            old_metadata.get(key) == new_metadata.get(key) for key in ("name", "namespace")
        )
        return BY_KUBERNETES if same else ""


def update_plan(
    old: dict[str, Record],
    new: dict[str, Record],
    changed: frozenset[str] | None = None,
    values: SettingValues | None = None,
) -> Preview:
    """The changes alone (refusals and warnings are `commands.preview.risks`); `changed`: the settings
    whose digests differ between the two renders, when both have them (`commands.io.states`); `values`: both
    renders' settings, when both have them."""
    planner = UpdatePlanner(old, new, changed, values)
    changes, unchanged = planner.plan()
    return Preview(changes, unchanged, [], [], planner.kept)
