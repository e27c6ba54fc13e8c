"""What a cluster the stack does not manage may already hold: the VPC's proxy-only subnet (one per VPC
and region: a second fails `pulumi up`), the cluster-wide custom-metrics adapter, a Shared VPC whose
firewall rules belong to the host project. Run as the render runs the program, with the offline
look-ups answering for the cluster's VPC."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from commands.engine import mocks
from commands.stackfile import stack_settings
from components.autoscaling import ADAPTER_NAME
from components.existing_cluster import ExistingClusterError
from stacks.load.loader import InvalidConfig, validate
from tests.rendered import ROOT

SUBNET = "gcp:compute/subnetwork:Subnetwork"
FIREWALL = "gcp:compute/firewall:Firewall"


def run(
    tmp_path: Path,
    settings: dict[str, Any],
    proxy_subnets: Callable[[str, str], list[dict[str, Any]]] = mocks.stand_in_proxy_subnets,
    existing_cluster: Callable[[str, str, str], dict[str, Any]] = mocks.stand_in_cluster,
) -> list[mocks.Registration]:
    document = yaml.safe_load((ROOT / "Pulumi.staging.yaml").read_text())
    for key, value in settings.items():
        document["config"][f"gke-b200-serving:{key}"] = value
    path = tmp_path / "Pulumi.shared.yaml"
    path.write_text(yaml.safe_dump(document))
    monitor = mocks.RecordingMonitor(mocks.OfflineMocks(existing_cluster=existing_cluster, proxy_subnets=proxy_subnets))
    mocks.run_program(stack_settings.load_stack_settings("shared", path), monitor=monitor)
    return monitor.registrations


EXISTING = {"cluster": {"existing": True, "name": "platform-autopilot"}, "autoscaling": {"metricsAdapter": "existing"}}


def proxy_subnets(registrations: list[mocks.Registration]) -> list[mocks.Registration]:
    return [r for r in registrations if r.type == SUBNET and r.inputs.get("purpose") == "REGIONAL_MANAGED_PROXY"]


def test_the_vpcs_proxy_only_subnet_is_looked_up_and_reused(tmp_path: Path) -> None:
    registrations = run(tmp_path, EXISTING)
    assert proxy_subnets(registrations) == [], "no second proxy-only subnet in a VPC that has one"
    (firewall,) = [r for r in registrations if r.type == FIREWALL and "serving" in r.name]
    assert mocks.STAND_IN_PROXY_SUBNET_CIDR in firewall.inputs["sourceRanges"], "the found subnet's range"
    assert "10.129.0.0/23" in str(firewall.inputs["description"]) and "proxy-only-us-central1" in str(
        firewall.inputs["description"]
    )
    (gateway,) = [r for r in registrations if r.type == "kubernetes:gateway.networking.k8s.io/v1:Gateway"]
    assert gateway.inputs["metadata"]["annotations"]["llm-serving/proxy-only-subnet"] == "proxy-only-us-central1"


def test_the_subnet_is_matched_by_its_network_as_the_provider_returns_it(tmp_path: Path) -> None:
    """The data source gives `network` as the network's self link and `networkSelfLink` (deprecated) as
    its bare name (terraform-provider-google data_source_google_compute_subnetworks.go:
    filepath.Base(subnet.Network)); matching on the latter never found the VPC's subnet, so a second
    ACTIVE proxy-only subnet was declared and `pulumi up` failed."""

    def as_the_provider_returns(project: str, region: str) -> list[dict[str, Any]]:
        return [{**subnet, "networkSelfLink": "default"} for subnet in mocks.stand_in_proxy_subnets(project, region)]

    assert proxy_subnets(run(tmp_path, EXISTING, proxy_subnets=as_the_provider_returns)) == []


def test_a_vpc_without_one_gets_one_declared(tmp_path: Path) -> None:
    other_vpc = [
        {
            **mocks.stand_in_proxy_subnets("p", "us-central1")[0],
            "network": "https://www.googleapis.com/compute/v1/projects/p/global/networks/x",
            "networkName": "x",
            "networkSelfLink": "x",
        }
    ]
    (subnet,) = proxy_subnets(run(tmp_path, EXISTING, proxy_subnets=lambda project, region: other_vpc))
    assert subnet.inputs["role"] == "ACTIVE"


def test_the_subnet_the_stack_made_stays_declared_on_the_next_up(tmp_path: Path) -> None:
    """The first `up` in a VPC without one declares `<cluster>-proxy-only`; the next `up`'s look-up finds
    that very subnet. Taken for another's, it was no longer declared, and that `up` would delete the subnet
    the Gateway's proxies use (a platform review)."""
    (made,) = proxy_subnets(run(tmp_path, EXISTING, proxy_subnets=lambda project, region: []))
    own_name = made.inputs["name"]

    def after_the_first_up(project: str, region: str) -> list[dict[str, Any]]:
        (found,) = mocks.stand_in_proxy_subnets(project, region)
        return [{**found, "name": own_name, "selfLink": found["selfLink"].rsplit("/", 1)[0] + "/" + own_name}]

    registrations = run(tmp_path, EXISTING, proxy_subnets=after_the_first_up)
    (kept,) = proxy_subnets(registrations)
    assert (kept.name, kept.inputs["name"]) == (made.name, own_name)
    (gateway,) = [r for r in registrations if r.type == "kubernetes:gateway.networking.k8s.io/v1:Gateway"]
    assert "llm-serving/proxy-only-subnet" not in gateway.inputs["metadata"].get("annotations", {})


