"""The `gateway` routing mode: the GKE Inference Gateway in front of the same vLLM pods.

Renders `staging` (gateway by preset), a copy of `prod` switched to gateway mode and a copy of
`staging` that reuses an existing proxy-only subnet, then checks the objects, their
cross-references and schemas.
"""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.crd_readiness import KUBECTL_IMAGE
from components.endpoint_picker import EPP_IMAGE, EXT_PROC_PORT, HEALTH_PORT, epp_name, selector_labels
from components.gateway import (
    ALLOW_EXTERNAL_GATEWAY_ANNOTATION,
    GATEWAY_CRDS,
    HEALTH_CHECK_RANGES,
)
from stacks.load.loader import InvalidConfig, validate
from tests.conftest import RenderStack
from tests.manifest_schemas import is_custom, validate_custom
from tests.rendered import ROOT, RenderedStack, run_render

PROJECT = "gke-b200-serving"
ENGINE_PORT = 8000
RANK_PORTS = list(range(ENGINE_PORT, ENGINE_PORT + 8))
POOL = "qwen-serving"
NAMESPACE = "llm-serving"
PROXY_SUBNET_CIDR = "10.129.0.0/23"
CLUSTER = "gcp:container/cluster:Cluster"
SUBNET = "gcp:compute/subnetwork:Subnetwork"
FIREWALL = "gcp:compute/firewall:Firewall"
API = "gcp:projects/service:Service"
GATEWAY_API = "networkservices.googleapis.com"
ROUTING_AREA = "llm-serving:routing:"
GATEWAY_KINDS = {"Gateway", "HTTPRoute", "HealthCheckPolicy", "GCPBackendPolicy", "InferencePool"}
PICKER = epp_name(POOL)
POOL_REF = {"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": POOL}
SERVING_FIREWALL = "llm-gateway-serving-firewall"
EPP_FIREWALL = "llm-gateway-epp-firewall"
CRD_JOB = "llm-gateway-crds-job"


def stack_copy(directory: Path, source: str, extra: dict[str, Any]) -> Path:
    document = yaml.safe_load((ROOT / f"Pulumi.{source}.yaml").read_text())
    document["config"].update({f"{PROJECT}:{key}": value for key, value in extra.items()})
    path = directory / f"Pulumi.{source}.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


@pytest.fixture(scope="session")
def prod_gateway(render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory) -> RenderedStack:
    path = stack_copy(tmp_path_factory.mktemp("prod-gateway"), "prod", {"routing": {"mode": "gateway"}})
    return render_stack("prod", path)


@pytest.fixture(scope="session")
def staging_reusing_proxy_subnet(render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory) -> RenderedStack:
    reused = {"existingProxySubnet": "shared-proxy-only", "proxySubnetCidr": "10.130.0.0/23"}
    settings = {"routing": {"gateway": reused}}
    return render_stack("staging", stack_copy(tmp_path_factory.mktemp("staging-reuse"), "staging", settings))


@pytest.fixture(params=["staging", "prod-gateway"])
def gateway_stack(request: pytest.FixtureRequest) -> RenderedStack:
    fixture = "staging" if request.param == "staging" else "prod_gateway"
    stack: RenderedStack = request.getfixturevalue(fixture)
    return stack


def one_kind(stack: RenderedStack, kind: str) -> dict[str, Any]:
    (manifest,) = stack.kind(kind)
    return manifest


def pool(stack: RenderedStack) -> dict[str, Any]:
    return one_kind(stack, "InferencePool")


def picker(stack: RenderedStack) -> dict[str, Any]:
    (deployment,) = [item for item in stack.kind("Deployment") if item["metadata"]["name"] == PICKER]
    return deployment


def serving_deployment(stack: RenderedStack) -> dict[str, Any]:
    match_labels = pool(stack)["spec"]["selector"]["matchLabels"]
    matching = [
        deployment
        for deployment in stack.kind("Deployment")
        if match_labels.items() <= deployment["spec"]["template"]["metadata"]["labels"].items()
    ]
    assert len(matching) == 1, "the pool must select exactly the vLLM pods"
    return matching[0]


