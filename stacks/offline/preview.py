"""`preview OLD_DIR NEW_DIR`: what `pulumi up` would do to go from one render to another, offline.

Compares two render directories (their `resources.json`) the way the engine compares its state with a
program's registrations, and writes `changes.md` and `changes.json` into NEW_DIR (or `--out`):
create, update (input paths, old -> new, secrets stay redacted), replace (the immutable field that
forced it, create-before-delete or delete-before-replace), delete, unchanged; and what the engine
would refuse. Exit status: 0 the update is possible, 1 the engine would refuse it, 2 bad input.
The renders are read bounded and shape-checked, tokens in them hidden (`stacks/offline/render_dir.py`);
the files are written under the output-folder contract (`stacks/offline/output.py`): NEW_DIR must be
an output folder of render or preview, `--out` one too, or new, or empty.

Engine behaviour modelled here, with its source:
* Resources are matched by URN: type, logical name and the parent chain's types
  (pulumi/pulumi sdk/go/common/resource/urn.go).
* A provider's DiffConfig that asks for replacement replaces every resource the provider manages
  (pulumi/pulumi pkg/resource/deploy/step_generator.go `providerChanged`).
* A replaced resource's computed outputs are unknown at preview, so inputs built from them change to
  unknown in every resource that uses them; on an immutable field that is a replacement too.
* Replacing a resource protected in the state and in the program is refused ("unable to replace
  resource ... as it is currently marked for protection"), and so is deleting a protected one
  (step_generator.go, DeleteStep.Apply). `ignoreChanges` paths are not diffs (processIgnoreChanges);
  `replaceOnChanges` paths turn updates into replacements (applyReplaceOnChanges).
* The GCP provider's Delete fails, at `pulumi up` rather than at preview, for a resource whose state
  holds `deletionPolicy: PREVENT` or, for a cluster, `deletionProtection: true`; `deletionPolicy:
  ABANDON` leaves the object in the cloud. Both are reported (the first as a refusal).
* pulumi-kubernetes deletes before replacing when the object keeps its explicit name and namespace
  (pulumi/pulumi-kubernetes provider/pkg/provider/provider.go Diff, `deleteBeforeReplace`); the Helm
  release and the Terraform-bridged GCP resources create the replacement first unless the
  `deleteBeforeReplace` option is set.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pulumi.runtime import mocks as pulumi_mocks

from policies.cli import command_parser
from policies.console import guarded
from stacks.offline import engine, output
from stacks.offline.render_dir import PreviewInputError, load_render
from stacks.offline.replacement_rules import (
    Segment,
    config_keys_for,
    format_path,
    is_kubernetes_object,
    parse_path,
    path_touches,
    rule_for,
)

ACTIONS = ("create", "update", "replace", "delete")
GCP_LOCATION_FIELDS = ("project", "zone", "region", "location")
MISSING = object()


SUBNETWORK_TYPE = "gcp:compute/subnetwork:Subnetwork"
CLUSTER_TYPE = "gcp:container/cluster:Cluster"


@dataclass(frozen=True)
class Unknown:
    """An input computed from the outputs of a resource being replaced: unknown until it exists."""

    source: str

    def __str__(self) -> str:
        return f"(known after {self.source} is replaced)"


@dataclass(frozen=True)
class InputChange:
    path: str
    old: Any
    new: Any
    replaces: bool

    def as_json(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"path": self.path, "replaces": self.replaces}
        if self.old is not MISSING:
            entry["old"] = self.old
        if self.new is not MISSING:
            entry["new"] = str(self.new) if isinstance(self.new, Unknown) else self.new
        return entry


@dataclass
class ResourceChange:
    urn: str
    record: dict[str, Any]
    action: str
    inputs: list[InputChange] = field(default_factory=list)
    replaced_because: list[str] = field(default_factory=list)
    config_keys: set[str] = field(default_factory=set)
    delete_before_replace: bool = False
    no_rule: bool = False

    @property
    def options(self) -> dict[str, Any]:
        options: dict[str, Any] = self.record["options"]
        return options

    def as_json(self) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "urn": self.urn,
            "type": self.record["type"],
            "name": self.record["name"],
            "action": self.action,
            "protect": bool(self.options.get("protect")),
            "retainOnDelete": bool(self.options.get("retainOnDelete")),
        }
        if self.inputs:
            entry["inputs"] = [change.as_json() for change in self.inputs]
        if self.action == "replace":
            entry["replacedBecause"] = self.replaced_because
            entry["deleteBeforeReplace"] = self.delete_before_replace
        if self.config_keys:
            entry["configKeys"] = sorted(self.config_keys)
        if self.no_rule:
            entry["noRule"] = True
        return entry


@dataclass(frozen=True)
class Preview:
    changes: list[ResourceChange]
    unchanged: int
    refusals: list[str]
    warnings: list[str]

    def counts(self) -> dict[str, int]:
        counted = Counter(change.action for change in self.changes)
        return {**{action: counted.get(action, 0) for action in ACTIONS}, "same": self.unchanged}

    def of(self, action: str) -> list[ResourceChange]:
        return [change for change in self.changes if change.action == action]

    def as_json(self) -> dict[str, Any]:
        return {
            "summary": self.counts(),
            "refused": bool(self.refusals),
            "refusals": self.refusals,
            "warnings": self.warnings,
            "changes": [change.as_json() for change in self.changes],
        }


# ---------------------------------------------------------------- matching records


def _by_name(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Logical name -> record; a component wins when a name is shared (parents are components)."""
    named: dict[str, dict[str, Any]] = {}
    for record in sorted(records, key=lambda record: record["custom"], reverse=True):
        named[record["name"]] = record
    return named


