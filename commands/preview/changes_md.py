"""`changes.md`: a preview for people, with whole old and new values as `pulumi preview --diff`
shows them (secrets as `[secret]` or their digest, never their value)."""

from __future__ import annotations

import json
import re
from typing import Any

from commands.plan.prices import NOT_PRICED_ITEMS, PRICED_ITEMS
from commands.preview import json_values
from commands.preview.changes import ACTIONS, MISSING, InputChange, OutputsDiff, Preview, Unknown, cost_span
from common.text import BACKTICK_RUN, code_span, escaped, inert


def _lines(value: Any) -> list[str]:
    """A value as `pulumi preview --diff` would print it: a string as its text, anything else as JSON."""
    if value is MISSING:
        return ["(absent)"]
    if isinstance(value, Unknown):
        return [str(value)]
    if isinstance(value, str):
        return value.splitlines() or [""]
    return json.dumps(value, indent=2, sort_keys=True).splitlines()


# What a text in a table cell may not hold as it is: a cell's end, and the signs of links, HTML and emphasis.
CELL_SIGNS = re.compile(r"([\\|`*_\[\]<>!])")


def _cell(text: str) -> str:
    return CELL_SIGNS.sub(r"\\\1", text)


def _fence(texts: list[str]) -> str:
    longest = max((len(run) for text in texts for run in BACKTICK_RUN.findall(text)), default=0)
    return "`" * max(3, longest + 1)


def _json_body(diff: list[tuple[str, Any, Any]]) -> list[str]:
    """A path-level diff of two JSON documents: `- path: old` / `+ path: new` per leaf that differs."""
    body = []
    for path, old, new in diff:
        if old is not json_values.MISSING:
            body.append(f"- {path}: {json_values.compact(old)}")
        if new is not json_values.MISSING:
            body.append(f"+ {path}: {json_values.compact(new)}")
    return body


def _input_lines(change: InputChange) -> list[str]:
    marker = " **(forces replacement)**" if change.replaces else ""
    diff = json_values.json_diff(change.old, change.new)
    if diff is not None:
        body = _json_body(diff)
        marker += f" (JSON: {len(diff)} path(s) differ)"
    else:
        body = [f"- {line}" for line in _lines(change.old)] + [f"+ {line}" for line in _lines(change.new)]
    fence = _fence(body)
    effect = [inert(f"    - the provider: {change.effect.says} ({change.effect.source})")] if change.effect else []
    return [
        f"  - {code_span(change.path)}{marker}",
        *effect,
        f"    {fence}diff",
        *(f"    {line}" for line in body),
        f"    {fence}",
    ]


def _outputs_lines(outputs: OutputsDiff | None) -> list[str]:
    """The stack outputs added, removed and changed, as `pulumi preview` lists them under Outputs."""
    if outputs is None:
        return []
    lines = ["## Stack outputs", ""]
    if not outputs:
        return [*lines, "No output changes.", ""]
    entries = [
        *((key, MISSING, value) for key, value in outputs.added.items()),
        *((key, value, MISSING) for key, value in outputs.removed.items()),
        *((key, old, new) for key, (old, new) in outputs.changed.items()),
    ]
    for key, old, new in sorted(entries, key=lambda entry: entry[0]):
        what = "added" if old is MISSING else "removed" if new is MISSING else "changed"
        body = [f"- {line}" for line in _lines(old) if old is not MISSING] + [
            f"+ {line}" for line in _lines(new) if new is not MISSING
        ]
        fence = _fence(body)
        lines += [f"- {code_span(key)} ({what})", f"  {fence}diff", *(f"  {line}" for line in body), f"  {fence}"]
    return [*lines, ""]


def _rollout_lines(result: Preview) -> list[str]:
    if not result.rollouts:
        return []
    lines = ["## Serving pods: when they follow, pods x time to serve", ""]
    lines += [inert(f"- {rollout.what} ({rollout.when})") for rollout in result.rollouts]
    source = result.rollouts[0].source
    return [*lines, "", inert(f"Time to serve per pod: {source}."), ""]


def _usd(value: tuple[float, float] | None, signed: bool = False) -> str:
    if value is None:
        return "-"
    sign = "+," if signed else ","
    low, high = (format(round(side), sign) for side in value)
    if low == high:
        return low
    # a change of a range is two changes, which need not be in order (+8,781 at the floor, -8,781 at
    # the ceiling when the bounds 1..4 become 2..3): "+8,781..-8,781" read as a range
    return f"{low} at the floor, {high} at the ceiling" if signed else f"{low}..{high}"


