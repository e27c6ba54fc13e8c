"""The output-folder contract of every command that writes files (render, preview, any later one).

A folder given as `--out` (or written by default) is used only when it cannot be turned against the
user; otherwise the command exits 2 with one line and has touched nothing:
* No symbolic link anywhere on the write path: every component of the folder's path as given, and
  every directory and file inside the folder. The path is walked from `/` (or the working directory)
  one component at a time with `O_NOFOLLOW` directory descriptors, and every later step works
  relative to those descriptors (`dir_fd`), so a link planted after the check is not followed either.
* Never `/`, the repository, the home directory or a folder that contains one of them.
* The folder is missing, empty, or an output folder of these commands: it holds a manifest
  (MARKER) listing every file the commands wrote there with its SHA-256 digest, and nothing else
  (no file the manifest does not list: a folder that holds other files is refused, whatever its
  manifest says).
* A file is deleted or replaced only when its content still has the digest the manifest recorded
  when the command wrote it: the manifest is user-editable, so it is verified, not trusted (a
  user's file listed in a forged manifest has a different digest, and is refused). Replacing writes
  a new file and renames it over the old name: a hard link to another file is unlinked, never
  written through.
* Every file's text is scanned for a Hugging Face token before the first write.
Every folder the write touches is checked writable before the first write. The manifest lists the old
and the new files before anything is touched, so an interrupted write leaves a folder the next run can
still verify and clean; a staging file a killed write left (`.tmp-` and 16 hex digits, a regular file:
only `_replace` makes such names) is removed by the next write, not taken for a foreign file.
POSIX only (`O_NOFOLLOW` and `dir_fd`), like the rest of the tooling (Makefile, .venv/bin).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import platform
import re
import resource
import secrets
import signal
import stat
import struct
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from common.input_files import MIB, InputError, kind_of, parse_json, read_json
from policies.redaction import holds_known_secret, known_secret_texts, secret_kinds, token_candidates

MARKER = ".render-files.json"
MANIFEST_VERSION = 2
MANIFEST_LIMIT = 4 * MIB
# Files this contract writes are a few MB at most; a listed file larger than this is not one of them.
VERIFY_LIMIT = 256 * MIB
MAX_ENTRIES = 20_000
DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
TEMPORARY_PREFIX = ".tmp-"
# chattr's flags that make a file or folder refuse a rename over it or in it (linux/fs.h FS_IOC_GETFLAGS,
# FS_IMMUTABLE_FL, FS_APPEND_FL). The ioctl is _IOR('f', 1, long), and the kernel passes an int: the read
# direction is bit 31 (asm-generic/ioctl.h), bit 30 on powerpc, mips and sparc (their asm/ioctl.h), and the size
# is a long's. Where the request is wrong the ioctl fails and nothing is refused here (the rename then fails).
_READ_BIT = 29 if platform.machine().startswith(("ppc", "powerpc", "mips", "sparc")) else 30
FS_IOC_GETFLAGS = (2 << _READ_BIT) | (struct.calcsize("l") << 16) | (ord("f") << 8) | 1
PROTECTING_FLAGS = {0x10: "immutable (chattr +i)", 0x20: "append-only (chattr +a)"}
TEMPORARY_HEX_BYTES = 8
# A file only _replace creates: a write killed between creating it and renaming it leaves one behind.
LEFTOVER = re.compile(rf"^{re.escape(TEMPORARY_PREFIX)}[0-9a-f]{{{2 * TEMPORARY_HEX_BYTES}}}$")
NAME_MAX = 255  # bytes in one path component (Linux, macOS)
# How deep an output folder's folders go: a render writes `manifests/` one level down.
MAX_DEPTH = 16
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
REPOSITORY = Path(__file__).resolve().parents[2]


class OutputError(InputError):
    """The output folder cannot be used (a usage error, exit status 2): nothing was touched."""


class SecretInOutputError(Exception):
    """A file would carry a token: nothing is written; `lines` are the policy verdicts to show."""

    def __init__(self, message: str, lines: list[str] | None = None) -> None:
        super().__init__(message)
        self.lines = lines or []


def json_text(value: Any) -> str:
    """JSON as the commands print and write it: sorted keys, two-space indent. A number that is not
    finite raises ValueError: JSON has no infinity or NaN, and Python's default writes `Infinity`,
    which no JSON reader takes."""
    return json.dumps(value, indent=2, sort_keys=True, allow_nan=False)


def json_document(value: Any) -> str:
    """A JSON file's text: `json_text`, two-space indent, a final newline."""
    return json_text(value) + "\n"


