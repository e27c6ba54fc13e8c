"""The shipped table of the setting tracer's answers: current, the same answers as the tracer, and
never read once the files it came from change."""

from __future__ import annotations

import ast
import errno
import hashlib
import importlib.metadata
import inspect
import json
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

import hatch_build  # the build hook, at the repository root (on sys.path in the project's environment)
from commands.preview import traced_table
from commands.preview.args_of_config import ARGS_OF_CONFIG
from commands.preview.setting_sources import (
    composition_settings,
    fields_fed,
    inputs_fed,
    settings_by_component,
    switched_by,
    trace_children,
    trace_composition_settings,
    trace_inputs_fed,
    trace_settings_by_component,
    trace_switched_by,
    traced_children,
    traced_configs,
)
from components.crd_readiness import CrdReadiness
from components.schedule import ScaleSchedule
from components.startup_report import PHASES
from components.vllm import VllmEngine
from stacks import operations, program
from stacks.capacity import measurements
from stacks.config.stack import StackConfig


@pytest.fixture
def fresh_table() -> Iterator[None]:
    """The table on disk read again for this test, and again after it."""
    traced_table.stored_table.cache_clear()
    yield
    traced_table.stored_table.cache_clear()


# What a test that needs the shipped table says when it is stale (a change to a fingerprinted file).
STALE = "commands/preview/traced_settings.json was written from other files: run `make docs`"


def test_the_shipped_table_is_current() -> None:
    """When stale, says which of the files it was written from changed (a new contributor could not tell)."""
    stored = json.loads(traced_table.TABLE_FILE.read_text())["fingerprint"]
    now = traced_table.fingerprint(name for name in stored["files"] if name.endswith(".py"))
    changed = sorted(
        name for name in {*stored["files"], *now["files"]} if stored["files"].get(name) != now["files"].get(name)
    )
    versions = sorted(
        name for name in now["distributions"] if stored["distributions"].get(name) != now["distributions"][name]
    )
    assert traced_table.current_table() is not None, f"{STALE}; changed since: {', '.join(changed + versions)}"


def test_the_table_answers_as_the_tracer_does() -> None:
    assert settings_by_component() == trace_settings_by_component()
    assert composition_settings() == trace_composition_settings()
    assert (
        switched_by("routing.mode")
        == trace_switched_by("routing.mode")
        == {
            "llm-serving:routing:ClusterIpRouting",
            "llm-serving:routing:InferenceGateway",
        }
    )
    for component_type, name, fields in (
        (CrdReadiness.TYPE, "llm-crds", list(settings_by_component()[CrdReadiness.TYPE])),
        # a second component of one type, and a name the table does not hold (followed live)
        (CrdReadiness.TYPE, "llm-gateway-crds", ["name"]),
        (CrdReadiness.TYPE, "another-crds", ["name"]),
        ("llm-serving:serving:HuggingFaceToken", "llm-hf-token", ["name", "namespace"]),
        (VllmEngine.TYPE, "llm-vllm", ["engine.max_num_seqs", "model_revision"]),
    ):
        assert traced_children(component_type, name) == trace_children(component_type, name)
        for field in fields:
            assert inputs_fed(component_type, name, field) == trace_inputs_fed(component_type, name, field), field


def test_every_component_the_program_declares_is_in_the_table() -> None:
    table = traced_table.current_table()
    assert table is not None, STALE
    recorded = {(component_type, name) for component_type, names in table["components"].items() for name in names}
    assert {
        (VllmEngine.TYPE, "llm-vllm"),
        ("llm-serving:routing:InferenceGateway", "llm-gateway"),
        ("llm-serving:gke:ExistingCluster", "llm"),
        ("llm-serving:operations:WarmCapacity", "llm-warm-capacity"),
        ("llm-serving:benchmark:BenchmarkJob", "llm-benchmark"),
    } <= recorded
    # every Args field of each recorded component has its answer
    for component_type, names in table["components"].items():
        for entry in names.values():
            assert set(entry["inputsFed"]) == set(table["settingsByComponent"][component_type])


def _with_startup_report(config: StackConfig, path: Path) -> Path:
    """The repository's measurements with a start-up report of `config`'s configuration, as
    `bench-compare --record` adds one."""
    document = yaml.safe_load(measurements.MEASUREMENTS_FILE.read_text())
    configuration = measurements.configuration_of(config).model_dump(mode="json", by_alias=True)
    document["measurements"].append(
        {
            "id": "own-startup",
            "source": "an own run",
            "date": "2026-11-20",
            "measuredRelease": configuration["vllmRelease"],
            "configuration": configuration,
            "runs": [{"nodes": 1, "totalTokensPerSecond": 90000}],
            "startup": {
                "pods": 1,
                "coldPods": 1,
                "medianSeconds": {phase: 100.0 * (index + 1) for index, phase in enumerate(PHASES)},
                "maxSeconds": {phase: 120.0 * (index + 1) for index, phase in enumerate(PHASES)},
                "conditions": measurements.startup_conditions(config).model_dump(mode="json", by_alias=True),
            },
        }
    )
    path.write_text(yaml.safe_dump(document))
    return path


