"""The vendored `vllm serve` argument tables: present for every pinned release, well formed, agreeing
with the real parsers' recorded verdicts; the checker refuses what those parsers refuse and an image
whose release has no table."""

from __future__ import annotations

import json
import re
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from schemas import vllm_args, vllm_args_refresh
from schemas.vllm_args import NoTableError, check_serve_args, flag_name, image_version, table_for
from tests.rendered import ROOT, RenderedStack, run_main

# The releases the project pins: the measured one and the newest.
PINNED = ("0.19.0", "0.33.0")
PROBES = {probe.name: probe for probe in vllm_args.PROBES}


def recorded_probes() -> list[tuple[str, str]]:
    return [(version, name) for version in vllm_args.versions() for name in table_for(version)["probes"]]


def test_every_pinned_release_has_a_table() -> None:
    assert set(PINNED) <= set(vllm_args.versions())
    for version in PINNED:
        assert vllm_args.table_path(version).is_file()


@pytest.mark.parametrize("version", vllm_args.versions())
def test_table_is_well_formed_and_sorted(version: str) -> None:
    text = vllm_args.table_path(version).read_text()
    table = json.loads(text)
    assert text == vllm_args.render_table(table), "not in the one serialisation (sorted keys, indent 2)"
    assert table["vllm"] == version
    assert table["format"] == vllm_args.TABLE_FORMAT
    assert table["generator"] == vllm_args.GENERATOR
    assert table["positionals"] == [{"dest": "model_tag", "nargs": "?"}]
    owner: dict[str, str] = {}
    for name, option in table["options"].items():
        strings = option["option_strings"]
        assert name in strings and strings == sorted(strings)
        for string in strings:
            assert string not in owner, f"{string} belongs to {owner.get(string)} and {name}"
            owner[string] = name
        assert option["nargs"] in (0, 1, "?", "+", "*") or isinstance(option["nargs"], int)
        assert ("type" in option) == (option["nargs"] != 0)
        if "choices" in option:
            assert option["type"] in ("str", "int", "float")
            assert option["choices"] == sorted(option["choices"], key=vllm_args_refresh._choice_key)
        assert set(option.get("negative_option_strings", [])) <= set(strings)
    # The checker reads `-1` as a value: argparse does too while no option string looks like a number.
    assert not [string for string in owner if re.match(r"^-\d+$|^-\d*\.\d+$", string)]
    assert {"--help", "--port", "--data-parallel-size", "--enable-prefix-caching"} <= set(table["options"])


@pytest.mark.parametrize("version", PINNED)
def test_the_recipe_line_is_accepted_by_the_real_parser_and_the_checker(version: str) -> None:
    recipe = table_for(version)["probes"]["recipe"]
    assert recipe["argv"] == list(vllm_args.RECIPE)
    assert recipe["accepted"], recipe.get("error")
    assert recipe["values"]["mamba_cache_mode"] == "align" and recipe["values"]["mamba_block_size"] == 8
    assert recipe["values"]["optimization_level"] == "3"  # -O3
    assert recipe["values"]["model_tag"] == "Qwen/Qwen3.5-27B-FP8"  # --model moved in front
    assert check_serve_args(vllm_args.RECIPE, version) == []


@pytest.mark.parametrize(("version", "name"), recorded_probes())
def test_the_checker_agrees_with_the_real_parser(version: str, name: str) -> None:
    """Each table records what its release's parser made of the probe lines; the checker refuses the
    same lines, except where it is stricter on purpose (it then says why)."""
    probe = table_for(version)["probes"][name]
    problems = check_serve_args(probe["argv"], version)
    stricter = PROBES[name].stricter if name in PROBES else None
    if stricter is not None:
        assert stricter in vllm_args.STRICTER
        assert probe["accepted"] and len(problems) == 1, problems
    else:
        assert (problems == []) == probe["accepted"], (probe.get("error"), problems)
    assert all("\n" not in problem for problem in problems)


@pytest.mark.parametrize("version", PINNED)
def test_a_misspelled_flag_is_refused(version: str) -> None:
    problems = check_serve_args([*vllm_args.RECIPE, "--max-modle-len=2560"], version)
    assert problems == [f"--max-modle-len=...: no such option in vllm serve {version}"]


@pytest.mark.parametrize("token", ["--api-key:Hunt3r2" + "Xyzzy9", "--api-kee=Hunt3r2" + "Xyzzy9"])
def test_a_refused_option_is_named_without_what_is_glued_to_it(token: str) -> None:
    """An attacker: `--api-key:PASSWORD` was refused as an unknown option, and the problem quoted it whole."""
    (problem,) = check_serve_args([*vllm_args.RECIPE, token], PINNED[0])
    assert "Hunt3r2" not in problem and problem.startswith(token[:10] + "...: no such option")


