"""The Pulumi SDK internals the offline engine, the preview and the tests rely on, named one by one.

The offline run drives the SDK's mocks (commands/engine/mocks.py, commands/preview/command.py), the
policy runner uses pulumi_policy's unknown-value proxy (commands/check_policies/runner.py, policies/values.py),
the loader and a policy read the config context variable, and the tests run a render in a thread
of its own (tests/rendered.py) because the SDK keeps its settings in context variables. None of
that is public API: an SDK upgrade may move or reshape it without notice. Each test here names
one such thing and the shape the code uses, so that an upgrade fails here, loudly, instead of
producing a render that is quietly different.
"""

from __future__ import annotations

import contextvars
import importlib.metadata
import inspect
import threading
import tomllib
from collections.abc import Callable
from typing import Any

import pulumi._utils
import pulumi.runtime
import pulumi.runtime.config as runtime_config
import pulumi.runtime.settings as runtime_settings
import pulumi.runtime.stack as runtime_stack
import pytest
from pulumi.runtime import mocks, rpc
from pulumi.runtime.proto import analyzer_pb2_grpc, resource_pb2
from pulumi.runtime.sync_await import _ensure_event_loop, _sync_await
from pulumi_policy import proxy

from tests.rendered import ROOT

# The versions these shapes were read from; pyproject.toml pins exactly these.
PINNED = {"pulumi": "3.272.0", "pulumi-policy": "1.21.0"}


def parameters(function: Callable[..., Any]) -> list[str]:
    return [name for name in inspect.signature(function).parameters if name != "self"]


@pytest.mark.parametrize(("package", "version"), sorted(PINNED.items()))
def test_the_sdk_is_the_version_these_shapes_were_read_from(package: str, version: str) -> None:
    assert importlib.metadata.version(package) == version
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert f"{package}=={version}" in dependencies, f"pyproject.toml must pin {package}=={version}"


def test_sync_await_runs_a_coroutine_to_its_result() -> None:
    """commands/engine/mocks.py `_resolve_outputs`: reads the stack exports after the run."""
    assert parameters(_sync_await) == ["awaitable"]

    async def answer() -> int:
        return 42

    def in_a_fresh_thread() -> int:
        import asyncio

        asyncio.set_event_loop(loop := asyncio.new_event_loop())
        try:
            return _sync_await(answer())
        finally:
            loop.close()

    assert run_in_a_new_context(in_a_fresh_thread) == 42


def test_reset_options_and_the_root_resource() -> None:
    """engine.run_program resets the runtime per run and reads the exports off the root Stack."""
    assert {"project", "stack"} <= set(parameters(runtime_settings.reset_options))
    assert parameters(runtime_settings.get_root_resource) == []
    assert isinstance(runtime_settings.ROOT, contextvars.ContextVar)
    # get_root_resource().outputs: the Stack keeps its exports in a plain dict attribute.
    assert "self.outputs = {}" in inspect.getsource(runtime_stack.Stack.__init__)


def test_secret_signature_keys() -> None:
    """engine.SECRET_SIG / SECRET_MARK: how a recorded secret input is recognised and redacted."""
    assert rpc._special_sig_key == "4dabf18193072939515e22adb298388d"
    assert rpc._special_secret_sig == "1b47061264138c4ac30d75fd1eb44270"


def test_deserialize_properties_keeps_unknowns() -> None:
    """RecordingMonitor.RegisterResource turns the request's Struct into the recorded inputs."""
    assert parameters(rpc.deserialize_properties)[:2] == ["props_struct", "keep_unknowns"]
    from google.protobuf import struct_pb2  # type: ignore[import-untyped]

    struct = struct_pb2.Struct()
    struct.update({"replicas": 1, "name": "x"})
    assert rpc.deserialize_properties(struct, keep_unknowns=True) == {"replicas": 1.0, "name": "x"}


def test_mock_monitor_is_subclassed_at_register_resource() -> None:
    """RecordingMonitor(MockMonitor): __init__(mocks) and RegisterResource(request) -> response.urn."""
    assert parameters(mocks.MockMonitor.__init__) == ["mocks"]
    assert parameters(mocks.MockMonitor.RegisterResource) == ["request"]
    assert "urn=" in inspect.getsource(mocks.MockMonitor.RegisterResource)


def test_what_the_recording_monitor_does_in_the_sdks_mock_place() -> None:
    """RecordingMonitor.RegisterResource answers most registrations with the SDK's mock's own steps
    (the urn, the event loop, the mocks' arguments, the registration it keeps) and a cheaper state:
    those steps, and the unknown value it looks for, are the SDK's."""
    assert parameters(mocks.MockMonitor.make_urn) == ["parent", "type_", "name"]
    assert mocks.MockMonitor.ResourceRegistration._fields == ("urn", "id", "state")
    assert parameters(mocks._resolve_callbacks) == ["callbacks"]
    assert parameters(_ensure_event_loop) == []
    assert isinstance(rpc.UNKNOWN, str) and rpc.UNKNOWN
    source = inspect.getsource(mocks.MockMonitor.RegisterResource)
    steps = [
        "urn = self.make_urn(request.parent, request.type, request.name)",
        "_ensure_event_loop()",
        "inputs = rpc.deserialize_properties(request.object)",
        "transforms=_resolve_callbacks(request.transforms)",
        "self.mocks.new_resource(resource_args)",
        "_sync_await(rpc.serialize_properties(state, {}))",
        "self.resources[urn] = MockMonitor.ResourceRegistration(urn, id_, state)",
        "RegisterResourceResponse(urn=urn, id=id_, object=obj_proto)",
    ]
    assert [step for step in steps if step not in source] == []
    assert {"urn", "id", "object"} <= set(resource_pb2.RegisterResourceResponse.DESCRIPTOR.fields_by_name)


