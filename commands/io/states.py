"""The two states of a render, and which of them a preview compares.

Every `up` runs the program, and the program looks up the weights image of its revision
(components/weights.py `_image_exists`): the first `up` on an empty project finds none and declares
the download scaffolding (fill disk, its volume and claim, the download Job, the snapshot) besides
the image and the serving disks; every later `up` finds the image and declares the serving objects
only, so the engine deletes the scaffolding. A render runs the program both ways, with the offline
cloud answering that look-up (`engine.OfflineMocks`): `states.json` holds the resources of the
first `up` (`firstUp`) and of every later one (`converged`), and the image name the program looked up.

A preview from OLD to NEW compares what the engine would compare: OLD's converged state (its image
exists) with NEW as the program declares it while OLD's image exists. That is NEW's converged state
when NEW looks up the same image (same revision, model and cluster name); otherwise NEW's first `up`
(its image does not exist yet, so its download runs). An image left by an even older revision
(prod abandons images, `weights.protect`) is not known here: docs/preview.md.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from commands.io.records import validated_records
from commands.io.render_dir import (
    RESOURCES_LIMIT,
    SETTING_DIGEST,
    SETTING_DIGESTS_KEY,
    SETTINGS_KEY,
    PreviewInputError,
    load_render,
    without_secrets,
)
from common.input_files import InputError, read_json
from policies.redaction import REDACTED, holds_known_secret, known_secret_texts
from stacks.config.base import SwitchedGroup
from stacks.config.presets import apply_preset
from stacks.config.profiles import apply_profile

STATES_FILE = "states.json"
OUTPUTS_FILE = "outputs.json"
CAPACITY_FILE = "capacity.json"
POLICY_FILE = "policy.json"
# outputs.json and capacity.json are a few KiB; a bound far above that
SIDE_FILE_LIMIT = 4 * 1024 * 1024
FIRST_UP = "firstUp"
CONVERGED = "converged"
IMAGE_TYPE = "gcp:compute/image:Image"
JOB_TYPE = "kubernetes:batch/v1:Job"
COMPONENT_LABEL = "app.kubernetes.io/component"
# Both states of a render: twice what its resources.json may hold.
STATES_LIMIT = 2 * RESOURCES_LIMIT
Record = dict[str, Any]


def pod_template(record: Record) -> dict[str, Any]:
    """A workload record's pod template (a Deployment's or a Job's `spec.template`), empty when it has none."""
    template: dict[str, Any] = (record["inputs"].get("spec") or {}).get("template") or {}
    return template


def pod_labels(record: Record) -> dict[str, Any]:
    """The labels of a workload record's pods, empty when it has none."""
    labels: dict[str, Any] = (pod_template(record).get("metadata") or {}).get("labels") or {}
    return labels


def is_job_of(record: Record, component: str) -> bool:
    """A Job whose pods carry `app.kubernetes.io/component: <component>` (the weights' download, the benchmark)."""
    return record["type"] == JOB_TYPE and pod_labels(record).get(COMPONENT_LABEL) == component


# states.json's note of the settings an ESC environment supplies under `pulumi up`, which the render could not see.
UNSEEN_SETTINGS_KEY = "unseenSettings"
# 50 imports of ESC references of up to 302 characters, and the placeholders (commands/stackfile/esc.py)
UNSEEN_SETTINGS_MAX = 65_536
# A Compute Engine image's name (the images API: `[a-z]([-a-z0-9]*[a-z0-9])?`, at most 63 characters).
IMAGE_NAME = re.compile(r"[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?")
# The note a render writes there (commands/stackfile/stack_settings.py esc_note), and nothing else: its fixed words, and
# an ESC environment's, a config key's or a placeholder's name in a code span (where markup is text), so that a
# hand-edited render's own prose, links or HTML never reach a preview's warnings (an attacker's "Reviewed: this
# update is safe [details](...)").
_NAME = r"`[^`\n]{1,400}`"
_MORE = r"(?:, and [0-9,]+ more)?"
_SOURCE = rf"(?:{_NAME}|the stack file's inline `environment` values)"
ESC_NOTE = re.compile(
    rf"Pulumi ESC: the stack imports {_SOURCE}(?:, {_SOURCE})*, which an offline render cannot open\. "
    rf"(?:Placeholders stand in for {_NAME} \({_NAME}\)(?:, {_NAME} \({_NAME}\))*{_MORE}\. )?"
    rf"(?:It computes {_NAME}(?:, {_NAME})*{_MORE}\. )?"
    r"Keys the stack file leaves out take their defaults here; under `pulumi up` the environment's `pulumiConfig` "
    r"may set them \(the stack file's own values win\)\."
)


