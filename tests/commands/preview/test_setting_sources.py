"""The stack settings behind a preview's changes, followed through stacks/args.py and the components:
real keys, the settings each Args field reads, the inputs each field feeds, and day-2 changes of the
shipped stacks where a hand-kept table named the wrong setting or none (a renamed service's CRD
readiness Job, a new weights revision, the Gateway turned on)."""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import gc
import json
import logging
from typing import Any, Optional, Union

import pulumi
import pytest

from commands.engine import mocks
from commands.io.states import STATES_FILE
from commands.preview.args_of_config import ARGS_OF_CONFIG
from commands.preview.changes import ResourceChange
from commands.preview.command import Preview, preview
from commands.preview.setting_sources import (
    COMPONENT_SETTINGS,
    NO_SETTING_DIFFERS,
    _name_the_sources,
    _optional_fields,
    composition_settings,
    dotted,
    inputs_fed,
    other_values,
    settings_by_component,
    trace_inputs_fed,
)
from commands.preview.update_plan import index_by_urn, update_plan
from commands.render.command import resource_records
from components.crd_readiness import CrdReadiness
from components.gateway import InferenceGateway
from components.vllm import VllmEngine
from stacks.config.stack import StackConfig
from stacks.load.loader import validate
from tests.commands.preview.test_day2 import converged, day2
from tests.conftest import RenderStack
from tests.rendered import STACK_FILES, RenderedStack
from tests.variants import VARIANTS, stack_settings


def _has_key(model: type[Any], dotted: str) -> bool:
    """Whether a camelCase dotted key names a field of the config model (list items by their model)."""
    head, _, rest = dotted.partition(".")
    fields = {info.alias or name: info for name, info in model.model_fields.items()}
    if head not in fields:
        return False
    if not rest:
        return True
    annotation = fields[head].annotation
    candidates = [annotation, *getattr(annotation, "__args__", ())]
    return any(isinstance(candidate, type) and _has_key(candidate, rest) for candidate in candidates)


def test_every_setting_followed_is_a_stack_setting() -> None:
    found = {key for fields in settings_by_component().values() for keys in fields.values() for key in keys}
    assert found >= {"routing.serviceName", "weights.revision", "routing.mode", "engine.maxNumSeqs"}
    for key in found | composition_settings():
        assert _has_key(StackConfig, key), f"{key} is not a stack setting"


def test_each_args_field_names_the_settings_it_is_built_from() -> None:
    fed = settings_by_component()
    assert fed[CrdReadiness.TYPE]["name"] == {"routing.serviceName"}
    assert fed[VllmEngine.TYPE]["model_revision"] == {"weights.revision"}
    assert fed[VllmEngine.TYPE]["engine.max_num_seqs"] == {"engine.maxNumSeqs"}
    assert {"capacity.nodes", "autoscaling.enabled"} <= fed[VllmEngine.TYPE]["replicas"]
    assert fed[InferenceGateway.TYPE]["epp_replicas"] == {"routing.gateway.eppReplicas"}
    # a setting read on one branch only: the Gateway's proxy-only subnet opens the network policies
    assert "routing.gateway.proxySubnetCidr" in fed["llm-serving:serving:NetworkPolicies"]["gateway_source_ranges"]
    assert fed["pulumi:providers:gcp"]["project"] == {"project"}
    # the switches of the composition itself
    assert {"routing.mode", "benchmark.enabled", "cluster.existing", "autoscaling.enabled"} <= composition_settings()


def fed(component_type: str, name: str, field: str) -> set[tuple[str, str, str]]:
    """(child type, child name, input) an Args field feeds, its list items by what they are."""
    return {
        (child_type, child_name, dotted(anchor))
        for child_type, child_name, anchor in inputs_fed(component_type, name, field)
    }


