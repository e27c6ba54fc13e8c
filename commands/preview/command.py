"""`preview OLD_DIR NEW_DIR`: what `pulumi up` would do to go from one render to another, offline.

Compares two render directories the way the engine compares its state with a program's
registrations, and writes `changes.md` and `changes.json` into NEW_DIR (or `--out`): create, update
(input paths, whole old -> new values, secrets as digests), replace (the immutable field that forced
it, create-before-delete or delete-before-replace and who decides it), delete, unchanged; values the
provider keeps although the program dropped them; and what the engine, a provider or GCP would refuse.
Exit status: 0 the update is possible, 1 it would be refused, 2 bad input.
The renders are read bounded and shape-checked, tokens in them hidden (`commands/io/render_dir.py`);
the files are written under the output-folder contract (`commands/io/output.py`): NEW_DIR must be
an output folder of render or preview, `--out` one too, or new, or empty.

The states compared are converged ones: the weights image of OLD's revision exists on both sides, as
it does on every `up` after the first (`commands/io/states.py`). The engine model is
`commands/preview/update_plan.py`, the refusals and warnings `commands/preview/risks.py`; docs/preview.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any

from commands.engine.secrets import FROM_ESC, UNSET
from commands.io import output
from commands.io.cli import command_parser, output_folder, path_argument
from commands.io.console import folded, guarded, one_line, shown
from commands.io.records import SECRET_DIGESTS
from commands.io.render_dir import PreviewInputError, load_render
from commands.io.states import Record, RenderStates, changed_settings, compared, download_not_rerun, load_states
from commands.preview import clients, costs, identity, risks, rollouts
from commands.preview.changes import ACTIONS, OutputsDiff, Preview
from commands.preview.changes_md import changes_markdown
from commands.preview.setting_sources import SettingValues, changed_roots, name_changed_measurements, with_effect
from commands.preview.update_plan import index_by_urn, update_plan

__all__ = [
    "Preview",
    "PreviewInputError",
    "add_accept_client_break",
    "changes_markdown",
    "load_render",
    "load_states",
    "main",
    "preview",
    "preview_dirs",
    "preview_files",
    "preview_of_states",
    "preview_states",
    "report_preview",
]


def _preview(
    old_records: list[dict[str, Any]],
    new_records: list[dict[str, Any]],
    notes: list[str],
    sides: tuple[RenderStates, RenderStates] | None = None,
    accept_client_break: bool = False,
    compared_outputs: tuple[dict[str, Any] | None, dict[str, Any] | None] | None = None,
) -> Preview:
    """The plan, its refusals and warnings; with the two renders (`sides`), also what their outputs
    and capacity plans say: the outputs of the states compared (`compared_outputs`), clients, cost per
    month, and whether they are one stack."""
    old, new = index_by_urn(old_records, "old render"), index_by_urn(new_records, "new render")
    changed_all = changed_settings(*sides) if sides else None
    values = SettingValues.of(*sides) if sides else None
    changed, without_effect = with_effect(changed_all, values, {record["type"] for record in new.values()})
    planned = update_plan(old, new, changed, values)
    if sides:
        name_changed_measurements(planned.changes, sides[0].capacity, sides[1].capacity)
    outputs = clients.outputs_diff(*compared_outputs) if compared_outputs else None
    refused, warned, noted = clients.client_break_risks(
        clients.client_breaks(outputs, old, new, planned),
        risks.in_production(old, new),
        accept_client_break,
    )
    if sides:
        warned = [
            *costs.different_stacks(sides[0].capacity, sides[1].capacity, sides[0].outputs, sides[1].outputs),
            *[
                f"the {side} render could not see what its ESC environment supplies, so `pulumi up` may change more "
                f"than this preview shows: {render.unseen_settings}"
                for side, render in zip(("old", "new"), sides, strict=True)
                if render.unseen_settings
            ],
            *warned,
        ]
    if sides and sides[1].mandatory:
        warned = [*warned, _stopped_by_policies(sides[1].mandatory)]
    moving = rollouts.rollouts(old, new, planned, rollouts.serve_times(sides[1].capacity if sides else None))
    warned += [rollout.warning for rollout in moving if rollout.warning]
    named = {key for change in planned.changes for key in change.config_keys}
    # a key the naming took up after all (one that turns its group's switch on, one a created component comes with)
    without_effect -= named
    plan_only: set[str] = set()
    if sides and values is not None and changed_all and _same_outputs(outputs, *sides):
        # a setting no change names whose components declare the same either way (a threshold of alerts turned off;
        # any, where the two renders declare the same resources with the same inputs): without an effect where the
        # capacity plans are the same too (nothing else could show one), else an effect on the render's plan alone
        # (a stated image pull: the time to serve, not what `pulumi up` declares)
        nothing_declared_differs = not planned.changes and not planned.kept
        components = {(record["type"], record["name"]) for record in new.values() if not record.get("custom", True)}
        same = {
            key
            for key in changed_roots(changed_all) - named - without_effect
            if nothing_declared_differs or values.declares_the_same(key, components)
        }
        if sides[0].capacity == sides[1].capacity:
            without_effect |= same
        else:
            plan_only = same
    if without_effect:
        notes = [*notes, WITHOUT_EFFECT.format(keys=", ".join(f"`{key}`" for key in sorted(without_effect)))]
    if plan_only:
        notes = [*notes, PLAN_ONLY.format(keys=", ".join(f"`{key}`" for key in sorted(plan_only)))]
    return Preview(
        planned.changes,
        planned.unchanged,
        risks.risk_refusals(old, new, planned) + identity.identity_refusals(old, new, planned) + refused,
        risks.warnings(old, new, planned) + risks.revision_of_another_model(new, changed) + warned,
        planned.kept,
        notes + noted,
        outputs,
        costs.cost_deltas(sides[0].capacity, sides[1].capacity) if sides else [],
        moving,
    )


def _stopped_by_policies(mandatory: list[str]) -> str:
    shown = "; ".join(mandatory[:3]) + (f"; and {len(mandatory) - 3} more" if len(mandatory) > 3 else "")
    return (
        f"the new render violates {len(mandatory)} mandatory polic{'y' if len(mandatory) == 1 else 'ies'} of this "
        f"stack's pack (its policy.json): {shown}. With the pack on (`--policy-pack`, or enabled for the "
        "organization: docs/policies.md) `pulumi preview` ends in an error, and so does the preview `pulumi up` runs "
        "first, before any step; with `--skip-preview` the update halts at the first violation (pulumi/pulumi-policy "
        "README): fix them before this update"
    )


def _same_outputs(outputs: OutputsDiff | None, old: RenderStates, new: RenderStates) -> bool:
    """The two renders' stack outputs are the same, and both hold a capacity plan (capacity.json) to compare."""
    return outputs is not None and not outputs and old.capacity is not None and new.capacity is not None


