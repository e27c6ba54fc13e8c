"""Validate rendered objects: built-in kinds with kubernetes-validate (strict), custom resources
against the upstream CRD schemas in ../shared/crds."""

from __future__ import annotations

from functools import cache
from typing import Any

import jsonschema
import kubernetes_validate
import yaml

from tests.rendered import SHARED

KUBERNETES_VERSION = "1.34"


@cache
def crd_schemas() -> dict[tuple[str, str], dict[str, Any]]:
    """(apiVersion, kind) -> openAPIV3Schema for every served version of every CRD in shared/crds."""
    schemas: dict[tuple[str, str], dict[str, Any]] = {}
    for path in sorted((SHARED / "crds").glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            if not document or document.get("kind") != "CustomResourceDefinition":
                continue
            spec = document["spec"]
            for version in spec["versions"]:
                api_version = f"{spec['group']}/{version['name']}"
                schemas[(api_version, spec["names"]["kind"])] = version["schema"]["openAPIV3Schema"]
    return schemas


def is_custom(manifest: dict[str, Any]) -> bool:
    return (manifest["apiVersion"], manifest["kind"]) in crd_schemas()


def validate_custom(manifest: dict[str, Any]) -> None:
    schema = crd_schemas()[(manifest["apiVersion"], manifest["kind"])]
    jsonschema.validate(manifest, schema, cls=jsonschema.Draft7Validator)


def validate_builtin(manifest: dict[str, Any]) -> None:
    kubernetes_validate.validate(manifest, KUBERNETES_VERSION, strict=True)


def validate_manifest(manifest: dict[str, Any]) -> None:
    if is_custom(manifest):
        validate_custom(manifest)
    else:
        validate_builtin(manifest)