def token_leaks(files: Mapping[str, str], secrets: Iterable[str] = ()) -> list[str]:
    """The files whose text holds something that looks like a secret (a Hugging Face token, a cloud or
    API key, a private key: policies/redaction.py) or a known secret value."""
    known = known_secret_texts(secrets)
    return sorted(name for name, text in files.items() if secret_kinds(text) or holds_known_secret(text, known))


def leaked_kind(files: Mapping[str, str]) -> str:
    """What kind of secret the first leaking file holds ("a secret" for a known value of no known shape)."""
    for name in sorted(files):
        kinds = secret_kinds(files[name])
        if kinds:
            return kinds[0]
    return "a secret"


def digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def is_own_path(name: str) -> bool:
    """A relative POSIX path inside the folder, normalised, with no '..', hidden name or control character."""
    path = PurePosixPath(name)
    return (
        bool(name)
        and not path.is_absolute()
        and str(path) == name
        and all(part not in ("", ".", "..") and not part.startswith(".") for part in path.parts)
        and all(char.isprintable() and char != "\\" for char in name)
        and all(len(part.encode()) <= NAME_MAX for part in path.parts)
    )


def _entry_problem(where: str, mode: int) -> OutputError:
    if stat.S_ISLNK(mode):
        return OutputError(f"{where}: a symbolic link; refusing to write through it")
    return OutputError(f"{where}: {kind_of(mode)}; an output folder holds only directories and regular files")


