"""`render STACK [STACK ...]`: what `pulumi up` would create for each stack, written as plain files.

Writes `resources.json`, `manifests/`, `outputs.json`, `policy.json` (the policy pack's verdicts),
`capacity.json` and `capacity.svg` (the capacity planner's figures and chart) and `plan.md` to
`build/STACK/` (or `--out`), for the first `up` on an empty project, or with `--converged` for the
state every later `up` keeps (the weights image of the stack's revision exists, so the download
scaffolding is gone: docs/preview.md). `states.json` holds both states' resources, which is what a
preview compares. A STACK is a stack name (reads `Pulumi.STACK.yaml`) or the path of a
stack file. Several stacks render in one process, each exactly as a fresh process would render it.
`--out` follows the output-folder contract (`commands/io/output.py`): no symbolic links, never `/`,
the repository or the home directory, only files the commands wrote themselves are replaced. Exit
status, the worst over the stacks: 0 rendered, 1 a mandatory policy violation (after writing every
file; nothing is written when a file would hold a token) or any other failure, 2 invalid stack config
or arguments (also an `--out` folder the contract refuses).
With `--against OLD_DIR` it also writes `changes.md` / `changes.json`, the preview of the update from
that earlier render's converged state (`commands/preview/command.py`; with several stacks OLD_DIR/STACK):
exit 1 when the update would be refused, 2 when OLD_DIR is not a render.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import yaml

from commands.check_policies.pack_config import PolicyConfigError
from commands.check_policies.runner import Violation, check_records, read_policy_config, summary
from commands.engine import mocks
from commands.engine.secrets import secret_digests
from commands.entry import invoked_as
from commands.io import output
from commands.io.cli import STACK_HELP, command_parser, output_folder, path_argument, stack_ref
from commands.io.console import folded, guarded, one_line, shown
from commands.io.records import RENDER_SECRET_MARK, SECRET_DIGESTS, TRIGGER_DIGESTS
from commands.io.render_dir import PreviewInputError
from commands.io.states import (
    CONVERGED,
    FIRST_UP,
    STATES_FILE,
    RenderStates,
    load_states,
    setting_digests,
    states_as_read,
    states_document,
    without_known_secrets,
    written_settings,
)
from commands.preview.command import (
    Preview,
    add_accept_client_break,
    preview_files,
    preview_of_states,
    report_preview,
)
from commands.render.capacity_report import capacity_files
from commands.render.plan_md import plan_markdown
from commands.render.time_to_serve import unconditioned_reports_note, wake_read_note
from commands.stackfile import stack_settings
from common.input_files import InputError
from policies.redaction import holds_known_secret, known_secret_texts
from policies.rules.security import NO_TOKEN_LITERAL
from stacks.capacity import measurements
from stacks.config.stack import StackConfig
from stacks.load.loader import InvalidConfig, raw_project_config, validate

NOT_MANIFESTS = ("pulumi:providers:", "kubernetes:helm.sh/")
# libyaml's emitter when PyYAML has it (several times faster), the same safe representer either way.
SAFE_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

Progress = Callable[[str], None]


def quiet(_: str) -> None:
    """No progress lines: the render is not watched on a terminal."""


def terminal_progress(stack: str, stream: TextIO) -> Progress:
    """One short line per stage on a terminal; nothing when the output is a pipe or a file."""
    if not stream.isatty():
        return quiet

    def report(stage: str) -> None:
        print(f"render {stack}: {stage}", file=stream, flush=True)

    return report


def redacted(value: Any) -> Any:
    """A secret's shape with every leaf replaced: keys of a secret map are not secret."""
    if isinstance(value, dict):
        return {key: redacted(item) for key, item in sorted(value.items())}
    if isinstance(value, (list, tuple)):
        return [redacted(item) for item in value]
    return RENDER_SECRET_MARK


