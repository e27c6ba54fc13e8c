"""Render every stack file and test variant into one folder, to compare two commits byte for byte.

`make snapshot OUT=DIR` (or `.venv/bin/python -m tests.snapshot DIR`) runs the `render` console script,
as a user would, for: each `Pulumi.*.yaml` plain and `--converged`, each variant of `tests/variants.py`
(written as a stack file first), and one preview of a variant `--against` the converged render of its
stack. Each render's exit status, stdout and stderr are kept beside its folder. What names the folder
itself (the output paths in the console lines) is written as OUT, and the output manifest's `writtenBy`
as X (it names the module that writes it, which a move changes), so that `diff -r` of the snapshots of
two commits shows only what the change changed. DIR must not exist, or be an earlier snapshot.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import yaml

from tests.rendered import ROOT, STACK_FILES
from tests.variants import PROJECT, VARIANTS

RENDER = ROOT / ".venv" / "bin" / "render"
MARKER = ".snapshot"
MANIFEST = ".render-files.json"
WRITTEN_BY = re.compile(r'"writtenBy": "[^"]*"')
# The preview of the snapshot: an engine flag changed, against the converged render of its stack.
PREVIEW = ("dev-engine", "dev")


@dataclass(frozen=True)
class Render:
    name: str
    """The folder (and the stdout/stderr/status files) the render writes under the snapshot."""
    stack: str
    stack_file: Path
    options: tuple[str, ...] = ()


def variant_files(directory: Path) -> dict[str, Path]:
    """Each variant of tests/variants.py as a stack file: its base stack file with the variant's settings."""
    directory.mkdir(parents=True, exist_ok=True)
    files = {}
    for name, (base, settings) in sorted(VARIANTS.items()):
        document = yaml.safe_load((ROOT / f"Pulumi.{base}.yaml").read_text())
        document["config"].update({f"{PROJECT}:{key}": value for key, value in settings.items()})
        files[name] = directory / f"Pulumi.{name}.yaml"
        files[name].write_text(yaml.safe_dump(document))
    return files


def renders(out: Path, variants: dict[str, Path]) -> tuple[list[Render], Render]:
    """What the snapshot renders: the independent renders, then the preview (it reads one of them)."""
    independent = [Render(stack, stack, ROOT / f"Pulumi.{stack}.yaml") for stack in STACK_FILES]
    independent += [
        Render(f"{render.name}--converged", render.stack, render.stack_file, ("--converged",)) for render in independent
    ]
    independent += [Render(name, name, path) for name, path in variants.items()]
    variant, base = PREVIEW
    preview = Render(
        f"{variant}--against-{base}", variant, variants[variant], ("--against", str(out / f"{base}--converged"))
    )
    return independent, preview


def normalized(text: str, out: Path) -> str:
    return WRITTEN_BY.sub('"writtenBy": X', text.replace(str(out), "OUT"))


def run(render: Render, out: Path) -> None:
    folder = out / render.name
    command = [
        str(RENDER),
        render.stack,
        "--config-file",
        str(render.stack_file),
        "--out",
        str(folder),
        *render.options,
    ]
    completed = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    for suffix, text in ((".stdout", completed.stdout), (".stderr", completed.stderr)):
        (out / f"{render.name}{suffix}").write_text(normalized(text, out))
    (out / f"{render.name}.status").write_text(f"{completed.returncode}\n")
    manifest = folder / MANIFEST
    if manifest.is_file():
        manifest.write_text(normalized(manifest.read_text(), out))


def snapshot(out: Path, workers: int = 2) -> None:
    if out.exists():
        if not (out / MARKER).is_file():
            raise SystemExit(f"snapshot: {out} exists and is not a snapshot; give a new folder")
        shutil.rmtree(out)
    out.mkdir(parents=True)
    (out / MARKER).write_text(json.dumps({"writtenBy": "tests/snapshot.py"}) + "\n")
    independent, preview = renders(out, variant_files(out / "stack-files"))
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(lambda render: run(render, out), independent))
    run(preview, out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.snapshot", description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="the snapshot's folder (new, or an earlier snapshot to replace)")
    parser.add_argument("--workers", type=int, default=2, help="renders at once (default 2)")
    args = parser.parse_args(argv)
    snapshot(args.out.resolve(), args.workers)
    print(f"snapshot of {len(STACK_FILES)} stack files and {len(VARIANTS)} variants in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
