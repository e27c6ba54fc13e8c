import pytest

from common.text import config_key_for, escaped, human_duration, inert, shown_number


def test_durations_are_human_readable() -> None:
    assert human_duration(604_800) == "7 days"
    assert human_duration(5_400) == "1 h 30 min"
    assert human_duration(86_400 + 61) == "1 day 1 min 1 s"
    assert human_duration(0) == "0 s"


def test_numbers_read_as_a_stack_file_spells_them() -> None:
    assert shown_number(4096.5) == "4096.5"
    assert shown_number(-(10**40)) == "a number of about -10^40"
    assert shown_number(10**14) == str(10**14)


def test_what_is_not_printable_is_escaped() -> None:
    assert escaped("a\nb\x1b]0;x\x07\u202e") == "a\\nb\\x1b]0;x\\x07\\u202e"


@pytest.mark.parametrize(
    ("prose", "expected"),
    [
        ("plain [x](y) <b> <= 3", "plain \\[x](y) \\<b> <= 3"),
        ("a `[x](y)` b [c](d)", "a `[x](y)` b \\[c](d)"),  # a code span's text is text already
        ('labels["llm/env"] changed, addresses[0].value', 'labels["llm/env"] changed, addresses[0].value'),
        # a diff review: a value's own backslash had un-escaped the escape, or made a backtick text and a link live
        ("\\[r](https://a) \\<img src=x>", "\\\\\\[r](https\\://a) \\\\\\<img src=x>"),
        ("\\`[two](https://b)`", "\\\\`[two](https://b)`"),  # in a code span: as it is
        ("`` x` [l](u) ` `` after [z](w)", "`` x` [l](u) ` `` after \\[z](w)"),
        ("[x]: https://attacker.example", "\\[x]: https\\://attacker.example"),  # a link reference definition
        ("[a[b]](https://attacker.example)", "\\[a\\[b]](https\\://attacker.example)"),  # a link text with brackets
        # an attacker: GitHub's extended autolinks (a bare URL, www., an e-mail address) linked a forged value; GFM
        # links an address after the text is parsed, escaped or not: a word with an @ is a code span
        (
            "go https://evil.example/x www.evil.example a@evil.example _www.e.com",
            "go https\\://evil.example/x www\\.evil.example `a@evil.example` _www\\.e.com",
        ),
        ("swww.x, user@ mailto:a@b.com `https://k` vllm:num", "swww.x, user@ mailto:`a@b.com` `https://k` vllm:num"),
        # a diff review: a span made beside a code span ran into it
        ("`a`b@c.com (`x`/y@z:path.go) x@_b.com", "`a` `b@c.com` (`x`/y@z:path.go) `x@_b.com`"),
    ],
)
def test_inert_prose_opens_no_link_nor_html(prose: str, expected: str) -> None:
    assert inert(prose) == expected


@pytest.mark.timeout(120)  # a hang guard: linear, well under a second; a sign checked against every span, minutes
@pytest.mark.parametrize("unit", ["`a`[", "[", "` ", "\\[", "a", "a@", "www."])
def test_inert_reads_a_long_hostile_line_once(unit: str) -> None:
    """A value of a hand-edited render may be long: every sign was checked against every code span (100 KB of
    "`a`[": 24 s)."""
    text = unit * (400_000 // len(unit)) + "](x)"
    assert len(inert(text)) >= len(text)


def test_a_name_of_separators_only_gets_a_key_of_its_own() -> None:
    assert config_key_for("__") == "engineSecret"
    assert config_key_for("OPENAI_API_KEY") == "openaiApiKey" and config_key_for("DB PASSWORD") == "dbPassword"