def plain(value: Any) -> Any:
    """Engine-shaped values to plain JSON: secrets redacted, integral floats as ints, keys sorted."""
    if isinstance(value, dict):
        if value.get(mocks.SECRET_SIG) == mocks.SECRET_MARK:
            return redacted(value.get("value"))
        return {key: plain(item) for key, item in sorted(value.items())}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _name_of(urn: str) -> str:
    return urn.rsplit("::", 1)[-1]


def resource_records(registrations: list[mocks.Registration]) -> list[dict[str, Any]]:
    """One JSON object per declared resource, sorted by type and logical name."""
    names = {registration.urn: registration.name for registration in registrations}
    records = []
    for registration in registrations:
        options = dict(registration.options)
        if "deletedWith" in options:
            options["deletedWith"] = names.get(options["deletedWith"], _name_of(options["deletedWith"]))
        for key in ("dependsOn", "replaceWith"):
            if key in options:
                options[key] = sorted(names.get(urn, _name_of(urn)) for urn in options[key])
        if "replacementTrigger" in options:
            trigger = options["replacementTrigger"]
            options["replacementTrigger"] = plain(trigger)
            if digests := secret_digests(trigger):  # a secret trigger that changes is still told apart
                options[TRIGGER_DIGESTS] = digests
        # a provider reference is "<provider urn>::<provider id>"
        provider = registration.provider.split("::")[-2] if registration.provider else None
        record = {
            "type": registration.type,
            "name": registration.name,
            "parent": names.get(registration.parent),
            "provider": provider,
            "custom": registration.custom,
            "inputs": plain(registration.inputs),
            "options": options,
        }
        digests = secret_digests(registration.inputs)
        if digests:
            record[SECRET_DIGESTS] = digests
        records.append(record)
    return sorted(records, key=lambda record: (record["type"], record["name"]))


def is_manifest(record: dict[str, Any]) -> bool:
    return (
        record["custom"] and record["type"].startswith("kubernetes:") and not record["type"].startswith(NOT_MANIFESTS)
    )


def manifest_of(record: dict[str, Any]) -> dict[str, Any]:
    inputs = dict(record["inputs"])
    ordered = {"apiVersion": inputs.pop("apiVersion"), "kind": inputs.pop("kind"), "metadata": inputs.pop("metadata")}
    ordered.update(inputs)
    return ordered


