"""The output-folder contract (commands/io/output.py): nothing written through a link, nothing
deleted or overwritten that the commands did not write, no protected folder, no token; each refusal
is exit 2 and one line, with nothing touched."""

from __future__ import annotations

import base64
import fcntl
import json
import os
import resource
import signal
import subprocess
import sys
import threading
import urllib.parse
from collections.abc import Callable
from pathlib import Path

import pytest

from commands.io import output
from commands.preview.command import main as preview_main
from tests.rendered import ROOT, run_main, run_render

FILES = {"resources.json": "[]\n", "manifests/a.yaml": "a: 1\n", "plan.md": "# plan\n"}


def snapshot(root: Path) -> dict[str, str]:
    """Every entry under `root`: a file's content, a link's target, a directory's kind."""
    found = {}
    for path in sorted(root.rglob("*")):
        name = str(path.relative_to(root))
        if path.is_symlink():
            found[name] = "-> " + os.readlink(path)
        elif path.is_file():
            found[name] = path.read_text()
        else:
            found[name] = "dir"
    return found


def refused(directory: Path, files: dict[str, str] | None = None, replace: bool = True) -> str:
    with pytest.raises(output.OutputError) as error:
        if replace:
            output.write_render(directory, files or FILES)
        else:
            output.add_files(directory, files or FILES)
    message = str(error.value)
    assert "\n" not in message
    return message


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    path = tmp_path / "victim.txt"
    path.write_text("the user's own file")
    return path


def test_a_new_folder_is_written_with_a_manifest_of_digests(tmp_path: Path) -> None:
    out = tmp_path / "a" / "b" / "render"
    output.write_render(out, FILES)
    manifest = json.loads((out / output.MARKER).read_text())
    assert sorted(manifest["files"]) == sorted(FILES)
    assert manifest["files"]["plan.md"] == output.digest(b"# plan\n")
    assert snapshot(out) == {".render-files.json": (out / output.MARKER).read_text(), **FILES, "manifests": "dir"}


def test_a_previous_output_is_replaced_stale_files_and_empty_folders_go(tmp_path: Path) -> None:
    output.write_render(tmp_path, FILES)
    output.write_render(tmp_path, {"resources.json": "[1]\n", "changes.md": "x\n"})
    assert (tmp_path / "resources.json").read_text() == "[1]\n"
    assert not (tmp_path / "plan.md").exists() and not (tmp_path / "manifests").exists()
    assert sorted(json.loads((tmp_path / output.MARKER).read_text())["files"]) == ["changes.md", "resources.json"]


@pytest.mark.parametrize("exists", [True, False], ids=["existing", "new"])
def test_a_write_reads_the_folder_again_after_another_writer_wrote_it(tmp_path: Path, exists: bool) -> None:
    """Two renders of different stacks into one folder: the one that read the folder first and writes
    last replaces what the other wrote, which left no file behind that no render wrote."""
    out = tmp_path / "out"
    if exists:
        output.write_render(out, FILES)
    with output.opened(out) as slower:
        output.write_render(out, {"resources.json": "[2]\n", "manifests/other-stack.yaml": "b: 2\n"})
        slower.write({"resources.json": "[1]\n", "plan.md": "# one\n"}, replace=True)
    assert snapshot(out) == {
        ".render-files.json": (out / output.MARKER).read_text(),
        "plan.md": "# one\n",
        "resources.json": "[1]\n",
    }
    output.check_out_dir(out)


def test_a_write_waits_for_the_writer_holding_the_folder(tmp_path: Path) -> None:
    output.write_render(tmp_path, FILES)
    holder = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(holder, fcntl.LOCK_EX)
    writer = threading.Thread(target=output.write_render, args=(tmp_path, {"plan.md": "# later\n"}))
    try:
        writer.start()
        writer.join(timeout=0.5)
        assert writer.is_alive() and (tmp_path / "plan.md").read_text() == "# plan\n", "it waits for the lock"
    finally:
        os.close(holder)
    writer.join(timeout=60)
    assert (tmp_path / "plan.md").read_text() == "# later\n"