def test_pool_selects_the_vllm_pods_on_every_ranks_port(gateway_stack: RenderedStack) -> None:
    spec = pool(gateway_stack)["spec"]
    pod = serving_deployment(gateway_stack)["spec"]["template"]["spec"]
    container_ports = [port["containerPort"] for container in pod["containers"] for port in container.get("ports", [])]
    assert spec["targetPorts"] == [{"number": port} for port in RANK_PORTS]
    assert container_ports == RANK_PORTS
    assert spec["selector"]["matchLabels"] == {"app": POOL}


def test_pool_routes_through_the_pickers_service(gateway_stack: RenderedStack) -> None:
    """The pool's endpointPickerRef names the picker's Service, whose selector picks the picker's pods."""
    reference = pool(gateway_stack)["spec"]["endpointPickerRef"]
    (service,) = [item for item in gateway_stack.kind("Service") if item["metadata"]["name"] == reference["name"]]
    assert reference["port"]["number"] in {port["port"] for port in service["spec"]["ports"]}
    pod_labels = picker(gateway_stack)["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()
    assert reference["failureMode"] == "FailOpen"


def test_pulumi_up_waits_for_the_gateway_to_be_programmed(gateway_stack: RenderedStack) -> None:
    annotations = one_kind(gateway_stack, "Gateway")["metadata"]["annotations"]
    assert annotations["pulumi.com/waitFor"] == "condition=Programmed"
    assert int(annotations["pulumi.com/timeoutSeconds"]) >= 600


def test_endpoint_picker_pinned_on_c4(gateway_stack: RenderedStack) -> None:
    deployment = picker(gateway_stack)
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    # Pulled through the stack's ghcr.io mirror in its region, the same image by digest.
    assert container["image"].startswith("us-central1-docker.pkg.dev/")
    assert container["image"].endswith(f"/llm-serving-ghcr/{EPP_IMAGE.removeprefix('ghcr.io/')}")
    # No CPU limit (a quota would throttle the leader); memory capped; a C4 CPU:memory shape.
    assert container["resources"] == {"requests": {"cpu": "10", "memory": "24Gi"}, "limits": {"memory": "24Gi"}}
    assert pod["nodeSelector"]["cloud.google.com/machine-family"] == "c4"
    assert deployment["metadata"]["namespace"] == NAMESPACE
    assert deployment["spec"]["replicas"] == 2, "one active picker and one leader-election standby"
    assert "--ha-enable-leader-election" in container["args"]


def test_route_sends_the_gateway_to_the_pool(gateway_stack: RenderedStack) -> None:
    gateway = one_kind(gateway_stack, "Gateway")
    route = one_kind(gateway_stack, "HTTPRoute")
    assert gateway["spec"]["gatewayClassName"] == "gke-l7-rilb"
    assert route["metadata"]["namespace"] == gateway["metadata"]["namespace"] == NAMESPACE
    (parent,) = route["spec"]["parentRefs"]
    assert parent == {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": gateway["metadata"]["name"]}
    (rule,) = route["spec"]["rules"]
    assert rule["backendRefs"] == [POOL_REF]
    assert "timeouts" not in rule, "GKE rejects HTTPRoute timeouts"


def test_policies_target_the_pool(gateway_stack: RenderedStack) -> None:
    health = one_kind(gateway_stack, "HealthCheckPolicy")["spec"]
    backend = one_kind(gateway_stack, "GCPBackendPolicy")["spec"]
    assert health["targetRef"] == backend["targetRef"] == POOL_REF
    check = health["default"]["config"]
    assert check["type"] == "HTTP"
    # Each rank's endpoint on its own port.
    assert check["httpHealthCheck"] == {"requestPath": "/health", "portSpecification": "USE_SERVING_PORT"}
    assert (health["default"]["timeoutSec"], health["default"]["checkIntervalSec"]) == (2, 2)
    assert backend["default"]["timeoutSec"] == 300


def test_endpoint_picker_metrics_are_scraped(gateway_stack: RenderedStack) -> None:
    (monitoring,) = [item for item in gateway_stack.kind("PodMonitoring") if item["metadata"]["name"] == PICKER]
    assert monitoring["spec"]["selector"]["matchLabels"] == selector_labels(POOL)
    (container,) = picker(gateway_stack)["spec"]["template"]["spec"]["containers"]
    assert "--metrics-endpoint-auth=false" in container["args"], "the scrape sends no token"


def test_gateway_prerequisites_on_the_cluster(gateway_stack: RenderedStack) -> None:
    cluster = gateway_stack.one(CLUSTER)
    api = next(record for record in gateway_stack.of_type(API) if record["inputs"]["service"] == GATEWAY_API)
    assert api["name"] in cluster["options"]["dependsOn"]
    assert cluster["inputs"]["gatewayApiConfig"] == {"channel": "CHANNEL_STANDARD"}
    assert cluster["inputs"]["networkingMode"] == "VPC_NATIVE"


def test_proxy_subnet_in_the_cluster_region_and_vpc(gateway_stack: RenderedStack) -> None:
    cluster = gateway_stack.one(CLUSTER)["inputs"]
    (proxy,) = [record for record in gateway_stack.of_type(SUBNET) if record["parent"] == "llm-gateway"]
    inputs = proxy["inputs"]
    assert (inputs["purpose"], inputs["role"]) == ("REGIONAL_MANAGED_PROXY", "ACTIVE")
    assert inputs["region"] == cluster["location"]
    assert inputs["network"] == cluster["network"]
    assert inputs["ipCidrRange"] == PROXY_SUBNET_CIDR
    assert ipaddress.IPv4Network(inputs["ipCidrRange"]).prefixlen <= 26
    gateway = gateway_stack.named("llm-gateway-gateway")
    assert proxy["name"] in gateway["options"]["dependsOn"], "a Gateway without its proxy-only subnet never programs"


def test_firewall_lets_proxies_and_health_checks_reach_the_engine(gateway_stack: RenderedStack) -> None:
    cluster = gateway_stack.one(CLUSTER)["inputs"]
    firewall = gateway_stack.named(SERVING_FIREWALL)["inputs"]
    pods_range = next(
        item["ipCidrRange"]
        for item in gateway_stack.named("llm-subnet")["inputs"]["secondaryIpRanges"]
        if item["rangeName"] == cluster["ipAllocationPolicy"]["clusterSecondaryRangeName"]
    )
    assert firewall["network"] == cluster["network"]
    assert firewall["direction"] == "INGRESS"
    assert set(firewall["sourceRanges"]) == {PROXY_SUBNET_CIDR, *HEALTH_CHECK_RANGES}
    assert firewall["destinationRanges"] == [pods_range]
    assert firewall["allows"] == [{"protocol": "tcp", "ports": [f"{RANK_PORTS[0]}-{RANK_PORTS[-1]}"]}]


def test_gateway_custom_resources_validate_against_their_crds(gateway_stack: RenderedStack) -> None:
    custom = [manifest for manifest in gateway_stack.manifests if is_custom(manifest)]
    assert {manifest["kind"] for manifest in custom} >= GATEWAY_KINDS
    for manifest in custom:
        validate_custom(manifest)


def test_no_clusterip_service_in_gateway_mode(gateway_stack: RenderedStack) -> None:
    labels = pool(gateway_stack)["spec"]["selector"]["matchLabels"]
    services = [service for service in gateway_stack.kind("Service") if service["spec"].get("selector") == labels]
    assert services == [], "every request goes through the Endpoint Picker"


def test_gateway_outputs(staging: RenderedStack) -> None:
    command = staging.outputs["gatewayAddressCommand"]
    assert command == f"kubectl get gateway {POOL} -n {NAMESPACE} -o jsonpath='{{.status.addresses[0].value}}'"
    try_it = staging.outputs["tryIt"]
    assert f"http://$({command})/v1/chat/completions" in try_it
    assert staging.outputs["servedModelName"] in try_it
    internal_client = f"kubectl run gateway-curl -n {NAMESPACE} "
    assert try_it.startswith(internal_client), "an internal address is reachable only from the VPC"


def test_clusterip_stacks_declare_no_gateway(dev: RenderedStack, prod: RenderedStack) -> None:
    for stack in (dev, prod):
        assert not GATEWAY_KINDS & {manifest["kind"] for manifest in stack.manifests}
        assert not stack.of_type(FIREWALL)
        assert not [item for item in stack.kind("Deployment") if item["metadata"]["name"] == PICKER]
        assert all(record["inputs"].get("purpose") != "REGIONAL_MANAGED_PROXY" for record in stack.of_type(SUBNET))
        assert GATEWAY_API not in {record["inputs"]["service"] for record in stack.of_type(API)}
        assert stack.one(CLUSTER)["inputs"]["gatewayApiConfig"] == {"channel": "CHANNEL_DISABLED"}
        assert "gatewayAddressCommand" not in stack.outputs


def routing_resource_names(stack: RenderedStack) -> set[str]:
    """Routing components (`llm-serving:routing:*`) and everything under them."""
    parents = {record["name"]: record["parent"] for record in stack.resources}
    components = {record["name"] for record in stack.resources if record["type"].startswith(ROUTING_AREA)}

    def under_routing(name: str | None) -> bool:
        return name is not None and (name in components or under_routing(parents[name]))

    return {name for name in parents if under_routing(name)}


def test_switching_prod_to_gateway_changes_only_routing(prod: RenderedStack, prod_gateway: RenderedStack) -> None:
    clusterip = {r["name"]: r for r in prod.resources if r["name"] not in routing_resource_names(prod)}
    gateway = {r["name"]: r for r in prod_gateway.resources if r["name"] not in routing_resource_names(prod_gateway)}
    assert set(clusterip) <= set(gateway)
    (api,) = set(gateway) - set(clusterip) - {"llm-network-policies-gateway"}  # the proxies' own policy: see below
    assert gateway[api]["inputs"]["service"] == GATEWAY_API
    for name, record in clusterip.items():
        if name == "llm-monitoring-dashboard":
            # Allowed: the dashboard adds the Endpoint Picker's pool chart in gateway mode.
            assert "llm_d_epp_ready_endpoints" in gateway[name]["inputs"]["dashboardJson"]
            continue
        if name in ("llm-network-policies-serving", "llm-vllm-pod-monitoring"):
            continue  # the ranks' ports; the proxy-only subnet and health checkers in gateway mode: see below
        if name == "llm-vllm-deployment":
            continue  # one container per data-parallel rank in gateway mode: test_gateway_per_rank.py
        # Allowed: the cluster's Gateway API channel (standard / disabled), and waiting for the Network
        # Services API.
        switched = {
            **gateway[name],
            "inputs": {
                **gateway[name]["inputs"],
                **{key: record["inputs"][key] for key in ("gatewayApiConfig",) if key in record["inputs"]},
            },
            "options": {
                **gateway[name]["options"],
                "dependsOn": [item for item in gateway[name]["options"]["dependsOn"] if item != api],
            },
        }
        assert switched == record, f"{name} changed with the routing mode"
    assert {manifest["kind"] for manifest in prod_gateway.manifests} >= GATEWAY_KINDS


def test_existing_proxy_subnet_is_reused_not_declared(staging_reusing_proxy_subnet: RenderedStack) -> None:
    stack = staging_reusing_proxy_subnet
    assert [record["name"] for record in stack.of_type(SUBNET)] == ["llm-subnet"]
    firewall = stack.named(SERVING_FIREWALL)["inputs"]
    assert "10.130.0.0/23" in firewall["sourceRanges"]
    assert "10.130.0.0/23" in stack.named(EPP_FIREWALL)["inputs"]["sourceRanges"]
    assert "shared-proxy-only" in firewall["description"]
    assert set(stack.named("llm-gateway-gateway")["options"]["dependsOn"]) == {
        "llm-namespace",
        CRD_JOB,
        EPP_FIREWALL,
    }


INVALID_GATEWAY_SETTINGS: list[tuple[str, dict[str, Any], str]] = [
    (
        "proxy-subnet-inside-pods-range",
        {"gateway": {"proxySubnetCidr": "10.4.0.0/23"}},
        "routing.gateway.proxySubnetCidr 10.4.0.0/23 overlaps cluster.network.podsCidr",
    ),
    ("helm-chart-version", {"gateway": {"eppChartVersion": "v1.4.0"}}, "eppChartVersion: removed"),
    ("no-picker", {"gateway": {"eppReplicas": 0}}, "routing.gateway.eppReplicas"),
    ("picker-image-without-tag", {"gateway": {"eppImage": "ghcr.io/llm-d/picker"}}, "routing.gateway.eppImage"),
    (
        "inference-extension-picker",
        {"gateway": {"eppImage": "registry.k8s.io/gateway-api-inference-extension/epp:v1.5.0"}},
        "routing.gateway.eppImage: 'registry.k8s.io/gateway-api-inference-extension/epp:v1.5.0' is the "
        "gateway-api-inference-extension picker",
    ),
    (
        "inference-extension-picker-mirrored",
        {"gateway": {"eppImage": f"mirror.example:5000/gateway-api-inference-extension/epp@sha256:{'a' * 64}"}},
        "reads an EndpointPickerConfig of inference.networking.x-k8s.io/v1alpha1",
    ),
    ("proxy-subnet-not-a-name", {"gateway": {"existingProxySubnet": "Proxy Subnet"}}, "existingProxySubnet"),
    (
        "reused-subnet-without-its-range",
        {"gateway": {"existingProxySubnet": "shared-proxy"}},
        "routing: gateway.existingProxySubnet 'shared-proxy' needs gateway.proxySubnetCidr, that subnet's range",
    ),
    ("pool-name-too-long", {"serviceName": "q" * 41}, "templates cut it to 40 characters"),
    (
        "picker-thinner-than-c4",
        {"gateway": {"eppCpu": "10", "eppMemory": "16Gi"}},
        "eppMemory 16Gi for eppCpu 10 is 1.60 GiB per CPU; the picker runs on a C4 node of Autopilot's Performance "
        "class, whose shapes hold 2 to 7.75 GiB per vCPU: allowed eppMemory 20Gi to 77.5Gi",
    ),
    ("picker-fatter-than-c4", {"gateway": {"eppCpu": "2", "eppMemory": "64Gi"}}, "32.00 GiB per CPU"),
    (
        "internal-load-balancer-in-gateway-mode",
        {"internalLoadBalancer": True},
        "internalLoadBalancer: only in clusterip",
    ),
]


@pytest.mark.parametrize(
    ("case", "routing", "expected"), INVALID_GATEWAY_SETTINGS, ids=[case for case, _, _ in INVALID_GATEWAY_SETTINGS]
)
def test_invalid_gateway_settings_name_the_key(case: str, routing: dict[str, Any], expected: str) -> None:
    with pytest.raises(InvalidConfig, match=re.escape(expected)):
        validate({"environment": "staging", "project": "my-llm-staging", "routing": routing})


def test_gateway_settings_are_checked_only_in_gateway_mode() -> None:
    config = validate(
        {
            "environment": "prod",
            "project": "my-llm-prod",
            "weights": {"revision": "ab" * 20},
            "routing": {"serviceName": "q" * 41, "gateway": {"proxySubnetCidr": "10.4.0.0/23"}},
        }
    )
    assert config.routing.mode.value == "clusterip"


def test_firewall_lets_proxies_reach_the_endpoint_picker(gateway_stack: RenderedStack) -> None:
    """ext_proc on 9002 from the proxies and gRPC health on 9003, as the picker's pool and Deployment
    declare them; the pool is FailOpen, so a blocked EPP would be bypassed."""
    serving = gateway_stack.named(SERVING_FIREWALL)["inputs"]
    epp = gateway_stack.named(EPP_FIREWALL)["inputs"]
    assert (epp["network"], epp["direction"], epp["destinationRanges"]) == (
        serving["network"],
        "INGRESS",
        serving["destinationRanges"],
    )
    assert set(epp["sourceRanges"]) == {PROXY_SUBNET_CIDR, *HEALTH_CHECK_RANGES}
    assert epp["allows"] == [{"protocol": "tcp", "ports": [str(EXT_PROC_PORT), str(HEALTH_PORT)]}]
    assert pool(gateway_stack)["spec"]["endpointPickerRef"]["port"]["number"] == EXT_PROC_PORT
    (container,) = picker(gateway_stack)["spec"]["template"]["spec"]["containers"]
    assert {EXT_PROC_PORT, HEALTH_PORT} <= {port["containerPort"] for port in container["ports"]}


def test_custom_resources_wait_for_their_crds(gateway_stack: RenderedStack) -> None:
    """Every custom resource of the gateway (the InferencePool among them) and the picker's Deployment
    are created only after the Job that waits for GKE's CRDs has completed."""
    job = gateway_stack.named(CRD_JOB)
    routing = routing_resource_names(gateway_stack)
    custom = [
        record
        for record in gateway_stack.resources
        if record["type"].startswith("kubernetes:") and is_custom(record["inputs"]) and record["name"] in routing
    ]
    assert {record["inputs"]["kind"] for record in custom} >= GATEWAY_KINDS | {"PodMonitoring"}
    for record in [*custom, gateway_stack.named("llm-gateway-epp-deployment")]:
        assert CRD_JOB in record["options"]["dependsOn"], record["name"]
    assert set(GATEWAY_CRDS) == {
        "gateways.gateway.networking.k8s.io",
        "httproutes.gateway.networking.k8s.io",
        "healthcheckpolicies.networking.gke.io",
        "gcpbackendpolicies.networking.gke.io",
        "inferencepools.inference.networking.k8s.io",
        "podmonitorings.monitoring.googleapis.com",
    }, "one CRD per custom kind the gateway declares"
    assert job["inputs"]["metadata"]["annotations"]["pulumi.com/replaceUnready"] == "true"


def test_crd_wait_job_runs_kubectl_wait(staging: RenderedStack) -> None:
    (job,) = [manifest for manifest in staging.kind("Job") if manifest["metadata"]["name"].endswith("-crds-ready")]
    spec = job["spec"]["template"]["spec"]
    (created,) = spec["initContainers"]
    (established,) = spec["containers"]
    crd_args = [f"crd/{crd}" for crd in GATEWAY_CRDS]
    assert created["args"][:2] == ["wait", "--for=create"] and created["args"][-len(crd_args) :] == crd_args
    assert established["args"][:2] == ["wait", "--for=condition=Established"]
    assert established["args"][-len(crd_args) :] == crd_args
    assert {created["image"], established["image"]} == {KUBECTL_IMAGE}
    assert created["command"] == established["command"] == ["/bin/kubectl"], "a shell-free image"
    assert "@sha256:" in KUBECTL_IMAGE
    assert job["spec"]["activeDeadlineSeconds"] <= int(job["metadata"]["annotations"]["pulumi.com/timeoutSeconds"])
    # The metrics adapter (autoscaling in staging) brings its own cluster roles: take the Job's.
    (binding,) = [
        item for item in staging.kind("ClusterRoleBinding") if item["metadata"]["name"].endswith("-crds-ready")
    ]
    (role,) = [item for item in staging.kind("ClusterRole") if item["metadata"]["name"] == binding["roleRef"]["name"]]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": spec["serviceAccountName"], "namespace": NAMESPACE}
    ]
    assert role["rules"] == [
        {
            "apiGroups": ["apiextensions.k8s.io"],
            "resources": ["customresourcedefinitions"],
            "verbs": ["get", "list", "watch"],
        }
    ]


def test_external_gateway_needs_the_allow_and_https(
    render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    external = {"gatewayClass": "gke-l7-regional-external-managed"}
    tls = {"hostname": "llm.example.com", "preSharedCertificate": "llm-example-com"}
    allowed = stack_copy(
        tmp_path_factory.mktemp("external-allowed"),
        "staging",
        {"routing": {"gateway": {**external, "allowExternal": True, "tls": tls, "address": "llm-gateway-ip"}}},
    )
    rendered = render_stack("staging", allowed)
    gateway = one_kind(rendered, "Gateway")
    assert gateway["metadata"]["annotations"][ALLOW_EXTERNAL_GATEWAY_ANNOTATION] == "true"
    assert gateway["spec"]["listeners"] == [
        {
            "name": "https",
            "protocol": "HTTPS",
            "port": 443,
            "hostname": "llm.example.com",
            "tls": {"mode": "Terminate", "options": {"networking.gke.io/pre-shared-certs": "llm-example-com"}},
        }
    ]
    assert gateway["spec"]["addresses"] == [{"type": "NamedAddress", "value": "llm-gateway-ip"}]
    validate_custom(gateway)
    assert rendered.outputs["tryIt"].startswith(
        "curl --resolve llm.example.com:443:$(kubectl get gateway qwen-serving -n llm-serving -o jsonpath="
    )
    assert " https://llm.example.com/v1/chat/completions " in rendered.outputs["tryIt"]
    refused = stack_copy(tmp_path_factory.mktemp("external-refused"), "staging", {"routing": {"gateway": external}})
    run = run_render("staging", "--config-file", str(refused), "--out", str(tmp_path_factory.mktemp("out")))
    assert run.returncode == 1
    assert "LLM-NET-004" in run.stderr
    assert "mandatory LLM-NET-010" in run.stderr and "http (HTTP on port 80)" in run.stderr


def test_internal_gateway_carries_no_allow(gateway_stack: RenderedStack) -> None:
    assert ALLOW_EXTERNAL_GATEWAY_ANNOTATION not in one_kind(gateway_stack, "Gateway")["metadata"]["annotations"]


def test_a_reused_subnet_without_its_range_is_refused_only_in_gateway_mode() -> None:
    """A review: the range is needed only where the firewall rules admit it; a leftover in clusterip mode is not."""
    routing = {"mode": "clusterip", "gateway": {"existingProxySubnet": "shared-proxy"}}
    validate({"environment": "staging", "project": "my-llm-staging", "routing": routing})


@pytest.mark.parametrize(
    ("tls", "message"),
    [
        ({"hostname": "llm.example.com"}, "needs a hostname and exactly one of kubernetesCertificate"),
        ({"hostname": "llm.example.com", "kubernetesCertificate": "llm-tls", "preSharedCertificate": "llm"}, "needs a"),
        ({"kubernetesCertificate": "llm-tls"}, "routing.gateway.tls: needs a hostname"),
        ({"hostname": "*.example.com", "kubernetesCertificate": "llm-tls"}, "routing.gateway.tls.hostname"),
        # Gateway API `Hostname`: "IPs are not allowed"; a DNS label is at most 63 characters
        ({"hostname": "10.0.0.1", "kubernetesCertificate": "llm-tls"}, "not an IP address"),
        ({"hostname": "a" * 64 + ".example.com", "kubernetesCertificate": "llm-tls"}, "labels of 1-63 characters"),
    ],
)
def test_gateway_tls_takes_a_hostname_and_one_certificate(tls: dict[str, Any], message: str) -> None:
    routing = {"mode": "gateway", "gateway": {"tls": tls}}
    with pytest.raises(InvalidConfig, match=re.escape(message)):
        validate({"environment": "staging", "project": "my-llm-staging", "routing": routing})


def test_the_benchmark_is_refused_where_the_gateway_serves_https_only() -> None:
    """The benchmark Job calls the Gateway's address over plain HTTP on port 80, which an HTTPS Gateway does not
    serve: it would fail every request after the stack deployed."""
    tls = {"hostname": "llm.example.com", "kubernetesCertificate": "llm-tls"}
    config = {
        "environment": "staging",
        "project": "my-llm-staging",
        "routing": {"mode": "gateway", "gateway": {"tls": tls}},
        "benchmark": {"enabled": True, "gatewayAddress": "10.0.0.9"},
    }
    with pytest.raises(
        InvalidConfig,
        match=re.escape("benchmark.enabled: needs the Gateway's plain HTTP; allowed with routing.gateway.tls off"),
    ):
        validate(config)
    assert validate({**config, "benchmark": {"enabled": False}}).routing.gateway.tls is not None
