"""Held serving nodes: a GKE CapacityBuffer that keeps spare A4 nodes up, so a new serving replica
(an autoscaler's scale-up, a Spot replacement) lands on a node that is already there instead of
waiting ~5-6 min for one.

The API, as verified (kubernetes/autoscaler cluster-autoscaler/apis/config/crd/
autoscaling.x-k8s.io_capacitybuffers.yaml, vendored in schemas/crds/; GKE docs "CapacityBuffer"
CRD reference and "Configure capacity buffers"):
- `autoscaling.x-k8s.io`, kind CapacityBuffer, namespaced; versions v1beta1 (stored) and v1alpha1
  (deprecated). Which version GKE serves was not read in its docs here: v1beta1 is the stored one
  upstream.
- `spec.scalableRef {apiGroup, kind, name}`: the buffer's unit is one pod of the referenced
  Deployment (its template: the A4 node selectors, the GPU request), exclusive with podTemplateRef;
  `spec.replicas`: how many units; `spec.provisioningStrategy` defaults to
  `buffer.x-k8s.io/active-capacity` (GKE: "the buffer actively scales up the cluster by creating
  placeholder Pods"; the placeholder pods are simulated by the cluster autoscaler, not created).
- GKE: active buffers from 1.35.2-gke.1842000 on Standard and Autopilot ("Configure capacity
  buffers", before you begin); on Autopilot node auto-provisioning is always on.
Unverified here: a buffer of GPU pods on Autopilot end to end (the docs' examples are CPU), and the
exact version GKE serves.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

CAPACITY_BUFFER_API_VERSION = "autoscaling.x-k8s.io/v1beta1"
ACTIVE_CAPACITY = "buffer.x-k8s.io/active-capacity"


@dataclass(frozen=True)
class WarmCapacityArgs:
    name: str
    namespace: pulumi.Input[str]
    deployment: str
    nodes: int
    # A schedule sets the buffer's replicas (its nodes in the serving windows, none outside): created
    # with none, and a later `up` leaves the schedule's value alone (ignoreChanges spec.replicas).
    scheduled: bool = False
    labels: dict[str, str] = field(default_factory=dict)


class WarmCapacity(pulumi.ComponentResource):
    TYPE = "llm-serving:operations:WarmCapacity"
    buffer: k8s.apiextensions.CustomResource

    def __init__(self, name: str, args: WarmCapacityArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(self.TYPE, name, None, opts)
        self.buffer = k8s.apiextensions.CustomResource(
            f"{name}-buffer",
            api_version=CAPACITY_BUFFER_API_VERSION,
            kind="CapacityBuffer",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=args.name, namespace=args.namespace, labels=args.labels),
            spec={
                "provisioningStrategy": ACTIVE_CAPACITY,
                "scalableRef": {"apiGroup": "apps", "kind": "Deployment", "name": args.deployment},
                "replicas": 0 if args.scheduled else args.nodes,
            },
            opts=pulumi.ResourceOptions(parent=self, ignore_changes=["spec.replicas"] if args.scheduled else None),
        )
        self.register_outputs({"capacityBuffer": args.name})
