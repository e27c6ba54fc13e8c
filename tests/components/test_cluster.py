"""The cluster component's helpers on their own: the node service account id and the kubeconfig."""

from __future__ import annotations

import re

import yaml

from components.cluster import kubeconfig_for, node_service_account_id


def test_node_service_account_id_fits_iam_limits() -> None:
    assert node_service_account_id("llm-serving") == "llm-serving-nodes"
    longest = node_service_account_id("a" * 23 + "-" + "b" * 16)
    assert len(longest) <= 30 and re.fullmatch(r"[a-z][-a-z0-9]{4,28}[a-z0-9]", longest)
    assert "--" not in longest


def test_kubeconfig_targets_the_dns_endpoint() -> None:
    """The provider's kubeconfig is a secret in the render: check the function that builds it."""
    kubeconfig = yaml.safe_load(kubeconfig_for("llm-serving", "gke-abc-123.us-central1.gke.goog"))
    (cluster,) = kubeconfig["clusters"]
    assert cluster["cluster"] == {"server": "https://gke-abc-123.us-central1.gke.goog"}
    assert kubeconfig["users"][0]["user"]["exec"]["command"] == "gke-gcloud-auth-plugin"
