"""Routing: the GKE Inference Gateway's silent prerequisites, the Endpoint Picker, exposure."""

from __future__ import annotations

from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from policies.graph import CLUSTER_TYPE
from policies.kubernetes import metadata_name
from policies.settings import Setting, config_schema
from policies.values import as_list, as_mapping, as_number, as_text, cpu_cores, dig, number_text

GATEWAY_TYPE = "kubernetes:gateway.networking.k8s.io/v1:Gateway"
INFERENCE_POOL_TYPE = "kubernetes:inference.networking.k8s.io/v1:InferencePool"
HTTP_ROUTE_TYPE = "kubernetes:gateway.networking.k8s.io/v1:HTTPRoute"
HEALTH_CHECK_POLICY_TYPE = "kubernetes:networking.gke.io/v1:HealthCheckPolicy"
BACKEND_POLICY_TYPE = "kubernetes:networking.gke.io/v1:GCPBackendPolicy"
HELM_RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"
SERVICE_TYPE = "kubernetes:core/v1:Service"
FIREWALL_TYPE = "gcp:compute/firewall:Firewall"
NETWORK_SERVICES_API = "networkservices.googleapis.com"
GATEWAY_API_CHANNELS = ("CHANNEL_STANDARD", "CHANNEL_EXPERIMENTAL")
ALLOW_LOAD_BALANCER_ANNOTATION = "llm-serving/allow-load-balancer"
PROXY_SUBNET_ANNOTATION = "llm-serving/proxy-only-subnet"
ALLOW_EXTERNAL_GATEWAY_ANNOTATION = "llm-serving/allow-external-gateway"
EXTERNAL_GATEWAY_CLASSES = (
    "gke-l7-regional-external-managed",
    "gke-l7-global-external-managed",
    "gke-l7-gxlb",
    "gke-l7-regional-external-managed-mc",
    "gke-l7-global-external-managed-mc",
    "gke-l7-gxlb-mc",
)
EPP_EXT_PROC_PORT = 9002

PROXY_SUBNET_ELSEWHERE = Setting(
    "proxySubnetManagedElsewhere", False, "the VPC's REGIONAL_MANAGED_PROXY subnet is managed outside this stack"
)
MIN_EPP_CPU = Setting("minCpu", 10, "CPU cores the Endpoint Picker requests at least")
ALLOWED_LOAD_BALANCERS = Setting("allowedServices", [], "names of Services allowed to be of type LoadBalancer")
EPP_FIREWALL_ELSEWHERE = Setting(
    "eppFirewallManagedElsewhere", False, "the firewall rule to the Endpoint Picker is managed outside this stack"
)


def _of_type(resources: Any, resource_type: str) -> list[Any]:
    return [resource for resource in resources if resource.resource_type == resource_type]


def _policy_targets(resources: Any, resource_type: str) -> set[str]:
    """Names of the InferencePools that policies of a type target."""
    targets = set()
    for resource in _of_type(resources, resource_type):
        target = as_mapping(dig(resource.props, "spec", "targetRef"))
        if target.get("kind") == "InferencePool":
            targets.add(as_text(target.get("name")))
    return targets


def _is_endpoint_picker(props: Any) -> bool:
    return "inferencepool" in as_text(props.get("chart")).lower() or "inferenceExtension" in as_mapping(
        props.get("values")
    )


def _inference_pools(resources: Any) -> dict[str, Any]:
    """Every InferencePool the stack declares or routes to (the chart may create it), with the
    resource that names it."""
    pools = {metadata_name(pool.props): pool for pool in _of_type(resources, INFERENCE_POOL_TYPE)}
    for route in _of_type(resources, HTTP_ROUTE_TYPE):
        for rule in as_list(dig(route.props, "spec", "rules")):
            for backend in as_list(dig(rule, "backendRefs")):
                if dig(backend, "kind") == "InferencePool":
                    pools.setdefault(as_text(dig(backend, "name")), route)
    return pools