def index_by_urn(records: list[dict[str, Any]], where: str) -> dict[str, dict[str, Any]]:
    """URN without the stack and project parts: `<parent types $ ... $ type>::<name>`, as the engine builds it."""
    named = _by_name(records)

    def qualified_type(record: dict[str, Any], seen: frozenset[str] = frozenset()) -> str:
        parent = named.get(record["parent"]) if record.get("parent") else None
        if parent is None or parent["name"] in seen:
            return str(record["type"])
        return f"{qualified_type(parent, seen | {record['name']})}${record['type']}"

    indexed: dict[str, dict[str, Any]] = {}
    for record in records:
        urn = f"{qualified_type(record)}::{record['name']}"
        if urn in indexed:
            raise PreviewInputError(f"{where}: two resources share the URN {urn}")
        indexed[urn] = record
    return indexed


# ---------------------------------------------------------------- diffing inputs


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


def _values_at(value: Any, path: tuple[Segment, ...] = ()) -> list[tuple[tuple[Segment, ...], Any]]:
    if isinstance(value, dict):
        return [leaf for key in sorted(value) for leaf in _values_at(value[key], (*path, key))]
    if isinstance(value, list):
        return [leaf for index, item in enumerate(value) for leaf in _values_at(item, (*path, index))]
    return [(path, value)]


def _ignored(path: str, ignore_changes: list[str]) -> bool:
    changed = parse_path(path)
    return (
        any(len(parse_path(ignore)) <= len(changed) and path_touches(ignore, path) for ignore in ignore_changes)
        or "*" in ignore_changes
    )


def _replace_on_changes(path: str, replace_on_changes: list[str]) -> bool:
    return "*" in replace_on_changes or any(path_touches(entry, path) for entry in replace_on_changes)


def _mock_references(record: dict[str, Any]) -> set[str]:
    """Strings by which other inputs carry this resource's computed outputs in a render: the id and
    the outputs the offline mocks add (selfLink, cluster endpoint), all unknown while it is replaced."""
    resource_id, state = engine.OfflineMocks().new_resource(
        pulumi_mocks.MockResourceArgs(record["type"], record["name"], record["inputs"], "", "", record["custom"])
    )
    computed = {
        value for key, value in state.items() if key not in record["inputs"] and key != "id" and isinstance(value, str)
    }
    return {resource_id, *computed}


