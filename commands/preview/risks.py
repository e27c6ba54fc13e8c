"""What the engine, a provider or GCP would refuse in a planned update, and what it would do that
the user may not expect: the refusals (exit 1) and warnings of a preview.

Sources, next to each check:
* protect and deletion guards: pulumi/pulumi step_generator.go and DeleteStep.Apply;
  terraform-provider-google@e03b7622 tpgresource/utils.go DeletionPolicyPreDelete,
  resource_compute_disk.go and resource_container_cluster.go Delete.
* Global names: networks, firewall rules, images and snapshots are global resources, unique by name
  in the project (Compute Engine "Global, regional, and zonal resources",
  https://cloud.google.com/compute/docs/regions-zones/global-regional-zonal-resources); subnets,
  routers and regional clusters are regional, disks zonal.
* Proxy-only subnets: the provider grows a subnet's range in place with `expandIpCidrRange`
  (terraform-provider-google-beta@93c65b2d resource_compute_subnetwork.go:1259-1269), which does not
  work for proxy-only subnets ("This command doesn't work for secondary subnets or for subnets that
  are used exclusively for load balancer proxies", https://cloud.google.com/sdk/gcloud/reference/compute/networks/subnets/expand-ip-range);
  their documented change of range is a second proxy-only subnet in role BACKUP, promoted to ACTIVE
  (https://cloud.google.com/load-balancing/docs/proxy-only-subnets).
* A disk deleted first: before deleting a resource replaced delete-first, the engine deletes the
  resources built from its outputs that must be replaced with it (pulumi/pulumi@1b594989
  pkg/resource/deploy/step_generator.go `calculateDependentReplacements`: a PersistentVolume's
  `spec.csi` and a claim's `spec.volumeName` force replacement); pulumi-kubernetes then waits up to
  10 minutes for each object to be gone (provider/pkg/await/await.go `Deletion`), and a claim that
  pods use stays Terminating (kubernetes.io/pvc-protection); the provider detaches a disk from every
  VM before deleting it (terraform-provider-google-beta@93c65b2d resource_compute_disk.go:1695-1775).
* Dependents deleted first: a resource replaced delete-first has the engine delete, before it, every
  dependent replaced with it, and create them again after it (pulumi/pulumi@1b594989
  pkg/resource/deploy/step_generator.go `calculateDependentReplacements`; `update_plan.py`). Each such
  resource's steps form one chain, and the step executor runs chains in parallel
  (pkg/resource/deploy/step_executor.go `ExecuteSerial`: "as many workers as possible executing
  chains in parallel"): a claim deleted in a disk's chain while another chain deletes the serving
  Deployment waits only until those pods end.
* An image made from a snapshot: Compute Engine creates an image from an existing source snapshot
  (https://cloud.google.com/compute/docs/images/create-custom, "sourceSnapshot"); the snapshot the
  weights image was made from is deleted by the `up` after the one that made it
  (components/weights.py), so a replaced image has no source left.
* A subnet a Cloud NAT lists: GCP refuses to delete a subnetwork that a router's NAT still names in
  its `subnetworks` (reported against terraform-provider-google 7.3.0, "Subnet in use by nat deletion
  failure": hashicorp/terraform-provider-google#26776 and hashicorp/terraform-provider-google#28572);
  the NAT's list is an in-place update (resource_compute_router_nat.go), which the engine runs only
  after the subnet's replacement.
* "Already being used by" is not retried by the provider (terraform-provider-google-beta@93c65b2d
  google-beta/transport/error_retry_predicates.go lists no such predicate), and GKE deletes the load
  balancers and network endpoint groups of a Gateway in the background ("Deleting a cluster", and
  hashicorp/terraform-provider-google#7637): docs/operations.md.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from commands.engine.secrets import CIPHERTEXT, FROM_ESC, UNSET, shown_kind
from commands.io.states import JOB_TYPE, Record, is_job_of, pod_template
from commands.preview.changes import KeptValue, Preview, ResourceChange
from commands.preview.replacement_rules import CLAIM_TYPE, VOLUME_TYPE, is_kubernetes_object
from commands.preview.replicas import created_replicas, is_serving_deployment, scale_command
from common.sources import STATE_DELETE, cited
from components.gateway import REUSED_PROXY_SUBNET_ANNOTATION
from policies.graph import environments
from policies.kubernetes import metadata_name
from policies.rules.protection import PRODUCTION_ENVIRONMENTS

CLUSTER_TYPE = "gcp:container/cluster:Cluster"
SUBNETWORK_TYPE = "gcp:compute/subnetwork:Subnetwork"
DISK_TYPE = "gcp:compute/disk:Disk"
IMAGE_TYPE = "gcp:compute/image:Image"
SNAPSHOT_TYPE = "gcp:compute/snapshot:Snapshot"
PROXY_ONLY_PURPOSES = ("REGIONAL_MANAGED_PROXY", "GLOBAL_MANAGED_PROXY")
PROXY_ONLY_DOCS = "https://cloud.google.com/load-balancing/docs/proxy-only-subnets"
NETWORK_TYPE = "gcp:compute/network:Network"
FIREWALL_TYPE = "gcp:compute/firewall:Firewall"
SECRET_TYPE = "kubernetes:core/v1:Secret"
ROUTER_NAT_TYPE = "gcp:compute/routerNat:RouterNat"
GLOBAL_TYPES = frozenset(
    {NETWORK_TYPE, "gcp:compute/firewall:Firewall", "gcp:compute/image:Image", "gcp:compute/snapshot:Snapshot"}
)
LOCATION_FIELDS = ("zone", "region", "location")
# Objects whose deletion makes GKE remove load balancers and network endpoint groups in the background.
LOAD_BALANCED_TYPES = (
    "kubernetes:gateway.networking.k8s.io/",
    "kubernetes:inference.networking.k8s.io/",
    "kubernetes:helm.sh/v3:Release",
)


@dataclass(frozen=True)
class _Resource:
    """A record as the policy pack's graph helpers read one."""

    resource_type: str
    props: dict[str, Any]


def is_production(records: list[Record]) -> bool:
    labelled = environments([_Resource(record["type"], record["inputs"]) for record in records])
    return bool(labelled & set(PRODUCTION_ENVIRONMENTS.default))


def in_production(old: dict[str, Record], new: dict[str, Record]) -> bool:
    """Whether the update runs on a production stack: the one running (OLD) or the one declared (NEW). A
    prod stack whose update also sets `environment: staging` is still production until it is applied
    (the refusals were lifted by that same update)."""
    return is_production(list(old.values())) or is_production(list(new.values()))


