"""The shape of a render's resource records (resources.json), checked before anything reads them.

`check-policies` and `preview` both take resources.json from the user: a file edited by hand, cut
short or made up must end in one line naming the record and the key, not in a traceback deep inside a
policy or the preview's planner.
"""

from __future__ import annotations

import re
from typing import Any

from common.input_files import InputError

RECORD_FIELDS: dict[str, tuple[type, str]] = {
    "type": (str, "a string"),
    "name": (str, "a string"),
    "custom": (bool, "true or false"),
    "inputs": (dict, "an object"),
    "options": (dict, "an object"),
}
# What a render writes in place of a secret value (resources.json, outputs.json, states.json).
RENDER_SECRET_MARK = "[secret]"
OPTIONAL_NAMES = ("parent", "provider")
# A type token or logical name as the program makes them (Pulumi tokens, names from Kubernetes- and GCP-style
# settings): no blank, quote, bracket, backtick, pipe or markup sign, so that a hand-edited render's name puts no
# text, link or table cell of its own in a preview (an attacker's "evil` **no refusals** [x](...)").
# A token in a name is read back hidden, hf_*** (policies/redaction.py): the mark is allowed where it stands for one.
NAME = re.compile(r"(?:[A-Za-z0-9._:/$@+=~-]|\*\*\*){1,1000}")
NAME_ALLOWED = "letters, digits, . _ : / $ @ + = ~ - and a hidden secret's ***"
NAME_LISTS = ("dependsOn", "ignoreChanges", "replaceOnChanges", "additionalSecretOutputs", "aliases", "replaceWith")
FLAGS = ("protect", "retainOnDelete", "deleteBeforeReplace")
# a secret's digest as a render writes it ("value sha256:" and 12 hex digits, or a ciphertext's) with room to spare
DIGEST_LIMIT = 200
# input path -> digest of each secret input of a record, and of a secret replacement trigger (in its options)
SECRET_DIGESTS = "secretDigests"
TRIGGER_DIGESTS = "replacementTriggerSecretDigests"


# Where the pod template of a workload is in its inputs (the Kubernetes API: apps/v1, batch/v1), and the
# kinds whose spec holds a replica count (an int32, at least 0).
POD_TEMPLATES = {
    "kubernetes:apps/v1:Deployment": ("spec", "template"),
    "kubernetes:apps/v1:StatefulSet": ("spec", "template"),
    "kubernetes:apps/v1:DaemonSet": ("spec", "template"),
    "kubernetes:apps/v1:ReplicaSet": ("spec", "template"),
    "kubernetes:batch/v1:Job": ("spec", "template"),
    "kubernetes:batch/v1:CronJob": ("spec", "jobTemplate", "spec", "template"),
}
REPLICATED = ("kubernetes:apps/v1:Deployment", "kubernetes:apps/v1:StatefulSet", "kubernetes:apps/v1:ReplicaSet")
CONTAINER_LISTS = ("containers", "initContainers")
CONTAINER_LIST_FIELDS = ("args", "command", "env", "ports", "volumeMounts")


def _workload_problem(record: dict[str, Any]) -> str | None:
    """What in a Kubernetes object's inputs is not of the shape the API gives it, where the policies and
    the preview read it (its spec, a workload's pod template and containers, the replica count)."""
    inputs = record["inputs"]
    spec = inputs.get("spec")
    if spec is not None and not isinstance(spec, dict):
        return "inputs.spec must be an object (the Kubernetes object's spec)"
    replicas = spec.get("replicas") if spec is not None and record["type"] in REPLICATED else None
    if replicas is not None and (isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 0):
        return "inputs.spec.replicas must be a whole number, 0 or more"
    return _pod_problem(inputs, POD_TEMPLATES.get(record["type"], ()))


def _pod_problem(inputs: dict[str, Any], path: tuple[str, ...]) -> str | None:
    """What is not an object on the way to a workload's pod spec (at `path` in its inputs), or in its containers."""
    if not path:
        return None
    node: Any = inputs
    for depth, key in enumerate(keys := (*path, "spec")):
        node = node.get(key)
        if node is None:
            return None
        if not isinstance(node, dict):
            return f"inputs.{'.'.join(keys[: depth + 1])} must be an object"
    where = f"inputs.{'.'.join(path)}.spec"
    for list_key in CONTAINER_LISTS:
        containers = node.get(list_key)
        if containers is not None and not (
            isinstance(containers, list) and all(isinstance(item, dict) for item in containers)
        ):
            return f"{where}.{list_key} must be a list of objects (one per container)"
        for position, container in enumerate(containers or ()):
            wrong = next(
                (
                    field
                    for field in CONTAINER_LIST_FIELDS
                    if container.get(field) is not None and not isinstance(container[field], list)
                ),
                None,
            )
            if wrong:
                return f"{where}.{list_key}[{position}].{wrong} must be a list"
    return None


