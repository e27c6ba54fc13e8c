"""Declare one component under the SDK's mocks, the way the offline render runs the whole program
(stacks/offline/engine.py), and read back what it registered; `contains` compares partially.

A component test then needs no stack file, no config and no other component: it builds the
component's own Args and asserts on the records (the shape of a render's resources.json) and the
Kubernetes manifests among them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi.runtime.settings import reset_options

from stacks.offline import engine, render
from tests.rendered import as_a_new_process
from tests.schemas import validate_manifest

PROJECT = "component-test"
STACK = "test"


@dataclass(frozen=True)
class Declared:
    records: list[dict[str, Any]]
    outputs: dict[str, Any]

    @property
    def manifests(self) -> list[dict[str, Any]]:
        return [render.manifest_of(record) for record in self.records if render.is_manifest(record)]

    def kind(self, kind: str, name: str | None = None) -> list[dict[str, Any]]:
        return [
            manifest
            for manifest in self.manifests
            if manifest["kind"] == kind and (name is None or manifest["metadata"]["name"] == name)
        ]

    def one(self, kind: str, name: str | None = None) -> dict[str, Any]:
        (manifest,) = self.kind(kind, name)
        return manifest

    def named(self, name: str) -> dict[str, Any]:
        (record,) = [record for record in self.records if record["name"] == name]
        return record

    def validate(self) -> None:
        """Every manifest against its schema (built-ins strict, custom resources by their CRD)."""
        for manifest in self.manifests:
            validate_manifest(manifest)


def declare(build: Callable[[], dict[str, Any]]) -> Declared:
    """Run `build` (it declares resources and returns outputs to resolve) under the mocks."""

    def run() -> Declared:
        reset_options(project=PROJECT, stack=STACK)
        monitor = engine.RecordingMonitor(engine.OfflineMocks())
        pulumi.runtime.set_mocks(engine.OfflineMocks(), project=PROJECT, stack=STACK, preview=False, monitor=monitor)
        outputs: dict[str, Any] = {}

        @pulumi.runtime.test  # type: ignore[untyped-decorator]
        def program() -> None:
            outputs.update(build())

        program()
        resolved = engine.resolve_outputs(outputs)
        return Declared(render.resource_records(monitor.registrations), render.plain(resolved))

    return as_a_new_process(run)


def contains(actual: Any, expected: Any) -> bool:
    """`expected` is a part of `actual`: every key of a mapping (recursively), every item of a list
    in order and of the same length, and equal scalars."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            key in actual and contains(actual[key], value) for key, value in expected.items()
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(expected)
            and all(contains(item, part) for item, part in zip(actual, expected, strict=True))
        )
    return bool(actual == expected)
