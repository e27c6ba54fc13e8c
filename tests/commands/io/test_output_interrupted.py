"""An output folder after a write that did not finish: a render killed (SIGKILL) while it wrote its files
leaves a folder the next render recovers; a folder this user cannot write is refused before the program
runs and before anything in it is touched (exit 2, one line)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from commands.check_policies.runner import main as check_policies_main
from commands.io import output
from commands.preview.command import main as preview_main
from tests.commands.io.test_output import FILES, snapshot
from tests.rendered import ROOT, CommandRun, RenderedStack, run_main, run_render

# Writes a render's files as `render` does (commands/io/output.py `write_render`, the call that ends
# commands/render/command.py `render`), killing itself with SIGKILL in the middle of its Nth file write: half
# the file is on disk under its staging name, nothing renamed (the hook point: `_write_new`). Only the write
# runs in the killed process: the folder a killed write leaves is what is under test, and a whole render
# in a new process would cost ~5 s of CPU per case.
KILLED_WRITE = """
import json, os, signal, sys
from pathlib import Path
from commands.io import output
real, calls = output._write_new, [0]
def dying(parent, name, content, mode=None):
    calls[0] += 1
    if calls[0] == int(os.environ["KILL_AT_WRITE"]):
        descriptor = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644, dir_fd=parent)
        os.write(descriptor, content[: len(content) // 2])
        os.kill(os.getpid(), signal.SIGKILL)
    real(parent, name, content, mode)
output._write_new = dying
write = output.add_files if os.environ.get("ADD_FILES") else output.write_render
write(Path(sys.argv[1]), json.loads(Path(sys.argv[2]).read_text()))
"""


def render_files(directory: Path) -> dict[str, str]:
    """What `render` hands to `write_render`: the render's own files (not the folder's hidden record)."""
    return {
        str(path.relative_to(directory)): path.read_text()
        for path in sorted(directory.rglob("*"))
        if path.is_file() and output.is_own_path(str(path.relative_to(directory)))
    }


def killed_write(out: Path, files: dict[str, str], at_write: int, add: bool = False) -> None:
    files_json = out.parent / f"{out.name}-files.json"
    files_json.write_text(json.dumps(files))
    run = subprocess.run(
        [sys.executable, "-c", KILLED_WRITE, str(out), str(files_json)],
        cwd=ROOT,
        env={**os.environ, "KILL_AT_WRITE": str(at_write), **({"ADD_FILES": "1"} if add else {})},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == -signal.SIGKILL, run.stderr
    assert any(output.LEFTOVER.fullmatch(path.name) for path in out.rglob(".tmp-*")), "a staging file is left"


@pytest.fixture(scope="module")
def clean_render(dev: RenderedStack) -> dict[str, str]:
    """The files of a render of dev into a new folder (the session's)."""
    return snapshot(dev.directory)


@pytest.mark.parametrize(
    ("earlier_render", "at_write"),
    [(False, 1), (False, 4), (True, 2), (True, 30)],
    ids=["new-folder-first-manifest", "new-folder-mid-files", "over-a-render-manifest", "over-a-render-mid-files"],
)
def test_a_render_killed_mid_write_is_recovered_by_the_next(
    earlier_render: bool, at_write: int, tmp_path: Path, clean_render: dict[str, str], dev: RenderedStack
) -> None:
    out = tmp_path / "dev"
    files = render_files(dev.directory)
    if earlier_render:
        # an earlier render whose every file differs from this one's: the files the killed write already
        # replaced must be recorded with their new digests, or the next render refuses them as changed
        output.write_render(out, {name: f"{text}# an earlier render\n" for name, text in files.items()})
    killed_write(out, files, at_write)
    # what reads a render refuses the folder (exit 2, one line): some files may be the new render's, some
    # the old one's or missing, and a preview would report changes no render holds
    reads: list[Callable[[], CommandRun]] = [
        lambda: run_main(preview_main, str(out), str(dev.directory), "--out", str(tmp_path / "preview")),
        lambda: run_render("dev", "--against", str(out), "--out", str(tmp_path / "against")),
        lambda: run_main(check_policies_main, str(out / "resources.json")),
    ]
    for read in reads:
        refused = read()
        assert refused.returncode == 2, refused.stderr
        assert refused.stderr.count("\n") == 1, refused.stderr
        assert re.search("stopped before it finished|no resources.json|no such file", refused.stderr), refused.stderr
    again = run_render("dev", "--out", str(out))
    assert again.returncode == 0, again.stderr
    assert snapshot(out) == clean_render, "the same files as a render into a new folder, no staging file left"


def test_a_preview_killed_while_it_adds_its_files_leaves_the_render_readable(
    tmp_path: Path, dev: RenderedStack
) -> None:
    """A preview into a render's folder writes only changes.md and changes.json: killed mid-write, the
    render's own files are whole, and the preview run again reads them and finishes."""
    out = tmp_path / "dev"
    output.write_render(out, render_files(dev.directory))
    killed_write(out, {"changes.md": "# a preview\n", "changes.json": "{}\n"}, at_write=2, add=True)
    again = run_main(preview_main, str(dev.directory), str(out))
    assert again.returncode == 0, again.stderr
    assert (out / "changes.md").read_text().startswith("#") and not list(out.glob(".tmp-*"))


def test_a_file_only_named_like_a_staging_file_but_a_link_is_still_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    output.write_render(out, FILES)
    (out / ".tmp-0123456789abcdef").symlink_to(tmp_path)
    with pytest.raises(output.OutputError, match="symbolic link"):
        output.write_render(out, FILES)


# `render ARGS` where running the program fails: a folder refused before any work never gets that far.
RENDER_WITHOUT_PROGRAM = """
import sys
from commands.engine import mocks
from commands.render.command import main
def not_before_the_folder_is_checked(*args, **kwargs):
    raise SystemExit("the program ran before the output folder was checked")
mocks.run_program = not_before_the_folder_is_checked
sys.exit(main(sys.argv[1:]))
"""


def without_write_permission(command: list[str]) -> list[str]:
    """The command as this user without the capabilities that let root write anywhere."""
    if os.geteuid() != 0:
        return command
    if shutil.which("setpriv") is None:
        pytest.skip("root without setpriv: cannot drop CAP_DAC_OVERRIDE to test permissions")
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--", *command]


@pytest.mark.parametrize("where", ["folder", "subfolder", "parent-of-missing"])
def test_an_unwritable_folder_is_refused_before_anything_is_touched(
    where: str, tmp_path: Path, dev: RenderedStack
) -> None:
    out = tmp_path / "dev"
    shutil.copytree(dev.directory, out)
    locked = {"folder": out, "subfolder": out / "manifests", "parent-of-missing": tmp_path}[where]
    target = out if where != "parent-of-missing" else tmp_path / "new" / "dev"
    before = snapshot(tmp_path)
    locked.chmod(0o555)
    try:
        run = subprocess.run(
            without_write_permission([sys.executable, "-c", RENDER_WITHOUT_PROGRAM, "dev", "--out", str(target)]),
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    finally:
        locked.chmod(0o755)
    assert run.returncode == 2, run.stderr
    assert run.stderr.count("\n") == 1 and "not writable by this user" in run.stderr, run.stderr
    assert str(locked) in run.stderr
    assert snapshot(tmp_path) == before, "nothing touched"
