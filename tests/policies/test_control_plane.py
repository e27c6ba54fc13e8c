"""LLM-GKE-004's reading of a cluster: how its nodes or control plane can be reached from outside."""

from __future__ import annotations

from typing import Any

import pytest

from policies.rules.cluster import control_plane_exposure


@pytest.mark.parametrize(
    ("cluster", "problems"),
    [
        ({"privateClusterConfig": {"enablePrivateNodes": True}, "masterAuthorizedNetworksConfig": {}}, []),
        (
            {
                "privateClusterConfig": {"enablePrivateNodes": True},
                "controlPlaneEndpointsConfig": {"ipEndpointsConfig": {"enabled": False}},
            },
            [],
        ),
        (
            {"privateClusterConfig": {"enablePrivateNodes": False}, "masterAuthorizedNetworksConfig": {}},
            ["external IP"],
        ),
        ({"privateClusterConfig": {"enablePrivateNodes": True}}, ["accepts any address"]),
        (
            {
                "privateClusterConfig": {"enablePrivateNodes": True},
                "masterAuthorizedNetworksConfig": {"cidrBlocks": [{"cidrBlock": "0.0.0.0/0"}]},
            },
            ["cover 0.0.0.0/0"],
        ),
        (
            {
                "privateClusterConfig": {"enablePrivateNodes": True},
                "masterAuthorizedNetworksConfig": {"cidrBlocks": [{"cidrBlock": "203.0.113.0/24"}]},
            },
            [],
        ),
        (
            {
                "privateClusterConfig": {"enablePrivateNodes": True},
                "masterAuthorizedNetworksConfig": {"gcpPublicCidrsAccessEnabled": True},
            },
            ["Google Cloud public IP"],
        ),
    ],
)
def test_control_plane_exposure(cluster: dict[str, Any], problems: list[str]) -> None:
    found = control_plane_exposure(cluster)
    assert len(found) == len(problems)
    for problem, expected in zip(found, problems, strict=True):
        assert expected in problem
