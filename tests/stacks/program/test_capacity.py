"""B200 capacity: the ComputeClass fallback, its zones and how the serving pods select it."""

from __future__ import annotations

from typing import Any

import pytest

from commands.render.time_to_serve import startup_notes
from components.capacity import CAPACITY_KINDS, COMPUTE_CLASS_SELECTOR, compute_class_spec
from stacks.args import (
    capacity_args,
    capacity_sources,
    flex_start_recycling_seconds,
    no_ready_replica_seconds,
    pending_alert_seconds,
)
from stacks.load.loader import validate
from tests.conftest import RenderStack
from tests.manifest_schemas import validate_custom
from tests.rendered import STACK_FILES, RenderedStack
from tests.variants import VARIANTS, render_variant, stack_config, stack_settings, variant_config

A4_NODE = {"machineType": "a4-highgpu-8g", "gpu": {"type": "nvidia-b200", "count": 8, "driverVersion": "latest"}}
POD_CAPACITY_SELECTORS = (
    "cloud.google.com/gke-spot",
    "cloud.google.com/gke-flex-start",
    "cloud.google.com/reservation-name",
)


@pytest.fixture(scope="module")
def reserved(render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory) -> RenderedStack:
    return render_variant("reserved", render_stack, tmp_path_factory)


def compute_class(stack: RenderedStack) -> dict[str, Any]:
    (manifest,) = stack.kind("ComputeClass")
    return manifest


def provisioning(priority: dict[str, Any]) -> dict[str, Any]:
    """A priority without the A4 node shape and the zones: what makes the capacity source."""
    return {key: value for key, value in priority.items() if key not in {"machineType", "gpu", "location"}}


def test_prod_falls_back_from_flex_start_to_spot(prod: RenderedStack) -> None:
    spec = compute_class(prod)["spec"]
    assert [provisioning(priority) for priority in spec["priorities"]] == [
        # 12 pods moved one at a time before the nodes' 7-day limit: 12 x 35 min
        {"flexStart": {"enabled": True, "nodeRecycling": {"leadTimeSeconds": 25200}}, "maxRunDurationSeconds": 604800},
        {"spot": True},
    ]
    assert spec["whenUnsatisfiable"] == "DoNotScaleUp"


def test_a_bounded_flex_start_wait_is_declared_and_counted() -> None:
    """GKE tries Flex-start for capacityCheckWaitTimeSeconds, then Spot: the ComputeClass says it, and what waits
    for a new pod (the alerts; the rollout: tests/components/test_vllm_component.py) waits that much longer."""
    flex_first = [{"type": "flexStart", "capacityCheckWaitTimeSeconds": 1800}, {"type": "spot"}]
    config = validate({**stack_settings("prod"), "capacity": {"nodes": 12, "sources": flex_first}})
    spec = compute_class_spec(capacity_args(config, []).sources, config.zones, "latest")
    assert (
        spec["priorities"][0]["capacityCheckWaitTimeSeconds"] == 1800
        and "capacityCheckWaitTimeSeconds" not in (spec["priorities"][1])
    )
    manifest = {"apiVersion": "cloud.google.com/v1", "kind": "ComputeClass", "metadata": {"name": "b"}, "spec": spec}
    validate_custom(manifest)
    prod = stack_config("prod")
    assert no_ready_replica_seconds(config) == no_ready_replica_seconds(prod) + 1800
    assert pending_alert_seconds(config) == pending_alert_seconds(prod) + 1800
    (note,) = [note for note in startup_notes(config) if note.startswith("Flex-start before another source")]
    assert "up to 1,800 s for a node (capacity.sources[0].capacityCheckWaitTimeSeconds)" in note
    (unbounded,) = [note for note in startup_notes(prod) if note.startswith("Flex-start before another source")]
    assert "GKE's documentation does not state" in unbounded and "not counted here" in unbounded


def test_dev_is_one_spot_priority(dev: RenderedStack) -> None:
    spec = compute_class(dev)["spec"]
    assert [provisioning(priority) for priority in spec["priorities"]] == [{"spot": True}]
    assert spec["whenUnsatisfiable"] == "DoNotScaleUp"


def test_reservation_then_flex_start(reserved: RenderedStack) -> None:
    priorities = compute_class(reserved)["spec"]["priorities"]
    assert [provisioning(priority) for priority in priorities] == [
        {
            "reservations": {
                "affinity": "Specific",
                "specific": [{"name": "a4-reserved", "project": "shared-reservations"}],
            }
        },
        {"flexStart": {"enabled": True, "nodeRecycling": {"leadTimeSeconds": 9000}}, "maxRunDurationSeconds": 86400},
    ]