def test_mocks_interface() -> None:
    """OfflineMocks(Mocks) implements new_resource(args) and call(args)."""
    assert {"new_resource", "call"} <= mocks.Mocks.__abstractmethods__
    assert parameters(mocks.Mocks.new_resource) == ["args"]
    assert parameters(mocks.Mocks.call) == ["args"]


def test_mock_argument_shapes() -> None:
    """preview.py builds MockResourceArgs positionally; OfflineMocks reads .typ/.name/.inputs and .token/.args."""
    assert parameters(mocks.MockResourceArgs.__init__)[:6] == [
        "typ",
        "name",
        "inputs",
        "provider",
        "resource_id",
        "custom",
    ]
    resource = mocks.MockResourceArgs("t:m:T", "n", {"a": 1}, "", "", True)
    assert (resource.typ, resource.name, resource.inputs, resource.custom) == ("t:m:T", "n", {"a": 1}, True)
    call = mocks.MockCallArgs("pkg:index:get", {"k": "v"}, "")
    assert (call.token, call.args) == ("pkg:index:get", {"k": "v"})


def test_set_mocks_and_the_test_decorator() -> None:
    """engine.run_program: set_mocks(mocks, project=, stack=, preview=, monitor=, logger=) and
    @pulumi.runtime.test to wait for the program; the logger gets debug/info/warning/error calls."""
    assert {"mocks", "project", "stack", "preview", "monitor", "logger"} <= set(parameters(pulumi.runtime.set_mocks))
    assert parameters(pulumi.runtime.test) == ["fn"]
    log_calls = inspect.getsource(mocks.MockEngine.Log)
    for level in ("debug", "info", "warning", "error"):
        assert f"self.logger.{level}(" in log_calls


def test_register_resource_request_fields() -> None:
    """engine._options and RecordingMonitor read these fields of the registration request."""
    fields = resource_pb2.RegisterResourceRequest.DESCRIPTOR.fields_by_name
    used = {
        "type",
        "name",
        "custom",
        "parent",
        "provider",
        "object",
        "protect",
        "retainOnDelete",
        "deleteBeforeReplace",
        "dependencies",
        "ignoreChanges",
        "replaceOnChanges",
        "additionalSecretOutputs",
        "deletedWith",
        "customTimeouts",
        "importId",
        "transforms",
    }
    assert used <= set(fields), sorted(used - set(fields))
    timeouts = resource_pb2.RegisterResourceRequest.CustomTimeouts.DESCRIPTOR.fields_by_name
    assert {"create", "update", "delete"} <= set(timeouts)


def test_config_lives_in_a_context_variable() -> None:
    """engine.apply_settings: set_all_config(config, secret_keys); stacks/load/loader.py and
    policies/rules/security.py read CONFIG.get() and get_config_env()."""
    assert parameters(runtime_config.set_all_config)[:2] == ["config", "secret_keys"]
    assert parameters(runtime_config.get_config_env) == []
    assert isinstance(runtime_config.CONFIG, contextvars.ContextVar)


def test_settings_and_config_are_context_variables() -> None:
    """tests/rendered.py `as_a_new_process` runs a render in a thread of its own to get a fresh SDK
    runtime: the settings are ContextVar-backed properties (pulumi/_utils.py ContextProperty) and the
    config a ContextVar, so a new thread, which starts with an empty context, does not see the
    config another thread set. (A ContextProperty also takes the first value set into a context
    that had none as its default; engine.run_program resets the options on every run regardless.)"""
    for name in ("project", "stack", "monitor", "engine", "rpc_manager", "outputs", "dry_run"):
        prop = vars(runtime_settings.Settings)[name]
        assert isinstance(prop, pulumi._utils.ContextProperty), name
        assert isinstance(prop._data, contextvars.ContextVar), name

    def set_then_look_from_a_new_thread() -> tuple[Any, Any]:
        runtime_config.set_all_config({"p:key": "here"}, [])
        return runtime_config.CONFIG.get(), run_in_a_new_context(runtime_config.CONFIG.get)

    seen_here, seen_there = run_in_a_new_context(set_then_look_from_a_new_thread)
    assert seen_here == {"p:key": "here"}
    assert "p:key" not in seen_there


def test_unknown_checking_proxy() -> None:
    """commands/check_policies/runner.py wraps inputs in unknown_checking_proxy; policies/values.py catches
    UnknownValueError."""
    assert parameters(proxy.unknown_checking_proxy) == ["props"]
    assert issubclass(proxy.UnknownValueError, Exception)
    wrapped = proxy.unknown_checking_proxy({"spec": {"replicas": 2}})
    assert wrapped["spec"]["replicas"] == 2


def test_analyzer_stub() -> None:
    """tests/policies/test_policies.py talks to the real policy pack over the analyzer gRPC service."""
    assert parameters(analyzer_pb2_grpc.AnalyzerStub.__init__) == ["channel"]


def run_in_a_new_context(function: Callable[[], Any]) -> Any:
    result: list[Any] = []
    thread = threading.Thread(target=lambda: result.append(function()))
    thread.start()
    thread.join()
    return result[0]