def _keys(change: ResourceChange) -> str:
    return f" (stack setting: {', '.join(sorted(change.config_keys))})" if change.config_keys else ""


def _same_gcp_identity(old: Record, new: Record) -> bool:
    """The replacement would be created under the old one's name, in its scope."""
    fields = ("name", "project") if new["type"] in GLOBAL_TYPES else ("name", "project", *LOCATION_FIELDS)
    return "name" in new["inputs"] and all(old["inputs"].get(key) == new["inputs"].get(key) for key in fields)


def _delete_guard(old: Record) -> str | None:
    """What in the state makes the GCP provider's Delete fail (terraform-provider-google@e03b7622:
    tpgresource/utils.go DeletionPolicyPreDelete and resource_compute_disk.go Delete for
    `deletion_policy`, resource_container_cluster.go Delete for `deletion_protection`)."""
    if not old["type"].startswith("gcp:"):
        return None
    if old["inputs"].get("deletionPolicy") == "PREVENT":
        return "deletionPolicy is PREVENT in the state (set DELETE and `pulumi up` first)"
    if old["type"] == CLUSTER_TYPE and old["inputs"].get("deletionProtection") is True:
        return "deletionProtection is true in the state (set it false and `pulumi up` first)"
    return None


def _secondary_ranges_in_use(old: dict[str, Record], change: ResourceChange) -> str:
    """The names of a subnet's secondary ranges whose CIDR changes although a cluster of the old
    state allocates its pods or services from them (the provider updates them in place, as
    terraform-provider-google does not mark them ForceNew; GCP refuses it while they are in use)."""
    if change.record["type"] != SUBNETWORK_TYPE:
        return ""

    def ranges(record: Record) -> dict[Any, Any]:
        return {
            item.get("rangeName"): item.get("ipCidrRange") for item in record["inputs"].get("secondaryIpRanges") or []
        }

    old_ranges, new_ranges = ranges(old[change.urn]), ranges(change.record)
    changed = {name for name, cidr in old_ranges.items() if name in new_ranges and new_ranges[name] != cidr}
    used = {
        (record["inputs"].get("ipAllocationPolicy") or {}).get(key)
        for record in old.values()
        if record["type"] == CLUSTER_TYPE
        for key in ("clusterSecondaryRangeName", "servicesSecondaryRangeName")
    }
    return ", ".join(repr(name) for name in sorted(changed & used))


def _replaced_workload(old: dict[str, Record], change: ResourceChange, claim_first: bool) -> str | None:
    """The serving Deployment rebuilt beside itself: a namespace or name change (pulumi-kubernetes
    creates a renamed object first, provider.go Diff `deleteBeforeReplace`), at the count `created_replicas` says;
    `claim_first`: a weights claim is deleted first in this update, with the volume it is replaced with."""
    if change.action != "replace" or change.delete_before_replace or not is_serving_deployment(change.record):
        return None
    if change.urn not in old:
        return None
    pods = created_replicas(old[change.urn], change.record)
    if not pods or not any(
        reason.startswith(("metadata.name ", "metadata.namespace ")) for reason in change.replaced_because
    ):
        return None  # rebuilt with its cluster (a replaced provider): the cluster's own change says so
    before = old[change.urn]["inputs"].get("metadata") or {}
    after = change.record["inputs"].get("metadata") or {}
    scale = (
        f"scale the old Deployment to zero first (`{scale_command(old[change.urn], 0)}`) and accept the outage, or "
        f"deploy a second stack{_keys(change)}"
    )
    if before.get("namespace") != after.get("namespace") and claim_first:
        return (
            f"{change.urn}: the serving Deployment is replaced create-before-delete "
            f"({'; '.join(change.replaced_because)}), and the weights volume and its claim are deleted first and "
            "made again for the new namespace (a bound volume takes no other claim): the old claim stays "
            "Terminating while the running pods mount it, so `pulumi up` waits on it and fails after 10 minutes. "
            "Keep cluster.namespace as it is; to move anyway, " + scale
        )
    return (
        f"{change.urn}: the serving Deployment is replaced create-before-delete "
        f"({'; '.join(change.replaced_because)}): "
        f"{pods} new pod(s) need {pods} more A4 node(s) beside the running ones until those are deleted (capacity "
        "that may not exist; both sets are billed). Keep routing.serviceName and cluster.namespace as they "
        "are; to move anyway, " + scale
    )


def _protection(old: dict[str, Record], change: ResourceChange) -> Iterator[str]:
    if change.action == "replace" and change.options.get("protect") and old[change.urn]["options"].get("protect"):
        yield f"unable to replace protected {change.urn}: {'; '.join(change.replaced_because)}{_keys(change)}"
    keep = _keep_the_cluster(change)
    if change.action == "delete" and change.options.get("protect"):
        yield f"unable to delete protected {change.urn}: it is no longer declared{keep}"
    if change.action in ("delete", "replace") and (guard := _delete_guard(old[change.urn])):
        yield f"the provider would fail to delete {change.urn}: {guard}{_keys(change)}{keep}"


def _keep_the_cluster(change: ResourceChange) -> str:
    """How a GKE cluster the program no longer declares (`cluster.existing`) stays in the cloud."""
    if change.action != "delete" or change.record["type"] != CLUSTER_TYPE:
        return ""
    return (
        "; to keep the cluster (cluster.existing uses it, as other teams may), take it out of the state, not the "
        f"cloud: `pulumi state delete --force URN` with the URN of {change.record['name']} (`pulumi stack "
        f"--show-urns`) once nothing in the state depends on it ({cited(STATE_DELETE)}), the same for its network, "
        "subnet, router, NAT and node service account"
    )


def _name_clash(old: dict[str, Record], change: ResourceChange) -> Iterator[str]:
    """A GCP replacement created while an object of its name still exists: 409 alreadyExists."""
    record, previous = change.record, old.get(change.urn)
    if change.action != "replace" or previous is None or not record["type"].startswith("gcp:"):
        return
    if not _same_gcp_identity(previous, record):
        return
    name = record["inputs"]["name"]
    scope = "project (a global name)" if record["type"] in GLOBAL_TYPES else "same location"
    if not change.delete_before_replace:
        yield (
            f"{change.urn}: replaced create-before-delete under the same name {name!r} in the {scope}: GCP refuses "
            f"the create (409 alreadyExists); set deleteBeforeReplace on it or add a suffix to its name{_keys(change)}"
        )
    kept_by = (
        "deletionPolicy ABANDON"
        if previous["inputs"].get("deletionPolicy") == "ABANDON"
        else "retainOnDelete"
        if change.options.get("retainOnDelete")
        else None
    )
    if kept_by:
        yield (
            f"{change.urn}: replaced under the same name {name!r} in the {scope}, but {kept_by} leaves the old object "
            f"in the cloud, so the create fails (409 alreadyExists): delete the old {name!r} by hand first (it is "
            f"what serves today), or give the new one another name{_keys(change)}"
        )