def test_a_full_file_system_is_refused_before_anything_is_touched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk stopped a render half-way (OSError ENOSPC, exit 1), the folder holding part of the new
    render; the room the write needs at its fullest is checked first. Replacing a file by one of the
    same size needs one file's room, not the whole render's."""
    output.write_render(tmp_path, FILES)
    before = snapshot(tmp_path)
    block = 4096

    def free(blocks: int) -> Callable[[int], os.statvfs_result]:
        return lambda _descriptor: os.statvfs_result((block, block, 1000, blocks, blocks, 100, 100, 100, 0, 255))

    bigger = {**FILES, "resources.json": "x" * (20 * block)}
    monkeypatch.setattr(os, "fstatvfs", free(10))
    with pytest.raises(output.OutputError, match=r"file system has 40,960 free; nothing was written"):
        output.write_render(tmp_path, bigger)
    assert snapshot(tmp_path) == before
    monkeypatch.setattr(os, "fstatvfs", free(3))  # the manifest and one file at a time
    output.write_render(tmp_path, {**FILES, "plan.md": "# plan, again\n"})
    assert (tmp_path / "plan.md").read_text() == "# plan, again\n"


def test_a_stale_file_whose_folder_the_user_removed_is_simply_gone(tmp_path: Path) -> None:
    output.write_render(tmp_path, FILES)
    (tmp_path / "manifests" / "a.yaml").unlink()
    (tmp_path / "manifests").rmdir()
    output.write_render(tmp_path, {"resources.json": "[1]\n"})
    assert snapshot(tmp_path) == {
        ".render-files.json": (tmp_path / output.MARKER).read_text(),
        "resources.json": "[1]\n",
    }


def test_adding_files_keeps_the_rest_of_the_output(tmp_path: Path) -> None:
    output.write_render(tmp_path, FILES)
    output.add_files(tmp_path, {"changes.md": "c\n"})
    output.add_files(tmp_path, {"changes.md": "d\n"})
    assert (tmp_path / "plan.md").read_text() == "# plan\n" and (tmp_path / "changes.md").read_text() == "d\n"
    assert sorted(json.loads((tmp_path / output.MARKER).read_text())["files"]) == sorted([*FILES, "changes.md"])


def test_a_non_empty_folder_that_is_no_output_is_refused_through_the_command(tmp_path: Path) -> None:
    precious = tmp_path / "notes.txt"
    precious.write_text("keep me")
    outcome = run_render("dev", "--out", str(tmp_path))
    assert outcome.returncode == 2 and outcome.stderr.count("\n") == 1
    assert "not empty and not an output folder" in outcome.stderr
    assert snapshot(tmp_path) == {"notes.txt": "keep me"}


def test_a_folder_inside_an_output_folder_is_refused_before_it_is_made(tmp_path: Path) -> None:
    """An attacker: a render into a new folder inside an earlier render's output made that output unusable (its
    next render refused the files it did not write)."""
    output.write_render(tmp_path / "out", FILES)
    before = snapshot(tmp_path / "out")
    outcome = run_render("dev", "--out", str(tmp_path / "out" / "manifests" / "new"))
    assert outcome.returncode == 2 and outcome.stderr.count("\n") == 1
    assert f"inside {tmp_path / 'out'}, the output folder of an earlier render" in outcome.stderr
    assert snapshot(tmp_path / "out") == before
    # a path that only passes through it is judged by where it leads (a review: `out/manifests/../../other` was
    # refused as inside `out`)
    beside = run_render("dev", "--out", str(tmp_path / "out" / "manifests" / ".." / ".." / "other"))
    assert beside.returncode == 0, beside.stderr
    assert (tmp_path / "other" / "plan.md").is_file()


def test_a_system_folder_is_named_as_no_output_folder_before_its_links(tmp_path: Path, victim: Path) -> None:
    # as `--out /etc`: its first entry a link (localtime), a device file or a folder of its own
    system = tmp_path / "etc"
    system.mkdir()
    (system / "localtime").symlink_to(victim)
    (system / "hosts").write_text("127.0.0.1 localhost\n")
    before = snapshot(tmp_path)
    assert "not empty and not an output folder" in refused(system)
    assert snapshot(tmp_path) == before


def test_an_output_folder_of_another_user_is_refused_untouched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another user's folder with a forged manifest took the write (an attacker): its owner could swap the
    manifests after. Seen as another user by the process, the folder and what it holds are someone else's."""
    out = tmp_path / "shared"
    output.write_render(out, FILES)
    before = snapshot(tmp_path)
    monkeypatch.setattr(os, "geteuid", lambda: os.getuid() + 1)
    assert f"{out}: owned by another user (uid {os.getuid()})" in refused(out)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "owned by another user" in refused(empty)
    assert snapshot(tmp_path) == {**before, "empty": "dir"}


