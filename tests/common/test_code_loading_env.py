"""Environment variables that change which code runs (common/code_loading_env.py)."""

from __future__ import annotations

import pytest

from common.code_loading_env import loads_code


@pytest.mark.parametrize(
    ("name", "loads"),
    [
        ("LD_PRELOAD", True),
        ("PYTHONPATH", True),
        ("PYTHONWARNINGS", True),
        ("BROWSER", True),
        ("NCCL_NET_PLUGIN", True),
        ("PYTHONUNBUFFERED", False),
        ("NCCL_DEBUG", False),
        ("VLLM_LOGGING_LEVEL", False),
        ("OLD_PATH", False),
    ],
)
def test_what_loads_code(name: str, loads: bool) -> None:
    assert loads_code(name) is loads
