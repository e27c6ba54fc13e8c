"""A corpus of hostile and edge-case stack files (tests/commands/render/hostile/), each with its expected outcome.

The first line of every file is `# expect: STATUS [TEXT]`: 2 and TEXT in the one-line refusal (a secret
in a setting among them: stacks/load/plaintext_secrets.py), 1 and the mandatory policy id TEXT reported
(with LLM-SEC-001 nothing written: a token would have been), or 0 (TEXT, if
any, a policy reported as advisory). Each file runs in-process through `render.main`.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.rendered import run_render

CORPUS = Path(__file__).parent / "hostile"
EXPECT = re.compile(rb"^# expect: (?P<status>[012])(?: (?P<text>.+))?$")
MAX_MESSAGE_CHARS = 400
# Every hf_ token the corpus pastes somewhere: it may never reach a file, stdout or stderr.
PASTED_TOKEN = re.compile(r"hf_[A-Za-z0-9]{20,}")
# The other secrets the corpus pastes (tests/commands/test_secret_corpus.py pastes every kind everywhere).
PASTED_SECRET = re.compile(r"hunter2|AAABAKx1c2VjcmV0|not-visible-offline|not-encrypted")


def cases() -> list[Path]:
    return sorted(CORPUS.glob("*.yaml"))


def expectation(path: Path) -> tuple[int, str]:
    first_line = path.read_bytes().split(b"\n", 1)[0]
    match = EXPECT.match(first_line)
    assert match, f"{path.name}: no '# expect:' line"
    return int(match["status"]), (match["text"] or b"").decode()


def test_the_corpus_covers_every_class() -> None:
    assert len(cases()) >= 60
    statuses = {expectation(path)[0] for path in cases()}
    assert statuses == {0, 1, 2}


@pytest.mark.parametrize("path", cases(), ids=[path.stem for path in cases()])
def test_hostile_stack_file(path: Path, tmp_path: Path) -> None:
    status, text = expectation(path)
    out = tmp_path / "out"
    captured = run_render("hostile", "--config-file", str(path), "--out", str(out))
    returned = captured.returncode
    assert returned == status, captured.stderr
    assert "Traceback" not in captured.stderr
    assert not PASTED_TOKEN.search(captured.stdout + captured.stderr), "a pasted token reached the console"
    assert not PASTED_SECRET.search(captured.stdout + captured.stderr), "a pasted secret reached the console"
    if status == 2:
        lines = captured.stderr.splitlines()
        assert len(lines) == 1, captured.stderr
        assert lines[0].startswith("invalid stack config: ")
        assert len(lines[0]) <= MAX_MESSAGE_CHARS
        assert lines[0].isprintable()
        assert text in lines[0]
        assert captured.stdout == ""
        assert not out.exists(), "nothing may be written for an invalid config"
    elif status == 1:
        assert f"mandatory {text}" in captured.stderr
        if text == "LLM-SEC-001":
            assert not out.exists(), "a render that would write a token writes nothing"
    else:
        assert (out / "resources.json").is_file()
        if text:
            assert f"advisory {text}" in captured.stderr
        for written in out.rglob("*"):
            if written.is_file():
                assert not PASTED_TOKEN.search(written.read_text())
                assert not PASTED_SECRET.search(written.read_text())