@dataclass(frozen=True)
class RenderStates:
    """A render's first `up` and converged state; `converged` is None for a render without
    `states.json` (made before it existed, or a hand-made one): its resources.json stands for both."""

    first_up: list[Record]
    converged: list[Record] | None
    weights_image: str | None
    where: str = ""
    # the render's stack outputs (outputs.json) and capacity plan (capacity.json), when it has them
    outputs: dict[str, Any] | None = None
    capacity: dict[str, Any] | None = None
    # the stack outputs of each state (states.json `outputs`: firstUp and converged), when it has them
    state_outputs: dict[str, dict[str, Any]] | None = None
    # a digest of every stack setting the render was made from (`setting_digests`), when it has them
    setting_digests: dict[str, str] | None = None
    # those settings' values (`written_settings`), when it has them: what one changed setting alone does
    settings: dict[str, Any] | None = None
    # what the render could not see: settings an ESC environment supplies under `pulumi up` (a note, when any)
    unseen_settings: str | None = None
    # the mandatory policy violations of the render (policy.json), one line each, when it has the file
    mandatory: list[str] | None = None

    def outputs_of(self, state: str) -> dict[str, Any] | None:
        """The stack outputs of the state FIRST_UP or CONVERGED; outputs.json for a render without them."""
        if self.state_outputs is not None and isinstance(self.state_outputs.get(state), dict):
            return self.state_outputs[state]
        return self.outputs


def without_known_secrets(states: RenderStates, secrets: list[str]) -> RenderStates:
    """The states with every text that shows one of the stack's own secret values (`known_secret_texts`, also behind
    escapes) hidden whole, keys included: a render made while the value sat in a plain setting holds it, and the
    preview of the update that makes it a secret must not write it into changes.md."""
    known = known_secret_texts(secrets)
    if not known:
        return states

    def hidden(value: Any) -> Any:
        if isinstance(value, str):
            return REDACTED if holds_known_secret(value, known) else value
        if isinstance(value, list):
            return [hidden(item) for item in value]
        if isinstance(value, dict):
            return {hidden(key): hidden(item) for key, item in value.items()}
        return value

    return replace(
        states,
        first_up=hidden(states.first_up),
        converged=hidden(states.converged),
        outputs=hidden(states.outputs),
        capacity=hidden(states.capacity),
        state_outputs=hidden(states.state_outputs),
        settings=hidden(states.settings),
    )


def states_document(
    weights_image: Any,
    first_up: list[Record],
    converged: list[Record],
    first_up_outputs: dict[str, Any],
    converged_outputs: dict[str, Any],
    digests: dict[str, str],
    unseen_settings: str | None = None,
    settings: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "weightsImage": weights_image if isinstance(weights_image, str) else None,
        FIRST_UP: first_up,
        CONVERGED: converged,
        "outputs": {FIRST_UP: first_up_outputs, CONVERGED: converged_outputs},
        SETTING_DIGESTS_KEY: digests,
        **({SETTINGS_KEY: settings} if settings is not None else {}),
        **({UNSEEN_SETTINGS_KEY: unseen_settings} if unseen_settings else {}),
    }


