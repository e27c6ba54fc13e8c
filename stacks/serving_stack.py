"""The stack as components other Pulumi programs declare: `ServingStack` (everything, the cluster included unless
`cluster.existing`) and `ServingLayer` (the serving layer in an existing Autopilot cluster). From Python: `from
stacks.serving_stack import ServingStack`; from any other language through the component provider in provider/ (`pulumi
package add`), whose schema the SDK's analyzer derives from the type annotations here
(pulumi/provider/experimental/analyzer.py: Args are the `args` parameter's TypedDict, outputs the class's
`pulumi.Output` annotations, descriptions the string after each annotation).

The settings are the stack file's, under the same names, validated by the same typed config (stacks/config); a group
(`capacity`, `engine`...) is an object of the stack file's camelCase keys. The children are what the stack declares,
each named from the component's name and parented to it.

No `from __future__ import annotations` here: the analyzer reads the annotations as types.
"""

import difflib
import math
import re
from collections.abc import Mapping
from typing import Any, NotRequired, TypedDict

import pulumi

from stacks.config.quoting import quote
from stacks.config.stack import Environment
from stacks.load.loader import PLAIN_KEY_PATH, InvalidConfig, validate
from stacks.program import build

PACKAGE_NAME = "gke-b200-serving"
GROUPS = (
    "capacity",
    "weights",
    "engine",
    "workload",
    "routing",
    "pricing",
    "target",
    "benchmark",
    "autoscaling",
    "schedule",
    "monitoring",
    "startup",
)
# Arguments whose stack-file key is camelCase: the argument is its Python name.
RENAMED_GROUPS = {"time_to_serve": "timeToServe", "warm_capacity": "warmCapacity"}


class ServingStackArgs(TypedDict):
    """The stack's settings, as in a stack file (docs/settings.md). ServingLayerArgs repeats most of them: the
    component analyzer reads each field's docstring from the class itself, not from a base TypedDict."""

    environment: Environment
    """The environment preset: dev, staging or prod."""
    project: str
    """The GCP project that receives every resource."""
    hf_token: pulumi.Input[str]
    """The Hugging Face token the weight download uses (kept secret)."""
    region: NotRequired[str]
    """The region of the cluster (default us-central1)."""
    zones: NotRequired[list[str]]
    """The zones of the weight disks and the B200 nodes, in the region."""
    cluster: NotRequired[dict[str, Any]]
    """The cluster group (name, namespace, releaseChannel, network...; existing: true to use one)."""
    capacity: NotRequired[dict[str, Any]]
    """The capacity group: nodes and the capacity sources in fallback order."""
    weights: NotRequired[dict[str, Any]]
    """The weights group: model, revision, disk size and throughput."""
    engine: NotRequired[dict[str, Any]]
    """The engine group: vLLM image and flags."""
    workload: NotRequired[dict[str, Any]]
    """The workload group: prompt and output lengths, concurrency per node."""
    routing: NotRequired[dict[str, Any]]
    """The routing group: clusterip or gateway."""
    pricing: NotRequired[dict[str, Any]]
    """The pricing group of the capacity planner."""
    target: NotRequired[dict[str, Any]]
    """A goal to size the node count from, instead of capacity.nodes."""
    benchmark: NotRequired[dict[str, Any]]
    """The in-cluster benchmark Job."""
    autoscaling: NotRequired[dict[str, Any]]
    """The autoscaling group."""
    schedule: NotRequired[dict[str, Any]]
    """The scale schedule group."""
    monitoring: NotRequired[dict[str, Any]]
    """The dashboard and alerts group."""
    profile: NotRequired[str]
    """The serving profile (docs/profiles.md; default qwen3.5-27b-fp8): its checkpoint, disk size and engine
    flags become the defaults."""
    startup: NotRequired[dict[str, Any]]
    """The start-up group: the image mirror and the compile cache."""
    time_to_serve: NotRequired[dict[str, Any]]
    """How long a new replica takes to serve (the stack file's timeToServe): assumptions and bounds."""
    warm_capacity: NotRequired[dict[str, Any]]
    """Held spare A4 nodes (the stack file's warmCapacity)."""


