"""Writing a render to disk: nothing with a token, nothing deleted that the render did not write.

A render directory carries a marker file listing the files the render wrote. `--out DIR` accepts
a missing or empty directory or a previous render (it has the marker); it replaces only the files
the marker lists and refuses anything else, so a mistyped `--out ~` never deletes a thing.
Every file's text is built in memory and scanned for a Hugging Face token before the first write.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath

from policies.redaction import token_candidates

MARKER = ".render-files.json"


class OutputError(Exception):
    """The output directory cannot be used (a usage error: nothing is written)."""


class SecretInOutputError(Exception):
    """A file would carry a token: nothing is written; `lines` are the policy verdicts to show."""

    def __init__(self, message: str, lines: list[str]) -> None:
        super().__init__(message)
        self.lines = lines


def _own_files(directory: Path) -> list[str]:
    """The files a previous render wrote there, read from its marker."""
    try:
        listed = json.loads((directory / MARKER).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        raise OutputError(f"{directory}: the marker {MARKER} is unreadable; remove the directory by hand") from None
    if not isinstance(listed, list) or not all(isinstance(name, str) and _is_own_path(name) for name in listed):
        raise OutputError(f"{directory}: the marker {MARKER} is not a render's list of files")
    return listed


def _is_own_path(name: str) -> bool:
    path = PurePosixPath(name)
    return not path.is_absolute() and ".." not in path.parts and name not in ("", ".", MARKER)


def check_out_dir(directory: Path) -> None:
    """Refuse a directory that is neither missing, empty nor a previous render."""
    if directory.is_symlink() or (directory.exists() and not directory.is_dir()):
        raise OutputError(f"--out {directory}: not a directory")
    if directory.is_dir() and any(directory.iterdir()) and not (directory / MARKER).is_file():
        raise OutputError(
            f"--out {directory}: not empty and not a previous render (no {MARKER}); choose a new or empty directory"
        )


def token_leaks(files: Mapping[str, str], secrets: Iterable[str] = ()) -> list[str]:
    """The files whose text holds something that looks like a Hugging Face token or a known secret."""
    known = [secret for secret in secrets if secret]
    return sorted(
        name
        for name, text in files.items()
        if any(True for _ in token_candidates(text)) or any(secret in text for secret in known)
    )


def add_to_render(directory: Path, files: Mapping[str, str]) -> None:
    """Write `files` into a render just written and list them in its marker, so that the next render
    there replaces them too (a later render without `--against` leaves no stale preview behind)."""
    own = _own_files(directory)
    for name, text in sorted(files.items()):
        if not _is_own_path(name) or "/" in name:
            raise OutputError(f"refusing to write {name!r} outside {directory}")
        (directory / name).write_text(text, encoding="utf-8")
    (directory / MARKER).write_text(json.dumps(sorted(set(own) | set(files)), indent=1) + "\n")


def write_render(directory: Path, files: Mapping[str, str]) -> None:
    """Replace a previous render's own files with `files` (relative POSIX paths to text)."""
    check_out_dir(directory)
    for name in files:
        if not _is_own_path(name):
            raise OutputError(f"refusing to write {name!r} outside {directory}")
    previous = _own_files(directory) if (directory / MARKER).is_file() else []
    directory.mkdir(parents=True, exist_ok=True)
    # The marker lists old and new files before any is touched: an interrupted render stays removable.
    (directory / MARKER).write_text(json.dumps(sorted(set(previous) | set(files)), indent=1) + "\n")
    for name in previous:
        path = directory / name
        if path.is_file() or path.is_symlink():
            path.unlink()
    for parent in sorted({(directory / name).parent for name in previous}, key=lambda p: len(p.parts), reverse=True):
        if parent != directory and parent.is_dir() and not parent.is_symlink() and not any(parent.iterdir()):
            parent.rmdir()
    for name, text in sorted(files.items()):
        path = directory / name
        parent = path.parent
        if parent != directory:
            if parent.is_symlink():
                raise OutputError(f"{parent}: a symbolic link; refusing to write through it")
            parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (directory / MARKER).write_text(json.dumps(sorted(files), indent=1) + "\n")