def setting_digests(config: BaseModel) -> dict[str, str]:
    """A digest of each stack setting, by its key (`capacity.nodes`, `routing.gateway`: every field at
    every depth, a group of settings as a whole too): what a preview compares to know which settings
    changed between two renders. A preview checks the settings it reads against them
    (`written_settings`)."""
    digests: dict[str, str] = {}

    def walk(model: BaseModel, dumped: dict[str, Any], prefix: str) -> None:
        for name, info in type(model).model_fields.items():
            key = info.alias or name
            text = json.dumps(dumped[key], sort_keys=True, separators=(",", ":"))
            digests[prefix + key] = "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:16]
            value = getattr(model, name)
            if isinstance(value, BaseModel):
                walk(value, dumped[key], f"{prefix}{key}.")

    walk(config, config.model_dump(mode="json", by_alias=True), "")
    return digests


# Not written: the names of the stack's secret config keys the engine's environment reads (a redacting reader hides
# a mapping under a secret's name whole, and the two sides of a preview would then read it differently).
UNWRITTEN_SETTINGS = (("engine", "secretEnv"),)


def written_settings(config: BaseModel, raw: dict[str, Any]) -> dict[str, Any]:
    """The stack settings as states.json holds them: the config model's values by their stack-file keys, those the
    stack file (`raw`, what `config` was validated from) and its presets set, and a goal's node count. What the model
    fills in itself it fills in again on reading, so it is left out: written, a default beside a setting that excludes
    it would be refused (`throughputMibps` beside `targetLoadSeconds`), and a switch its group turns on because it sets
    other keys (`warmCapacity: {nodes: 2}`) would read as one the file sets (a preview names those keys with it). A
    preview asks of them what one changed setting alone does (`commands.preview.setting_sources.SettingValues`). A
    secret config value is no setting of the model, and the render refuses a file that shows one."""
    settings: dict[str, Any] = config.model_dump(mode="json", by_alias=True, exclude_unset=True)
    for group, key in UNWRITTEN_SETTINGS:
        settings.get(group, {}).pop(key, None)
    given = apply_profile(apply_preset(raw))
    for name, info in type(config).model_fields.items():
        group = info.alias or name
        if isinstance(getattr(config, name), SwitchedGroup) and switched_on_by(given.get(group)):
            settings[group].pop("enabled", None)
    return settings


def switched_on_by(group: Any) -> list[str]:
    """The keys of a switched group's settings that turn its switch on (`stacks.config.base.SwitchedGroup`): all of
    them when it sets some and not `enabled`."""
    return sorted(group) if isinstance(group, dict) and group and "enabled" not in group else []


def changed_settings(old: RenderStates, new: RenderStates) -> frozenset[str] | None:
    """The settings whose digests differ between the two renders (a group too: `engine` when
    `engine.maxNumSeqs` changed), of those both renders have: a group set to or from null
    (`engine.speculative`) changed as a whole, and its fields, on one side only, are not named apart; a group
    whose common fields all agree (a release added or dropped a field) did not change, unless a stack file sets a
    setting only one release has (then that setting changed).
    None when either render has no digests (made before they were written)."""
    if old.setting_digests is None or new.setting_digests is None:
        return None
    keys = old.setting_digests.keys() & new.setting_digests.keys()

    def in_a_group_both_hold(key: str) -> bool:  # not the fields of a group set to or from null
        group = key.rpartition(".")[0]
        return bool(group) and any(other.startswith(f"{group}.") for other in keys)

    changed = {
        key
        for side, other in ((old, new), (new, old))
        for key in _written_keys(side.settings or {})
        if key in side.setting_digests  # type: ignore[operator]
        and key not in other.setting_digests  # type: ignore[operator]
        and in_a_group_both_hold(key)
    }
    # Deepest first: a group both renders hold whose fields on both sides all agree differs only by fields one
    # release has and the other lacks (a new setting at its default), which no stack file changed.
    for key in sorted(keys, key=lambda name: name.count("."), reverse=True):
        if old.setting_digests[key] == new.setting_digests[key]:
            continue
        has_fields = any(other.startswith(f"{key}.") for other in keys)
        if not has_fields or any(other.startswith(f"{key}.") for other in changed):
            changed.add(key)
    return frozenset(changed)


def _written_keys(settings: dict[str, Any], prefix: str = "") -> Iterator[str]:
    """The dotted keys a render's written settings hold, groups and their fields."""
    for name, value in settings.items():
        yield prefix + name
        if isinstance(value, dict):
            yield from _written_keys(value, f"{prefix}{name}.")