def _load_balanced(records: dict[str, Record]) -> bool:
    """The records hold the Gateway's load-balanced objects (the proxies that use the proxy-only subnet)."""
    return any(record["type"].startswith(LOAD_BALANCED_TYPES) for record in records.values())


def _is_proxy_only(record: Record) -> bool:
    return record["type"] == SUBNETWORK_TYPE and record["inputs"].get("purpose") in PROXY_ONLY_PURPOSES


def _proxy_only_expanded(change: ResourceChange) -> str | None:
    """A proxy-only subnet's range grown in place: GCP refuses `expandIpCidrRange` for it."""
    if change.action != "update" or not _is_proxy_only(change.record):
        return None
    if not any(entry.path == "ipCidrRange" for entry in change.inputs):
        return None
    return (
        f"GCP would refuse to update {change.urn}: the range of a proxy-only subnet cannot be expanded (the provider "
        "calls expandIpCidrRange, which does not work for proxy-only subnets). Keep its range; to change it, create "
        f"a proxy-only subnet with the new range in role BACKUP, promote it to ACTIVE ({PROXY_ONLY_DOCS}) and name it "
        f"in routing.gateway.existingProxySubnet{_keys(change)}"
    )


def _proxy_only_replaced(new: dict[str, Record], change: ResourceChange, result: Preview) -> str | None:
    """A proxy-only subnet replaced while the Gateway that uses it stays: no order of the update keeps it serving.
    Not when the engine deletes the Gateway's objects first, with a resource replaced delete-first (a new cluster
    name rebuilds everything on the cluster): nothing uses the subnet when it goes."""
    if change.action != "replace" or not _is_proxy_only(change.record):
        return None
    balanced = [urn for urn, record in new.items() if record["type"].startswith(LOAD_BALANCED_TYPES)]
    deleted_first = {other.urn for other in result.of("replace") if other.deleted_first_with}
    if not balanced or set(balanced) <= deleted_first:
        return None
    order = (
        "deleted before its replacement exists"
        if change.delete_before_replace
        else "replaced by a second ACTIVE one, which GCP does not allow in one region and network"
    )
    return (
        f"the Gateway would stop serving: {change.urn}: the proxy-only subnet is {order} "
        f"({'; '.join(change.replaced_because)}) while the Gateway uses it. If GCP deletes it, the load balancers "
        "have no proxy addresses until the new one exists; if GCP refuses the delete while they use it (not verified "
        "here), the update stops after the firewall rules and NetworkPolicies, which depend on no subnet, have moved "
        "to the new range, and the proxies, still on the old one, are shut out. The documented change of range is a "
        f"second proxy-only subnet in role BACKUP promoted to ACTIVE ({PROXY_ONLY_DOCS}), then "
        f"routing.gateway.existingProxySubnet{_keys(change)}"
    )


# pulumi-gcp's verification of default labels, closed as fixed: a default label added had at first reached only the
# provider, not the resources (https://github.com/pulumi/pulumi-gcp/issues/1275).
DEFAULT_LABELS_SOURCE = "https://github.com/pulumi/pulumi-gcp/issues/1275"


def _default_labels_changed(change: ResourceChange) -> str | None:
    """The gcp provider's default labels changed: the preview shows the provider's update only."""
    if change.record["type"] != "pulumi:providers:gcp" or change.action != "update":
        return None
    if not any(entry.path.startswith("defaultLabels") for entry in change.inputs):
        return None
    return (
        f"{change.urn}: the provider's default labels change. pulumi-gcp merges them into the labels of every GCP "
        "resource that carries labels, so `pulumi up` may also update in place those that take their labels from "
        "the provider alone (the disks, the image, the cluster...), which this preview shows unchanged (a resource "
        "that sets the labels itself shows its own update); how far a changed default label reaches has varied "
        f"with pulumi-gcp's version ({DEFAULT_LABELS_SOURCE}, fixed): check with `pulumi preview --diff`{_keys(change)}"
    )


LOG_METRIC_TYPE = "gcp:logging/metric:Metric"
# The provider updates a metric at its self link, projects/P/metrics/NAME (magic-modules mmv1/products/logging/
# Metric.yaml), and the Logging API's projects.metrics.update creates a metric that does not exist.
LOG_METRIC_UPDATE = "https://cloud.google.com/logging/docs/reference/v2/rest/v2/projects.metrics/update"


def _log_metric_renamed(old: dict[str, Record], change: ResourceChange) -> str | None:
    """A log-based metric's name changed: an update in place, which writes the metric under the new name."""
    if change.record["type"] != LOG_METRIC_TYPE or change.action != "update":
        return None
    if not any(entry.path == "name" for entry in change.inputs):
        return None
    before = old[change.urn]["inputs"].get("name")
    project = old[change.urn]["inputs"].get("project") or "PROJECT"
    return (
        f"{change.urn}: the log-based metric is renamed in place: the provider writes it under the new name, which "
        f"the Logging API creates as a new metric ({LOG_METRIC_UPDATE}); the old one, {before!r}, stays and keeps "
        f"counting until deleted by hand (`gcloud logging metrics delete {before} --project {project}`){_keys(change)}"
    )


def _proxy_only_deleted(new: dict[str, Record], change: ResourceChange) -> str | None:
    """The stack's proxy-only subnet deleted while the Gateway stays (`routing.gateway.existingProxySubnet` set): the
    load balancers' proxies take their addresses from the region's one ACTIVE proxy-only subnet."""
    if change.action != "delete" or not _is_proxy_only(change.record):
        return None
    if not _load_balanced(new):
        return None
    return (
        f"{change.urn}: the stack's proxy-only subnet is deleted while the Gateway stays. Its load balancers' proxies "
        "take their addresses from the one ACTIVE proxy-only subnet of the region and network: run this update only "
        f"once the subnet routing.gateway.existingProxySubnet names is ACTIVE and this one BACKUP ({PROXY_ONLY_DOCS}); "
        "while this one is ACTIVE the Gateway loses its proxies' addresses, or GCP refuses the delete (which of the "
        f"two is not verified here){_keys(change)}"
    )


