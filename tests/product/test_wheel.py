"""The package a consumer installs: the wheel holds one import name of the project's own and prefixed
commands, so a program with its own `components/` imports the serving stack from it and still gets its
own package. Built with the pinned hatchling from the dev environment and installed offline."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

import hatch_build  # the build hook, at the repository root (on sys.path in the project's environment)
from tests.rendered import ROOT

IMPORT_NAME = hatch_build.IMPORT_NAME
UV = ROOT / ".tools" / "bin" / "uv"

CONSUMER_PROGRAM = """
import pulumi
import components
from gke_b200_serving.stacks.serving_stack import ServingStack

assert components.WIDGET == "the consumer's own", components.__file__
stack = ServingStack("team-a", {
    "environment": "dev",
    "project": "my-llm-dev",
    "hf_token": pulumi.Output.secret("hf_offline_placeholder"),
    "capacity": {"nodes": 2},
})
pulumi.export("cluster", stack.cluster_name)
pulumi.export("widget", components.WIDGET)
"""
# Runs the consumer's program under the package's own offline engine (the SDK's mocks) and reports.
RUNNER = """
import json, sys
from collections import Counter
from pathlib import Path
from gke_b200_serving.commands.engine import mocks
from gke_b200_serving.commands.stackfile.stack_settings import load_stack_settings