def _setting_digests(value: Any, where: str) -> dict[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not all(
        isinstance(key, str) and isinstance(digest, str) and SETTING_DIGEST.fullmatch(digest)
        for key, digest in value.items()
    ):
        raise InputError(f"{where}: {SETTING_DIGESTS_KEY} must map setting keys to sha256 digests")
    return value


def states_of_document(document: Any, where: str, directory: str = "") -> RenderStates:
    """A states.json document, shape-checked (InputError names what is wrong)."""
    if not isinstance(document, dict):
        raise InputError(f"{where}: expected an object with {FIRST_UP} and {CONVERGED}")
    image = document.get("weightsImage")
    if image is not None and not (isinstance(image, str) and IMAGE_NAME.fullmatch(image)):
        raise InputError(
            f"{where}: weightsImage must be a Compute Engine image name (RFC 1035, 1-63 characters) or null"
        )
    outputs = document.get("outputs")
    if outputs is not None and not (
        isinstance(outputs, dict) and all(isinstance(outputs.get(state), dict) for state in (FIRST_UP, CONVERGED))
    ):
        raise InputError(f"{where}: outputs must hold the {FIRST_UP} and {CONVERGED} stack outputs")
    digests = _setting_digests(document.get(SETTING_DIGESTS_KEY), where)
    settings = _settings(document.get(SETTINGS_KEY), where)
    undigested = next(_undigested(settings, digests), None) if settings is not None and digests is not None else None
    if undigested is not None:
        # a render writes a digest of every setting (its group's covers a mapping's keys): an edited file would
        # otherwise say that no setting differs where its digests were taken out
        raise InputError(
            f"{where}: {SETTINGS_KEY} hold {undigested}, of which {SETTING_DIGESTS_KEY} hold no digest: not as a "
            "render writes them; render it again"
        )
    return RenderStates(
        validated_records(document.get(FIRST_UP), f"{where} {FIRST_UP}"),
        validated_records(document.get(CONVERGED), f"{where} {CONVERGED}"),
        image,
        directory,
        state_outputs=outputs,
        setting_digests=digests,
        settings=settings,
        unseen_settings=_unseen_settings(document.get(UNSEEN_SETTINGS_KEY), where),
    )


def _undigested(settings: dict[str, Any], digests: dict[str, str], prefix: str = "") -> Iterator[str]:
    """The settings (dotted keys) that neither have a digest of their own nor lie in a setting that has one."""
    for key, value in settings.items():
        path = f"{prefix}{key}"
        if path in digests:
            continue
        if isinstance(value, dict) and value:
            yield from _undigested(value, digests, f"{path}.")
        else:
            yield path


def _settings(value: Any, where: str) -> dict[str, Any] | None:
    if value is not None and not isinstance(value, dict):
        raise InputError(f"{where}: {SETTINGS_KEY} must be an object of the stack's settings")
    return value


def _unseen_settings(note: Any, where: str) -> str | None:
    if note is None:
        return None
    if not isinstance(note, str) or len(note) > UNSEEN_SETTINGS_MAX or not ESC_NOTE.fullmatch(note):
        raise InputError(
            f"{where}: {UNSEEN_SETTINGS_KEY} is not the note a render writes (what its ESC environment may supply, at "
            f"most {UNSEEN_SETTINGS_MAX} characters)"
        )
    return note


def side_document(directory: Path, name: str) -> dict[str, Any] | None:
    """outputs.json or capacity.json of a render: an object, or None when the render has none."""
    path = directory / name
    if not path.exists():
        return None
    try:
        return _side_of(read_json(path, SIDE_FILE_LIMIT), path)
    except InputError as error:
        raise PreviewInputError(str(error)) from None


def _side_of(read: Any, path: Path) -> dict[str, Any]:
    document = without_secrets(read)
    if not isinstance(document, dict):
        raise PreviewInputError(f"{path}: expected a JSON object")
    if path.name == CAPACITY_FILE:
        _figures_a_plan_holds(document, str(path))
    return document


def mandatory_violations(document: dict[str, Any] | None, path: Path) -> list[str] | None:
    """policy.json's mandatory violations as lines (`LLM-PROD-001 on NAME: message`); None without the file."""
    if document is None:
        return None
    violations = document.get("violations")
    fields = ("level", "policy", "resource", "message")
    if not isinstance(violations, list) or not all(
        isinstance(item, dict) and all(isinstance(item.get(key), str) for key in fields) for item in violations
    ):
        raise PreviewInputError(
            f"{path}: expected an object whose 'violations' list objects with the strings {', '.join(fields)}, as a "
            "render writes it"
        )
    return [
        f"{item['policy']} on {item['resource']}: {item['message']}"
        for item in violations
        if item["level"] == "mandatory"
    ]


def states_as_read(files: dict[str, str], directory: Path) -> RenderStates:
    """The states a render's files hold, read as `load_states` reads them back from its folder, secrets hidden
    alike: what a later `preview OLD NEW` compares (`render --against` previews from these)."""
    path = directory / STATES_FILE
    states = states_of_document(without_secrets(json.loads(files[STATES_FILE])), str(path), str(directory))
    return replace(
        states,
        outputs=_side_of(json.loads(files[OUTPUTS_FILE]), directory / OUTPUTS_FILE),
        capacity=_side_of(json.loads(files[CAPACITY_FILE]), directory / CAPACITY_FILE),
        mandatory=mandatory_violations(
            _side_of(json.loads(files[POLICY_FILE]), directory / POLICY_FILE), directory / POLICY_FILE
        ),
    )


# capacity.json's figures (costs, node-hours, seconds, tokens per second) are counts and amounts: a render
# writes none below 0 nor near this; a preview would say them (`-10 min`, a 300-digit cost) as read.
CAPACITY_FIGURE_MAX = 1e15


def _figures_a_plan_holds(value: Any, where: str, path: str = "") -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            _figures_a_plan_holds(item, where, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _figures_a_plan_holds(item, where, f"{path}[{index}]")
    elif isinstance(value, (int, float)) and not isinstance(value, bool) and not 0 <= value <= CAPACITY_FIGURE_MAX:
        raise PreviewInputError(  # also NaN
            f"{where}: '{path}' is {value:.3g}; allowed: a figure from 0 to {CAPACITY_FIGURE_MAX:.0e}, as a render "
            "writes it (the file was edited)"
        )


def load_states(directory: Path) -> RenderStates:
    """A render folder's states (bounded reads, shape-checked, secrets hidden: `render_dir`)."""
    records = load_render(directory)
    outputs, capacity = side_document(directory, OUTPUTS_FILE), side_document(directory, CAPACITY_FILE)
    mandatory = mandatory_violations(side_document(directory, POLICY_FILE), directory / POLICY_FILE)
    path = directory / STATES_FILE
    if not path.exists():
        return RenderStates(records, None, None, str(directory), outputs, capacity, mandatory=mandatory)
    try:
        states = states_of_document(without_secrets(read_json(path, STATES_LIMIT)), str(path), str(directory))
    except InputError as error:
        raise PreviewInputError(str(error)) from None
    return replace(states, outputs=outputs, capacity=capacity, mandatory=mandatory)


@dataclass(frozen=True)
class Compared:
    """The two states a preview compares, and what the choice means for the user."""

    old: list[Record]
    new: list[Record]
    # NEW's first-up resources the comparison leaves out because OLD's image exists (logical names).
    not_declared: frozenset[str] = frozenset()
    notes: list[str] = field(default_factory=list)
    old_first_up: list[Record] = field(default_factory=list)
    new_first_up: list[Record] = field(default_factory=list)
    weights_image: str | None = None
    # which of NEW's states is compared (FIRST_UP when its download runs)
    new_state: str = CONVERGED
    # the stack outputs of the two states compared
    old_outputs: dict[str, Any] | None = None
    new_outputs: dict[str, Any] | None = None


def compared(old: RenderStates, new: RenderStates) -> Compared:
    """The two states, and the stack outputs of each."""
    view = _compared(old, new)
    return replace(view, old_outputs=old.outputs_of(CONVERGED), new_outputs=new.outputs_of(view.new_state))


def _compared(old: RenderStates, new: RenderStates) -> Compared:
    if old.converged is None or new.converged is None:
        stale = old.where if old.converged is None else new.where
        notes = [
            f"{stale or 'a render'} has no {STATES_FILE} (rendered before it existed): compared as rendered, "
            "which may be a first `up` with its download scaffolding; render it again for the converged state"
        ]
        old_records = old.converged if old.converged is not None else old.first_up
        new_records = new.converged if new.converged is not None else new.first_up
        return Compared(old_records, new_records, notes=notes)
    if old.weights_image is None or new.weights_image is None:
        notes = ["compared converged states: a render looks up no weights image, so there is no download to tell apart"]
        return Compared(old.converged, new.converged, notes=notes)
    if new.weights_image == old.weights_image:
        scaffolding = {record["name"] for record in new.first_up} - {record["name"] for record in new.converged}
        notes = [
            f"compared converged states: the weights image {new.weights_image} of OLD exists, and NEW looks up the "
            "same image, so neither side declares the download scaffolding"
        ]
        return Compared(
            old.converged, new.converged, frozenset(scaffolding), notes, old.first_up, new.first_up, new.weights_image
        )
    notes = [
        f"compared OLD's converged state (its weights image {old.weights_image} exists) with NEW's first `up`: NEW "
        f"looks up the image {new.weights_image}, which does not exist yet, so its download runs"
    ]
    kept = {record["name"] for record in new.converged}
    made_it = sorted(record["name"] for record in new.first_up if record["name"] not in kept)
    if any(
        record["type"] == IMAGE_TYPE and record["inputs"].get("deletionPolicy") == "ABANDON" for record in new.first_up
    ):
        notes.append(
            f"if {new.weights_image} was made in this project before (a revision this stack served, then left: its "
            "image and disks are kept when replaced, deletionPolicy ABANDON), `pulumi up` finds it and downloads "
            "nothing, and creating the image and disks under their old names fails with 'already exists': delete or "
            "import them first (docs/weights.md)"
        )
    outputs = sorted(set(new.outputs_of(FIRST_UP) or {}) - set(new.outputs_of(CONVERGED) or {}))
    if made_it:
        gone = "".join(f"; the {name} output" for name in outputs)
        notes.append(
            f"the `up` after this one finds the new image and deletes what made it ({', '.join(made_it)}{gone}): "
            "no serving pod moves then; `render --converged` of NEW is that state"
        )
    return Compared(old.converged, new.first_up, notes=notes, new_state=FIRST_UP)


def download_not_rerun(view: Compared, index: Any) -> list[str]:
    """NEW changed the inputs of scaffolding that OLD's existing image makes unnecessary: no change,
    and how to make the download run again. `index` keys records by URN (`preview.index_by_urn`)."""
    if not view.not_declared:
        return []
    old_first = index(view.old_first_up, "old render")
    new_first = index(view.new_first_up, "new render")
    changed = sorted(
        urn
        for urn, record in new_first.items()
        if record["name"] in view.not_declared and urn in old_first and old_first[urn]["inputs"] != record["inputs"]
    )
    if not changed:
        return []
    names = ", ".join(urn.rsplit("::", 1)[-1] for urn in changed)
    projects = {
        record["inputs"].get("project")
        for record in view.new
        if record["type"] == IMAGE_TYPE and record["inputs"].get("name") == view.weights_image
    }
    project = f" --project {projects.pop()}" if len(projects) == 1 else ""
    return [
        f"no change: {names} changed, but the weights image {view.weights_image} exists, so `pulumi up` does not "
        "declare the download again and the change never runs. To download again, delete the image "
        f"(`gcloud compute images delete {view.weights_image}{project}`) and run `pulumi up --refresh`: the "
        "program then finds no image and declares the download; the serving disks keep the bytes they were made "
        "from until they are recreated (docs/preview.md)"
    ]
