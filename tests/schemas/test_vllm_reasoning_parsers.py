"""The vendored --reasoning-parser names per pinned release: read from a release's wheel without vLLM,
in the one serialisation, one entry for every release with an argument table."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from schemas import vllm_args, vllm_reasoning_parsers
from schemas.vllm_reasoning_parsers import TABLE, names_in_wheel, refresh, registered

INIT = """
_REASONING_PARSERS_TO_REGISTER = {
    "qwen3": ("qwen3_reasoning_parser", "Qwen3ReasoningParser"),
    "deepseek_r1": ("deepseek_r1_reasoning_parser", "DeepSeekR1ReasoningParser"),
}
"""
EAGER = """
@ReasoningParserManager.register_module(["eager_a", "eager_b"])
class A: ...

@ReasoningParserManager.register_module(name="eager_c")
class C: ...

@ToolParserManager.register_module_other("not_a_reasoning_parser")
class T: ...
"""


def wheel(directory: Path, version: str, files: dict[str, str]) -> Path:
    path = directory / f"vllm-{version}-cp38-abi3-manylinux_2_31_x86_64.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return path


def test_names_are_the_registry_keys_and_the_eager_registrations(tmp_path: Path) -> None:
    built = wheel(
        tmp_path,
        "9.9.9",
        {
            "vllm/reasoning/__init__.py": INIT,
            "vllm/reasoning/eager.py": EAGER,
            "vllm/reasoning/sub/deeper.py": '@ReasoningParserManager.register_module("nested")\nclass N: ...\n',
            "vllm/tool_parsers/__init__.py": '_REASONING_PARSERS_TO_REGISTER = {"tool": ("a", "B")}\n',
        },
    )
    assert names_in_wheel(built) == ["deepseek_r1", "eager_a", "eager_b", "eager_c", "nested", "qwen3"]
    with pytest.raises(ValueError, match="no reasoning parser registered"):
        names_in_wheel(wheel(tmp_path, "1.0.0", {"vllm/other.py": INIT}))


def test_refresh_records_a_release_from_its_own_wheel_only(tmp_path: Path) -> None:
    table = tmp_path / "reasoning-parsers.json"
    table.write_text(TABLE.read_text())
    built = wheel(tmp_path, "9.9.9", {"vllm/reasoning/__init__.py": INIT})
    with pytest.raises(ValueError, match=r"not a wheel of vllm 9\.9\.8"):
        refresh("9.9.8", built, table)
    refresh("9.9.9", built, table)
    document = json.loads(table.read_text())
    assert document["releases"]["9.9.9"]["names"] == ["deepseek_r1", "qwen3"]
    assert document["releases"]["0.19.0"] == json.loads(TABLE.read_text())["releases"]["0.19.0"]
    assert table.read_text() == vllm_args.render_table(document)


def test_the_vendored_table() -> None:
    text = TABLE.read_text()
    document = json.loads(text)
    assert text == vllm_args.render_table(document)
    assert document["generator"] == vllm_reasoning_parsers.GENERATOR
    for version, count in (("0.19.0", 19), ("0.33.0", 42)):
        names = registered(version)
        assert names is not None and "qwen3" in names and "qwen35" not in names and len(names) == count
    assert set(document["releases"]) == set(vllm_args.versions()), "every release with an argument table"
