"""Every file a command reads, and every argument, is hostile input: each of the five commands
answers a device, a FIFO, a directory, an oversized or deeply nested file, NaN, a bad policy config
or a bad argument with exit 2 and one line naming it; a token it was given never reaches what it
writes or prints; an unexpected failure is one line (exit 1), a closed pipe is quiet."""

from __future__ import annotations

import ast
import contextlib
import io
import json
import os
import runpy
import shutil
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from commands.bench_compare.command import CLIENT_COUNTS, CLIENT_FIGURES, bench_compare_main, checked_result
from commands.check_policies import runner
from commands.check_policies.pack_config import PolicyConfigError, check_policy_config
from commands.check_policies.runner import main as check_policies_main
from commands.io import output
from commands.io.records import validated_records
from commands.plan.command import plan_main
from commands.preview.command import main as preview_main
from commands.render.command import main as render_main
from common.input_files import InputError
from policies.pack import POLICIES
from tests.rendered import ROOT, CommandRun, RenderedStack, run_main, run_render

DATA = ROOT / "tests" / "data"
CANARY = "hf_CanaryToken0123456789abcdefXYZ"
DEEP_LIST = "[" * 100_000 + "]" * 100_000
Main = Callable[[list[str] | None], int]

# a JSON web token (header, payload, signature), put together so that no line of this file is one
JWT = ".".join(["eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9", "eyJzdWIiOiIxMjM0NTY3ODkwIn0", "c2lnbmF0dXJlLXNpZ25hdHVyZQ"])


def one_line_refusal(outcome: CommandRun, *fragments: str) -> str:
    assert outcome.returncode == 2, outcome.stderr
    assert "Traceback" not in outcome.stderr
    lines = outcome.stderr.splitlines()
    assert len(lines) == 1, outcome.stderr
    assert lines[0].isprintable() and len(lines[0]) <= 400
    for fragment in fragments:
        assert fragment in lines[0]
    return lines[0]


def client_result(**changes: Any) -> dict[str, Any]:
    result: dict[str, Any] = json.loads((DATA / "vllm-bench-client-1.json").read_text())
    for key, value in changes.items():
        if value is None:
            result.pop(key)
        else:
            result[key] = value
    return result


def a_render(directory: Path, records: list[dict[str, Any]]) -> Path:
    output.write_render(directory, {"resources.json": json.dumps(records)})
    return directory


@pytest.fixture(scope="module")
def dev_render(dev: RenderedStack) -> Path:
    """The session's render of dev (read, never written to)."""
    return dev.directory


# ---------------------------------------------------------------- what a path can be


def commands_reading(path: str, dev_render: Path, tmp_path: Path) -> dict[str, tuple[Main, list[str]]]:
    old = tmp_path / "old"
    old.mkdir()
    (old / "resources.json").symlink_to(path if os.path.isabs(path) else Path.cwd() / path)
    resources = str(dev_render / "resources.json")
    return {
        "check-policies": (check_policies_main, [path]),
        "check-policies --config": (check_policies_main, [resources, "--config", path]),
        "bench-compare LOG": (bench_compare_main, ["dev", path]),
        "bench-compare --results": (bench_compare_main, ["dev", "--results", path]),
        "preview": (preview_main, [str(old), str(dev_render), "--out", str(tmp_path / "changes")]),
        "render --config-file": (render_main, ["dev", "--config-file", path, "--out", str(tmp_path / "render")]),
    }


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "directory", "missing"])
def test_a_path_that_is_no_regular_file_is_one_line(kind: str, dev_render: Path, tmp_path: Path) -> None:
    path = {
        "dev-zero": "/dev/zero",
        "fifo": str(tmp_path / "fifo"),
        "directory": str(tmp_path),
        "missing": str(tmp_path / "missing.json"),
    }[kind]
    if kind == "fifo":
        os.mkfifo(path)
    for label, (main, args) in commands_reading(path, dev_render, tmp_path).items():
        outcome = run_main(main, *args)
        line = one_line_refusal(outcome)
        assert Path(path).name in line or "resources.json" in line, f"{label}: {line}"
    assert not (tmp_path / "render").exists() and not (tmp_path / "changes").exists()


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (DEEP_LIST, "nested deeper than"),
        ('{"a": ' * 5_000 + "1" + "}" * 5_000, "nested deeper than"),
        ('[{"x": NaN}]', "NaN is not a JSON number"),
        ("[1, 2", "not valid JSON"),
        ("\xff\xfe", "not valid UTF-8"),
        ("9" * 5_000, "out of range"),
        ('[{"size": 1e400}]', "the number 1e400 is out of range"),
        ("[" + "1" + "0" * 400 + "]", "out of range"),
        ('{"LLM-WGT-003": "mandatory", "LLM-WGT-003": "disabled"}', 'the key "LLM-WGT-003" appears twice'),
    ],
    ids=[
        "deep-list",
        "deep-object",
        "nan",
        "truncated",
        "not-utf8",
        "huge-integer",
        "inf-by-exponent",
        "int-beyond-float64",
        "duplicate-key",
    ],
)
def test_malformed_json_is_one_line_for_every_reader(
    content: str, fragment: str, dev_render: Path, tmp_path: Path
) -> None:
    path = tmp_path / "input.json"
    path.write_bytes(content.encode("latin-1") if content.startswith("\xff") else content.encode())
    readers = commands_reading(str(path), dev_render, tmp_path)
    del readers["bench-compare LOG"], readers["render --config-file"]
    for label, (main, args) in readers.items():
        line = one_line_refusal(run_main(main, *args))
        assert fragment in line, f"{label}: {line}"


