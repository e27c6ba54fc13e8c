"""What a cited source (a measurement's `source`, `bench-compare --source`) may name: a title, a public
web address, this project's own run; never something only its writer can open."""

from __future__ import annotations

import time

import pytest

from common.sources import WRITEUP, lookalike_host, uncitable


@pytest.mark.parametrize(
    "source",
    [
        WRITEUP,
        "in-cluster benchmark Job of this project (bench-compare --record)",
        "https://github.com/vllm-project/vllm/pull/38083",
        "https://github.com/example/bench/blob/main/notes/bench.md",
        "https://docs.cloud.google.com/kubernetes-engine/docs/how-to/configure-capacity-buffer?hl=en#before",
        "hashicorp/terraform-provider-google#7637",
        "team run 2026-11, 1/2/4 nodes, vLLM 0.19.0, 95K tok/s",
        "raw log file: https://example.com/run.log",
        "https://10.example.com/a, https://localhost.example.com/b, https://172.16.example.com/c",
        "https://example.com/login?next=./x",
        "https://example.com:8443/a.b/c, arXiv:2309.06180, doi:10.1145/3600006.3613165",
        "(see https://example.com/a), https://example.com., https://[2606:4700::1111]/x, http://8.8.8.8/x",
        "write to bench@example.com: subject runs",
        "team run, DP8, MTP-1, B200-8, http://8.8.8.8.nip.io/x, USD $5/h",
        "https://github.com/vllm-project/vllm/pull/38083#issuecomment-1, https://github.com/cli/cli/releases/tag/gh-2",
        "Qwen3.5 test cases MTP-1 and MTP-2",
        "https://people.example.edu/~bob/bench.html",  # a public page under a user's folder
    ],
)
def test_a_title_or_a_public_address_is_citable(source: str) -> None:
    assert uncitable(source) == []


@pytest.mark.parametrize(
    ("source", "named"),
    [
        ("our run, issue #42", "issue #42"),
        ("see PR 12", "PR 12"),
        ("pull request #7", "pull request #7"),
        ("run #7", "#7"),
        ("../notes/bench-run.md", "../notes/bench-run.md"),
        ("./bench.log", "./bench.log"),
        ("notes/bench.md", "notes/bench.md"),
        ("~/bench.log", "~/bench.log"),
        ("run on ~bob/bench", "~bob/bench"),
        ("C:\\runs\\bench.log", "C:\\runs\\bench.log"),
        ("gs://team-bucket/bench/run1.log", "gs://team-bucket/bench/run1.log"),
        ("File:///etc/x", "File:///etc/x"),
        ("http://localhost:3000/d/bench", "http://localhost:3000/d/bench"),
        ("https://grafana.internal.corp/d/x", "https://grafana.internal.corp/d/x"),
        ("http://grafana/d/1", "http://grafana/d/1"),
        ("https://10.0.0.7/runs", "https://10.0.0.7/runs"),
        ("https://172.20.1.1/runs", "https://172.20.1.1/runs"),
        ("https://bench.lan/x", "https://bench.lan/x"),
        ("https://bob@10.0.0.1/x", "https://bob@10.0.0.1/x"),
        ("http://grafana.internal./x", "http://grafana.internal./x"),
        ("https://[::1]/x", "https://[::1]/x"),
        ("https://169.254.169.254/computeMetadata/v1", "https://169.254.169.254/computeMetadata/v1"),
        ("http://100.64.1.2/x", "http://100.64.1.2/x"),
        ("http://[fe80::1%25eth0]/x", "http://[fe80::1%25eth0]/x"),
        ("https://[fd00::7]/x", "https://[fd00::7]/x"),
        ("http://0x7f.1/x", "http://0x7f.1/x"),
        ("http://2130706433/x", "http://2130706433/x"),
        ("http://grafana.monitoring.svc/d", "http://grafana.monitoring.svc/d"),
        ("http://grafana.monitoring.svc.cluster.local:3000/d", "http://grafana.monitoring.svc.cluster.local:3000/d"),
        ("https://metadata.google.internal/x", "https://metadata.google.internal/x"),
        ("https://bench.test/x", "https://bench.test/x"),
        ("see https://10.0.0.1), then", "https://10.0.0.1),"),
        ("https://[::1", "https://[::1"),
        ("D:/runs/bench.log", "D:/runs/bench.log"),
        ("\\\\fileserver\\runs\\bench.log", "\\\\fileserver\\runs\\bench.log"),
        ("git@github.com:team/bench.git", "git@github.com:team/bench.git"),
        ("results in bench.md", "bench.md"),
        ("see_http://10.0.0.1/runs", "http://10.0.0.1/runs"),
        ("JIRA: ML-1", "JIRA: ML-1"),
        ("$HOME/bench.txt", "$HOME/bench.txt"),
        ("${RUNS}/bench", "${RUNS}/bench"),
        ("ticket ML-1234", "ticket ML-1234"),
        ("see JIRA ML-1234", "JIRA ML-1234"),
        ("gh-42", "gh-42"),
        ("https://example.com:99999/x", "https://example.com:99999/x"),
        ("http://10.1.2.3.nip.io/x", "http://10.1.2.3.nip.io/x"),
        ("http://10-1-2-3.sslip.io/x", "http://10-1-2-3.sslip.io/x"),
    ],
)
def test_what_only_its_writer_can_open_is_named(source: str, named: str) -> None:
    assert uncitable(source)[0] == named


def test_two_rules_naming_the_same_words_name_them_once() -> None:
    assert uncitable("Issue 3 of the run") == ["Issue 3"]


@pytest.mark.parametrize(
    "unit",
    [
        "a.",
        "a-",
        "a/",
        "x.y/",
        "#1 ",
        "issue ",
        "a@",
        "http://",
        "a@a:",
        "https://a)",
        "D:/",
        "a.md ",
        "ticket ",
        "a-1.",
    ],
)
def test_a_long_source_is_read_in_one_pass(unit: str) -> None:
    """256 KiB of a repeated piece (a measurement source is at most the measurements file's 1 MiB): each part of
    the rule starts only where it can and is bounded. A scheme part tried from every word boundary to the end
    took 20 s on 64 KiB, so about 320 s here; the linear rule takes about a quarter of a second."""
    text = unit * (2**18 // len(unit))
    started = time.process_time()
    uncitable(text)
    assert time.process_time() - started < 10


@pytest.mark.parametrize("prefix", ["issue", "jira", "ticket:"])
def test_a_keyword_before_a_long_run_of_spaces_is_read_in_one_pass(prefix: str) -> None:
    """Two `\\s*` around an optional colon split the same spaces in quadratic ways (3.8 s on 16,000 spaces)."""
    text = prefix + " " * 2**18 + "!"
    started = time.process_time()
    uncitable(text)
    assert time.process_time() - started < 10


@pytest.mark.timeout(60)  # a hang guard: linear, well under a second; unbounded, tens of minutes
def test_a_long_run_of_letters_is_read_once_for_a_lookalike_host() -> None:
    """An attacker: a measurement's `source` of 0.9 MB of letters, under the file's limit, held `plan` for about an
    hour, each letter starting a scan of the scheme to the run's end."""
    assert lookalike_host("a" * 300_000) is None
    assert lookalike_host("a" * 300_000 + "://cl\u043eud.google.com/x") == "cl\u043eud.google.com"
    assert lookalike_host("see https://cl\u043eud.google.com/docs") == "cl\u043eud.google.com"