# ---------------------------------------------------------------- the preview


class _Planner:
    def __init__(self, old: dict[str, dict[str, Any]], new: dict[str, dict[str, Any]]) -> None:
        self.old, self.new = old, new
        self.new_by_name = _by_name(list(new.values()))
        self.old_names = {record["name"] for record in old.values()}
        self.urn_of_name = {
            record["name"]: urn for urn, record in sorted(new.items(), key=lambda item: item[1]["custom"])
        }
        self.changes: dict[str, ResourceChange] = {}
        self.candidate_keys: list[tuple[ResourceChange, list[str]]] = []

    def plan(self) -> Preview:
        for urn in sorted(set(self.old) | set(self.new)):
            if urn not in self.old:
                self.changes[urn] = ResourceChange(urn, self.new[urn], "create")
            elif urn not in self.new:
                self.changes[urn] = ResourceChange(urn, self.old[urn], "delete")
            else:
                self._diff(urn)
        self._attribute_settings()
        self._propagate_replacements()
        for change in self.changes.values():
            if change.action == "replace":
                change.delete_before_replace = self._delete_before_replace(change)
        changes = sorted(
            (change for change in self.changes.values() if change.action != "same"),
            key=lambda change: (ACTIONS.index(change.action), change.urn),
        )
        unchanged = sum(change.action == "same" for change in self.changes.values())
        return Preview(changes, unchanged, self._refusals(changes), self._warnings(changes))

    def _diff(self, urn: str) -> None:
        old, new = self.old[urn], self.new[urn]
        rule = rule_for(new["type"])
        ignore = list(new["options"].get("ignoreChanges") or [])
        replace_on = list(new["options"].get("replaceOnChanges") or [])
        change = ResourceChange(urn, new, "same", no_rule=new["custom"] and rule is None)
        for segments, old_value, new_value in diff_values(old["inputs"], new["inputs"]):
            path = format_path(segments)
            if _ignored(path, ignore):
                continue
            replaces = new["custom"] and (
                (rule is not None and rule.forces_replacement(path, old_value, new_value))
                or _replace_on_changes(path, replace_on)
            )
            change.inputs.append(InputChange(path, old_value, new_value, replaces))
            self.candidate_keys.append((change, config_keys_for(new["type"], path)))
            if replaces:
                change.replaced_because.append(f"{path} changed")
        if change.inputs:
            change.action = "replace" if change.replaced_because else "update"
        self.changes[urn] = change

    def _attribute_settings(self) -> None:
        """Name the stack settings behind each change. Where an input is fed by several settings (a
        weights disk name by `cluster.name` and `weights.revision`), keep those that are the only
        candidate for some other change in the same update, when there are any."""
        certain = {keys[0] for _, keys in self.candidate_keys if len(keys) == 1}
        for change, keys in self.candidate_keys:
            change.config_keys.update([key for key in keys if key in certain] or keys)

    def _propagate_replacements(self) -> None:
        """Replacements spread through providers and through inputs built from replaced outputs."""
        settled = False
        while not settled:
            settled = True
            replaced = {urn for urn, change in self.changes.items() if change.action == "replace"}
            for change in self.changes.values():
                if change.action in ("create", "delete") or not change.record["custom"]:
                    continue
                if self._follow_provider(change, replaced) or (
                    change.action != "replace" and self._follow_inputs(change, replaced)
                ):
                    settled = False

    def _follow_provider(self, change: ResourceChange, replaced: set[str]) -> bool:
        """The engine checks the provider first: a replaced provider replaces the resource, no Diff call."""
        provider_urn = self.urn_of_name.get(change.record.get("provider") or "")
        reason = f"its provider {change.record.get('provider')} is replaced"
        if provider_urn not in replaced or reason in change.replaced_because:
            return False
        change.action = "replace"
        change.replaced_because.insert(0, reason)
        change.config_keys |= self.changes[provider_urn].config_keys
        return True

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
            for segments, value in _values_at(record["inputs"]):
                path = format_path(segments)
                derived = isinstance(value, str) and any(reference in value for reference in references)
                # a provider's redacted inputs (kubeconfig) are built from what it depends on
                derived |= record["type"].startswith("pulumi:providers:") and value == engine.REDACTED
                if not derived or path in known or _ignored(path, record["options"].get("ignoreChanges") or []):
                    continue
                replaces = rule is not None and rule.forces_replacement(path, value, Unknown(dependency))
                change.inputs.append(InputChange(path, value, Unknown(dependency), replaces))
                grew = True
                if replaces:
                    change.replaced_because.append(f"{path} depends on {dependency}, which is replaced")
                    change.config_keys |= source.config_keys
        if grew:
            change.action = "replace" if change.replaced_because else "update"
        return grew

    def _delete_before_replace(self, change: ResourceChange) -> bool:
        if change.options.get("deleteBeforeReplace"):
            return True
        record = change.record
        if not is_kubernetes_object(record["type"]) or change.replaced_because[0].startswith("its provider"):
            return False
        old_metadata = self.old[change.urn]["inputs"].get("metadata") or {}
        new_metadata = record["inputs"].get("metadata") or {}
        return bool(new_metadata.get("name")) and all(
            old_metadata.get(key) == new_metadata.get(key) for key in ("name", "namespace")
        )

    def _secondary_ranges_in_use(self, change: ResourceChange) -> str:
        """The names of a subnet's secondary ranges whose CIDR changes although a cluster of the old
        state allocates its pods or services from them (the provider updates them in place, as
        terraform-provider-google does not mark them ForceNew; GCP refuses it while they are in use)."""
        if change.record["type"] != SUBNETWORK_TYPE:
            return ""
        old_subnet = self.old[change.urn]
        old_ranges = {
            item.get("rangeName"): item.get("ipCidrRange")
            for item in old_subnet["inputs"].get("secondaryIpRanges") or []
        }
        new_ranges = {
            item.get("rangeName"): item.get("ipCidrRange")
            for item in change.record["inputs"].get("secondaryIpRanges") or []
        }
        changed = {name for name, cidr in old_ranges.items() if name in new_ranges and new_ranges[name] != cidr}
        used = {
            (record["inputs"].get("ipAllocationPolicy") or {}).get(key)
            for record in self.old.values()
            if record["type"] == CLUSTER_TYPE
            for key in ("clusterSecondaryRangeName", "servicesSecondaryRangeName")
        }
        return ", ".join(repr(name) for name in sorted(changed & used))

    def _refusals(self, changes: list[ResourceChange]) -> list[str]:
        refusals = []
        for change in changes:
            keys = f" (stack setting: {', '.join(sorted(change.config_keys))})" if change.config_keys else ""
            if (
                change.action == "replace"
                and change.options.get("protect")
                and self.old[change.urn]["options"].get("protect")
            ):
                reasons = "; ".join(change.replaced_because)
                refusals.append(f"unable to replace protected {change.urn}: {reasons}{keys}")
            if change.action == "delete" and change.options.get("protect"):
                refusals.append(f"unable to delete protected {change.urn}: it is no longer declared")
            if change.action in ("delete", "replace") and (guard := _delete_guard(self.old[change.urn])):
                refusals.append(f"the provider would fail to delete {change.urn}: {guard}{keys}")
            if change.action in ("update", "replace") and (in_use := self._secondary_ranges_in_use(change)):
                refusals.append(
                    f"GCP would refuse to update {change.urn}: secondary range {in_use} changes while a cluster "
                    f"uses it (a cluster's pod and service ranges are fixed; a new range needs a new cluster: "
                    f"destroy first, or deploy a new stack){keys}"
                )
        for urn, record in sorted(self.new.items()):
            references = [
                *(record["options"].get("dependsOn") or []),
                *(record.get(key) for key in ("parent", "provider")),
                record["options"].get("deletedWith"),
            ]
            for name in references:
                if name and name not in self.new_by_name:
                    gone = "deleted" if name in self.old_names else "not declared"
                    refusals.append(f"{urn} still depends on {name}, which is {gone}")
        return refusals

    def _warnings(self, changes: list[ResourceChange]) -> list[str]:
        warnings = []
        for change in changes:
            record = change.record
            if change.action in ("delete", "replace") and change.options.get("retainOnDelete"):
                left = "the old object" if change.action == "replace" else "the object"
                warnings.append(f"{change.urn}: retainOnDelete, {left} stays in the cloud (delete it by hand)")
            if change.no_rule and change.action in ("update", "replace"):
                warnings.append(f"{change.urn}: no replacement rule for {record['type']}; shown as an update")
            old_inputs = self.old.get(change.urn, {}).get("inputs", {})
            if change.action in ("delete", "replace") and old_inputs.get("deletionPolicy") == "ABANDON":
                warnings.append(f"{change.urn}: deletionPolicy ABANDON, the old object stays in the cloud")
            if (
                change.action == "replace"
                and record["type"].startswith("gcp:")
                and not change.delete_before_replace
                and "name" in record["inputs"]
                and all(old_inputs.get(key) == record["inputs"].get(key) for key in ("name", *GCP_LOCATION_FIELDS))
            ):
                warnings.append(
                    f"{change.urn}: replaced create-before-delete under the same name "
                    f"{record['inputs']['name']!r}; GCP refuses the create (409 alreadyExists) "
                    "unless the resource sets deleteBeforeReplace or its name changes"
                )
        return warnings


