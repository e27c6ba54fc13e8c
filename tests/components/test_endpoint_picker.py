"""The InferenceGateway component on its own, under the SDK's mocks: the Endpoint Picker and its
InferencePool as llm-d-router-gateway v0.10.0 renders them (chart templates in routerlib and
llm-d-router-gateway, values: matchLabels app=qwen-serving, targetPorts 8000, vllm over http,
metrics auth off), placed on C4, with leader election from two replicas on."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pulumi
import pytest
import yaml

from components.endpoint_picker import (
    EPP_IMAGE,
    ROUTER_RELEASE,
    epp_name,
    ready_condition,
)
from components.gateway import HEALTH_CHECK_RANGES, InferenceGateway, InferenceGatewayArgs
from tests.construct import Built, build, children_are_parented, match

POOL = "qwen-serving"
PICKER = "qwen-serving-epp"
NAMESPACE = "llm-serving"
PROXY_SUBNET = "10.129.0.0/23"
SELECTOR = {"llm-d-router-gateway": PICKER}
ARGS = InferenceGatewayArgs(
    project="my-llm",
    region="us-central1",
    cluster_name="llm-serving",
    network="projects/my-llm/global/networks/llm-serving",
    pods_cidr="10.4.0.0/14",
    namespace=NAMESPACE,
    pool_name=POOL,
    pod_labels={"app": POOL},
    serving_ports=tuple(range(8000, 8008)),
    served_model_name="Qwen/Qwen3.5-27B-FP8",
    gateway_class="gke-l7-rilb",
    proxy_subnet_cidr=PROXY_SUBNET,
    existing_proxy_subnet=None,
    epp_image=EPP_IMAGE,
    epp_replicas=2,
    epp_cpu="10",
    epp_memory="24Gi",
    request_timeout_seconds=300,
    pool_grace_seconds=25,
)


def build_gateway(args: InferenceGatewayArgs) -> Built:
    def declare() -> None:
        gateway = InferenceGateway("gw", args)
        pulumi.export("addressCommand", gateway.address_command)
        pulumi.export("tryIt", gateway.try_it)

    return build(declare)


@pytest.fixture(scope="module")
def gateway() -> Built:
    return build_gateway(ARGS)


@pytest.fixture(scope="module")
def single_picker() -> Built:
    return build_gateway(replace(ARGS, epp_replicas=1))


def picker_container(built: Built) -> dict[str, Any]:
    container: dict[str, Any]
    (container,) = built.manifest("Deployment", PICKER)["spec"]["template"]["spec"]["containers"]
    return container


def test_every_object_the_chart_renders_for_gke(gateway: Built) -> None:
    """routerlib _rbac.yaml, _leader-election-rbac.yaml, _config.yaml, _deployment.yaml, _service.yaml,
    _inferencepool.yaml; llm-d-router-gateway rbac.yaml and gke.yaml (HealthCheckPolicy, GCPBackendPolicy)."""
    names = {(manifest["kind"], manifest["metadata"]["name"]) for manifest in gateway.manifests}
    assert names >= {
        ("ServiceAccount", PICKER),
        ("Role", f"{PICKER}-sa"),
        ("RoleBinding", f"{PICKER}-sa"),
        ("Role", f"{PICKER}-non-sa"),
        ("RoleBinding", f"{PICKER}-non-sa"),
        ("Role", f"{PICKER}-leader-election"),
        ("RoleBinding", f"{PICKER}-leader-election-binding"),
        ("ConfigMap", PICKER),
        ("Deployment", PICKER),
        ("Service", PICKER),
        ("InferencePool", POOL),
        ("HealthCheckPolicy", POOL),
        ("GCPBackendPolicy", POOL),
    }
    assert not gateway.kind("Release"), "no Helm release: every object is a plain manifest"
    gateway.validate()


def test_children_are_named_from_the_component(gateway: Built) -> None:
    children_are_parented(gateway, "llm-serving:routing:InferenceGateway", "gw")


def test_pool_as_the_chart_renders_it(gateway: Built) -> None:
    pool = gateway.manifest("InferencePool", POOL)
    assert pool["apiVersion"] == "inference.networking.k8s.io/v1"
    assert pool["spec"] == {
        "targetPorts": [{"number": port} for port in range(8000, 8008)],
        "appProtocol": "http",
        "selector": {"matchLabels": {"app": POOL}},
        "endpointPickerRef": {"name": PICKER, "port": {"number": 9002}, "failureMode": "FailOpen"},
    }
    assert match(
        pool["metadata"]["labels"], {"app.kubernetes.io/name": PICKER, "app.kubernetes.io/version": ROUTER_RELEASE}
    )


def test_pool_names_the_pickers_service(gateway: Built) -> None:
    service = gateway.manifest("Service", PICKER)
    assert match(
        service["spec"],
        {
            "type": "ClusterIP",
            "selector": SELECTOR,
            "ports": [
                {"name": "grpc-ext-proc", "protocol": "TCP", "port": 9002, "appProtocol": "kubernetes.io/h2c"},
                {"name": "http-metrics", "protocol": "TCP", "port": 9090},
            ],
        },
    )


def test_picker_grace_mirrors_the_pools_longest_grace() -> None:
    """The chart's 130 s, or the serving pods' grace when longer (Flex-start or reservations: 600 s),
    as routerlib _deployment.yaml says the picker's should mirror the pool's."""
    built = build_gateway(replace(ARGS, pool_grace_seconds=600))
    assert built.manifest("Deployment", PICKER)["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] == 600


def test_picker_deployment_as_the_chart_renders_it(gateway: Built) -> None:
    deployment = gateway.manifest("Deployment", PICKER)
    assert match(
        deployment,
        {
            "metadata": {"labels": {"app.kubernetes.io/name": PICKER, "llm-d.ai/igw-mode": "llm-d-router-gateway"}},
            "spec": {
                "replicas": 2,
                "strategy": {"type": "Recreate"},
                "selector": {"matchLabels": SELECTOR},
                "template": {
                    "metadata": {"labels": {**SELECTOR, "llm-d.ai/igw-mode": "llm-d-router-gateway"}},
                    "spec": {"serviceAccountName": PICKER, "terminationGracePeriodSeconds": 130},
                },
            },
        },
    )
    container = picker_container(gateway)
    assert container["args"] == [
        "--pool-name",
        POOL,
        "--pool-namespace",
        NAMESPACE,
        "--pool-group",
        "inference.networking.k8s.io",
        "--zap-encoder",
        "json",
        "--config-file",
        "/config/default-plugins.yaml",
        "--ha-enable-leader-election",
        "--grpc-health-port",
        "9003",
        "--tracing=false",
        "--metrics-endpoint-auth=false",
    ]
    assert container["ports"] == [
        {"name": "grpc", "containerPort": 9002},
        {"name": "grpc-health", "containerPort": 9003},
        {"name": "metrics", "containerPort": 9090},
    ]
    assert {variable["name"] for variable in container["env"]} == {"NAMESPACE", "POD_NAME"}
    assert container["volumeMounts"] == [{"name": "plugins-config-volume", "mountPath": "/config", "readOnly": True}]


def test_picker_image_pinned_by_tag_and_digest(gateway: Built) -> None:
    container = picker_container(gateway)
    assert container["image"].startswith(f"ghcr.io/llm-d/llm-d-router-endpoint-picker:{ROUTER_RELEASE}@sha256:")
    assert container["imagePullPolicy"] == "IfNotPresent"


def test_an_image_by_tag_alone_is_pulled_every_time() -> None:
    built = build_gateway(replace(ARGS, epp_image="ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.10.0"))
    assert picker_container(built)["imagePullPolicy"] == "Always"


def test_picker_on_c4_sized_without_a_cpu_limit(gateway: Built) -> None:
    pod = gateway.manifest("Deployment", PICKER)["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {
        "cloud.google.com/compute-class": "Performance",
        "cloud.google.com/machine-family": "c4",
    }
    # The CPU request sizes the C4 node; no CPU limit throttles the leader; 2.4 GiB per CPU fits a C4 shape.
    assert picker_container(gateway)["resources"] == {
        "requests": {"cpu": "10", "memory": "24Gi"},
        "limits": {"memory": "24Gi"},
    }


def test_picker_runs_hardened(gateway: Built) -> None:
    pod = gateway.manifest("Deployment", PICKER)["spec"]["template"]["spec"]
    assert match(pod["securityContext"], {"runAsNonRoot": True, "runAsUser": 65532})
    assert match(
        picker_container(gateway)["securityContext"],
        {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]}},
    )


def test_standby_probes_and_rbac_with_leader_election(gateway: Built) -> None:
    container = picker_container(gateway)
    assert container["livenessProbe"]["grpc"] == {"port": 9003, "service": "liveness"}
    assert container["readinessProbe"]["grpc"] == {"port": 9003, "service": "readiness"}
    role = gateway.manifest("Role", f"{PICKER}-leader-election")
    assert role["rules"][0] == {
        "apiGroups": ["coordination.k8s.io"],
        "resources": ["leases"],
        "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"],
    }
    binding = gateway.manifest("RoleBinding", f"{PICKER}-leader-election-binding")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": PICKER, "namespace": NAMESPACE}]
    assert binding["roleRef"]["name"] == f"{PICKER}-leader-election"


def test_one_picker_has_no_leader_election(single_picker: Built) -> None:
    container = picker_container(single_picker)
    assert "--ha-enable-leader-election" not in container["args"]
    assert container["livenessProbe"]["grpc"]["service"] == container["readinessProbe"]["grpc"]["service"]
    assert container["readinessProbe"]["grpc"]["service"] == "inference-extension"
    assert not single_picker.kind("Role", f"{PICKER}-leader-election")
    assert not single_picker.kind("RoleBinding", f"{PICKER}-leader-election-binding")
    single_picker.validate()


@pytest.mark.parametrize("replicas", [1, 2, 3])
def test_pulumi_up_waits_for_one_ready_picker(replicas: int) -> None:
    """Only the leader is ever Ready: waiting for every replica would never end."""
    conditions = json.loads(ready_condition(replicas))
    assert conditions == [f"jsonpath={{.status.updatedReplicas}}={replicas}", "jsonpath={.status.readyReplicas}=1"]


def test_deployment_carries_the_wait(gateway: Built) -> None:
    annotations = gateway.manifest("Deployment", PICKER)["metadata"]["annotations"]
    assert annotations["pulumi.com/waitFor"] == ready_condition(2)
    assert int(annotations["pulumi.com/timeoutSeconds"]) >= 600


def test_plugins_config_as_the_chart_renders_it(gateway: Built) -> None:
    config = yaml.safe_load(gateway.manifest("ConfigMap", PICKER)["data"]["default-plugins.yaml"])
    assert config["apiVersion"] == "llm-d.ai/v1alpha1"
    assert config["kind"] == "EndpointPickerConfig"
    assert [plugin["type"] for plugin in config["plugins"]] == [
        "queue-scorer",
        "kv-cache-utilization-scorer",
        "prefix-cache-scorer",
        "metrics-data-source",
        "core-metrics-extractor",
    ]
    (profile,) = config["schedulingProfiles"]
    assert {plugin["pluginRef"]: plugin["weight"] for plugin in profile["plugins"]} == {
        "queue-scorer": 2,
        "kv-cache-utilization-scorer": 2,
        "prefix-cache-scorer": 3,
    }


def test_rbac_as_the_chart_renders_it(gateway: Built) -> None:
    assert gateway.manifest("Role", f"{PICKER}-sa")["rules"] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "watch", "list"]}
    ]
    groups = {rule["apiGroups"][0]: rule["resources"] for rule in gateway.manifest("Role", f"{PICKER}-non-sa")["rules"]}
    assert groups == {
        "inference.networking.x-k8s.io": ["inferenceobjectives", "inferencemodelrewrites"],
        "llm-d.ai": ["inferenceobjectives", "inferencemodelrewrites"],
        "inference.networking.k8s.io": ["inferencepools"],
    }
    for name in (f"{PICKER}-sa", f"{PICKER}-non-sa"):
        binding = gateway.manifest("RoleBinding", name)
        assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name}
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": PICKER, "namespace": NAMESPACE}]


def test_network_policy_admits_the_load_balancer_and_the_collectors(gateway: Built) -> None:
    spec = gateway.manifest("NetworkPolicy", PICKER)["spec"]
    assert spec["podSelector"] == {"matchLabels": SELECTOR}
    assert spec["policyTypes"] == ["Ingress", "Egress"]
    load_balancer, collectors = spec["ingress"]
    assert [peer["ipBlock"]["cidr"] for peer in load_balancer["from"]] == [PROXY_SUBNET, *HEALTH_CHECK_RANGES]
    assert {port["port"] for port in load_balancer["ports"]} == {9002, 9003}
    assert collectors["ports"] == [{"protocol": "TCP", "port": 9090}]
    scrape = spec["egress"][-1]
    assert scrape == {
        "to": [{"podSelector": {"matchLabels": {"app": POOL}}}],
        "ports": [{"protocol": "TCP", "port": 8000, "endPort": 8007}],
    }


def test_metrics_scraped_from_the_picker_pods(gateway: Built) -> None:
    monitoring = gateway.manifest("PodMonitoring", PICKER)
    assert monitoring["spec"]["selector"] == {"matchLabels": SELECTOR}
    (endpoint,) = monitoring["spec"]["endpoints"]
    assert endpoint["port"] in {port["name"] for port in picker_container(gateway)["ports"]}


def test_gke_policies_on_the_pool(gateway: Built) -> None:
    target = {"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": POOL}
    health = gateway.manifest("HealthCheckPolicy", POOL)["spec"]
    assert health == {
        "targetRef": target,
        "default": {
            "timeoutSec": 2,
            "checkIntervalSec": 2,
            "config": {
                "type": "HTTP",
                "httpHealthCheck": {"requestPath": "/health", "portSpecification": "USE_SERVING_PORT"},
            },
        },
    }
    assert gateway.manifest("GCPBackendPolicy", POOL)["spec"] == {"targetRef": target, "default": {"timeoutSec": 300}}


def test_objects_wait_for_the_crds_and_the_picker_for_its_rbac(gateway: Built) -> None:
    job = "gw-crds-job"
    for name in ("gw-epp-pool", "gw-epp-monitoring", "gw-epp-deployment", "gw-route", "gw-health-check"):
        assert job in gateway.named(name)["options"]["dependsOn"], name
    needs = set(gateway.named("gw-epp-deployment")["options"]["dependsOn"])
    assert needs >= {"gw-epp-config", "gw-epp-sa", "gw-epp-binding-sa", "gw-epp-binding-non-sa"}
    assert "gw-epp-pool" in gateway.named("gw-route")["options"]["dependsOn"]


def test_long_pool_names_cut_as_the_chart_cuts_them() -> None:
    assert epp_name("Q" * 45) == "q" * 40 + "-epp"


def test_outputs(gateway: Built) -> None:
    assert gateway.outputs["addressCommand"].startswith(f"kubectl get gateway {POOL} -n {NAMESPACE} ")
    assert gateway.outputs["tryIt"].startswith("kubectl run gateway-curl ")