def test_a_file_or_folder_the_file_system_protects_is_refused_before_anything_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An attacker: an immutable plan.md (chattr +i) stopped a render half-way with exit 1, and an append-only
    folder (chattr +a) left the new measurements file beside the old. The flags are read before the write (here
    as the file system would answer; chattr itself needs root)."""
    output.write_render(tmp_path / "out", FILES)
    measurements = tmp_path / "measurements.yaml"
    measurements.write_text("measurements: []\n")
    before = snapshot(tmp_path)
    for flagged, flag, kind in (
        ("plan.md", 0x10, "immutable"),
        (".", 0x20, "append-only"),
        (output.MARKER, 0x10, "immutable"),
    ):
        monkeypatch.setattr(output, "_inode_flags", lambda _, name, f=flagged, v=flag: v if name == f else 0)
        assert f"{kind} (chattr" in refused(tmp_path / "out", {**FILES, "plan.md": "# new plan\n"})
    with pytest.raises(output.OutputError, match=r"measurements.yaml: immutable \(chattr \+i\)"):
        monkeypatch.setattr(output, "_inode_flags", lambda _, name: 0x10 if name == "measurements.yaml" else 0)
        output.replace_file(measurements, "measurements: [] # new\n")
    assert snapshot(tmp_path) == before


def test_an_interrupt_during_a_replace_waits_for_the_rename(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An attacker: Ctrl-C while bench-compare --record replaced the measurements file exited at once (the console
    script's handler, os._exit) and left the new file, .tmp-..., beside the old for good. The interrupt is held
    back until the rename is done."""
    file = tmp_path / "measurements.yaml"
    file.write_text("old\n")
    seen: list[str] = []
    replace = output._replace

    def interrupted_replace(*args: object) -> None:
        os.kill(os.getpid(), signal.SIGINT)
        replace(*args)  # type: ignore[arg-type]
        seen.append("renamed")

    monkeypatch.setattr(output, "_replace", interrupted_replace)
    previous = signal.signal(signal.SIGINT, lambda *_: seen.append("interrupt: " + file.read_text().strip()))
    try:
        output.replace_file(file, "new\n")
    finally:
        signal.signal(signal.SIGINT, previous)
    assert seen == ["renamed", "interrupt: new"]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["measurements.yaml"]


def test_a_file_the_commands_did_not_write_is_refused_even_in_an_output_folder(tmp_path: Path) -> None:
    output.write_render(tmp_path, FILES)
    (tmp_path / "manifests" / "mine.yaml").write_text("mine")
    before = snapshot(tmp_path)
    assert "manifests/mine.yaml" in refused(tmp_path)
    assert snapshot(tmp_path) == before