def _gateway_prerequisites(args: StackValidationArgs, report: ReportViolation) -> None:
    resources = args.resources
    gateways = _of_type(resources, GATEWAY_TYPE)
    pickers = [release for release in _of_type(resources, HELM_RELEASE_TYPE) if _is_endpoint_picker(release.props)]
    pools = _inference_pools(resources)
    if not (gateways or pools or pickers):
        return
    anchor = (gateways or list(pools.values()) or pickers)[0].urn
    apis = {as_text(resource.props.get("service")) for resource in _of_type(resources, "gcp:projects/service:Service")}
    if NETWORK_SERVICES_API not in apis:
        report(f"gateway routing without the {NETWORK_SERVICES_API} API enabled in this stack", anchor)
    proxy_subnets = [
        subnet
        for subnet in _of_type(resources, "gcp:compute/subnetwork:Subnetwork")
        if subnet.props.get("purpose") == "REGIONAL_MANAGED_PROXY" and subnet.props.get("role") == "ACTIVE"
    ]
    reused = any(dig(gateway.props, "metadata", "annotations", PROXY_SUBNET_ANNOTATION) for gateway in gateways)
    if not (proxy_subnets or reused or PROXY_SUBNET_ELSEWHERE.read(args.get_config())):
        report(
            "gateway routing without a proxy-only subnet (purpose REGIONAL_MANAGED_PROXY, role ACTIVE) in this "
            f"stack or a Gateway annotation {PROXY_SUBNET_ANNOTATION} naming the one it reuses",
            anchor,
        )
    for cluster in _of_type(resources, CLUSTER_TYPE):
        channel = dig(cluster.props, "gatewayApiConfig", "channel")
        if channel not in GATEWAY_API_CHANNELS:
            report(f"gateway routing but the cluster's Gateway API channel is {channel or 'unset'}", cluster.urn)
    # with provider.name=gke the chart renders both policies for the pool it is named after
    chart_managed = {
        as_text(picker.props.get("name"))
        for picker in pickers
        if dig(picker.props, "values", "provider", "name") == "gke"
    }
    health_checked = _policy_targets(resources, HEALTH_CHECK_POLICY_TYPE) | chart_managed
    backend_configured = _policy_targets(resources, BACKEND_POLICY_TYPE) | chart_managed
    for name, holder in sorted(pools.items()):
        if name not in health_checked:
            report(f"InferencePool {name} has no HealthCheckPolicy targeting it", holder.urn)
        if name not in backend_configured:
            report(f"InferencePool {name} has no GCPBackendPolicy targeting it", holder.urn)


GATEWAY_PREREQUISITES = StackValidationPolicy(
    name="LLM-NET-001",
    display_name="Gateway routing has its proxy-only subnet, API, Gateway API channel and policies",
    description=(
        "Gateway routing needs the networkservices.googleapis.com API, a proxy-only subnet (purpose "
        "REGIONAL_MANAGED_PROXY, role ACTIVE; a reused one named by the Gateway annotation "
        f"{PROXY_SUBNET_ANNOTATION}), the cluster's Gateway API channel (CHANNEL_STANDARD) and, per "
        "InferencePool, a HealthCheckPolicy and a GCPBackendPolicy: without them the Gateway stays PROGRAMMED "
        "False with no error."
    ),
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_gateway_prerequisites,
    config_schema=config_schema(PROXY_SUBNET_ELSEWHERE),
)


