"""Day-2 changes of more settings, previewed from the converged state as `preview OLD NEW` does, and
judged against what the providers do (a review of the preview with held-out changes): an
existing cluster named instead of the stack's own, a version floor lowered or raised, guards that live
in the state only, the endpoint picker's settings, the proxy-only subnet, a smaller weights disk."""

from __future__ import annotations

from typing import Any

import pytest

from commands.preview.changes_md import changes_markdown
from commands.preview.command import Preview, preview_states
from commands.preview.provider_effects import STATE_ONLY
from tests.commands.preview.test_day2 import day2
from tests.commands.preview.test_preview import render_with
from tests.conftest import RenderStack


def back_to_shipped(
    render_stack: RenderStack, factory: pytest.TempPathFactory, stack: str, label: str, settings: dict[str, Any]
) -> Preview:
    """The preview from the stack file with `settings` laid over it back to the shipped stack file."""
    before = render_with(render_stack, factory, stack, label, settings)
    return preview_states(before.states, render_stack(stack).states)


def named(result: Preview, name: str) -> Any:
    (change,) = [change for change in result.changes if change.record["name"] == name]
    return change


def test_naming_the_stacks_own_cluster_as_existing_is_refused(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The update would delete the cluster the new program deploys into, and pulumi-kubernetes refuses
    to create the namespace again under its new URN before that."""
    _, _, result = day2(render_stack, tmp_path_factory, "dev", "existing-own", {"cluster": {"existing": True}})
    assert any("deletes the cluster 'llm-serving'" in refusal for refusal in result.refusals), result.refusals
    assert any("refuses to create" in refusal and "Namespace 'llm-serving'" in refusal for refusal in result.refusals)


def test_moving_to_another_existing_cluster_replaces_every_kubernetes_object_created_first(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    settings = {"cluster": {"existing": True, "name": "platform-autopilot"}}
    _, _, result = day2(render_stack, tmp_path_factory, "dev", "existing-other", settings)
    deployment = named(result, "llm-vllm-deployment")
    assert deployment.action == "replace" and not deployment.delete_before_replace
    assert deployment.replaced_because[0].startswith("its provider moved from")
    assert not any("refuses to create" in refusal for refusal in result.refusals)


def test_a_lower_version_floor_is_state_only_and_a_higher_one_may_upgrade_the_control_plane(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    floor = {"cluster": {"minMasterVersion": "1.35"}}
    _, _, raised = day2(render_stack, tmp_path_factory, "dev", "floor-1.35", floor)
    (entry,) = named(raised, "llm-gke").inputs
    assert entry.effect is not None and entry.effect.says.startswith("upgrades the control plane to 1.35 if")
    lowered = back_to_shipped(render_stack, tmp_path_factory, "dev", "floor-1.35", floor)
    (entry,) = named(lowered, "llm-gke").inputs
    assert entry.path == "minMasterVersion" and entry.effect is not None
    assert entry.effect.says.startswith(STATE_ONLY) and "resource_container_cluster.go" in entry.effect.source


def test_a_faster_release_channel_upgrades_the_nodes_later_and_rapid_in_production_is_a_warning(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A day-2 review: prod REGULAR -> RAPID was one in-place cluster update, though GKE then upgrades the cluster to
    RAPID's versions (every serving pod starts again), which the GKE API says are "not subject to any SLAs"."""
    _, _, rapid = day2(render_stack, tmp_path_factory, "prod", "rapid", {"cluster": {"releaseChannel": "RAPID"}})
    (upgrade,) = [rollout for rollout in rapid.rollouts if "release channel" in rollout.what]
    assert upgrade.what.startswith("the cluster moves from the REGULAR to the RAPID release channel, whose newer")
    assert "12 serving pod(s) start again" in upgrade.what and upgrade.pods == 12
    (warning,) = [warning for warning in rapid.warnings if "RAPID" in warning]
    assert warning.endswith(
        'a production cluster moves to the RAPID release channel (REGULAR before), which the GKE API says is "offered '
        'on an early access basis" with versions "not subject to any SLAs"; GKE then upgrades the cluster to them '
        "where it runs an older version (Serving pods, below)"
    )
    _, _, stable = day2(render_stack, tmp_path_factory, "prod", "stable", {"cluster": {"releaseChannel": "STABLE"}})
    assert [change.urn.rpartition("::")[2] for change in stable.changes] == ["llm-gke"]
    assert not stable.rollouts and not [warning for warning in stable.warnings if "release channel" in warning]


def test_keeping_the_weights_is_a_state_only_change(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    _, _, result = day2(render_stack, tmp_path_factory, "dev", "keep-weights", {"weights": {"protect": True}})
    assert {change.record["type"] for change in result.changes} == {"gcp:compute/disk:Disk", "gcp:compute/image:Image"}
    for change in result.changes:
        assert change.config_keys == {"weights.protect"}
        assert [entry.effect.says for entry in change.inputs if entry.effect] == [STATE_ONLY]


def test_leaving_gateway_mode_keeps_the_network_services_api_enabled(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    _, _, result = day2(render_stack, tmp_path_factory, "staging", "routing", {"routing": {"mode": "clusterip"}})
    api = named(result, "llm-networkservices-api")
    assert api.action == "delete" and api.effect is not None and "stays enabled" in api.effect.says


def test_the_endpoint_pickers_settings_are_named_as_such(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    image = "ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.10.0@sha256:" + "cd" * 32
    settings = {"routing": {"gateway": {"eppReplicas": 3, "eppImage": image}}}
    _, _, result = day2(render_stack, tmp_path_factory, "staging", "picker", settings)
    (change,) = result.changes
    assert change.record["name"] == "llm-gateway-epp-deployment" and change.action == "update"
    assert change.config_keys == {"routing.gateway.eppReplicas", "routing.gateway.eppImage"}


def test_a_proxy_only_subnet_is_neither_grown_in_place_nor_moved_under_the_gateway(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    grow = {"routing": {"gateway": {"proxySubnetCidr": "10.129.0.0/22"}}}
    _, _, grown = day2(render_stack, tmp_path_factory, "staging", "proxy-grow", grow)
    (refusal,) = grown.refusals
    assert "llm-gateway-proxy-subnet" in refusal and "cannot be expanded" in refusal
    assert "routing.gateway.proxySubnetCidr" in refusal
    move = {"routing": {"gateway": {"proxySubnetCidr": "10.130.0.0/23"}}}
    _, _, moved = day2(render_stack, tmp_path_factory, "staging", "proxy-move", move)
    assert named(moved, "llm-gateway-proxy-subnet").action == "replace"
    assert named(moved, "llm-gateway-proxy-subnet").config_keys == {"routing.gateway.proxySubnetCidr"}
    # the firewall rules and NetworkPolicies move to the new range whatever GCP does with the old subnet
    (refusal,) = moved.refusals
    assert refusal.startswith("the Gateway would stop serving") and "deleted before its replacement" in refusal
    assert "routing.gateway.proxySubnetCidr" in refusal and "shut out" in refusal


def test_a_smaller_weights_disk_warns_that_the_serving_volume_goes_first(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    result = back_to_shipped(render_stack, tmp_path_factory, "dev", "disk-150", {"weights": {"sizeGib": 150}})
    (disk,) = result.of("replace")
    assert disk.record["type"] == "gcp:compute/disk:Disk" and disk.delete_before_replace
    (warning,) = [warning for warning in result.warnings if "the disk is replaced delete-first" in warning]
    assert "PersistentVolume" in warning and "Terminating" in warning and "weights.sizeGib" in warning
    # the changes list says so too (it listed the old volume and claim as deletes at the end of the update)
    deleted_first = {
        change.record["type"].rsplit(":", 1)[-1]: change.deleted_first_with for change in result.of("delete")
    }
    assert deleted_first == {"PersistentVolume": disk.urn, "PersistentVolumeClaim": disk.urn}
    assert f"deleted first by the engine, before {disk.urn}" in changes_markdown(result)


def test_a_smaller_weights_disk_says_gcp_makes_none_below_its_image(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A day-2 review: a smaller disk is made again from the image, which keeps the size it was downloaded at; GCP
    refuses a disk below it after the engine deleted the old disk, volume and claim. The program stops before any
    step when the image says so (components/weights.py); offline its size is not known, so the preview says so."""
    shrunk = back_to_shipped(render_stack, tmp_path_factory, "dev", "disk-150", {"weights": {"sizeGib": 150}})
    (warning,) = [warning for warning in shrunk.warnings if "no disk smaller than its source image" in warning]
    assert "made again at 100 GiB" in warning and "at most 150 GiB" in warning and "not known here" in warning
    assert "gcloud compute images delete llm-serving-weights-" in warning and "weights.sizeGib" in warning
    _, _, grown = day2(render_stack, tmp_path_factory, "dev", "disk-150", {"weights": {"sizeGib": 150}})
    assert not [warning for warning in grown.warnings if "source image" in warning]


def test_flex_start_in_gateway_mode_gives_the_picker_the_pools_longer_grace(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """routerlib: the picker's grace should mirror the longest grace of the pool's pods."""
    settings = {"capacity": {"sources": [{"type": "flexStart"}, {"type": "spot"}]}}
    _, _, result = day2(render_stack, tmp_path_factory, "staging", "fallback", settings)
    picker = named(result, "llm-gateway-epp-deployment")
    (entry,) = picker.inputs
    assert (entry.path, entry.old, entry.new) == ("spec.template.spec.terminationGracePeriodSeconds", 130, 600)
    assert picker.config_keys == {"capacity.sources"}


def test_two_alert_settings_each_name_only_the_alert_they_feed(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A held-out day-2 check: the alerts are one Args field, so each policy named both settings; each alert is now
    an Args field of its own (`alerts[pods-pending]`)."""
    settings = {"monitoring": {"alerts": {"pendingSeconds": 600, "minMtpAcceptance": 0.6}}}
    _, _, result = day2(render_stack, tmp_path_factory, "dev", "two-alerts", settings)
    assert {change.record["name"]: change.config_keys for change in result.changes} == {
        "llm-monitoring-pods-pending": {"monitoring.alerts.pendingSeconds"},
        "llm-monitoring-mtp-acceptance-collapsed": {"monitoring.alerts.minMtpAcceptance"},
    }


def test_a_label_a_setting_feeds_names_that_setting_not_another_of_the_component(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A held-out day-2 check: a label's value was not followed (the tracer only added a label), so a renamed
    service's PodDisruptionBudget named the engine flag changed with it, and an environment's label on the
    ComputeClass named capacity.nodes."""
    settings = {"engine": {"maxNumSeqs": 4096}, "routing": {"serviceName": "qwen-b"}}
    _, _, renamed = day2(render_stack, tmp_path_factory, "dev", "renamed-and-flag", settings)
    keys = {change.record["name"]: change.config_keys for change in renamed.changes}
    assert keys["llm-vllm-pdb"] == keys["llm-vllm-pod-monitoring"] == {"routing.serviceName"}
    assert keys["llm-vllm-deployment"] == {"engine.maxNumSeqs", "routing.serviceName"}
    _, _, moved = day2(render_stack, tmp_path_factory, "dev", "environment", {"environment": "staging"})
    assert named(moved, "llm-capacity-compute-class").config_keys == {"environment"}


def test_the_stacks_own_proxy_only_subnet_deleted_under_the_gateway_says_to_promote_the_named_one_first(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A held-out day-2 check: naming an existing proxy-only subnet deleted the stack's own while the Gateway stayed,
    with no warning; it is safe only once the named one is ACTIVE and the stack's BACKUP."""
    settings = {"routing": {"gateway": {"existingProxySubnet": "shared-proxy", "proxySubnetCidr": "10.130.0.0/23"}}}
    _, _, result = day2(render_stack, tmp_path_factory, "staging", "existing-proxy", settings)
    assert named(result, "llm-gateway-proxy-subnet").action == "delete"
    (warning,) = [warning for warning in result.warnings if "proxy-only subnet is deleted" in warning]
    assert "existingProxySubnet names is ACTIVE and this one BACKUP" in warning
    assert "(stack setting: routing.gateway.existingProxySubnet)" in warning
    assert not result.refusals


def test_the_stacks_own_proxy_only_subnet_created_again_says_the_reused_one_must_not_be_active(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A review: unsetting existingProxySubnet created a second ACTIVE proxy-only subnet beside the one the Gateway
    used, with no warning; GCP holds one ACTIVE per region and network, so that create fails."""
    settings = {"routing": {"gateway": {"existingProxySubnet": "shared-proxy", "proxySubnetCidr": "10.130.0.0/23"}}}
    own, reusing, _ = day2(render_stack, tmp_path_factory, "staging", "existing-proxy", settings)
    result = preview_states(reusing.states, own.states)
    assert named(result, "llm-gateway-proxy-subnet").action == "create"
    (warning,) = [warning for warning in result.warnings if "creates its own ACTIVE proxy-only subnet" in warning]
    assert "where the Gateway used shared-proxy" in warning and "the create fails" in warning
    assert "(stack setting: routing.gateway.existingProxySubnet)" in warning
    forward = preview_states(own.states, reusing.states)
    assert not [warning for warning in forward.warnings if "creates its own ACTIVE" in warning]


def test_new_default_labels_say_the_labelled_resources_may_follow(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A held-out day-2 check: another environment changes the gcp provider's default labels; the preview showed the
    provider's update and every labelled GCP resource as the same, with no word on them."""
    _, _, result = day2(render_stack, tmp_path_factory, "dev", "labels", {"environment": "staging"})
    (warning,) = [warning for warning in result.warnings if "default labels change" in warning]
    assert "pulumi-gcp/issues/1275" in warning and "(stack setting: environment)" in warning


def test_an_alert_that_comes_or_goes_names_the_switch_not_the_settings_of_its_values(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A review: an alert's existence was attributed to every setting that feeds its values, so the MTP alert
    created with MTP named only the namespace changed with it, and deleted alerts named their thresholds."""
    without_mtp = render_with(render_stack, tmp_path_factory, "dev", "no-mtp", {"engine": {"speculative": None}})
    with_mtp = render_with(render_stack, tmp_path_factory, "dev", "mtp-ns", {"cluster": {"namespace": "serving-b"}})
    created = preview_states(without_mtp.states, with_mtp.states)
    assert named(created, "llm-monitoring-mtp-acceptance-collapsed").action == "create"
    assert named(created, "llm-monitoring-mtp-acceptance-collapsed").config_keys == {"engine.speculative"}
    settings = {"engine": {"speculative": None}, "monitoring": {"alerts": {"minMtpAcceptance": 0.6}}}
    _, _, dropped = day2(render_stack, tmp_path_factory, "dev", "no-mtp-threshold", settings)
    assert named(dropped, "llm-monitoring-mtp-acceptance-collapsed").config_keys == {"engine.speculative"}
    settings = {"monitoring": {"alerts": {"enabled": False, "pendingSeconds": 600}}}
    _, _, off = day2(render_stack, tmp_path_factory, "dev", "alerts-off", settings)
    assert named(off, "llm-monitoring-pods-pending").action == "delete"
    assert named(off, "llm-monitoring-pods-pending").config_keys == {"monitoring.alerts.enabled"}


def test_a_goal_instead_of_a_node_count_names_the_goal(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A held-out day-2 check: a `target` where `capacity.nodes` was sized the Deployment, which named only
    capacity.nodes (the group set from null was not read as the source of the count)."""
    settings = {"capacity": {"nodes": None}, "target": {"totalTokensPerSecond": 700_000}}
    _, _, result = day2(render_stack, tmp_path_factory, "prod", "goal", settings)
    assert {"target", "capacity.nodes"} <= named(result, "llm-vllm-deployment").config_keys


def test_extra_args_and_env_are_named_beside_another_engine_setting(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A held-out day-2 check: the whole args list (or env) changed for two settings named only the one whose flag
    the traced configs hold; each changed place of an input now names the fields closest to it."""
    settings = {"engine": {"maxNumSeqs": 4096, "extraArgs": ["--max-log-len=100"]}}
    _, _, flags = day2(render_stack, tmp_path_factory, "dev", "flag-and-extra", settings)
    assert named(flags, "llm-vllm-deployment").config_keys == {"engine.maxNumSeqs", "engine.extraArgs"}
    settings = {"engine": {"estimateCudagraphs": False, "extraEnv": {"NCCL_DEBUG": "WARN"}}}
    _, _, env = day2(render_stack, tmp_path_factory, "dev", "env-and-extra", settings)
    assert {"engine.estimateCudagraphs", "engine.extraEnv"} <= named(env, "llm-vllm-deployment").config_keys


def test_a_renamed_log_metric_says_the_old_one_stays(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A held-out day-2 check: another namespace renames the time-to-ready log metric, an update in place that
    writes a new metric (the Logging API creates one that does not exist): the old one stays, unsaid until now."""
    benchmark = {"benchmark": {"enabled": True, "gatewayAddress": "10.0.0.50"}}
    old = render_with(render_stack, tmp_path_factory, "staging", "bench", benchmark)
    new = render_with(
        render_stack, tmp_path_factory, "staging", "bench-ns", {**benchmark, "cluster": {"namespace": "llm-serving-b"}}
    )
    result = preview_states(old.states, new.states)
    (metric,) = [change for change in result.changes if change.record["type"] == "gcp:logging/metric:Metric"]
    assert metric.action == "update" and not metric.no_rule
    (warning,) = [warning for warning in result.warnings if "log-based metric is renamed" in warning]
    assert "gcloud logging metrics delete" in warning and "stays" in warning


def test_the_download_alert_of_a_new_revision_names_the_revision(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A held-out day-2 check: the download-failed alert exists while a download Job does; its creation named the
    downloader's retries changed in the same update, as the tracer never unset the Job's name (an optional field
    without a default of None) and so never saw the alert go."""
    settings = {"weights": {"revision": "89abcdef" * 5, "downloader": {"retries": 3}}}
    _, _, result = day2(render_stack, tmp_path_factory, "dev", "revision-retries", settings)
    assert named(result, "llm-monitoring-download-failed").action == "create"
    assert named(result, "llm-monitoring-download-failed").config_keys == {"weights.revision"}


def test_an_update_that_follows_a_replacement_names_the_replacements_setting(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A held-out day-2 check: a subnet narrowed back to /20 is replaced, and the Cloud NAT that lists it is updated to
    the new one; the NAT's update said no setting changed it ("follows the replacement ... names no setting") while
    the subnet's replacement named cluster.network.subnetCidr."""
    settings = {"cluster": {"network": {"subnetCidr": "10.0.0.0/19"}}}
    dev, wider, _ = day2(render_stack, tmp_path_factory, "dev", "wider-subnet", settings)
    result = preview_states(wider.states, dev.states)
    assert named(result, "llm-subnet").action == "replace"
    nat = named(result, "llm-nat")
    assert nat.action == "update" and nat.config_keys == {"cluster.network.subnetCidr"}, nat.no_config_keys


def test_a_new_cluster_name_in_gateway_mode_rebuilds_the_proxy_subnet_after_the_gateway(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A day-2 review: the proxy-only subnet replaced with everything on a renamed cluster was refused as replaced
    under a Gateway that stays, but the engine deletes the Gateway's objects first, with the cluster."""
    _, _, renamed = day2(render_stack, tmp_path_factory, "staging", "cluster-renamed", {"cluster": {"name": "llm-two"}})
    assert named(renamed, "llm-gateway-proxy-subnet").action == "replace"
    gateways = [change for change in renamed.of("replace") if change.record["type"].endswith(":Gateway")]
    assert gateways and all(change.deleted_first_with for change in gateways)
    assert not [refusal for refusal in renamed.refusals if "the Gateway would stop serving" in refusal]
