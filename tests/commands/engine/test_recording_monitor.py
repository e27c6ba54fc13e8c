"""The recording monitor answers a registration as the SDK's mock does (commands/engine/mocks.py).

It answers most of them itself, from the request's own properties plus what the offline mocks set; a
registration it cannot answer so (another mocks class, an unknown value) goes to the SDK's mock. Each
test runs a program under both and compares what the program reads and what is recorded.
"""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pulumi_gcp as gcp
from pulumi.runtime import mocks as pulumi_mocks

from commands.engine import mocks
from commands.engine.mocks import OfflineMocks, RecordingMonitor, RunResult
from tests.construct import SETTINGS, build
from tests.rendered import as_a_new_process


class SdkAnswered(RecordingMonitor):
    """Every registration answered by the SDK's mock, as before the recording monitor answered any."""

    def _answers_from_the_request(self, request: Any) -> bool:
        return False


class CountingMonitor(RecordingMonitor):
    def __init__(self, mocks_: pulumi_mocks.Mocks) -> None:
        super().__init__(mocks_)
        self.answered: list[str] = []

    def _answers_from_the_request(self, request: Any) -> bool:
        answers = super()._answers_from_the_request(request)
        if answers:
            self.answered.append(request.name)
        return answers


def comparable(value: Any) -> Any:
    """Assets, archives and resources as what they hold (they compare by identity)."""
    if isinstance(value, dict):
        return {key: comparable(item) for key, item in value.items()}
    if isinstance(value, list):
        return [comparable(item) for item in value]
    if isinstance(value, pulumi.StringAsset):
        return ("a string asset", value.text)
    if isinstance(value, pulumi.AssetArchive):
        return ("an asset archive", comparable(value.assets))
    if isinstance(value, pulumi.Resource):
        return ("a resource", type(value).__name__)
    return value


def export_read(name: str, value: Any) -> None:
    """Export what the program reads of `value`: the value, and whether it is secret and known."""

    async def read() -> dict[str, Any]:
        data = await pulumi.Output.from_input(value)._data
        return {"value": comparable(data.value), "secret": data.is_secret, "known": data.is_known}

    pulumi.export(name, pulumi.Output._from_input_shallow(read()))


def unknown() -> pulumi.Output[Any]:
    return pulumi.Output.from_input(1).apply(lambda _: pulumi.output.UNKNOWN)


def run(monitor: RecordingMonitor, body: Any) -> RunResult:
    return as_a_new_process(mocks.run_under_mocks, SETTINGS, body, monitor)


def records(result: RunResult) -> list[tuple[Any, ...]]:
    return sorted(
        (record.type, record.name, repr(comparable(record.inputs)), repr(record.options), record.parent, record.urn)
        for record in result.registrations
    )


class Holder(pulumi.ComponentResource):
    def __init__(self, name: str) -> None:
        super().__init__("llmtest:index:Holder", name)
        self.register_outputs({})


def program_of_every_shape() -> None:
    account = gcp.serviceaccount.Account("account", account_id="a1", project="p1")
    network = gcp.compute.Network("network", name="vpc", project="p1")
    holder = Holder("holder")
    other = pulumi.CustomResource("test:index:Other", "other", {"a": 1})
    inputs = {
        "token": pulumi.Output.secret("t"),
        "config": {"a": pulumi.Output.secret("s"), "b": "plain"},
        "list": ["x", pulumi.Output.secret("y")],
        "deep": [{"k": [pulumi.Output.secret(1)]}],
        "reference": other,
        "component": holder,
        "asset": pulumi.StringAsset("hello"),
        "archive": pulumi.AssetArchive({"f": pulumi.StringAsset("x")}),
        "nested": {"n": None, "m": 1},
        "nones": [None, 1],
        "unset": None,
        "email": None,
        "id": "given",
    }
    thing = pulumi.CustomResource("test:index:Thing", "thing", {**inputs, "email": None})
    for key in inputs:
        export_read(f"thing.{key}", getattr(thing, key))
    for resource, keys in ((account, ["email", "project", "name", "id"]), (network, ["self_link", "name", "id"])):
        for key in keys:
            export_read(f"{resource._name}.{key}", getattr(resource, key))


