"""Environment variables that change which code the dynamic loader or the Python interpreter loads or runs:
a value here would run other code than the pinned image's, with the pod's GPUs, token and service account.

LD_* (ld.so(8): LD_PRELOAD, LD_LIBRARY_PATH, LD_AUDIT, ...), GCONV_PATH (glibc loads iconv modules from it),
PATH (which executables run), BASH_ENV (a file bash runs first), and Python's PYTHONPATH, PYTHONHOME,
PYTHONSTARTUP, PYTHONUSERBASE, PYTHONBREAKPOINT, PYTHONEXECUTABLE, ...: every PYTHON* variable except those
that only tune a run (docs.python.org/3/using/cmdline.html, Environment variables), listed in
PYTHON_TUNING_ENV. Not PYTHONWARNINGS: a category `MODULE.CLASS` in it imports MODULE at start-up (CPython
Lib/warnings.py, _getcategory), and the standard library's `antigravity` opens a browser, which runs the
command in BROWSER (Lib/webbrowser.py, register_standard_browsers): the two together run any command. NCCL
loads the shared library an NCCL_*_PLUGIN variable names (NCCL_NET_PLUGIN takes a library path,
microsoft/mrc-nccl-plugin README; NCCL_ENV_PLUGIN "a shared library path", the RCCL env plugin docs;
NCCL_TUNER_PLUGIN and NCCL_PROFILER_PLUGIN alike, not read at NCCL's source here).
"""

from __future__ import annotations

import re

LOADER_ENV_PREFIXES = ("LD_", "PYTHON")
LOADER_ENV = frozenset({"PATH", "GCONV_PATH", "BASH_ENV", "BROWSER"})
LOADER_ENV_PATTERN = re.compile(r"^NCCL_[A-Z0-9_]*PLUGIN$")
PYTHON_TUNING_ENV = frozenset(
    {
        "PYTHONUNBUFFERED",
        "PYTHONFAULTHANDLER",
        "PYTHONIOENCODING",
        "PYTHONUTF8",
        "PYTHONDONTWRITEBYTECODE",
        "PYTHONHASHSEED",
    }
)
# What a refusal names as not allowed.
CODE_LOADING_ENV = (
    f"LD_*, PATH, GCONV_PATH, BASH_ENV, BROWSER, NCCL_*PLUGIN, PYTHON* except {', '.join(sorted(PYTHON_TUNING_ENV))}"
)


def loads_code(name: str) -> bool:
    """Whether a variable of this name changes which code the loader or Python loads or runs."""
    loader = name in LOADER_ENV or name.startswith(LOADER_ENV_PREFIXES) or LOADER_ENV_PATTERN.match(name) is not None
    return loader and name not in PYTHON_TUNING_ENV