def _proxy_only_created_beside_reused(old: dict[str, Record], change: ResourceChange) -> str | None:
    """The stack's own ACTIVE proxy-only subnet created where the Gateway used another (`existingProxySubnet` unset
    again): the region and network hold one ACTIVE proxy-only subnet, and the reused one is not the stack's to
    delete."""
    if (
        change.action != "create"
        or not _is_proxy_only(change.record)
        or change.record["inputs"].get("role") != "ACTIVE"
    ):
        return None
    reused = sorted(
        {
            str(annotations[REUSED_PROXY_SUBNET_ANNOTATION])
            for record in old.values()
            if REUSED_PROXY_SUBNET_ANNOTATION in (annotations := _annotations(record))
        }
    )
    if not reused:
        return None
    return (
        f"{change.urn}: the stack creates its own ACTIVE proxy-only subnet where the Gateway used {', '.join(reused)}. "
        f"A region and network hold one ACTIVE REGIONAL_MANAGED_PROXY subnet ({PROXY_ONLY_DOCS}): while that one is "
        "ACTIVE the create fails and `pulumi up` ends in an error; where the range changes too, the firewall rules and "
        "NetworkPolicies, which do not wait for the subnet, have moved to the new one by then, shutting out the "
        "proxies still on the old one. The page's order: create this subnet by hand as BACKUP with this range, "
        "promote it, `pulumi import` it, and drain the old one; the stack never managed that one and changes nothing "
        f"of it{_keys(change)}"
    )


def _annotations(record: Record) -> dict[str, Any]:
    metadata = record["inputs"].get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    return annotations if isinstance(annotations, dict) else {}


def _disk_deleted_under_volume(old: dict[str, Record], change: ResourceChange, result: Preview) -> str | None:
    """A disk replaced delete-first that an old PersistentVolume serves from."""
    if change.action != "replace" or change.record["type"] != DISK_TYPE or not change.delete_before_replace:
        return None
    name = old[change.urn]["inputs"].get("name")
    volumes = sorted(
        urn
        for urn, record in old.items()
        if record["type"] == VOLUME_TYPE
        and str(((record["inputs"].get("spec") or {}).get("csi") or {}).get("volumeHandle", "")).endswith(
            f"/disks/{name}"
        )
    )
    if not volumes:
        return None
    serving = _serving_deleted_first(result)
    if serving is not None:
        return (
            f"{change.urn}: the disk is replaced delete-first ({'; '.join(change.replaced_because)}). Before deleting "
            f"it the engine deletes what is built from it ({', '.join(volumes)} and the claims bound to them); the "
            f"serving Deployment is deleted first too, with {serving.deleted_first_with}, so its pods let go of the "
            "claims (within their termination grace period) and no claim is held: nothing serves from the first "
            f"delete until the new pods are ready{_keys(change)}"
        )
    detached = (
        ""
        if old[change.urn]["inputs"].get("deletionPolicy") == "ABANDON"
        else ", and the provider detaches the disk from every VM that has it, under the running serving pods"
    )
    return (
        f"{change.urn}: the disk is replaced delete-first ({'; '.join(change.replaced_because)}). Before deleting "
        f"it the engine deletes what is built from it ({', '.join(volumes)} and the claims bound to them){detached}. "
        "A claim that pods use stays Terminating until they are gone, so `pulumi up` waits on it and fails after 10 "
        f"minutes. Scale the serving Deployment to zero first and accept the outage, or keep the setting{_keys(change)}"
    )


def _disk_below_its_image(old: dict[str, Record], change: ResourceChange, result: Preview) -> str | None:
    """A disk made again, smaller, from an image this update keeps: GCP makes no disk smaller than its source image."""
    if change.action != "replace" or change.record["type"] != DISK_TYPE:
        return None
    before, after = old[change.urn]["inputs"], change.record["inputs"]
    image = after.get("image")
    sizes = (before.get("size"), after.get("size"))
    if not isinstance(image, str) or image != before.get("image") or not all(isinstance(size, int) for size in sizes):
        return None
    if sizes[1] >= sizes[0] or any(
        other.record["type"] == IMAGE_TYPE and other.action in ("create", "replace") for other in result.changes
    ):
        return None
    name = image.rsplit("/", 1)[-1]
    project = after.get("project")
    in_project = f" --project {project}" if project else ""
    return (
        f"{change.urn}: made again at {sizes[1]} GiB from the image {name}, which stays: GCP makes no disk smaller "
        f"than its source image (terraform-provider-google `google_compute_disk` `size`), and the image is the size "
        f"this disk had when the weights were downloaded: at most {sizes[0]} GiB, exactly that unless the size was "
        "raised since (not known here). Under `pulumi preview` and `pulumi up` the program looks the image up and "
        "stops before any step when the new size is below it. To shrink below it, download again: delete the image "
        f"(`gcloud compute images delete {name}{in_project}`), then run `pulumi up --refresh`{_keys(change)}"
    )


def _serving_deleted_first(result: Preview) -> ResourceChange | None:
    """The serving Deployment when the engine deletes it first, with a resource replaced delete-first."""
    return next(
        (
            change
            for change in result.of("replace")
            if is_serving_deployment(change.record) and change.deleted_first_with
        ),
        None,
    )


def _deleted_first_with(result: Preview) -> list[str]:
    """A resource replaced delete-first and the replacements the engine deletes before it."""
    found = []
    for root in result.of("replace"):
        dependents = [change for change in result.of("replace") if change.deleted_first_with == root.urn]
        if not dependents:
            continue
        kubernetes = [change for change in dependents if is_kubernetes_object(change.record["type"])]
        named = [change.record["name"] for change in dependents if not is_kubernetes_object(change.record["type"])]
        parts = [*named, *([f"{len(kubernetes)} Kubernetes object(s)"] if kubernetes else [])]
        serving = _serving_deleted_first(result)
        outage = (
            "; the serving Deployment is among them: nothing serves from the first delete until the new pods are ready"
            if serving is not None and serving.deleted_first_with == root.urn
            else ""
        )
        provider = any(change.record["type"].startswith("pulumi:providers:kubernetes") for change in dependents)
        why = (
            " (a Kubernetes provider whose kubeconfig becomes unknown is replaced, and every object it manages with it)"
            if provider
            else ""
        )
        found.append(
            f"{root.urn}: replaced delete-first by {root.delete_first_by}: before deleting it the engine deletes "
            f"what is replaced with it, {len(dependents)} resource(s): {', '.join(parts)}{why}, whatever order their "
            f"own provider would choose, and creates them again after it{outage}{_keys(root)}"
        )
    return found


