"""Day-2 changes previewed from the converged state: the download scaffolding, settings
turned off that the provider keeps, a new token, renamed workloads, and what `changes.md` and
`changes.json` show. Each case renders a changed stack file and previews it as `preview OLD NEW` does."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from commands.io.states import STATES_FILE
from commands.preview.command import load_states, preview_states
from commands.preview.command import main as preview_main
from tests.commands.preview.test_preview import render_with, stack_file_with
from tests.conftest import RenderStack
from tests.rendered import ROOT, RenderedStack, run_main, run_render

CLUSTER = "gcp:container/cluster:Cluster"
SECRET = "kubernetes:core/v1:Secret"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
VOLUME = "kubernetes:core/v1:PersistentVolume"


def scaffolding(records: list[dict[str, Any]]) -> set[str]:
    """The download Job, the fill disk and its volume and claim, and the snapshot, by logical name."""
    return {
        record["name"]
        for record in records
        if record["name"].startswith("llm-weights-")
        and record["name"].endswith(("-download", "-snapshot", "-fill-disk", "-fill-pv", "-fill-pvc"))
    }


def day2(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory, stack: str, label: str, settings: Any
) -> tuple[RenderedStack, RenderedStack, Any]:
    base = render_stack(stack)
    changed = render_with(render_stack, tmp_path_factory, stack, label, settings)
    return base, changed, preview_states(base.states, changed.states)


def converged(stack: RenderedStack) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = json.loads((stack.directory / STATES_FILE).read_text())["converged"]
    return records


# ---------------------------------------------------------------- converged state


def test_a_render_holds_both_states_and_the_converged_one_has_no_scaffolding(dev: RenderedStack) -> None:
    states = json.loads((dev.directory / STATES_FILE).read_text())
    assert states["rendered"] == "firstUp" and states["weightsImage"] == dev.outputs["weightsImage"]
    assert len(scaffolding(states["firstUp"])) == 5 and scaffolding(states["converged"]) == set()
    assert states["firstUp"] == dev.resources


def test_render_converged_is_the_state_every_later_up_keeps(tmp_path: Path, dev: RenderedStack) -> None:
    """`--converged`: the program's own image look-up finds the image (the same code path as a real
    second `up`): no download, no download logs output, and the serving objects unchanged."""
    run = run_render("dev", "--converged", "--out", str(tmp_path / "dev"))
    assert run.returncode == 0, run.stderr
    rendered = RenderedStack(tmp_path / "dev")
    assert rendered.resources == converged(dev)
    assert not rendered.kind("Job") or all("download" not in job["metadata"]["name"] for job in rendered.kind("Job"))
    assert "weightsDownloadLogs" not in rendered.outputs and "weightsDownloadLogs" in dev.outputs
    assert json.loads((rendered.directory / STATES_FILE).read_text())["rendered"] == "converged"


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_a_downloader_change_with_the_image_made_is_no_change(
    stack: str, render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    image = "alpine/git:v2.49.2@sha256:" + "ab" * 32
    settings = {"weights": {"downloader": {"image": image, "retries": 2}}}
    _, _, result = day2(render_stack, tmp_path_factory, stack, "downloader", settings)
    assert result.changes == [] and result.refusals == []
    (note,) = [note for note in result.notes if note.startswith("no change:")]
    assert "download" in note and "gcloud compute images delete" in note and "--refresh" in note


def test_a_revision_change_deletes_only_the_old_serving_objects(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    revision = {"weights": {"revision": "fedcba9876543210fedcba9876543210fedcba98"}}
    _, _, result = day2(render_stack, tmp_path_factory, "dev", "revision", revision)
    deleted = {change.record["type"] for change in result.of("delete")}
    assert deleted == {
        "gcp:compute/disk:Disk",
        "gcp:compute/image:Image",
        "kubernetes:core/v1:PersistentVolume",
        "kubernetes:core/v1:PersistentVolumeClaim",
    }
    assert len(result.of("delete")) == 4 and result.of("replace") == []
    assert len(scaffolding([change.record for change in result.of("create")])) == 5  # the new download runs
    # ... and the `up` after it deletes that scaffolding again (a day-2 review: said nowhere)
    (later,) = [note for note in result.notes if note.startswith("the `up` after this one")]
    assert all(name in later for name in scaffolding([change.record for change in result.of("create")]))
    assert "the weightsDownloadLogs output" in later and "no serving pod moves then" in later
    # dev deletes an old revision's image; prod keeps it (ABANDON), so going back there may clash with it
    assert not any("was made in this project before" in note for note in result.notes)


def test_a_zone_move_replaces_nothing(render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory) -> None:
    _, _, result = day2(render_stack, tmp_path_factory, "dev", "zone-move", {"zones": ["us-central1-c"]})
    assert result.of("replace") == [] and result.refusals == []
    assert scaffolding([change.record for change in result.changes]) == set()


def test_a_render_without_states_is_compared_as_rendered_and_says_so(
    tmp_path: Path, dev: RenderedStack, render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    old = tmp_path / "old"
    old.mkdir()
    (old / "resources.json").write_text((dev.directory / "resources.json").read_text())
    new = render_with(render_stack, tmp_path_factory, "dev", "same", {})
    result = preview_states(load_states(old), new.states)
    assert any(STATES_FILE in note for note in result.notes)


# ---------------------------------------------------------------- settings turned off


def test_private_nodes_off_is_an_update_the_provider_acts_on(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    _, _, result = day2(render_stack, tmp_path_factory, "prod", "public-nodes", {"cluster": {"privateNodes": False}})
    (change,) = result.changes
    assert change.action == "update" and change.record["type"] == CLUSTER
    assert [(entry.path, entry.old, entry.new) for entry in change.inputs] == [
        ("privateClusterConfig.enablePrivateNodes", True, False)
    ]
    assert result.refusals == [] and result.kept == []
    # a platform review: the GKE API sets the default for future nodes; the running ones keep their addresses
    effect = change.inputs[0].effect
    assert effect is not None and "nodes created from then on" in effect.says
    assert "the running A4 nodes keep internal addresses only until they are replaced" in effect.says


def test_dropping_authorized_networks_is_no_change_and_says_what_to_do(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    settings = {"cluster": {"authorizedNetworks": None}}
    _, changed, result = day2(render_stack, tmp_path_factory, "staging", "no-authorized", settings)
    assert result.changes == []
    (kept,) = result.kept
    assert kept.path == "masterAuthorizedNetworksConfig" and kept.explicit_off is None
    assert kept.by_hand and "--no-enable-master-authorized-networks" in kept.by_hand
    assert "resource_container_cluster.go:1790" in kept.source
    (warning,) = [warning for warning in result.warnings if "masterAuthorizedNetworksConfig" in warning]
    assert "no change: the old value stays" in warning and "gcloud container clusters update" in warning
    preview_main_run = run_main(preview_main, str(render_stack("staging").directory), str(changed.directory))
    assert preview_main_run.returncode == 0
    assert "## No change: the old value stays" in (changed.directory / "changes.md").read_text()


# ---------------------------------------------------------------- the token


def test_a_new_token_replaces_the_secret_delete_first_without_showing_it(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    ciphertext = "v1:Zm9yLXRlc3RzLW9ubHk=:not-a-real-ciphertext"
    first = render_with(render_stack, tmp_path_factory, "dev", "token-a", {"hfToken": {"secure": ciphertext}})
    second = render_with(render_stack, tmp_path_factory, "dev", "token-b", {"hfToken": {"secure": ciphertext + "x"}})
    result = preview_states(first.states, second.states)
    (change,) = result.changes
    assert change.record["type"] == SECRET and change.action == "replace"
    assert change.delete_before_replace and "same name" in change.delete_first_by
    (entry,) = change.inputs
    assert entry.path == "stringData.token" and entry.old != entry.new
    assert entry.old.startswith("[secret, ciphertext sha256:") and entry.new.startswith("[secret, ciphertext sha256:")
    assert any("cannot decrypt" in warning for warning in result.warnings)
    for rendered in (first, second):
        assert (
            ciphertext not in rendered.all_text() and ciphertext not in (rendered.directory / STATES_FILE).read_text()
        )
    # written as `preview` writes it: its own note (`...-secret: stringData.token: ...`) read as a key
    # assignment, and the preview of a rotated token was exit 1, nothing written
    run = run_main(preview_main, str(first.directory), str(second.directory))
    assert run.returncode == 0, run.stderr
    changes = json.loads((second.directory / "changes.json").read_text())
    (written,) = [entry for entry in changes["changes"] if entry["type"] == SECRET]
    assert "secure:` ciphertext changed" in written["noConfigKeys"]
    # only the download Job reads the token, and it ran: no pod to restart
    assert "no pod of this stack reads it now" in (second.directory / "changes.md").read_text()


# ---------------------------------------------------------------- live workloads rebuilt


def test_a_namespace_rename_warns_that_the_serving_pods_are_rebuilt_beside_the_old(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    _, _, result = day2(render_stack, tmp_path_factory, "dev", "namespace", {"cluster": {"namespace": "serving-b"}})
    deployment = next(change for change in result.of("replace") if change.record["type"] == DEPLOYMENT)
    assert deployment.delete_before_replace is False
    (warning,) = [warning for warning in result.warnings if "serving Deployment" in warning]
    assert "fails after 10 minutes" in warning and "--replicas=0" in warning and "new namespace" in warning
    assert not any("serving Deployment" in refusal for refusal in result.refusals)
    # the serving volume: a claimRef applied in place would keep the old claim's uid; replaced by its trigger
    (volume,) = [change for change in result.of("replace") if change.record["type"] == VOLUME]
    assert volume.replaced_because == ["its replacementTrigger changed"] and volume.delete_before_replace
    assert volume.config_keys == {"cluster.namespace"}
    (claim,) = [change for change in result.of("replace") if change.record["type"] == VOLUME + "Claim"]
    assert claim.deleted_first_with == volume.urn
    # the serving pods cannot start beside the old ones: the claim they mount goes first
    (serving,) = [rollout for rollout in result.rollouts if "weights claim" in rollout.what]
    assert "scale it to zero first" in serving.what and "fails after 10 minutes" in serving.what


def test_a_namespace_rename_on_the_first_up_after_the_trigger_was_added_is_refused(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A day-2 review: OLD made before the volume had its replacement trigger keeps the volume (no trigger to compare),
    still bound to the old claim, so the claim made again in the new namespace stays Pending."""
    base = render_stack("dev")
    changed = render_with(render_stack, tmp_path_factory, "dev", "namespace", {"cluster": {"namespace": "serving-b"}})
    states = base.states
    before_trigger = dataclasses.replace(
        states,
        converged=[
            {
                **record,
                "options": {key: value for key, value in record["options"].items() if key != "replacementTrigger"},
            }
            for record in states.converged or []
        ],
    )
    result = preview_states(before_trigger, changed.states)
    assert not [change for change in result.of("replace") if change.record["type"] == VOLUME]
    (refusal,) = [refusal for refusal in result.refusals if "stays Pending" in refusal]
    assert "serving-b/weights-" in refusal and "still bound to llm-serving/weights-" in refusal
    assert "without this change first" in refusal and "cluster.namespace" in refusal