def test_a_file_changed_since_it_was_written_is_neither_deleted_nor_overwritten(tmp_path: Path) -> None:
    output.write_render(tmp_path, FILES)
    (tmp_path / "plan.md").write_text("# plan, with my notes\n")
    before = snapshot(tmp_path)
    assert "changed since it was written" in refused(tmp_path, {"resources.json": "[]\n"})
    assert "changed since it was written" in refused(tmp_path, {"plan.md": "new\n"}, replace=False)
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(
    "forge",
    [
        lambda names: names,  # the format of earlier versions: a list of names, nothing to verify
        lambda names: {"files": {name: "sha256:" + "0" * 64 for name in names}},
        lambda names: {"files": {"../victim.txt": "sha256:" + "0" * 64}},
        lambda names: {"files": {"/etc/passwd": "sha256:" + "0" * 64}},
        lambda names: {"files": {name: "not a digest" for name in names}},
        lambda names: {"files": []},
        lambda names: "[" * 100_000,
    ],
    ids=["old-format", "wrong-digests", "dotdot", "absolute", "bad-digest", "not-an-object", "deep"],
)
def test_a_forged_manifest_deletes_and_overwrites_nothing(
    tmp_path: Path, victim: Path, forge: Callable[[list[str]], object]
) -> None:
    out = tmp_path / "render"
    out.mkdir()
    (out / "plan.md").write_text("the user's plan")
    (out / "resources.json").write_text("the user's resources")
    forged = forge(["plan.md", "resources.json"])
    (out / output.MARKER).write_text(forged if isinstance(forged, str) else json.dumps(forged))
    before = snapshot(tmp_path)
    refused(out)
    assert snapshot(tmp_path) == before


def test_an_empty_manifest_plus_a_planted_link_writes_nothing_through_it(tmp_path: Path, victim: Path) -> None:
    """The attack of the issue: a manifest listing nothing and `plan.md -> victim`."""
    out = tmp_path / "render"
    out.mkdir()
    (out / output.MARKER).write_text(json.dumps({"files": {}}))
    (out / "plan.md").symlink_to(victim)
    before = snapshot(tmp_path)
    assert "symbolic link" in refused(out)
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("where", ["plan.md", "manifests", "manifests/a.yaml", ".render-files.json"])
def test_a_link_planted_in_a_previous_output_is_refused_before_anything_is_touched(
    tmp_path: Path, victim: Path, where: str
) -> None:
    out = tmp_path / "render"
    output.write_render(out, FILES)
    planted = out / where
    if planted.is_dir():
        for child in planted.iterdir():
            child.unlink()
        planted.rmdir()
        planted.symlink_to(tmp_path, target_is_directory=True)
    else:
        planted.unlink()
        planted.symlink_to(victim)
    before = snapshot(tmp_path)
    assert "symbolic link" in refused(out)
    assert snapshot(tmp_path) == before