def manifests_of(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The Kubernetes objects among the records, as the render writes them."""
    return [manifest_of(record) for record in records if is_manifest(record)]


def manifest_file_name(manifest: dict[str, Any]) -> str:
    metadata = manifest["metadata"]
    parts = [manifest["kind"].lower(), metadata.get("namespace", "_cluster"), metadata["name"]]
    return "--".join(parts) + ".yaml"


def manifest_texts(records: list[dict[str, Any]]) -> dict[str, str]:
    """One YAML text per Kubernetes object, keyed by file name."""
    texts: dict[str, str] = {}
    for manifest in manifests_of(records):
        file_name = manifest_file_name(manifest)
        if file_name in texts:
            raise RuntimeError(f"two Kubernetes objects render to {file_name}")
        texts[file_name] = yaml.dump(manifest, Dumper=SAFE_DUMPER, sort_keys=False, width=100)
    return texts


@dataclass(frozen=True)
class Rendered:
    config: StackConfig
    records: list[dict[str, Any]]
    out_dir: Path
    violations: list[Violation]
    changes: Preview | None
    # What the offline run could not know or does not apply (ESC, provider settings): also on stderr.
    notes: list[str]


def render(
    stack: str,
    config_file: Path | None = None,
    out: Path | None = None,
    progress: Progress = quiet,
    earlier: RenderStates | None = None,
    converged: bool = False,
    accept_client_break: bool = False,
    policy_config: dict[str, Any] | None = None,
) -> Rendered:
    """Render one stack into its output folder (with the preview of the update from the `earlier`
    render's states, when given: written with the render, in one go); `converged`: write the state
    after the `up` that made the weights image instead of the first `up`."""
    progress("loading config")
    settings = stack_settings.load_stack_settings(stack, config_file)
    mocks.apply_settings(settings)
    given = raw_project_config(settings.project)
    config = validate(given)
    out_dir = out or stack_settings.ROOT / "build" / stack
    output.check_out_dir(out_dir)
    unset = settings.unset_secret_keys()
    notes = [
        *stack_settings.unset_secret_notes(settings),
        *stack_settings.stack_file_notes(settings),
        *filter(None, [unconditioned_reports_note(config), wake_read_note(config)]),
    ]
    progress("running the program")
    first_up = mocks.run_program(settings)
    # The `up` after the one that made the image: the program's own image look-up finds it
    # (components/weights.py `_image_exists`), exactly as on a real second `up`.
    image = plain(first_up.outputs).get("weightsImage")
    later = mocks.run_program(settings, existing_images=frozenset({image})) if isinstance(image, str) else first_up
    result = later if converged else first_up
    # As `pulumi up` shows them, on one line each: a warning both runs give is one.
    warned = list(dict.fromkeys(" ".join(line.split()) for line in [*first_up.warnings, *later.warnings]))
    first_up_records = resource_records(first_up.registrations)
    later_records = resource_records(later.registrations) if later is not first_up else first_up_records
    records = later_records if converged else first_up_records
    progress(f"writing {sum(map(is_manifest, records))} manifests")
    manifests = manifest_texts(records)
    outputs = plain(result.outputs)
    progress("checking policies")
    violations = check_records(records, policy_config, stack=stack, project=settings.project)
    policy = summary(violations)
    written = written_settings(config, given)
    files = {
        "resources.json": output.json_document(records),
        **{f"manifests/{name}": text for name, text in manifests.items()},
        "outputs.json": output.json_document(outputs),
        "policy.json": output.json_document(policy),
        **capacity_files(stack, config),
        "plan.md": plan_markdown(
            stack,
            config,
            records,
            outputs,
            sorted(manifests),
            [key for key in settings.placeholders if key not in unset],
            policy,
            [*notes, *stack_settings.engine_notes(settings)],
            warned,
        ),
        STATES_FILE: output.json_document(
            {
                **states_document(
                    image,
                    first_up_records,
                    later_records,
                    plain(first_up.outputs),
                    plain(later.outputs),
                    setting_digests(config),
                    stack_settings.esc_note(settings),
                    written,
                ),
                "rendered": CONVERGED if converged else FIRST_UP,
            }
        ),
    }
    known = settings.known_secret_values()
    leaks = output.token_leaks(files, known)
    if not leaks and any(violation.policy == NO_TOKEN_LITERAL.name for violation in violations):
        # The policy saw a token literal the file scan's shape test may miss (short, unusual): same verdict.
        leaks = sorted(files)
    _refuse_leaks(files, leaks, violations, settings_holding(written, known))
    changes = None
    if earlier is not None:
        new = states_as_read(files, out_dir)
        # OLD may hold a value this stack file now keeps secret (moved from a plain setting into ESC)
        changes = preview_of_states(
            without_known_secrets(earlier, known), new, "the --against render", accept_client_break
        )
        if changes.refusals and _same_folder(Path(earlier.where), out_dir):
            raise RefusedInPlaceError(changes.refusals, [violation.line() for violation in violations], out_dir)
        previews = preview_files(changes)
        _refuse_leaks(previews, output.token_leaks(previews, known), violations)
        files.update(previews)
    output.write_render(out_dir, files)
    return Rendered(
        config, records, out_dir, violations, changes, [*notes, *(f"the program warns: {line}" for line in warned)]
    )


def _refuse_leaks(
    files: dict[str, str], leaks: list[str], violations: list[Violation], holding: Sequence[str] = ()
) -> None:
    if leaks:
        where = f" (a secret value of the stack is in {', '.join(holding[:3])})" if holding else ""
        raise output.SecretInOutputError(
            f"{output.leaked_kind(files)} would be written to {', '.join(leaks[:3])}{where}; nothing was written "
            "(keep secrets in `pulumi config set --secret` keys only: hfToken, or a key engine.secretEnv names)",
            [violation.line() for violation in violations],
        )


def settings_holding(settings: dict[str, Any], known: list[str]) -> list[str]:
    """The settings (dotted keys, `[i]` for a list's item) whose values show one of the stack's own secret values."""
    texts = known_secret_texts(known)

    def walk(value: Any, where: str) -> Iterator[str]:
        if isinstance(value, dict):
            for key, item in value.items():
                yield from walk(item, f"{where}.{key}" if where else str(key))
        elif isinstance(value, list):
            for index, item in enumerate(value):
                yield from walk(item, f"{where}[{index}]")
        elif isinstance(value, str) and holds_known_secret(value, texts):
            yield where

    return list(walk(settings, "")) if texts else []


class RefusedInPlaceError(Exception):
    """The update from the render in the output folder itself would be refused: the folder stays as it was,
    as a refused `up` leaves the state (replaced, the next `--against` it would preview no change)."""

    def __init__(self, refusals: list[str], policy_lines: list[str], out_dir: Path) -> None:
        super().__init__(
            f"nothing written: the update from the render in {out_dir} (OLD_DIR) is refused, so it is kept as it "
            "was, as a refused `up` leaves the state; give --out another folder to see the new render and changes.md"
        )
        self.refusals = refusals
        self.policy_lines = policy_lines


def _same_folder(earlier: Path, out_dir: Path) -> bool:
    try:
        return earlier.samefile(out_dir)
    except OSError:
        return False


def _summary(records: list[dict[str, Any]]) -> str:
    counts = Counter("component" if not record["custom"] else record["type"].split(":")[0] for record in records)
    return ", ".join(f"{count} {kind}" for kind, count in sorted(counts.items()))


def render_one(
    stack: str,
    config_file: Path | None,
    out: Path | None,
    label: str = "",
    earlier: RenderStates | None = None,
    converged: bool = False,
    accept_client_break: bool = False,
    policy_config: dict[str, Any] | None = None,
) -> int:
    """Render one stack and report it as the command does (with the preview of the update from the
    `earlier` render's states, if given); returns its exit status."""
    command = invoked_as("render")
    try:
        rendered = render(
            stack,
            config_file,
            out,
            terminal_progress(stack, sys.stderr),
            earlier,
            converged,
            accept_client_break,
            policy_config,
        )
    except (InvalidConfig, InputError) as error:
        print(
            one_line(f"{label}{error}" if isinstance(error, InvalidConfig) else f"{label}{command}: {error}"),
            file=sys.stderr,
        )
        return 2
    except output.SecretInOutputError as error:
        print("\n".join(f"{label}{line}" for line in [*error.lines, f"{command}: {error}"]), file=sys.stderr)
        return 1
    except RefusedInPlaceError as error:
        refusals = (f"refused: {folded(refusal)}" for refusal in error.refusals)
        lines = [*error.policy_lines, *refusals, f"{command}: {error}"]
        print("\n".join(f"{label}{line}" for line in lines), file=sys.stderr)
        return 1
    except (RecursionError, MemoryError, BrokenPipeError, KeyboardInterrupt):
        raise
    except Exception as error:
        print(f"{label}render failed: {one_line(f'{type(error).__name__}: {error}')}", file=sys.stderr)
        return 1
    records, out_dir, violations = rendered.records, rendered.out_dir, rendered.violations
    print(f"rendered stack {stack}: {len(records)} resources ({_summary(records)}) -> {shown(out_dir)}")
    for note in rendered.notes:
        print(f"{label}note: {note}", file=sys.stderr)
    for violation in violations:
        print(f"{label}{violation.line()}", file=sys.stderr)
    refused = report_preview(rendered.changes, out_dir, label) if rendered.changes is not None else 0
    mandatory = sum(violation.mandatory for violation in violations)
    if mandatory:
        print(
            f"{label}{command}: {mandatory} mandatory policy violation(s); see {shown(out_dir / 'policy.json')}",
            file=sys.stderr,
        )
        return 1
    return refused


EXIT_CODES = {
    0: "rendered (advisory policy violations are reported on standard error)",
    1: "a mandatory policy violation (every file written), a token that would reach a file (nothing written), "
    "an update the engine would refuse (with --against; nothing written when OLD_DIR is the output folder), "
    "or another failure",
    2: "invalid stack config, stack name or arguments; an --out folder that is not new, empty or a render; "
    "an OLD_DIR that is not a render",
}


@guarded("render", as_is=(InvalidConfig,))
def main(argv: list[str] | None = None) -> int:
    parser = command_parser("render", __doc__.split("\n\n")[0] if __doc__ else "", EXIT_CODES)
    parser.add_argument("stacks", nargs="+", metavar="STACK", help=f"{STACK_HELP}; several render one after another")
    parser.add_argument(
        "--config-file",
        type=path_argument,
        metavar="FILE",
        help="with one STACK: read the stack's settings from this file",
    )
    parser.add_argument(
        "--out",
        type=output_folder,
        metavar="DIR",
        help="output directory (default build/STACK); with several stacks, one STACK folder in it",
    )
    parser.add_argument(
        "--against",
        type=path_argument,
        metavar="OLD_DIR",
        help="also preview the update from this earlier render into changes.md / changes.json "
        "(with several stacks: OLD_DIR/STACK)",
    )
    parser.add_argument(
        "--converged",
        action="store_true",
        help="render the state after the `up` that made the weights image (no download scaffolding)",
    )
    parser.add_argument(
        "--measurements",
        type=path_argument,
        metavar="FILE",
        help="another measurements file for every figure and goal sizing (default: the repository's); "
        "`pulumi up` sizes a goal from the repository's",
    )
    parser.add_argument(
        "--policy-config",
        type=path_argument,
        metavar="FILE",
        help="policy config JSON, as for `pulumi preview --policy-pack-config` (levels and settings per policy)",
    )
    add_accept_client_break(parser)
    args = parser.parse_args(argv)
    command = invoked_as("render")
    try:
        policy_config = read_policy_config(args.policy_config) if args.policy_config else None
    except (PolicyConfigError, InputError) as error:
        print(f"{command}: {one_line(error)}", file=sys.stderr)
        return 2
    refs = [stack_ref(target) for target in args.stacks]
    try:
        for ref in refs:
            stack_settings.check_project(ref.project)
    except (InvalidConfig, InputError) as error:
        print(f"{command}: {one_line(error)}", file=sys.stderr)
        return 2
    targets = [(ref.name, ref.file) for ref in refs]
    names = [name for name, _ in targets]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        print(f"{command}: stack {duplicates[0]} is given twice; give each stack once", file=sys.stderr)
        return 2
    if args.config_file is not None:
        if len(targets) != 1:
            print(
                f"{command}: --config-file goes with exactly one STACK; name stack files as STACK",
                file=sys.stderr,
            )
            return 2
        targets = [(names[0], args.config_file)]
    several = len(targets) > 1
    earlier: dict[str, RenderStates | None] = {}
    for name, _ in targets:
        try:  # read before rendering: OLD_DIR may be the output directory the render replaces
            earlier[name] = load_states(args.against / name if several else args.against) if args.against else None
        except PreviewInputError as error:
            print(f"{command}: {one_line(error)}", file=sys.stderr)
            return 2
    with measurements.using(args.measurements):
        statuses = [
            render_one(
                name,
                config_file,
                (args.out / name if several else args.out) if args.out else None,
                label=f"{name}: " if several else "",
                earlier=earlier[name],
                converged=args.converged,
                accept_client_break=args.accept_client_break,
                policy_config=policy_config,
            )
            for name, config_file in targets
        ]
    return max(statuses)


if __name__ == "__main__":
    sys.exit(main())
