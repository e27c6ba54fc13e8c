"""The serving Deployment's replica counts as the engine and Kubernetes read them from a render's records."""

from __future__ import annotations

from commands.io.states import Record


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