@dataclass
class OutputFolder:
    """An output folder checked against the contract (nothing touched yet); close() when done."""

    directory: Path
    base: int  # descriptor of the deepest existing directory on the path
    missing: list[str]  # components of the path still to create (the folder itself is missing)
    files: dict[str, os.stat_result] = field(default_factory=dict)
    directories: set[str] = field(default_factory=set)
    manifest: dict[str, list[str]] = field(default_factory=dict)
    # staging files of a write that was killed before renaming them (removed by the next write)
    leftovers: list[str] = field(default_factory=list)

    @classmethod
    def open(cls, directory: Path) -> OutputFolder:
        if any(True for _ in token_candidates(f"path {directory}")):  # tokens inside it, not an hf_ prefix
            raise OutputError(f"{directory}: the folder's path holds something shaped like a Hugging Face token")
        base, missing = _walk_to(directory)
        folder = cls(directory, base, missing)
        try:
            _refuse_protected(directory)
            if not missing:
                folder._take_inventory()
        except BaseException:
            folder.close()
            raise
        return folder

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.base)

    # ------------------------------------------------------------ checks

    def _take_inventory(self) -> None:
        _refuse_another_owner(str(self.directory), os.fstat(self.base))
        # A folder of someone else's (`--out /etc`) is named as that before its tree is walked: the walk
        # stops at the first link or device file it meets, which said nothing of the folder itself.
        if not _has_entry(self.base, MARKER):
            with os.scandir(self.base) as entries:
                if any(
                    not (entry.is_file(follow_symlinks=False) and LEFTOVER.fullmatch(entry.name)) for entry in entries
                ):
                    raise self._not_an_output_folder()
        for name, info in _tree(self.base, str(self.directory)):
            _refuse_another_owner(f"{self.directory}/{name}", info)
            if stat.S_ISDIR(info.st_mode):
                self.directories.add(name)
            elif stat.S_ISREG(info.st_mode) and LEFTOVER.fullmatch(PurePosixPath(name).name):
                self.leftovers.append(name)
            else:
                self.files[name] = info
        if not self.files and not self.directories:
            return
        if MARKER not in self.files:
            raise self._not_an_output_folder()
        self.manifest = self._read_manifest()
        foreign = sorted(name for name in self.files if name != MARKER and name not in self.manifest)
        if foreign:
            more = f" and {len(foreign) - 1} more file(s)" if len(foreign) > 1 else ""
            raise OutputError(
                f"{self.directory}: holds {foreign[0]}{more} that no render or preview wrote; move them away "
                "or choose another folder"
            )

    def _not_an_output_folder(self) -> OutputError:
        return OutputError(
            f"{self.directory}: not empty and not an output folder of render or preview (no {MARKER}); "
            "choose a new or empty folder"
        )

    def _read_manifest(self) -> dict[str, list[str]]:
        where = f"{self.directory / MARKER}"
        try:
            document = parse_json(_read_at(self.base, MARKER, MANIFEST_LIMIT, where).decode("utf-8", "replace"), where)
        except InputError as error:
            raise OutputError(f"{error} (the manifest of an output folder)") from None
        if isinstance(document, list):
            raise OutputError(
                f"{where}: written by an earlier version (a list of names without digests), so its files cannot be "
                "verified; delete the folder yourself or choose a new one"
            )
        listed = document.get("files") if isinstance(document, dict) else None
        if not isinstance(listed, dict):
            raise OutputError(f"{where}: not a manifest of render or preview (no 'files' object)")
        manifest: dict[str, list[str]] = {}
        for name, digests in listed.items():
            values = [digests] if isinstance(digests, str) else digests
            if not (
                is_own_path(name)
                and isinstance(values, list)
                and values
                and all(isinstance(value, str) and DIGEST.fullmatch(value) for value in values)
            ):
                raise OutputError(f"{where}: the entry {json.dumps(name)[:80]} is not a file name and its digest")
            manifest[name] = values
        return manifest

    def verify(self, names: Iterable[str]) -> None:
        """Each existing file among `names` is the file the manifest recorded (same digest)."""
        for name in sorted(set(names)):
            if name not in self.files:
                continue
            where = f"{self.directory / name}"
            if name not in self.manifest:
                raise OutputError(f"{where}: exists and no render or preview wrote it; move it away")
            if digest(_read_at(self.base, name, VERIFY_LIMIT, where)) not in self.manifest[name]:
                raise OutputError(
                    f"{where}: changed since it was written (its digest differs from {MARKER}); move it away or "
                    "delete it yourself"
                )

    def _check_new_paths(self, names: Iterable[str]) -> None:
        for name in names:
            if name in self.directories:
                raise OutputError(f"{self.directory / name}: a directory where a file is to be written")
            for parent in PurePosixPath(name).parents:
                if str(parent) != "." and str(parent) in self.files:
                    raise OutputError(f"{self.directory / parent}: a file where a directory is needed")

    # ------------------------------------------------------------ writing

    def write(self, texts: Mapping[str, str], replace: bool) -> None:
        """Write `texts` (relative paths to text); with `replace`, every other listed file goes."""
        for name in texts:
            if not is_own_path(name):
                raise OutputError(f"refusing to write {name!r}: not a plain relative path inside {self.directory}")
        leaks = token_leaks(texts)
        if leaks:
            raise SecretInOutputError(
                f"{leaked_kind(texts)} would be written to {', '.join(leaks[:3])}; nothing was written"
            )
        data = {name: text.encode("utf-8", "backslashreplace") for name, text in texts.items()}
        if self.missing:  # checked before the folder is made, and again below (another writer may make it)
            self._checked(data, replace)
        folder = self._create_missing()
        try:
            # One writer at a time (flock(2) on the folder, advisory: every render and preview takes it),
            # and the folder read again under the lock: two renders of different stacks into one folder
            # each removed only the files of the manifest it had read, so the other's stayed behind as
            # files no render wrote, and every later render of the folder was refused.
            fcntl.flock(folder, fcntl.LOCK_EX)
            self._take_inventory_again(folder)
            stale = self._checked(data, replace)
            during = {name: list(digests) for name, digests in self.manifest.items()}
            for name, content in data.items():
                during[name] = sorted({*during.get(name, []), digest(content)})
            _write_manifest(folder, during, writing=data)
            for name in self.leftovers:
                _remove(folder, name, None, leftover=True)
            for name in stale:
                _remove(folder, name, self.files.get(name))
            _prune(folder, stale)
            for name, content in sorted(data.items()):
                _replace(folder, name, content)
            final = {} if replace else dict(self.manifest)
            final.update({name: [digest(content)] for name, content in data.items()})
            _write_manifest(folder, final)
        finally:
            os.close(folder)

    def _checked(self, data: Mapping[str, bytes], replace: bool) -> list[str]:
        """The checks before a write, on the folder as last read; the stale files the write removes."""
        stale = sorted(set(self.manifest) - set(data)) if replace else []
        self.verify([*data, *stale])
        self._check_new_paths(data)
        self._check_writable([*data, *stale, *self.leftovers])
        self._check_space(data, stale)
        return stale

    def _take_inventory_again(self, folder: int) -> None:
        """Read the folder (a descriptor of it, now existing) again: another writer may have written it since."""
        os.close(self.base)
        self.base, self.missing = os.dup(folder), []
        self.files, self.directories, self.manifest, self.leftovers = {}, set(), {}, []
        self._take_inventory()

    def _check_writable(self, names: Iterable[str]) -> None:
        """Every directory the write creates files in or removes them from (the folder, its existing
        subfolders on the way, or the deepest existing folder above a missing one) is writable by this
        process, before anything is touched: a folder without write permission, on a read-only file
        system, was refused only after part of it had been rewritten."""
        if self.missing:
            directories = {"."}
        else:
            directories = {"."} | {
                str(parent)
                for name in names
                for parent in PurePosixPath(name).parents
                if str(parent) != "." and str(parent) in self.directories
            }
        for name in sorted({*directories, *names, MARKER}) if not self.missing else ():  # a new folder: no flags
            _refuse_flagged(self.base, name, self.directory if name == "." else self.directory / name)
        for directory in sorted(directories):
            if not os.access(directory, os.W_OK | os.X_OK, dir_fd=self.base, effective_ids=True):
                where = self.directory if directory == "." else self.directory / directory
                if self.missing:
                    where = _existing_part(self.directory, self.missing)
                raise OutputError(
                    f"{where}: not writable by this user (permissions, or a read-only file system); nothing was "
                    "written: choose a folder you can write, or change its permissions"
                )

    def _check_space(self, data: Mapping[str, bytes], stale: Iterable[str]) -> None:
        """Room on the folder's file system for the write, at its fullest, before anything is touched: a
        full disk stopped a render half-way (`OSError: [Errno 28]`, exit 1) with the folder holding part
        of the new render. The write replaces one file at a time (a new file beside the old one, then
        the rename frees the old), after writing the manifest and removing stale files."""
        _check_file_size(self.directory, max((len(content) for content in data.values()), default=0))
        try:
            disk = os.fstatvfs(self.base)
        except OSError:
            return
        if disk.f_blocks == 0 or disk.f_frsize <= 0:
            return  # a file system that reports no sizes (some network ones)
        block = disk.f_frsize

        def blocks(size: int) -> int:
            return -(-size // block) * block

        def old(name: str) -> int:
            info = self.files.get(name)
            return blocks(info.st_size) if info is not None else 0

        # the manifest during the write lists every old and new file with up to two digests
        manifest = blocks(200 + sum(len(name) + 2 * (len(digest(b"")) + 8) for name in {*self.manifest, *data}))
        used = manifest - sum(old(name) for name in [*stale, *self.leftovers])
        peak = used
        for name, content in sorted(data.items()):
            peak = max(peak, used + blocks(len(content)))
            used += blocks(len(content)) - old(name)
        available = disk.f_bavail * block
        if peak > available:
            raise OutputError(
                f"{self.directory}: the write needs about {peak:,} bytes at its fullest and its file system has "
                f"{available:,} free; nothing was written: free some space or choose another folder"
            )
        folders = {str(parent) for name in data for parent in PurePosixPath(name).parents if str(parent) != "."}
        inodes = sum(name not in self.files for name in data) + len(folders - self.directories) + len(self.missing) + 2
        _check_inodes(self.directory, disk, inodes)

    def _create_missing(self) -> int:
        """A descriptor of the folder, creating the missing components one by one (no links followed)."""
        return _descend(self.base, self.missing, str(self.directory), create=True)


# ---------------------------------------------------------------- descriptors


def _inode_flags(folder: int, name: str) -> int:
    """The chattr flags of `name` in `folder` (0 when it is missing or the system does not tell)."""
    try:
        descriptor = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder)
    except OSError:
        return 0
    try:
        return int.from_bytes(fcntl.ioctl(descriptor, FS_IOC_GETFLAGS, bytes(8))[:4], sys.byteorder)
    except OSError:
        return 0
    finally:
        os.close(descriptor)


