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
from policies.sources import WRITEUP
from policies.values import as_list, as_mapping, as_number, as_text, cpu_cores, dig, number_text
from policies.vpc_ranges import ALLOWED_RANGES_TEXT, is_vpc_range

GATEWAY_TYPE = "kubernetes:gateway.networking.k8s.io/v1:Gateway"
INFERENCE_POOL_TYPE = "kubernetes:inference.networking.k8s.io/v1:InferencePool"
HTTP_ROUTE_TYPE = "kubernetes:gateway.networking.k8s.io/v1:HTTPRoute"
HEALTH_CHECK_POLICY_TYPE = "kubernetes:networking.gke.io/v1:HealthCheckPolicy"
BACKEND_POLICY_TYPE = "kubernetes:networking.gke.io/v1:GCPBackendPolicy"
DEPLOYMENT_TYPE = "kubernetes:apps/v1:Deployment"
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
# The picker's flags (llm-d-router@v0.10.0 pkg/epp/server/options.go; the same in
# gateway-api-inference-extension v1.x): the pool it serves, and leader election.
POOL_NAME_FLAG = "--pool-name"
LEADER_ELECTION_FLAG = "--ha-enable-leader-election"
MACHINE_FAMILY_LABEL = "cloud.google.com/machine-family"
# GKE "LoadBalancer Service parameters": the annotation (and its pre-1.17 spelling) or the class
# that make a LoadBalancer Service an internal passthrough Network Load Balancer.
INTERNAL_LOAD_BALANCER_ANNOTATIONS = ("networking.gke.io/load-balancer-type", "cloud.google.com/load-balancer-type")
INTERNAL_LOAD_BALANCER_CLASS = "networking.gke.io/l4-regional-internal"
ALLOW_EXTERNAL_LOAD_BALANCER_ANNOTATION = "llm-serving/allow-external-load-balancer"

