"""Invalid stack settings stop the run with exit status 2 and one line naming the key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from commands.engine import mocks
from commands.render import command as render
from commands.stackfile import stack_settings
from stacks.config.stack import StackConfig
from stacks.load.loader import InvalidConfig, validate
from tests.rendered import run_render_subprocess

PROJECT = "gke-b200-serving"
BASE = {"environment": "dev", "project": "my-llm-dev", "region": "us-central1", "zones": ["us-central1-b"]}

INVALID: list[tuple[str, dict[str, Any], str]] = [
    ("unknown-top-level-key", {"replicas": 3}, "replicas: unknown key"),
    ("misspelled-environment", {"enviroment": "dev"}, "enviroment: unknown key"),
    ("unknown-environment", {"environment": "qa"}, "environment: Input should be 'dev', 'staging' or 'prod'"),
    ("zero-nodes", {"capacity": {"nodes": 0}}, "capacity.nodes: Input should be greater than or equal to 1"),
    ("nodes-not-a-number", {"capacity": {"nodes": "many"}}, "capacity.nodes: Input should be a valid integer"),
    ("on-demand-capacity", {"capacity": {"sources": [{"type": "onDemand"}]}}, "capacity.sources[0].type: 'onDemand'"),
    ("no-capacity-source", {"capacity": {"sources": []}}, "capacity.sources: List should have at least 1 item"),
    ("reservation-without-name", {"capacity": {"sources": [{"type": "reservation"}]}}, "capacity.sources[0].name"),
    (
        "flex-start-over-seven-days",
        {"capacity": {"sources": [{"type": "flexStart", "maxRunDurationSeconds": 700000}]}},
        "capacity.sources[0].maxRunDurationSeconds: Input should be less than or equal to 604800",
    ),
    ("reserved-compute-class-name", {"capacity": {"computeClassName": "gke-b200"}}, "capacity.computeClassName"),
    ("zone-outside-region", {"zones": ["europe-west4-a"]}, "zones: 'europe-west4-a' is not in region us-central1"),
    (
        "unknown-routing-mode",
        {"routing": {"mode": "loadbalancer"}},
        "routing.mode: Input should be 'clusterip' or 'gateway'",
    ),
    ("service-named-vllm", {"routing": {"serviceName": "vllm"}}, "routing.serviceName"),
    # A Service name is an RFC 1035 label: a letter first (a Namespace may start with a digit).
    ("service-name-digit-first", {"routing": {"serviceName": "7b-serving"}}, "routing.serviceName"),
    ("namespace-upper-case", {"cluster": {"namespace": "LLM"}}, "cluster.namespace"),
    ("memory-utilization-over-one", {"engine": {"gpuMemoryUtilization": 1.5}}, "engine.gpuMemoryUtilization"),
    (
        "parallelism-over-gpus",
        {"engine": {"tensorParallelSize": 2}},
        "engine: dataParallelSize x tensorParallelSize = 16",
    ),
    ("unknown-kv-cache-dtype", {"engine": {"kvCacheDtype": "int4"}}, "engine.kvCacheDtype"),
    ("mamba-block-not-multiple-of-8", {"engine": {"mambaBlockSize": 12}}, "mambaBlockSize 12 is not a multiple of 8"),
    ("unknown-engine-flag", {"engine": {"maxNumSeq": 8192}}, "engine.maxNumSeq: unknown key"),
    ("image-without-tag", {"engine": {"image": "vllm/vllm-openai"}}, "engine.image"),
    ("gke-too-old-for-b200", {"cluster": {"minMasterVersion": "1.31.0-gke.100"}}, "cluster.minMasterVersion"),
    (
        "gke-version-of-5000-digits",
        {"cluster": {"minMasterVersion": "1." + "9" * 5000}},
        "is not a GKE version; allowed: a minor like 1.34",
    ),
    ("gke-version-and-a-line-break", {"cluster": {"minMasterVersion": "1.36\n"}}, "is not a GKE version"),
    (
        "checkpoint-no-disk-holds",
        {"weights": {"checkpointGib": 65536, "sizeGib": 65536}},
        "no disk holds it (sizeGib is at most 65536): allowed a checkpoint of at most 29789 GiB",
    ),
    ("disk-too-small-for-checkpoint", {"weights": {"checkpointGib": 100, "sizeGib": 100}}, "use at least 220"),
    (
        "overlapping-ranges",
        {"cluster": {"network": {"podsCidr": "10.0.0.0/14"}}},
        "cluster.network: subnetCidr 10.0.0.0/20 overlaps podsCidr",
    ),
    ("weights-too-small", {"weights": {"sizeGib": 2}}, "weights.sizeGib: Input should be greater than or equal to 4"),
    ("bad-project-id", {"project": "My_Project"}, "project: 'My_Project' is not a GCP project id"),
    ("proxy-subnet-too-small", {"routing": {"gateway": {"proxySubnetCidr": "10.129.0.0/28"}}}, "proxySubnetCidr"),
]


def stack_file(tmp_path: Path, settings: dict[str, Any]) -> Path:
    path = tmp_path / "Pulumi.invalid.yaml"
    merged = {**BASE, **settings}
    path.write_text(yaml.safe_dump({"config": {f"{PROJECT}:{key}": value for key, value in merged.items()}}))
    return path


@pytest.mark.parametrize(("case", "settings", "expected"), INVALID, ids=[case for case, _, _ in INVALID])
def test_invalid_stack_file_exits_2_with_one_line(
    case: str, settings: dict[str, Any], expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    status = render.main(["invalid", "--config-file", str(stack_file(tmp_path, settings)), "--out", str(out)])
    captured = capsys.readouterr()
    assert status == 2
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("invalid stack config: ")
    assert expected in lines[0]
    assert "Traceback" not in captured.err
    assert not out.exists(), "nothing may be written for an invalid config"


def test_missing_environment_names_the_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "Pulumi.bare.yaml"
    path.write_text(yaml.safe_dump({"config": {f"{PROJECT}:project": "my-llm-dev"}}))
    assert render.main(["bare", "--config-file", str(path), "--out", str(tmp_path / "out")]) == 2
    assert "environment: required key is missing" in capsys.readouterr().err


def test_invalid_config_through_the_command_line(tmp_path: Path) -> None:
    run = run_render_subprocess(
        "invalid", "--config-file", str(stack_file(tmp_path, {"routing": {"mode": "nodeport"}}))
    )
    assert run.returncode == 2
    assert run.stderr.count("\n") == 1 and "routing.mode" in run.stderr
    assert run.stdout == ""


def test_program_declares_nothing_for_an_invalid_config(tmp_path: Path) -> None:
    """The same check under the engine: the program raises RunError (the CLI shows only its
    message) before the first registration."""
    settings = stack_settings.load_stack_settings("invalid", stack_file(tmp_path, {"capacity": {"nodes": -1}}))
    monitor = mocks.RecordingMonitor(mocks.OfflineMocks())
    with pytest.raises(InvalidConfig, match=r"capacity\.nodes"):
        mocks.run_program(settings, monitor=monitor)
    assert monitor.registrations == []


def test_derived_checks_run_in_the_program_too(tmp_path: Path) -> None:
    """`__main__.py` validates through the same loader under `pulumi up`: a contradicting extra flag
    stops the program before the first registration."""
    path = stack_file(tmp_path, {"engine": {"extraArgs": ["--port", "9000"]}})
    monitor = mocks.RecordingMonitor(mocks.OfflineMocks())
    with pytest.raises(InvalidConfig, match=r"engine\.extraArgs\[0\]: '--port' sets --port"):
        mocks.run_program(stack_settings.load_stack_settings("invalid", path), monitor=monitor)
    assert monitor.registrations == []


def test_missing_stack_file_exits_2_listing_the_stack_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "Pulumi.there.yaml").write_text("config: {}\n")
    assert render.main(["missing", "--config-file", str(tmp_path / "Pulumi.nope.yaml")]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1
    assert "stack file not found" in error and "Pulumi.there.yaml" in error


def test_defaults_reproduce_the_recipe() -> None:
    config = validate({"environment": "prod", "project": "my-llm-prod", "weights": {"revision": "ab" * 20}})
    assert isinstance(config, StackConfig)
    assert config.capacity.nodes == 12
    assert [source.type for source in config.capacity.sources] == ["flexStart", "spot"]
    assert config.routing.mode.value == "clusterip"
    assert config.protected and config.weights_protected
    engine = config.engine
    assert (engine.data_parallel_size, engine.tensor_parallel_size) == (8, 1)
    assert (engine.max_model_len, engine.max_num_batched_tokens, engine.max_num_seqs) == (2560, 16384, 8192)
    assert engine.kv_cache_dtype.value == "fp8_e4m3" and engine.gpu_memory_utilization == 0.92
    assert engine.speculative is not None and engine.speculative.num_speculative_tokens == 1


@pytest.mark.parametrize(
    ("environment", "nodes", "mode", "protected"),
    [("dev", 1, "clusterip", False), ("staging", 4, "gateway", False), ("prod", 12, "clusterip", True)],
)
def test_environment_presets(environment: str, nodes: int, mode: str, protected: bool) -> None:
    config = validate({"environment": environment, "project": "my-llm-test", "weights": {"revision": "ab" * 20}})
    assert (config.capacity.nodes, config.routing.mode.value, config.protected) == (nodes, mode, protected)


def test_stack_file_overrides_preset() -> None:
    config = validate(
        {
            "environment": "prod",
            "project": "my-llm-prod",
            "cluster": {"deletionProtection": False},
            "weights": {"revision": "ab" * 20},
        }
    )
    assert config.protected is False
    assert config.weights_protected is True


def test_namespace_is_an_rfc_1123_label() -> None:
    config = validate({**BASE, "cluster": {"namespace": "7b-serving"}})
    assert config.cluster.namespace == "7b-serving"


def test_invalid_config_is_a_pulumi_run_error() -> None:
    import pulumi

    with pytest.raises(pulumi.RunError):
        validate({"environment": "prod"})


@pytest.mark.parametrize("region", ["us-central9", "europe-west5", "asia-north1"])
def test_a_region_that_does_not_exist_is_refused_in_one_line(region: str) -> None:
    """The grammar alone let an invented region through to `pulumi up`; a real region without A4 stays an
    advisory (LLM-GPU-004)."""
    with pytest.raises(InvalidConfig) as error:
        validate({"environment": "dev", "project": "my-llm-dev", "region": region, "zones": [f"{region}-b"]})
    assert str(error.value) == (
        f"invalid stack config: region: '{region}' is not a Google Cloud region; allowed: one of the 42 Google Cloud "
        "regions (2026-11; `gcloud compute regions list` shows them) like us-central1 or europe-west4; a region "
        "without A4 capacity is allowed, with the advisory LLM-GPU-004"
    )
    assert validate(
        {"environment": "dev", "project": "my-llm-dev", "region": "europe-west1", "zones": ["europe-west1-b"]}
    )


def test_the_pod_range_holds_every_a4_node_that_may_be_up_at_once() -> None:
    """A /24 of Pod addresses per node: the A4 nodes at the replica ceiling, the nodes a capacity buffer
    holds beyond it, and the CPU nodes. A /21 holds 8: 4 A4 and 4 CPU nodes fit; a held node more, or an
    autoscaler that may run a fifth pod, does not."""
    fitting = {
        **BASE,
        "capacity": {"nodes": 4},
        "schedule": {"enabled": False},
        "cluster": {"minMasterVersion": "1.36", "network": {"podsCidr": "10.4.0.0/21"}},
    }
    assert validate(fitting).capacity.nodes == 4
    for more in ({"warmCapacity": {"nodes": 1}}, {"autoscaling": {"minReplicas": 1, "maxReplicas": 5}}):
        with pytest.raises(InvalidConfig, match=r"podsCidr: 10\.4\.0\.0/21 has room for 8 nodes .*; 9 are needed"):
            validate({**fitting, **more})