def test_each_args_field_feeds_the_inputs_of_the_resource_it_belongs_to() -> None:
    picker = {(path, child_type) for child_type, _, path in fed(InferenceGateway.TYPE, "llm-gateway", "epp_replicas")}
    assert ("spec.replicas", "kubernetes:apps/v1:Deployment") in picker
    proxy = fed(InferenceGateway.TYPE, "llm-gateway", "proxy_subnet_cidr")
    assert ("gcp:compute/subnetwork:Subnetwork", "llm-gateway-proxy-subnet", "ipCidrRange") in proxy
    crds_job = fed(CrdReadiness.TYPE, "llm-crds", "name")
    assert ("kubernetes:batch/v1:Job", "llm-crds-job", "metadata.name") in crds_job
    engine = fed(VllmEngine.TYPE, "llm-vllm", "engine.max_num_seqs")
    assert {child_type for child_type, _, _ in engine} == {"kubernetes:apps/v1:Deployment"}
    # an engine flag by its name in each layout: one `vllm` container (ClusterIP) and a container per
    # rank (the Gateway's per-rank pods), wherever the flag sits among the arguments
    paths = {path for _, _, path in engine}
    assert "spec.template.spec.containers[vllm].args[--max-num-seqs]" in paths
    assert "spec.template.spec.containers[vllm-3].args[--max-num-seqs]" in paths
    # and the compile cache's folder, keyed on the engine's flags (a config of the tracer turns the cache on)
    assert all(
        path.endswith("args[--max-num-seqs]") or path.startswith("spec.template.spec.volumes[compile-cache].")
        for path in paths
    ), paths


def every_change_names_its_settings_or_why_none(result: Preview) -> None:
    """The general property: each change of changes.json has configKeys (real stack settings) or noConfigKeys."""
    for change in result.changes:
        entry = change.as_json()
        assert entry.get("configKeys") or entry.get("noConfigKeys"), entry["urn"]
        for key in entry.get("configKeys", []):
            assert _has_key(StackConfig, key), f"{entry['urn']}: {key} is not a stack setting"


def keys_of(result: Preview, name: str) -> set[str]:
    (change,) = [change for change in result.changes if change.record["name"] == name]
    return change.config_keys