class ServingLayerArgs(TypedDict):
    """The serving layer's settings: the stack file's, with the existing cluster named instead of a cluster group."""

    cluster_name: str
    """The existing Autopilot cluster, in `region`, to deploy into."""
    environment: Environment
    """The environment preset: dev, staging or prod."""
    project: str
    """The GCP project of the cluster; it receives the weight disks, APIs and monitoring."""
    hf_token: pulumi.Input[str]
    """The Hugging Face token the weight download uses (kept secret)."""
    namespace: NotRequired[str]
    """The namespace the serving layer creates for its objects (default llm-serving)."""
    region: NotRequired[str]
    """The region of the cluster (default us-central1)."""
    zones: NotRequired[list[str]]
    """The zones of the weight disks and the B200 nodes, in the region."""
    capacity: NotRequired[dict[str, Any]]
    """The capacity group: nodes and the capacity sources in fallback order."""
    weights: NotRequired[dict[str, Any]]
    """The weights group: model, revision, disk size and throughput."""
    engine: NotRequired[dict[str, Any]]
    """The engine group: vLLM image and flags."""
    workload: NotRequired[dict[str, Any]]
    """The workload group: prompt and output lengths, concurrency per node."""
    routing: NotRequired[dict[str, Any]]
    """The routing group: clusterip or gateway."""
    pricing: NotRequired[dict[str, Any]]
    """The pricing group of the capacity planner."""
    target: NotRequired[dict[str, Any]]
    """A goal to size the node count from, instead of capacity.nodes."""
    benchmark: NotRequired[dict[str, Any]]
    """The in-cluster benchmark Job."""
    autoscaling: NotRequired[dict[str, Any]]
    """The autoscaling group."""
    schedule: NotRequired[dict[str, Any]]
    """The scale schedule group."""
    monitoring: NotRequired[dict[str, Any]]
    """The dashboard and alerts group."""
    profile: NotRequired[str]
    """The serving profile (docs/profiles.md; default qwen3.5-27b-fp8): its checkpoint, disk size and engine
    flags become the defaults."""
    startup: NotRequired[dict[str, Any]]
    """The start-up group: the image mirror and the compile cache."""
    time_to_serve: NotRequired[dict[str, Any]]
    """How long a new replica takes to serve (the stack file's timeToServe): assumptions and bounds."""
    warm_capacity: NotRequired[dict[str, Any]]
    """Held spare A4 nodes (the stack file's warmCapacity)."""