def test_what_it_answers_itself_reads_and_records_as_the_sdks_mock_answers() -> None:
    counting = CountingMonitor(OfflineMocks())
    answered_here = run(counting, program_of_every_shape)
    answered_by_the_sdk = run(SdkAnswered(OfflineMocks()), program_of_every_shape)
    assert {"account", "network", "thing", "other"} <= set(counting.answered)
    assert answered_here.outputs == answered_by_the_sdk.outputs
    assert records(answered_here) == records(answered_by_the_sdk)
    assert answered_here.outputs["account.email"]["value"] == "a1@p1.iam.gserviceaccount.com"
    assert answered_here.outputs["thing.config"] == {"value": {"a": "s", "b": "plain"}, "secret": True, "known": True}


def test_an_unknown_input_is_read_as_the_sdks_mock_answers_it_outside_a_preview() -> None:
    """The SDK's mock hands the mocks None for an unknown and answers a known None."""

    def program() -> None:
        account = gcp.serviceaccount.Account("account", account_id="a1", project=unknown())
        export_read("email", account.email)
        export_read("project", account.project)

    result = run(CountingMonitor(OfflineMocks()), program)
    assert result.outputs == run(SdkAnswered(OfflineMocks()), program).outputs
    assert result.outputs["email"]["value"] == "a1@offline.iam.gserviceaccount.com"
    assert result.outputs["project"] == {"value": None, "secret": False, "known": True}
    (account,) = [record for record in result.registrations if record.name == "account"]
    assert isinstance(account.inputs["project"], pulumi.output.Unknown)  # the record keeps what the program sent


class AddsToItsInputs(pulumi_mocks.Mocks):
    """A mocks class that writes its outputs into the inputs it is given, nested too."""

    def new_resource(self, args: pulumi_mocks.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        args.inputs["endpoint"] = "203.0.113.10"
        args.inputs["spec"]["status"] = "ready"
        return f"{args.name}-id", args.inputs

    def call(self, args: pulumi_mocks.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        return {}, []


def test_another_mocks_class_is_answered_by_the_sdks_mock() -> None:
    def program() -> None:
        thing = pulumi.CustomResource("test:index:Thing", "thing", {"spec": {"size": 1}, "endpoint": None})
        export_read("endpoint", thing.endpoint)  # type: ignore[attr-defined]
        export_read("spec", thing.spec)  # type: ignore[attr-defined]

    counting = CountingMonitor(AddsToItsInputs())
    result = run(counting, program)
    assert counting.answered == []
    assert result.outputs["endpoint"]["value"] == "203.0.113.10"
    assert result.outputs["spec"]["value"] == {"size": 1, "status": "ready"}
    (thing,) = result.registrations
    assert thing.inputs == {"spec": {"size": 1}}


def test_a_replacement_trigger_and_replace_with_are_recorded_and_a_secret_trigger_is_hidden() -> None:
    """The preview replaces on a changed trigger and with what replaceWith names (commands/preview/update_plan.py)."""

    def program() -> None:
        network = gcp.compute.Network("net", name="n", opts=pulumi.ResourceOptions(replacement_trigger="a"))
        gcp.compute.Firewall(
            "fw",
            name="f",
            network=network.id,
            opts=pulumi.ResourceOptions(replace_with=[network], replacement_trigger=pulumi.Output.secret("hunter")),
        )

    built = build(program)
    records = {record["name"]: record["options"] for record in built.records}
    assert records["net"]["replacementTrigger"] == "a" and "replaceWith" not in records["net"]
    assert records["fw"]["replaceWith"] == ["net"] and records["fw"]["replacementTrigger"] == "[secret]"
    (digest,) = records["fw"]["replacementTriggerSecretDigests"].values()
    assert digest.startswith("value sha256:") and "replacementTriggerSecretDigests" not in records["net"]
    assert "hunter" not in json.dumps(built.records)
