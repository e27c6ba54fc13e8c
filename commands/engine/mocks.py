"""Run the real Pulumi program under the SDK's mocks and record every registration.

This is the only place where the offline render differs from `pulumi up`: the engine. The
program itself (`__main__.py`) runs unchanged.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import os
import runpy
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi
import pulumi.runtime
import pulumi.runtime.config as runtime_config
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import rpc
from pulumi.runtime.proto import resource_pb2
from pulumi.runtime.settings import get_root_resource, reset_options
from pulumi.runtime.sync_await import _ensure_event_loop, _sync_await

from commands.io.records import RENDER_SECRET_MARK
from commands.stackfile.stack_settings import ROOT, StackSettings
from commands.stackfile.stackfile import DISABLE_DEFAULT_PROVIDERS_KEY
from common.gke_versions import FEATURE_MIN_GKE_VERSIONS, gke_version_key
from components.metrics import KUBE_STATE_COMPONENTS

SECRET_SIG = rpc._special_sig_key
SECRET_MARK = rpc._special_secret_sig
# The value the SDK sends for an unknown, as it appears in a serialized request (a false match only
# sends the registration through the SDK's own mock).
UNKNOWN_BYTES = rpc.UNKNOWN.encode()
FAKE_CA = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCm9mZmxpbmUtcmVuZGVyCi0tLS0tRU5EIENFUlRJRklDQVRFLS0tLS0K"


def _fake_outputs(type_: str, name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """Outputs the engine would report that the program dereferences: a new dict, and never a change to
    `inputs` or a value in it (the recording monitor answers from the request and what differs here)."""
    state = dict(inputs)
    resource_name = inputs.get("name", name)
    if type_ == "gcp:container/cluster:Cluster":
        state.setdefault("endpoint", "203.0.113.10")
        state["masterAuth"] = {"clusterCaCertificate": FAKE_CA}
        endpoints = dict(state.get("controlPlaneEndpointsConfig") or {})
        dns = dict(endpoints.get("dnsEndpointConfig") or {})
        dns.setdefault(
            "endpoint", f"gke-0123456789abcdef0123456789abcdef-123456789012.{inputs.get('location')}.gke.goog"
        )
        state["controlPlaneEndpointsConfig"] = {**endpoints, "dnsEndpointConfig": dns}
    if type_ == "gcp:serviceaccount/account:Account":
        state.setdefault(
            "email", f"{inputs.get('accountId')}@{inputs.get('project', 'offline')}.iam.gserviceaccount.com"
        )
    if type_.startswith("gcp:compute/"):
        project = inputs.get("project", "offline")
        state.setdefault(
            "selfLink",
            f"https://www.googleapis.com/compute/v1/projects/{project}/{type_.split('/')[1]}/{resource_name}",
        )
    if type_ == "gcp:monitoring/notificationChannel:NotificationChannel":
        state.setdefault("name", f"projects/{inputs.get('project', 'offline')}/notificationChannels/{name}")
    if type_.startswith("gcp:"):
        state.setdefault("id", f"{resource_name}")
    return state


def offline_project_number(project: str) -> str:
    """A stable 12-digit stand-in for the project number the engine would look up."""
    return str(int(hashlib.sha256(project.encode()).hexdigest(), 16) % 10**11 + 10**11)


GET_IMAGES = "gcp:compute/getImages:getImages"
GET_CLUSTER = "gcp:container/getCluster:getCluster"
# The GKE version of the offline stand-in for an existing cluster: the newest feature minimum the
# stack knows (today the CapacityBuffer's of warmCapacity), so that the stand-in passes every check a
# real cluster must, whichever features the stack turns on.
STAND_IN_GKE_VERSION = max(FEATURE_MIN_GKE_VERSIONS, key=gke_version_key)
STAND_IN_PODS_CIDR = "10.4.0.0/14"


GET_SUBNETWORKS = "gcp:compute/getSubnetworks:getSubnetworks"
STAND_IN_PROXY_SUBNET_CIDR = "10.129.0.0/23"


def stand_in_proxy_subnets(project: str, region: str) -> list[dict[str, Any]]:
    """The ACTIVE proxy-only subnets the look-up finds offline: the stand-in cluster's VPC (`default`)
    has one in its region, as a VPC that already serves a regional Gateway has; tests give others."""
    return [
        {
            "name": f"proxy-only-{region}",
            "ipCidrRange": STAND_IN_PROXY_SUBNET_CIDR,
            "network": f"https://www.googleapis.com/compute/v1/projects/{project}/global/networks/default",
            "networkName": "default",
            # the provider sets the deprecated network_self_link to the network's name (filepath.Base of
            # `network`: terraform-provider-google data_source_google_compute_subnetworks.go)
            "networkSelfLink": "default",
            "selfLink": f"https://www.googleapis.com/compute/v1/projects/{project}/regions/{region}/subnetworks/"
            f"proxy-only-{region}",
            "description": "",
            "privateIpGoogleAccess": False,
        }
    ]


def stand_in_cluster(name: str, location: str, project: str) -> dict[str, Any]:
    """What the look-up of an existing cluster returns offline: an Autopilot cluster that meets every
    check of `components/existing_cluster.py` (plan.md says it is a stand-in). Tests give other
    clusters to `OfflineMocks` to see the checks fail."""
    return {
        "id": f"projects/{project}/locations/{location}/clusters/{name}",
        "name": name,
        "location": location,
        "project": project,
        "enableAutopilot": True,
        "masterVersion": STAND_IN_GKE_VERSION,
        "network": f"projects/{project}/global/networks/default",
        "subnetwork": f"projects/{project}/regions/{location}/subnetworks/default",
        "clusterIpv4Cidr": STAND_IN_PODS_CIDR,
        "endpoint": "203.0.113.10",
        "masterAuths": [{"clusterCaCertificate": FAKE_CA}],
        "workloadIdentityConfigs": [{"workloadPool": f"{project}.svc.id.goog"}],
        "gatewayApiConfigs": [{"channel": "CHANNEL_STANDARD"}],
        "monitoringConfigs": [
            {
                "enableComponents": ["SYSTEM_COMPONENTS", "DCGM", *KUBE_STATE_COMPONENTS],
                "managedPrometheuses": [{"enabled": True}],
            }
        ],
        "controlPlaneEndpointsConfigs": [
            {
                "dnsEndpointConfigs": [
                    {
                        "endpoint": f"gke-0123456789abcdef0123456789abcdef-123456789012.{location}.gke.goog",
                        "allowExternalTraffic": True,
                    }
                ]
            }
        ],
    }


def _fake_image(name: str, size_gib: int = 0) -> dict[str, Any]:
    return {
        "name": name,
        "selfLink": f"https://www.googleapis.com/compute/v1/projects/offline/global/images/{name}",
        "archiveSizeBytes": 0,
        "creationTimestamp": "",
        "description": "",
        "diskSizeGb": size_gib,
        "family": "",
        "imageId": 0,
        "labels": {},
        "sourceDisk": "",
        "sourceDiskId": "",
        "sourceImageId": "",
    }


class OfflineMocks(pulumi_mocks.Mocks):
    """The engine and the cloud of an offline render: by default an empty project (a first `up`);
    `existing_images` names Compute Engine images that earlier ups made; `existing_cluster` answers
    the look-up of a cluster the stack does not manage (`cluster.existing`). An image's size is 0 (not known
    offline) unless `image_sizes` gives it in GiB."""

    def __init__(
        self,
        existing_images: frozenset[str] = frozenset(),
        existing_cluster: Callable[[str, str, str], dict[str, Any]] = stand_in_cluster,
        proxy_subnets: Callable[[str, str], list[dict[str, Any]]] = stand_in_proxy_subnets,
        image_sizes: Mapping[str, int] | None = None,
    ) -> None:
        self.existing_images = existing_images
        self.image_sizes = dict(image_sizes or {})
        self.existing_cluster = existing_cluster
        self.proxy_subnets = proxy_subnets

    def new_resource(self, args: pulumi_mocks.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        state = _fake_outputs(args.typ, args.name, args.inputs)
        return f"{args.name}-id", state

    def call(self, args: pulumi_mocks.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        if args.token == "gcp:organizations/getProject:getProject":
            project = str(args.args.get("projectId", "offline"))
            return {"projectId": project, "number": offline_project_number(project)}, []
        if args.token == GET_CLUSTER:
            arguments = args.args
            return self.existing_cluster(
                str(arguments.get("name")), str(arguments.get("location")), str(arguments.get("project"))
            ), []
        if args.token == GET_SUBNETWORKS:
            arguments = args.args
            return {"subnetworks": self.proxy_subnets(str(arguments.get("project")), str(arguments.get("region")))}, []
        if args.token == GET_IMAGES:
            wanted = str(args.args.get("filter", "")).removeprefix("name = ")
            return {
                "images": [
                    _fake_image(name, self.image_sizes.get(name, 0))
                    for name in sorted(self.existing_images)
                    if name == wanted
                ]
            }, []
        return {}, []


@dataclass
class Registration:
    urn: str
    type: str
    name: str
    custom: bool
    parent: str
    provider: str
    inputs: dict[str, Any]
    options: dict[str, Any]


class DefaultProviderDeniedError(Exception):
    """A resource or look-up of a package whose default provider `pulumi:disable-default-providers` turns off."""


class RecordingMonitor(pulumi_mocks.MockMonitor):
    def __init__(self, mocks: pulumi_mocks.Mocks) -> None:
        super().__init__(mocks)
        self.registrations: list[Registration] = []
        self.denied_default_providers: frozenset[str] = frozenset()

    def deny_default_providers(self, packages: frozenset[str]) -> None:
        """Refuse what would use a default provider of these packages ("*": all), as the engine does
        (pulumi/pulumi pkg/resource/deploy/default_providers.go shouldDenyRequest; the message is
        sdk/go/common/diag/errors.go GetDefaultProviderDeniedError)."""
        self.denied_default_providers = packages

    def _check_provider(self, token: str, provider: str, operation: str) -> None:
        package = token.split(":", maxsplit=1)[0]
        if provider or package == "pulumi" or not self.denied_default_providers & {"*", package}:
            return
        raise DefaultProviderDeniedError(
            f"{operation}: Default provider for '{package}' disabled. '{token}' must use an explicit provider."
        )

    def Invoke(self, request: Any) -> Any:  # noqa: N802 (gRPC method name)
        self._check_provider(request.tok, request.provider, "Invoke")
        return super().Invoke(request)  # type: ignore[no-untyped-call]

    def RegisterResource(self, request: Any) -> Any:  # noqa: N802 (gRPC method name)
        if request.custom and not request.type.startswith("pulumi:providers:"):
            self._check_provider(request.type, request.provider, "RegisterResource")
        if not self._answers_from_the_request(request):
            response = super().RegisterResource(request)  # type: ignore[no-untyped-call]
            if request.type != "pulumi:pulumi:Stack":
                self._record(request, response.urn, rpc.deserialize_properties(request.object, keep_unknowns=True))
            return response
        urn = self.make_urn(request.parent, request.type, request.name)  # type: ignore[no-untyped-call]
        _ensure_event_loop()  # type: ignore[no-untyped-call]  # a resource reference's deserializing needs one
        inputs = rpc.deserialize_properties(request.object, keep_unknowns=True)
        resource_id, state = self.mocks.new_resource(
            pulumi_mocks.MockResourceArgs(
                typ=request.type,
                name=request.name,
                inputs=inputs,
                provider=request.provider,
                resource_id=request.importId,
                custom=request.custom or False,
                transforms=pulumi_mocks._resolve_callbacks(request.transforms),  # type: ignore[no-untyped-call]
            )
        )
        self.resources[urn] = pulumi_mocks.MockMonitor.ResourceRegistration(urn, resource_id, state)  # type: ignore[arg-type]
        self._record(request, urn, inputs)
        return resource_pb2.RegisterResourceResponse(
            urn=urn,
            id=resource_id,  # type: ignore[arg-type]
            object=_state_properties(request, inputs, state),
        )

    def _answers_from_the_request(self, request: Any) -> bool:
        """Whether this registration is answered as the SDK's mock would, but cheaper: with the inputs
        read once and the state sent back as the request's own properties plus what `_fake_outputs`
        set (the SDK's mock serializes the whole state again, about a tenth of a render's work). Only for
        the offline mocks' own `new_resource`, which never changes the inputs it is given, and for
        properties without an unknown value (the SDK's mock hands the mocks None for one and answers
        with a known None; the program never makes one outside a preview). Otherwise, and for the
        stack itself, the SDK's mock answers. The program reads the same either way: the response is
        read by the same deserializer, which lifts a nested secret to the value that holds it
        (pulumi/runtime/rpc.py `deserialize_property`), whichever side lifted it."""
        return (
            type(self.mocks).new_resource is OfflineMocks.new_resource
            and request.type != "pulumi:pulumi:Stack"
            and UNKNOWN_BYTES not in request.object.SerializeToString()
        )

    def _record(self, request: Any, urn: str, inputs: dict[str, Any]) -> None:
        self.registrations.append(
            Registration(
                urn=urn,
                type=request.type,
                name=request.name,
                custom=bool(request.custom),
                parent=request.parent,
                provider=request.provider,
                inputs=inputs,
                options=_options(request),
            )
        )


def _state_properties(request: Any, inputs: dict[str, Any], state: dict[str, Any]) -> Any:
    """The state as the engine returns it: the request's properties, with each value the mocks set or
    replaced serialized as the SDK's mock serializes a whole state."""
    properties = type(request.object)()  # a protobuf Struct
    properties.CopyFrom(request.object)
    for key in inputs.keys() - state.keys():
        del properties[key]
    changed = {key: value for key, value in state.items() if key not in inputs or inputs[key] is not value}
    if changed:
        properties.update(_sync_await(rpc.serialize_properties(changed, {})))
    return properties


