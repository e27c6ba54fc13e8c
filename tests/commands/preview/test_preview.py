"""The offline preview: engine rules on small hand-made states, the command line, and day-2 changes
to every stack file (each rendered through `render_stack`, then compared with the stack's render)."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from commands.io import output
from commands.io.output import MARKER
from commands.preview.command import Preview, changes_markdown, preview, preview_states
from commands.preview.command import main as preview_main
from commands.preview.update_plan import BY_GCP_BRIDGE
from stacks.config.routing import RoutingMode
from tests.conftest import RenderStack
from tests.rendered import ROOT, STACK_FILES, RenderedStack, assert_same_files, run_main, run_render
from tests.variants import PROJECT, stack_config

# ---------------------------------------------------------------- engine rules on small states


def record(
    type_: str,
    name: str,
    inputs: dict[str, Any],
    *,
    parent: str | None = None,
    provider: str | None = None,
    **options: Any,
) -> dict[str, Any]:
    return {
        "type": type_,
        "name": name,
        "parent": parent,
        "provider": provider,
        "custom": not type_.startswith("llm-serving:"),
        "inputs": inputs,
        "options": {"protect": False, "retainOnDelete": False, "dependsOn": [], "ignoreChanges": [], **options},
    }


def base_state() -> list[dict[str, Any]]:
    return [
        record("llm-serving:gke:Cluster", "llm", {}),
        record("pulumi:providers:gcp", "gcp", {"project": "p"}),
        record("gcp:compute/network:Network", "vpc", {"name": "vpc", "project": "p"}, parent="llm", provider="gcp"),
        record(
            "gcp:container/cluster:Cluster",
            "gke",
            {"name": "c", "location": "us-central1", "network": "vpc-id", "project": "p"},
            parent="llm",
            provider="gcp",
            dependsOn=["vpc"],
            protect=True,
        ),
        record("pulumi:providers:kubernetes", "k8s", {"kubeconfig": "[secret]"}, parent="llm", dependsOn=["gke"]),
        record(
            "kubernetes:apps/v1:Deployment",
            "deploy",
            {"metadata": {"name": "vllm", "namespace": "ns"}, "spec": {"replicas": 2, "selector": {"app": "a"}}},
            parent="llm",
            provider="k8s",
            ignoreChanges=["spec.replicas"],
        ),
        record(
            "kubernetes:batch/v1:Job",
            "job",
            {"metadata": {"name": "download", "namespace": "ns"}, "spec": {"template": {"args": ["a"]}}},
            parent="llm",
            provider="k8s",
        ),
        record("llm-serving:weights:ModelWeights", "llm-weights", {}),
        record(
            "gcp:compute/disk:Disk",
            "disk",
            {"name": "d", "size": 100, "zone": "us-central1-b", "project": "p"},
            parent="llm-weights",
            provider="gcp",
            retainOnDelete=True,
        ),
    ]


def changed(state: list[dict[str, Any]], name: str, path: str, value: Any) -> list[dict[str, Any]]:
    state = copy.deepcopy(state)
    (target,) = [item for item in state if item["name"] == name]
    *parents, leaf = path.split(".")
    node = target
    for key in parents:
        node = node.setdefault(key, {})
    node[leaf] = value
    return state


def by_action(result: Preview) -> dict[str, set[str]]:
    return {action: {change.record["name"] for change in result.of(action)} for action in result.counts()}


def one(result: Preview, name: str) -> Any:
    (match,) = [change for change in result.changes if change.record["name"] == name]
    return match


def test_same_state_is_no_change() -> None:
    result = preview(base_state(), base_state())
    assert result.changes == [] and result.refusals == [] and result.unchanged == len(base_state())


def test_in_place_update_lists_paths_old_and_new() -> None:
    result = preview(base_state(), changed(base_state(), "disk", "inputs.size", 200))
    change = one(result, "disk")
    assert change.action == "update"
    assert [entry.as_json() for entry in change.inputs] == [{"path": "size", "old": 100, "new": 200, "replaces": False}]
    assert change.config_keys == {"weights.sizeGib"}


def test_immutable_field_replaces_and_names_it() -> None:
    result = preview(base_state(), changed(base_state(), "disk", "inputs.zone", "us-central1-c"))
    change = one(result, "disk")
    assert change.action == "replace" and change.replaced_because == ["zone changed"]
    # pulumi-gcp's bridge deletes first a resource whose `name` the program sets itself
    assert change.delete_before_replace is True and change.delete_first_by == BY_GCP_BRIDGE
    assert any("retainOnDelete" in warning for warning in result.warnings)


def test_an_added_object_is_diffed_by_the_fields_it_sets() -> None:
    private_nodes = changed(base_state(), "gke", "inputs.privateClusterConfig", {"enablePrivateNodes": True})
    gke = one(preview(base_state(), private_nodes), "gke")
    assert gke.action == "update" and [entry.path for entry in gke.inputs] == [
        "privateClusterConfig.enablePrivateNodes"
    ]
    master_range = changed(base_state(), "gke", "inputs.privateClusterConfig", {"masterIpv4CidrBlock": "172.16.0.0/28"})
    assert one(preview(base_state(), master_range), "gke").action == "replace"


def test_named_kubernetes_object_is_deleted_before_replacement() -> None:
    result = preview(base_state(), changed(base_state(), "job", "inputs.spec.template.args", ["b"]))
    assert one(result, "job").action == "replace" and one(result, "job").delete_before_replace is True


def test_renamed_kubernetes_object_is_created_before_delete() -> None:
    result = preview(base_state(), changed(base_state(), "job", "inputs.metadata.name", "download-2"))
    assert one(result, "job").action == "replace" and one(result, "job").delete_before_replace is False


def test_delete_before_replace_option_wins() -> None:
    state = changed(base_state(), "disk", "options.deleteBeforeReplace", True)
    result = preview(base_state(), changed(state, "disk", "inputs.zone", "us-central1-c"))
    assert one(result, "disk").delete_before_replace is True


def test_ignore_changes_paths_are_not_diffs() -> None:
    result = preview(base_state(), changed(base_state(), "deploy", "inputs.spec.replicas", 5))
    assert result.changes == []


def test_replace_on_changes_turns_an_update_into_a_replacement() -> None:
    state = changed(base_state(), "disk", "options.replaceOnChanges", ["size"])
    result = preview(base_state(), changed(state, "disk", "inputs.size", 200))
    assert one(result, "disk").action == "replace"


def test_protected_replacement_is_refused_and_cascades_through_the_provider() -> None:
    result = preview(base_state(), changed(base_state(), "gke", "inputs.name", "c2"))
    actions = by_action(result)
    assert actions["replace"] == {"gke", "k8s", "deploy", "job"}
    assert one(result, "deploy").replaced_because[0] == "its provider k8s is replaced"
    # the cluster is replaced delete-first (the bridge: its name is set), so the engine deletes what is
    # replaced with it first, whatever pulumi-kubernetes would choose (calculateDependentReplacements)
    gke_urn = one(result, "gke").urn
    for name in ("k8s", "deploy", "job"):
        assert one(result, name).delete_before_replace is True, name
        assert one(result, name).deleted_first_with == gke_urn
        assert one(result, name).delete_first_by.startswith("the engine")
    assert one(result, "deploy").config_keys == {"cluster.name"}
    (refusal,) = result.refusals
    assert "gke" in refusal and "name changed" in refusal and "cluster.name" in refusal


def test_replaced_outputs_become_unknown_in_inputs_built_from_them() -> None:
    result = preview(base_state(), changed(base_state(), "vpc", "inputs.name", "vpc-2"))
    gke = one(result, "gke")
    assert gke.action == "replace" and "network depends on vpc, which is replaced" in gke.replaced_because
    assert gke.config_keys == {"cluster.name"}
    assert result.refusals  # the cluster is protected


def test_a_renamed_disk_names_the_only_setting_that_renames_it_in_place() -> None:
    """The weights disk's name comes from cluster.name, weights.model and weights.revision, but the
    latter two are also in its logical name (a new model or revision makes a new disk, not an update):
    an update of the name of the same disk is cluster.name (stacks/args.py followed through ModelWeights)."""
    renamed_disk = changed(base_state(), "disk", "inputs.name", "d2")
    assert one(preview(base_state(), renamed_disk), "disk").config_keys == {"cluster.name"}
    both = changed(renamed_disk, "gke", "inputs.name", "c2")
    assert one(preview(base_state(), both), "disk").config_keys == {"cluster.name"}


def test_unprotecting_first_allows_the_replacement() -> None:
    old = changed(base_state(), "gke", "options.protect", False)
    result = preview(old, changed(base_state(), "gke", "inputs.name", "c2"))
    assert result.refusals == []


def test_protected_delete_is_refused_and_retain_on_delete_is_reported() -> None:
    result = preview(base_state(), [item for item in base_state() if item["name"] not in ("gke", "disk")])
    assert by_action(result)["delete"] == {"gke", "disk"}
    assert any("unable to delete protected" in refusal and "gke" in refusal for refusal in result.refusals)
    assert any("disk" in warning and "stays in the cloud" in warning for warning in result.warnings)
    assert any("k8s still depends on gke" in refusal for refusal in result.refusals)


def test_gcp_delete_guards_in_the_state() -> None:
    guarded = changed(base_state(), "disk", "inputs.deletionPolicy", "PREVENT")
    result = preview(guarded, [item for item in guarded if item["name"] != "disk"])
    assert any("fail to delete" in refusal and "PREVENT" in refusal for refusal in result.refusals)
    abandoned = changed(base_state(), "disk", "inputs.deletionPolicy", "ABANDON")
    result = preview(abandoned, [item for item in abandoned if item["name"] != "disk"])
    assert result.refusals == [] and any("ABANDON" in warning for warning in result.warnings)
    # a newcomer read the +0 cost delta of a new weights revision in prod as "free": the abandoned disk bills on
    assert any("billed until it is deleted by hand" in warning for warning in result.warnings)
    unprotected = changed(base_state(), "gke", "options.protect", False)
    cluster_guard = changed(unprotected, "gke", "inputs.deletionProtection", True)
    result = preview(cluster_guard, changed(unprotected, "gke", "inputs.name", "c2"))
    (refusal,) = result.refusals
    assert "deletionProtection is true" in refusal and "cluster.name" in refusal


def test_gcp_provider_change_is_an_update() -> None:
    result = preview(base_state(), changed(base_state(), "gcp", "inputs.project", "q"))
    assert by_action(result)["update"] == {"gcp"} and not result.refusals


def test_unknown_type_is_an_update_flagged_no_rule() -> None:
    old = [*base_state(), record("kubernetes:example.com/v1:Widget", "widget", {"metadata": {"name": "w"}})]
    result = preview(old, changed(old, "widget", "inputs.metadata.name", "w2"))
    widget = one(result, "widget")
    assert widget.action == "update" and widget.no_rule and "[update]" not in changes_markdown(result)
    assert any("no replacement rule" in warning for warning in result.warnings)


def test_parent_chain_is_part_of_the_urn() -> None:
    moved = changed(base_state(), "disk", "parent", None)
    result = preview(base_state(), moved)
    assert by_action(result)["create"] == {"disk"} and by_action(result)["delete"] == {"disk"}


def test_secrets_stay_redacted() -> None:
    old = [*base_state(), record("kubernetes:core/v1:Secret", "token", {"stringData": {"token": "[secret]"}})]
    new = changed(old, "token", "inputs.stringData", {"token": "[secret]", "other": "[secret]"})
    text = json.dumps(preview(old, new).as_json())
    assert '"new": "[secret]"' in text


# ---------------------------------------------------------------- command line


def run(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    """The command as a real process: its exit status and streams are the contract."""
    return subprocess.run(
        [sys.executable, "-m", module, *args], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )


def write_render(directory: Path, records: list[dict[str, Any]]) -> Path:
    """A render folder holding `records`, written as `render` writes one (output-folder contract)."""
    output.write_render(directory, {"resources.json": json.dumps(records)})
    return directory


def test_cli_exit_status_and_files(tmp_path: Path) -> None:
    old = write_render(tmp_path / "old", base_state())
    same = write_render(tmp_path / "same", base_state())
    refused = write_render(tmp_path / "refused", changed(base_state(), "gke", "inputs.name", "c2"))
    assert run_main(preview_main, str(old), str(same)).returncode == 0
    assert json.loads((same / "changes.json").read_text())["summary"]["same"] == len(base_state())
    outcome = run("commands.preview.command", str(old), str(refused))
    assert outcome.returncode == 1
    assert "unable to replace protected" in outcome.stderr and "cluster.name" in outcome.stderr
    assert "4 replace" in outcome.stdout and (refused / "changes.md").is_file()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such render directory"),
        ("", "not a render directory"),
        ("{not json", "not valid JSON"),
        ("file", ": not a directory; allowed: a render folder"),  # an attacker: a file was "no such render directory"
    ],
)
def test_cli_bad_input_is_one_line_exit_2(tmp_path: Path, content: str | None, message: str) -> None:
    good = write_render(tmp_path / "good", base_state())
    bad = tmp_path / "bad"
    if content == "file":
        bad.write_text("{}")
    elif content is not None:
        bad.mkdir()
        if content:
            (bad / "resources.json").write_text(content)
    for args in ((str(bad), str(good)), (str(good), str(bad))):
        outcome = run_main(preview_main, *args, "--out", str(tmp_path / "out"))
        assert outcome.returncode == 2 and message in outcome.stderr and outcome.stderr.count("\n") == 1


def test_render_against_a_missing_dir_exits_2_before_rendering(tmp_path: Path) -> None:
    outcome = run_render("dev", "--out", str(tmp_path / "dev"), "--against", str(tmp_path / "missing"))
    assert outcome.returncode == 2 and "no such render directory" in outcome.stderr
    assert not (tmp_path / "dev").exists()


# ---------------------------------------------------------------- day-2 changes to every stack file


def stack_file_with(stack: str, settings: dict[str, Any], path: Path) -> Path:
    """The stack file with `settings` laid over its config (objects merge key by key), written to `path`."""
    doc = yaml.safe_load((ROOT / f"Pulumi.{stack}.yaml").read_text())
    config = doc["config"]
    for key, value in settings.items():
        current = config.get(f"{PROJECT}:{key}")
        merged = {**current, **value} if isinstance(value, dict) and isinstance(current, dict) else value
        config[f"{PROJECT}:{key}"] = merged
    path.write_text(yaml.safe_dump(doc))
    return path


def render_with(
    render_stack: RenderStack,
    tmp_path_factory: pytest.TempPathFactory,
    stack: str,
    label: str,
    settings: dict[str, Any],
) -> RenderedStack:
    """The stack file with `settings` laid over its config, rendered once."""
    directory = tmp_path_factory.getbasetemp() / "day2"
    directory.mkdir(exist_ok=True)
    path = directory / f"Pulumi.{stack}-{label}.yaml"
    if not path.exists():
        stack_file_with(stack, settings, path)
    return render_stack(stack, path)


def preview_of(old: RenderedStack, new: RenderedStack) -> Preview:
    """What `preview OLD NEW` compares: the converged states (`commands/io/states.py`)."""
    return preview_states(old.states, new.states)


def converged(stack: RenderedStack) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = json.loads((stack.directory / "states.json").read_text())["converged"]
    return records


def types_of(result: Preview, action: str) -> set[str]:
    return {change.record["type"] for change in result.of(action)}


WEIGHTS_PARENT = "llm-serving:weights:ModelWeights"
DEPLOYMENT_SIZED_FROM_CAPACITY = {"spec.progressDeadlineSeconds", "spec.template.spec.terminationGracePeriodSeconds"}
SHUTDOWN_TIMEOUT = "--shutdown-timeout="
ROUTING_PARENTS = ("llm-serving:routing:",)


@pytest.mark.parametrize("stack", STACK_FILES)
def test_a_second_render_with_nothing_changed_is_the_same_bytes_and_no_change(
    stack: str, render_stack: RenderStack, tmp_path: Path
) -> None:
    """The second `up` with nothing changed: `render --against` the first render writes the same
    files byte for byte (its preview aside) and previews no change, the same way twice. The stack
    file is read back and rewritten as the day-2 tests write theirs, so that rewrite changes nothing."""
    base = render_stack(stack)
    again = tmp_path / stack
    restated = stack_file_with(stack, {}, tmp_path / f"Pulumi.{stack}.yaml")
    outcome = run_render(stack, "--config-file", str(restated), "--out", str(again), "--against", str(base.directory))
    assert outcome.returncode == 0, outcome.stderr
    assert "0 create, 0 update, 0 replace, 0 delete" in outcome.stdout
    assert_same_files(base.directory, again, ignore=("changes.json", "changes.md", MARKER))
    assert json.loads((again / "changes.json").read_text())["summary"]["same"] == len(converged(base))
    first, second = preview_of(base, RenderedStack(again)), preview_of(base, RenderedStack(again))
    assert first.changes == [] and first.refusals == [] and first.warnings == []
    assert changes_markdown(first).encode() == changes_markdown(second).encode()
    assert json.dumps(first.as_json(), sort_keys=True) == json.dumps(second.as_json(), sort_keys=True)


@pytest.mark.parametrize("stack", STACK_FILES)
def test_model_revision_creates_new_weights_and_updates_the_deployment(
    stack: str, render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    commits = ("0123456789abcdef0123456789abcdef01234567", "fedcba9876543210fedcba9876543210fedcba98")
    current = stack_config(stack).weights.revision
    revision = {"weights": {"revision": next(commit for commit in commits if commit != current)}}
    result = preview_of(render_stack(stack), render_with(render_stack, tmp_path_factory, stack, "revision", revision))
    assert result.refusals == []
    assert result.of("replace") == [], [change.urn for change in result.of("replace")]
    created = result.of("create")
    # the new revision's first `up`: its weights, download included, and the alert on that download
    assert created and all(
        WEIGHTS_PARENT in change.urn or change.record["name"].endswith("-download-failed") for change in created
    )
    assert {"gcp:compute/disk:Disk", "kubernetes:core/v1:PersistentVolumeClaim"} <= types_of(result, "create")
    for change in result.of("delete"):
        assert WEIGHTS_PARENT in change.urn and not change.options.get("protect")
    (deployment,) = [
        change for change in result.of("update") if change.record["type"] == "kubernetes:apps/v1:Deployment"
    ]
    assert any("persistentVolumeClaim.claimName" in entry.path for entry in deployment.inputs)
    # where old revisions' images are kept (prod), going back to one may meet it (a platform review: no caveat)
    kept = [note for note in result.notes if "was made in this project before" in note]
    assert bool(kept) == stack_config(stack).weights_protected, kept
    assert all("fails with 'already exists'" in note and "docs/weights.md" in note for note in kept)


@pytest.mark.parametrize("stack", STACK_FILES)
def test_node_count_updates_only_what_is_sized_from_it(
    stack: str, render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    config = stack_config(stack)
    if config.target is not None:
        pytest.skip(f"Pulumi.{stack}.yaml sizes its nodes from a target, not capacity.nodes")
    nodes = config.nodes + 1
    result = preview_of(
        render_stack(stack), render_with(render_stack, tmp_path_factory, stack, "nodes", {"capacity": {"nodes": nodes}})
    )
    assert not result.of("create") and not result.of("replace") and not result.of("delete") and not result.refusals
    assert types_of(result, "update") and types_of(result, "update") <= {
        "kubernetes:apps/v1:Deployment",
        "kubernetes:policy/v1:PodDisruptionBudget",
        "kubernetes:autoscaling/v2:HorizontalPodAutoscaler",
        "kubernetes:batch/v1:CronJob",  # a schedule's wake step scales to the node count
        # Flex-start recycling starts early enough to move every pod one at a time (stacks/args.py)
        "kubernetes:cloud.google.com/v1:ComputeClass",
    }


@pytest.mark.parametrize("stack", STACK_FILES)
def test_engine_flag_updates_only_the_deployment(
    stack: str, render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    engine = {"engine": {"maxNumSeqs": 4096}}
    result = preview_of(render_stack(stack), render_with(render_stack, tmp_path_factory, stack, "engine", engine))
    assert [change.action for change in result.changes] == ["update"]
    assert types_of(result, "update") == {"kubernetes:apps/v1:Deployment"}
    assert result.of("update")[0].config_keys == {"engine.maxNumSeqs"}


@pytest.mark.parametrize("stack", STACK_FILES)
def test_capacity_fallback_updates_only_the_compute_class(
    stack: str, render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    current = [source.type for source in stack_config(stack).capacity.sources]
    sources = (
        [{"type": "spot"}, {"type": "flexStart"}] if current[0] != "spot" else [{"type": "flexStart"}, {"type": "spot"}]
    )
    settings = {"capacity": {"sources": sources}}
    result = preview_of(render_stack(stack), render_with(render_stack, tmp_path_factory, stack, "fallback", settings))
    assert {change.action for change in result.changes} == {"update"}
    assert "kubernetes:cloud.google.com/v1:ComputeClass" in types_of(result, "update")
    assert types_of(result, "update") <= {
        "kubernetes:cloud.google.com/v1:ComputeClass",
        "kubernetes:apps/v1:Deployment",
    }
    # the Deployment only where its rollout wait and drain are sized from the sources, never its containers
    for change in result.of("update"):
        if change.record["type"] == "kubernetes:apps/v1:Deployment":
            sized = {entry.path for entry in change.inputs if not str(entry.new).startswith(SHUTDOWN_TIMEOUT)}
            assert sized <= DEPLOYMENT_SIZED_FROM_CAPACITY
            assert change.config_keys == {"capacity.sources"}


@pytest.mark.parametrize("stack", STACK_FILES)
def test_routing_mode_round_trip_adds_and_removes_gateway_objects_only(
    stack: str, render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    mode = stack_config(stack).routing.mode
    other = RoutingMode.clusterip if mode == RoutingMode.gateway else RoutingMode.gateway
    base = render_stack(stack)
    toggled = render_with(render_stack, tmp_path_factory, stack, "routing", {"routing": {"mode": other.value}})
    # a platform review: the in-cluster policy's sources had followed the mode, shutting the old front's traffic out at
    # the start of the roll; each front's ranges come and go in a policy of the front's own
    serving = "llm-network-policies-serving"
    assert (
        base.named(serving)["inputs"]["spec"]["ingress"][0]["from"]
        == (toggled.named(serving)["inputs"]["spec"]["ingress"][0]["from"])
    )
    for old, new in ((base, toggled), (toggled, base)):
        # the endpoint changes (clients break: refused in production unless acknowledged, test_day2_clients_and_order)
        result = preview_states(old.states, new.states, accept_client_break=True)
        assert result.refusals == []
        assert result.of("replace") == [], [change.urn for change in result.of("replace")]
        for change in result.of("create") + result.of("delete"):
            # the front's own NetworkPolicy comes and goes with it (components/network_policy.py)
            front_policy = change.record["name"] in (
                "llm-network-policies-gateway",
                "llm-network-policies-load-balancer",
            )
            assert (
                any(parent in change.urn for parent in ROUTING_PARENTS)
                or front_policy
                or change.record["type"] in ("gcp:projects/service:Service")
            ), change.urn
        assert "gcp:container/cluster:Cluster" in types_of(result, "update")


CLUSTER_MOVES: dict[str, tuple[str, dict[str, Any]]] = {
    "name": ("cluster.name", {"cluster": {"name": "llm-serving-b"}}),
    "region": ("region", {"region": "us-east1", "zones": ["us-east1-b"]}),
    "range": ("cluster.network.subnetCidr", {"cluster": {"network": {"subnetCidr": "10.16.0.0/20"}}}),
}


@pytest.mark.parametrize("stack", STACK_FILES)
@pytest.mark.parametrize("move", sorted(CLUSTER_MOVES))
def test_cluster_move_replaces_everything_on_it_and_prod_refuses(
    stack: str, move: str, render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    key, settings = CLUSTER_MOVES[move]
    base = render_stack(stack)
    result = preview_of(base, render_with(render_stack, tmp_path_factory, stack, f"cluster-{move}", settings))
    replaced = {change.record["name"] for change in result.of("replace")}
    assert "llm-gke" in replaced
    on_cluster = {record["name"] for record in converged(base) if record["provider"] == "llm-k8s"}
    assert on_cluster <= replaced | {change.record["name"] for change in result.of("delete")}
    cluster = next(change for change in result.of("replace") if change.record["name"] == "llm-gke")
    assert key in cluster.config_keys
    if stack_config(stack).cluster.deletion_protection:
        assert any("llm-gke" in refusal and key in refusal for refusal in result.refusals), result.refusals
    else:
        assert not any("llm-gke" in refusal for refusal in result.refusals)


@pytest.mark.parametrize("stack", STACK_FILES)
@pytest.mark.parametrize(("key", "cidr"), [("podsCidr", "10.64.0.0/14"), ("servicesCidr", "10.9.0.0/20")])
def test_a_new_pod_or_service_range_is_refused_while_the_cluster_uses_it(
    stack: str, key: str, cidr: str, render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The provider updates secondary ranges in place (not ForceNew), and GCP refuses to change one a
    cluster allocates from: `pulumi up` would fail half-way, so the preview refuses it up front."""
    settings = {"cluster": {"network": {key: cidr}}}
    result = preview_of(render_stack(stack), render_with(render_stack, tmp_path_factory, stack, key, settings))
    (refusal,) = [refusal for refusal in result.refusals if "secondary range" in refusal]
    assert f"cluster.network.{key}" in refusal and "llm-subnet" in refusal


