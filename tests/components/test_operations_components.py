"""The day-2 components on their own: scale schedules, the CRD wait, the autoscaler and metrics adapter."""

from __future__ import annotations

from components.autoscaling import (
    MetricsAdapter,
    MetricsAdapterArgs,
    ServingAutoscaler,
    ServingAutoscalerArgs,
)
from components.crd_readiness import CrdReadiness, CrdReadinessArgs
from components.schedule import ScaleSchedule, ScaleScheduleArgs, ScaleStep
from tests.construct import build, children_are_parented, has_resource, match, of_type, resource_count_is

CRON_JOB = "kubernetes:batch/v1:CronJob"


def test_one_cron_job_per_step_scaling_only_the_named_deployment() -> None:
    records = build(
        lambda: ScaleSchedule(
            "sched",
            ScaleScheduleArgs(
                name="serving-schedule",
                namespace="serving",
                deployment="qwen",
                time_zone="Europe/Amsterdam",
                steps=[ScaleStep("start", "0 8 * * 1-5", 2), ScaleStep("stop", "0 19 * * 1-5", 0)],
            ),
        )
    )
    resource_count_is(records, CRON_JOB, 2)
    for step, cron, replicas in (("start", "0 8 * * 1-5", "2"), ("stop", "0 19 * * 1-5", "0")):
        job = has_resource(
            records,
            CRON_JOB,
            {
                "metadata": {"name": f"serving-schedule-{step}", "annotations": {"llm-serving/replicas": replicas}},
                "spec": {
                    "schedule": cron,
                    "timeZone": "Europe/Amsterdam",
                    "concurrencyPolicy": "Forbid",
                    "jobTemplate": {
                        "spec": {
                            "template": {
                                "spec": {
                                    "containers": [{"args": ["scale", "deployment/qwen", f"--replicas={replicas}"]}]
                                }
                            }
                        }
                    },
                },
            },
        )
        assert any("RoleBinding" in urn for urn in job.options["dependsOn"])
    has_resource(
        records,
        "kubernetes:rbac.authorization.k8s.io/v1:Role",
        {
            "rules": [
                {"resources": ["deployments"], "resourceNames": ["qwen"], "verbs": ["get"]},
                {"resources": ["deployments/scale"], "resourceNames": ["qwen"], "verbs": ["get", "patch", "update"]},
            ]
        },
    )
    children_are_parented(records, "llm-serving:operations:ScaleSchedule", "sched")


def test_crd_wait_job_waits_for_creation_then_established() -> None:
    records = build(
        lambda: CrdReadiness(
            "crds",
            CrdReadinessArgs(namespace="serving", name="qwen-crds", crds=("computeclasses.cloud.google.com",)),
        )
    )
    job = has_resource(
        records,
        "kubernetes:batch/v1:Job",
        {
            "metadata": {"name": "qwen-crds", "annotations": {"pulumi.com/replaceUnready": "true"}},
            "spec": {
                "template": {
                    "spec": {
                        "serviceAccountName": "qwen-crds",
                        "restartPolicy": "Never",
                        "initContainers": [
                            {"args": ["wait", "--for=create", "--timeout=1500s", "crd/computeclasses.cloud.google.com"]}
                        ],
                        "containers": [
                            {
                                "args": [
                                    "wait",
                                    "--for=condition=Established",
                                    "--timeout=300s",
                                    "crd/computeclasses.cloud.google.com",
                                ]
                            }
                        ],
                    }
                }
            },
        },
    )
    # pulumi up waits for the Job longer than the Job's own deadline.
    deadline = job.inputs["spec"]["activeDeadlineSeconds"]
    assert int(job.inputs["metadata"]["annotations"]["pulumi.com/timeoutSeconds"]) >= deadline == 2100
    has_resource(
        records,
        "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole",
        {"rules": [{"resources": ["customresourcedefinitions"], "verbs": ["get", "list", "watch"]}]},
    )
    children_are_parented(records, "llm-serving:gke:CrdReadiness", "crds")


def test_autoscaler_adds_and_removes_one_node_per_period() -> None:
    records = build(
        lambda: ServingAutoscaler(
            "hpa",
            ServingAutoscalerArgs(
                name="qwen",
                namespace="serving",
                deployment="qwen",
                min_replicas=1,
                max_replicas=4,
                metric_name="prometheus.googleapis.com|vllm:num_requests_waiting|gauge",
                target_average_value="100",
                scale_up_period_seconds=360,
                scale_down_stabilization_seconds=1920,
                scale_down_period_seconds=600,
            ),
        )
    )
    has_resource(
        records,
        "kubernetes:autoscaling/v2:HorizontalPodAutoscaler",
        {
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "qwen"},
                "minReplicas": 1,
                "maxReplicas": 4,
                "metrics": [
                    {
                        "type": "Pods",
                        "pods": {
                            "metric": {"name": "prometheus.googleapis.com|vllm:num_requests_waiting|gauge"},
                            "target": {"type": "AverageValue", "averageValue": "100"},
                        },
                    }
                ],
                "behavior": {
                    "scaleUp": {"policies": [{"type": "Pods", "value": 1, "periodSeconds": 360}]},
                    "scaleDown": {
                        "stabilizationWindowSeconds": 1920,
                        "policies": [{"type": "Pods", "value": 1, "periodSeconds": 600}],
                    },
                },
            }
        },
    )


def test_metrics_adapter_reads_monitoring_as_its_own_kubernetes_identity() -> None:
    records = build(
        lambda: MetricsAdapter(
            "adapter",
            MetricsAdapterArgs(project="my-proj", project_number="123456789012", workload_pool="my-proj.svc.id.goog"),
        )
    )
    has_resource(
        records,
        "gcp:projects/iAMMember:IAMMember",
        {
            "role": "roles/monitoring.viewer",
            "member": "principal://iam.googleapis.com/projects/123456789012/locations/global/workloadIdentityPools/"
            "my-proj.svc.id.goog/subject/ns/custom-metrics/sa/custom-metrics-stackdriver-adapter",
        },
    )
    services = of_type(records, "kubernetes:apiregistration.k8s.io/v1:APIService")
    assert sorted(record.inputs["metadata"]["name"] for record in services) == [
        "v1beta1.custom.metrics.k8s.io",
        "v1beta1.external.metrics.k8s.io",
        "v1beta2.custom.metrics.k8s.io",
    ]
    assert all(match(record.inputs, {"spec": {"service": {"namespace": "custom-metrics"}}}) for record in services)
    children_are_parented(records, "llm-serving:operations:MetricsAdapter", "adapter")