def test_a_link_anywhere_on_the_path_is_refused(tmp_path: Path, victim: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    for out in (tmp_path / "link", tmp_path / "link" / "dev", tmp_path / "link" / "new" / "dev"):
        assert "symbolic link" in refused(out)
    assert list(real.iterdir()) == []


def test_a_hard_link_to_another_file_is_replaced_not_written_through(tmp_path: Path, victim: Path) -> None:
    out = tmp_path / "render"
    output.write_render(out, FILES)
    victim.write_text("# plan\n")  # the same content, so the manifest's digest matches
    (out / "plan.md").unlink()
    os.link(victim, out / "plan.md")
    output.write_render(out, {**FILES, "plan.md": "# a new plan\n"})
    assert (out / "plan.md").read_text() == "# a new plan\n"
    assert victim.read_text() == "# plan\n"


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_a_special_file_where_an_output_file_goes_is_refused_without_blocking(tmp_path: Path, kind: str) -> None:
    out = tmp_path / "render"
    output.write_render(out, FILES)
    (out / "plan.md").unlink()
    if kind == "fifo":
        os.mkfifo(out / "plan.md")
    else:
        (out / "plan.md").mkdir()
    before = snapshot(out)
    refused(out)
    assert snapshot(out) == before


def test_protected_folders_are_refused(tmp_path: Path) -> None:
    assert "root directory" in refused(Path("/"))
    assert "is the repository" in refused(ROOT)
    assert "holds the repository" in refused(ROOT.parent)
    assert "is the repository" in refused(ROOT / "stacks" / "..")
    assert "holds the repository" in refused(ROOT / "stacks" / ".." / "..")
    assert "home directory" in refused(Path.home())


@pytest.mark.parametrize("inside", [".git/refs/tags", ".git/objects/zz", ".hg/store"])
def test_a_folder_inside_a_version_control_systems_own_is_refused(inside: str, tmp_path: Path) -> None:
    """`render dev --out .git/refs/tags` wrote its files there (an empty folder passed): git then read
    capacity.json as a broken tag."""
    (tmp_path / inside).mkdir(parents=True)
    before = snapshot(tmp_path)
    assert "a version control system's own folder" in refused(tmp_path / inside)
    assert "a version control system's own folder" in refused(tmp_path / inside / "new")
    assert snapshot(tmp_path) == before


def test_a_folder_inside_a_bare_git_repository_is_refused(tmp_path: Path) -> None:
    """A bare repository (or a --separate-git-dir) has no `.git` in its path: its HEAD, objects/ and refs/ say it."""
    bare = tmp_path / "serving.git"
    (bare / "objects").mkdir(parents=True)
    (bare / "refs" / "heads").mkdir(parents=True)
    (bare / "HEAD").write_text("ref: refs/heads/main\n")
    assert "a version control system's own folder" in refused(bare / "refs" / "heads" / "dev")


def test_a_file_as_the_folder_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "file"
    target.write_text("x")
    assert "not a directory" in refused(target)
    assert "not a directory" in refused(target / "below")


def test_names_outside_the_folder_are_refused(tmp_path: Path) -> None:
    for name in ("../x", "/etc/x", "a/../b", ".hidden", "a//b", "x\n"):
        assert "refusing to write" in refused(tmp_path / "out", {name: "x"})
    assert not (tmp_path / "out").exists()


def test_a_token_is_never_written(tmp_path: Path) -> None:
    with pytest.raises(output.SecretInOutputError):
        output.write_render(tmp_path / "out", {"plan.md": "token hf_AbCdEfGh1234567890xyz\n"})
    assert not (tmp_path / "out").exists()


def test_a_token_in_the_folder_path_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "hf_PastedByMistake0123456789abcdef" / "dev"
    assert "Hugging Face token" in refused(out)
    assert list(tmp_path.iterdir()) == []


def test_files_with_a_token_are_found_before_writing() -> None:
    files = {
        "ok.yaml": "hf_transfer: on\n",
        "bad.yaml": "value: hf_AbCdEfGh1234567890xyz\n",
        "own.json": "Bearer s3cr3t",
    }
    assert output.token_leaks(files) == ["bad.yaml"]
    assert output.token_leaks(files, ["s3cr3t"]) == ["bad.yaml", "own.json"]


def test_a_known_secret_is_found_as_written_and_json_escaped() -> None:
    """As the Pulumi CLI's filter: a value and its JSON form; not one of under three characters, nor a boolean."""
    files = {"a.json": json.dumps({"x": 'pa"ss\\word'}), "b.yaml": "ok: true\nzone: b\n"}
    assert output.token_leaks(files, ['pa"ss\\word']) == ["a.json"]
    assert output.token_leaks(files, ["b", "ok", "true", ""]) == []


KNOWN = "Zebra-Horse/Battery+77"


@pytest.mark.parametrize(
    "text",
    [
        base64.b64encode(f"KEY={KNOWN}".encode()).decode(),
        base64.urlsafe_b64encode(f"A{KNOWN}\n".encode()).decode(),
        base64.b64encode(base64.b64encode(f"note: {KNOWN}".encode())).decode(),
        base64.b32encode(f"xy{KNOWN}".encode()).decode(),
        base64.b32encode(f"xyz{KNOWN}".encode()).decode().lower(),
        f"pre{KNOWN}".encode().hex(),
        f"{KNOWN}!".encode().hex().upper(),
        base64.b64encode(f"$env:X='{KNOWN}'".encode("utf-16-le")).decode(),
        urllib.parse.quote(f"u={KNOWN}", safe=""),
        urllib.parse.quote(urllib.parse.quote(KNOWN, safe=""), safe=""),
        KNOWN.replace("/", "\\u002f"),
        KNOWN.replace("/", "&#47;").replace("+", "&plus;"),
    ],
    ids=[
        "base64",
        "base64url",
        "base64-twice",
        "base32",
        "base32-lower",
        "hex",
        "hex-upper",
        "utf16-base64",
        "url",
        "url-twice",
        "json-u-escape",
        "html-entities",
    ],
)
def test_a_known_secret_is_found_encoded_as_a_reader_decodes_it(text: str) -> None:
    """What a pod or program decodes back to the value (an encoding anywhere in what is encoded whole, an escape
    of any character) holds the secret as much as the value written plainly does."""
    assert output.token_leaks({"f.yaml": f"value: {text}\n"}, [KNOWN]) == ["f.yaml"]
    assert output.token_leaks({"f.yaml": f"value: {text}\n"}, ["Zebra-Hoarse/Battery+77"]) == []


@pytest.mark.parametrize("pad", range(0, 60, 7))
def test_a_known_secret_in_a_wrapped_encoding_is_found(pad: int) -> None:
    """A review: base64's 76 columns folded into spaces by a YAML scalar hid the encoding where a break cut it."""
    blob = base64.b64encode(f"KEY={'x' * pad}\nVAL={KNOWN}\n".encode()).decode()
    wrapped = " ".join(blob[start : start + 76] for start in range(0, len(blob), 76))
    assert output.token_leaks({"f": f"MY_BLOB: {wrapped}\n"}, [KNOWN]) == ["f"]


def test_a_known_secret_with_blanks_around_it_is_found_without_them() -> None:
    """An attacker: an ESC `fn::secret: |` block keeps the value's last line break, and the value pasted inside a
    setting without it passed."""
    assert output.token_leaks({"f": f"x-{KNOWN}-y"}, [f"{KNOWN}\n"]) == ["f"]
    assert output.token_leaks({"f": f"x-{KNOWN}-y"}, [f"  {KNOWN} "]) == ["f"]


def test_a_short_known_secret_is_looked_for_as_written_only() -> None:
    """A value under KNOWN_ENCODED_MIN characters decides too few characters of an encoding to tell it from others."""
    short = "Fox-77"
    assert output.token_leaks({"f": base64.b64encode(short.encode()).decode()}, [short]) == []
    assert output.token_leaks({"f": f"x {short}"}, [short]) == ["f"]


# ---------------------------------------------------------------- preview under the same contract


def a_render(directory: Path, records: list[dict[str, object]] | None = None) -> Path:
    output.write_render(directory, {"resources.json": json.dumps(records or [])})
    return directory


@pytest.mark.parametrize("out", ["/", "ROOT"])
def test_preview_never_writes_to_a_protected_folder(tmp_path: Path, out: str) -> None:
    old, new = a_render(tmp_path / "old"), a_render(tmp_path / "new")
    target = str(ROOT) if out == "ROOT" else out
    outcome = run_main(preview_main, str(old), str(new), "--out", target)
    assert outcome.returncode == 2 and outcome.stderr.count("\n") == 1
    assert not Path(target, "changes.md").exists()


def test_preview_does_not_follow_or_overwrite_a_users_changes_md(tmp_path: Path, victim: Path) -> None:
    old, new = a_render(tmp_path / "old"), a_render(tmp_path / "new")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "changes.md").write_text("my own notes")
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / output.MARKER).write_text(json.dumps({"files": {}}))
    (linked / "changes.md").symlink_to(victim)
    before = snapshot(tmp_path)
    for out in (mine, linked):
        outcome = run_main(preview_main, str(old), str(new), "--out", str(out))
        assert outcome.returncode == 2 and outcome.stderr.count("\n") == 1, outcome.stderr
    assert snapshot(tmp_path) == before


