"""A Job that finishes once the custom resource definitions some objects need exist and are
Established, so that the first `pulumi up` after the cluster is created does not fail on
"no matches for kind".

Why a Job: GKE installs the ComputeClass and Managed Prometheus CRDs, and with the Gateway API on,
the Gateway API, GKE policy and InferencePool CRDs itself, asynchronously, after the cluster
reports RUNNING (the stack cannot own them: GKE's add-on manager does; how long after was not
found in GKE's docs). The
Kubernetes provider retries a create that fails with "no matches for kind" only 5 times with
1 s doubling back-off, about 31 s in all, then fails the update
(pulumi/pulumi-kubernetes@v4.32.0 (+27 commits):provider/pkg/await/await.go, `WithMaxRetries(5)`,
`retrier.Do(apierrors.IsNotFound, meta.IsNoMatchError)`); the Helm release fails the same way
on its InferencePool. The provider waits for a Job to complete, so the objects that depend on this
Job are created only once every CRD is served. A failed wait is replaced on the next `up`
(`pulumi.com/replaceUnready`, provider/pkg/metadata/annotations.go) instead of wedging it.

The image is the official shell-free kubectl image: an init container waits for the CRDs to be
created (`kubectl wait --for=create`, kubectl 1.31+), the container for condition Established.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from components.network_policy import dns_and_https_egress

# registry.k8s.io/kubectl v1.34.1 (kubectl within one minor of the 1.34/1.35 control plane). The
# digest is the one pinned by several public Containerfiles for this tag; it was not pulled here.
KUBECTL_IMAGE = (
    "registry.k8s.io/kubectl:v1.34.1@sha256:59bafa07ff3a6d4b417e7633ddb9d79a9606ca98bf64bac080b3e65748669250"
)
KUBECTL = "/bin/kubectl"  # the image has no shell, only this binary
COMPONENT_LABEL = "app.kubernetes.io/component"
COMPONENT = "crd-readiness"
NON_ROOT_UID = 65532
WAIT_FOR_CREATION_SECONDS = 1500
WAIT_FOR_ESTABLISHED_SECONDS = 300
JOB_DEADLINE_SECONDS = WAIT_FOR_CREATION_SECONDS + WAIT_FOR_ESTABLISHED_SECONDS + 300
# The kubectl image keeps its discovery cache under $HOME; the root filesystem is read-only.
HOME = "/tmp"
# checkov CKV_K8S_38: this pod exists to read the API, it needs its service account token.
TOKEN_SKIP = "CKV_K8S_38=kubectl reads the CRDs through the API with this service account's token"


# Served by GKE on every Autopilot cluster, used in every routing mode.
PLATFORM_CRDS = ("computeclasses.cloud.google.com", "podmonitorings.monitoring.googleapis.com")


def platform_crds_job_name(service_name: str) -> str:
    return f"{service_name}-crds"


@dataclass(frozen=True)
class CrdReadinessArgs:
    namespace: pulumi.Input[str]
    name: str
    crds: tuple[str, ...]
    labels: dict[str, str] = field(default_factory=dict)


class CrdReadiness(pulumi.ComponentResource):
    TYPE = "llm-serving:gke:CrdReadiness"
    service_account: k8s.core.v1.ServiceAccount
    role: k8s.rbac.v1.ClusterRole
    binding: k8s.rbac.v1.ClusterRoleBinding
    network_policy: k8s.networking.v1.NetworkPolicy
    job: k8s.batch.v1.Job

    def __init__(self, name: str, args: CrdReadinessArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(self.TYPE, name, None, opts)
        labels = {**args.labels, COMPONENT_LABEL: COMPONENT}
        child = pulumi.ResourceOptions(parent=self)

        self.service_account = k8s.core.v1.ServiceAccount(
            f"{name}-sa",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=args.name, namespace=args.namespace, labels=labels),
            opts=child,
        )
        self.role = k8s.rbac.v1.ClusterRole(
            f"{name}-role",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=args.name, labels=labels),
            rules=[
                k8s.rbac.v1.PolicyRuleArgs(
                    api_groups=["apiextensions.k8s.io"],
                    resources=["customresourcedefinitions"],
                    verbs=["get", "list", "watch"],
                )
            ],
            opts=child,
        )
        self.binding = k8s.rbac.v1.ClusterRoleBinding(
            f"{name}-binding",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=args.name, labels=labels),
            role_ref=k8s.rbac.v1.RoleRefArgs(api_group="rbac.authorization.k8s.io", kind="ClusterRole", name=args.name),
            subjects=[
                k8s.rbac.v1.SubjectArgs(kind="ServiceAccount", name=args.name, namespace=args.namespace),
            ],
            opts=child,
        )

        # No ingress; egress to DNS and HTTPS only (the API server's endpoint is a private address).
        self.network_policy = k8s.networking.v1.NetworkPolicy(
            f"{name}-network-policy",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=args.name, namespace=args.namespace, labels=labels),
            spec=k8s.networking.v1.NetworkPolicySpecArgs(
                pod_selector=k8s.meta.v1.LabelSelectorArgs(match_labels={COMPONENT_LABEL: COMPONENT}),
                policy_types=["Ingress", "Egress"],
                egress=dns_and_https_egress(()),
            ),
            opts=child,
        )

        crd_names = [f"crd/{crd}" for crd in args.crds]
        resources = {"cpu": "250m", "memory": "512Mi", "ephemeral-storage": "100Mi"}

        def kubectl(name: str, wait_args: list[str]) -> k8s.core.v1.ContainerArgs:
            return k8s.core.v1.ContainerArgs(
                name=name,
                image=KUBECTL_IMAGE,
                image_pull_policy="Always",
                command=[KUBECTL],
                args=["wait", *wait_args, *crd_names],
                env=[k8s.core.v1.EnvVarArgs(name="HOME", value=HOME)],
                resources=k8s.core.v1.ResourceRequirementsArgs(requests=resources, limits=resources),
                volume_mounts=[k8s.core.v1.VolumeMountArgs(name="home", mount_path=HOME)],
                security_context=k8s.core.v1.SecurityContextArgs(
                    allow_privilege_escalation=False,
                    read_only_root_filesystem=True,
                    run_as_non_root=True,
                    run_as_user=NON_ROOT_UID,
                    capabilities=k8s.core.v1.CapabilitiesArgs(drop=["ALL"]),
                ),
            )

        self.job = k8s.batch.v1.Job(
            f"{name}-job",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=args.name,
                namespace=args.namespace,
                labels=labels,
                annotations={
                    "pulumi.com/timeoutSeconds": str(JOB_DEADLINE_SECONDS),
                    "pulumi.com/replaceUnready": "true",
                    "checkov.io/skip1": TOKEN_SKIP,
                },
            ),
            spec=k8s.batch.v1.JobSpecArgs(
                backoff_limit=3,
                active_deadline_seconds=JOB_DEADLINE_SECONDS,
                template=k8s.core.v1.PodTemplateSpecArgs(
                    metadata=k8s.meta.v1.ObjectMetaArgs(labels=labels),
                    spec=k8s.core.v1.PodSpecArgs(
                        service_account_name=args.name,
                        restart_policy="Never",
                        security_context=k8s.core.v1.PodSecurityContextArgs(
                            run_as_non_root=True,
                            run_as_user=NON_ROOT_UID,
                            seccomp_profile=k8s.core.v1.SeccompProfileArgs(type="RuntimeDefault"),
                        ),
                        init_containers=[
                            kubectl("created", ["--for=create", f"--timeout={WAIT_FOR_CREATION_SECONDS}s"]),
                        ],
                        containers=[
                            kubectl(
                                "established",
                                ["--for=condition=Established", f"--timeout={WAIT_FOR_ESTABLISHED_SECONDS}s"],
                            ),
                        ],
                        volumes=[k8s.core.v1.VolumeArgs(name="home", empty_dir=k8s.core.v1.EmptyDirVolumeSourceArgs())],
                    ),
                ),
            ),
            opts=pulumi.ResourceOptions(
                parent=self, depends_on=[self.binding, self.service_account, self.network_policy]
            ),
        )
        self.register_outputs({"job": self.job.metadata.apply(lambda meta: meta["name"])})
