"""What every console script shares: one line per error, never a traceback, never a token.

`guarded(NAME, bad_input=(...), as_is=(...))` wraps a command's `main(argv)`:
* known bad input (`InputError` and the command's own `bad_input` and `as_is` types) -> one line,
  exit 2 (`as_is` messages name themselves, `invalid stack config: ...`, and get no command prefix);
* anything else -> one line naming the exception type, exit 1 (a defect to report, not a traceback);
* a closed output pipe (`render ... | head`) -> quiet, exit 141 as a Unix tool killed by SIGPIPE;
* Ctrl-C -> one line, exit 130.
While the command runs, everything it prints goes through a filter that hides anything shaped like a
Hugging Face token (`policies.redaction`), escapes control characters and undecodable bytes (a
command-line argument may hold either), so no path, value or message can put a token or a terminal
escape on the console; and every value of the stack's own secrets the command knows (`hide_known_secrets`:
a refusal may quote a setting one was pasted into). Argument errors are one line too (`OneLineParser`).
"""

from __future__ import annotations

import argparse
import contextlib
import contextvars
import errno
import functools
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple, NoReturn, Protocol, TextIO

from commands.entry import invoked_as
from common.input_files import InputError
from common.text import MESSAGE_MAX, escaped
from policies.redaction import (
    MESSAGE_SECRETS,
    REDACTED,
    folded_secret_forms,
    hide_in_messages,
    known_secret_texts,
    redact_secrets,
)
from stacks.config.quoting import QUOTE_LIMIT, quote

EXIT_BAD_INPUT = 2
EXIT_FAILURE = 1
EXIT_CLOSED_PIPE = 128 + 13  # SIGPIPE
EXIT_INTERRUPTED = 128 + 2  # SIGINT


class Main(Protocol):
    def __call__(self, argv: list[str] | None = None) -> int: ...


class _Known(NamedTuple):
    """The texts of the stack's own secret values that the running command knows (`known_secret_texts`, longest
    first), and of those the values as written and as a quote shows them, whose first part is also hidden where a
    quote cuts them short (not their encodings: a quote shows a value as written). Their letters and digits, hidden in
    any case and between any separators, are the context's MESSAGE_SECRETS (`hide_in_messages`)."""

    texts: tuple[str, ...] = ()
    quotable: tuple[str, ...] = ()


# Per context: a command runs in its own (the tests run several at once, each in a thread of its own).
# None outside a command (a library call, a test): nothing to hide, and nothing learned outlives the call.
_KNOWN_SECRETS: contextvars.ContextVar[_Known | None] = contextvars.ContextVar("known_secrets", default=None)


def hide_known_secrets(secrets: Iterable[str]) -> None:
    """Until the running command (`guarded`) ends, the console hides these values too: as `known_secret_texts` finds
    them, and as a refusal shows a value (`stacks.config.quoting.quote`: its first 40 characters, non-ASCII
    and quotes escaped; whitespace runs squeezed, as every one-line message is)."""
    known = _KNOWN_SECRETS.get()
    if known is None:
        return
    values = [value for value in secrets if known_secret_texts([value])]
    shown = {quote(form)[1:-1].removesuffix("...") for value in values for form in (value, " ".join(value.split()))}
    texts = known_secret_texts([*values, *shown]) | set(known.texts)
    quotable = {*values, *shown, *known.quotable}
    _KNOWN_SECRETS.set(_Known(_longest_first(texts), _longest_first(quotable)))
    # a message made from here on hides them before it is cut short or escaped, and the console as it prints
    MESSAGE_SECRETS.set(MESSAGE_SECRETS.get() | folded_secret_forms(values))


def _longest_first(texts: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted(texts, key=len, reverse=True))


# The shortest first part of a known secret hidden where a quote cuts a value short (`...`), and the longest: a quote
# shows QUOTE_LIMIT characters, each escaped to at most ten (`\U0001f600`). Unbounded, a 250,000-character ESC
# secret took minutes to hide from one refusal (an attacker).
CUT_SECRET_MIN = 4
CUT_SECRET_MAX = 10 * QUOTE_LIMIT


def printable(text: str) -> str:
    """Control characters, lone surrogates (undecodable argument bytes), tokens and the stack's known
    secret values made harmless: also a secret's first part where a quote of a longer value cuts it
    short (`'aaa...aaaZebra-Hor...'`: `quote` shows a value's first 40 characters)."""
    known = _KNOWN_SECRETS.get() or _Known()
    for secret in known.texts:
        text = text.replace(secret, REDACTED)
    text = hide_in_messages(text)
    if "..." in text:
        for secret in known.quotable:
            for length in range(min(len(secret) - 1, CUT_SECRET_MAX), CUT_SECRET_MIN - 1, -1):
                text = text.replace(secret[:length] + "...", REDACTED + "...")
    return "".join(char if char.isprintable() or char in "\n\t" else repr(char)[1:-1] for char in redact_secrets(text))


def shown(value: object) -> str:
    """A value the user gave (a path) inside one line of output: every character that is not printable
    escaped, a line break too (`printable` keeps line breaks, and a path's own would start a line of its
    choosing: `--out $'x\nverdict: ok'`)."""
    return escaped(str(value))


def folded(text: object) -> str:
    """The text on one line, whole: line breaks and runs of blanks one space, the rest as `printable` makes it."""
    return printable(" ".join(str(text).split()))