def test_preview_into_a_render_adds_its_files_to_the_manifest(tmp_path: Path) -> None:
    old, new = a_render(tmp_path / "old"), a_render(tmp_path / "new")
    assert run_main(preview_main, str(old), str(new)).returncode == 0
    listed = json.loads((new / output.MARKER).read_text())["files"]
    assert sorted(listed) == ["changes.json", "changes.md", "resources.json"]


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="a /proc file system")
def test_a_file_system_that_takes_no_folder_is_one_line() -> None:
    """`--out /proc/x` ended the render with FileNotFoundError, exit status 1."""
    with pytest.raises(
        output.OutputError, match=r"/proc/llm-out: cannot make the folder 'llm-out' .*allowed: a folder"
    ):
        output.write_render(Path("/proc/llm-out"), {"plan.md": "x\n"})


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o664])
def test_a_replaced_file_keeps_its_permissions(tmp_path: Path, mode: int) -> None:
    """bench-compare --record replaced a 0600 measurements file with one every user could read."""
    file = tmp_path / "measurements.yaml"
    file.write_text("measurements: []\n")
    file.chmod(mode)
    output.replace_file(file, "measurements: [] # again\n")
    assert file.stat().st_mode & 0o777 == mode and file.read_text() == "measurements: [] # again\n"