def _delete_guard(old: dict[str, Any]) -> str | None:
    """What in the state makes the GCP provider's Delete fail (terraform-provider-google@e03b7622:
    tpgresource/utils.go DeletionPolicyPreDelete and resource_compute_disk.go Delete for
    `deletion_policy`, resource_container_cluster.go Delete for `deletion_protection`)."""
    if not old["type"].startswith("gcp:"):
        return None
    if old["inputs"].get("deletionPolicy") == "PREVENT":
        return "deletionPolicy is PREVENT in the state (set DELETE and `pulumi up` first)"
    if old["type"] == "gcp:container/cluster:Cluster" and old["inputs"].get("deletionProtection") is True:
        return "deletionProtection is true in the state (set it false and `pulumi up` first)"
    return None


def preview(old_records: list[dict[str, Any]], new_records: list[dict[str, Any]]) -> Preview:
    return _Planner(index_by_urn(old_records, "old render"), index_by_urn(new_records, "new render")).plan()


# ---------------------------------------------------------------- writing


def _short(value: Any, limit: int = 100) -> str:
    text = str(value) if isinstance(value, Unknown) else json.dumps(value, sort_keys=True)
    text = text.replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _input_line(change: InputChange) -> str:
    old = "(absent)" if change.old is MISSING else _short(change.old)
    new = "(absent)" if change.new is MISSING else _short(change.new)
    marker = " **(forces replacement)**" if change.replaces else ""
    return f"  - `{change.path}`: {old} -> {new}{marker}"