WITHOUT_EFFECT = (
    "changed without an effect here: {keys} (with every other setting as the new render has it, its old value and its "
    "new one declare the same: another setting decides what it would set, or leaves out what reads it), so no change "
    "names it"
)


PLAN_ONLY = (
    "changed the render's plan only: {keys} (`pulumi up` declares the same with its old value and its new one; "
    "capacity.json and plan.md's figures change, the time to serve or the sizing), so no change names it"
)


def preview(old_records: list[dict[str, Any]], new_records: list[dict[str, Any]]) -> Preview:
    """The update from one set of resource records to another, as given."""
    return _preview(old_records, new_records, [])


def preview_states(old: RenderStates, new: RenderStates, accept_client_break: bool = False) -> Preview:
    """The update between two renders' converged states (`commands/io/states.py`), with their stack
    outputs; `accept_client_break`: a change that breaks clients is not refused in production."""
    view = compared(_with_the_esc_label(old, new), new)
    return _preview(
        view.old,
        view.new,
        [*view.notes, *download_not_rerun(view, index_by_urn)],
        (old, new),
        accept_client_break,
        (view.old_outputs, view.new_outputs),
    )


def _with_the_esc_label(old: RenderStates, new: RenderStates) -> RenderStates:
    """OLD with a secret digest `unset` read as `esc` where NEW labels the same input `esc` and OLD was made with an ESC
    environment it could not open: a render made before the `esc` label wrote `unset` there, and a label alone is no
    change (one whose environment computed other keys only and that a later import leaves the key to reads as no
    change too; the preview warns that ESC may change more than it shows)."""
    if old.unseen_settings is None:
        return old
    left_to_esc = {
        (record["name"], path)
        for record in [*new.first_up, *(new.converged or [])]
        for path, digest in record.get(SECRET_DIGESTS, {}).items()
        if digest == FROM_ESC
    }

    def relabelled(record: Record) -> Record:
        digests = record.get(SECRET_DIGESTS, {})
        moved = {path for path, digest in digests.items() if digest == UNSET and (record["name"], path) in left_to_esc}
        return {**record, SECRET_DIGESTS: {**digests, **dict.fromkeys(moved, FROM_ESC)}} if moved else record

    return dataclasses.replace(
        old,
        first_up=[relabelled(record) for record in old.first_up],
        converged=None if old.converged is None else [relabelled(record) for record in old.converged],
    )


def preview_files(result: Preview) -> dict[str, str]:
    return {
        "changes.json": output.json_document(result.as_json()),
        "changes.md": changes_markdown(result),
    }


def write_preview(result: Preview, out_dir: Path) -> None:
    """changes.md and changes.json into `out_dir` under the output-folder contract (`commands.io.output`)."""
    output.add_files(out_dir, preview_files(result))


# ArithmeticError: figures no render writes (10**308 replicas times a planning figure of 1e15 s overflow a float);
# RecursionError: a chain of parents a thousand records long (a render's is four deep at most)
UNREADABLE = (AttributeError, TypeError, KeyError, ValueError, ArithmeticError, RecursionError)
# The search costs a preview per record, each over all records: 0.2-0.45 s for a dev render's 61 records,
# about 8 s for 300 (measured in review); past that the line names no record.
UNREADABLE_SEARCH_MAX = 300