def test_a_file_over_the_limit_is_refused_not_read(
    dev_render: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "CONFIG_LIMIT", 64)
    config = tmp_path / "config.json"
    config.write_text("{" + " " * 100 + "}")
    one_line_refusal(
        run_main(check_policies_main, str(dev_render / "resources.json"), "--config", str(config)), "larger than"
    )


@pytest.mark.parametrize(
    "record",
    [
        "not an object",
        {"type": "t", "name": "n", "custom": True, "inputs": {}},
        {"type": "t", "name": "n", "custom": "yes", "inputs": {}, "options": {}},
        {"type": "t", "name": "n", "custom": True, "inputs": {}, "options": {"dependsOn": 5}},
        {"type": "t", "name": "n", "custom": True, "inputs": {}, "options": {}, "parent": 3},
        {"type": "t", "name": "n", "custom": True, "inputs": {}, "options": {"replaceWith": ["a `b` [x](y)"]}},
        {"type": "t", "name": "n", "custom": True, "inputs": {}, "options": {"replacementTriggerSecretDigests": "x"}},
        {"type": "t", "name": "n", "custom": True, "inputs": {}, "options": {}, "secretDigests": "inputs.value"},
    ],
    ids=[
        "not-object",
        "no-options",
        "custom-string",
        "depends-on-number",
        "parent-number",
        "replace-with-markup",
        "trigger-digests-string",
        "secret-digests-string",
    ],
)
def test_a_malformed_resource_record_is_one_line(record: object, dev_render: Path, tmp_path: Path) -> None:
    bad = tmp_path / "resources.json"
    bad.write_text(json.dumps([record]))
    one_line_refusal(run_main(check_policies_main, str(bad)), "record 0")
    old = a_render(tmp_path / "old", [record])  # type: ignore[list-item]
    one_line_refusal(run_main(preview_main, str(old), str(dev_render), "--out", str(tmp_path / "out")), "record 0")


@pytest.mark.parametrize("key", ["dependsOn", "replaceWith"])
def test_a_bad_name_in_an_option_is_refused_without_quoting_it(key: str, dev_render: Path, tmp_path: Path) -> None:
    """An attacker: a password in a hand-edited name list reached the refusal line (and a CI log)."""
    password = "S3cret" + "Passw0rd"
    record = {"type": "t", "name": "n", "custom": True, "inputs": {}, "options": {key: ["a", f"x`admin:{password}@db"]}}
    old = a_render(tmp_path / "old", [record])
    line = one_line_refusal(
        run_main(preview_main, str(old), str(dev_render), "--out", str(tmp_path / "out")), f"options.{key}[1]"
    )
    assert password not in line