def test_a_plain_render_leaves_no_stale_preview(render_stack: RenderStack, tmp_path: Path) -> None:
    """The preview files belong to the render that wrote them: the next render into the same
    directory without --against removes them like any other file of the previous render."""
    out = tmp_path / "dev"
    assert run_render("dev", "--out", str(out), "--against", str(render_stack("dev").directory)).returncode == 0
    assert (out / "changes.md").is_file()
    assert run_render("dev", "--out", str(out)).returncode == 0
    assert not (out / "changes.md").exists() and not (out / "changes.json").exists()


WEIGHTS_LAYOUT_CHANGES: dict[str, Any] = {
    "size": lambda config: {"weights": {"sizeGib": config.weights.size_gib + 50}},
    "zone": lambda config: {
        "zones": [
            *config.zones,
            next(f"{config.region}-{letter}" for letter in "abcdf" if f"{config.region}-{letter}" not in config.zones),
        ]
    },
}


@pytest.mark.parametrize("stack", STACK_FILES)
@pytest.mark.parametrize("change", sorted(WEIGHTS_LAYOUT_CHANGES))
def test_a_new_weights_size_or_zone_makes_a_new_volume_not_a_stuck_one(
    stack: str, change: str, render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A static volume cannot be resized or moved in place: the change creates a new volume and claim,
    the Deployment rolls onto the claim, and the old pair is deleted; nothing is replaced or refused."""
    settings = WEIGHTS_LAYOUT_CHANGES[change](stack_config(stack))
    result = preview_of(render_stack(stack), render_with(render_stack, tmp_path_factory, stack, change, settings))
    assert result.refusals == [] and result.of("replace") == [], [c.urn for c in result.of("replace")]
    volumes = {"kubernetes:core/v1:PersistentVolume", "kubernetes:core/v1:PersistentVolumeClaim"}
    assert types_of(result, "create") >= volumes and types_of(result, "delete") >= volumes
    assert "kubernetes:apps/v1:Deployment" in types_of(result, "update")
    # a day-2 review: the grown disks give the pods no room, read-only; a disk added in a new zone grows none
    grown = [warning for warning in result.warnings if "the pods mount it read-only" in warning]
    assert len(grown) == (len(stack_config(stack).zones) if change == "size" else 0), grown
    assert all("adds cost (and rolls the pods onto a new volume), not room" in warning for warning in grown)
