"""Scale the serving Deployment on a clock (scale to zero out of hours).

One CronJob per schedule entry runs `kubectl scale deployment/NAME --replicas=N` in the entry's
time zone (CronJob `spec.timeZone`, GA in Kubernetes 1.27). With an HPA on the same Deployment,
replicas 0 pauses the autoscaler (the HPA controller leaves a target scaled to zero alone) and the
morning's `--replicas=N` hands the Deployment back to it. The service account may only read the
one Deployment and write its scale subresource.

A scale-up from zero is a cold start per pod (for the recipe an A4 node ~5-6 min and the pod ~10 min,
stacks/capacity/time_to_serve.py), billed for the node from the moment it is provisioned; the stack
wakes business hours that much early.

With held nodes (a CapacityBuffer, components/warm_capacity.py) each step first sets the buffer's
replicas (`kubectl patch capacitybuffer`, an init container: the image has no shell): the held nodes
in the serving window, none outside it. The service account may also read and patch that one buffer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from components.crd_readiness import KUBECTL, KUBECTL_IMAGE
from components.hardening import restricted_container_context

NONROOT_UID = 65532
# A scale step missed by more than this (control plane upgrade, ...) is skipped, not run late.
STARTING_DEADLINE_SECONDS = 600


def _kubectl(name: str, arguments: list[str]) -> k8s.core.v1.ContainerArgs:
    return k8s.core.v1.ContainerArgs(
        name=name,
        image=KUBECTL_IMAGE,
        image_pull_policy="IfNotPresent",
        command=[KUBECTL],
        args=arguments,
        env=[k8s.core.v1.EnvVarArgs(name="HOME", value="/tmp")],
        resources=k8s.core.v1.ResourceRequirementsArgs(
            requests={"cpu": "50m", "memory": "64Mi"},
            limits={"cpu": "250m", "memory": "128Mi"},
        ),
        security_context=restricted_container_context(),
        volume_mounts=[k8s.core.v1.VolumeMountArgs(name="tmp", mount_path="/tmp")],
    )


@dataclass(frozen=True)
class ScaleStep:
    name: str
    cron: str
    replicas: int
    # the CapacityBuffer's replicas from this step on (with a buffer)
    buffer_replicas: int = 0


@dataclass(frozen=True)
class ScaleScheduleArgs:
    name: str
    namespace: pulumi.Input[str]
    deployment: str
    time_zone: str
    steps: Sequence[ScaleStep]
    labels: dict[str, str] = field(default_factory=dict)
    # the CapacityBuffer the steps also set, if any
    capacity_buffer: str | None = None


class ScaleSchedule(pulumi.ComponentResource):
    TYPE = "llm-serving:operations:ScaleSchedule"
    service_account: k8s.core.v1.ServiceAccount
    role: k8s.rbac.v1.Role
    role_binding: k8s.rbac.v1.RoleBinding
    cron_jobs: list[k8s.batch.v1.CronJob]

    def __init__(self, name: str, args: ScaleScheduleArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(self.TYPE, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        metadata = k8s.meta.v1.ObjectMetaArgs(name=args.name, namespace=args.namespace, labels=args.labels)
        self.service_account = k8s.core.v1.ServiceAccount(f"{name}-sa", metadata=metadata, opts=child)
        self.role = k8s.rbac.v1.Role(
            f"{name}-role",
            metadata=metadata,
            rules=[
                k8s.rbac.v1.PolicyRuleArgs(
                    api_groups=["apps"], resources=["deployments"], resource_names=[args.deployment], verbs=["get"]
                ),
                k8s.rbac.v1.PolicyRuleArgs(
                    api_groups=["apps"],
                    resources=["deployments/scale"],
                    resource_names=[args.deployment],
                    verbs=["get", "patch", "update"],
                ),
                *(
                    [
                        k8s.rbac.v1.PolicyRuleArgs(
                            api_groups=["autoscaling.x-k8s.io"],
                            resources=["capacitybuffers"],
                            resource_names=[args.capacity_buffer],
                            verbs=["get", "patch"],
                        )
                    ]
                    if args.capacity_buffer
                    else []
                ),
            ],
            opts=child,
        )
        self.role_binding = k8s.rbac.v1.RoleBinding(
            f"{name}-binding",
            metadata=metadata,
            role_ref=k8s.rbac.v1.RoleRefArgs(
                api_group="rbac.authorization.k8s.io", kind="Role", name=self.role.metadata.name
            ),
            subjects=[
                k8s.rbac.v1.SubjectArgs(
                    kind="ServiceAccount", name=self.service_account.metadata.name, namespace=args.namespace
                )
            ],
            opts=child,
        )
        self.cron_jobs = [self._cron_job(name, args, step) for step in args.steps]
        self.register_outputs({"cronJobs": [job.metadata.name for job in self.cron_jobs]})

    def _cron_job(self, name: str, args: ScaleScheduleArgs, step: ScaleStep) -> k8s.batch.v1.CronJob:
        return k8s.batch.v1.CronJob(
            f"{name}-{step.name}",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=f"{args.name}-{step.name}",
                namespace=args.namespace,
                labels=args.labels,
                annotations={
                    "llm-serving/replicas": str(step.replicas),
                    "checkov.io/skip1": "CKV_K8S_38=kubectl scales the Deployment through the API with this "
                    "service account's token",
                },
            ),
            spec=k8s.batch.v1.CronJobSpecArgs(
                schedule=step.cron,
                time_zone=args.time_zone,
                concurrency_policy="Forbid",
                starting_deadline_seconds=STARTING_DEADLINE_SECONDS,
                successful_jobs_history_limit=1,
                failed_jobs_history_limit=3,
                job_template=k8s.batch.v1.JobTemplateSpecArgs(
                    spec=k8s.batch.v1.JobSpecArgs(
                        backoff_limit=3,
                        ttl_seconds_after_finished=86400,
                        template=k8s.core.v1.PodTemplateSpecArgs(
                            metadata=k8s.meta.v1.ObjectMetaArgs(labels=args.labels),
                            spec=k8s.core.v1.PodSpecArgs(
                                service_account_name=self.service_account.metadata.name,
                                restart_policy="OnFailure",
                                security_context=k8s.core.v1.PodSecurityContextArgs(
                                    run_as_non_root=True,
                                    run_as_user=NONROOT_UID,
                                    seccomp_profile=k8s.core.v1.SeccompProfileArgs(type="RuntimeDefault"),
                                ),
                                init_containers=[
                                    _kubectl(
                                        "buffer",
                                        [
                                            "patch",
                                            f"capacitybuffer/{args.capacity_buffer}",
                                            "--type=merge",
                                            f'--patch={{"spec":{{"replicas":{step.buffer_replicas}}}}}',
                                        ],
                                    )
                                ]
                                if args.capacity_buffer
                                else None,
                                containers=[
                                    _kubectl(
                                        "scale",
                                        ["scale", f"deployment/{args.deployment}", f"--replicas={step.replicas}"],
                                    )
                                ],
                                volumes=[
                                    k8s.core.v1.VolumeArgs(name="tmp", empty_dir=k8s.core.v1.EmptyDirVolumeSourceArgs())
                                ],
                            ),
                        ),
                    )
                ),
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.role_binding]),
        )
