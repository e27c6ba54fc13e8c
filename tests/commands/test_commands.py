"""The console commands behave alike: one way to name a stack, `--version`, every argument and the exit
codes in `--help`, and a quiet end when the reader of standard output goes away."""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import subprocess
import sys
import tomllib
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

import pytest

from commands import entry
from commands.bench_compare.command import bench_compare_main
from commands.check_policies import runner
from commands.io.cli import StackNameError, StackRef, stack_ref
from commands.io.console import EXIT_CLOSED_PIPE
from commands.plan.command import plan_main
from commands.preview import command as preview
from commands.render import command as render
from tests.rendered import ROOT, RenderedStack, run_main

COMMANDS: dict[str, Callable[[list[str] | None], int]] = {
    "render": render.main,
    "preview": preview.main,
    "check-policies": runner.main,
    "plan": plan_main,
    "bench-compare": bench_compare_main,
}


def test_every_console_script_is_covered_here() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert set(scripts) == set(COMMANDS)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_console_script_starts_in_the_entry_module(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its Ctrl-C handler is in place before the command's imports (commands/entry.py), and it runs the
    command's `main`."""
    module, function = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"][name].split(":")
    assert module == entry.__name__, f"{name} starts in {module}, not in commands/entry.py"
    started: list[Callable[..., int]] = []

    def imported(module: str, attribute: str) -> Callable[[], int]:
        started.append(getattr(importlib.import_module(module), attribute))
        return lambda: 0

    monkeypatch.setattr(entry, "_imported", imported)
    handler = signal.getsignal(signal.SIGINT)
    try:
        with pytest.raises(SystemExit):
            getattr(entry, function)()
    finally:
        signal.signal(signal.SIGINT, handler)
    assert started == [COMMANDS[name]]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("prod", StackRef("prod")),
        ("my-org/gke-b200-serving/prod", StackRef("prod", project="gke-b200-serving")),
        ("my-org/prod", StackRef("prod")),
        ("Pulumi.prod.yaml", StackRef("prod", Path("Pulumi.prod.yaml"))),
        ("stacks/Pulumi.eu-west.yml", StackRef("eu-west", Path("stacks/Pulumi.eu-west.yml"))),
        ("/tmp/other.yaml", StackRef("other", Path("/tmp/other.yaml"))),
    ],
)
def test_a_stack_is_a_name_or_a_stack_file(text: str, expected: StackRef) -> None:
    assert stack_ref(text) == expected


@pytest.mark.parametrize(
    "text",
    # a stack's name is a folder of the output: `..` rendered into the parent of --out
    ["", "a b", "a/b/c/d", "prod/", "x" * 101, "Pulumi.a b.yaml", "dev;rm", "..", ".", "org/..", "Pulumi....yaml"],
)
def test_what_names_no_stack_is_refused(text: str) -> None:
    with pytest.raises(StackNameError):
        stack_ref(text)


@pytest.mark.parametrize("form", ["{}", "my-org/gke-b200-serving/{}", "Pulumi.{}.yaml"])
def test_a_stack_named_like_a_secret_is_refused_as_its_argument(form: str) -> None:
    """An attacker: a stack file named after a GitHub token rendered up to the file scan, which refused it with exit 1
    and a hint about `pulumi config set --secret`, naming no argument."""
    token = "ghp_" + "aB3d" * 9
    with pytest.raises(StackNameError, match=r"^stack name: holds a GitHub token") as refused:
        stack_ref(form.format(token))
    assert token not in str(refused.value)


# The commands that take a STACK, with what else each needs to reach it.
STACK_COMMANDS = {"render": (render.main, ()), "plan": (plan_main, ()), "bench-compare": (bench_compare_main, ("-",))}


