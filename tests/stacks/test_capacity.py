"""B200 capacity: the ComputeClass fallback, its zones and how the serving pods select it."""

from __future__ import annotations

from typing import Any

import pytest

from components.capacity import COMPUTE_CLASS_SELECTOR
from tests.conftest import RenderStack
from tests.manifest_schemas import validate_custom
from tests.rendered import RenderedStack
from tests.variants import render_variant, stack_config, variant_config

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