def _refuse_flagged(folder: int, name: str, where: Path) -> None:
    """A file the write replaces or removes, or a folder it renames in, that the file system protects: the
    rename failed half-way through a render (exit 1), or left its new file beside the old."""
    flags = _inode_flags(folder, name)
    for flag, kind in PROTECTING_FLAGS.items():
        if flags & flag:
            raise OutputError(
                f"{where}: {kind}, so it cannot be replaced or renamed in; nothing was written: lift the flag "
                "(chattr -i, chattr -a) or choose another place"
            )


def _refuse_another_owner(where: str, info: os.stat_result) -> None:
    """An output folder and all it holds are this user's: another owner of a folder in it could replace a
    manifest after the write, one of a file could have planted it."""
    if info.st_uid != os.geteuid():
        raise OutputError(
            f"{where}: owned by another user (uid {info.st_uid}), who could change what is written there; "
            "choose a folder of your own"
        )


def _has_entry(folder: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def _open_directory(parent: int, name: str, where: str) -> int:
    try:
        return os.open(name, _DIRECTORY, dir_fd=parent)
    except OSError as error:
        try:
            mode = os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode
        except OSError:
            raise OutputError(f"{where}: cannot open it ({error.strerror})") from None
        if stat.S_ISDIR(mode):
            raise OutputError(f"{where}: cannot open it ({error.strerror})") from None
        if stat.S_ISLNK(mode):
            raise _entry_problem(where, mode) from None
        raise OutputError(f"{where}: not a directory; allowed: a folder (new, empty or an earlier output)") from None


def _walk_to(directory: Path) -> tuple[int, list[str]]:
    """A descriptor of the deepest existing directory on the path and the components below it."""
    if "\x00" in str(directory):
        raise OutputError(f"{directory!r}: the path contains a NUL byte")
    parts = list(directory.parts)
    start = parts.pop(0) if directory.is_absolute() else "."
    current = os.open(start, _DIRECTORY)
    walked = Path(start)
    try:
        for index, part in enumerate(parts):
            walked = walked / part
            try:
                child = os.open(part, _DIRECTORY, dir_fd=current)
            except FileNotFoundError:
                rest = parts[index:]
                if ".." in rest:
                    raise OutputError(f"{directory}: '..' below a folder that does not exist") from None
                return current, [part for part in rest if part != "."]
            except OSError:
                child = _open_directory(current, part, str(walked))
            os.close(current)
            current = child
    except BaseException:
        os.close(current)
        raise
    return current, []


def _existing_part(directory: Path, missing: list[str]) -> Path:
    """The deepest folder of `directory` that exists (its last `missing` components do not)."""
    path = directory
    for _ in missing:
        path = path.parent
    return path


# The folders a version control system keeps its own data in.
VERSION_CONTROL_FOLDERS = frozenset({".git", ".hg", ".svn", ".bzr", ".jj", ".sl", ".pijul", "_darcs"})


def _git_directory(location: Path) -> Path | None:
    """The folder on the way to `location` (or itself) that is a git repository's own data, whatever its name
    (a bare repository, a separate --git-dir): HEAD, objects/ and refs/ side by side."""
    for folder in (location, *location.parents):
        with contextlib.suppress(OSError):
            if (folder / "HEAD").is_file() and (folder / "objects").is_dir() and (folder / "refs").is_dir():
                return folder
    return None


def _refuse_protected(directory: Path) -> None:
    """Not `/`, the repository, the home directory, nor a folder holding one of them, nor a folder inside
    a version control system's own (`.git`). The path has
    no symbolic link (checked while walking it), so its normal form is where it is."""
    location = Path(os.path.normpath(Path.cwd() / directory))
    protected = {REPOSITORY: "the repository"}
    with contextlib.suppress(RuntimeError, KeyError, OSError):
        protected[Path.home().resolve()] = "the home directory"
    if location == Path(location.anchor):
        raise OutputError(f"{directory}: the root directory; choose a folder of its own")
    for place, what in protected.items():
        if location == place or location in place.parents:
            held = "is" if location == place else "holds"
            raise OutputError(f"{directory}: {held} {what}; choose a folder of its own, such as build/STACK")
    inside = next((part for part in location.parts if part in VERSION_CONTROL_FOLDERS), None) or _git_directory(
        location
    )
    if inside is not None:
        # an empty folder there passes every other check, and files written into .git/refs break the repository
        raise OutputError(
            f"{directory}: is inside {inside}, a version control system's own folder; choose a folder of its own"
        )


def _tree(folder: int, where: str) -> Iterator[tuple[str, os.stat_result]]:
    """Every entry under the folder (relative path, lstat), walked by descriptor, no link followed. One
    folder is open at a time: a folder is opened from `folder` down when its turn comes, not kept open while
    its siblings wait (a thousand subfolders ran out of descriptors under `ulimit -n 1024`)."""
    count = 0
    pending: list[tuple[str, ...]] = [()]
    while pending:
        parts = pending.pop()
        if len(parts) > MAX_DEPTH:  # each folder is opened from the top: a deep chain would cost its depth squared
            raise OutputError(f"{where}: holds folders more than {MAX_DEPTH} deep; not an output folder")
        prefix = "".join(f"{part}/" for part in parts)
        descriptor = _descend(folder, parts, where, create=False)
        try:
            with os.scandir(descriptor) as entries:
                listed = sorted(entries, key=lambda entry: entry.name)
            for entry in listed:
                count += 1
                if count > MAX_ENTRIES:
                    raise OutputError(f"{where}: holds more than {MAX_ENTRIES} entries; not an output folder")
                name = f"{prefix}{entry.name}"
                info = entry.stat(follow_symlinks=False)
                if stat.S_ISDIR(info.st_mode):
                    pending.append((*parts, entry.name))
                elif not stat.S_ISREG(info.st_mode):
                    raise _entry_problem(f"{where}/{name}", info.st_mode)
                yield name, info
        finally:
            os.close(descriptor)


def _descend(folder: int, parts: Iterable[str], where: str, create: bool) -> int:
    """A descriptor of the directory `parts` lead to below `folder`, one component at a time (no
    links followed); `create`: making the missing ones."""
    current = os.dup(folder)
    # (descriptor of the parent, name) of each folder this call made: removed again when a later step
    # fails, so that a refused path leaves nothing behind (a name too long made its parents first)
    made: list[tuple[int, str]] = []
    try:
        for part in parts:
            if create:
                try:
                    os.mkdir(part, dir_fd=current)
                    made.append((os.dup(current), part))
                except FileExistsError:
                    pass
                except OSError as error:  # a file system that takes no folder (/proc, /sys), a full one
                    raise OutputError(
                        f"{where}: cannot make the folder {part!r} ({error.strerror}); allowed: a folder on a file "
                        "system the command can write to"
                    ) from None
            child = _open_directory(current, part, where)
            os.close(current)
            current = child
    except BaseException:
        os.close(current)
        for parent, part in reversed(made):
            with contextlib.suppress(OSError):
                os.rmdir(part, dir_fd=parent)
        raise
    finally:
        for parent, _ in made:
            os.close(parent)
    return current


def _parent_of(folder: int, name: str, create: bool) -> int | None:
    """A descriptor of the directory that holds `name` (None when it does not exist and `create` is off)."""
    try:
        return _descend(folder, PurePosixPath(name).parts[:-1], name, create)
    except OutputError:
        if create:
            raise
        return None


def _read_at(folder: int, name: str, limit: int, where: str) -> bytes:
    parent = _parent_of(folder, name, create=False)
    if parent is None:
        raise OutputError(f"{where}: cannot open its folder")
    try:
        descriptor = os.open(PurePosixPath(name).name, _READ, dir_fd=parent)
    except OSError as error:
        raise OutputError(f"{where}: cannot read it ({error.strerror})") from None
    finally:
        os.close(parent)
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise _entry_problem(where, info.st_mode)
        if info.st_size > limit:
            raise OutputError(f"{where}: larger than any file these commands write")
        chunks = []
        while chunk := os.read(descriptor, MIB):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(descriptor)


def _write_new(parent: int, name: str, content: bytes, mode: int | None = None) -> None:
    """A new file of `content`; `mode`: its permission bits (those of the file it replaces), set before
    anything is written, else the umask's."""
    descriptor = os.open(name, _CREATE, 0o666, dir_fd=parent)
    try:
        if mode is not None:
            os.fchmod(descriptor, stat.S_IMODE(mode))
        view = memoryview(content)
        while view:
            view = view[os.write(descriptor, view) :]
    finally:
        os.close(descriptor)


def _replace(folder: int, name: str, content: bytes, mode: int | None = None) -> None:
    """Write a new file and rename it over `name`: whatever was there is unlinked, never written into."""
    parent = _parent_of(folder, name, create=True)
    assert parent is not None
    temporary = f"{TEMPORARY_PREFIX}{secrets.token_hex(TEMPORARY_HEX_BYTES)}"
    try:
        _write_new(parent, temporary, content, mode)
        os.rename(temporary, PurePosixPath(name).name, src_dir_fd=parent, dst_dir_fd=parent)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=parent)
        raise
    finally:
        os.close(parent)