@pytest.mark.parametrize("copied_as", ["the same", "another type"])
def test_two_records_of_one_name_are_bad_input(copied_as: str, dev_render: Path, tmp_path: Path) -> None:
    """An attacker: a copy of the serving Deployment with a token in its env, beside it under the same name (or the
    name of a record of another type), passed check-policies with exit 0: its checks read the other record's inputs."""
    records = json.loads((dev_render / "resources.json").read_text())
    deployment = next(record for record in records if record["type"] == DEPLOYMENT)
    copy = json.loads(json.dumps(deployment))
    if copied_as == "another type":
        copy["name"] = next(record["name"] for record in records if record["type"] != DEPLOYMENT)
    records.insert(records.index(deployment), copy)
    (tmp_path / "resources.json").write_text(json.dumps(records))
    one_line_refusal(
        run_main(check_policies_main, str(tmp_path / "resources.json")), f"are both named '{copy['name']}'"
    )


def test_a_record_the_preview_cannot_read_is_bad_input_not_a_crash(dev_render: Path, tmp_path: Path) -> None:
    records = json.loads((dev_render / "resources.json").read_text())
    for record in records:
        if record["type"] == "kubernetes:apps/v1:Deployment":
            record["inputs"]["metadata"] = "not an object"
    old = a_render(tmp_path / "old", records)
    one_line_refusal(
        run_main(preview_main, str(old), str(dev_render), "--out", str(tmp_path / "out")), "inputs.metadata"
    )


def test_a_forged_name_with_line_breaks_adds_no_line_to_the_console(dev_render: Path, tmp_path: Path) -> None:
    """An attacker: a record's name holding line breaks printed lines of its choosing ("verdict: met the plan",
    "all clear") under the preview's refusal and check-policies' violation."""
    forged = "evil\nverdict: met the plan\nall clear"
    records = json.loads((dev_render / "resources.json").read_text())
    network = next(record for record in records if record["type"] == "gcp:compute/network:Network")
    protected = {**json.loads(json.dumps(network)), "name": forged}
    protected["options"]["protect"] = True
    old = a_render(tmp_path / "old", [*records, protected])
    preview = run_main(preview_main, str(old), str(dev_render), "--out", str(tmp_path / "out"))
    one_line_refusal(preview, "'name' is not a name the program makes")  # no name the program makes holds one
    for record in records:
        if record["type"] == DEPLOYMENT:
            record["inputs"]["metadata"]["name"] = forged  # named in dev's advisory on its moving model revision
    (tmp_path / "forged.json").write_text(json.dumps(records))
    checked = run_main(check_policies_main, str(tmp_path / "forged.json"))
    assert "evil verdict: met the plan all clear" in checked.stdout + checked.stderr
    for line in [*preview.stderr.splitlines(), *checked.stdout.splitlines()]:
        assert line not in ("verdict: met the plan", "all clear"), line


def test_a_violation_line_keeps_its_message_whatever_the_name_holds() -> None:
    """A diff review: folded to one line under a length limit taken before the escapes, a name of control
    characters had cut the violation's message off."""
    line = runner.Violation("LLM-SEC-001", "evil" + "\x1b" * 30, "mandatory", "holds a token", "t").line()
    assert line.endswith(": holds a token") and line.isprintable()