def _options(request: Any) -> dict[str, Any]:
    options: dict[str, Any] = {
        "protect": bool(request.protect),
        "retainOnDelete": bool(request.retainOnDelete),
        "deleteBeforeReplace": bool(request.deleteBeforeReplace),
        "dependsOn": list(request.dependencies),
        "ignoreChanges": sorted(request.ignoreChanges),
        "replaceOnChanges": sorted(request.replaceOnChanges),
        "additionalSecretOutputs": sorted(request.additionalSecretOutputs),
    }
    if request.deletedWith:
        options["deletedWith"] = request.deletedWith
    if request.replace_with:
        options["replaceWith"] = list(request.replace_with)
    if request.HasField("replacement_trigger"):  # read as the inputs are: a secret stays wrapped (render.plain)
        holder = type(request.object)()  # a protobuf Struct
        holder.fields["trigger"].CopyFrom(request.replacement_trigger)
        options["replacementTrigger"] = rpc.deserialize_properties(holder, keep_unknowns=True)["trigger"]
    timeouts = request.customTimeouts
    if timeouts.create or timeouts.update or timeouts.delete:
        options["customTimeouts"] = {
            key: value
            for key, value in (("create", timeouts.create), ("update", timeouts.update), ("delete", timeouts.delete))
            if value
        }
    return options


