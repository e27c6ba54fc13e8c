"""One cloud object under two URNs: a resource whose URN changes (a new parent, a new logical name)
without an alias is, to the engine, a new resource to create and an old one to delete, while in the
cloud both are the same object. The engine creates first and deletes the old URN at the end of the
update, so:

* a Kubernetes object: pulumi-kubernetes 4.34.2 refuses to create an object that exists ("The
  resource already exists in the cluster ... Renaming a Pulumi resource: use an alias"): it creates
  client-side unless `upsertExistingObjects` (or PULUMI_K8S_UPSERT_EXISTING_OBJECTS) is set, and
  with it the create adopts the object and the delete of the old URN then removes it
  (pulumi/pulumi-kubernetes@94977969 provider/pkg/await/await.go:189-240 and :276-292; the 4.34.2
  wheel documents the option as off by default, pulumi_kubernetes/provider.py `upsert_existing_objects`);
* a GCP resource the program names: the create fails with 409 alreadyExists (names are unique in
  their scope, `risks.py`); a project service is the exception: enabling an enabled API succeeds, and
  deleting it with disableOnDestroy false only drops it from the state
  (hashicorp/terraform-provider-google-beta@93c65b2d
  google-beta/services/resourcemanager/resource_google_project_service.go:229-251 and :339-343).

Kubernetes objects are the same object when kind, namespace and name match on the same cluster:
their providers have the same kubeconfig (its digest, `commands/engine/secrets.py`).
"""

from __future__ import annotations

import json
from typing import Any

from commands.io.records import SECRET_DIGESTS
from commands.io.states import Record
from commands.preview.changes import Preview
from commands.preview.replacement_rules import is_kubernetes_object
from commands.preview.risks import CLUSTER_TYPE, GLOBAL_TYPES

PROJECT_SERVICE_TYPE = "gcp:projects/service:Service"
KUBERNETES_PROVIDER_TYPE = "pulumi:providers:kubernetes"


def _providers(records: dict[str, Record]) -> dict[str, Record]:
    return {record["name"]: record for record in records.values() if record["type"].startswith("pulumi:providers:")}


def cluster_of(record: Record, providers: dict[str, Record]) -> str:
    """What a Kubernetes provider points at: its kubeconfig as the render holds it (a digest when secret)."""
    provider = providers.get(record.get("provider") or "")
    if provider is None:
        return ""
    digests = provider.get(SECRET_DIGESTS) or {}
    return str(digests.get("kubeconfig") or json.dumps(provider["inputs"], sort_keys=True))


def identity(record: Record, providers: dict[str, Record]) -> tuple[Any, ...] | None:
    """The cloud object a record stands for, or None when the program does not name it."""
    type_, inputs = record["type"], record["inputs"]
    if is_kubernetes_object(type_):
        metadata = inputs.get("metadata") or {}
        if not metadata.get("name"):
            return None
        kind = type_.split(":", 1)[1].split("/", 1)[0], type_.rsplit(":", 1)[1]
        return (cluster_of(record, providers), *kind, metadata.get("namespace"), metadata["name"])
    if type_ == PROJECT_SERVICE_TYPE:
        return (type_, inputs.get("project"), inputs.get("service"))
    if type_.startswith("gcp:") and inputs.get("name"):
        scope = () if type_ in GLOBAL_TYPES else tuple(inputs.get(key) for key in ("zone", "region", "location"))
        return (type_, inputs.get("project"), *scope, inputs["name"])
    return None


def _clash(urn: str, previous_urn: str, old: Record) -> str | None:
    type_ = old["type"]
    if type_ == PROJECT_SERVICE_TYPE:
        if old["inputs"].get("disableOnDestroy") is not True:
            return None
        return (
            f"{urn} enables {old['inputs'].get('service')}, which it finds enabled, and then the delete of "
            f"{previous_urn} (disableOnDestroy true) disables it: give the new one the old URN (an alias)"
        )
    if is_kubernetes_object(type_):
        metadata = old["inputs"].get("metadata") or {}
        where = f" in namespace {metadata['namespace']}" if metadata.get("namespace") else ""
        return (
            f"pulumi-kubernetes refuses to create {urn}: {type_.rsplit(':', 1)[1]} {metadata.get('name')!r}{where} "
            f"exists on the same cluster, held by {previous_urn}, which is deleted only at the end of the update "
            "(with upsertExistingObjects the create would adopt it and that delete remove it). The resource's "
            "URN changed (a new parent or logical name): give it the old URN as an alias, or keep the setting"
        )
    return (
        f"GCP refuses to create {urn} (409 alreadyExists): {old['inputs'].get('name')!r} exists, held by "
        f"{previous_urn}, which is deleted only at the end of the update. The resource's URN changed (a new "
        "parent or logical name): give it the old URN as an alias, or keep the setting"
    )


def same_object_refusals(old: dict[str, Record], new: dict[str, Record], result: Preview) -> list[str]:
    """A create whose cloud object is the one a delete of this update still holds."""
    old_providers, new_providers = _providers(old), _providers(new)
    deleted: dict[tuple[Any, ...], str] = {}
    for change in result.of("delete"):
        if (key := identity(old[change.urn], old_providers)) is not None:
            deleted[key] = change.urn
    found = []
    for change in result.of("create"):
        key = identity(change.record, new_providers)
        if key is not None and key in deleted and (clash := _clash(change.urn, deleted[key], old[deleted[key]])):
            found.append(clash)
    return found


def deleted_cluster_still_used(old: dict[str, Record], new: dict[str, Record], result: Preview) -> list[str]:
    """A cluster this update deletes while NEW's Kubernetes objects stay on it (NEW's Kubernetes
    provider has the kubeconfig of the provider built on that cluster): `cluster.existing` naming the
    cluster this very stack created. The objects would be deleted with the cluster."""
    deleted = [change.urn for change in result.of("delete") if old[change.urn]["type"] == CLUSTER_TYPE]
    if not deleted:
        return []
    old_providers, new_providers = _providers(old), _providers(new)
    on_deleted = {
        cluster_of({"provider": record["name"]}, old_providers)
        for record in old_providers.values()
        if record["type"] == KUBERNETES_PROVIDER_TYPE
        and any(old[urn]["name"] in (record["options"].get("dependsOn") or []) for urn in deleted)
    }
    kept_on_it = sorted(
        urn
        for urn, record in new.items()
        if is_kubernetes_object(record["type"]) and cluster_of(record, new_providers) in on_deleted
    )
    if not kept_on_it:
        return []
    names = ", ".join(repr(old[urn]["inputs"].get("name")) for urn in deleted)
    return [
        f"the update deletes the cluster {names} ({', '.join(deleted)}) while {len(kept_on_it)} Kubernetes objects "
        "of the new program stay on it (their provider has the kubeconfig of that cluster): `cluster.existing` "
        "names the cluster this stack created. Keep cluster.existing false while this stack owns the cluster; to "
        "hand it over, `pulumi import` it where it will be managed and `pulumi state delete` its URN here first "
        "(stack setting: cluster.existing)"
    ]


def identity_refusals(old: dict[str, Record], new: dict[str, Record], result: Preview) -> list[str]:
    """What the engine refuses because one cloud object stands under two URNs (or a deleted cluster's)."""
    return same_object_refusals(old, new, result) + deleted_cluster_still_used(old, new, result)