def _remove(folder: int, name: str, checked: os.stat_result | None, leftover: bool = False) -> None:
    parent = _parent_of(folder, name, create=False)
    if parent is None:
        return
    leaf = PurePosixPath(name).name
    try:
        now = os.stat(leaf, dir_fd=parent, follow_symlinks=False)
        if leftover:
            if not stat.S_ISREG(now.st_mode):
                return
        elif checked is None or (now.st_dev, now.st_ino) != (checked.st_dev, checked.st_ino):
            return  # gone, or swapped since it was verified: leave it
        os.unlink(leaf, dir_fd=parent)
    except FileNotFoundError:
        pass
    finally:
        os.close(parent)


def _prune(folder: int, removed: Iterable[str]) -> None:
    """Remove the directories that held removed files once they are empty, deepest first."""
    parents = {str(parent) for name in removed for parent in PurePosixPath(name).parents if str(parent) != "."}
    for directory in sorted(parents, key=lambda path: path.count("/"), reverse=True):
        holder = _parent_of(folder, directory, create=False)
        if holder is None:
            continue
        with contextlib.suppress(OSError):
            os.rmdir(PurePosixPath(directory).name, dir_fd=holder)
        os.close(holder)


def _write_manifest(folder: int, files: Mapping[str, list[str]], writing: Iterable[str] = ()) -> None:
    document: dict[str, Any] = {
        "version": MANIFEST_VERSION,
        "writtenBy": "render / preview (commands/io/output.py)",
        "files": {name: digests[0] if len(digests) == 1 else digests for name, digests in sorted(files.items())},
    }
    if writing:
        document["writing"] = sorted(writing)
    _replace(folder, MARKER, (json.dumps(document, indent=1, allow_nan=False) + "\n").encode())


