"""The files around the policy pack: the pack's pins, the pull-request workflow."""

from __future__ import annotations

import tomllib

import yaml

from tests.rendered import ROOT


def test_pack_files_pin_the_locked_versions() -> None:
    locked = {
        package["name"]: package["version"] for package in tomllib.loads((ROOT / "uv.lock").read_text())["package"]
    }
    requirements = (ROOT / "policies" / "requirements.txt").read_text().split()
    assert requirements == [f"pulumi=={locked['pulumi']}", f"pulumi-policy=={locked['pulumi-policy']}"]
    project = yaml.safe_load((ROOT / "policies" / "PulumiPolicy.yaml").read_text())
    assert project["runtime"]["name"] == "python"


def test_pull_request_workflow_runs_the_pack_where_credentials_exist() -> None:
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "pull-request.yml").read_text())
    assert "pull_request" in workflow[True]  # YAML 1.1 reads the key `on` as True
    assert workflow["permissions"]["id-token"] == "write"
    steps = workflow["jobs"]["preview"]["steps"]
    uses = {step.get("uses", "").split("@")[0]: step for step in steps}
    # The current majors, checked at their sources (pulumi/actions v7.0.0, pulumi/auth-actions v2,
    # google-github-actions/auth v3).
    assert uses["pulumi/actions"]["uses"] == "pulumi/actions@v7"
    assert uses["pulumi/auth-actions"]["uses"] == "pulumi/auth-actions@v2"
    assert uses["google-github-actions/auth"]["uses"] == "google-github-actions/auth@v3"
    assert uses["pulumi/actions"]["with"]["policyPacks"] == "policies"
    assert uses["pulumi/actions"]["with"]["command"] == "preview"
    assert {"workload_identity_provider", "service_account"} <= set(uses["google-github-actions/auth"]["with"])
    assert {"actions/setup-python", "astral-sh/setup-uv"} <= set(uses)
    assert "matrix" in workflow["jobs"]["preview"]["strategy"]
    # Every step after the gate runs only when the gate found credentials.
    assert steps[0]["id"] == "credentials"
    assert all("steps.credentials.outputs.run == 'true'" in step["if"] for step in steps[1:])
    offline = "\n".join(step.get("run", "") for step in workflow["jobs"]["offline-preview"]["steps"])
    assert "make render" in offline and ".venv/bin/preview" in offline and "GITHUB_STEP_SUMMARY" in offline
    assert workflow["jobs"]["offline-preview"]["permissions"] == {"contents": "read"}