def _image_without_snapshot(old: dict[str, Record], new: dict[str, Record], change: ResourceChange) -> str | None:
    """An image replaced from a source snapshot that neither the old state holds nor the update creates."""
    if change.action != "replace" or change.record["type"] != IMAGE_TYPE:
        return None
    source = change.record["inputs"].get("sourceSnapshot")
    if not isinstance(source, str) or "/snapshots/" not in source:
        return None
    name = source.rsplit("/", 1)[1]
    if any(
        record["type"] == SNAPSHOT_TYPE and record["inputs"].get("name") == name
        for record in [*old.values(), *new.values()]
    ):
        return None
    image = change.record["inputs"].get("name")
    project = change.record["inputs"].get("project")
    in_project = f" --project {project}" if project else ""
    return (
        f"{change.urn}: the image is replaced ({'; '.join(change.replaced_because)}) from its source snapshot "
        f"{source}, which no longer exists (the `up` after the one that made the image deleted it) and which this "
        "update does not create: `pulumi up` would delete the image, with what is deleted before it, and then fail "
        f"to create it. To move it, download again: delete the image first (`gcloud compute images delete {image}"
        f"{in_project}`), then run `pulumi up --refresh`, which finds no image and declares the download in the new "
        f"place (docs/preview.md){_keys(change)}"
    )


def _subnet_listed_by_nat(old: dict[str, Record], result: Preview) -> list[str]:
    """A subnet replaced delete-first while a Cloud NAT that stays lists it: the engine deletes the subnet
    (with what is replaced with it, the cluster first) before it updates the NAT to the new one, and GCP
    refuses that delete, so `pulumi up` stops half-way."""
    going = {change.urn for change in result.changes if change.action in ("replace", "delete")}
    found = []
    for change in result.of("replace"):
        if change.record["type"] != SUBNETWORK_TYPE or not change.delete_before_replace:
            continue
        subnet = old[change.urn]["name"]
        for urn, nat in sorted(old.items()):
            if (
                nat["type"] == ROUTER_NAT_TYPE
                and urn not in going
                and nat["inputs"].get("sourceSubnetworkIpRangesToNat") == "LIST_OF_SUBNETWORKS"
                and subnet in (nat["options"].get("dependsOn") or [])
            ):
                found.append(
                    f"{change.urn}: replaced delete-first while Cloud NAT {nat['inputs'].get('name', nat['name'])} "
                    "lists it: the engine deletes the subnet (and, before it, what is replaced with it) and updates "
                    "the NAT to the new subnet only afterwards, and GCP refuses to delete a subnet a NAT uses "
                    "(hashicorp/terraform-provider-google#26776): `pulumi up` would stop half-way. Keep the "
                    "subnet's range (a larger range holding the old one is grown in place), or deploy a new stack"
                    f"{_keys(change)}"
                )
    return found


def _network_held_by_firewalls(old: dict[str, Record], result: Preview) -> list[str]:
    """A network replaced delete-first while firewall rules on it are not deleted first with it: their `network`
    is not ForceNew (terraform-provider-google resource_compute_firewall.go), so the engine's dependent
    replacements leave them out and it deletes the old network while they still use it, which GCP refuses ("is
    already being used by", hashicorp/terraform-provider-google#5423): `pulumi up` stops half-way."""
    found = []
    by_urn = {change.urn: change for change in result.changes}
    for change in result.of("replace"):
        if change.record["type"] != NETWORK_TYPE or not change.delete_before_replace:
            continue
        network = old[change.urn]
        references = {f"{network['name']}-id", str(network["inputs"].get("name"))}
        holding = []
        for urn, record in sorted(old.items()):
            network_input = str(record["inputs"].get("network", ""))
            if record["type"] != FIREWALL_TYPE or not (
                network_input in references or network_input.endswith(f"/networks/{network['inputs'].get('name')}")
            ):
                continue
            firewall_change = by_urn.get(urn)
            if firewall_change is None or firewall_change.deleted_first_with != change.urn:
                holding.append(urn)
        if holding:
            names = ", ".join(str(old[urn]["inputs"].get("name", old[urn]["name"])) for urn in holding)
            targets = " ".join(f"--target '{urn}'" for urn in holding)
            found.append(
                f"{change.urn}: replaced delete-first by {change.delete_first_by or 'the engine'}, while the firewall "
                f"rule(s) {names} still use it: their network is not ForceNew, so the engine does not delete them "
                "first with it, and GCP refuses to delete a network a firewall rule uses ('is already being used "
                "by'): `pulumi up` would stop after deleting the cluster and everything replaced with it. Delete the "
                f"rules first (`pulumi destroy {targets}`), then run `pulumi up`{_keys(change)}"
            )
    return found


def _volume_name(record: Record) -> str:
    return str((record["inputs"].get("spec") or {}).get("volumeName") or "")


def _claims_moved_from_kept_volumes(old: dict[str, Record], result: Preview) -> list[str]:
    """A claim made again under another namespace or name for a volume this update keeps: once bound, the volume's
    claimRef holds the old claim's uid (Kubernetes' volume controller, `GetBindVolumeToClaim`), so the new claim stays
    Pending and pulumi-kubernetes waits for it to be Bound until it fails. A stack whose volumes were made before
    they had a replacement trigger moves its claims so on the `up` that first records the trigger."""
    replaced = {
        metadata_name(old[change.urn]["inputs"])
        for change in result.changes
        if change.record["type"] == VOLUME_TYPE and change.urn in old and change.action in ("replace", "delete")
    }
    kept = {metadata_name(record["inputs"]) for record in old.values() if record["type"] == VOLUME_TYPE} - replaced
    bound_before = {
        _volume_name(record): (record["inputs"].get("metadata") or {})
        for record in old.values()
        if record["type"] == CLAIM_TYPE
    }
    found = []
    for change in result.changes:
        if change.record["type"] != CLAIM_TYPE or change.action not in ("create", "replace"):
            continue
        volume = _volume_name(change.record)
        before = bound_before.get(volume)
        after = change.record["inputs"].get("metadata") or {}
        if not volume or before is None or volume not in kept:
            continue
        if (before.get("namespace"), before.get("name")) == (after.get("namespace"), after.get("name")):
            continue
        found.append(
            f"{change.urn}: the claim is made again as {after.get('namespace')}/{after.get('name')} for the volume "
            f"{volume}, which this update keeps, still bound to {before.get('namespace')}/{before.get('name')} (its "
            "claimRef holds that claim's uid): the new claim stays Pending and `pulumi up` fails after 10 minutes. Run "
            f"`pulumi up` once without this change first (it gives the volume its replacement trigger), then make it"
            f"{_keys(change)}"
        )
    return found