def test_a_service_rename_in_prod_is_refused(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    _, _, result = day2(render_stack, tmp_path_factory, "prod", "service", {"routing": {"serviceName": "qwen-b"}})
    (refusal,) = [refusal for refusal in result.refusals if "serving Deployment" in refusal]
    assert refusal.startswith("refused in production:") and "12 more A4 node(s)" in refusal


# ---------------------------------------------------------------- what the files show


def test_changes_md_shows_whole_values_and_changes_json_keeps_its_fields(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A long value (the download script, an alert's PromQL) is shown whole, as `preview --diff` does."""
    base = render_stack("dev")
    settings = {"monitoring": {"alerts": {"queueWaitingThreshold": 321}}}
    changed = render_with(render_stack, tmp_path_factory, "dev", "alert", settings)
    assert run_main(preview_main, str(base.directory), str(changed.directory)).returncode == 0
    document = json.loads((changed.directory / "changes.json").read_text())
    assert {"summary", "refused", "refusals", "warnings", "changes", "kept", "notes"} <= set(document)
    (change,) = document["changes"]
    assert {"action", "type", "name", "urn", "inputs"} <= set(change)
    entry = change["inputs"][0]
    assert {"path", "old", "new"} <= set(entry)
    text = (changed.directory / "changes.md").read_text()
    assert str(entry["old"]) in text and str(entry["new"]) in text and "..." not in text


def test_a_new_stack_file_previews_against_itself_as_no_change(tmp_path: Path, dev: RenderedStack) -> None:
    restated = stack_file_with("dev", {}, tmp_path / "Pulumi.dev.yaml")
    out = tmp_path / "again"
    run = run_render("dev", "--config-file", str(restated), "--out", str(out), "--against", str(dev.directory))
    assert run.returncode == 0 and "0 create, 0 update, 0 replace, 0 delete" in run.stdout


def test_leaving_gateway_mode_warns_that_the_gateway_api_goes_off_before_the_gateway(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Pulumi deletes last: the cluster update that turns the Gateway API off runs while the Gateway exists."""
    clusterip, gateway, to_gateway = day2(
        render_stack, tmp_path_factory, "dev", "routing", {"routing": {"mode": "gateway"}}
    )
    assert not any("CHANNEL_DISABLED" in warning for warning in to_gateway.warnings)
    back = preview_states(gateway.states, clusterip.states)
    (warning,) = [warning for warning in back.warnings if "CHANNEL_DISABLED" in warning]
    assert warning.startswith("llm-serving:gke:Cluster$gcp:container/cluster:Cluster::llm-gke: ")
    assert "not verified here" in warning and "--target-dependents" in warning
    assert any("kubernetes:gateway.networking.k8s.io/v1:Gateway" in change.urn for change in back.of("delete"))


def test_a_secure_value_set_for_the_first_time_says_so_not_that_the_program_changed(
    dev: RenderedStack, render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A held-out day-2 check: hfToken set where the stack file had none replaced the Secret with "no stack setting
    differs ... the program itself declares it otherwise"; and unset again, the same."""
    ciphertext = "v1:Zm9yLXRlc3RzLW9ubHk=:not-a-real-ciphertext"
    token = render_with(render_stack, tmp_path_factory, "dev", "token-a", {"hfToken": {"secure": ciphertext}})
    for old, new, how in ((dev, token, "set (the old render left it unset)"), (token, dev, "unset (the old")):
        preview = preview_states(old.states, new.states)
        (secret,) = [change for change in preview.changes if change.record["name"] == "llm-hf-token-secret"]
        assert f"a secret config key behind it was {how}" in secret.no_config_keys
        assert not secret.config_keys
        # a day-2 tester: unset, the Pulumi CLI stops `pulumi up` (Pulumi.yaml declares hfToken without a default);
        # set for the first time, the note on who reads the Secret, as for a token set again
        stops = [refusal for refusal in preview.refusals if "missing configuration value 'hfToken'" in refusal]
        assert bool(stops) == (new is dev)
        first_set = [warning for warning in preview.warnings if "is set where the old render had none" in warning]
        assert bool(first_set) == (old is dev)


def test_a_secure_value_moved_into_the_esc_environment_says_so_not_unset(
    dev: RenderedStack, render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A review: hfToken moved from a `secure:` value into the stack file's inline ESC environment read "unset (the
    old render had a `secure:` value)", though `pulumi up` still has a token (maybe the same one)."""
    ciphertext = "v1:Zm9yLXRlc3RzLW9ubHk=:not-a-real-ciphertext"
    token = render_with(render_stack, tmp_path_factory, "dev", "token-a", {"hfToken": {"secure": ciphertext}})
    document = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    document["environment"] = {"values": {"pulumiConfig": {"hfToken": {"fn::secret": "hf_" + "Q" * 34}}}}
    esc_file = tmp_path_factory.mktemp("esc") / "Pulumi.dev.yaml"
    esc_file.write_text(yaml.safe_dump(document))
    esc = render_stack("dev", esc_file)
    for old, new, how in (
        (token, esc, "moved from a `secure:` value to the stack's ESC environment"),
        (esc, token, "moved from the stack's ESC environment to a `secure:` value"),
        (dev, esc, "left to the stack's ESC environment"),
        (esc, dev, "unset (the old render left it to the stack's ESC environment)"),
    ):
        preview = preview_states(old.states, new.states)
        (secret,) = [change for change in preview.changes if change.record["name"] == "llm-hf-token-secret"]
        assert f"a secret config key behind it was {how}" in secret.no_config_keys
        moved = "stringData.token moved between a `secure:` value and the stack's ESC environment"
        # which pods read the Secret, as for a ciphertext set again: the preview reads neither value
        assert any(moved in warning for warning in preview.warnings) == (dev not in (old, new))
        left = "stringData.token is left to the stack's ESC environment where the old render had no value; if ESC sets"
        assert any(left in warning for warning in preview.warnings) == (old is dev)

    # a render made before the `esc` label wrote `unset` for a secret left to ESC: the label alone is no change
    def labelled_unset(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [
            {**record, "secretDigests": {path: "unset" for path in record["secretDigests"]}}
            if record["name"] == "llm-hf-token-secret"
            else record
            for record in records
        ]

    older = dataclasses.replace(
        esc.states, first_up=labelled_unset(esc.states.first_up), converged=labelled_unset(esc.states.converged or [])
    )
    assert older.unseen_settings is not None
    names = [change.record["name"] for change in preview_states(older, esc.states).changes]
    assert "llm-hf-token-secret" not in names
    without_esc = dataclasses.replace(older, unseen_settings=None)
    assert "llm-hf-token-secret" in [
        change.record["name"] for change in preview_states(without_esc, esc.states).changes
    ]