def test_another_measurements_file_leaves_the_answers_to_the_tracer(tmp_path: Path) -> None:
    # A recorded start-up report of a traced config puts every engine setting behind the schedule's
    # lead: `render --measurements FILE` with it must not read the table, written from the repository's.
    config = traced_configs()[0]
    build = ARGS_OF_CONFIG[ScaleSchedule]
    own_file = _with_startup_report(config, tmp_path / "measurements.yaml")
    with measurements.using(own_file):
        own = fields_fed(build, config)
        assert traced_table.current_table() is None
    assert "engine.maxNumSeqs" in own["steps"]
    assert "engine.maxNumSeqs" not in fields_fed(build, config)["steps"]
    assert traced_table.current_table() is not None, STALE


def test_the_answers_follow_the_measurements_file_in_effect(tmp_path: Path) -> None:
    # Answered from the repository's file first (and cached), then under another one in the same process.
    schedule = ScaleSchedule.TYPE  # type: ignore[attr-defined]
    assert "engine.maxNumSeqs" not in settings_by_component()[schedule]["steps"]
    own_file = _with_startup_report(traced_configs()[0], tmp_path / "measurements.yaml")
    with measurements.using(own_file):
        assert "engine.maxNumSeqs" in settings_by_component()[schedule]["steps"]
    assert "engine.maxNumSeqs" not in settings_by_component()[schedule]["steps"]


def test_the_repositorys_file_by_another_path_reads_the_table(tmp_path: Path) -> None:
    """`--measurements` naming the repository's own file through a link (or a relative path) is that file:
    the preview reads the shipped table instead of tracing every setting live."""
    link = tmp_path / "measurements.yaml"
    link.symlink_to(measurements.MEASUREMENTS_FILE)
    with measurements.using(link):
        assert traced_table.current_table() is not None, STALE
    with measurements.using(_with_startup_report(traced_configs()[0], tmp_path / "own.yaml")):
        assert traced_table.current_table() is None, "another file: the answers follow it live"