def risk_refusals(old: dict[str, Record], new: dict[str, Record], result: Preview) -> list[str]:
    """What the engine or the platform refuses in this update: protected or clashing objects, ranges a
    cluster uses, a production workload rebuilt, a grown or moved proxy-only subnet, an image without its
    snapshot, a reference to nothing."""
    production = in_production(old, new)
    claim_first = result.deleted_first(CLAIM_TYPE)
    found: list[str] = []
    for change in result.changes:
        found += _protection(old, change)
        found += _name_clash(old, change)
        # only an update changes a range under the cluster; a replaced subnet is a new one, its ranges its own
        if change.action == "update" and (in_use := _secondary_ranges_in_use(old, change)):
            found.append(
                f"GCP would refuse to update {change.urn}: secondary range {in_use} changes while a cluster "
                f"uses it (a cluster's pod and service ranges are fixed; a new range needs a new cluster: "
                f"destroy first, or deploy a new stack){_keys(change)}"
            )
        if production and (rebuilt := _replaced_workload(old, change, claim_first)):
            found.append(f"refused in production: {rebuilt}")
        if expanded := _proxy_only_expanded(change):
            found.append(expanded)
        if moved := _proxy_only_replaced(new, change, result):
            found.append(moved)
        if unsourced := _image_without_snapshot(old, new, change):
            found.append(unsourced)
        found += _secret_left_unset(change)
    found += _subnet_listed_by_nat(old, result)
    found += _network_held_by_firewalls(old, result)
    found += _claims_moved_from_kept_volumes(old, result)
    names = {record["name"] for record in new.values()}
    old_names = {record["name"] for record in old.values()}
    for urn, record in sorted(new.items()):
        references = [
            *(record["options"].get("dependsOn") or []),
            *(record.get(key) for key in ("parent", "provider")),
            record["options"].get("deletedWith"),
        ]
        for name in references:
            if name and name not in names:
                gone = "deleted" if name in old_names else "not declared"
                found.append(f"{urn} still depends on {name}, which is {gone}")
    return found


def _kept_warning(kept: KeptValue) -> str:
    what = (
        f"the program states it with {kept.explicit_off}"
        if kept.explicit_off
        else f"the provider has no explicit off; by hand: {kept.by_hand}"
        if kept.by_hand
        else "set it explicitly to change it"
    )
    return (
        f"{kept.urn}: no change: the old value stays: {kept.path} is no longer set, but the provider keeps "
        f"{json.dumps(kept.old, sort_keys=True)} (Optional+Computed, {kept.source}); {what}"
    )


def _abandoned_name_kept(old: dict[str, Record], change: ResourceChange) -> str:
    """What an abandoned object's name still holds: a later update that declares it again (a zone left and chosen
    again, a revision served again) cannot create it under that name."""
    inputs = old[change.urn]["inputs"]
    name = inputs.get("name")
    new = change.record["inputs"]
    same_place = change.action == "replace" and (new.get("name"), new.get("zone")) == (name, inputs.get("zone"))
    if not isinstance(name, str) or same_place:  # a clash of its own, refused (`_name_clash`)
        return ""
    where = f" in {inputs['zone']}" if isinstance(inputs.get("zone"), str) else ""
    return (
        f". It keeps the name {name}{where}: an update that declares it there again (this zone or revision chosen "
        "again) fails with 'already exists' until it is deleted by hand or imported (docs/weights.md)"
    )


def _global_delete_first(change: ResourceChange) -> str | None:
    if change.action != "replace" or change.record["type"] not in GLOBAL_TYPES or not change.delete_before_replace:
        return None
    name = change.record["inputs"].get("name")
    renamed = any(entry.path == "name" for entry in change.inputs)
    why = f"the new one ({name!r}) is created" if renamed else f"{name!r} is a global name, so the new one is created"
    return (
        f"{change.urn}: replaced delete-first by {change.delete_first_by}: {why} only once the old one is gone; in "
        "between it does not exist, and the delete fails while anything still uses it"
    )


def _secret_readers(new: dict[str, Record], secret: str) -> list[str]:
    """The resources of the new state whose pods read the Secret named `secret` (an environment variable's
    secretKeyRef, an envFrom secretRef, a volume's secret)."""

    def reads(value: Any) -> bool:
        if isinstance(value, dict):
            for key in ("secretKeyRef", "secretRef"):
                if isinstance(value.get(key), dict) and value[key].get("name") == secret:
                    return True
            if isinstance(value.get("secret"), dict) and value["secret"].get("secretName") == secret:
                return True
            return any(reads(item) for item in value.values())
        return isinstance(value, list) and any(reads(item) for item in value)

    return sorted(
        str(((record["inputs"].get("metadata") or {}).get("name")) or record["name"])
        for record in new.values()
        if record["type"] != SECRET_TYPE and reads(record["inputs"])
    )


# a `secure:` ciphertext set again, or a value moved between one and the stack's ESC environment: what the value is
# now, an offline render cannot read on either side
UNREADABLE_SECRET_CHANGES = frozenset({(CIPHERTEXT, CIPHERTEXT), (CIPHERTEXT, FROM_ESC), (FROM_ESC, CIPHERTEXT)})
# a secret set where the old render had none
FIRST_SET_SECRET_CHANGES = frozenset({(UNSET, CIPHERTEXT), (UNSET, FROM_ESC)})