def preview_of_states(old: RenderStates, new: RenderStates, where: str, accept_client_break: bool = False) -> Preview:
    """The preview of two renders' states; a record the update plan cannot read is bad input (exit 2),
    named when it is one of OLD's."""
    try:
        return preview_states(old, new, accept_client_break)
    except UNREADABLE as error:
        if isinstance(error, PreviewInputError):
            raise
        record = _unreadable_record(old, new)
        named = (
            f"the record of {str(record['name'])[:60]} ({str(record['type'])[:80]})" if record else "a resource record"
        )
        raise PreviewInputError(
            f"{where}: {named} is not shaped as a render writes it ({type(error).__name__}: {error}); "
            "allowed: a render folder as `render` wrote it (render that commit again)"
        ) from None


def _unreadable_record(old: RenderStates, new: RenderStates) -> Record | None:
    """OLD's record the update plan cannot read: the first whose stand-in (NEW's record of the same resource,
    or none) lets the preview through. On the error path only: a preview per record, so only when NEW reads
    (a preview of NEW against itself) and OLD has at most UNREADABLE_SEARCH_MAX records; else None."""
    try:
        preview_states(new, new)
    except UNREADABLE:
        return None
    old_states = [index_by_urn(old.first_up, "old render"), index_by_urn(old.converged or [], "old render")]
    if max(map(len, old_states)) > UNREADABLE_SEARCH_MAX:
        return None
    new_states = [index_by_urn(new.first_up, "new render"), index_by_urn(new.converged or [], "new render")]
    for urn in {urn: None for state in old_states for urn in state}:
        first_up, converged = (
            [stand_in for key, record in state.items() if (stand_in := record if key != urn else fresh.get(urn))]
            for state, fresh in zip(old_states, new_states, strict=True)
        )
        swapped = dataclasses.replace(old, first_up=first_up, converged=converged if old.converged else None)
        try:
            preview_states(swapped, new)
        except UNREADABLE:
            continue
        return next(state[urn] for state in old_states if urn in state)
    return None


def preview_dirs(
    old_dir: Path, new_dir: Path, out_dir: Path | None = None, accept_client_break: bool = False
) -> Preview:
    """Compare two render directories and write changes.md / changes.json (into NEW_DIR by default)."""
    target = out_dir or new_dir
    try:
        output.check_out_dir(target, replace=False)
    except output.OutputError as error:
        hint = "" if out_dir else "; or give --out FOLDER for changes.md and changes.json"
        raise output.OutputError(f"{error}{hint}") from None
    result = preview_of_states(
        load_states(old_dir), load_states(new_dir), f"{old_dir} or {new_dir}", accept_client_break
    )
    write_preview(result, target)
    return result


def report_preview(result: Preview, out_dir: Path, label: str = "") -> int:
    """One summary line on stdout, one line per warning and per refusal on stderr (a warning is what the
    update does that clients or operators must know before it runs: an endpoint deleted, pods rebuilt);
    the exit status."""
    counts = result.counts()
    summary = ", ".join(f"{counts[action]} {action}" for action in (*ACTIONS, "same"))
    print(f"{label}preview: {summary} -> {shown(out_dir / 'changes.md')}")
    for warning in result.warnings:
        print(f"{label}warning: {one_line(warning, limit=len(warning))}", file=sys.stderr)
    for refusal in result.refusals:
        print(f"{label}refused: {folded(refusal)}", file=sys.stderr)
    return 1 if result.refusals else 0


EXIT_CODES = {
    0: "the update is possible",
    1: "the engine, a provider or GCP would refuse the update, or in production it breaks clients without "
    "--accept-client-break (each refusal on standard error)",
    2: "bad arguments, a directory that is missing or is not a render, an output folder that is refused",
}


def add_accept_client_break(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        clients.ACCEPT_FLAG,
        action="store_true",
        help="in production, let an update that breaks clients (a removed or changed endpoint, Service, port, "
        "model name or API key) pass; it stays a warning (docs/preview.md)",
    )


@guarded("preview", bad_input=(PreviewInputError,))
def main(argv: list[str] | None = None) -> int:
    parser = command_parser("preview", __doc__.split("\n\n")[0] if __doc__ else "", EXIT_CODES)
    parser.add_argument(
        "old_dir",
        type=path_argument,
        metavar="OLD_DIR",
        help="the earlier render, e.g. `render STACK --out DIR` of the base branch",
    )
    parser.add_argument("new_dir", type=path_argument, metavar="NEW_DIR", help="the later render")
    parser.add_argument(
        "--out", type=output_folder, metavar="DIR", help="where to write changes.md and changes.json (default NEW_DIR)"
    )
    add_accept_client_break(parser)
    args = parser.parse_args(argv)
    result = preview_dirs(args.old_dir, args.new_dir, args.out, args.accept_client_break)
    return report_preview(result, args.out or args.new_dir)


if __name__ == "__main__":
    sys.exit(main())
