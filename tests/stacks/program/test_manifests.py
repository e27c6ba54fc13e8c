"""Every rendered manifest is valid: built-ins in strict mode, custom resources by their CRD."""

from __future__ import annotations

from tests.manifest_schemas import validate_manifest
from tests.rendered import RenderedStack


def test_every_manifest_validates(stack: RenderedStack) -> None:
    for manifest in stack.manifests:
        validate_manifest(manifest)