def _digests(value: Any) -> bool:
    """Whether `value` maps input paths to digests as a render writes them (or hides them: `***`)."""
    return isinstance(value, dict) and all(
        isinstance(digest, str) and len(digest) <= DIGEST_LIMIT for digest in value.values()
    )


def _label(record: dict[str, Any], index: int) -> str:
    name = record.get("name")
    return f"record {index}" + (f" ({name[:60]})" if isinstance(name, str) else "")


def validated_record(record: Any, index: int, where: str) -> dict[str, Any]:
    if not isinstance(record, dict):
        raise InputError(f"{where}: record {index} is not an object")
    label = _label(record, index)
    for key, (kind, described) in RECORD_FIELDS.items():
        if not isinstance(record.get(key), kind):
            if key in record:  # there, of another type (an attacker: `"custom": "text"` was said to be missing)
                raise InputError(f"{where}: {label}: '{key}' must be {described}")
            raise InputError(f"{where}: {label} lacks '{key}' ({described})")
    for key in ("type", "name"):
        if not NAME.fullmatch(record[key]):
            raise InputError(f"{where}: {label}: '{key}' is not a name the program makes ({NAME_ALLOWED})")
    for key in OPTIONAL_NAMES:
        value = record.get(key)
        if value is not None and not (isinstance(value, str) and (value == "" or NAME.fullmatch(value))):
            raise InputError(f"{where}: {label}: '{key}' must be a logical name ({NAME_ALLOWED}) or null")
    options = record["options"]
    for key in NAME_LISTS:
        value = options.get(key)
        if value is not None and not (isinstance(value, list) and all(isinstance(item, str) for item in value)):
            raise InputError(f"{where}: {label}: options.{key} must be a list of strings")
    for key in FLAGS:
        if options.get(key) is not None and not isinstance(options[key], bool):
            raise InputError(f"{where}: {label}: options.{key} must be true, false or null")
    for key in ("dependsOn", "replaceWith"):
        for position, item in enumerate(options.get(key) or ()):
            if not NAME.fullmatch(item):  # not quoted: a hand-edited value may hold a password
                raise InputError(f"{where}: {label}: options.{key}[{position}] is not a logical name ({NAME_ALLOWED})")
    for holder, key, shown in (
        (record, SECRET_DIGESTS, SECRET_DIGESTS),
        (options, TRIGGER_DIGESTS, f"options.{TRIGGER_DIGESTS}"),
    ):
        if not _digests(holder.get(key, {})):
            raise InputError(f"{where}: {label}: {shown} must map paths to digests")
    if options.get("deletedWith") is not None and not (
        isinstance(options["deletedWith"], str) and NAME.fullmatch(options["deletedWith"])
    ):
        raise InputError(f"{where}: {label}: options.deletedWith must be a logical name or null")
    timeouts = options.get("customTimeouts")
    if timeouts is not None and not (
        isinstance(timeouts, dict) and all(isinstance(value, str) for value in timeouts.values())
    ):
        raise InputError(f"{where}: {label}: options.customTimeouts must map operations to durations")
    metadata = record["inputs"].get("metadata")
    if record["type"].startswith("kubernetes:") and metadata is not None and not isinstance(metadata, dict):
        # what the preview reads a Kubernetes object's identity from (name, namespace): refused here,
        # not after the whole preview has been worked out
        raise InputError(f"{where}: {label}: inputs.metadata must be an object (the Kubernetes object's metadata)")
    problem = _workload_problem(record) if record["type"].startswith("kubernetes:") else None
    if problem:
        raise InputError(f"{where}: {label}: {problem}")
    return record


def validated_records(document: Any, where: str) -> list[dict[str, Any]]:
    """The records of a resources.json document, or InputError for the first malformed one."""
    if not isinstance(document, list):
        raise InputError(f"{where}: expected a list of resource records (a render's resources.json)")
    records = [validated_record(record, index, where) for index, record in enumerate(document)]
    first: dict[str, int] = {}
    for index, record in enumerate(records):
        if first.setdefault(record["name"], index) != index:
            # parents, dependsOn and the policy checks find a record by its name: a second would take the first's place
            raise InputError(
                f"{where}: records {first[record['name']]} and {index} are both named '{record['name'][:60]}'; "
                "allowed: one record per name, as a render writes them"
            )
    return records
