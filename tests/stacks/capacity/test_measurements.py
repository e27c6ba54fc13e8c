"""The measurements file: what it holds and how it refuses a broken file (recording a result with
bench-compare: tests/commands/bench_compare/test_recording.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from stacks.capacity import measurements
from stacks.config.profiles import ProfileName
from stacks.load.loader import InvalidConfig, validate

WRITE_UP = {
    "writeup-2026-03-dp8-mtp1-clusterip": 95_317,
    "writeup-2026-03-dp8-mtp1-gateway": 131_303,
    "writeup-2026-03-dp8-no-mtp": 66_021,
    "writeup-2026-03-dp8-mtp2": 90_567,
    "writeup-2026-03-dp8-mtp1-gpumem095": 95_391,
    "writeup-2026-03-tp8-start": 22_300,
    "writeup-2026-03-397b-nvfp4-tp8-ep": 19_725,
}


def test_the_file_holds_the_write_ups_rows_with_their_sources() -> None:
    loaded = {item.id: item for item in measurements.load().measurements}
    assert {key: loaded[key].runs[0].total_tokens_per_second for key in WRITE_UP} == WRITE_UP
    for item in loaded.values():
        assert item.source and item.date
        assert item.configuration.profile in {profile.value for profile in ProfileName}
    assert all(loaded[key].measured_release == "0.18.0" for key in WRITE_UP)
    recipe = loaded["writeup-2026-03-dp8-mtp1-clusterip"].configuration
    assert recipe.vllm_release == "0.19.0", "the write-up's figures stand for the default profile on 0.19.0"
    assert loaded["writeup-2026-03-397b-nvfp4-tp8-ep"].configuration.vllm_release == "0.18.0"
    for key in ("writeup-2026-03-dp8-no-mtp", "writeup-2026-03-dp8-mtp2", "writeup-2026-03-dp8-mtp1-gpumem095"):
        assert loaded[key].configuration.gpu_memory_utilization == 0.95, "the write-up's table ran them at 0.95"


def test_a_broken_yaml_file_is_named_by_line_and_column_without_an_excerpt(tmp_path: Path) -> None:
    """An attacker: the parser's excerpt of the file (40 characters around the column) was printed, a password in
    it shown whenever the key's secret word fell outside the excerpt."""
    path = tmp_path / "measurements.yaml"
    password = "Sup3r" + "S3cretPassw0rd"
    path.write_text('{"' + "a" * 38 + '_password": "' + password + '" }}')
    with pytest.raises(measurements.MeasurementsError) as error:
        measurements.load(path)
    assert str(error.value).endswith("measurements.yaml:1:76: expected '<document start>', but found '}'")
    assert password not in str(error.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("measurements: [", "measurements.yaml:1:16: expected the node content, but found '<stream end>'"),
        (
            "measurements:\n  - id: Bad Id\n",
            "measurements.0.id: 'Bad Id' is not allowed; allowed: 1-63 lower-case letters, digits and hyphens",
        ),
        ("measurements: []\nextra: 1\n", "extra: Extra inputs are not permitted"),
        ("- 1\n", "the document is a list; allowed: `measurements:` and a list (`measurements: []` for none yet)"),
        ("# nothing yet\n", "the document is empty; allowed"),
        (
            "measurements:\n",
            "`measurements:` is empty; allowed: `measurements:` and a list (`measurements: []` for none",
        ),
    ],
)
def test_a_broken_measurements_file_is_one_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "measurements.yaml"
    path.write_text(text)
    with pytest.raises(measurements.MeasurementsError) as error:
        measurements.load(path)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_duplicate_ids_and_runs_are_refused(tmp_path: Path) -> None:
    document = yaml.safe_load(measurements.MEASUREMENTS_FILE.read_text())
    document["measurements"].append(document["measurements"][0])
    path = tmp_path / "measurements.yaml"
    path.write_text(yaml.safe_dump(document))
    with pytest.raises(measurements.MeasurementsError, match="two measurements share an id"):
        measurements.load(path)


def test_the_loader_refuses_a_stack_when_the_file_is_broken(tmp_path: Path) -> None:
    broken = tmp_path / "measurements.yaml"
    broken.write_text("measurements: 3\n")
    with (
        measurements.using(broken),
        pytest.raises(InvalidConfig, match=r"^invalid measurements file: .*measurements: Input should be a valid"),
    ):
        validate({"environment": "dev", "project": "my-llm-dev"})


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"outputTokensPerSecond": 900000}, "outputTokensPerSecond 900,000 is above totalTokensPerSecond"),
        ({"requestsPerSecond": 1000000}, "requestsPerSecond 1,000,000 is above totalTokensPerSecond"),
        ({"completed": 0}, "completed is 0 with a throughput"),
    ],
)
def test_a_run_no_benchmark_can_give_is_refused(tmp_path: Path, changes: dict[str, object], message: str) -> None:
    """A hand-edited run was read as measured (plan.md printed ~0 tokens per request, or output above total)."""
    document = yaml.safe_load(measurements.MEASUREMENTS_FILE.read_text())
    document["measurements"][0]["runs"][0].update(changes)
    path = tmp_path / "measurements.yaml"
    path.write_text(yaml.safe_dump(document))
    with pytest.raises(measurements.MeasurementsError) as error:
        measurements.load(path)
    assert message in str(error.value) and str(error.value).startswith(f"{path}: measurements.0.runs.0")


@pytest.mark.parametrize("written", ["9.5e4", "95e3", "95000.0", "9.5e+4"])
def test_a_figure_in_yaml_12_notation_is_a_number(tmp_path: Path, written: str) -> None:
    """`totalTokensPerSecond: 9.5e4` was "not a valid number" though in range: PyYAML reads it as text."""
    text = measurements.MEASUREMENTS_FILE.read_text()
    document = yaml.safe_load(text)
    document["measurements"][0]["runs"][0]["totalTokensPerSecond"] = "PLACEHOLDER"
    path = tmp_path / "measurements.yaml"
    path.write_text(yaml.safe_dump(document).replace("PLACEHOLDER", written))
    assert measurements.load(path).measurements[0].runs[0].total_tokens_per_second == 95000


def test_a_start_up_phase_in_yaml_12_notation_is_a_number() -> None:
    phases = measurements.StartupPhases.model_validate(
        {"pods": 1, "medianSeconds": {"readySeconds": "1.2e2"}, "maxSeconds": {"readySeconds": "2e2"}}
    )
    assert (phases.median_seconds["readySeconds"], phases.max_seconds["readySeconds"]) == (120, 200)