@pytest.mark.parametrize("name", sorted(STACK_COMMANDS))
def test_a_stack_of_another_project_is_refused(name: str) -> None:
    """`render myorg/otherproject/dev` rendered this project's dev (an attacker); the Pulumi CLI refuses it. Each
    command names itself before the line (`plan` printed it bare)."""
    main, more = STACK_COMMANDS[name]
    outcome = run_main(main, "my-org/other-project/dev", *more)
    assert outcome.returncode == 2 and outcome.stderr.count("\n") == 1
    assert outcome.stderr.startswith(
        f"{name}: stack project 'other-project' is not this project ('gke-b200-serving' in Pulumi.yaml)"
    )


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_version_comes_from_the_package_metadata(name: str) -> None:
    run = run_main(COMMANDS[name], "--version")
    assert run.returncode == 0
    assert run.stdout.strip() == f"{name} {metadata.version('b200-serving')} (b200-serving)"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_help_describes_every_argument_and_the_exit_codes(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    parsers: list[argparse.ArgumentParser] = []

    def capture(parser: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        parsers.append(parser)
        raise SystemExit(0)

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", capture)
    monkeypatch.setattr(argparse.ArgumentParser, "parse_intermixed_args", capture)  # bench-compare's
    run_main(COMMANDS[name])
    (parser,) = parsers
    for action in parser._actions:
        assert action.help, f"{name}: {action.dest} has no help text"
    assert parser.epilog is not None
    codes = [line.split()[0] for line in parser.epilog.splitlines() if line[:5].strip().isdigit()]
    assert {"0", "2", str(EXIT_CLOSED_PIPE)} <= set(codes)
    monkeypatch.undo()
    helped = run_main(COMMANDS[name], "--help")
    assert helped.returncode == 0
    assert "exit status:" in helped.stdout


def test_plan_takes_a_stack_file_as_well_as_a_name() -> None:
    by_name = run_main(plan_main, "prod", "--json")
    by_file = run_main(plan_main, str(ROOT / "Pulumi.prod.yaml"), "--json")
    assert by_name.returncode == by_file.returncode == 0
    assert by_name.stdout == by_file.stdout


@pytest.mark.parametrize(
    ("name", "args"), [("render", ["dev prod"]), ("plan", ["dev prod"]), ("bench-compare", ["dev prod", "-"])]
)
def test_a_bad_stack_name_is_one_line(name: str, args: list[str]) -> None:
    run = run_main(COMMANDS[name], *args)
    assert run.returncode == 2
    assert run.stderr.count("\n") == 1 and "a stack name may only contain" in run.stderr


def test_check_policies_names_the_stack_the_same_way(dev: RenderedStack) -> None:
    resources = dev.directory / "resources.json"
    by_file = run_main(runner.main, str(resources), "--stack", "Pulumi.dev.yaml")
    by_name = run_main(runner.main, str(resources), "--stack", "dev")
    assert by_file == by_name


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("plan", ["prod", "--json"]),
        ("plan", ["prod"]),
        ("check-policies", ["{dev}/resources.json"]),
        ("render", ["dev", "--out", "{tmp}/out"]),
        ("preview", ["{dev}", "{dev}", "--out", "{tmp}/changes"]),
        ("bench-compare", ["dev", "tests/data/bench-job.log"]),
    ],
    ids=lambda value: value if isinstance(value, str) else " ".join(value),
)
def test_a_closed_pipe_ends_quietly(name: str, args: list[str], tmp_path: Path, dev: RenderedStack) -> None:
    """`plan prod --json | head -c1`: standard output is a pipe nobody reads any more."""
    module, function = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"][name].split(":")
    reader, writer = os.pipe()
    os.close(reader)
    try:
        completed = subprocess.run(
            [
                sys.executable,
                "-c",
                f"import sys; from {module} import {function}; sys.exit({function}())",
                *[arg.format(tmp=tmp_path, dev=dev.directory) for arg in args],
            ],
            cwd=ROOT,
            stdout=writer,
            stderr=subprocess.PIPE,
            text=True,
            timeout=240,
            check=False,
        )
    finally:
        os.close(writer)
    assert "Traceback" not in completed.stderr
    assert "BrokenPipe" not in completed.stderr
    assert completed.returncode == EXIT_CLOSED_PIPE, completed.stderr


def _run_without(stream: str, name: str, args: list[str]) -> subprocess.CompletedProcess[str]:
    """The console script NAME run with standard output (`>&-`) or error (`2>&-`) closed: Python then
    starts with sys.stdout or sys.stderr None."""
    module, function = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"][name].split(":")
    closing = {"stdout": ">&-", "stderr": "2>&-"}[stream]
    return subprocess.run(
        [
            "sh",
            "-c",
            f'exec "$@" {closing}',
            "sh",
            sys.executable,
            "-c",
            f"import sys; from {module} import {function}; sys.exit({function}())",
            *args,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


@pytest.mark.parametrize(
    ("name", "args"),
    [("plan", ["dev", "--json"]), ("render", ["dev", "--out", "{tmp}/out"])],
    ids=lambda value: value if isinstance(value, str) else " ".join(value),
)
def test_a_closed_stdout_ends_as_a_closed_pipe(name: str, args: list[str], tmp_path: Path) -> None:
    completed = _run_without("stdout", name, [arg.format(tmp=tmp_path) for arg in args])
    assert completed.returncode == EXIT_CLOSED_PIPE, completed.stderr
    assert "Error" not in completed.stderr and "Traceback" not in completed.stderr


def test_a_closed_stderr_puts_no_error_on_stdout() -> None:
    completed = _run_without("stderr", "plan", ["nosuch"])
    assert completed.returncode == 2
    assert completed.stdout == ""
