"""The console filter of every command: the stack's own secret values it learned, hidden as a refusal
shows them, and only while that command runs."""

from __future__ import annotations

import io
import sys

import pytest

from commands.io.console import guarded, hide_known_secrets, one_line, printable
from stacks.config.quoting import quote

SECRET = "Zebra-Horse-Battery-77"


def test_known_secrets_are_hidden_until_the_command_ends(capsys: pytest.CaptureFixture[str]) -> None:
    @guarded("probe")
    def main(argv: list[str] | None = None) -> int:
        hide_known_secrets([SECRET])
        print(f"during {SECRET}")
        return 0

    assert main([]) == 0
    assert capsys.readouterr().out == "during ***\n"
    assert printable(f"after {SECRET}") == f"after {SECRET}"  # the next command starts knowing none


@pytest.mark.parametrize(
    "secret",
    [
        "Zebra-Horse-Battery-77-Staple-Correct-Orange-Lamp",  # longer than a quote shows
        "Zebra-Größe-Battery-77",  # non-ASCII, escaped
        "Zebra's-Horse-77",  # a quote, escaped
        "Zebra Horse  Battery 77",  # a run of spaces, squeezed
        "Zebra\tHorse-Battery-77",
    ],
)
def test_a_known_secret_is_hidden_as_a_refusal_quotes_it(secret: str) -> None:
    @guarded("probe")
    def main(argv: list[str] | None = None) -> int:
        hide_known_secrets([secret])
        for value in (secret, " ".join(secret.split())):  # one-line messages squeeze runs of whitespace
            refusal = one_line(f"region: {quote(value)} is not allowed")
            assert refusal in {"region: '***' is not allowed", "region: '***...' is not allowed"}, refusal
        return 0

    assert main([]) == 0


def test_secrets_learned_outside_a_command_are_not_kept() -> None:
    """A library call (a test, a consumer's script) that reads a stack file outside a command leaves nothing
    for a later command in the same thread to hide."""
    hide_known_secrets([SECRET])
    assert printable(SECRET) == SECRET


def test_a_long_known_secret_cut_by_a_quote_is_hidden(capsys: pytest.CaptureFixture[str]) -> None:
    """A quote shows a value's first 40 characters: the part of a long secret that shows is hidden, looked for only
    as long as a quote can show (an attacker's 250,000-character ESC secret took minutes)."""
    secret = "".join(f"Zebra{index}Horse" for index in range(2000))

    @guarded("probe")
    def main(argv: list[str] | None = None) -> int:
        hide_known_secrets([secret])
        print(f"region: {quote('a' * 30 + secret)} is not allowed")
        return 0

    assert main([]) == 0
    assert capsys.readouterr().out == f"region: '{'a' * 30}***...' is not allowed\n"


def test_a_known_secret_is_hidden_in_another_case_and_between_other_separators(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A refusal that made a config key of a variable named with a secret value showed it as `zq9SecretValue77xyz`
    (an attacker); a value of fewer than 8 letters and digits is not looked for so (many texts hold a few)."""

    @guarded("probe")
    def main(argv: list[str] | None = None) -> int:
        hide_known_secrets(["ZQ9_SECRET_VALUE_77XYZ", "Ab-1"])
        print("set --secret zq9SecretValue77xyz; ZQ9 secret-value 77 XYZ; zq9-secret stays; ab1 stays")
        return 0

    assert main([]) == 0
    assert capsys.readouterr().out == "set --secret ***; ***; zq9-secret stays; ab1 stays\n"


def test_a_path_this_user_may_not_read_is_bad_input_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    """`check-policies OLD/resources.json` in a folder of mode 000 ended as a defect, exit 1 (an attacker): whether a
    path is a folder is asked first, and Python's `Path.is_dir` raises on a folder it may not search."""

    @guarded("probe")
    def main(argv: list[str] | None = None) -> int:
        raise PermissionError(13, "Permission denied", "old\nverdict: ok/resources.json")

    assert main([]) == 2
    assert capsys.readouterr().err == "probe: old\\nverdict: ok/resources.json: permission denied to this user\n"


def test_what_the_console_s_encoding_cannot_write_is_escaped(monkeypatch: pytest.MonkeyPatch) -> None:
    """An attacker: `--out` with an `é` under PYTHONIOENCODING=ascii rendered every file, then failed on the summary
    line (UnicodeEncodeError, exit 1)."""
    written = io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(written, encoding="ascii"))

    @guarded("probe")
    def main(argv: list[str] | None = None) -> int:
        print("rendered -> /tmp/é/out")
        return 0

    assert main([]) == 0
    sys.stdout.flush()
    assert written.getvalue() == b"rendered -> /tmp/\\xe9/out\n"


def test_a_message_made_while_a_command_runs_hides_a_known_secret_before_it_is_cut() -> None:
    """A refusal is cut at its length limit: cut first, a long secret's first part stayed, which no later filter
    finds (a review)."""
    from stacks.load.loader import InvalidConfig

    secret = "Zq9SecretValue77xyz" * 20
    messages: list[str] = []

    @guarded("probe")
    def main(argv: list[str] | None = None) -> int:
        hide_known_secrets([secret])
        messages.append(str(InvalidConfig(f"engine.extraEnv.{secret}: is named like a secret")))
        return 0

    assert main([]) == 0
    assert messages == ["engine.extraEnv.***: is named like a secret"]
    assert str(InvalidConfig(f"x {secret}")) != "x ***"  # outside a command nothing is known


def test_a_permission_error_that_names_no_path_is_a_failure_not_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    @guarded("probe")
    def main(argv: list[str] | None = None) -> int:
        raise PermissionError(1, "Operation not permitted")

    assert main([]) == 1
    assert capsys.readouterr().err.startswith("probe: failed (PermissionError: ")