def unfinished_write(directory: Path, reading: Iterable[str]) -> str | None:
    """Why the files `reading` of the folder are not those of one finished write, or None: its manifest
    still lists one among the files a write was writing (`writing`; from an earlier version, with its old
    and new digests) when the command was stopped (Ctrl-C, a kill, a full disk). A reader of a render
    (preview, `render --against`, check-policies) refuses such a folder: some of its files may be the
    new render's and some the old one's, or missing. A stopped preview that only added its own files
    to a render's folder leaves the render's files readable."""
    try:
        document = read_json(directory / MARKER, MANIFEST_LIMIT)
    except (InputError, OSError):
        return None  # no manifest (a folder made by hand) or one that is not ours: nothing says a write stopped
    listed = document.get("files") if isinstance(document, dict) else None
    if not isinstance(listed, dict):
        return None
    writing = document.get("writing")
    names = set(reading)
    stopped = (
        writing is True
        or (isinstance(writing, list) and any(name in names for name in writing if isinstance(name, str)))
        or any(isinstance(listed.get(name), list) and len(listed[name]) > 1 for name in names)
    )
    if stopped:
        return (
            f"{directory}: a write into it was stopped before it finished ({MARKER} says so), so its files are not "
            "one render's: run the command again"
        )
    return None


# ---------------------------------------------------------------- the commands' entry points