def _project_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The project's packages and the table, copied; the fingerprint read from the copy."""
    for package in traced_table.PACKAGES:
        shutil.copytree(
            traced_table.PROJECT_ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    table = tmp_path / traced_table.TABLE_FILE.relative_to(traced_table.PROJECT_ROOT)
    monkeypatch.setattr(traced_table, "PROJECT_ROOT", tmp_path)
    monkeypatch.setattr(traced_table, "TABLE_FILE", table)
    return tmp_path


@pytest.mark.usefixtures("fresh_table")
def test_a_copy_of_the_project_reads_the_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _project_copy(tmp_path, monkeypatch)
    assert traced_table.current_table() is not None, STALE


@pytest.mark.usefixtures("fresh_table")
def test_the_policy_packs_virtualenv_is_no_part_of_the_fingerprint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `pulumi preview --policy-pack policies` makes policies/venv/ (PulumiPolicy.yaml `virtualenv`)
    root = _project_copy(tmp_path, monkeypatch)
    venv = root / "policies" / "venv"
    (venv / "lib" / "site-packages").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (venv / "lib" / "site-packages" / "grpc.json").write_text("{}")
    assert traced_table.current_table() is not None, STALE


@pytest.mark.usefixtures("fresh_table")
@pytest.mark.parametrize(
    "change",
    [
        "a module's text",
        "a data file beside a module",
        "a new data file",
        "a module gone",
        "a package hiding a module",
        "another SDK version",
        "a table that is no JSON",
        "no table",
    ],
)
def test_a_table_from_other_files_is_not_read(change: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _project_copy(tmp_path, monkeypatch)
    if change == "a module's text":
        with (root / "components" / "vllm.py").open("a") as module:
            module.write("\n# changed\n")
    elif change == "a data file beside a module":
        with (root / "stacks" / "capacity" / "measurements.yaml").open("a") as data:
            data.write("\n# changed\n")
    elif change == "a new data file":
        (root / "schemas" / "vllm" / "vllm-9.9.9.json").write_text("{}")
    elif change == "a module gone":
        (root / "components" / "vllm.py").unlink()
    elif change == "a package hiding a module":  # import loads components/hf_token/, not hf_token.py
        (root / "components" / "hf_token").mkdir()
        (root / "components" / "hf_token" / "__init__.py").write_text("from components.hf_token_v2 import *\n")
    elif change == "another SDK version":
        versions = {"pulumi-kubernetes": "0.0.1"}
        real_version = importlib.metadata.version
        monkeypatch.setattr(importlib.metadata, "version", lambda name: versions.get(name) or real_version(name))
    elif change == "a table that is no JSON":
        traced_table.TABLE_FILE.write_text("{")
    else:
        traced_table.TABLE_FILE.unlink()
    assert traced_table.current_table() is None


@pytest.mark.usefixtures("fresh_table")
def test_a_stale_table_leaves_the_answers_to_the_tracer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stale = json.loads(traced_table.TABLE_FILE.read_text())
    stale["settingsByComponent"][CrdReadiness.TYPE]["name"] = ["weights.revision"]  # a wrong answer
    stale["fingerprint"]["distributions"]["pulumi"] = "0.0.1"  # from another SDK
    monkeypatch.setattr(traced_table, "TABLE_FILE", tmp_path / "traced_settings.json")
    traced_table.TABLE_FILE.write_text(json.dumps(stale))
    settings_by_component.cache_clear()
    try:
        assert settings_by_component()[CrdReadiness.TYPE]["name"] == {"routing.serviceName"}
    finally:
        settings_by_component.cache_clear()


def test_the_wheels_modules_fingerprint_as_the_repositorys() -> None:
    table = traced_table.current_table()
    assert table is not None, STALE
    for relative in (name for name in table["fingerprint"]["files"] if name.endswith(".py")):
        source = (traced_table.PROJECT_ROOT / relative).read_text()
        namespaced = hatch_build.namespaced(source, relative)
        assert traced_table.repository_text(namespaced, hatch_build.IMPORT_NAME) == source, relative


def _vllm_entry(table: dict[str, Any]) -> dict[str, Any]:
    entry: dict[str, Any] = table["components"][VllmEngine.TYPE]["llm-vllm"]
    return entry


# Each leaves the fingerprint as written: only the shapes the readers take apart are wrong.
MISSHAPEN: dict[str, Callable[[dict[str, Any]], object]] = {
    "components a list": lambda table: table.update(components=[]),
    "no components": lambda table: table.pop("components"),
    "settingsByComponent a list": lambda table: table.update(settingsByComponent=[]),
    "compositionSettings a number": lambda table: table.update(compositionSettings=5),
    "children a number": lambda table: _vllm_entry(table).update(children=3),
    "a child of one part": lambda table: _vllm_entry(table).update(children=[["v1/Pod"]]),
    "inputsFed a number": lambda table: _vllm_entry(table).update(inputsFed=7),
    "an input fed of one part": lambda table: _vllm_entry(table)["inputsFed"].update({"port": [[1]]}),
    "a list item without its key": lambda table: _vllm_entry(table)["inputsFed"].update(
        {"port": [["kubernetes:apps/v1:Deployment", "qwen-serving", [{"kind": "named"}]]]}
    ),
    # written beside the project's copy with this digest: the old reader read it and matched
    "a fingerprinted file outside the project": lambda table: table["fingerprint"]["files"].update(
        {"../outside.py": hashlib.sha256(b"# outside").hexdigest()}
    ),
}


@pytest.mark.usefixtures("fresh_table")
@pytest.mark.parametrize("change", [None, *MISSHAPEN])
def test_a_misshapen_table_is_not_read(change: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _project_copy(tmp_path / "project", monkeypatch)
    (tmp_path / "outside.py").write_text("# outside")
    table = json.loads(traced_table.TABLE_FILE.read_text())
    if change is not None:
        MISSHAPEN[change](table)
    traced_table.write(table)
    assert (traced_table.stored_table() is None) == (change is not None), STALE if change is None else change


def test_a_write_cut_short_leaves_the_table_as_it_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = tmp_path / traced_table.TABLE_FILE.name
    table.write_text("the table before\n")
    monkeypatch.setattr(traced_table, "TABLE_FILE", table)
    write_text = Path.write_text

    def disk_full(path: Path, text: str, *args: Any, **kwargs: Any) -> int:
        write_text(path, text[: len(text) // 2])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_text", disk_full)
    with pytest.raises(OSError, match="No space left"):
        traced_table.write({"components": {"a": "b" * 100}})
    monkeypatch.undo()
    assert table.read_text() == "the table before\n"
    assert [path.name for path in tmp_path.iterdir()] == [table.name]


@pytest.mark.usefixtures("fresh_table")
@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", ["a FIFO", "a directory", "too large"])
def test_a_table_that_is_no_regular_file_of_its_size_is_not_read(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _project_copy(tmp_path, monkeypatch)
    path = traced_table.TABLE_FILE
    if kind == "a FIFO":
        path.unlink()
        os.mkfifo(path)  # reading it would wait for a writer forever
    elif kind == "a directory":
        path.unlink()
        path.mkdir()
    else:  # the table as written, and more than the bound of spaces after it
        with path.open("ab") as table:
            table.write(b" " * traced_table.MAX_TABLE_BYTES)
    assert traced_table.stored_table() is None


def test_every_component_the_composition_declares_has_its_args_of_config() -> None:
    """A component the composition declares but `ARGS_OF_CONFIG` leaves out names no setting in any preview ("declared
    by no component that stacks/args.py builds"): every component class the composition's modules call is there."""
    called: set[type] = set()
    for module in (program, operations):
        tree = ast.parse(inspect.getsource(module))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                value = getattr(module, node.func.id, None)
                if isinstance(value, type) and issubclass(value, pulumi.ComponentResource):
                    called.add(value)
    assert len(called) >= 15, called
    assert called - set(ARGS_OF_CONFIG) == set()
