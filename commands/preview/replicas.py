"""The serving Deployment as the engine and Kubernetes read it from a render's records: which one it is, and its
replica counts."""

from __future__ import annotations

from commands.io.states import Record, pod_template

DEPLOYMENT_TYPE = "kubernetes:apps/v1:Deployment"


def is_serving_deployment(record: Record) -> bool:
    """Whether the record is a Deployment whose pods request GPUs (the serving Deployment)."""
    if record["type"] != DEPLOYMENT_TYPE:
        return False
    return any(
        ((container.get("resources") or {}).get("limits") or {}).get("nvidia.com/gpu")
        for container in (pod_template(record).get("spec") or {}).get("containers") or []
    )


def replicas_left_to_owner(record: Record) -> bool:
    """Whether the record leaves its `spec.replicas` to another writer (the HPA, the schedule's CronJobs):
    `ignoreChanges: [spec.replicas]`."""
    return "spec.replicas" in (record["options"].get("ignoreChanges") or [])


def declared_replicas(record: Record) -> int:
    """The record's `spec.replicas`, or Kubernetes' default of 1 where it declares none."""
    value = (record["inputs"].get("spec") or {}).get("replicas")
    return value if isinstance(value, int) else 1


def created_replicas(old: Record, new: Record) -> int:
    """The count a replacement of `old` by `new` is created at: the update's inputs, where ignoreChanges puts the old
    state's value (pulumi/pulumi pkg/resource/deploy/step_generator.go applies it before Check, also for the
    replacement's create), else the new declared count."""
    return declared_replicas(old) if replicas_left_to_owner(new) else declared_replicas(new)


def scale_command(record: Record, replicas: int) -> str:
    """The kubectl command that scales the Deployment of `record` to `replicas` by hand."""
    metadata = record["inputs"].get("metadata") or {}
    return f"kubectl -n {metadata.get('namespace')} scale deployment/{metadata.get('name')} --replicas={replicas}"
