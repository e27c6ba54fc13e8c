"""Wheel build hook: the built wheel ships the project under one import name of its own.

The repository keeps its layout (`commands`, `common`, `components`, `policies`, `schemas`, `stacks`
at the top, imported by those names). Installed as they are, those generic names would shadow or be
shadowed by a consumer's own `components/` package. So the standard wheel holds them as
`gke_b200_serving.<package>`, each Python file with the project's absolute imports of its own
packages rewritten to that prefix, and its console commands prefixed `gke-b200-`. Only the built
files change; the editable install of the repository's own environment (`make setup`) keeps the
layout and the short command names.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

IMPORT_NAME = "gke_b200_serving"
PACKAGES = ("commands", "common", "components", "policies", "schemas", "stacks")
SCRIPT_PREFIX = "gke-b200-"
PROGRAM_FILES = ("__main__.py", "Pulumi.yaml")
# The pages plan.md, changes.md and the commands' messages point to (docs/time-to-serve.md, ...), beside
# the program as in the repository, so that an installed package's user can open what its output cites.
DOCS = "docs"
# `from stacks.config import x`, `from stacks import x`, `import stacks.config as c`, at any indent
# (imports inside functions and TYPE_CHECKING blocks too).
_IMPORT = re.compile(
    rf"^(?P<indent>[ \t]*)(?P<verb>from|import)(?P<space>[ \t]+)(?P<package>{'|'.join(PACKAGES)})(?=[ \t.])", re.M
)
# `import stacks.config` without `as` binds the name `stacks`, which a prefix cannot keep.
_BARE_IMPORT = re.compile(rf"^[ \t]*import[ \t]+(?:{'|'.join(PACKAGES)})(?:\.\w+)*[ \t]*(?:#.*)?$", re.M)


def namespaced(source: str, where: str) -> str:
    """The module's text with the project's absolute imports under IMPORT_NAME."""
    bare = _BARE_IMPORT.search(source)
    if bare:
        raise ValueError(f"{where}: `{bare.group(0).strip()}` cannot be namespaced; use `from ... import` or `as`")
    return _IMPORT.sub(rf"\g<indent>\g<verb>\g<space>{IMPORT_NAME}.\g<package>", source)


class NamespacedWheel(BuildHookInterface):  # type: ignore[type-arg]
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel" or version != "standard":
            return
        root = Path(self.root)
        self._staging = Path(tempfile.mkdtemp(prefix=f"{IMPORT_NAME}-wheel-"))
        top = self._staging / IMPORT_NAME
        top.mkdir()
        (top / "__init__.py").write_text(
            '"""gke-b200-serving: the Pulumi stack for vLLM serving on GKE Autopilot B200, under one import name."""\n'
        )
        for package in PACKAGES:
            for path in sorted((root / package).rglob("*")):
                relative = path.relative_to(root)
                if not path.is_file() or "__pycache__" in relative.parts or path.suffix == ".pyc":
                    continue
                target = top / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                if path.suffix == ".py":
                    target.write_text(namespaced(path.read_text(encoding="utf-8"), str(relative)), encoding="utf-8")
                else:
                    shutil.copyfile(path, target)
        # The commands run the program (`__main__.py`) of the project `Pulumi.yaml` declares, both read
        # beside the packages (commands/stackfile/stack_settings.py ROOT): a render of a stack file
        # needs them in the wheel too.
        for name in PROGRAM_FILES:
            source = (root / name).read_text(encoding="utf-8")
            (top / name).write_text(namespaced(source, name) if name.endswith(".py") else source, encoding="utf-8")
        for page in sorted((root / DOCS).glob("*.md")):
            (top / DOCS).mkdir(exist_ok=True)
            shutil.copyfile(page, top / DOCS / page.name)
        build_data["force_include"][str(top)] = IMPORT_NAME
        # The builder writes entry_points.txt from this mapping after the hook: rename the commands and
        # point them at the namespaced modules.
        scripts = self.metadata.core.scripts
        renamed = {f"{SCRIPT_PREFIX}{name}": f"{IMPORT_NAME}.{target}" for name, target in scripts.items()}
        scripts.clear()
        scripts.update(renamed)

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        staging = getattr(self, "_staging", None)
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
