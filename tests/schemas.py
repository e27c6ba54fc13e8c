"""Validate rendered objects: built-in kinds with kubernetes-validate (strict), custom resources
against the upstream CRD schemas vendored in schemas/crds."""

from __future__ import annotations

from typing import Any

import jsonschema
import kubernetes_validate

from schemas.crds import schemas as crd_schemas

KUBERNETES_VERSION = "1.34"


def is_custom(manifest: dict[str, Any]) -> bool:
    return (manifest["apiVersion"], manifest["kind"]) in crd_schemas()


def validate_custom(manifest: dict[str, Any]) -> None:
    schema = crd_schemas()[(manifest["apiVersion"], manifest["kind"])]
    jsonschema.validate(manifest, schema, cls=jsonschema.Draft7Validator)


def validate_builtin(manifest: dict[str, Any]) -> None:
    try:
        kubernetes_validate.validate(manifest, KUBERNETES_VERSION, strict=True)
    except kubernetes_validate.SchemaNotFoundError:
        raise AssertionError(
            f"no schema for {manifest['apiVersion']} {manifest['kind']}: vendor its CRD in schemas/crds "
            "(sources.json, then `make crds UPSTREAM=... REF=...`)"
        ) from None


def validate_manifest(manifest: dict[str, Any]) -> None:
    if is_custom(manifest):
        validate_custom(manifest)
    else:
        validate_builtin(manifest)
