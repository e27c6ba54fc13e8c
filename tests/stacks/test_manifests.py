"""Every rendered manifest is valid: built-ins in strict mode, custom resources by their CRD."""

from __future__ import annotations

from tests.rendered import RenderedStack
from tests.schemas import validate_manifest


def test_every_manifest_validates(stack: RenderedStack) -> None:
    for manifest in stack.manifests:
        validate_manifest(manifest)
