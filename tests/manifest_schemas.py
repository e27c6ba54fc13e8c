"""Validate rendered objects: built-in kinds with kubernetes-validate (strict), custom resources
against the upstream CRD schemas vendored in schemas/crds."""

from __future__ import annotations

import functools
from typing import Any

import jsonschema
import kubernetes_validate
import kubernetes_validate.utils

from schemas.crds import schemas as crd_schemas

KUBERNETES_VERSION = "1.34"

# kubernetes-validate reads its schema files on every call, among them the several-MB
# `_definitions.json`; the files do not change during a run, so read each once.
kubernetes_validate.utils.schema_contents = functools.cache(kubernetes_validate.utils.schema_contents)


def is_custom(manifest: dict[str, Any]) -> bool:
    return (manifest["apiVersion"], manifest["kind"]) in crd_schemas()


@functools.cache
def _custom_validator(api_version: str, kind: str) -> jsonschema.Draft7Validator:
    schema = crd_schemas()[(api_version, kind)]
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


def validate_custom(manifest: dict[str, Any]) -> None:
    _custom_validator(manifest["apiVersion"], manifest["kind"]).validate(manifest)


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
