"""The setting tracer's answers for the shipped program, worked out once and read back while the
files they came from are unchanged.

Following one day-2 change of an engine flag to its stack setting declares the serving component
more than a hundred times under the offline engine's mocks (6-8 s of CPU more than the render, for
every preview process: docs/benchmarks.md). The answers depend on the project's code, its data
files, the SDK versions and the measurements file in effect, so `make docs`
(`commands.preview.trace_refresh`) writes them, from the repository's measurements, to
`traced_settings.json` with a fingerprint of everything the trace loaded: each of the project's
modules it imported (its text), the data files beside them (every file of a loaded package's folder
and of its folders that are not packages: the measurements, the vLLM argument tables) and the
versions of the distributions that shape a declaration. A preview uses the table only while that
fingerprint is the one it computes from the files it runs and it reads the repository's measurements
(`current_table`); otherwise it follows the settings live, as before, and after a change to those
files `tests/commands/preview/test_traced_table.py` fails until the table is written again.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.machinery
import importlib.metadata
import json
import os
import re
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeGuard

from commands.plan.assumptions import is_the_repositorys
from common import input_files
from stacks.capacity import measurements

TABLE_FILE = Path(__file__).resolve().with_name("traced_settings.json")
# The table is about 370 KiB; read bounded, as every input (a FIFO or a device is refused, not read).
MAX_TABLE_BYTES = 16 * input_files.MIB
# The folder that holds the project's packages: the repository, or an installed wheel's
# `gke_b200_serving/` (hatch_build.py).
PROJECT_ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("commands", "common", "components", "policies", "schemas", "stacks")
# The SDK and the providers serialize what a component declares; pydantic validates the config.
DISTRIBUTIONS = ("pulumi", "pulumi-gcp", "pulumi-kubernetes", "pydantic")
# An installed wheel's modules import the project under its own name (hatch_build.py `namespaced`):
# that prefix is taken off before a module's text is fingerprinted, so the wheel's files match.
IMPORT_NAME = "" if __name__.startswith("commands.") else __name__.split(".")[0]


def loaded_sources() -> list[str]:
    """The project's modules loaded in this process, by their path under PROJECT_ROOT."""
    found: set[str] = set()
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if not isinstance(path, str):
            continue
        resolved = Path(path).resolve()
        if PROJECT_ROOT not in resolved.parents:
            continue
        relative = resolved.relative_to(PROJECT_ROOT)
        if relative.parts[0] in PACKAGES and relative.suffix == ".py":
            found.add(relative.as_posix())
    return sorted(found)


def _data_files(sources: Iterable[str]) -> list[str]:
    """Files beside the loaded packages that are not modules: in a loaded package's folder and in its
    folders that are not packages (schemas/vllm/), listed afresh so that a new one counts. A
    virtualenv is no part of the project: the Pulumi CLI makes the policy pack's (`policies/venv/`,
    PulumiPolicy.yaml `virtualenv`) when a preview runs the pack, thousands of files."""
    found: set[str] = set()
    for source in sources:
        if not source.endswith("/__init__.py"):
            continue
        for directory, folders, files in os.walk(PROJECT_ROOT / source.removesuffix("/__init__.py")):
            here = Path(directory)
            folders[:] = [name for name in folders if not _left_out(here / name)]
            for name in files:
                path = here / name
                if path.suffix not in (".py", ".pyc") and path != TABLE_FILE and path.is_file():
                    found.add(path.relative_to(PROJECT_ROOT).as_posix())
    return sorted(found)


def _left_out(folder: Path) -> bool:
    """A folder whose files are not listed: a package (listed when it is loaded), `__pycache__`, a
    virtualenv (its `pyvenv.cfg`, PEP 405)."""
    return folder.name == "__pycache__" or (folder / "__init__.py").exists() or (folder / "pyvenv.cfg").exists()


def repository_text(source: str, import_name: str) -> str:
    """A module's text as the repository holds it: the project's imports without `import_name.`."""
    if not import_name:
        return source
    return re.sub(rf"^([ \t]*(?:from|import)[ \t]+){re.escape(import_name)}\.", r"\1", source, flags=re.M)


def _digest(relative: str) -> str:
    if _hidden(relative):
        return HIDDEN
    data = (PROJECT_ROOT / relative).read_bytes()
    if relative.endswith(".py") and IMPORT_NAME:
        data = repository_text(data.decode("utf-8"), IMPORT_NAME).encode("utf-8")
    return hashlib.sha256(data).hexdigest()