PROXY_SUBNET_ELSEWHERE = Setting(
    "proxySubnetManagedElsewhere", False, "the VPC's REGIONAL_MANAGED_PROXY subnet is managed outside this stack"
)
MIN_EPP_CPU = Setting("minCpu", 10, "CPU cores the Endpoint Picker requests at least", minimum=0, maximum=1024)
ALLOWED_LOAD_BALANCERS = Setting(
    "allowedServices", [], "names of Services allowed to be of type LoadBalancer", may_be_empty=True
)
EPP_FIREWALL_ELSEWHERE = Setting(
    "eppFirewallManagedElsewhere", False, "the firewall rule to the Endpoint Picker is managed outside this stack"
)
EPP_MACHINE_FAMILIES = Setting(
    "machineFamilies", ["c4"], "machine families (cloud.google.com/machine-family) the Endpoint Picker may run on"
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


def _args(container: Any) -> list[str]:
    return [as_text(arg) for arg in as_list(dig(container, "args"))]


def _flag_set(args: list[str], flag: str) -> bool:
    return flag in args or f"{flag}=true" in args


def picker_container(props: Any) -> Any:
    """The Endpoint Picker container of a Deployment's pods (its args name the pool it serves), or None."""
    for container in as_list(dig(props, "spec", "template", "spec", "containers")):
        if any(arg == POOL_NAME_FLAG or arg.startswith(f"{POOL_NAME_FLAG}=") for arg in _args(container)):
            return container
    return None


def _pickers(resources: Any) -> list[Any]:
    return [resource for resource in _of_type(resources, DEPLOYMENT_TYPE) if picker_container(resource.props)]


def _inference_pools(resources: Any) -> dict[str, Any]:
    """Every InferencePool the stack declares or routes to, with the resource that names it."""
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
    pickers = _pickers(resources)
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
    health_checked = _policy_targets(resources, HEALTH_CHECK_POLICY_TYPE)
    backend_configured = _policy_targets(resources, BACKEND_POLICY_TYPE)
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
    container = picker_container(args.props) if args.resource_type == DEPLOYMENT_TYPE else None
    if container is None:
        return
    minimum = float(MIN_EPP_CPU.read(args.get_config()))
    resources = as_mapping(dig(container, "resources"))
    quantity = dig(resources, "requests", "cpu") or dig(resources, "limits", "cpu")
    cores = cpu_cores(quantity)
    if cores is None or cores < minimum:
        shown = f"{quantity} CPU" if quantity else "no CPU request"
        report(f"the Endpoint Picker gets {shown}; it needs at least {number_text(minimum)} CPU")


ENDPOINT_PICKER_CPU = ResourceValidationPolicy(
    name="LLM-NET-002",
    display_name="Endpoint Picker gets the CPU the recipe needed (10)",
    description=(
        "The Endpoint Picker (the Deployment whose container passes --pool-name) should request at least 10 CPU: "
        "every request and streamed token goes through the single active EPP; in the benchmark write-up, with 500m "
        "it crashed at 8K connections, with 10 CPU / 16Gi it held."
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
        "through a ClusterIP Service (96.5% scaling efficiency at 12 nodes in the benchmark write-up) or an internal "
        "Gateway."
    ),
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_load_balancer_allowed,
    config_schema=config_schema(ALLOWED_LOAD_BALANCERS),
)


def _external_gateway_class(args: ResourceValidationArgs) -> str | None:
    """The class of a Gateway of an external class; None for any other resource."""
    if args.resource_type != GATEWAY_TYPE:
        return None
    gateway_class = as_text(dig(args.props, "spec", "gatewayClassName"))
    return gateway_class if gateway_class in EXTERNAL_GATEWAY_CLASSES else None


def _external_gateway_allowed(args: ResourceValidationArgs, report: ReportViolation) -> None:
    gateway_class = _external_gateway_class(args)
    if gateway_class is None:
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


def _port(value: Any) -> str:
    number = as_number(value)
    return number_text(number) if number is not None else as_text(value)


def _external_gateway_encrypted(args: ResourceValidationArgs, report: ReportViolation) -> None:
    gateway_class = _external_gateway_class(args)
    if gateway_class is None:
        return
    plain = [
        f"{as_text(dig(item, 'name'))} ({as_text(dig(item, 'protocol'))} on port {_port(dig(item, 'port'))})"
        for item in as_list(dig(args.props, "spec", "listeners"))
        if as_text(dig(item, "protocol")) != "HTTPS"
    ]
    if plain:
        report(
            f"Gateway {metadata_name(args.props)} of the external class {gateway_class} has listeners that are not "
            f"HTTPS: {', '.join(plain)}; set routing.gateway.tls (a hostname and a certificate)"
        )


EXTERNAL_GATEWAY_ENCRYPTED = ResourceValidationPolicy(
    name="LLM-NET-010",
    display_name="An external Gateway serves HTTPS only",
    description=(
        "Every listener of a Gateway of an external class is HTTPS: prompts, completions and the engine's API key "
        "cross the internet, and over plain HTTP anyone on the path reads them. The stack sets one HTTPS listener "
        "from routing.gateway.tls (GKE 'Secure a Gateway': a Kubernetes TLS Secret, a regional Compute Engine SSL "
        "certificate or a Certificate Manager certificate)."
    ),
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_external_gateway_encrypted,
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
    if EPP_FIREWALL_ELSEWHERE.read(args.get_config()):
        return
    # The port the load balancer calls: each pool's endpointPickerRef (9002 when it names none).
    ports = {
        int(as_number(dig(pool.props, "spec", "endpointPickerRef", "port", "number")) or EPP_EXT_PROC_PORT): pool
        for pool in _of_type(args.resources, INFERENCE_POOL_TYPE)
    }
    pickers = _pickers(args.resources)
    if not ports and pickers:
        ports = {EPP_EXT_PROC_PORT: pickers[0]}
    firewalls = [
        firewall
        for firewall in _of_type(args.resources, FIREWALL_TYPE)
        if as_text(firewall.props.get("direction")) in ("", "INGRESS")
    ]
    for port, holder in sorted(ports.items()):
        if not any(_allows_tcp_port(firewall.props, port) for firewall in firewalls):
            report(
                f"no firewall rule in the stack allows tcp:{port} (the Endpoint Picker's ext_proc port) from the "
                "proxy-only subnet: with failureMode FailOpen the load balancer then bypasses the EPP silently",
                holder.urn,
            )


ENDPOINT_PICKER_REACHABLE = StackValidationPolicy(
    name="LLM-NET-005",
    display_name="The load balancer can reach the Endpoint Picker",
    description=(
        "With an InferencePool (or an Endpoint Picker) the stack needs an ingress firewall rule for the picker's "
        "ext_proc port (the pool's endpointPickerRef.port, 9002) from the proxy-only subnet: failureMode FailOpen "
        "means an "
        "unreachable EPP is skipped without an error and requests lose queue- and KV-cache-aware routing."
    ),
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_endpoint_picker_reachable,
    config_schema=config_schema(EPP_FIREWALL_ELSEWHERE),
)


def _endpoint_picker_on_fast_compute(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != DEPLOYMENT_TYPE or picker_container(args.props) is None:
        return
    allowed = [as_text(family) for family in EPP_MACHINE_FAMILIES.read(args.get_config())]
    family = as_text(dig(args.props, "spec", "template", "spec", "nodeSelector", MACHINE_FAMILY_LABEL))
    if family not in allowed:
        placed = f"on machine family {family}" if family else f"without a {MACHINE_FAMILY_LABEL} node selector"
        report(f"the Endpoint Picker runs {placed}; allowed: {', '.join(allowed)}")


ENDPOINT_PICKER_ON_FAST_COMPUTE = ResourceValidationPolicy(
    name="LLM-NET-006",
    display_name="Endpoint Picker on fast compute (C4)",
    description=(
        "The Endpoint Picker's pods should select a fast machine family (nodeSelector "
        f"{MACHINE_FAMILY_LABEL}: c4): its ext_proc path is per-token, single-thread latency work on every "
        "request, and without a selector Autopilot puts it on whatever node it chooses (the next step of "
        f"{WRITEUP} was the picker on faster compute)."
    ),
    enforcement_level=EnforcementLevel.ADVISORY,
    validate=_endpoint_picker_on_fast_compute,
    config_schema=config_schema(EPP_MACHINE_FAMILIES),
)


def _standby_pickers_elect_a_leader(args: ResourceValidationArgs, report: ReportViolation) -> None:
    container = picker_container(args.props) if args.resource_type == DEPLOYMENT_TYPE else None
    if container is None:
        return
    replicas = as_number(dig(args.props, "spec", "replicas"))
    if replicas is not None and replicas > 1 and not _flag_set(_args(container), LEADER_ELECTION_FLAG):
        report(
            f"{number_text(replicas)} Endpoint Picker replicas without {LEADER_ELECTION_FLAG}: every replica is "
            "Ready and picks on its own view; pass the flag (one active, the others standby) or run one replica"
        )


STANDBY_PICKERS_ELECT_A_LEADER = ResourceValidationPolicy(
    name="LLM-NET-007",
    display_name="More than one Endpoint Picker means leader election",
    description=(
        f"An Endpoint Picker Deployment with more than one replica passes {LEADER_ELECTION_FLAG}: the recipe runs "
        "one active picker (replicas above one are leader-election standbys, not load sharing); without the flag "
        "every replica is Ready and the load balancer spreads requests over pickers that each keep their own "
        "prefix-cache and queue view."
    ),
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_standby_pickers_elect_a_leader,
)


def _is_internal_load_balancer(props: Any) -> bool:
    annotations = as_mapping(dig(props, "metadata", "annotations"))
    return any(annotations.get(key) == "Internal" for key in INTERNAL_LOAD_BALANCER_ANNOTATIONS) or (
        dig(props, "spec", "loadBalancerClass") == INTERNAL_LOAD_BALANCER_CLASS
    )


def _external_load_balancer_allowed(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != SERVICE_TYPE or dig(args.props, "spec", "type") != "LoadBalancer":
        return
    if _is_internal_load_balancer(args.props):
        return
    if dig(args.props, "metadata", "annotations", ALLOW_EXTERNAL_LOAD_BALANCER_ANNOTATION) != "true":
        report(
            f"Service {metadata_name(args.props)} gets an external address (no networking.gke.io/load-balancer-type: "
            f'"Internal") without the annotation {ALLOW_EXTERNAL_LOAD_BALANCER_ANNOTATION}: "true"'
        )


EXTERNAL_LOAD_BALANCER_ALLOWED = ResourceValidationPolicy(
    name="LLM-NET-008",
    display_name="No external load balancer address without an explicit allow",
    description=(
        'A Service of type LoadBalancer is internal (annotation networking.gke.io/load-balancer-type: "Internal", '
        "routing.internalLoadBalancer) or carries the annotation "
        f'{ALLOW_EXTERNAL_LOAD_BALANCER_ANNOTATION}: "true": without GKE\'s internal annotation it gets an '
        "external passthrough Network Load Balancer, an unauthenticated model endpoint on the internet."
    ),
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_external_load_balancer_allowed,
)


def _internal_load_balancer_limited(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != SERVICE_TYPE or dig(args.props, "spec", "type") != "LoadBalancer":
        return
    if not _is_internal_load_balancer(args.props):
        return
    name = metadata_name(args.props)
    ranges = [as_text(item) for item in as_list(dig(args.props, "spec", "loadBalancerSourceRanges"))]
    if not ranges:
        report(
            f"internal load balancer {name} has no loadBalancerSourceRanges: GKE then admits every source in the VPC "
            "and the networks connected to it; list the clients' ranges"
        )
    for value in ranges:
        if not is_vpc_range(value):
            report(
                f"internal load balancer {name} admits {value}, not an internal VPC range ({ALLOWED_RANGES_TEXT}); "
                "list the clients' ranges"
            )


INTERNAL_LOAD_BALANCER_LIMITED = ResourceValidationPolicy(
    name="LLM-NET-009",
    display_name="An internal load balancer admits only its clients' private ranges",
    description=(
        "An internal LoadBalancer Service lists loadBalancerSourceRanges, each an internal range a VPC accepts "
        "(RFC 1918 and the special-purpose ranges of the VPC docs' 'Valid IPv4 ranges', 100.64.0.0/10 included): "
        "GKE writes the VPC firewall rule from them, so without them every address of the VPC and its connected "
        "networks reaches the model; the stack sets them from routing.internalLoadBalancerSourceRanges (default "
        "the cluster's subnet)."
    ),
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_internal_load_balancer_limited,
)
