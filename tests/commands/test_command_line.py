"""The commands a user types: the commands of the README and docs/ exist as written, `make` does what it says."""

from __future__ import annotations

import re
import shlex
import subprocess
import tomllib

import pytest

from tests.conftest import pytest_report_header
from tests.rendered import ROOT, STACK_FILES

# Tools the README expects the user to have (the deploy section) or that every machine has.
EXTERNAL_COMMANDS = {"pulumi", "gcloud", "kubectl", "cp", "python", "git", "curl", "cd", "echo"}
SHELL_SEPARATORS = re.compile(r"\s*(?:&&|\|\||;|\|)\s*")


def readme_commands() -> list[str]:
    """Every command in the bash blocks of the README and docs/, comments dropped, `a && b` split in two."""
    text = "".join(path.read_text() for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))])
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        for line in block.splitlines():
            command = line.split("  #", 1)[0].strip()
            if command and not command.startswith("#"):
                commands += [part for part in SHELL_SEPARATORS.split(command) if part]
    return commands


def console_scripts() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return set(project["scripts"])


def make_dry_run(*args: str) -> str:
    run = subprocess.run(["make", "-n", "-B", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_the_readme_has_commands() -> None:
    assert any(command.startswith("make render") for command in readme_commands())


@pytest.mark.parametrize("command", readme_commands())
def test_readme_command_works_as_written(command: str) -> None:
    words = shlex.split(command)
    program = words[0]
    if program == "make":
        make_dry_run(*words[1:])
    elif program.startswith(".venv/bin/"):
        assert program.removeprefix(".venv/bin/") in console_scripts(), f"{program} is not a console script"
    elif "/" in program:
        assert program.startswith(("policies/venv/bin/", "build/")), f"{command}: {program} is made by nothing"
    else:
        assert program in EXTERNAL_COMMANDS, (
            f"{command}: {program} is not on a fresh machine's PATH (use make, or .venv/bin/{program})"
        )


def test_make_render_takes_stacks_as_words() -> None:
    renders = [line for line in make_dry_run("render", "prod").splitlines() if line.startswith(".venv/bin/render")]
    assert renders == [".venv/bin/render prod"], "make render prod must not render dev"
    assert ".venv/bin/render prod staging" in make_dry_run("render", "prod", "staging")
    assert ".venv/bin/render staging" in make_dry_run("render", "STACK=staging")


def test_render_installs_no_dev_tools_and_test_does() -> None:
    render_syncs = [line for line in make_dry_run("render", "STACK=dev").splitlines() if " sync " in line]
    assert render_syncs and all("--no-dev" in line for line in render_syncs)
    test_syncs = [line for line in make_dry_run("test").splitlines() if " sync " in line]
    assert test_syncs and all("--no-dev" not in line for line in test_syncs)


def test_pytest_names_every_stack_file_it_checks() -> None:
    header = pytest_report_header()
    for name in STACK_FILES:
        assert f"Pulumi.{name}.yaml" in header
    assert set(STACK_FILES) == {path.name.split(".")[1] for path in ROOT.glob("Pulumi.*.yaml")}