@pytest.mark.parametrize("version", PINNED)
def test_what_the_checker_says(version: str) -> None:
    model = "/models/m"
    assert check_serve_args([model, "--enable-prefix-caching=true"], version) == [
        "--enable-prefix-caching=true: --enable-prefix-caching takes no value"
    ]
    assert check_serve_args([model, "--max-num-seqs"], version) == ["--max-num-seqs: needs a value"]
    assert check_serve_args([model, "--max-num-seqs=lots"], version) == [
        "--max-num-seqs=lots: 'lots' is not an integer"
    ]
    (problem,) = check_serve_args([model, "--mamba-cache-mode=sometimes"], version)
    assert problem.startswith("--mamba-cache-mode=sometimes: 'sometimes' is not one of align, ")
    (problem,) = check_serve_args([model, "--max-model=2560"], version)
    assert problem.startswith("--max-model=...: write --max-model-len in full")
    # vLLM's own forms: underscores, -O<n>, dotted JSON arguments, --model anywhere.
    assert check_serve_args([model, "--max_num_seqs", "8", "-O", "3", "-O=3", "--optimization-level=3"], version) == []
    assert (
        check_serve_args([model, "--speculative_config.method=mtp", "-sc.num_speculative_tokens", "1"], version) == []
    )
    assert check_serve_args(["--port=8000", "--model", model, "--served-model-name=x"], version) == []
    assert check_serve_args(["--served-model-name=x", model], version) == [
        "the model must be the first argument when --served-model-name is given"
    ]


def test_the_releases_differ_where_the_tables_say() -> None:
    model = "/models/m"
    assert check_serve_args([model, "--mamba-cache-mode=all"], "0.19.0") == []
    assert check_serve_args([model, "--mamba-cache-mode=all"], "0.33.0") != []
    assert check_serve_args([model, "--disable-prefix-caching"], "0.19.0") != []
    assert check_serve_args([model, "--disable-prefix-caching"], "0.33.0") == []
    # 0.19.0 lists the KV cache dtypes in the parser; 0.33.0 leaves them to CacheConfig.
    assert check_serve_args([model, "--kv-cache-dtype=nvfp4"], "0.19.0") != []
    assert check_serve_args([model, "--kv-cache-dtype=nvfp4"], "0.33.0") == []


def test_a_version_without_a_table_is_refused_in_one_line() -> None:
    with pytest.raises(NoTableError) as refused:
        check_serve_args(["/models/m"], "0.18.0")
    message = str(refused.value)
    assert "\n" not in message
    assert "0.18.0" in message and "0.19.0, 0.33.0" in message


def test_image_version() -> None:
    assert image_version("vllm/vllm-openai:v0.19.0") == "0.19.0"
    assert image_version(f"vllm/vllm-openai:v0.33.0@sha256:{'a' * 64}") == "0.33.0"
    with pytest.raises(NoTableError, match="names no vLLM release") as refused:
        image_version("vllm/vllm-openai:latest")
    assert "\n" not in str(refused.value)


def test_every_rendered_command_line_passes_the_table_of_its_image(stack: RenderedStack) -> None:
    for deployment in stack.kind("Deployment"):
        for container in deployment["spec"]["template"]["spec"]["containers"]:
            if container.get("command") == ["vllm", "serve"]:
                assert check_serve_args(container["args"], image_version(container["image"])) == []


# ---------------------------------------------------------------- the command


def test_make_vllm_args_runs_refresh() -> None:
    run = subprocess.run(
        ["make", "-n", "-B", "vllm-args", "VERSION=0.33.0", "VLLM_PYTHON=/venvs/vllm/bin/python"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert ".venv/bin/python -m schemas.vllm_args_refresh refresh 0.33.0 --python /venvs/vllm/bin/python" in run.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["refresh", "0.33", "--python", "/usr/bin/true"],
        ["refresh", "0.33.0", "--python", "/no/such/python"],
        ["check", "0.18.0", "--", "/models/m"],
    ],
)
def test_misuse_is_one_line_and_status_2(args: list[str]) -> None:
    run = run_main(vllm_args_refresh.main, *args)
    assert run.returncode == 2
    assert run.stderr.startswith("vllm-args: ") and run.stderr.count("\n") == 1