def one_line(text: object, limit: int = MESSAGE_MAX) -> str:
    line = folded(text)
    return line if len(line) <= limit else line[: limit - 3] + "..."


class _CleanStream:
    """A text stream that passes everything through `printable` to the stream it wraps."""

    def __init__(self, target: TextIO) -> None:
        self._target = target

    def write(self, text: str) -> int:
        self._target.write(self._encodable(printable(text)))
        return len(text)

    def _encodable(self, text: str) -> str:
        """What the stream's encoding cannot write, escaped (`\\xe9`): a path with an `é` under PYTHONIOENCODING=ascii
        failed the command after it had written every file (an attacker)."""
        encoding = getattr(self._target, "encoding", None)
        if not encoding or text.isascii():
            return text
        try:
            return text.encode(encoding, "backslashreplace").decode(encoding)
        except LookupError:
            return text

    def __getattr__(self, name: str) -> Any:
        return getattr(self._target, name)


class _MissingStream:
    """A standard stream the command was started without (`render ... >&-`: Python then sets
    sys.stdout or sys.stderr to None). Writing to a missing standard output ends the command as a
    closed pipe does (quietly, EXIT_CLOSED_PIPE); lines for a missing standard error are dropped, the
    exit status still tells."""

    def __init__(self, ends_as_closed_pipe: bool) -> None:
        self._ends_as_closed_pipe = ends_as_closed_pipe

    def write(self, text: str) -> int:
        if self._ends_as_closed_pipe:
            raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))
        return len(text)

    def flush(self) -> None:
        return None

    def isatty(self) -> bool:
        return False


@contextlib.contextmanager
def _clean_console() -> Iterator[None]:
    saved = sys.stdout, sys.stderr
    sys.stdout = _CleanStream(saved[0]) if saved[0] is not None else _MissingStream(ends_as_closed_pipe=True)  # type: ignore[assignment]
    sys.stderr = _CleanStream(saved[1]) if saved[1] is not None else _MissingStream(ends_as_closed_pipe=False)  # type: ignore[assignment]
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


def _silence_stdout() -> None:
    """After EPIPE, point standard output at /dev/null so that the interpreter's final flush is quiet
    (Python's documented recipe, "Note on SIGPIPE" in the signal module's docs)."""
    try:
        descriptor = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, descriptor)
    os.close(devnull)


def report(name: str, message: object) -> None:
    """One line on stderr: `NAME: message`, or the message alone when NAME is empty."""
    if sys.stderr is None:  # started without one (`2>&-`); print(file=None) would write to stdout
        return
    with contextlib.suppress(OSError, ValueError):
        print(f"{name}: {one_line(message)}" if name else one_line(message), file=sys.stderr, flush=True)


def exit_status(
    name: str,
    error: BaseException,
    known: tuple[type[BaseException], ...],
    as_is: tuple[type[BaseException], ...] = (),
) -> int:
    """Report what ended a command in one line and give its exit status (re-raise what is not an error)."""
    if isinstance(error, BrokenPipeError):
        _silence_stdout()
        return EXIT_CLOSED_PIPE
    rules: tuple[tuple[tuple[type[BaseException], ...], object, int, str], ...] = (
        ((KeyboardInterrupt,), "interrupted", EXIT_INTERRUPTED, name),
        (as_is, None, EXIT_BAD_INPUT, ""),
        (known, None, EXIT_BAD_INPUT, name),
        ((RecursionError,), "the input is nested too deeply to process", EXIT_BAD_INPUT, name),
        # a path this user may not read or search (`chmod 000 OLD_DIR`): a matter of the input; one with no path
        # named is left to the rule of failures below
        (
            (PermissionError,) if getattr(error, "filename", None) is not None else (),
            _denied(error),
            EXIT_BAD_INPUT,
            name,
        ),
        ((MemoryError,), "out of memory", EXIT_FAILURE, name),
        ((Exception,), f"failed ({type(error).__name__}: {error})", EXIT_FAILURE, name),
    )
    for types, message, status, prefix in rules:
        if types and isinstance(error, types):
            report(prefix, error if message is None else message)
            return status
    raise error


def _denied(error: BaseException) -> str:
    return f"{shown(getattr(error, 'filename', None))}: permission denied to this user"


def guarded(
    name: str, bad_input: tuple[type[BaseException], ...] = (), as_is: tuple[type[BaseException], ...] = ()
) -> Callable[[Main], Main]:
    """Decorate a console script's `main(argv)` with the rules above; `as_is` errors are bad input whose
    message names itself (`invalid stack config: ...`) and is printed without the command's name."""
    known: tuple[type[BaseException], ...] = (InputError, *bad_input)

    def decorate(main: Main) -> Main:
        @functools.wraps(main)
        def run(argv: list[str] | None = None) -> int:
            scope = _KNOWN_SECRETS.set(_Known())  # the secrets a command learns are hidden until it ends
            messages = MESSAGE_SECRETS.set(frozenset())
            try:
                with _clean_console():
                    return main(argv)
            except SystemExit:
                raise
            except BaseException as error:
                return exit_status(invoked_as(name), error, known, as_is)
            finally:
                _KNOWN_SECRETS.reset(scope)
                MESSAGE_SECRETS.reset(messages)

        return run

    return decorate


class OneLineParser(argparse.ArgumentParser):
    """argparse that reports a bad argument in one line (no usage block), exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: {one_line(message)} (see --help)\n")
