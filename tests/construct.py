"""Build one component under the SDK's mocks and assert on what it declared, in the AWS CDK style.

`build(lambda: Component("name", Args(...)))` runs the factory through the offline engine
(`commands.engine.mocks.run_under_mocks`, the same mocks and recording monitor the render uses) in
a fresh context and returns what it built: every registration (the component and its children), and
through the render's own functions the records of its resources.json, the Kubernetes manifests it
writes and the stack outputs the factory exported (`pulumi.export`), resolved and secrets redacted.
`has_resource(built, type, props)` then asserts that one resource of that type has inputs that
contain `props` (like CDK's `Template.has_resource_properties`): mappings match key by key and may
hold more keys, lists match item by item, `ABSENT` asserts a key is not set and `ANY` accepts any
value. `built.validate()` checks every manifest against its schema (tests/manifest_schemas.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, overload

from commands.engine import mocks
from commands.engine.mocks import Registration
from commands.render import command as render
from commands.stackfile import stack_settings
from tests.manifest_schemas import validate_manifest
from tests.rendered import as_a_new_process

# What the offline engine's look-up of a cluster the stack does not manage finds (its pod range), and
# the project number it gives a project.
stand_in_cluster = mocks.stand_in_cluster
STAND_IN_PODS_CIDR = mocks.STAND_IN_PODS_CIDR
offline_project_number = mocks.offline_project_number

SETTINGS = stack_settings.StackSettings(project="components", stack="test", config={}, secret_keys=[], placeholders=[])


class _Sentinel:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


ABSENT = _Sentinel("ABSENT")
ANY = _Sentinel("ANY")


@dataclass(frozen=True, eq=False)
class Built(Sequence[Registration]):
    """What a factory built: its registrations in order (a sequence of them), and the views of the render."""

    registrations: list[Registration]
    outputs: dict[str, Any]
    # What the factory warned (`pulumi.log.warn`), as `pulumi up` shows it.
    warnings: list[str]

    @overload
    def __getitem__(self, index: int) -> Registration: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Registration]: ...

    def __getitem__(self, index: int | slice) -> Registration | Sequence[Registration]:
        return self.registrations[index]

    def __len__(self) -> int:
        return len(self.registrations)

    def __iter__(self) -> Iterator[Registration]:
        return iter(self.registrations)

    @cached_property
    def records(self) -> list[dict[str, Any]]:
        """The resources as the render's resources.json holds them (parents and dependencies by name)."""
        return render.resource_records(self.registrations)

    @cached_property
    def manifests(self) -> list[dict[str, Any]]:
        """The Kubernetes objects as the render writes them to manifests/."""
        return render.manifests_of(self.records)

    def kind(self, kind: str, name: str | None = None) -> list[dict[str, Any]]:
        return [
            manifest
            for manifest in self.manifests
            if manifest["kind"] == kind and (name is None or manifest["metadata"]["name"] == name)
        ]

    def manifest(self, kind: str, name: str) -> dict[str, Any]:
        """The one object of `kind` named `name`."""
        found = self.kind(kind, name)
        assert len(found) == 1, f"{len(found)} {kind} named {name}, expected one"
        return found[0]

    def named(self, name: str) -> dict[str, Any]:
        """The record of the one resource with this logical name."""
        found = [record for record in self.records if record["name"] == name]
        assert len(found) == 1, f"{len(found)} resources named {name}, expected one"
        return found[0]

    def validate(self) -> None:
        """Every manifest against its schema (built-in kinds strictly, custom resources by their CRD)."""
        for manifest in self.manifests:
            validate_manifest(manifest)


class ImageLookUpFails(mocks.OfflineMocks):
    """Compute Engine answers the image look-up with an error (an empty project's first `up` before the API is on,
    or a transient failure)."""

    def __init__(self, error: str) -> None:
        super().__init__()
        self.error = error

    def call(self, args: Any) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        if args.token == mocks.GET_IMAGES:
            return {}, [("project", self.error)]
        return super().call(args)


