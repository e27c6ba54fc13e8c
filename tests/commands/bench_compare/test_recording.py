"""`bench-compare --record`: a result recorded into the measurements file (commands/bench_compare/recording.py)
is the figure of its configuration from then on; hostile files and targets, concurrent records, the start-up report."""

from __future__ import annotations

import datetime
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from commands.bench_compare.command import bench_compare_main
from commands.io import output
from commands.plan.capacity_plan import capacity_plan
from commands.plan.command import plan_main
from commands.render.plan_md import capacity_section
from stacks.capacity import measurements
from stacks.load.loader import validate
from tests.rendered import ROOT, run_main
from tests.variants import stack_settings

JOB_LOG = ROOT / "tests" / "data" / "bench-job.log"


def stack_file(directory: Path, name: str, **settings: Any) -> Path:
    document = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    document["config"].update({f"gke-b200-serving:{key}": value for key, value in settings.items()})
    path = directory / f"Pulumi.{name}.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def copy_of_the_file(directory: Path) -> Path:
    path = directory / "measurements.yaml"
    shutil.copyfile(measurements.MEASUREMENTS_FILE, path)
    return path


def test_a_recorded_result_is_the_figure_of_its_configuration_from_then_on(tmp_path: Path) -> None:
    file = copy_of_the_file(tmp_path)
    original = file.read_text()
    stack = stack_file(tmp_path, "seqs", engine={"maxNumSeqs": 4096})
    common = ["--config-file", str(stack), "--measurements", str(file)]

    before = run_main(plan_main, "seqs", *common)
    assert before.returncode == 0
    assert "total tok/s            not measured" in before.stdout
    compared = run_main(bench_compare_main, "seqs", str(JOB_LOG), *common)
    assert "total tok/s            not measured         94,901        -" in compared.stdout
    assert file.read_text() == original, "nothing is recorded without --record"

    recorded = run_main(
        bench_compare_main, "seqs", str(JOB_LOG), *common, "--record", "--date", "2026-11-20", "--source", "team run"
    )
    assert recorded.returncode == 0, recorded.stderr
    assert f"recorded as measurement seqs-2026-11-20 in {file}\n" in recorded.stdout, "another file: no `make docs`"
    assert file.read_text().startswith(original), "every earlier line is kept"
    entry = next(item for item in measurements.load(file).measurements if item.id == "seqs-2026-11-20")
    assert entry.source == "team run" and entry.configuration.max_num_seqs == 4096
    assert entry.runs[0].nodes == 1 and entry.runs[0].total_tokens_per_second == pytest.approx(94_901.49, abs=0.01)

    after = run_main(plan_main, "seqs", *common)
    assert "total tok/s                  94,901" in after.stdout
    assert f"measured: seqs-2026-11-20 (the given file {file.name})" in after.stdout, "the figure names its file"
    repository = run_main(plan_main, "seqs", "--config-file", str(stack)).stdout
    assert repository == before.stdout.replace(f"the given file {file.name}", "stacks/capacity/measurements.yaml")