def integral_numbers(value: Any) -> Any:
    """Numbers as a stack file holds them: the engine sends every number of another language's
    program as a float (`2.0`), which the strict config would refuse for a count."""
    if isinstance(value, dict):
        return {key: integral_numbers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [integral_numbers(item) for item in value]
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return value


def checked_args(args: Any, schema: type) -> Mapping[str, Any]:
    """The component's arguments, refused in one line as a stack file's keys are (stacks/load/loader.py
    `describe`): an unknown key (a misspelled `regoin` would otherwise deploy to the default region;
    the stack file's `hfToken` is `hf_token` here) with the nearest name, a missing required key. The
    values are validated next, by the stack's typed config."""
    if not isinstance(args, Mapping):
        raise InvalidConfig(f"invalid stack config: the component's args: {quote(args)} is not a mapping of settings")
    allowed = sorted(schema.__required_keys__ | schema.__optional_keys__)  # type: ignore[attr-defined]
    for key in args:
        if key in allowed:
            continue
        snake = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", str(key)).lower()
        near = difflib.get_close_matches(snake, allowed, n=1, cutoff=0.6)
        hint = f"did you mean '{near[0]}'?" if near else f"allowed keys here: {', '.join(allowed)}"
        shown = key if isinstance(key, str) and PLAIN_KEY_PATH.fullmatch(key) else quote(key)
        raise InvalidConfig(f"invalid stack config: {shown}: unknown key; {hint}")
    for key in sorted(schema.__required_keys__):  # type: ignore[attr-defined]
        if key not in args:
            raise InvalidConfig(f"invalid stack config: {key}: required key is missing")
    return args


def settings_of(args: Any, cluster: dict[str, Any] | None) -> dict[str, Any]:
    """The stack-file settings the arguments stand for."""
    environment = args["environment"]
    # an unknown name is the typed config's to refuse, in its one line (Environment("qa") raised here)
    raw: dict[str, Any] = {
        "environment": environment.value if isinstance(environment, Environment) else environment,
        "project": args["project"],
    }
    for key in ("region", "zones", "profile", *GROUPS):
        if key in args:
            raw[key] = args[key]
    for key, config_key in RENAMED_GROUPS.items():
        if key in args:
            raw[config_key] = args[key]
    if cluster is not None:
        raw["cluster"] = cluster
    return integral_numbers(raw)  # type: ignore[no-any-return]


class _Serving(pulumi.ComponentResource):
    """What both components declare and output (the analyzer reads only the concrete classes)."""

    def _declare(self, name: str, settings: dict[str, Any], hf_token: pulumi.Input[str]) -> None:
        outputs = build(
            validate(settings),
            pulumi.Output.secret(hf_token),
            name=name,
            opts=pulumi.ResourceOptions(parent=self),
            gcp_provider_name=f"{name}-gcp",
        )

        def output(key: str) -> pulumi.Output[Any] | None:
            return pulumi.Output.from_input(outputs[key]) if key in outputs else None

        self.cluster_name = output("clusterName")
        self.namespace = output("namespace")
        self.get_credentials = output("getCredentials")
        self.served_model_name = output("servedModelName")
        self.try_it = output("tryIt")
        self.endpoint = output("endpoint")
        self.gateway_address_command = output("gatewayAddressCommand")
        self.dashboard_url = output("dashboardUrl")
        self.stack_outputs = pulumi.Output.from_input(outputs)
        self.register_outputs(outputs)


class ServingStack(_Serving):
    """High-throughput vLLM serving on GKE Autopilot B200 (A4) nodes: the whole stack, the cluster
    included unless cluster.existing."""

    cluster_name: pulumi.Output[str]
    """The cluster serving the model."""
    namespace: pulumi.Output[str]
    """The namespace of the serving objects."""
    get_credentials: pulumi.Output[str]
    """The gcloud command that writes a kubeconfig for the cluster."""
    served_model_name: pulumi.Output[str]
    """The model name clients send."""
    try_it: pulumi.Output[str]
    """A command that sends one chat request."""
    endpoint: pulumi.Output[str] | None
    """The in-cluster endpoint (routing.mode clusterip)."""
    gateway_address_command: pulumi.Output[str] | None
    """The command that prints the Gateway's address (routing.mode gateway)."""
    dashboard_url: pulumi.Output[str] | None
    """The Cloud Monitoring dashboard (monitoring.dashboard)."""
    stack_outputs: pulumi.Output[dict[str, Any]]
    """Every output the stack exports, by its stack-output name."""

    def __init__(self, name: str, args: ServingStackArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        checked_args(args, ServingStackArgs)
        super().__init__(f"{PACKAGE_NAME}:index:ServingStack", name, None, opts)
        self._declare(name, settings_of(args, args.get("cluster")), args["hf_token"])


class ServingLayer(_Serving):
    """The serving layer (capacity class, weights, token Secret, vLLM, routing, operations) in an existing GKE
    Autopilot cluster, whose Autopilot mode, version, Workload Identity and Managed Prometheus its look-up checks."""

    cluster_name: pulumi.Output[str]
    """The cluster serving the model."""
    namespace: pulumi.Output[str]
    """The namespace of the serving objects."""
    get_credentials: pulumi.Output[str]
    """The gcloud command that writes a kubeconfig for the cluster."""
    served_model_name: pulumi.Output[str]
    """The model name clients send."""
    try_it: pulumi.Output[str]
    """A command that sends one chat request."""
    endpoint: pulumi.Output[str] | None
    """The in-cluster endpoint (routing.mode clusterip)."""
    gateway_address_command: pulumi.Output[str] | None
    """The command that prints the Gateway's address (routing.mode gateway)."""
    dashboard_url: pulumi.Output[str] | None
    """The Cloud Monitoring dashboard (monitoring.dashboard)."""
    stack_outputs: pulumi.Output[dict[str, Any]]
    """Every output the stack exports, by its stack-output name."""

    def __init__(self, name: str, args: ServingLayerArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        checked_args(args, ServingLayerArgs)
        super().__init__(f"{PACKAGE_NAME}:index:ServingLayer", name, None, opts)
        cluster = {"existing": True, "name": args["cluster_name"]}
        if "namespace" in args:
            cluster["namespace"] = args["namespace"]
        self._declare(name, settings_of(args, cluster), args["hf_token"])


COMPONENTS: list[type[pulumi.ComponentResource]] = [ServingStack, ServingLayer]