@contextlib.contextmanager
def opened(directory: Path) -> Iterator[OutputFolder]:
    folder = OutputFolder.open(directory)
    try:
        yield folder
    finally:
        folder.close()


def check_out_dir(directory: Path, replace: bool = True) -> None:
    """Refuse, before any work, a folder the command could not write (with `replace`, every file the
    manifest lists is verified too, as the write will replace or remove them all): a folder without
    write permission was refused only by the write, after the whole render."""
    # `..` collapsed as the write resolves it (no link may lie on the path: the write refuses one)
    for parent in Path(os.path.normpath(directory.absolute())).parents:
        if _holds_marker(parent):
            raise OutputError(
                f"{directory}: inside {parent}, the output folder of an earlier render or preview, whose next run "
                "would refuse the files written here; give a folder outside it"
            )
    with opened(directory) as folder:
        if replace:
            folder.verify(folder.manifest)
        folder._check_writable([*folder.manifest, *folder.leftovers] if replace else [])


def _holds_marker(folder: Path) -> bool:
    try:
        return stat.S_ISREG(os.stat(folder / MARKER, follow_symlinks=False).st_mode)
    except OSError:  # none there, or a folder this user cannot read: not one of this user's outputs
        return False


def write_render(directory: Path, files: Mapping[str, str]) -> None:
    """Replace the folder's previous output with `files` (relative POSIX paths to text)."""
    with opened(directory) as folder:
        folder.write(files, replace=True)


def replace_file(path: Path, text: str, secrets: Iterable[str] = ()) -> None:
    """Replace one existing file the user named (bench-compare --record's measurements file) under the
    same rules as an output folder's files: no symbolic link anywhere on its path, the file itself a
    regular file of this user's, a new file renamed over it (a hard link is unlinked, never written through), and no
    token in the text, nor one of the known `secrets`. Refused in one line (exit status 2), nothing written."""
    if token_leaks({path.name: text}, secrets):
        raise OutputError(
            f"{path}: {leaked_kind({path.name: text})} would be written to it (from the result, --source or the "
            "stack's settings); nothing was written"
        )
    base, missing = _walk_to(path.parent)
    try:
        if missing:
            raise OutputError(f"{path.parent}: no such folder")
        try:
            info = os.stat(path.name, dir_fd=base, follow_symlinks=False)
        except OSError as error:
            raise OutputError(f"{path}: cannot write it ({error.strerror})") from None
        mode = info.st_mode
        if not stat.S_ISREG(mode):
            raise _entry_problem(str(path), mode)
        if info.st_uid != os.geteuid():
            raise OutputError(
                f"{path}: owned by another user (uid {info.st_uid}), whose file this would replace; nothing was "
                "written: record into a copy of your own (--measurements FILE)"
            )
        if not os.access(".", os.W_OK | os.X_OK, dir_fd=base, effective_ids=True):
            raise OutputError(
                f"{path.parent}: not writable by this user (the file is replaced by a new one beside it); nothing "
                "was written"
            )
        for name, where in ((path.name, path), (".", path.parent)):
            _refuse_flagged(base, name, where)
        content = text.encode()
        _check_room_for_one(base, path, len(content))
        with _interrupts_held():  # an interrupt's os._exit (commands/entry.py) left the new file beside the old
            _replace(base, path.name, content, mode)  # a private file (0600) stays private
    finally:
        os.close(base)