def test_a_renamed_service_names_the_service_not_the_weights_revision(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    _, _, result = day2(render_stack, tmp_path_factory, "dev", "service-chat", {"routing": {"serviceName": "chat"}})
    every_change_names_its_settings_or_why_none(result)
    job = next(change for change in result.of("replace") if change.record["name"] == "llm-crds-job")
    assert job.config_keys == {"routing.serviceName"}
    assert {key for change in result.changes for key in change.config_keys} == {"routing.serviceName"}


def test_a_new_revision_names_the_revision_on_every_change(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    revision = {"weights": {"revision": "0123456789abcdef0123456789abcdef01234567"}}
    _, _, result = day2(render_stack, tmp_path_factory, "dev", "revision-pinned", revision)
    every_change_names_its_settings_or_why_none(result)
    assert keys_of(result, "llm-vllm-deployment") == {"weights.revision"}
    weights = [change for change in result.changes if "-weights-" in change.record["name"]]
    assert weights and all(change.config_keys == {"weights.revision"} for change in weights)


def test_the_gateway_turned_on_names_the_routing_mode_on_the_dashboard_and_network_policy(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    _, _, result = day2(render_stack, tmp_path_factory, "dev", "gateway-on", {"routing": {"mode": "gateway"}})
    every_change_names_its_settings_or_why_none(result)
    assert keys_of(result, "llm-monitoring-dashboard") == {"routing.mode"}
    assert keys_of(result, "llm-network-policies-serving") == {"routing.mode"}
    assert keys_of(result, "llm-gateway-epp-deployment") == {"routing.mode"}  # a component the mode turns on
    assert keys_of(result, "llm-routing-service") == {"routing.mode"}  # and one it turns off


def test_an_engine_flag_names_that_flag(render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory) -> None:
    _, _, result = day2(render_stack, tmp_path_factory, "dev", "max-seqs", {"engine": {"maxNumSeqs": 4096}})
    every_change_names_its_settings_or_why_none(result)
    assert keys_of(result, "llm-vllm-deployment") == {"engine.maxNumSeqs"}


def names_only_settings_that_changed(result: Preview, old: RenderedStack, new: RenderedStack) -> None:
    """Every setting a change names differs between the two renders (their `settingDigests`)."""
    old_digests, new_digests = (
        json.loads((side.directory / STATES_FILE).read_text())["settingDigests"] for side in (old, new)
    )
    differ = {key for key in old_digests.keys() & new_digests.keys() if old_digests[key] != new_digests[key]}
    for change in result.changes:
        assert change.config_keys <= differ, f"{change.record['name']}: {change.config_keys - differ} did not change"


@pytest.mark.parametrize(
    ("label", "settings", "named"),
    [
        (
            "speculative-tokens",
            {"engine": {"speculative": {"numSpeculativeTokens": 2}}},
            "engine.speculative.numSpeculativeTokens",
        ),
        ("speculative-off", {"engine": {"speculative": None}}, "engine.speculative"),
        (
            "maintenance-start",
            {"cluster": {"maintenanceWindow": {"start": "02:00"}}},
            "cluster.maintenanceWindow.start",
        ),
        ("schedule-off", {"schedule": {"enabled": False}}, "schedule.enabled"),
        ("image-mirror-off", {"startup": {"imageMirror": {"enabled": False}}}, "startup.imageMirror.enabled"),
    ],
)
def test_a_change_the_traced_configs_do_not_show_names_the_setting_that_changed(
    label: str,
    settings: dict[str, Any],
    named: str,
    render_stack: RenderStack,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Where the inputs a setting feeds are not among those followed from the traced configs (the speculative
    flag is followed to `routing.mode`, the maintenance window to its days and hours), the change names the
    component's settings that changed, else the update's: never one whose value is the same on both sides."""
    old, new, result = day2(render_stack, tmp_path_factory, "dev", label, settings)
    assert result.changes
    every_change_names_its_settings_or_why_none(result)
    names_only_settings_that_changed(result, old, new)
    assert all(change.config_keys == {named} for change in result.changes), [
        (change.record["name"], change.config_keys) for change in result.changes
    ]


def test_of_two_settings_changed_a_change_not_followed_names_the_one_no_other_change_explains(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    entries = [
        {"name": "morning", "cron": "0 7 * * 1-5", "replicas": 1},
        {"name": "night", "cron": "0 20 * * 1-5", "replicas": 0},
    ]
    settings = {"engine": {"maxNumSeqs": 4096}, "schedule": {"entries": entries}}
    old, new, result = day2(render_stack, tmp_path_factory, "dev", "seqs-and-entries", settings)
    names_only_settings_that_changed(result, old, new)
    assert keys_of(result, "llm-vllm-deployment") == {"engine.maxNumSeqs"}
    for name in ("llm-schedule-morning", "llm-schedule-night", "llm-schedule-wake", "llm-schedule-sleep"):
        assert keys_of(result, name) == {"schedule.entries"}


def test_cron_entries_changed_with_the_node_count_are_named_on_their_cronjobs(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The node count sizes the schedule's steps too: the entries that replace business hours are named
    on the CronJobs they create and delete (the Args field of the steps holds both settings)."""
    entries = [{"name": "morning", "cron": "0 7 * * 1-5", "replicas": 1}]
    settings = {"capacity": {"nodes": 2}, "schedule": {"entries": entries}}
    old, new, result = day2(render_stack, tmp_path_factory, "dev", "entries-and-nodes", settings)
    names_only_settings_that_changed(result, old, new)
    for name in ("llm-schedule-morning", "llm-schedule-wake", "llm-schedule-sleep"):
        assert "schedule.entries" in keys_of(result, name), name


def test_a_routing_switch_with_an_engine_flag_names_both_on_the_serving_pods(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The per-rank containers the Gateway brings hold the new --max-num-seqs too: the mode, which other
    changes name alone, does not hide the flag."""
    settings = {"routing": {"mode": "gateway"}, "engine": {"maxNumSeqs": 512}}
    old, new, result = day2(render_stack, tmp_path_factory, "dev", "gateway-and-seqs", settings)
    names_only_settings_that_changed(result, old, new)
    assert keys_of(result, "llm-vllm-deployment") == {"routing.mode", "engine.maxNumSeqs"}


@pytest.mark.parametrize(("stack", "nodes"), [("dev", 2), ("prod", 10)])
def test_a_component_the_switch_declares_names_the_switch_not_a_size_changed_with_it(
    stack: str, nodes: int, render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """capacity.nodes is read by the composition too (in dev it also sizes the schedule, which did not
    change; prod has none), but only routing.mode declares the Gateway and leaves out the ClusterIP routing."""
    settings = {"routing": {"mode": "gateway"}, "capacity": {"nodes": nodes}}
    old, new, result = day2(render_stack, tmp_path_factory, stack, "gateway-and-nodes", settings)
    names_only_settings_that_changed(result, old, new)
    for name in ("llm-gateway", "llm-gateway-epp-deployment", "llm-routing-service"):
        assert keys_of(result, name) == {"routing.mode"}


def test_components_two_switches_declare_name_each_its_own_switch(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The Gateway and autoscaling turned on in one update: the autoscaler and its metrics adapter come
    with autoscaling.enabled, the Gateway with routing.mode."""
    settings = {"routing": {"mode": "gateway"}, "autoscaling": {"enabled": True}}
    old, new, result = day2(render_stack, tmp_path_factory, "dev", "gateway-and-autoscaling", settings)
    names_only_settings_that_changed(result, old, new)
    for name in ("llm-autoscaler", "llm-autoscaler-hpa", "llm-metrics-adapter", "llm-metrics-adapter-deployment"):
        assert keys_of(result, name) == {"autoscaling.enabled"}, name
    for name in ("llm-gateway", "llm-gateway-epp-deployment", "llm-routing-service"):
        assert keys_of(result, name) == {"routing.mode"}, name


def test_a_schedule_turned_off_with_a_new_node_count_names_the_switch_on_its_cronjobs(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The node count is one of many settings the schedule's steps are built from, not what removes the
    CronJobs: they name schedule.enabled alone."""
    settings = {"schedule": {"enabled": False}, "capacity": {"nodes": 2}}
    old, new, result = day2(render_stack, tmp_path_factory, "dev", "schedule-off-and-nodes", settings)
    names_only_settings_that_changed(result, old, new)
    for name in ("llm-schedule-wake", "llm-schedule-sleep"):
        assert keys_of(result, name) == {"schedule.enabled"}, name


def test_a_replacement_by_a_provider_that_moved_names_the_settings_behind_the_new_provider(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """An existing cluster: the Kubernetes provider moves under ExistingCluster, which replaces every
    object of the cluster; each replacement names cluster.existing, as the provider's creation does."""
    settings = {"cluster": {"existing": True, "name": "platform"}}
    old, new, result = day2(render_stack, tmp_path_factory, "dev", "existing-cluster", settings)
    names_only_settings_that_changed(result, old, new)
    moved = [change for change in result.of("replace") if "its provider moved" in " ".join(change.replaced_because)]
    assert moved and all("cluster.existing" in change.config_keys for change in moved)


def test_what_a_switch_adds_to_a_component_that_exists_either_way_names_the_switch(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The benchmark brings a time-to-ready metric into the monitoring, which exists either way: it names
    benchmark.enabled, not the benchmark's gateway address set with it. The image mirror turned off in the
    same update moves the serving pods' images (the mirror's addresses reach them from the composition):
    they name the mirror's switch, not a benchmark setting."""
    settings = {
        "benchmark": {"enabled": True, "gatewayAddress": "10.0.0.9"},
        "startup": {"imageMirror": {"enabled": False}},
    }
    old, new, result = day2(render_stack, tmp_path_factory, "staging", "benchmark-on-mirror-off", settings)
    names_only_settings_that_changed(result, old, new)
    assert keys_of(result, "llm-monitoring-time-to-ready") == {"benchmark.enabled"}
    for name in ("llm-vllm-deployment", "llm-gateway-epp-deployment"):
        assert keys_of(result, name) == {"startup.imageMirror.enabled"}, name


def test_a_resource_a_setting_adds_to_a_component_the_switch_declares_names_both(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Leaving the Gateway for ClusterIP routing with an internal load balancer: the routing's Service comes
    with the mode, its internal load balancer's Service with the mode and routing.internalLoadBalancer."""
    settings = {"routing": {"mode": "clusterip", "internalLoadBalancer": True}}
    old, new, result = day2(render_stack, tmp_path_factory, "staging", "clusterip-internal", settings)
    names_only_settings_that_changed(result, old, new)
    assert keys_of(result, "llm-routing-service") == {"routing.mode"}
    assert keys_of(result, "llm-routing-internal-service") == {"routing.mode", "routing.internalLoadBalancer"}


def test_an_input_not_followed_names_a_changed_setting_no_followed_input_explains(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The Cluster's deletion protection is followed to its own input; the maintenance window's start
    is not followed to the window's times: they name the start, not the protection."""
    settings = {"cluster": {"deletionProtection": True, "maintenanceWindow": {"start": "02:00"}}}
    old, new, result = day2(render_stack, tmp_path_factory, "dev", "protection-and-start", settings)
    names_only_settings_that_changed(result, old, new)
    assert keys_of(result, "llm-gke") == {"cluster.deletionProtection", "cluster.maintenanceWindow.start"}


def test_a_change_between_renders_of_the_same_settings_says_no_setting_differs(dev: RenderedStack) -> None:
    records = converged(dev)
    edited = copy.deepcopy(records)
    deployment = next(record for record in edited if record["name"] == "llm-vllm-deployment")
    deployment["inputs"]["spec"]["revisionHistoryLimit"] = 99
    result = update_plan(index_by_urn(records, "old"), index_by_urn(edited, "new"), frozenset())
    (change,) = result.changes
    assert change.no_config_keys == NO_SETTING_DIFFERS and not change.config_keys
    # renders made before the digests: the settings that feed the input, as the tracer follows them
    (change,) = update_plan(index_by_urn(records, "old"), index_by_urn(edited, "new"), None).changes
    assert change.config_keys and not change.no_config_keys


# ---------------------------------------------------------------- every layout a stack file or variant gives


def _raw(name: str) -> dict[str, Any]:
    """A shipped stack file's settings, or a variant's (tests/variants.py) laid over its stack file's."""
    if name in STACK_FILES:
        return stack_settings(name)
    base, settings = VARIANTS[name]
    return {**stack_settings(base), **settings}


def _serving_records(raw: dict[str, Any]) -> list[dict[str, Any]]:
    """The records of the serving component alone, declared from the stack's settings as the program does."""
    args = ARGS_OF_CONFIG[VllmEngine](validate(raw))
    return resource_records(
        mocks.run_under_mocks(COMPONENT_SETTINGS, lambda: VllmEngine("llm-vllm", args)).registrations
    )


def _other_sources(raw: dict[str, Any]) -> list[dict[str, Any]]:
    """Capacity sources that move the serving pods' grace and drain: Spot only, or not."""
    sources = validate(raw).capacity.sources
    return (
        [{"type": "spot"}]
        if any(source.type != "spot" for source in sources)
        else [{"type": "flexStart"}, {"type": "spot"}]
    )


@pytest.mark.parametrize("name", [*STACK_FILES, *VARIANTS])
def test_a_setting_change_is_named_in_every_layout_of_the_serving_pods(name: str) -> None:
    """The serving Deployment of every stack file and variant (one container or one per rank, MoE flags,
    a compile-cache mount, flags left out) names the one setting changed on each of its changes."""
    raw = _raw(name)
    engine = raw.get("engine", {})
    parser = None if validate(raw).engine.reasoning_parser else "qwen3"  # a flag left out or added
    changes = {
        "engine.maxNumSeqs": {"engine": {**engine, "maxNumSeqs": validate(raw).engine.max_num_seqs + 1}},
        "engine.reasoningParser": {"engine": {**engine, "reasoningParser": parser}},
        "capacity.sources": {"capacity": {**raw.get("capacity", {}), "sources": _other_sources(raw)}},
    }
    before = _serving_records(raw)
    for key, settings in changes.items():
        if "target" in raw and key == "engine.maxNumSeqs":
            continue  # a goal is sized from a measurement of the engine as it is; another has none
        result = preview(before, _serving_records({**raw, **settings}))
        assert result.changes, f"{name}: {key} changed nothing"
        every_change_names_its_settings_or_why_none(result)
        for change in result.changes:
            assert change.config_keys == {key}, f"{name}: {key} -> {change.record['name']}: {change.config_keys}"


def test_failed_declarations_of_the_tracer_stay_off_stderr(caplog: pytest.LogCaptureFixture) -> None:
    # Declaring a component with other Args fails on purpose: the SDK refuses OTHER in an input, and an
    # existing cluster's checks refuse another GKE version (a preview of a renamed existing cluster wrote
    # 5,154 lines of `Future exception was never retrieved` to stderr). Each field of both is followed.
    trace_inputs_fed.cache_clear()  # followed here, not answered from an earlier test's cache or the table
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        for component_type, name in (("llm-serving:gke:ExistingCluster", "llm"), ("llm-serving:gke:Cluster", "llm")):
            for field in settings_by_component()[component_type]:
                trace_inputs_fed(component_type, name, field)
        gc.collect()
    assert "never retrieved" not in caplog.text


def test_a_failure_outside_the_tracer_still_reaches_the_log(caplog: pytest.LogCaptureFixture) -> None:
    trace_inputs_fed("llm-serving:gke:ExistingCluster", "llm", "minimum_version")  # the tracer ran in this thread
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        future = asyncio.get_event_loop().create_future()
        future.set_exception(ValueError("a real failure"))
        del future
        gc.collect()
    assert "Future exception was never retrieved" in caplog.text and "a real failure" in caplog.text


def test_every_other_value_of_a_text_differs_and_one_keeps_its_shape() -> None:
    """ "00:00" reversed is itself: cluster.maintenanceWindow.start was traced to no input, so a new start time named
    only the window's hours or days (a day-2 review)."""
    for value in ("00:00", "22:00", "abba", "us-central1-b", "", "--"):
        assert value not in other_values(value)
    assert "11:11" in other_values("00:00") and "00:22" in other_values("22:00")


@pytest.mark.parametrize(
    "key",
    [
        "autoscaling.targetKvCacheUsage",
        "schedule.businessHours.replicas",
        "routing.internalLoadBalancerSourceRanges",
        "cluster.maintenanceWindow.start",
    ],
)
def test_a_setting_read_on_a_branch_the_presets_leave_off_is_traced(key: str) -> None:
    """Read only with the KV-cache metric, business hours at a count of their own or the internal load balancer,
    these fed no input in the table, so a change named another setting or none (a day-2 review)."""
    assert any(key in keys for fields in settings_by_component().values() for keys in fields.values())


def test_a_setting_another_changed_setting_gives_names_that_one_too() -> None:
    """A new goal sized the nodes: the changes named capacity.nodes, which the stack file does not hold, and not
    target.totalTokensPerSecond (a platform review)."""
    record = {"type": "kubernetes:apps/v1:Deployment", "name": "serving", "inputs": {}, "options": {}}
    sized = ResourceChange("urn:serving", record, "update", config_keys={"capacity.nodes"})
    other = ResourceChange("urn:other", record, "update", config_keys={"routing.serviceName"})
    _name_the_sources([sized, other], frozenset({"target.totalTokensPerSecond", "capacity.nodes"}))
    assert sized.config_keys == {"capacity.nodes", "target.totalTokensPerSecond"}
    assert other.config_keys == {"routing.serviceName"}


@dataclasses.dataclass(frozen=True)
class _SpelledArgs:
    required: str
    new_style: str | None
    old_style: Optional[str]  # noqa: UP045 (the spelling under test)
    union: Union[int, None]  # noqa: UP007 (the spelling under test)
    an_input: pulumi.Input[str] | None
    by_default: Any = None
    set_default: str = "x"


def test_an_optional_field_is_known_by_its_resolved_type_whichever_way_it_is_spelled() -> None:
    """A review: `Optional[X]` was missed (the annotation's text was read), so that field was never followed unset."""
    assert _optional_fields(_SpelledArgs) == {"new_style", "old_style", "union", "an_input", "by_default"}