def test_a_hand_edited_render_adds_no_markup_of_its_own_to_changes_md(dev_render: Path, tmp_path: Path) -> None:
    """An attacker: an OLD render's output key closed its code span and added a heading and a link, a cost label
    added table cells and an image, and a record's name and the weights image wrote links into changes.md."""
    old = tmp_path / "old"
    shutil.copytree(dev_render, old)
    states = json.loads((old / "states.json").read_text())
    states["outputs"]["converged"]["x` ## Approved <b>LGTM</b> [link](https://attacker.example) `"] = "v"
    (old / "states.json").write_text(json.dumps(states))
    capacity = json.loads((old / "capacity.json").read_text())
    capacity["sources"][0]["costs"][0]["label"] = 'Spot | 1 | 1 | +0 | <img src="https://attacker.example/p.png"> |'
    (old / "capacity.json").write_text(json.dumps(capacity))
    run = run_main(preview_main, str(old), str(dev_render), "--out", str(tmp_path / "out"))
    assert run.returncode == 0, run.stderr
    text = (tmp_path / "out" / "changes.md").read_text()
    assert "- `` x` ## Approved <b>LGTM</b> [link](https://attacker.example) ` `` (removed)" in text
    assert "Spot \\| 1 \\| 1 \\| +0 \\| \\<img" in text and "<img" not in text.replace("\\<img", "")
    for field, value in (("weightsImage", "x](https://attacker.example) **image verified**"),):
        forged = json.loads((old / "states.json").read_text())
        forged[field] = value
        (old / "states.json").write_text(json.dumps(forged))
        one_line_refusal(run_main(preview_main, str(old), str(dev_render), "--out", str(tmp_path / "o2")), field)


DEPLOYMENT = "kubernetes:apps/v1:Deployment"


@pytest.mark.parametrize(
    ("edit", "refusal"),
    [
        (lambda inputs: inputs.update(spec=[]), "inputs.spec must be an object"),
        (lambda inputs: inputs["spec"].update(replicas="x"), "inputs.spec.replicas must be a whole number"),
        (lambda inputs: inputs["spec"].update(replicas=-1), "inputs.spec.replicas must be a whole number"),
        (lambda inputs: inputs["spec"].update(template="pod"), "inputs.spec.template must be an object"),
        (lambda inputs: inputs["spec"]["template"].update(spec=[]), "inputs.spec.template.spec must be an object"),
        (
            lambda inputs: inputs["spec"]["template"]["spec"].update(containers=["vllm"]),
            "inputs.spec.template.spec.containers must be a list of objects",
        ),
        (
            lambda inputs: inputs["spec"]["template"]["spec"]["containers"][0].update(args="--x"),
            "inputs.spec.template.spec.containers[0].args must be a list",
        ),
    ],
    ids=["spec-list", "replicas-text", "replicas-negative", "template-text", "pod-spec-list", "containers", "args"],
)
def test_a_workload_of_another_shape_than_the_api_gives_is_one_line_naming_the_key(
    edit: Any, refusal: str, dev_render: Path, tmp_path: Path
) -> None:
    """Policies read a serving Deployment's spec: of another shape every one of them skipped it (0
    violations, exit 0) and the preview failed deep inside its planner."""
    records = json.loads((dev_render / "resources.json").read_text())
    for record in records:
        if record["type"] == DEPLOYMENT and record["name"] == "llm-vllm-deployment":
            edit(record["inputs"])
    bad = tmp_path / "resources.json"
    bad.write_text(json.dumps(records))
    one_line_refusal(run_main(check_policies_main, str(bad)), f"(llm-vllm-deployment): {refusal}")
    old = a_render(tmp_path / "old", records)
    one_line_refusal(run_main(preview_main, str(old), str(dev_render), "--out", str(tmp_path / "out")), refusal)


# ---------------------------------------------------------------- policy config


RESOURCES_FOR_CONFIG = "resources-for-config"