@contextlib.contextmanager
def _interrupts_held() -> Iterator[None]:
    """SIGINT held back while the block runs, then raised again for the handler it had: a file and its rename,
    done as one. A handler noted, not a signal mask: with other threads in the process, a masked signal is
    delivered to one of them and Python runs the handler in the main thread all the same."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set a handler (and only it runs them)
        return
    caught: list[int] = []
    if signal.getsignal(signal.SIGINT) is None:  # a handler set outside Python: it could not be put back
        yield
        return
    previous = signal.signal(signal.SIGINT, lambda signum, _: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if caught:
            signal.raise_signal(signal.SIGINT)


def _check_file_size(where: Path, largest: int) -> None:
    """The largest file of a write against the process's file-size limit (`ulimit -f` stopped a write
    half-way: errno 27, exit 1)."""
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    if limit != resource.RLIM_INFINITY and largest > limit:
        raise OutputError(
            f"{where}: the largest file to write is {largest:,} bytes and this process may write files of at most "
            f"{limit:,} (ulimit -f); nothing was written: raise the limit"
        )


def _check_inodes(where: Path, disk: os.statvfs_result, needed: int) -> None:
    """New files and folders against the file system's free inodes (a small tmpfs out of them refused a
    file half-way, as a full disk did), where it reports them."""
    if disk.f_files > 0 and needed > disk.f_favail:
        raise OutputError(
            f"{where}: the write needs about {needed:,} new files and folders and its file system has room for "
            f"{disk.f_favail:,} more (inodes); nothing was written: choose another folder"
        )


def _check_room_for_one(base: int, path: Path, size: int) -> None:
    """Room for a new file of `size` bytes beside the one it replaces (a full disk ended bench-compare
    --record with errno 28, exit 1), and a size the process may write."""
    _check_file_size(path, size)
    try:
        disk = os.fstatvfs(base)
    except OSError:
        return
    if disk.f_frsize > 0 and disk.f_blocks > 0 and (size + disk.f_frsize > disk.f_bavail * disk.f_frsize):
        raise OutputError(
            f"{path}: the new file needs about {size:,} bytes beside the old one and its file system has "
            f"{disk.f_bavail * disk.f_frsize:,} free; nothing was written: free some space"
        )
    _check_inodes(path, disk, 1)


@contextlib.contextmanager
def locked_file(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on the file at `path` (flock(2), advisory: every `bench-compare --record`
    takes it) until the block ends: read, append and replace under it, and no concurrent writer's entry is
    lost. The file is replaced by rename, so the lock is taken on the inode the path names and taken again
    when a writer renamed another over it while this one waited."""
    if "\x00" in str(path):
        raise OutputError(f"{path!r}: the path contains a NUL byte")
    while True:
        try:
            descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as error:
            if os.path.islink(path):
                raise OutputError(f"{path}: a symbolic link; refusing to write through it") from None
            raise OutputError(f"{path}: cannot open it to lock it ({error.strerror})") from None
        try:
            mode = os.fstat(descriptor).st_mode
            if not stat.S_ISREG(mode):
                raise _entry_problem(str(path), mode)
            fcntl.flock(descriptor, fcntl.LOCK_EX)
            try:
                current = os.stat(path, follow_symlinks=False)
            except OSError:
                current = None
            held = os.fstat(descriptor)
            if current is not None and (current.st_dev, current.st_ino) == (held.st_dev, held.st_ino):
                yield
                return
        finally:
            os.close(descriptor)


def add_files(directory: Path, files: Mapping[str, str]) -> None:
    """Write or replace only `files` in the folder, keeping the rest of its output."""
    with opened(directory) as folder:
        folder.write(files, replace=False)