def _secret_value_changes(change: ResourceChange, new: dict[str, Record]) -> Iterator[str]:
    for entry in change.inputs:
        kinds = (shown_kind(entry.old), shown_kind(entry.new))
        if kinds in UNREADABLE_SECRET_CHANGES | FIRST_SET_SECRET_CHANGES:
            order = "deleted, then created" if change.delete_before_replace else "replaced"
            name = str((change.record["inputs"].get("metadata") or {}).get("name", ""))
            readers = _secret_readers(new, name)
            if readers:
                gap = (
                    ", and a pod that starts between the delete and the create fails (CreateContainerConfigError) "
                    "until the new one exists"
                    if change.delete_before_replace
                    else ""
                )
                who = (
                    f"the pods of {', '.join(readers)} read it when they start: a running one keeps the old value "
                    f"until it restarts{gap}; restart them after `pulumi up` (kubectl rollout restart) where the new "
                    "value must take effect now"
                )
            else:
                who = (
                    "no pod of this stack reads it now: the next one that does (a new download Job) gets the new value"
                )
            # the path is said after the words (`...-secret: stringData.token: ...` reads as a key assignment)
            if kinds == (UNSET, CIPHERTEXT):
                yield f"{change.urn}: {entry.path} is set where the old render had none; the object is {order}: {who}"
                continue
            if kinds == (UNSET, FROM_ESC):
                yield (
                    f"{change.urn}: {entry.path} is left to the stack's ESC environment where the old render had no "
                    f"value; if ESC sets it, the object is {order}: {who}"
                )
                continue
            what = (
                f"the `secure:` ciphertext of {entry.path} changed; the preview cannot decrypt it"
                if kinds == (CIPHERTEXT, CIPHERTEXT)
                else f"{entry.path} moved between a `secure:` value and the stack's ESC environment; the preview reads "
                "neither value"
            )
            yield (
                f"{change.urn}: {what}. If the value is the same, `pulumi up` changes nothing; if it changed, the "
                f"object is {order}: {who}"
            )


def _secret_left_unset(change: ResourceChange) -> list[str]:
    """A secret that had a value and now has none: a render of a stack file that sets a secret key no more (an unset
    key engine.secretEnv names is refused before anything is declared, so only one Pulumi.yaml declares without a
    default, hfToken, reaches a render unset), and `pulumi up` stops on it: the CLI's config check (pulumi/pulumi
    pkg/workspace/config.go, earlier sdk/go/common/workspace, `mergeConfig`)."""
    return [
        f"`pulumi up` would stop before any step: the secret config key behind {change.urn} {entry.path} is no "
        f"longer set (the Pulumi CLI: \"Stack '...' is missing configuration value 'hfToken'\": Pulumi.yaml "
        "declares it without a default); set it again (`pulumi config set --secret hfToken VALUE`)"
        for entry in change.inputs
        if shown_kind(entry.new) == UNSET and shown_kind(entry.old) not in ("", UNSET)
    ]


def _network_in_use(old: dict[str, Record], result: Preview) -> list[str]:
    going = {change.urn for change in result.changes if change.action in ("delete", "replace")}
    balanced = any(record["type"].startswith(LOAD_BALANCED_TYPES) for urn, record in old.items() if urn in going)
    cluster_goes = any(old[urn]["type"] == CLUSTER_TYPE for urn in going if urn in old)
    if not (balanced or cluster_goes) or not any(
        record["type"].startswith(LOAD_BALANCED_TYPES) for record in old.values()
    ):
        return []
    return [
        f"{urn}: deleted after the Gateway objects that used it; GKE removes their network endpoint groups in the "
        "background, and the provider does not retry 'is already being used by': if `pulumi up` fails so, delete the "
        "leftover groups (`gcloud compute network-endpoint-groups list`, then `... delete NAME --zone ZONE`) and run "
        "it again (docs/operations.md, destroy)"
        for urn in sorted(going)
        if urn in old and old[urn]["type"] in (SUBNETWORK_TYPE, NETWORK_TYPE)
    ]


def _gateway_api_channel(record: Record) -> Any:
    config = record["inputs"].get("gatewayApiConfig")
    return config.get("channel") if isinstance(config, dict) else None


def _gateway_api_off_first(old: dict[str, Record], result: Preview) -> list[str]:
    """The cluster's Gateway API channel turned off in the update that deletes the Gateway objects:
    Pulumi deletes what the program no longer declares after every create and update
    (pulumi/pulumi pkg/resource/deploy/deployment_executor.go, performDeletes), so GKE's Gateway
    controller is off while the Gateway, its routes and pool still exist."""
    going = [
        urn
        for urn in (change.urn for change in result.of("delete"))
        if old[urn]["type"].startswith(LOAD_BALANCED_TYPES)
    ]
    if not going:
        return []
    return [
        f"{change.urn}: gatewayApiConfig.channel goes to CHANNEL_DISABLED before the Gateway objects are deleted "
        "(Pulumi deletes last); what GKE does with a Gateway, its finalizer and its load balancer once its "
        "controller is off is not verified here. To be safe, delete them first (`pulumi destroy --target "
        "'GATEWAY_COMPONENT_URN' --target-dependents`, the URN of the llm-serving:routing:InferenceGateway "
        "component from `pulumi stack --show-urns`), then run `pulumi up`"
        for change in result.of("update")
        if change.record["type"] == CLUSTER_TYPE
        and _gateway_api_channel(change.record) == "CHANNEL_DISABLED"
        and _gateway_api_channel(old[change.urn]) != "CHANNEL_DISABLED"
    ]


BENCHMARK_COMPONENT = "benchmark"


def _benchmark_runs(change: ResourceChange, serving_before: bool) -> str | None:
    """A benchmark Job created beside running serving pods, or replaced (its pod template is immutable:
    pulumi-kubernetes replaces the Job), runs the whole benchmark at once against them; `pulumi up` does not wait
    for it (skipAwait)."""
    record = change.record
    runs = change.action == "replace" or (change.action == "create" and serving_before)
    if not runs or not is_job_of(record, BENCHMARK_COMPONENT):
        return None
    deadline = (record["inputs"].get("spec") or {}).get("activeDeadlineSeconds")
    within = f" for up to {deadline} s (activeDeadlineSeconds)" if isinstance(deadline, int) else ""
    what, instead = (
        ("is replaced, so the benchmark runs again", "turn benchmark.enabled off first")
        if change.action == "replace"
        else ("is created, so the benchmark runs", "leave benchmark.enabled off")
    )
    return (
        f"{change.urn}: the benchmark Job {what} as soon as it is created{within}, at its full load against the "
        f"serving pods while they serve clients; {instead} where they do"
    )


HYPERDISK_PERFORMANCE = ("provisionedThroughput", "provisionedIops")


def _hyperdisk_performance(change: ResourceChange) -> str | None:
    """A Hyperdisk's throughput or IOPS changed in place: "hyperdisk allows for an update of Throughput every 4
    hours. To update your hyperdisk more frequently, you'll need to manually delete and recreate it" (pulumi-gcp
    compute.Disk provisionedThroughput and provisionedIops)."""
    if change.action != "update" or change.record["type"] != DISK_TYPE:
        return None
    changed = sorted({entry.path for entry in change.inputs if entry.path in HYPERDISK_PERFORMANCE})
    if not changed:
        return None
    return (
        f"{change.urn}: {' and '.join(changed)} change in place, which a Hyperdisk allows once every 4 hours: "
        "another change within 4 hours of the last fails the `pulumi up`: run it again once 4 hours have passed "
        "(deleting and recreating the disk, the other way the provider names, takes it from the pods that read it)"
    )