def changes_markdown(result: Preview) -> str:
    counts = result.counts()
    lines = [
        "# Preview of the update",
        "",
        ", ".join(f"{counts[action]} to {action}" for action in ACTIONS) + f", {counts['same']} unchanged.",
        "",
    ]
    if result.refusals:
        lines += ["## The engine would refuse this update", ""] + [f"- {line}" for line in result.refusals] + [""]
    if result.warnings:
        lines += ["## Warnings", ""] + [f"- {line}" for line in result.warnings] + [""]
    for action in ACTIONS:
        changes = result.of(action)
        if not changes:
            continue
        lines += [f"## {action.capitalize()} ({len(changes)})", ""]
        for change in changes:
            flags = [flag for flag in ("protect", "retainOnDelete") if change.options.get(flag)]
            if action == "replace":
                flags.append("delete-before-replace" if change.delete_before_replace else "create-before-delete")
            if change.no_rule:
                flags.append("no rule")
            suffix = f" [{', '.join(flags)}]" if flags else ""
            lines.append(f"- `{change.urn}`{suffix}")
            if action == "replace":
                lines.append(f"  - because: {'; '.join(change.replaced_because)}")
            if change.config_keys:
                lines.append(f"  - stack setting: {', '.join(sorted(change.config_keys))}")
            if action in ("update", "replace"):
                lines += [_input_line(input_change) for input_change in change.inputs]
        lines.append("")
    lines.append("Secret inputs are redacted in a render: a change of a secret's value alone does not show here.")
    return "\n".join(lines) + "\n"