def _statvfs(favail: int) -> os.statvfs_result:
    # plenty of bytes, `favail` inodes left
    return os.statvfs_result((4096, 4096, 10**9, 10**9, 10**9, 10**6, favail, favail, 0, 255))


def test_a_file_system_without_inodes_for_the_write_is_refused_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tmpfs out of inodes stopped a render half-way (errno 28, exit 1): the room check counted bytes only."""
    files = {f"manifests/{index}.yaml": "x\n" for index in range(10)}
    monkeypatch.setattr(os, "fstatvfs", lambda _: _statvfs(5))
    with pytest.raises(output.OutputError, match=r"about 1[0-9] new files and folders .* room for 5 more \(inodes\)"):
        output.write_render(tmp_path / "out", files)
    assert not (tmp_path / "out").exists()
    monkeypatch.setattr(os, "fstatvfs", lambda _: _statvfs(100))
    output.write_render(tmp_path / "out", files)
    assert len(list((tmp_path / "out" / "manifests").iterdir())) == 10


def test_a_file_over_the_processs_size_limit_is_refused_before_the_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`ulimit -f` stopped a render half-way (errno 27, exit 1)."""
    monkeypatch.setattr(resource, "getrlimit", lambda _: (1000, resource.RLIM_INFINITY))
    with pytest.raises(output.OutputError, match=r"2,000 bytes and this process may write files of at most 1,000"):
        output.write_render(tmp_path / "out", {"plan.md": "x" * 2000, "a.json": "{}"})
    assert not (tmp_path / "out").exists()


def test_a_replaced_file_needs_room_beside_the_old_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """bench-compare --record on a full disk ended with errno 28, exit 1."""
    file = tmp_path / "measurements.yaml"
    file.write_text("measurements: []\n")
    full = os.statvfs_result((4096, 4096, 10**6, 0, 0, 10**6, 10**5, 10**5, 0, 255))
    monkeypatch.setattr(os, "fstatvfs", lambda _: full)
    with pytest.raises(output.OutputError, match=r"beside the old one and its file system has 0 free"):
        output.replace_file(file, "measurements: [] # more\n")
    assert file.read_text() == "measurements: []\n"


def test_a_folder_of_many_subfolders_is_walked_one_descriptor_at_a_time(tmp_path: Path) -> None:
    """1,000 empty subfolders ran out of descriptors under `ulimit -n 1024` (an attacker): each waited open."""
    out = tmp_path / "out"
    output.write_render(out, FILES)
    for index in range(300):
        (out / "manifests" / f"d{index}").mkdir()
    script = (
        "import resource, sys; resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64)); "
        "from commands.io import output; from pathlib import Path\n"
        "try:\n    output.check_out_dir(Path(sys.argv[1]))\nexcept output.OutputError as error:\n    print(error)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", script, str(out)], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert (run.returncode, run.stdout, run.stderr) == (0, "", "")  # empty folders are the output's to remove


def test_a_folder_chain_deeper_than_a_render_writes_is_refused(tmp_path: Path) -> None:
    """Each folder is opened from the top: a chain 5,000 deep took 25 s to check (a diff review)."""
    out = tmp_path / "out"
    output.write_render(out, FILES)
    deep = out / "manifests"
    for index in range(output.MAX_DEPTH + 2):
        deep = deep / f"d{index}"
    deep.mkdir(parents=True)
    assert f"holds folders more than {output.MAX_DEPTH} deep; not an output folder" in refused(out)
