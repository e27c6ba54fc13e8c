"""The shape of a render's resource records (resources.json), checked before anything reads them.

`check-policies` and `preview` both take resources.json from the user: a file edited by hand, cut
short or made up must end in one line naming the record and the key, not in a traceback deep inside a
policy or the preview's planner.
"""

from __future__ import annotations

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
NAME_LISTS = ("dependsOn", "ignoreChanges", "replaceOnChanges", "additionalSecretOutputs", "aliases")
FLAGS = ("protect", "retainOnDelete", "deleteBeforeReplace")


def _label(record: dict[str, Any], index: int) -> str:
    name = record.get("name")
    return f"record {index}" + (f" ({name[:60]})" if isinstance(name, str) else "")


def validated_record(record: Any, index: int, where: str) -> dict[str, Any]:
    if not isinstance(record, dict):
        raise InputError(f"{where}: record {index} is not an object")
    label = _label(record, index)
    for key, (kind, described) in RECORD_FIELDS.items():
        if not isinstance(record.get(key), kind):
            raise InputError(f"{where}: {label} lacks '{key}' ({described})")
    for key in OPTIONAL_NAMES:
        if record.get(key) is not None and not isinstance(record[key], str):
            raise InputError(f"{where}: {label}: '{key}' must be a logical name or null")
    options = record["options"]
    for key in NAME_LISTS:
        value = options.get(key)
        if value is not None and not (isinstance(value, list) and all(isinstance(item, str) for item in value)):
            raise InputError(f"{where}: {label}: options.{key} must be a list of strings")
    for key in FLAGS:
        if options.get(key) is not None and not isinstance(options[key], bool):
            raise InputError(f"{where}: {label}: options.{key} must be true, false or null")
    if options.get("deletedWith") is not None and not isinstance(options["deletedWith"], str):
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
    return record


def validated_records(document: Any, where: str) -> list[dict[str, Any]]:
    """The records of a resources.json document, or InputError for the first malformed one."""
    if not isinstance(document, list):
        raise InputError(f"{where}: expected a list of resource records (a render's resources.json)")
    return [validated_record(record, index, where) for index, record in enumerate(document)]
