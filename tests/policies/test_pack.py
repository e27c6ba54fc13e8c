"""The policy pack as `pulumi preview --policy-pack` and `pulumi policy publish` run it: from its own
folder, under any folder name, with only its requirements installed."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path
from typing import Any

import yaml

from policies.pack import PACK_NAME, POLICIES
from tests.rendered import ROOT

PACK = ROOT / "policies"
# What pulumi.policy does with the pack folder (pulumi/policy/__main__.py: runpy.run_path), with
# PolicyPack recording its arguments instead of serving them.
DRIVER = """
import json, runpy, sys
import pulumi_policy
baseline = {name.split(".")[0] for name in sys.modules}
recorded = {}
class RecordingPack:
    def __init__(self, name, policies, **options):
        recorded.update(name=name, policies=[policy.name for policy in policies])
pulumi_policy.PolicyPack = RecordingPack
runpy.run_path(sys.argv[1], run_name="__main__")
loaded = {name.split(".")[0] for name in sys.modules} - baseline - set(sys.stdlib_module_names)
files = [module.__file__ for name, module in list(sys.modules.items())
         if name.split(".")[0] == "policies" and getattr(module, "__file__", None)]
print(json.dumps({**recorded, "loaded": sorted(loaded), "files": files, "path": sys.path}))
"""


def run_pack_as_published(tmp_path: Path) -> dict[str, Any]:
    """The pack copied into a folder named like a published one, run by a Python that has the
    installed packages but not this repository (no site: its editable install is not on the path)."""
    published = tmp_path / "package"
    shutil.copytree(PACK, published, ignore=shutil.ignore_patterns("__pycache__", "venv"))
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    completed = subprocess.run(
        [sys.executable, "-S", str(driver), str(published)],
        cwd=published,
        env={"PYTHONPATH": sysconfig.get_paths()["purelib"], "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    result: dict[str, Any] = json.loads(completed.stdout.splitlines()[-1])
    result["published"] = str(published)
    return result


def test_the_pack_runs_from_its_own_folder_under_any_name(tmp_path: Path) -> None:
    result = run_pack_as_published(tmp_path)
    assert result["name"] == PACK_NAME
    assert result["policies"] == [policy.name for policy in POLICIES]
    assert result["files"] and all(file.startswith(result["published"]) for file in result["files"])
    assert str(ROOT) not in result["path"], "the pack must not put the repository on sys.path"
    # Nothing beyond its requirements (pulumi-policy and what it imports) and the pack itself.
    assert result["loaded"] == ["policies"]


def test_the_entry_point_edits_no_path() -> None:
    tree = ast.parse((PACK / "__main__.py").read_text())
    touched = [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr == "path"
        and isinstance(node.value, ast.Name)
        and node.value.id == "sys"
    ]
    assert touched == []


def test_the_pack_project_file_is_publishable() -> None:
    project = yaml.safe_load((PACK / "PulumiPolicy.yaml").read_text())
    assert project["runtime"]["name"] == "python"
    assert project["runtime"]["options"]["virtualenv"] == "venv"
    assert str(project["version"]) == tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    # The virtualenv is never uploaded (archive.go honours .gitignore files).
    assert "venv/" in (PACK / ".gitignore").read_text().splitlines()