def _endpoint_picker_cpu(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != HELM_RELEASE_TYPE or not _is_endpoint_picker(args.props):
        return
    minimum = float(MIN_EPP_CPU.read(args.get_config()))
    resources = as_mapping(dig(args.props, "values", "inferenceExtension", "resources"))
    quantity = dig(resources, "requests", "cpu") or dig(resources, "limits", "cpu")
    cores = cpu_cores(quantity)
    if cores is None or cores < minimum:
        shown = f"{quantity} CPU" if quantity else "no CPU request (the chart default)"
        report(f"the Endpoint Picker gets {shown}; it needs at least {number_text(minimum)} CPU")


ENDPOINT_PICKER_CPU = ResourceValidationPolicy(
    name="LLM-NET-002",
    display_name="Endpoint Picker gets the CPU the recipe needed (10)",
    description=(
        "The Endpoint Picker (inferencepool chart, inferenceExtension.resources) should request at least 10 CPU: "
        "every request and streamed token goes through the single active EPP; with 500m it crashed at 8K "
        "connections, with 10 CPU / 16Gi it held."
    ),
    enforcement_level=EnforcementLevel.ADVISORY,
    validate=_endpoint_picker_cpu,
    config_schema=config_schema(MIN_EPP_CPU),
)


def _load_balancer_allowed(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != SERVICE_TYPE or dig(args.props, "spec", "type") != "LoadBalancer":
        return
    name = metadata_name(args.props)
    annotation = dig(args.props, "metadata", "annotations", ALLOW_LOAD_BALANCER_ANNOTATION)
    if annotation != "true" and name not in ALLOWED_LOAD_BALANCERS.read(args.get_config()):
        report(
            f"Service {name} is of type LoadBalancer without the annotation "
            f'{ALLOW_LOAD_BALANCER_ANNOTATION}: "true" or an entry in allowedServices'
        )


LOAD_BALANCER_ALLOWED = ResourceValidationPolicy(
    name="LLM-NET-003",
    display_name="No LoadBalancer Service without an explicit allow",
    description=(
        'A Service of type LoadBalancer needs the annotation llm-serving/allow-load-balancer: "true" or its name in '
        "policy config allowedServices: it exposes the model endpoint outside the cluster, where the recipe serves "
        "through a ClusterIP Service (96.5% scaling efficiency at 12 nodes) or an internal Gateway."
    ),
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_load_balancer_allowed,
    config_schema=config_schema(ALLOWED_LOAD_BALANCERS),
)


def _external_gateway_allowed(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != GATEWAY_TYPE:
        return
    gateway_class = as_text(dig(args.props, "spec", "gatewayClassName"))
    if gateway_class not in EXTERNAL_GATEWAY_CLASSES:
        return
    if dig(args.props, "metadata", "annotations", ALLOW_EXTERNAL_GATEWAY_ANNOTATION) != "true":
        report(
            f"Gateway {metadata_name(args.props)} uses the external class {gateway_class} without the annotation "
            f'{ALLOW_EXTERNAL_GATEWAY_ANNOTATION}: "true" (stack config routing.gateway.allowExternal)'
        )


EXTERNAL_GATEWAY_ALLOWED = ResourceValidationPolicy(
    name="LLM-NET-004",
    display_name="No external Gateway without an explicit allow",
    description=(
        "A Gateway of an external class (gke-l7-regional-external-managed, gke-l7-global-external-managed, "
        f'gke-l7-gxlb) needs the annotation {ALLOW_EXTERNAL_GATEWAY_ANNOTATION}: "true", set by the stack from '
        "routing.gateway.allowExternal: it puts an unauthenticated model endpoint on the internet, where the "
        "recipe serves from inside the VPC (gke-l7-rilb)."
    ),
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_external_gateway_allowed,
)


def _allows_tcp_port(firewall_props: Any, port: int) -> bool:
    for allow in as_list(firewall_props.get("allows")):
        if as_text(dig(allow, "protocol")) not in ("tcp", "all"):
            continue
        ports = [as_text(item) for item in as_list(dig(allow, "ports"))]
        if not ports:
            return True
        for item in ports:
            low, _, high = item.partition("-")
            if low.isdigit() and int(low) <= port <= int(high or low):
                return True
    return False


def _endpoint_picker_reachable(args: StackValidationArgs, report: ReportViolation) -> None:
    pickers = [release for release in _of_type(args.resources, HELM_RELEASE_TYPE) if _is_endpoint_picker(release.props)]
    if not pickers or EPP_FIREWALL_ELSEWHERE.read(args.get_config()):
        return
    firewalls = [
        firewall
        for firewall in _of_type(args.resources, FIREWALL_TYPE)
        if as_text(firewall.props.get("direction")) in ("", "INGRESS")
    ]
    for picker in pickers:
        port = int(as_number(dig(picker.props, "values", "inferenceExtension", "extProcPort")) or EPP_EXT_PROC_PORT)
        if not any(_allows_tcp_port(firewall.props, port) for firewall in firewalls):
            report(
                f"no firewall rule in the stack allows tcp:{port} (the Endpoint Picker's ext_proc port) from the "
                "proxy-only subnet: with failureMode FailOpen the load balancer then bypasses the EPP silently",
                picker.urn,
            )


ENDPOINT_PICKER_REACHABLE = StackValidationPolicy(
    name="LLM-NET-005",
    display_name="The load balancer can reach the Endpoint Picker",
    description=(
        "With an Endpoint Picker (inferencepool chart) the stack needs an ingress firewall rule for its ext_proc "
        "port (9002 in chart v1.4.0) from the proxy-only subnet: the pool's failureMode is FailOpen, so an "
        "unreachable EPP is skipped without an error and requests lose queue- and KV-cache-aware routing."
    ),
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_endpoint_picker_reachable,
    config_schema=config_schema(EPP_FIREWALL_ELSEWHERE),
)
