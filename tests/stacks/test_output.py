"""`--out` never deletes what the render did not write, and nothing with a token is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stacks.offline import output, render

FILES = {"resources.json": "[]\n", "manifests/a.yaml": "a: 1\n", "plan.md": "# plan\n"}


def test_a_non_empty_directory_that_is_no_render_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    precious = tmp_path / "notes.txt"
    precious.write_text("keep me")
    assert render.main(["dev", "--out", str(tmp_path)]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "not empty and not a previous render" in error
    assert sorted(path.name for path in tmp_path.iterdir()) == ["notes.txt"]
    assert precious.read_text() == "keep me"


def test_out_that_is_a_file_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "file"
    target.write_text("x")
    with pytest.raises(output.OutputError, match="not a directory"):
        output.check_out_dir(target)


def test_a_previous_render_is_replaced_and_only_its_own_files_go(tmp_path: Path) -> None:
    output.write_render(tmp_path, FILES)
    (tmp_path / "mine.txt").write_text("mine")
    (tmp_path / "manifests" / "mine.yaml").write_text("mine")
    output.write_render(tmp_path, {"resources.json": "[1]\n", "manifests/b.yaml": "b: 2\n"})
    assert (tmp_path / "resources.json").read_text() == "[1]\n"
    assert not (tmp_path / "manifests" / "a.yaml").exists(), "a stale manifest of the last render stays"
    assert not (tmp_path / "plan.md").exists()
    assert (tmp_path / "mine.txt").read_text() == "mine"
    assert (tmp_path / "manifests" / "mine.yaml").read_text() == "mine"
    assert json.loads((tmp_path / output.MARKER).read_text()) == ["manifests/b.yaml", "resources.json"]


def test_an_empty_manifest_directory_of_the_last_render_is_removed(tmp_path: Path) -> None:
    output.write_render(tmp_path, FILES)
    output.write_render(tmp_path, {"plan.md": "# plan\n"})
    assert not (tmp_path / "manifests").exists()


@pytest.mark.parametrize("listed", [["../outside.txt"], ["/etc/passwd"], "not a list", [3]])
def test_a_tampered_marker_deletes_nothing(tmp_path: Path, listed: object) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("keep")
    directory = tmp_path / "render"
    directory.mkdir()
    (directory / output.MARKER).write_text(json.dumps(listed))
    with pytest.raises(output.OutputError, match="marker"):
        output.write_render(directory, FILES)
    assert outside.read_text() == "keep"


def test_files_with_a_token_are_found_before_writing() -> None:
    files = {
        "ok.yaml": "hf_transfer: on\n",
        "bad.yaml": "value: hf_AbCdEfGh1234567890xyz\n",
        "own.json": "Bearer s3cr3t",
    }
    assert output.token_leaks(files) == ["bad.yaml"]
    assert output.token_leaks(files, ["s3cr3t"]) == ["bad.yaml", "own.json"]