def _read_only_disk_grown(change: ResourceChange) -> str | None:
    """A read-only disk made from an image, grown in place: the pods' filesystem keeps the image's size. The PD CSI
    driver grows a filesystem only on a volume it mounts read-write (kubernetes-sigs/gcp-compute-persistent-disk-csi-
    driver pkg/gce-pd-csi-driver/node.go: NodeStageVolume "Part 4: Resize filesystem" under `if !readonly`, and
    NodeExpandVolume "capability access is readonly so this is a no-op"; read-only is a ReadOnlyMany claim)."""
    if change.action != "update" or change.record["type"] != DISK_TYPE:
        return None
    inputs = change.record["inputs"]
    grown = [
        entry
        for entry in change.inputs
        if entry.path == "size" and isinstance(entry.old, int) and isinstance(entry.new, int) and entry.new > entry.old
    ]
    if not grown or inputs.get("accessMode") != "READ_ONLY_MANY" or not isinstance(inputs.get("image"), str):
        return None
    return (
        f"{change.urn}: the disk grows from {grown[0].old} to {grown[0].new} GiB, but the pods mount it read-only, "
        "and the PD CSI driver grows a filesystem only on a volume mounted read-write: they keep reading the "
        "filesystem of the image's size, so the change adds cost (and rolls the pods onto a new volume), not room "
        f"(the next revision's download fills a disk of the new size){_keys(change)}"
    )


def _production_on_rapid(change: ResourceChange, production: bool) -> str | None:
    """A production cluster moved to the RAPID channel, whose versions the GKE API describes as "not subject to any
    SLAs" (google.container.v1 ReleaseChannel.Channel RAPID,
    https://cloud.google.com/kubernetes-engine/docs/reference/rest/Shared.Types/ReleaseChannel)."""
    if not production or change.action != "update" or change.record["type"] != CLUSTER_TYPE:
        return None
    moved = [entry for entry in change.inputs if entry.path == "releaseChannel.channel" and entry.new == "RAPID"]
    if not moved:
        return None
    return (
        f"{change.urn}: a production cluster moves to the RAPID release channel ({moved[0].old} before), which the "
        'GKE API says is "offered on an early access basis" with versions "not subject to any SLAs"; GKE then '
        "upgrades the cluster to them where it runs an older version (Serving pods, below)"
    )


FULL_COMMIT = re.compile(r"[0-9a-f]{40}")


def revision_of_another_model(new: dict[str, Record], changed: frozenset[str] | None) -> list[str]:
    """A new model (`profile` or `weights.model`) with the same pinned commit: a commit of one Hugging Face
    repository is none of another's, so the download Job's `git checkout` fails and `pulumi up` stops on it
    (components/weights.py). Told from the renders' setting digests; a branch (`main`) is in every repository."""
    if changed is None or "weights.model" not in changed or "weights.revision" in changed:
        return []
    for urn, record in new.items():
        if record["type"] != JOB_TYPE:
            continue
        env = {
            item.get("name"): item.get("value")
            for container in (pod_template(record).get("spec") or {}).get("containers") or []
            for item in container.get("env") or []
        }
        revision, model = env.get("REVISION"), env.get("MODEL")
        if isinstance(revision, str) and FULL_COMMIT.fullmatch(revision):
            return [
                f"{urn}: the model changes to {model} but weights.revision stays the commit {revision}, which is "
                "a commit of the old model's repository: the download's `git checkout` fails and `pulumi up` stops "
                f"there; set weights.revision to a commit of {model} (git ls-remote https://huggingface.co/{model})"
            ]
    return []


def warnings(old: dict[str, Record], new: dict[str, Record], result: Preview) -> list[str]:
    production = in_production(old, new)
    claim_first = result.deleted_first(CLAIM_TYPE)
    serving_before = any(is_serving_deployment(record) for record in old.values())
    found = [_kept_warning(kept) for kept in result.kept]
    for change in result.changes:
        record = change.record
        if change.action in ("delete", "replace") and change.options.get("retainOnDelete"):
            left = "the old object" if change.action == "replace" else "the object"
            found.append(f"{change.urn}: retainOnDelete, {left} stays in the cloud (delete it by hand)")
        if change.no_rule and change.action in ("update", "replace"):
            found.append(f"{change.urn}: no replacement rule for {record['type']}; shown as an update")
        if (
            change.action in ("delete", "replace")
            and old.get(change.urn, {}).get("inputs", {}).get("deletionPolicy") == "ABANDON"
        ):
            found.append(
                f"{change.urn}: deletionPolicy ABANDON, the old object stays in the cloud and is billed until it is "
                f"deleted by hand; this preview's cost per month does not count it{_abandoned_name_kept(old, change)}"
            )
        if (delete_first := _global_delete_first(change)) is not None:
            found.append(delete_first)
        if (
            change.action == "update"
            and old[change.urn]["options"].get("protect")
            and not change.options.get("protect")
        ):
            found.append(
                f"{change.urn}: no longer protected (Pulumi's protect option is off after this `up`): a later "
                "`pulumi destroy`, or an update that replaces it, deletes it"
            )
        if change.action == "delete" and record["type"] == CLUSTER_TYPE and not change.options.get("protect"):
            name = record["inputs"].get("name")
            found.append(
                f"{change.urn}: the GKE cluster {name!r} is deleted, its nodes and every workload on it with it "
                f"(this stack's and any other's){_keep_the_cluster(change)}"
            )
        if not production and (rebuilt := _replaced_workload(old, change, claim_first)):
            found.append(rebuilt)
        found += _secret_value_changes(change, new)
        found += [
            warning
            for warning in (
                _disk_deleted_under_volume(old, change, result),
                _disk_below_its_image(old, change, result),
                _proxy_only_deleted(new, change),
                _proxy_only_created_beside_reused(old, change),
                _default_labels_changed(change),
                _log_metric_renamed(old, change),
                _benchmark_runs(change, serving_before),
                _hyperdisk_performance(change),
                _read_only_disk_grown(change),
                _production_on_rapid(change, production),
            )
            if warning
        ]
    return found + _deleted_first_with(result) + _gateway_api_off_first(old, result) + _network_in_use(old, result)
