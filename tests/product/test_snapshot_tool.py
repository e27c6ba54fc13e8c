"""`make snapshot` (tests/snapshot.py), the contributors' check that a change leaves the renders alone:
what it renders and how it makes two snapshots comparable. (Running it renders every stack file and
variant: CONTRIBUTING.md's check, not a test.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import snapshot
from tests.rendered import STACK_FILES
from tests.variants import VARIANTS


def test_it_renders_every_stack_file_plain_and_converged_every_variant_and_a_preview(tmp_path: Path) -> None:
    out = tmp_path / "snap"
    independent, preview = snapshot.renders(out, snapshot.variant_files(tmp_path / "files"))
    plain = {render.stack for render in independent if not render.options}
    assert plain == set(STACK_FILES) | set(VARIANTS)
    assert {render.stack for render in independent if render.options == ("--converged",)} == set(STACK_FILES)
    assert len({render.name for render in independent} | {preview.name}) == len(independent) + 1
    against = Path(preview.options[preview.options.index("--against") + 1])
    assert against in {out / render.name for render in independent if render.options == ("--converged",)}


def test_variant_files_hold_the_base_stack_file_with_the_variants_settings(tmp_path: Path) -> None:
    files = snapshot.variant_files(tmp_path)
    assert sorted(files) == sorted(VARIANTS)
    text = files["reserved"].read_text()
    assert "a4-reserved" in text and "gke-b200-serving:environment: prod" in text


def test_paths_of_the_snapshot_and_the_writer_are_normalized(tmp_path: Path) -> None:
    text = f'rendered -> {tmp_path}/dev\n{{"writtenBy": "render / preview (commands/io/output.py)"}}'
    assert snapshot.normalized(text, tmp_path) == 'rendered -> OUT/dev\n{"writtenBy": X}'


def test_a_folder_that_is_no_snapshot_is_left_alone(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(SystemExit, match="is not a snapshot"):
        snapshot.snapshot(tmp_path)
    assert (tmp_path / "keep.txt").read_text() == "mine"