@pytest.mark.parametrize(
    ("config", "fragment"),
    [
        ({"LLM-SEC-001": 7}, "LLM-SEC-001: 7 is not a valid value"),
        ({"LLM-SEC-001": "strict"}, "is not an enforcement level; allowed: advisory, mandatory, remediate, disabled"),
        ({"LLM-SEC-001": {"enforcementLevel": 1}}, "enforcementLevel: 1 is not an enforcement level"),
        ({"LLM-GPU-03": "mandatory"}, "did you mean 'LLM-GPU-003'"),
        ({"NOT-A-POLICY": "advisory"}, "is not a policy of this pack"),
        # an attacker: a JSON web token as the key was cut to 57 characters, which no longer have a token's shape
        ({JWT: "mandatory"}, '"***" is not a policy of this pack'),
        ({"LLM-SEC-001": JWT}, '"***" is not an enforcement level'),
        ({"LLM-GPU-003": {"maxSpotGraceSecond": 30}}, "did you mean 'maxSpotGraceSeconds'"),
        ({"LLM-GPU-003": {"maxSpotGraceSeconds": "30"}}, "'30' is not of type 'number'"),
        ({"LLM-GPU-003": {"maxSpotGraceSeconds": True}}, "True is not of type 'number'"),
        ({"LLM-GPU-001": {"allowedGpuTypes": "nvidia-b200"}}, "is not of type 'array'"),
        ({"LLM-GPU-001": {"allowedGpuTypes": [8]}}, "allowedGpuTypes[0]: 8 is not of type 'string'"),
        # every setting has a range, also in the schema the engine reads (policies/settings.py)
        (
            {"LLM-GPU-003": {"maxSpotGraceSeconds": -5}},
            "LLM-GPU-003.maxSpotGraceSeconds: -5 is less than the minimum of 0; allowed: a number from 0 to 30",
        ),
        ({"LLM-GPU-003": {"maxSpotGraceSeconds": 1e308}}, "is greater than the maximum of 30"),
        ({"LLM-VLLM-008": {"maxOverallocation": 0}}, "maxOverallocation: 0 is less than the minimum of 1"),
        (
            {"LLM-GPU-004": {"a4Regions": []}},
            "LLM-GPU-004.a4Regions: [] should be non-empty; allowed: a non-empty list",
        ),
        # an attacker: a user and password in a region's place was accepted, and reached policy.json and plan.md
        (
            {"LLM-GPU-004": {"a4Regions": ["admin:Hunt3r2" + "Xyzzy9@x"]}},
            'a4Regions[0]: "admin:***@x" is not allowed; allowed: a non-empty list of Google Cloud region names',
        ),
        (
            {"LLM-GPU-001": {"allowedGpuTypes": ["nvidia-b200\u0007"]}},
            'allowedGpuTypes[0]: "nvidia-b200\\u0007" holds a control character; allowed: a non-empty list of names',
        ),
        # a platform review: Python's `$` matched before the line break, Go's (the engine's) does not
        (
            {"LLM-GPU-004": {"a4Regions": ["us-central1\n"]}},
            'a4Regions[0]: "us-central1\\n" holds a control character; allowed: a non-empty list of Google Cloud',
        ),
        (
            {"LLM-VLLM-009": {"hybridModels": [""]}},
            'hybridModels[0]: "" is not allowed; allowed: a list of names of 1-256 printable ASCII characters',
        ),
        ({"LLM-GPU-002": {"anything": 1}}, "it has no settings"),
        ({"all": {"enforcementLevel": "advisory", "minCpu": 1}}, "only enforcementLevel applies to all policies"),
        (["LLM-SEC-001"], "must be a JSON object"),
        ({"LLM-VLLM-010": {"firstFixedVersion": ""}}, 'firstFixedVersion: "" is not allowed'),
        ({"LLM-VLLM-010": {"firstFixedVersion": "x.y"}}, 'allowed: a string of the default\'s form (default "0.18.1")'),
    ],
)
def test_a_policy_config_that_does_not_fit_the_pack_is_one_line(
    config: object, fragment: str, dev_render: Path, tmp_path: Path
) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    one_line_refusal(run_main(check_policies_main, str(dev_render / "resources.json"), "--config", str(path)), fragment)