def build(
    factory: Callable[[], object],
    existing_images: frozenset[str] = frozenset(),
    existing_cluster: Callable[[str, str, str], dict[str, Any]] = mocks.stand_in_cluster,
    image_sizes: Mapping[str, int] | None = None,
    image_look_up_error: str | None = None,
) -> Built:
    """What `factory` registers (the component and its children) and exports, run as the render runs a
    program: in an empty project, or one where earlier ups made `existing_images` (of `image_sizes` GiB, else
    not known); a look-up of a cluster the stack does not manage finds `existing_cluster(name, location, project)`;
    an image look-up fails with `image_look_up_error` when given."""
    offline = (
        ImageLookUpFails(image_look_up_error)
        if image_look_up_error is not None
        else mocks.OfflineMocks(existing_images, existing_cluster, image_sizes=image_sizes)
    )
    result = as_a_new_process(mocks.run_under_mocks, SETTINGS, factory, mocks.RecordingMonitor(offline))
    return Built(result.registrations, render.plain(result.outputs), result.warnings)


def is_secret(value: Any) -> bool:
    """A value the engine holds as a secret (the SDK's secret signature on the serialized value)."""
    return isinstance(value, Mapping) and value.get(mocks.SECRET_SIG) == mocks.SECRET_MARK


def mismatch(actual: Any, expected: Any, path: str = "") -> str | None:
    """Where `actual` fails to contain `expected` (None when it does)."""
    if expected is ANY:
        return None
    if isinstance(expected, Mapping):
        return _mapping_mismatch(actual, expected, path)
    if isinstance(expected, Sequence) and not isinstance(expected, str):
        return _sequence_mismatch(actual, expected, path)
    return None if actual == expected else f"{path or '.'}: expected {expected!r}, got {actual!r}"


def _mapping_mismatch(actual: Any, expected: Mapping[str, Any], path: str) -> str | None:
    if not isinstance(actual, Mapping):
        return f"{path or '.'}: expected a mapping, got {actual!r}"
    for key, value in expected.items():
        where = f"{path}.{key}"
        if value is ABSENT:
            problem = f"{where}: expected absent, got {actual[key]!r}" if key in actual else None
        else:
            problem = mismatch(actual[key], value, where) if key in actual else f"{where}: missing"
        if problem:
            return problem
    return None


def _sequence_mismatch(actual: Any, expected: Sequence[Any], path: str) -> str | None:
    if not isinstance(actual, Sequence) or isinstance(actual, str) or len(actual) != len(expected):
        return f"{path or '.'}: expected {len(expected)} items, got {actual!r}"
    problems = (
        mismatch(item, wanted, f"{path}[{index}]")
        for index, (item, wanted) in enumerate(zip(actual, expected, strict=True))
    )
    return next((problem for problem in problems if problem), None)


def match(actual: Any, expected: Any) -> bool:
    return mismatch(actual, expected) is None


def of_type(records: Sequence[Registration], type_: str) -> list[Registration]:
    return [record for record in records if record.type == type_]


def has_resource(records: Sequence[Registration], type_: str, props: Mapping[str, Any] | None = None) -> Registration:
    """The one resource of `type_` whose inputs contain `props`; fails naming each candidate's first mismatch."""
    candidates = of_type(records, type_)
    found = [record for record in candidates if match(record.inputs, props or {})]
    if len(found) == 1:
        return found[0]
    if not found:
        reasons = "\n".join(f"  {record.name}: {mismatch(record.inputs, props or {})}" for record in candidates)
        raise AssertionError(f"no {type_} matches {json.dumps(props, default=repr)}\n{reasons or '  (none declared)'}")
    raise AssertionError(f"{len(found)} {type_} match, expected one: {[record.name for record in found]}")


def resource_count_is(records: Sequence[Registration], type_: str, count: int) -> None:
    found = of_type(records, type_)
    assert len(found) == count, f"{len(found)} {type_}, expected {count}: {[record.name for record in found]}"


def component(records: Sequence[Registration], type_: str) -> Registration:
    """The component's own registration (not a custom resource)."""
    [record] = [record for record in records if record.type == type_ and not record.custom]
    return record


def children_are_parented(records: Sequence[Registration], type_: str, name: str) -> None:
    """Every resource but the component is its child, or the child of a component inside it, and is
    named from the component's name (`name-...`)."""
    root = component(records, type_)
    components = {record.urn: record for record in records if not record.custom}
    for record in records:
        if record is root:
            continue
        ancestor = components.get(record.parent)
        while ancestor is not None and ancestor is not root:
            ancestor = components.get(ancestor.parent)
        assert ancestor is root, f"{record.type} {record.name} is not inside {name}"
        assert record.name.startswith(f"{name}-"), f"{record.type} {record.name} is not named from {name}"