def _cost_lines(result: Preview) -> list[str]:
    if not result.costs:
        return []
    lines = [
        "## Cost per month (USD, the planner's prices and running hours: capacity.json)",
        "",
        "| capacity source | pricing | before | after | change |",
        "|---|---|---|---|---|",
    ]
    for cost in result.costs:
        delta = None if cost.old is None or cost.new is None else (cost.new[0] - cost.old[0], cost.new[1] - cost.old[1])
        lines.append(
            f"| {_cell(cost.source)} | {_cell(cost.pricing)} | {_usd(cost.old)} | {_usd(cost.new)} | "
            f"{_usd(delta, signed=True)} |"
        )
    old, new = cost_span(result.costs, new=False), cost_span(result.costs, new=True)
    if old is not None and new is not None:
        lines += [
            "",
            "The capacity sources differ: each row is the month's bill if every node came from that source, and GKE "
            f"takes them in fallback order (a mix lies between), so the bill is {_usd(old)} before and {_usd(new)} "
            "after (the lowest floor to the highest ceiling of each side's rows).",
        ]
    if any(str(cost.pricing).startswith("reservation") for cost in result.costs):
        lines += ["", RESERVATION_BILLED]
    return [*lines, "", PRICED, ""]


# commands/plan/prices.py says the same under plan.md's table: the stack does not know a reservation's size
RESERVATION_BILLED = (
    "A reservation's rows price its nodes for the hours they run pods (and the disks, image and cluster fee all "
    "month): those node-hours are a part of the reservation's own bill, not added to it. The reservation is billed "
    "its size x 730 h a month, from its creation to its deletion, used or not (the stack does not know its size; "
    "plan.md's pricing notes)."
)


# Said under the cost lines, so that a +0 for a change to anything the planner does not price is not read as "free".
PRICED = (
    f"Priced: {PRICED_ITEMS}. Not priced, so a change to them shows +0 here though Google Cloud bills them: "
    f"{NOT_PRICED_ITEMS}."
)


def changes_markdown(result: Preview) -> str:
    counts = result.counts()
    lines = [
        "# Preview of the update",
        "",
        ", ".join(f"{counts[action]} to {action}" for action in ACTIONS) + f", {counts['same']} unchanged.",
        "",
    ]
    # Prose that may quote values of the renders compared: inert, so that a hand-edited render's value opens no link
    # or HTML of its own (an attacker: a minMasterVersion and an input's name with a link reached changes.md).
    if result.notes:
        lines += ["## What is compared", ""] + [inert(f"- {line}") for line in result.notes] + [""]
    if result.refusals:
        lines += (
            ["## The engine would refuse this update", ""] + [inert(f"- {line}") for line in result.refusals] + [""]
        )
    if result.warnings:
        lines += ["## Warnings", ""] + [inert(f"- {line}") for line in result.warnings] + [""]
    if result.kept:
        lines += ["## No change: the old value stays", ""]
        for kept in result.kept:
            body = [f"  {line}" for line in _lines(kept.old)]
            fence = _fence(body)
            lines += [
                f"- {code_span(kept.urn)} {code_span(kept.path)} ({inert(kept.source)})",
                f"  {fence}json",
                *body,
                f"  {fence}",
            ]
        lines.append("")
    lines += _outputs_lines(result.outputs) + _rollout_lines(result) + _cost_lines(result)
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
            lines.append(f"- {code_span(change.urn)}{suffix}")
            if action == "replace":
                lines.append(inert(f"  - because: {'; '.join(change.replaced_because)}"))
            if change.delete_first_by:
                lines.append(inert(f"  - deleted first by {change.delete_first_by}"))
            if change.config_keys:
                lines.append(inert(f"  - stack setting: {', '.join(sorted(change.config_keys))}"))
            elif change.no_config_keys:
                lines.append(inert(f"  - stack setting: none ({change.no_config_keys})"))
            if change.effect:
                lines.append(inert(f"  - the provider: {change.effect.says} ({change.effect.source})"))
            if action in ("update", "replace"):
                for input_change in change.inputs:
                    lines += _input_lines(input_change)
        lines.append("")
    lines.append(
        "Secrets show as `[secret]` with a digest of what the render holds (for a `secure:` value, its ciphertext), "
        "never their value: docs/preview.md."
    )
    # A value of a hand-edited OLD may hold a line break, a terminal's escape sequence or a bidi override:
    # every line is written with what is not printable escaped, so the file (posted to a pull request,
    # `cat` in a terminal) shows it as text and starts no line, heading or escape of its own.
    return "\n".join(escaped(line) for line in lines) + "\n"
