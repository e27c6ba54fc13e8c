"""Held nodes: the vendored CapacityBuffer CRD is the upstream file."""

from __future__ import annotations

from pathlib import Path

import yaml


def test_the_vendored_crd_is_the_upstream_file() -> None:
    text = (
        Path(__file__).resolve().parents[2] / "schemas" / "crds" / "autoscaling.x-k8s.io_capacitybuffers.yaml"
    ).read_text()
    document = yaml.safe_load(text)
    served = {version["name"]: version["storage"] for version in document["spec"]["versions"] if version["served"]}
    assert served == {"v1alpha1": False, "v1beta1": True}