@pytest.mark.parametrize(
    "config",
    [
        "",
        "{}",
        '{"LLM-WGT-003": "disabled"}',
        '{"LLM-WGT-003": {"enforcementLevel": "mandatory"}}',
        '{"all": "advisory", "LLM-GPU-003": {"maxSpotGraceSeconds": 25}}',
        '{"LLM-NET-003": {"enforcementLevel": "remediate", "allowedServices": ["x"]}}',
        '{"LLM-VLLM-010": {"firstFixedVersion": "v0.19.0"}}',
        '{"LLM-VLLM-014": {"moeModels": []}, "LLM-GPU-003": {"maxSpotGraceSeconds": 0}}',
    ],
)
def test_policy_configs_the_engine_accepts_are_accepted(config: str, dev_render: Path, tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(config)
    outcome = run_main(check_policies_main, str(dev_render / "resources.json"), "--config", str(path))
    assert outcome.returncode in (0, 1), outcome.stderr
    assert "violation(s) from" in outcome.stderr


# ---------------------------------------------------------------- benchmark results


@pytest.mark.parametrize(
    ("changes", "fragment"),
    [
        ({"completed": None}, "'completed' is missing"),
        ({"duration": float("nan")}, "NaN is not a JSON number"),
        ({"median_ttft_ms": "fast"}, "'median_ttft_ms' is 'fast'; allowed: a finite number"),
        ({"failed": -1}, "'failed' is -1"),
        ({"completed": 2.5}, "whole number"),
        ({"duration": 1e308}, "'duration' is 1e+308 s; allowed: at most 10,000,000 s"),
    ],
)
def test_a_benchmark_result_without_a_usable_figure_is_one_line(
    changes: dict[str, Any], fragment: str, tmp_path: Path
) -> None:
    path = tmp_path / "client-1.json"
    path.write_text(json.dumps(client_result(**changes)))
    one_line_refusal(run_main(bench_compare_main, "dev", "--results", str(path)), fragment)


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ('BENCH_RESULT {"completed": 1}', "'clients' is missing"),
        ("BENCH_RESULT " + DEEP_LIST, "nested deeper than"),
        ('BENCH_RESULT {"clients": NaN}', "NaN is not a JSON number"),
        ("no result here", "no line starting with 'BENCH_RESULT'"),
    ],
)
def test_a_benchmark_log_without_a_usable_result_is_one_line(line: str, fragment: str, tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    log.write_text(f"starting\n{line}\n")
    one_line_refusal(run_main(bench_compare_main, "dev", str(log)), fragment)


def test_a_good_benchmark_log_still_compares() -> None:
    outcome = run_main(bench_compare_main, "dev", str(DATA / "bench-job.log"))
    assert outcome.returncode == 0, outcome.stderr


# ---------------------------------------------------------------- tokens never leave


def test_a_token_in_an_old_render_never_reaches_the_preview_or_the_console(dev_render: Path, tmp_path: Path) -> None:
    records = json.loads((dev_render / "resources.json").read_text())
    for record in records:
        if record["type"] == "kubernetes:apps/v1:Deployment":
            record["inputs"]["metadata"].setdefault("annotations", {})["pasted"] = CANARY
            record["inputs"]["spec"]["template"]["spec"]["containers"][0]["args"].append(f"--api-key={CANARY}")
    records.append(
        {
            "type": "kubernetes:core/v1:ConfigMap",
            "name": CANARY,
            "custom": True,
            "inputs": {"metadata": {"name": "x"}, "data": {CANARY: f"Bearer {CANARY}"}},
            "options": {"dependsOn": [], "protect": False},
            "parent": None,
            "provider": None,
        }
    )
    old = tmp_path / "old"  # edited by hand: `render` itself never writes a token
    old.mkdir()
    (old / "resources.json").write_text(json.dumps(records))
    out = tmp_path / "out"
    for outcome in (
        run_main(preview_main, str(old), str(dev_render), "--out", str(out)),
        run_main(preview_main, str(dev_render), str(old), "--out", str(tmp_path / "out2")),
        run_render("dev", "--out", str(tmp_path / "again"), "--against", str(old)),
    ):
        assert outcome.returncode in (0, 1), outcome.stderr
        assert CANARY not in outcome.stdout + outcome.stderr
    for folder in (out, tmp_path / "out2", tmp_path / "again"):
        for name in ("changes.md", "changes.json"):
            text = (folder / name).read_text()
            assert CANARY not in text and "hf_***" in text, f"{folder.name}/{name}"


def test_a_token_in_a_path_or_an_argument_never_reaches_the_console(tmp_path: Path) -> None:
    path = tmp_path / f"{CANARY}.json"
    for outcome in (
        run_main(check_policies_main, str(path)),
        run_main(plan_main, CANARY),
        run_main(render_main, "dev", "--out", str(tmp_path / "file.txt" / CANARY), "--config-file", str(path)),
        run_main(preview_main, str(path), str(path)),
        run_main(plan_main, "dev", f"--{CANARY}"),
    ):
        assert outcome.returncode == 2
        assert CANARY not in outcome.stdout + outcome.stderr
        # hidden where it is quoted; a stack's name is refused for what it holds, not quoted
        assert "hf_***" in outcome.stderr or "stack name: holds a Hugging Face token" in outcome.stderr


# ---------------------------------------------------------------- arguments, failures, pipes


@pytest.mark.parametrize(
    ("main", "args"),
    [
        (render_main, ["--no-such-option"]),
        (render_main, []),
        (preview_main, ["only-one"]),
        (check_policies_main, ["--config"]),
        (plan_main, ["dev", "--nope"]),
        (bench_compare_main, ["dev"]),
        (bench_compare_main, ["dev", "-", "--latency-band", "1e308"]),
        (plan_main, ["dev", "--measurements="]),
        (render_main, ["dev", "--config-file="]),
    ],
    ids=[
        "render-option",
        "render-nothing",
        "preview-one",
        "check-policies-config",
        "plan-option",
        "bench-nothing",
        "bench-latency-band-past-any-median",
        "plan-empty-path",
        "render-empty-path",
    ],
)
def test_a_bad_argument_is_one_line(main: Main, args: list[str]) -> None:
    one_line_refusal(run_main(main, *args))


@pytest.mark.parametrize(
    ("main", "args"), [(render_main, ["dev"]), (preview_main, ["old", "new"])], ids=["render", "preview"]
)
def test_standard_output_as_the_output_folder_is_refused(
    main: Main, args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--out -` made a folder named `-` in the working directory; a folder is the only output."""
    monkeypatch.chdir(tmp_path)
    line = one_line_refusal(run_main(main, *args, "--out", "-"))
    assert "--out" in line and "standard output" in line and "allowed: a folder path" in line
    assert not any(tmp_path.iterdir())


def test_a_line_break_in_an_output_path_starts_no_line_of_its_own(tmp_path: Path) -> None:
    """Error lines fold a path's line break; the success line printed it raw, so a path wrote a line."""
    outcome = run_render("dev", "--out", str(tmp_path / "out\nverdict: ok"))
    assert outcome.returncode == 0, outcome.stderr
    (line,) = outcome.stdout.splitlines()
    assert line.endswith("out\\nverdict: ok")


@pytest.mark.parametrize("option", ["--against", "--policy-config"])
def test_a_line_break_in_a_refused_input_path_starts_no_line_of_its_own(tmp_path: Path, option: str) -> None:
    """An attacker: `render dev --against $'x\\nverdict: ok'` printed the path's second line as a line of its own."""
    outcome = run_render("dev", option, str(tmp_path / "nope\nverdict: ok"), "--out", str(tmp_path / "out"))
    assert outcome.returncode == 2
    (line,) = outcome.stderr.splitlines()
    assert "nope verdict: ok" in line


def test_a_line_break_in_the_output_path_of_a_refused_render_starts_no_line_of_its_own(tmp_path: Path) -> None:
    """An attacker: the mandatory-violation line printed `--out`'s path raw, ending stderr on a line of its choosing."""
    policies = tmp_path / "policies.json"
    policies.write_text('{"all": "mandatory"}')
    outcome = run_render("dev", "--policy-config", str(policies), "--out", str(tmp_path / "out\nverdict: ok, all"))
    assert outcome.returncode == 1
    assert not any(line.startswith("verdict") for line in outcome.stderr.splitlines())
    assert "out\\nverdict: ok, all/policy.json" in outcome.stderr


def test_a_refused_output_path_leaves_no_folder_it_made(tmp_path: Path) -> None:
    """An attacker: `--out A/B/<300 characters>` was refused (the name is too long) after A and A/B were made."""
    outcome = run_render("dev", "--out", str(tmp_path / "new-a" / "new-b" / ("a" * 300)))
    assert outcome.returncode == 2 and len(outcome.stderr.splitlines()) == 1, outcome.stderr
    assert not any(tmp_path.iterdir())


def entry_modules() -> list[str]:
    """The module each console script runs: the `_run(NAME, MODULE, FUNCTION)` calls of commands/entry.py."""
    calls = [
        node for node in ast.walk(ast.parse((ROOT / "commands" / "entry.py").read_text())) if isinstance(node, ast.Call)
    ]
    modules = [
        call.args[1].value
        for call in calls
        if ast.unparse(call.func) == "_run" and isinstance(call.args[1], ast.Constant)
    ]
    return sorted(f"commands.{module}" for module in modules if isinstance(module, str))


def test_the_entry_points_run_every_command() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert len(entry_modules()) == len(scripts) and "commands.check_policies.runner" in entry_modules()


@pytest.mark.parametrize("module", entry_modules())
@pytest.mark.filterwarnings("ignore:.*found in sys.modules after import of package:RuntimeWarning")
def test_every_command_runs_as_a_module(module: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """`python -m commands.plan.command dev` printed nothing and exited 0: the module had no __main__ block."""
    monkeypatch.setattr(sys, "argv", [module, "--version"])
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout), pytest.raises(SystemExit) as exit_:
        runpy.run_module(module, run_name="__main__", alter_sys=False)
    assert exit_.value.code == 0 and "b200-serving" in stdout.getvalue()


def test_control_characters_in_an_argument_are_escaped(tmp_path: Path) -> None:
    outcome = run_main(check_policies_main, str(tmp_path / "\x1b[31mred\x07.json"))
    line = one_line_refusal(outcome)
    assert "\x1b" not in line and "\x07" not in line and "\\x1b" in line


def test_an_unexpected_failure_is_one_line_exit_1(dev_render: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_: object, **__: object) -> None:
        raise RuntimeError("a defect\nwith a second line")

    monkeypatch.setattr(runner, "check_records", broken)
    outcome = run_main(check_policies_main, str(dev_render / "resources.json"))
    assert outcome.returncode == 1 and outcome.stderr.count("\n") == 1
    assert "check-policies: failed (RuntimeError: a defect with a second line)" in outcome.stderr


class ClosedPipe(io.StringIO):
    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


def test_a_closed_pipe_ends_quietly(dev_render: Path) -> None:
    errors = io.StringIO()
    with contextlib.redirect_stdout(ClosedPipe()), contextlib.redirect_stderr(errors):
        status = plan_main(["dev", "--json"])
    assert status == 141 and errors.getvalue() == ""


# ---------------------------------------------------------------- any JSON at all


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=20,
)
POLICY_CONFIGS = st.dictionaries(
    st.sampled_from([*(policy.name for policy in POLICIES), "all", "LLM-GPU-03"]),
    JSON_VALUES | st.sampled_from(["advisory", "mandatory", "remediate", "disabled"]),
    max_size=4,
)


@settings(max_examples=300, deadline=None)
@given(config=POLICY_CONFIGS | JSON_VALUES)
def test_any_policy_config_is_accepted_or_refused_in_one_line(config: Any) -> None:
    try:
        check_policy_config(config, POLICIES, "config.json")
    except PolicyConfigError as error:
        assert "\n" not in str(error) and str(error).startswith("config.json")


@settings(max_examples=300, deadline=None)
@given(document=JSON_VALUES, result=st.dictionaries(st.sampled_from(CLIENT_COUNTS + CLIENT_FIGURES), JSON_VALUES))
def test_any_records_or_benchmark_result_is_accepted_or_refused_in_one_line(document: Any, result: Any) -> None:
    for check in (
        lambda: validated_records(document, "resources.json"),
        lambda: checked_result(result, "client.json", CLIENT_COUNTS, CLIENT_FIGURES),
    ):
        try:
            check()
        except InputError as error:
            assert "\n" not in str(error)


def test_a_record_s_field_of_another_type_is_not_said_to_be_missing() -> None:
    """An attacker: `"custom": "text"` was refused as a record that lacks 'custom'."""
    record = {"type": "t", "name": "n", "custom": "text", "inputs": {}, "options": {}}
    with pytest.raises(InputError, match=r"^resources.json: record 0 \(n\): 'custom' must be true or false$"):
        validated_records([record], "resources.json")
    with pytest.raises(InputError, match=r"record 0 \(n\) lacks 'custom' \(true or false\)$"):
        validated_records([{key: value for key, value in record.items() if key != "custom"}], "resources.json")
