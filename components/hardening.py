"""The security contexts every workload of the stack shares (checkov CKV_K8S_20/22/23/28/37/40)."""

from __future__ import annotations

import pulumi_kubernetes as k8s


def restricted_container_context() -> k8s.core.v1.SecurityContextArgs:
    """No privilege escalation, no capabilities, nothing written outside the declared volumes."""
    return k8s.core.v1.SecurityContextArgs(
        allow_privilege_escalation=False,
        read_only_root_filesystem=True,
        capabilities=k8s.core.v1.CapabilitiesArgs(drop=["ALL"]),
    )


def non_root_pod_context(user_id: int) -> k8s.core.v1.PodSecurityContextArgs:
    """A pod whose containers run as `user_id` (and its group), with the runtime's seccomp profile."""
    return k8s.core.v1.PodSecurityContextArgs(
        run_as_non_root=True,
        run_as_user=user_id,
        run_as_group=user_id,
        seccomp_profile=k8s.core.v1.SeccompProfileArgs(type="RuntimeDefault"),
    )