def test_check_command() -> None:
    assert run_main(vllm_args_refresh.main, "check", "0.19.0", "--", *vllm_args.RECIPE).returncode == 0
    run = run_main(vllm_args_refresh.main, "check", "0.19.0", "--", "/models/m", "--no-such-flag")
    assert (run.returncode, run.stdout) == (1, "--no-such-flag: no such option in vllm serve 0.19.0\n")


def fake_python(tmp_path: Path, table: dict[str, Any]) -> Path:
    """A stand-in for a vLLM environment's Python: `python -m schemas.vllm_args_refresh dump OUT` writes `table`
    when the libcuda stub is first on LD_LIBRARY_PATH."""
    source = tmp_path / "table.json"
    source.write_text(vllm_args.render_table(table))
    python = tmp_path / "python"
    python.write_text(
        f'#!/bin/sh\n[ "$3" = dump ] && [ -f "${{LD_LIBRARY_PATH%%:*}}/libcuda.so.1" ] && cp {source} "$4"\n'
    )
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    return python


@pytest.mark.skipif(not (shutil.which("cc") or shutil.which("gcc")), reason="no C compiler for the libcuda stub")
def test_refresh_writes_what_the_environment_dumped_and_checks_its_version(tmp_path: Path) -> None:
    table = table_for("0.19.0")
    python = fake_python(tmp_path, table)
    vendored_pack_flags = vllm_args.PACK_FLAGS.read_bytes()
    written = vllm_args_refresh.refresh("0.19.0", python, directory=tmp_path)
    assert written.read_bytes() == vllm_args.table_path("0.19.0").read_bytes()
    assert list(json.loads((tmp_path / vllm_args.PACK_FLAGS.name).read_text())["releases"]) == ["0.19.0"]
    assert vllm_args.PACK_FLAGS.read_bytes() == vendored_pack_flags
    with pytest.raises(ValueError, match=r"has vllm 0\.19\.0, not 0\.33\.0"):
        vllm_args_refresh.refresh("0.33.0", python, directory=tmp_path)


# Flags the stack renders that the tables' `rendered` probe predates (schemas/vllm/README.md, "Known
# gap"): the real parsers' verdict on them is not recorded until `make vllm-args` runs again.
NOT_YET_RECORDED = ("--reasoning-parser=qwen3",)


@pytest.mark.parametrize("version", PINNED)
def test_the_rendered_probe_differs_from_the_rendered_line_only_where_the_readme_says(version: str) -> None:
    recorded = table_for(version)["probes"]["rendered"]
    assert recorded["accepted"], recorded.get("error")
    assert [arg for arg in vllm_args.RENDERED if arg not in NOT_YET_RECORDED] == recorded["argv"]
    assert check_serve_args(vllm_args.RENDERED, version) == []


def test_the_policy_packs_copy_of_the_tables_is_made_from_the_vendored_tables() -> None:
    assert vllm_args.PACK_FLAGS.read_text() == vllm_args.render_pack_flags(vllm_args.pack_flags()), (
        "policies/vllm_flags.json is stale: python -m schemas.vllm_args_refresh pack-flags"
    )
    releases = json.loads(vllm_args.PACK_FLAGS.read_text())["releases"]
    assert list(releases) == vllm_args.versions()
    assert releases["0.33.0"]["--device-memory-utilization"] == ["gpu-memory-utilization", 1, False]
    assert releases["0.33.0"]["--no-enable-expert-parallel"][:2] == ["no-enable-expert-parallel", 0]
    assert releases["0.19.0"]["-tp"] == ["tensor-parallel-size", 1, False]
    assert releases["0.19.0"]["--api-key"] == ["api-key", "+", True]


def test_pack_flags_writes_the_packs_copy(tmp_path: Path) -> None:
    written = vllm_args_refresh.write_pack_flags(output=tmp_path / "flags.json")
    assert written.read_bytes() == vllm_args.PACK_FLAGS.read_bytes()


@pytest.mark.parametrize(
    ("token", "name"),
    [
        ("--max_model_len=1", "max-model-len"),
        ("--speculative-config.method", "speculative-config"),
        ("-O3", "optimization-level"),
        ("-tp", "tensor-parallel-size"),
        ("-sc", "speculative-config"),  # every short option of the vendored tables, not a hand-kept few
        ("-q=fp8", "quantization"),
        ("-1", None),
        ("value", None),
        ("-z", ""),
    ],
)
def test_flag_names_as_vllm_parses_them(token: str, name: str | None) -> None:
    assert flag_name(token) == name