def test_a_record_into_the_repositorys_file_says_to_refresh_what_is_generated_from_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The preview's table of traced settings is keyed on the repository's measurements file: a record
    there leaves it stale (CI's check fails) until `make docs` writes it again."""
    file = copy_of_the_file(tmp_path)
    monkeypatch.setattr(measurements, "MEASUREMENTS_FILE", file)  # the repository's, as this run sees it
    recorded = record(tmp_path, file, "--date", "2026-11-22")
    assert recorded.returncode == 0, recorded.stderr
    assert f"recorded as measurement dev-2026-11-22 in {file}; run `make docs` before committing it" in recorded.stdout


def test_a_recorded_date_reads_back_as_its_text_anywhere(tmp_path: Path) -> None:
    """The recorded entry's date is quoted, so any YAML reader gets the text back; an entry written by
    hand with an unquoted date (a YAML date to a plain reader) loads too."""
    file = copy_of_the_file(tmp_path)
    stack = stack_file(tmp_path, "dated", engine={"maxNumSeqs": 4096})
    common = ["--config-file", str(stack), "--measurements", str(file)]
    run = run_main(
        bench_compare_main, "dated", str(JOB_LOG), *common, "--record", "--source", SOURCE, "--date", "2026-11-20"
    )
    assert run.returncode == 0, run.stderr
    assert "    date: '2026-11-20'\n" in file.read_text()
    entry = yaml.safe_load(measurements.MEASUREMENTS_FILE.read_text())["measurements"][0]
    loaded = measurements.Measurement.model_validate({**entry, "date": datetime.date(2026, 11, 20)}, by_alias=True)
    assert loaded.date == "2026-11-20"


def test_results_at_other_node_counts_add_to_the_configurations_runs(tmp_path: Path) -> None:
    file = copy_of_the_file(tmp_path)
    one = stack_file(tmp_path, "one", engine={"maxNumSeqs": 4096})
    two = stack_file(tmp_path, "two", engine={"maxNumSeqs": 4096}, capacity={"nodes": 2})
    for name, path, source in (("one", one, "run 1"), ("two", two, "run 2"), ("two", two, "run 3")):
        run = run_main(
            bench_compare_main,
            name,
            str(JOB_LOG),
            *("--config-file", str(path), "--measurements", str(file), "--record", "--source", source),
        )
        # the 1-node log given for 2 nodes misses the plan (exit 3), and is recorded all the same
        assert run.returncode in (0, 3) and "recorded as measurement" in run.stdout, run.stderr
    ids = [item.id for item in measurements.load(file).measurements][-3:]
    assert ids[2] == ids[1] + "-2", "a second result of the same stack and day gets its own id"
    planned = run_main(plan_main, "two", "--config-file", str(two), "--measurements", str(file), "--json")
    assert '"measured_nodes": [\n      1,\n      2\n    ]' in planned.stdout


def test_where_an_autoscaler_sets_the_pod_count_the_run_names_it(tmp_path: Path) -> None:
    """Recording at capacity.nodes would keep a figure at a count the run may not have had."""
    file = copy_of_the_file(tmp_path)
    stack = stack_file(
        tmp_path, "scaled", engine={"maxNumSeqs": 4096}, capacity={"nodes": 2}, autoscaling={"minReplicas": 1}
    )
    common = ["scaled", str(JOB_LOG), "--config-file", str(stack), "--measurements", str(file), "--record"]
    common += ["--source", SOURCE]
    refused = run_main(bench_compare_main, *common)
    assert refused.returncode == 2 and file.read_text() == measurements.MEASUREMENTS_FILE.read_text()
    assert refused.stderr == (
        "bench-compare: --nodes: required, its autoscaler runs 1..2 pods; allowed: 1 to 2, the serving pods during "
        "the run (`kubectl get deployment -n llm-serving qwen-serving` shows how many are ready now)\n"
    )
    # A newcomer: without --record the run was compared with the ceiling, 2 pods (exit 3, "MISSED the plan").
    compared = run_main(bench_compare_main, *common[: common.index("--record")])
    assert (compared.returncode, compared.stderr) == (2, refused.stderr)
    assert run_main(bench_compare_main, *common, "--nodes", "3").stderr == (
        "bench-compare: --nodes 3: out of range; allowed: 1 to 2, the serving pods during the run\n"
    )
    assert run_main(bench_compare_main, *common, "--nodes", "1", "--date", "2026-11-20").returncode == 0
    assert run_main(bench_compare_main, *common, "--nodes", "2", "--date", "2026-11-21").returncode == 0
    one, two = measurements.load(file).measurements[-2:]
    assert (one.runs[0].nodes, one.configuration.concurrency_per_node) == (1, 4000), "the Job's 4,000 on one pod"
    assert (two.runs[0].nodes, two.configuration.concurrency_per_node) == (2, 2000)
    planned = run_main(plan_main, "scaled", "--config-file", str(stack), "--measurements", str(file))
    assert "measured: scaled-2026-11-21 (" in planned.stdout, "only the run at the stack's own load matches"


def test_an_autoscaler_of_one_count_runs_that_count(tmp_path: Path) -> None:
    """A review: with minReplicas == maxReplicas the autoscaler runs that many pods, not capacity.nodes; the run
    was compared (and recorded) at capacity.nodes."""
    stack = stack_file(tmp_path, "fixed", capacity={"nodes": 1}, autoscaling={"minReplicas": 2, "maxReplicas": 2})
    compared = run_main(bench_compare_main, "fixed", str(JOB_LOG), "--config-file", str(stack))
    assert compared.stdout.startswith("stack fixed: 2 node(s)"), compared.stdout + compared.stderr


def test_nothing_is_recorded_from_a_run_without_completions(tmp_path: Path) -> None:
    file = copy_of_the_file(tmp_path)
    log = tmp_path / "failed.log"
    line = next(line for line in JOB_LOG.read_text().splitlines() if line.startswith("BENCH_RESULT "))
    result = json.loads(line.removeprefix("BENCH_RESULT "))
    no_throughput = {key: 0 for key in ("total_token_throughput", "output_throughput", "request_throughput")}
    log.write_text("BENCH_RESULT " + json.dumps(result | {"completed": 0, "failed": 20000} | no_throughput) + "\n")
    run = run_main(bench_compare_main, "dev", str(log), "--measurements", str(file), "--record", "--source", SOURCE)
    assert run.returncode == 2
    assert run.stderr == "bench-compare: no request completed: nothing to record\n"
    assert file.read_text() == measurements.MEASUREMENTS_FILE.read_text()


# ---------------------------------------------------------------- hostile measurements files and --record targets

TOKEN = "hf_" + "RecordCanary0123456789abcdef"


SOURCE = "team run, https://example.com/runs/1"


def record(tmp_path: Path, file: Path, *extra: str, log: Path = JOB_LOG, stack: str = "dev") -> Any:
    """`bench-compare STACK LOG --record` into `file`, with SOURCE unless `extra` gives --source."""
    source = [] if "--source" in extra else ["--source", SOURCE]
    return run_main(bench_compare_main, stack, str(log), "--measurements", str(file), "--record", *source, *extra)


def test_record_writes_through_no_planted_link(tmp_path: Path) -> None:
    """The new file is created beside the old one under a fresh random name and renamed over it: a
    link planted at the name the file was once staged under (.NAME.new) is not written through."""
    file = copy_of_the_file(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's file\n")
    (tmp_path / f".{file.name}.new").symlink_to(victim)
    assert record(tmp_path, file, "--date", "2026-11-21").returncode == 0
    assert victim.read_text() == "the user's file\n"
    assert "dev-2026-11-21" in file.read_text()


def test_a_new_measurements_file_is_started_with_an_empty_list_and_kept_readable(tmp_path: Path) -> None:
    """A newcomer: "record into a new one with --measurements" failed for every new file: a missing one, an empty
    one, and `measurements: []`, which the record turned into a file no reader accepts."""
    missing = tmp_path / "new.yaml"
    run = record(tmp_path, missing)
    assert run.returncode == 2 and "start a new one with the line `measurements: []`" in run.stderr
    assert not missing.exists()
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    run = record(tmp_path, empty)
    assert run.returncode == 2
    assert run.stderr.endswith(
        "the document is empty; allowed: `measurements:` and a list (`measurements: []` for none yet)\n"
    )
    started = tmp_path / "started.yaml"
    started.write_text("# our runs\nmeasurements: []  # none yet\n# record with bench-compare\n")
    assert record(tmp_path, started, "--date", "2026-11-21").returncode == 0
    # every line stays where it was (the comment after the list was moved above it)
    assert started.read_text().startswith("# our runs\nmeasurements: # none yet\n  - id: dev-2026-11-21\n")
    assert started.read_text().endswith("\n# record with bench-compare\n")
    assert [item.id for item in measurements.load(started).measurements] == ["dev-2026-11-21"]
    assert record(tmp_path, started, "--date", "2026-11-22").returncode == 0
    assert [item.id for item in measurements.load(started).measurements] == ["dev-2026-11-21", "dev-2026-11-22"]


def test_a_file_with_windows_line_endings_keeps_them_on_record(tmp_path: Path) -> None:
    """Entries were appended with LF into a CRLF file, leaving it with two line endings."""
    windows = tmp_path / "windows.yaml"
    windows.write_bytes(b"# our runs\r\nmeasurements: []\r\n")
    for date in ("2026-11-21", "2026-11-22"):
        assert record(tmp_path, windows, "--date", date).returncode == 0
    written = windows.read_bytes()
    assert written.startswith(b"# our runs\r\nmeasurements:\r\n  - id: dev-2026-11-21\r\n")
    assert written.count(b"\n") == written.count(b"\r\n") > 20
    assert [item.id for item in measurements.load(windows).measurements] == ["dev-2026-11-21", "dev-2026-11-22"]


def test_a_file_in_another_block_style_is_recorded_into_and_a_flow_list_refused_in_one_line(tmp_path: Path) -> None:
    """An attacker: a file PyYAML writes (items not indented under `measurements:`) got the new entry as a run of
    its last measurement and was refused as "Field required"; a flow list got the YAML parser's own message."""
    first = tmp_path / "first.yaml"
    first.write_text("measurements: []\n")
    assert record(tmp_path, first, "--date", "2026-11-20").returncode == 0
    unindented = tmp_path / "unindented.yaml"
    unindented.write_text(yaml.safe_dump(yaml.safe_load(first.read_text()), sort_keys=False))
    assert unindented.read_text().startswith("measurements:\n- id: dev-2026-11-20\n")
    assert record(tmp_path, unindented, "--date", "2026-11-21").returncode == 0
    assert [item.id for item in measurements.load(unindented).measurements] == ["dev-2026-11-20", "dev-2026-11-21"]
    flow = tmp_path / "flow.yaml"
    flow.write_text(json.dumps(yaml.safe_load(first.read_text())))
    before = flow.read_text()
    run = record(tmp_path, flow, "--date", "2026-11-21")
    assert run.returncode == 2 and run.stderr.count("\n") == 1
    assert "this file does not end with one (a flow list" in run.stderr and flow.read_text() == before


def test_a_date_in_the_future_is_refused_and_nothing_recorded(tmp_path: Path) -> None:
    file = copy_of_the_file(tmp_path)
    before = file.read_text()
    run = record(tmp_path, file, "--date", "2999-01-01", "--source", "team run")
    assert run.returncode == 2 and "2999-01-01 is in the future" in run.stderr
    assert file.read_text() == before


def test_record_refuses_a_measurements_file_that_is_a_link(tmp_path: Path) -> None:
    file = copy_of_the_file(tmp_path)
    link = tmp_path / "link.yaml"
    link.symlink_to(file)
    run = record(tmp_path, link)
    assert run.returncode == 2
    assert run.stderr == f"bench-compare: {link}: a symbolic link; refusing to write through it\n"
    assert link.is_symlink() and file.read_text() == measurements.MEASUREMENTS_FILE.read_text()


def test_record_refuses_a_measurements_file_of_another_user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Output folders of another user are refused; the file --record replaces is too (seen as another user by
    the process, the copy is someone else's): it stays as it was, theirs."""
    file = copy_of_the_file(tmp_path)
    monkeypatch.setattr(os, "geteuid", lambda: os.getuid() + 1)
    run = record(tmp_path, file)
    assert run.returncode == 2
    assert run.stderr.startswith(f"bench-compare: {file}: owned by another user (uid {os.getuid()})")
    assert len(run.stderr.splitlines()) == 1
    assert file.read_text() == measurements.MEASUREMENTS_FILE.read_text()


@pytest.mark.parametrize("where", ["source", "combine", "extra-env", "stack-name"])
def test_record_writes_no_token(where: str, tmp_path: Path) -> None:
    """What --record writes (the source, the log's combine note, the stack's name and configuration)
    is scanned for a Hugging Face token first: nothing is written, and the token is not printed."""
    file = copy_of_the_file(tmp_path)
    log, extra, stack = JOB_LOG, [], "dev"
    if where == "source":
        extra = ["--source", f"run by {TOKEN}"]
    elif where == "combine":
        log = tmp_path / "job.log"
        log.write_text(JOB_LOG.read_text().replace('"combine":"', f'"combine":"{TOKEN} '))
    elif where == "extra-env":
        stack = str(stack_file(tmp_path, "env", engine={"extraEnv": {"MY_SETTING": TOKEN}}))
    else:
        stack = str(stack_file(tmp_path, TOKEN))
    run = record(tmp_path, file, *extra, log=log, stack=stack)
    assert run.returncode == 2, run.stderr
    # the stack's settings are refused when loaded; what only the record holds, when written
    assert "a Hugging Face token would be written to it" in run.stderr or "holds a Hugging Face token" in run.stderr
    assert TOKEN not in run.stderr + run.stdout
    assert file.read_text() == measurements.MEASUREMENTS_FILE.read_text()


def test_record_writes_no_esc_secret_pasted_into_a_setting(tmp_path: Path) -> None:
    """A measurement records engine.extraEnv: the literal value of the stack file's ESC secret pasted there
    is refused as a token is, though it has no known shape."""
    file = copy_of_the_file(tmp_path)
    secret = "Zebra-Horse-Battery-77"
    path = stack_file(
        tmp_path, "esc", engine={"secretEnv": {"OPENAI_API_KEY": "openaiKey"}, "extraEnv": {"MY_SETTING": secret}}
    )
    document = yaml.safe_load(path.read_text())
    document["environment"] = {"values": {"pulumiConfig": {"openaiKey": {"fn::secret": secret}}}}
    path.write_text(yaml.safe_dump(document))
    run = record(tmp_path, file, stack=str(path))
    assert run.returncode == 2, run.stderr
    assert "a secret would be written to it" in run.stderr and "nothing was written" in run.stderr
    assert secret not in run.stderr + run.stdout
    assert file.read_text() == measurements.MEASUREMENTS_FILE.read_text()


@pytest.mark.parametrize("figure", ['"completed":20000', '"combine":"throughputs summed; medians request-weighted'])
def test_a_bad_figure_holding_the_stacks_secret_is_refused_without_a_part_of_it(figure: str, tmp_path: Path) -> None:
    """An attacker: a log figure holding the stack's ESC secret was refused quoting its first 38 characters (cut
    without the "..." after which the console hides a known secret's prefix)."""
    secret = "Zebra-Horse-Battery-Staple-Correct-Unicorn-Mango-77"
    path = stack_file(tmp_path, "esc", engine={"secretEnv": {"OPENAI_API_KEY": "openaiKey"}})
    document = yaml.safe_load(path.read_text())
    document["environment"] = {"values": {"pulumiConfig": {"openaiKey": {"fn::secret": secret}}}}
    path.write_text(yaml.safe_dump(document))
    log = tmp_path / "job.log"
    text = JOB_LOG.read_text()
    assert figure in text
    key = figure.split(":", maxsplit=1)[0]
    value = f'{{"x": "{secret}"}}, "ignored":"' if key == '"combine"' else f'"{secret}"'
    log.write_text(text.replace(figure, f"{key}:{value}", 1))
    run = run_main(bench_compare_main, str(path), str(log))
    assert run.returncode == 2, run.stderr
    assert secret[:8] not in run.stderr + run.stdout, run.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--results", str(JOB_LOG)], "give a log (or -) or --results, one of the two"),
        ([], "'combine' is 7; allowed: a string"),
    ],
)
def test_an_ambiguous_or_malformed_result_is_one_line(args: list[str], message: str, tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    log.write_text(JOB_LOG.read_text().replace('"combine":"', '"combine":7,"x":"'))
    run = run_main(bench_compare_main, "dev", str(log), *args)
    assert run.returncode == 2 and message in run.stderr and run.stderr.count("\n") == 1


@pytest.mark.parametrize("combine", ["x\\nverdict: met the plan", "x\\u0000", "x" * 201])
def test_a_combine_note_that_would_start_a_line_of_its_own_is_refused(combine: str, tmp_path: Path) -> None:
    """A log's `combine` with a line break printed `verdict: met the plan` above the real verdict (and went
    into the measurement's note)."""
    log = tmp_path / "job.log"
    log.write_text(JOB_LOG.read_text().replace('"combine":"', f'"combine":"{combine}'))
    run = run_main(bench_compare_main, "dev", str(log))
    assert run.returncode == 2 and "'combine' holds a line break" in run.stderr and run.stderr.count("\n") == 1
    assert "verdict" not in run.stdout


@pytest.mark.parametrize(
    ("change", "extra", "message"),
    [
        (("", ""), ["--source", " \t "], "argument --source: empty; say who measured it, where"),
        (
            ('"output_throughput":', '"output_throughput":0,"x":'),
            [],
            "'output_throughput' is 0.0 but 'total_output_tokens' over 'duration_s' is 31,530.4 per second",
        ),
    ],
)
def test_a_result_a_measurement_cannot_hold_is_one_line(
    change: tuple[str, str], extra: list[str], message: str, tmp_path: Path
) -> None:
    """Checked before anything is written: a blank --source, a zero throughput (they failed with a
    pydantic ValidationError and exit 1)."""
    file = copy_of_the_file(tmp_path)
    log = tmp_path / "job.log"
    log.write_text(JOB_LOG.read_text().replace(*change) if change[0] else JOB_LOG.read_text())
    run = record(tmp_path, file, *extra, log=log)
    assert run.returncode == 2 and message in run.stderr and run.stderr.count("\n") == 1, run.stderr
    assert file.read_text() == measurements.MEASUREMENTS_FILE.read_text()


# ---------------------------------------------------------------- concurrent records and the size limit


def test_output_read_from_a_recorded_run_says_so_not_that_it_is_the_totals_share(tmp_path: Path) -> None:
    """The write-up's runs report no output tok/s (plan.md derives it from the total and the load's output
    share); once a run that reports it is recorded, the figure at another node count reads that run."""
    file = copy_of_the_file(tmp_path)
    prod = validate(stack_settings("prod"))
    derived = "\n".join(
        capacity_section(capacity_plan("prod", prod, measurements=measurements.load(file).measurements), "c")
    )
    assert "| output tok/s | 367,980 | the total x the load's mean output share (see Assumptions) |" in derived
    record = [str(JOB_LOG), "--measurements", str(file), "--record", "--source", SOURCE, "--date", "2026-11-20"]
    assert run_main(bench_compare_main, "dev", *record).returncode == 0
    read = "\n".join(
        capacity_section(capacity_plan("prod", prod, measurements=measurements.load(file).measurements), "c")
    )
    # the total at 12 nodes (1,103,941: the write-up's scaling) x the recorded run's output share
    # (31,650 of 94,901); 12 x its per-node output (379,805) claimed no loss from 1 to 12 nodes
    assert (
        "| output tok/s | 368,173 | extrapolated, the total x the output share of the runs that report it "
        "(at 1 node(s)) |"
    ) in read
    assert "mean output share" not in read


def test_the_same_result_recorded_twice_is_refused_and_the_file_kept(tmp_path: Path) -> None:
    file = copy_of_the_file(tmp_path)
    stack = stack_file(tmp_path, "twice", engine={"maxNumSeqs": 4096})
    record = [
        str(JOB_LOG),
        "--config-file",
        str(stack),
        "--measurements",
        str(file),
        "--record",
        "--source",
        SOURCE,
        "--date",
        "2026-11-20",
    ]
    assert run_main(bench_compare_main, "twice", *record).returncode == 0
    once = file.read_text()
    again = run_main(bench_compare_main, "twice", *record)
    assert again.returncode == 2 and again.stderr.count("\n") == 1, again.stderr
    assert "recorded already, as measurement twice-2026-11-20 (the same configuration, runs, date" in again.stderr
    assert file.read_text() == once
    elsewhere = run_main(bench_compare_main, "twice", *record, "--source", "a second team run")
    assert elsewhere.returncode == 0 and "recorded as measurement twice-2026-11-20-2" in elsewhere.stdout


def test_concurrent_records_keep_every_entry(tmp_path: Path) -> None:
    """Four `--record` runs at once: each reads the file again under an exclusive lock (flock on the
    file, taken again when a writer renamed a new file over it), so none loses another's entry."""
    file = copy_of_the_file(tmp_path)
    command = [str(ROOT / ".venv" / "bin" / "bench-compare"), "dev", str(JOB_LOG), "--measurements", str(file)]
    runs = [
        subprocess.Popen(
            [*command, "--record", "--date", "2026-11-21", "--source", f"run {number}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for number in range(4)
    ]
    outputs = [run.communicate(timeout=300) for run in runs]
    assert [run.returncode for run in runs] == [0] * 4, outputs
    recorded = {item.id: item.source for item in measurements.load(file).measurements}
    assert {key: recorded[key] for key in recorded if key.startswith("dev-2026-11-21")}.keys() == {
        "dev-2026-11-21",
        "dev-2026-11-21-2",
        "dev-2026-11-21-3",
        "dev-2026-11-21-4",
    }
    assert sorted(value for key, value in recorded.items() if key.startswith("dev-2026-11-21")) == [
        f"run {number}" for number in range(4)
    ]
    assert file.read_text().startswith(measurements.MEASUREMENTS_FILE.read_text())


LOCK_WAIT_SECONDS = 120


def wait_until_blocked_on_the_lock(process: subprocess.Popen[str], file: Path) -> None:
    """Until the kernel lists `process` as waiting for a lock on `file` (a `->` line of /proc/locks:
    flock(2) requests that are blocked). Where /proc/locks does not exist, long enough for the run
    to load and reach the lock (it cannot pass it meanwhile)."""
    locks = Path("/proc/locks")
    if not locks.exists():
        time.sleep(8)
        return
    inode = f":{file.stat().st_ino} "
    deadline = time.monotonic() + LOCK_WAIT_SECONDS
    while time.monotonic() < deadline and process.poll() is None:
        for line in locks.read_text().splitlines():
            fields = line.split()
            if fields[1:2] == ["->"] and fields[5:6] == [str(process.pid)] and inode in line:
                return
        time.sleep(0.05)
    raise AssertionError(f"the record never waited for the lock: {process.communicate()}")


def test_a_record_waits_for_the_lock_and_reads_the_file_again(tmp_path: Path) -> None:
    """While another writer holds the lock and renames a new file over the old one, a record waits, then
    locks the new file and appends to what it holds."""
    file = copy_of_the_file(tmp_path)
    command = [str(ROOT / ".venv" / "bin" / "bench-compare"), "dev", str(JOB_LOG), "--measurements", str(file)]
    with output.locked_file(file):
        waiting = subprocess.Popen(
            [*command, "--record", "--source", SOURCE, "--date", "2026-11-22"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        wait_until_blocked_on_the_lock(waiting, file)
        assert waiting.poll() is None, waiting.communicate()
        other = tmp_path / "other.yaml"
        other.write_text(file.read_text() + "# written by another writer while the lock was held\n")
        os.rename(other, file)
    _, stderr = waiting.communicate(timeout=300)
    assert waiting.returncode == 0, stderr
    text = file.read_text()
    assert "# written by another writer while the lock was held\n" in text and "dev-2026-11-22" in text


def test_a_record_that_would_grow_the_file_past_the_readers_limit_is_refused(tmp_path: Path) -> None:
    """Every reader takes at most MAX_MEASUREMENTS_BYTES; a record that would pass it would make every
    later `plan` refuse the file, so it is refused itself and nothing is written."""
    file = copy_of_the_file(tmp_path)
    text = file.read_text()
    padding = measurements.MAX_MEASUREMENTS_BYTES - len(text.encode()) - 100
    file.write_text(text + "#" * (padding - 1) + "\n")
    before = file.read_bytes()
    run = record(tmp_path, file, "--date", "2026-11-23")
    assert run.returncode == 2, run.stderr
    assert run.stderr.count("\n") == 1 and "past the 1,048,576 every reader accepts" in run.stderr
    assert file.read_bytes() == before
    assert run_main(plan_main, "dev", "--measurements", str(file)).returncode == 0, "the file stays readable"


STARTUP_LINES = [
    'STARTUP_PHASES {"image":"vllm/vllm-openai:v0.19.0","node":"n1","phases":{"compiledSeconds":700.0,'
    '"containerStartedSeconds":400.0,"engineReadySeconds":800.0,"graphsCapturedSeconds":780.0,'
    '"imagePulledSeconds":390.0,"readySeconds":830.0,"scheduledSeconds":300.0,"weightsLoadedSeconds":600.0},'
    '"pod":"a","restarts":0,"imageWasCached":false,"nodeCreatedAfterPod":true}',
    'STARTUP_PHASES {"node":"n2","phases":{"readySeconds":850.0,"scheduledSeconds":320.0,"compiledSeconds":null},'
    '"pod":"b","restarts":0,"imageWasCached":false,"nodeCreatedAfterPod":true}',
]


def test_record_keeps_the_start_up_report_and_the_time_to_serve_uses_it(tmp_path: Path) -> None:
    from commands.render.time_to_serve import time_to_serve

    file = copy_of_the_file(tmp_path)
    log = tmp_path / "job.log"
    log.write_text(JOB_LOG.read_text() + "\n".join(STARTUP_LINES) + "\n")
    stack = stack_file(tmp_path, "seqs", engine={"maxNumSeqs": 4096})
    common = ["--config-file", str(stack), "--measurements", str(file)]
    run = run_main(
        bench_compare_main, "seqs", str(log), *common, "--record", "--source", SOURCE, "--date", "2026-11-20"
    )
    assert run.returncode == 0, run.stderr
    assert "start-up of 2 of 2 pod(s) that started cold" in run.stdout
    assert "median/max: scheduledSeconds 310/320" in run.stdout
    entry = next(item for item in measurements.load(file).measurements if item.id == "seqs-2026-11-20")
    assert entry.startup is not None and (entry.startup.pods, entry.startup.cold_pods) == (2, 2)
    assert entry.startup.median_seconds["readySeconds"] == 840.0 and entry.startup.max_seconds["readySeconds"] == 850
    assert entry.startup.median_seconds["compiledSeconds"] == 700.0  # a null is not a zero

    config = validate({**yaml_settings(stack)})
    assert entry.startup.conditions == measurements.startup_conditions(config)  # what the pods started under
    before = time_to_serve(config, recorded=measurements.load(measurements.MEASUREMENTS_FILE).measurements)
    assert {phase.key: phase.basis for phase in before.phases}["pod"] == "not measured"
    model = time_to_serve(config, recorded=measurements.load(file).measurements)
    found = {phase.key: phase for phase in model.phases}
    assert (found["pod"].seconds_max, found["pod"].basis) == (530.0, "measured")  # ready - scheduled, each pod's 530
    assert found["node"].seconds_max == 310.0 and "seqs-2026-11-20" in found["node"].source
    assert model.cold.seconds_max == 840.0 and model.held.seconds_max == 530.0


def test_a_start_up_report_of_pods_that_started_warm_measures_no_node_nor_pod_phase(tmp_path: Path) -> None:
    """A platform review: pods bound at once to nodes that were up (a rolled pod on the node its predecessor
    freed, a benchmark re-run) reported scheduledSeconds 28, recorded as a measured 28 s node phase, and the
    schedule's wake moved 7 min later. Only cold pods (a new node, the image pulled) time a new replica."""
    from commands.render.time_to_serve import time_to_serve

    warm = 'STARTUP_PHASES {"pod":"w%d","restarts":0,"imageWasCached":true,"nodeCreatedAfterPod":%s,"phases":{' + (
        '"scheduledSeconds":28.0,"imagePulledSeconds":30.0,"containerStartedSeconds":31.0,'
        '"engineReadySeconds":520.0,"readySeconds":560.0}}'
    )
    cold = STARTUP_LINES[0]
    file = copy_of_the_file(tmp_path)
    log = tmp_path / "job.log"
    log.write_text(JOB_LOG.read_text() + "\n".join([warm % (1, "false"), warm % (2, "null"), cold]) + "\n")
    stack = stack_file(tmp_path, "seqs", engine={"maxNumSeqs": 4096})
    common = ["--config-file", str(stack), "--measurements", str(file)]
    run = run_main(
        bench_compare_main, "seqs", str(log), *common, "--record", "--source", SOURCE, "--date", "2026-11-20"
    )
    assert run.returncode == 0, run.stderr
    assert "start-up of 1 of 3 pod(s) that started cold" in run.stdout and "scheduledSeconds 300/300" in run.stdout
    config = validate({**yaml_settings(stack)})
    found = {phase.key: phase for phase in time_to_serve(config, recorded=measurements.load(file).measurements).phases}
    assert (found["node"].seconds_max, found["pod"].seconds_max) == (300.0, 530.0)  # the cold pod's alone

    log.write_text(JOB_LOG.read_text() + "\n".join([warm % (1, "false"), warm % (2, "null")]) + "\n")
    (tmp_path / "again").mkdir()
    again = copy_of_the_file(tmp_path / "again")
    recording = ["--config-file", str(stack), "--measurements", str(again), "--record", "--source", SOURCE]
    run = run_main(bench_compare_main, "seqs", str(log), *recording)
    assert run.returncode == 0, run.stderr
    assert "none was on a node made for it with the image pulled" in run.stdout
    recorded = measurements.load(again).measurements
    found = {phase.key: phase for phase in time_to_serve(config, recorded=recorded).phases}
    assert found["node"].basis == "measured" and "recorded" not in found["node"].source  # the write-up's
    assert found["pod"].basis == "not measured"
    assert found["engineStart"].seconds_max == 489.0 and "recorded" in found["engineStart"].source


def test_a_phase_is_the_median_of_each_pods_own_span_not_a_difference_of_medians(tmp_path: Path) -> None:
    """Pods scheduled at 300/400/500 s and ready at 1,100/900/1,000 s took 800/500/500 s from scheduled to ready: the
    median pod took 500 s, where the difference of the medians (1,000 - 400) says 600, a span no pod had. A pod that
    lacks either end of a span is left out of it; a span below 0 counts as 0."""
    from commands.render.time_to_serve import time_to_serve

    line = (
        'STARTUP_PHASES {"pod":"p%d","restarts":0,"imageWasCached":false,"nodeCreatedAfterPod":true,"phases":{'
        '"scheduledSeconds":%s,"imagePulledSeconds":%s,"readySeconds":%s}}'
    )
    pods = [line % (1, 300, 290, 1100), line % (2, 400, "null", 900), line % (3, 500, 530, 1000)]
    file = copy_of_the_file(tmp_path)
    log = tmp_path / "job.log"
    log.write_text(JOB_LOG.read_text() + "\n".join(pods) + "\n")
    stack = stack_file(tmp_path, "seqs", engine={"maxNumSeqs": 4096})
    common = ["--config-file", str(stack), "--measurements", str(file), "--date", "2026-11-20"]
    run = run_main(bench_compare_main, "seqs", str(log), *common, "--record", "--source", SOURCE)
    assert run.returncode == 0, run.stderr
    spans = "start-up spans of each pod, s, median/max: node (created to scheduledSeconds) 400/500, "
    assert f"readySeconds 1,000/1,100\n{spans}" in run.stdout
    assert "pod (scheduledSeconds to readySeconds) 500/800\n" in run.stdout
    entry = next(item for item in measurements.load(file).measurements if item.id == "seqs-2026-11-20")
    assert entry.startup is not None and entry.startup.median_seconds["readySeconds"] == 1000
    # imagePull: p1's -10 s counts as 0, p2 has no pull, p3's 30 s: the median of 0 and 30
    assert entry.startup.median_span_seconds == {"node": 400.0, "imagePull": 15.0, "pod": 500.0}
    assert entry.startup.max_span_seconds == {"node": 500.0, "imagePull": 30.0, "pod": 800.0}
    found = {phase.key: phase for phase in time_to_serve(validate({**yaml_settings(stack)}), recorded=[entry]).phases}
    assert (found["pod"].seconds_max, found["node"].seconds_max) == (500.0, 400.0)
    assert found["pod"].source.endswith(
        "start-up report of 3 pod(s) on a node made for it, the image pulled: median of each pod's span"
    )


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('STARTUP_PHASES {"pod":"a","phases":{"readySeconds":-1}}', "phase 'readySeconds' is -1"),
        ('STARTUP_PHASES {"pod":"a","phases":{"readySeconds":"soon"}}', "phase 'readySeconds' is 'soon'"),
        ('STARTUP_PHASES {"pod":"a","phases":{"readySeconds":1e8}}', "job.log:"),  # named by line, not on record
        ('STARTUP_PHASES {"pod":"a","phases":{"lunchSeconds":1}}', "unknown phase 'lunchSeconds'"),
        ('STARTUP_PHASES {"phases":{}}', "naming its 'pod'"),
        ("STARTUP_PHASES [1", "job.log"),
    ],
)
def test_a_malformed_start_up_line_is_one_line(line: str, message: str, tmp_path: Path) -> None:
    file = copy_of_the_file(tmp_path)
    log = tmp_path / "job.log"
    log.write_text(JOB_LOG.read_text() + line + "\n")
    run = record(tmp_path, file, log=log)
    assert run.returncode == 2 and message in run.stderr and run.stderr.count("\n") == 1, run.stderr
    assert file.read_text() == measurements.MEASUREMENTS_FILE.read_text()


def test_a_report_of_more_pods_than_any_stack_runs_is_refused_by_the_log_not_the_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An attacker: 300,000 pods' lines, without --record, said "cannot record the start-up report" with no file named
    and no allowed count (the limit is lowered here so that three pods exceed it)."""
    monkeypatch.setattr(measurements, "MAX_REPORTED_PODS", 2)
    log = tmp_path / "job.log"
    lines = [f'STARTUP_PHASES {{"pod":"p{number}","phases":{{"readySeconds":600}}}}' for number in range(3)]
    log.write_text(JOB_LOG.read_text() + "\n".join(lines) + "\n")
    run = run_main(bench_compare_main, "dev", str(log))
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr == (
        f"bench-compare: {log}: STARTUP_PHASES lines of 3 pods; allowed: at most 2, one line per serving pod\n"
    )


def yaml_settings(stack: Path) -> dict[str, Any]:
    document = yaml.safe_load(stack.read_text())
    return {key.split(":", 1)[1]: value for key, value in document["config"].items()}


@pytest.mark.parametrize(
    "source",
    [
        "/home/me/private/run.log",
        "see issue #4711",
        "~/runs/x.log",
        "file:///tmp/run.log",
        "notes in issue 12",
        "our run, issue #42",
        "see PR 12",
        "run #7",
        "../notes/bench-run.md",
        "notes/bench.md",
        "gs://team-bucket/bench/run1.log",
        "File:///etc/x",
        "http://localhost:3000/d/bench",
        "https://grafana.internal.corp/d/x",
        "http://grafana/d/1",
        "https://10.0.0.7/runs",
        "C:\\runs\\bench.log",
    ],
)
def test_a_source_a_reader_cannot_open_is_refused_on_record_and_in_the_file(tmp_path: Path, source: str) -> None:
    """A recorded source is printed beside the figure (plan.md, capacity.json): a public URL or a title."""
    file = copy_of_the_file(tmp_path)
    run = record(tmp_path, file, "--date", "2026-11-23", "--source", source)
    assert run.returncode == 2 and "which a reader of the plan cannot open" in run.stderr
    assert file.read_text() == measurements.MEASUREMENTS_FILE.read_text()
    document = yaml.safe_load(file.read_text())
    document["measurements"][0]["source"] = source
    file.write_text(yaml.safe_dump(document))
    with pytest.raises(
        measurements.MeasurementsError, match=r"source: names .* which a reader of the plan cannot open"
    ):
        measurements.load(file)


@pytest.mark.parametrize("hidden", ["\u202e", "\u2066", "\u200b", "\ufeff", "\x1b"])
def test_a_source_with_an_invisible_character_is_refused_on_record_and_in_the_file(tmp_path: Path, hidden: str) -> None:
    """A bidirectional override shows the plan's reader another address than the source holds."""
    source = f"Team run, see https://example.com/report{hidden}fdp.exe"
    file = copy_of_the_file(tmp_path)
    run = record(tmp_path, file, "--date", "2026-11-23", "--source", source)
    assert run.returncode == 2 and f"character U+{ord(hidden):04X}" in run.stderr, run.stderr
    assert hidden not in run.stderr
    assert file.read_text() == measurements.MEASUREMENTS_FILE.read_text()
    document = yaml.safe_load(file.read_text())
    document["measurements"][0]["source"] = source
    file.write_text(yaml.safe_dump(document, allow_unicode=True))
    with pytest.raises(measurements.MeasurementsError, match=f"character U\\+{ord(hidden):04X}"):
        measurements.load(file)


def test_a_source_with_markup_is_refused(tmp_path: Path) -> None:
    """An attacker: plan.md prints the source as it is, so a link, an image or table cells of its own showed the
    reader another source than the file holds."""
    source = "Google Cloud official benchmark <img src=x> | **verified**"
    file = copy_of_the_file(tmp_path)
    run = record(tmp_path, file, "--date", "2026-11-23", "--source", source)
    assert run.returncode == 2 and "character U+003C (LESS-THAN SIGN)" in run.stderr, run.stderr
    assert file.read_text() == measurements.MEASUREMENTS_FILE.read_text()
    # a title's `|` and a `]` are text (a diff review: "... | Google Cloud Blog" is a common title)
    titled = record(tmp_path, file, "--date", "2026-11-23", "--source", "Serving at scale | Google Cloud Blog, ok]")
    assert titled.returncode == 0, titled.stderr


def test_a_record_without_a_source_is_refused(tmp_path: Path) -> None:
    """The source is printed beside the figure: the default the command once wrote ("in-cluster benchmark Job
    of this project") named nothing a reader could open or look up."""
    file = copy_of_the_file(tmp_path)
    run = run_main(bench_compare_main, "dev", str(JOB_LOG), "--measurements", str(file), "--record")
    assert run.returncode == 2 and run.stderr.count("\n") == 1 and "--record needs --source" in run.stderr
    assert file.read_text() == measurements.MEASUREMENTS_FILE.read_text()


def test_a_rate_too_small_to_divide_by_is_not_recorded(tmp_path: Path) -> None:
    """A run of 5e-324 tokens/s, once recorded, made every later plan of its stack divide by zero (exit 1)."""
    file = copy_of_the_file(tmp_path)
    before = file.read_text()
    result = json.loads(JOB_LOG.read_text().split("BENCH_RESULT ", 1)[1].splitlines()[0])
    log = tmp_path / "tiny.log"
    tiny = {"total_token_throughput": 5e-324, "output_throughput": 5e-324}
    log.write_text("BENCH_RESULT " + json.dumps({**result, **tiny}) + "\n")
    refused = record(tmp_path, file, log=log)
    # no count of tokens over the run's duration gives such a rate: refused as not matching its counts
    assert refused.returncode == 2 and "'output_throughput' is 4.94e-324 but 'total_output_tokens'" in refused.stderr
    assert file.read_text() == before