def test_no_adapter_is_declared_where_the_cluster_runs_one(tmp_path: Path) -> None:
    registrations = run(tmp_path, EXISTING)
    assert not [r for r in registrations if ADAPTER_NAME in str(r.inputs.get("metadata", {}).get("name", ""))]
    assert [r for r in registrations if r.type == "kubernetes:autoscaling/v2:HorizontalPodAutoscaler"]


def test_an_adapter_declared_in_an_existing_cluster_is_never_deleted(tmp_path: Path) -> None:
    settings = {**EXISTING, "autoscaling": {"metricsAdapter": "declare"}}
    adapter = [r for r in run(tmp_path, settings) if "metrics-adapter" in r.name and r.custom]
    assert len(adapter) > 5
    assert all(r.options["retainOnDelete"] for r in adapter), [
        r.name for r in adapter if not r.options["retainOnDelete"]
    ]


def test_a_new_cluster_declares_its_adapter_and_deletes_it_with_the_stack(tmp_path: Path) -> None:
    adapter = [r for r in run(tmp_path, {}) if "metrics-adapter" in r.name and r.custom]
    assert adapter and not any(r.options["retainOnDelete"] for r in adapter)


def test_the_adapter_source_is_required_on_an_existing_cluster_with_autoscaling() -> None:
    with pytest.raises(InvalidConfig, match=r"autoscaling\.metricsAdapter: required with cluster\.existing"):
        validate({"environment": "staging", "project": "my-llm-staging", "cluster": {"existing": True}})
    with pytest.raises(InvalidConfig, match=r"autoscaling\.metricsAdapter"):
        validate({"environment": "staging", "project": "my-llm-staging", "autoscaling": {"metricsAdapter": "shared"}})


def test_a_shared_vpc_is_refused_in_gateway_mode(tmp_path: Path) -> None:
    def shared_vpc(name: str, location: str, project: str) -> dict[str, Any]:
        return {
            **mocks.stand_in_cluster(name, location, project),
            "network": "projects/host-net/global/networks/shared",
        }

    with pytest.raises(ExistingClusterError, match="a Shared VPC of host project host-net"):
        run(tmp_path, EXISTING, existing_cluster=shared_vpc)
