"""render takes the measurements file and the policy config as plan, bench-compare and check-policies do."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.rendered import ROOT, run_render

RECIPE_MEASUREMENT = "writeup-2026-03-dp8-mtp1-clusterip"


def test_render_reads_another_measurements_file_and_a_policy_config(tmp_path: Path) -> None:
    document = yaml.safe_load((ROOT / "stacks" / "capacity" / "measurements.yaml").read_text())
    document["measurements"] = [item for item in document["measurements"] if item["id"] != RECIPE_MEASUREMENT]
    other = tmp_path / "measurements.yaml"
    other.write_text(yaml.safe_dump(document))
    config = tmp_path / "policy.json"
    config.write_text(json.dumps({"LLM-WGT-003": "disabled"}))
    out = tmp_path / "out"
    run = run_render("dev", "--out", str(out), "--measurements", str(other), "--policy-config", str(config))
    assert run.returncode == 0, run.stderr
    plan = (out / "plan.md").read_text()
    assert "| total tok/s (input + output) | not measured |" in plan, "the recipe's runs are not in that file"
    assert "LLM-WGT-003" not in plan and "LLM-WGT-003" not in run.stderr, "disabled by the policy config"
    assert json.loads((out / "policy.json").read_text())["advisory"] == 0
    # the file is named, its folders (the machine's, a user's home) are not
    assert "the given file measurements.yaml" in plan
    assert str(tmp_path) not in plan and str(tmp_path) not in (out / "capacity.json").read_text()


def test_a_bad_measurements_file_or_policy_config_is_one_line(tmp_path: Path) -> None:
    config = tmp_path / "policy.json"
    config.write_text(json.dumps({"LLM-WGT-003": "bogus"}))
    run = run_render("dev", "--out", str(tmp_path / "a"), "--policy-config", str(config))
    assert run.returncode == 2 and run.stderr.count("\n") == 1
    assert '"bogus" is not an enforcement level' in run.stderr
    run = run_render("dev", "--out", str(tmp_path / "b"), "--measurements", str(tmp_path / "missing.yaml"))
    assert run.returncode == 2 and run.stderr.startswith("invalid measurements file:")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_a_policy_setting_out_of_its_range_is_refused_before_the_render(tmp_path: Path) -> None:
    config = tmp_path / "policy.json"
    config.write_text(json.dumps({"LLM-GPU-003": {"maxSpotGraceSeconds": -5}}))
    run = run_render("dev", "--out", str(tmp_path / "out"), "--policy-config", str(config))
    assert run.returncode == 2 and run.stderr.count("\n") == 1, run.stderr
    assert "LLM-GPU-003.maxSpotGraceSeconds: -5 is less than the minimum of 0" in run.stderr
    assert "allowed: a number from 0 to 30" in run.stderr
    assert not (tmp_path / "out").exists()
