"""The console filter of every command: the stack's own secret values it learned, hidden as a refusal
shows them, and only while that command runs."""

from __future__ import annotations

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
