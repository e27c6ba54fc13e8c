"""The vendored CRD schemas: complete, documented, and refreshable from an upstream checkout."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from schemas import crds


def test_readme_lists_every_vendored_file_with_its_source() -> None:
    assert crds.README.read_text() == crds.readme(crds.sources()), "run `python -m schemas.crds readme`"


def test_every_vendored_file_is_one_crd_with_schemas() -> None:
    on_disk = {path.name for path in crds.DIRECTORY.glob("*.yaml")}
    assert on_disk == set(crds.sources())
    for file_name, source in crds.sources().items():
        assert source["upstream"] in crds.UPSTREAMS
        (document,) = crds.crd_documents((crds.DIRECTORY / file_name).read_text())
        assert all("openAPIV3Schema" in version["schema"] for version in document["spec"]["versions"])


@pytest.mark.parametrize("upstream", sorted({source["upstream"] for source in crds.sources().values()}))
def test_refresh_from_a_checkout_copies_byte_for_byte(upstream: str, tmp_path: Path) -> None:
    vendored = tmp_path / "crds"
    shutil.copytree(crds.DIRECTORY, vendored)
    checkout = tmp_path / "checkout"
    for file_name, source in crds.sources().items():
        if source["upstream"] == upstream:
            target = checkout / source["path"]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes((crds.DIRECTORY / file_name).read_bytes())
    written = crds.refresh(upstream, "v9.9.9", from_dir=checkout, directory=vendored)
    assert written
    table = json.loads((vendored / "sources.json").read_text())
    for file_name in written:
        assert (vendored / file_name).read_bytes() == (crds.DIRECTORY / file_name).read_bytes()
        assert table[file_name]["ref"] == "v9.9.9"


def test_refresh_refuses_a_file_that_is_not_a_crd(tmp_path: Path) -> None:
    vendored = tmp_path / "crds"
    shutil.copytree(crds.DIRECTORY, vendored)
    checkout = tmp_path / "checkout"
    for source in crds.sources().values():
        if source["upstream"] == "gke-gateway-api":
            target = checkout / source["path"]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("apiVersion: v1\nkind: ConfigMap\n")
    with pytest.raises(ValueError, match="not one CustomResourceDefinition"):
        crds.refresh("gke-gateway-api", "v1", from_dir=checkout, directory=vendored)


def test_refresh_from_a_missing_checkout_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert crds.main(["refresh", "gke-gateway-api", "v1", "--from-dir", str(tmp_path / "missing")]) == 2
    error = capsys.readouterr().err
    assert error.startswith("crds: ") and error.count("\n") == 1