@pytest.mark.parametrize("name", ["dev", "prod"])
def test_every_priority_is_an_a4_node_in_the_weight_zones(name: str, render_stack: RenderStack) -> None:
    spec = compute_class(render_stack(name))["spec"]
    for priority in spec["priorities"]:
        assert {key: priority[key] for key in A4_NODE} == A4_NODE
        assert priority["location"] == {"zones": stack_config(name).zones}


def test_multi_zone_priorities(reserved: RenderedStack) -> None:
    for priority in compute_class(reserved)["spec"]["priorities"]:
        assert priority["location"] == {"zones": variant_config("reserved").zones}


def test_compute_class_matches_its_crd(dev: RenderedStack, prod: RenderedStack, reserved: RenderedStack) -> None:
    for stack in (dev, prod, reserved):
        manifest = compute_class(stack)
        assert manifest["apiVersion"] == "cloud.google.com/v1"
        assert manifest["metadata"]["name"] == "b200-serving"
        validate_custom(manifest)


@pytest.mark.parametrize("name", ["dev", "prod"])
def test_serving_pods_select_the_class_only(name: str, render_stack: RenderStack) -> None:
    stack = render_stack(name)
    (deployment,) = stack.kind("Deployment")
    node_selector = deployment["spec"]["template"]["spec"]["nodeSelector"]
    assert node_selector == {COMPUTE_CLASS_SELECTOR: compute_class(stack)["metadata"]["name"]}
    assert not set(POD_CAPACITY_SELECTORS) & set(node_selector)


def test_deployment_waits_for_the_compute_class(prod: RenderedStack) -> None:
    deployment = prod.one("kubernetes:apps/v1:Deployment")
    assert "llm-capacity-compute-class" in deployment["options"]["dependsOn"]


def test_compute_class_and_pod_monitoring_wait_for_their_crds(stack: RenderedStack) -> None:
    """GKE serves the ComputeClass and PodMonitoring CRDs itself, after the cluster is RUNNING: on a
    first `up` both objects are created only once the wait Job saw the CRDs Established."""
    (wait,) = [job for job in stack.kind("Job") if job["metadata"]["name"].endswith("-crds")]
    waited = " ".join(wait["spec"]["template"]["spec"]["containers"][0]["args"])
    assert "computeclasses.cloud.google.com" in waited and "podmonitorings.monitoring.googleapis.com" in waited
    job_record = next(
        record
        for record in stack.of_type("kubernetes:batch/v1:Job")
        if record["inputs"]["metadata"]["name"] == wait["metadata"]["name"]
    )
    compute_class = stack.one("kubernetes:cloud.google.com/v1:ComputeClass")
    pod_monitoring = stack.named("llm-vllm-pod-monitoring")
    for record in (compute_class, pod_monitoring):
        assert job_record["name"] in record["options"]["dependsOn"], record["name"]


def _renders_using(kind: str) -> list[str]:
    """The shipped stack files, then the variants of tests/variants.py, whose capacity sources use `kind`."""
    configs = {
        **{stack: stack_config(stack) for stack in STACK_FILES},
        **{name: variant_config(name) for name in VARIANTS},
    }
    return [name for name, config in configs.items() if any(source.type == kind for source in config.capacity.sources)]


@pytest.mark.parametrize("kind", sorted(CAPACITY_KINDS))
def test_every_capacity_kind_is_rendered_policy_clean_with_its_priority(
    kind: str, render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A new kind in components/capacity.py CAPACITY_KINDS needs a stack file or a variant that uses it: its render
    exits 0 (`render_stack` asserts it: a priority LLM-GPU-002 reads as on-demand stops it), and its ComputeClass
    fits the vendored CRD and holds each source's priority as the component declares it."""
    users = _renders_using(kind)
    assert users, f"no stack file or variant of tests/variants.py uses the capacity source type {kind!r}"
    name = users[0]
    rendered = render_stack(name) if name in STACK_FILES else render_variant(name, render_stack, tmp_path_factory)
    config = stack_config(name) if name in STACK_FILES else variant_config(name)
    validate_custom(compute_class(rendered))
    sources = capacity_sources(config.capacity.sources, flex_start_recycling_seconds(config))
    priorities = compute_class(rendered)["spec"]["priorities"]
    assert [provisioning(priority) for priority in priorities] == [source.priority_fields() for source in sources]