# What a module file that import no longer loads fingerprints as.
HIDDEN = "hidden by a package of its name"


def _hidden(relative: str) -> bool:
    """A module file (`c.py`) beside a package of the same name (`c/__init__.py`, or `__init__` with any
    other importable suffix): import loads the package, whose files the data-file listing leaves out."""
    if not relative.endswith(".py") or relative.endswith("/__init__.py"):
        return False
    package = PROJECT_ROOT / relative.removesuffix(".py")
    return any((package / f"__init__{suffix}").is_file() for suffix in importlib.machinery.all_suffixes())


def fingerprint(sources: Iterable[str]) -> dict[str, Any]:
    """What the trace depends on: the digest of each module in `sources` and of the data files beside
    them, and the versions of DISTRIBUTIONS."""
    modules = sorted(sources)
    return {
        "files": {relative: _digest(relative) for relative in [*modules, *_data_files(modules)]},
        "distributions": {name: importlib.metadata.version(name) for name in DISTRIBUTIONS},
    }


def write(document: dict[str, Any]) -> None:
    """Write the table whole or not at all: into a new file beside it, renamed over it."""
    partial = TABLE_FILE.with_name(f".{TABLE_FILE.name}.{os.getpid()}.partial")
    try:
        partial.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n")
        partial.replace(TABLE_FILE)
    finally:
        partial.unlink(missing_ok=True)


def current_table() -> dict[str, Any] | None:
    """The table when it was written from the files this process runs and the measurements in effect
    are the repository's, else None (the preview then follows the settings live).

    The tracer builds Args from its configs with the measurements `load()` reads: a file `render
    --measurements` names may record a start-up report of a traced config, and the schedule's lead,
    the alert durations and the scale-down window then follow every engine setting
    (stacks/capacity/time_to_serve.py `planning_seconds`). The table holds the answers from the
    repository's file, which its fingerprint covers."""
    if not is_the_repositorys(measurements.in_effect()):
        return None
    return stored_table()


@functools.cache
def stored_table() -> dict[str, Any] | None:
    """The table on disk when it was written from the files this process runs, else None (missing,
    not a regular file, larger than MAX_TABLE_BYTES, not shaped as `write` writes it, or from other
    files)."""
    try:
        document = input_files.read_json(TABLE_FILE, MAX_TABLE_BYTES)
        if not well_formed(document):
            return None
        stored = document["fingerprint"]
        if fingerprint(name for name in stored["files"] if name.endswith(".py")) != stored:
            return None
    except (OSError, ValueError, importlib.metadata.PackageNotFoundError):
        return None
    return document


def _strings(value: Any, length: int | None = None) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value) and length in (None, len(value))


def _mapping(value: Any, each: Callable[[Any], bool]) -> bool:
    return isinstance(value, dict) and all(each(item) for item in value.values())


def _anchor(value: Any) -> bool:
    """An input's place as encode_anchor writes it: keys, and list items as {"kind", "key"}."""
    return isinstance(value, list) and all(
        isinstance(part, str) or (_mapping(part, lambda text: isinstance(text, str)) and set(part) == {"kind", "key"})
        for part in value
    )


def _fed(value: Any) -> bool:
    """[child type, child name, anchor]."""
    return isinstance(value, list) and len(value) == 3 and _strings(value[:2]) and _anchor(value[2])


def _component(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("children"), list)
        and all(_strings(child, 2) for child in value["children"])
        and _mapping(value.get("inputsFed"), lambda fed: isinstance(fed, list) and all(_fed(item) for item in fed))
    )


def _project_file(relative: str) -> bool:
    """A path under one of PACKAGES, as `fingerprint` writes it (nothing read outside the project)."""
    parts = relative.split("/")
    return parts[0] in PACKAGES and ".." not in parts and "" not in parts


def well_formed(document: Any) -> TypeGuard[dict[str, Any]]:
    """The document has the shapes the readers in setting_sources.py take apart: a table only a hand
    could have made otherwise is not read, rather than failing a preview."""
    if not isinstance(document, dict):
        return False
    stored = document.get("fingerprint")
    return (
        _mapping(document.get("settingsByComponent"), lambda fields: _mapping(fields, _strings))
        and _strings(document.get("compositionSettings"))
        and _mapping(document.get("componentSwitches"), _strings)
        and _mapping(document.get("components"), lambda names: _mapping(names, _component))
        and isinstance(stored, dict)
        and _mapping(stored.get("files"), lambda digest: isinstance(digest, str))
        and all(_project_file(relative) for relative in stored["files"])
    )