result = mocks.run_program(load_stack_settings("dev", root=Path(".")), program=Path("program.py"))
print(json.dumps({
    "types": Counter(registration.type for registration in result.registrations),
    "outputs": {key: value for key, value in result.outputs.items() if isinstance(value, str)},
    "components": sys.modules["components"].__file__,
    "generic": sorted(name for name in ("commands", "common", "policies", "schemas", "stacks") if name in sys.modules),
}))
"""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    built = subprocess.run(
        [sys.executable, "-c", f"import hatchling.build as b; print(b.build_wheel({str(out)!r}))"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    return out / built.stdout.split()[-1]


def test_the_wheel_holds_one_import_name_and_prefixed_commands(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        (entry_points,) = [name for name in names if name.endswith(".dist-info/entry_points.txt")]
        scripts = archive.read(entry_points).decode().split("[console_scripts]")[1].split()
        serving_stack = archive.read(f"{IMPORT_NAME}/stacks/serving_stack.py").decode()
    assert {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")} == {IMPORT_NAME}
    assert f"{IMPORT_NAME}/stacks/capacity/measurements.yaml" in names, "data files ship with their package"
    assert f"{IMPORT_NAME}/schemas/vllm/vllm-0.19.0.json" in names
    commands = scripts[0::3]
    assert commands and all(command.startswith("gke-b200-") for command in commands), commands
    assert all(target.startswith(f"{IMPORT_NAME}.") for target in scripts[2::3])
    assert f"from {IMPORT_NAME}.stacks.program import build" in serving_stack
    assert "\nfrom stacks." not in serving_stack
    provider = (ROOT / "provider" / "__main__.py").read_text()
    assert f"from {IMPORT_NAME}.stacks.serving_stack import" in provider, "the provider runs on the installed wheel"


def test_every_page_the_product_points_to_ships_in_the_wheel(wheel: Path) -> None:
    """plan.md, changes.md and messages cite pages as docs/NAME.md: an installed package holds them too."""
    cited = {
        match
        for package in hatch_build.PACKAGES
        for path in (ROOT / package).rglob("*.py")
        for match in re.findall(r"docs/[\w.-]+\.md", path.read_text(encoding="utf-8"))
    }
    assert "docs/time-to-serve.md" in cited, "the scan found what plan.md cites"
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    assert {page for page in cited if f"{IMPORT_NAME}/{page}" not in names} == set()


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel installed into a folder of its own (no dependencies: they come from this environment)."""
    if not UV.exists():
        pytest.skip("uv is installed by `make setup`")
    target = tmp_path_factory.mktemp("site")
    installed = subprocess.run(
        [
            str(UV),
            "pip",
            "install",
            "--offline",
            "--no-deps",
            "--python",
            sys.executable,
            "--target",
            str(target),
            str(wheel),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert installed.returncode == 0, installed.stderr
    return target


def consumer_environment(consumer: Path, target: Path) -> dict[str, str]:
    """-S: no site-packages .pth files, so the repository's own editable install (its root on sys.path)
    is not seen; the dependencies come from the environment's site-packages, after the consumer and the
    installed wheel."""
    path = os.pathsep.join([str(consumer), str(target), sysconfig.get_paths()["purelib"]])
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PULUMI_", "PYTHON"))}
    return {**env, "PYTHONPATH": path, "PYTHONDONTWRITEBYTECODE": "1"}


def consumer_run(arguments: list[str], consumer: Path, target: Path) -> subprocess.CompletedProcess[str]:
    """`python -S ARGUMENTS` in the consumer's folder, on the installed wheel (`consumer_environment`)."""
    return subprocess.run(
        [sys.executable, "-S", *arguments],
        cwd=consumer,
        env=consumer_environment(consumer, target),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_a_consumer_with_its_own_components_package_imports_the_serving_stack(installed: Path, tmp_path: Path) -> None:
    consumer = tmp_path / "consumer"
    (consumer / "components").mkdir(parents=True)
    (consumer / "components" / "__init__.py").write_text('WIDGET = "the consumer\'s own"\n')
    (consumer / "Pulumi.yaml").write_text("name: consumer\nruntime: python\n")
    (consumer / "Pulumi.dev.yaml").write_text("config: {}\n")
    (consumer / "program.py").write_text(CONSUMER_PROGRAM)
    (consumer / "runner.py").write_text(RUNNER)
    ran = consumer_run(["runner.py"], consumer, installed)
    assert ran.returncode == 0, ran.stderr[-3000:]
    report = json.loads(ran.stdout.strip().splitlines()[-1])
    assert report["components"] == str(consumer / "components" / "__init__.py")
    assert report["generic"] == [], "the package imports none of its packages by a generic name"
    assert report["outputs"] == {"cluster": "llm-serving", "widget": "the consumer's own"}
    assert report["types"]["gcp:container/cluster:Cluster"] == 1
    assert report["types"]["kubernetes:apps/v1:Deployment"] >= 1


def test_the_installed_commands_run_beside_a_consumers_own_commands_package(installed: Path, tmp_path: Path) -> None:
    """`gke-b200-plan` (its console script's code: the entry module's function) on a stack file of the
    project, from a folder with its own `commands/` package: the command imports its own modules, reads
    the project's Pulumi.yaml from the wheel, and prints the plan (it used to end in a traceback, `No
    module named 'commands'`, and then in `Pulumi.yaml: file not found`)."""
    consumer = tmp_path / "consumer"
    (consumer / "commands").mkdir(parents=True)
    (consumer / "commands" / "__init__.py").write_text('raise ImportError("the consumer\'s own commands")\n')
    stack_file = consumer / "Pulumi.dev.yaml"
    stack_file.write_text((ROOT / "Pulumi.dev.yaml").read_text())
    script = (
        "import sys; sys.argv = ['gke-b200-plan', *sys.argv[1:]]\n"
        f"from {IMPORT_NAME}.commands.entry import plan\nplan()\n"
    )
    ran = consumer_run(["-c", script, str(stack_file)], consumer, installed)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert ran.stdout.startswith("stack dev: 1 A4 node(s)"), ran.stdout[:300]
    # The command speaks under the name it was typed as (it said `plan`, a command the package does not install)
    version = consumer_run(["-c", script, "--version"], consumer, installed)
    assert version.returncode == 0 and version.stdout.startswith("gke-b200-plan "), version.stdout
    refused = consumer_run(["-c", script, str(stack_file), "--no-such-flag"], consumer, installed)
    assert refused.returncode == 2 and refused.stderr.startswith("gke-b200-plan: "), refused.stderr


def test_the_installed_preview_reads_its_table_of_the_settings_traced(installed: Path, tmp_path: Path) -> None:
    """The wheel's modules import the project under its own name; the preview's table of the stack
    settings behind each input, written from the repository's files, is current all the same."""
    consumer = tmp_path / "consumer"
    consumer.mkdir()
    module = f"{IMPORT_NAME}.commands.preview.traced_table"
    run = consumer_run(["-c", f"import {module} as t; print(t.current_table() is not None)"], consumer, installed)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "True", "the table is stale (commands/preview/traced_settings.json): run `make docs`"


def test_an_installed_bench_compare_records_only_into_a_file_it_is_given(installed: Path, tmp_path: Path) -> None:
    """The default measurements file of an installed package sits in site-packages: `--record` into it
    is refused in one line (exit 2) and the installed file is left as it was; with --measurements it records."""
    consumer = tmp_path / "consumer"
    consumer.mkdir()
    stack_file = consumer / "Pulumi.dev.yaml"
    stack_file.write_text((ROOT / "Pulumi.dev.yaml").read_text())
    packaged = installed / IMPORT_NAME / "stacks" / "capacity" / "measurements.yaml"
    before = packaged.read_bytes()
    script = (
        "import sys; sys.argv = ['gke-b200-bench-compare', *sys.argv[1:]]\n"
        f"from {IMPORT_NAME}.commands.entry import bench_compare\nbench_compare()\n"
    )
    log = str(ROOT / "tests" / "data" / "bench-job.log")

    def bench_compare(*args: str) -> subprocess.CompletedProcess[str]:
        command = ["-c", script, str(stack_file), log, "--record", "--source", "https://example.com/runs/1", *args]
        return consumer_run(command, consumer, installed)

    refused = bench_compare()
    assert refused.returncode == 2, refused.stderr[-2000:]
    assert refused.stderr.count("\n") == 1 and "--measurements FILE" in refused.stderr
    assert packaged.read_bytes() == before
    own = consumer / "measurements.yaml"
    own.write_bytes(before)
    recorded = bench_compare("--measurements", str(own))
    assert recorded.returncode in (0, 3), recorded.stderr[-2000:]
    assert own.read_bytes() != before and packaged.read_bytes() == before


def test_the_rewrite_prefixes_the_projects_imports_only() -> None:
    source = (
        "from stacks.config import x\nimport stacks.config as config\n    from components import y\n"
        "from stacksmith import z\nimport pulumi\n"
    )
    assert hatch_build.namespaced(source, "m.py") == (
        f"from {IMPORT_NAME}.stacks.config import x\nimport {IMPORT_NAME}.stacks.config as config\n"
        f"    from {IMPORT_NAME}.components import y\nfrom stacksmith import z\nimport pulumi\n"
    )
    with pytest.raises(ValueError, match="cannot be namespaced"):
        hatch_build.namespaced("import stacks.config\n", "m.py")