@dataclass(frozen=True)
class RunResult:
    registrations: list[Registration]
    outputs: dict[str, Any]
    logs: list[str]
    # What `pulumi up` shows as the program's warnings (`pulumi.log.warn`).
    warnings: list[str]


class _LogCapture:
    """The SDK's mock engine hands each log message to a `logging.Logger`-like object by severity."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.warnings: list[str] = []

    def _log(self, message: object, *args: object, **kwargs: object) -> None:
        self.lines.append(str(message))

    def _warn(self, message: object, *args: object, **kwargs: object) -> None:
        self._log(message)
        self.warnings.append(str(message))

    debug = info = error = _log
    warning = _warn


# The language host sets the program's PULUMI_CONFIG and PULUMI_CONFIG_SECRET_KEYS to the stack's
# (pulumi/pulumi sdk/python/cmd/pulumi-language-python/main.go: appended to the program's environment,
# where the last value wins; sdk/python/cmd/pulumi-language-python-exec hands that to set_all_config, as
# apply_settings does), and the SDK falls back to PULUMI_CONFIG for a key the stack does not set
# (sdk/python/lib/pulumi/runtime/config.py, get_config). A PULUMI_CONFIG left in the user's shell never
# reaches the program under `pulumi up`, so it may not reach it offline either (it set the cluster name).
REPLACED_BY_LANGUAGE_HOST = ("PULUMI_CONFIG", "PULUMI_CONFIG_SECRET_KEYS")


def apply_settings(settings: StackSettings) -> None:
    """Hand the stack's config to the SDK as the CLI's language host does."""
    for name in REPLACED_BY_LANGUAGE_HOST:
        os.environ.pop(name, None)
    runtime_config.set_all_config(dict(settings.config), list(settings.secret_keys))


def run_program(
    settings: StackSettings,
    program: Path = ROOT / "__main__.py",
    monitor: RecordingMonitor | None = None,
    existing_images: frozenset[str] = frozenset(),
) -> RunResult:
    """Run the project's `__main__.py` for one stack under the mocks, in a project that holds
    `existing_images` (the Compute Engine images earlier ups made; `monitor` brings its own cloud).

    An invalid config raises `stacks.load.loader.InvalidConfig` before anything is declared.
    """
    monitor = monitor or RecordingMonitor(OfflineMocks(existing_images))
    return run_under_mocks(settings, lambda: runpy.run_path(str(program), run_name="__main__"), monitor)


def run_under_mocks(
    settings: StackSettings, body: Callable[[], object], monitor: RecordingMonitor | None = None
) -> RunResult:
    """Run `body` (a Pulumi program: the project's, or one component for a test) under the mocks."""
    # A fresh runtime per run, as a new process would have: without the reset, set_mocks keeps the
    # previous run's root Stack resource and its outputs.
    reset_options(project=settings.project, stack=settings.stack)
    apply_settings(settings)
    monitor = monitor or RecordingMonitor(OfflineMocks())
    denied = settings.value(DISABLE_DEFAULT_PROVIDERS_KEY)
    monitor.deny_default_providers(frozenset(denied) if isinstance(denied, list) else frozenset())
    logs = _LogCapture()
    pulumi.runtime.set_mocks(
        monitor.mocks,
        project=settings.project,
        stack=settings.stack,
        preview=False,
        monitor=monitor,
        logger=logs,  # type: ignore[arg-type]
    )

    @pulumi.runtime.test  # type: ignore[untyped-decorator]
    def program_run() -> None:
        body()

    with _collector_paused():
        program_run()
        root = get_root_resource()
        outputs = resolve_outputs(root.outputs if root is not None else {})  # type: ignore[attr-defined]
    return RunResult(monitor.registrations, outputs, logs.lines, logs.warnings)


# Taken by the first run in the process and never released: later runs find it taken.
_FIRST_RUN = threading.Lock()


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """No collection while a program runs. The first run in a process imports the provider SDKs: about
    half a million objects that live as long as the process. Collections while they are being made
    rescan them over and over (a third of that run), and later runs would rescan them in every full
    collection. So the first run goes without collections, then everything it made is frozen (moved
    out of the collector's view), the pattern the `gc.freeze` documentation gives. The cyclic garbage
    of that one render (~16k objects, a few MB) is frozen with it rather than paying a full
    collection (~0.4 s). A later run's objects mostly live until it ends, so collections during it
    rescan the same survivors (about a tenth of the run): the collector looks at them once, after."""
    first = _FIRST_RUN.acquire(blocking=False)
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if first:
            gc.freeze()
        if was_enabled:
            gc.enable()


def resolve_outputs(outputs: dict[str, Any]) -> dict[str, Any]:
    """Stack exports with every secret one replaced by the redaction mark."""

    async def gather() -> dict[str, Any]:
        resolved: dict[str, Any] = {}
        for key, value in outputs.items():
            output = pulumi.Output.from_input(value)
            resolved[key] = RENDER_SECRET_MARK if await output.is_secret() else await output.future()
        return resolved

    return _sync_await(gather())