def preview_files(result: Preview) -> dict[str, str]:
    return {
        "changes.json": json.dumps(result.as_json(), indent=2, sort_keys=True) + "\n",
        "changes.md": changes_markdown(result),
    }


def write_preview(result: Preview, out_dir: Path) -> None:
    """changes.md and changes.json into `out_dir` under the output-folder contract (`stacks.offline.output`)."""
    output.add_files(out_dir, preview_files(result))


def preview_of_renders(old: list[dict[str, Any]], new: list[dict[str, Any]], where: str) -> Preview:
    """The preview of two renders' records; a record the planner cannot read is bad input (exit 2)."""
    try:
        return preview(old, new)
    except (AttributeError, TypeError, KeyError, ValueError) as error:
        if isinstance(error, PreviewInputError):
            raise
        raise PreviewInputError(f"{where}: a resource record is not shaped as a render writes it ({error!r})") from None


def preview_dirs(old_dir: Path, new_dir: Path, out_dir: Path | None = None) -> Preview:
    """Compare two render directories and write changes.md / changes.json (into NEW_DIR by default)."""
    target = out_dir or new_dir
    try:
        output.check_out_dir(target, replace=False)
    except output.OutputError as error:
        hint = "" if out_dir else "; or give --out FOLDER for changes.md and changes.json"
        raise output.OutputError(f"{error}{hint}") from None
    result = preview_of_renders(load_render(old_dir), load_render(new_dir), f"{old_dir} or {new_dir}")
    write_preview(result, target)
    return result


def report_preview(result: Preview, out_dir: Path) -> int:
    """One summary line on stdout, one line per refusal on stderr; the exit status."""
    counts = result.counts()
    summary = ", ".join(f"{counts[action]} {action}" for action in (*ACTIONS, "same"))
    print(f"preview: {summary} -> {out_dir / 'changes.md'}")
    for refusal in result.refusals:
        print(f"refused: {refusal}", file=sys.stderr)
    return 1 if result.refusals else 0


EXIT_CODES = {
    0: "the update is possible",
    1: "the engine would refuse the update (each refusal on standard error)",
    2: "bad arguments, a directory that is missing or is not a render, an output folder that is refused",
}


@guarded("preview", bad_input=(PreviewInputError,))
def main(argv: list[str] | None = None) -> int:
    parser = command_parser("preview", __doc__.split("\n\n")[0] if __doc__ else "", EXIT_CODES)
    parser.add_argument(
        "old_dir",
        type=Path,
        metavar="OLD_DIR",
        help="the earlier render, e.g. `render STACK --out DIR` of the base branch",
    )
    parser.add_argument("new_dir", type=Path, metavar="NEW_DIR", help="the later render")
    parser.add_argument(
        "--out", type=Path, metavar="DIR", help="where to write changes.md and changes.json (default NEW_DIR)"
    )
    args = parser.parse_args(argv)
    result = preview_dirs(args.old_dir, args.new_dir, args.out)
    return report_preview(result, args.out or args.new_dir)


if __name__ == "__main__":
    sys.exit(main())
