"""Regenerate the `vllm serve` argument table of one vLLM release (schemas/vllm_args.py reads it).

`python -m schemas.vllm_args_refresh refresh VERSION --python PATH` (`make vllm-args VERSION=...
VLLM_PYTHON=...`) runs PATH, a Python with vllm==VERSION installed in a throwaway environment (vLLM
is never a dependency of this project), to build the serve parser exactly as `vllm serve` does and
writes `schemas/vllm/vllm-VERSION.json`: every option with all the option strings the parser
accepts, how many values it takes, its choices and its type, plus the real parser's verdict on the
command lines in `schemas.vllm_args.PROBES`. vLLM's CUDA extension needs the driver library, so
`refresh` compiles `schemas/vllm/libcuda_stub.c` in a temporary directory first. The table holds no
date: refreshing with the same environment rewrites it byte for byte. `check VERSION -- ARGS` holds
a command line against a vendored table.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.metadata
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from schemas.vllm_args import (
    DIRECTORY,
    GENERATOR,
    LOWER_SNAKE,
    PACK_FLAGS,
    PROBES,
    ROOT,
    STUB_SOURCE,
    TABLE_FORMAT,
    VERSION_PATTERN,
    check_serve_args,
    pack_flags,
    render_pack_flags,
    render_table,
    table_path,
)

# ---------------------------------------------------------------- generator (runs inside vLLM's environment)


def _module(name: str) -> Any:
    return importlib.import_module(name)


def _serve_parser() -> tuple[Any, Any]:
    """`vllm`'s top-level parser with the `serve` subcommand, as vllm/entrypoints/cli/main.py builds
    it, and the serve parser itself; the platform is CUDA, as in the GPU image."""
    platforms, cuda, interface = (
        _module(name) for name in ("vllm.platforms", "vllm.platforms.cuda", "vllm.platforms.interface")
    )
    platforms._current_platform = cuda.CudaPlatform()
    # At 0.19.0 importing the serve command asks the device for its compute capability
    # (vllm/model_executor/layers/quantization/utils/w8a8_utils.py): answer B200's, 10.0.
    cuda.CudaPlatform.get_device_capability = classmethod(
        lambda cls, device_id=0: interface.DeviceCapability(major=10, minor=0)
    )
    flexible = _module("vllm.utils.argparse_utils").FlexibleArgumentParser
    command = _module("vllm.entrypoints.cli.serve").ServeSubcommand()
    top = flexible(prog="vllm", description="vLLM CLI")
    parser = command.subparser_init(top.add_subparsers(required=False, dest="subparser"))
    parser.set_defaults(dispatch_function=command.cmd)
    return top, parser


def _type_of(convert: Any) -> dict[str, Any]:
    """The type of an action's values: `str`, `int`, `float` or `json` (which the checker converts,
    `optional` if "" and "None" give None, `transform` if the value is rewritten first); otherwise
    the converting function's name, which the checker does not follow."""
    if convert is None or convert in (str, int, float):
        return {"type": getattr(convert, "__name__", "str")}
    if convert is json.loads:
        return {"type": "json"}
    name = getattr(convert, "__name__", type(convert).__name__)
    code = getattr(convert, "__code__", None)
    cells = getattr(convert, "__closure__", None) or ()
    inner = {
        cell_name: cell.cell_contents for cell_name, cell in zip(code.co_freevars if code else (), cells, strict=True)
    }
    if name == "_optional_type" and "return_type" in inner:  # vllm/engine/arg_utils.py optional_type
        return {**_type_of(inner["return_type"]), "optional": True}
    if name == "_parse_type" and "return_type" in inner:  # parse_type: ValueError becomes a usage error
        return _type_of(inner["return_type"])
    if name == "<lambda>" and _lowers_snake(convert):
        return {"type": "str", "transform": LOWER_SNAKE}
    return {"type": name}


def _lowers_snake(convert: Any) -> bool:
    try:
        return bool(convert("Ab-C_d") == "ab_c_d" and convert("x") == "x")
    except Exception:
        return False


def _choice_key(choice: Any) -> tuple[int, Any]:
    return (0, choice) if isinstance(choice, int | float) else (1, choice) if isinstance(choice, str) else (2, "")


def _option_table(parser: Any) -> dict[str, dict[str, Any]]:
    strings: dict[int, list[str]] = {}
    for string, action in parser._option_string_actions.items():
        strings.setdefault(id(action), []).append(string)
    options: dict[str, dict[str, Any]] = {}
    # vLLM's own record of `deprecated=True` arguments (for Pythons before 3.13; a class attribute at 0.19.0)
    deprecated: set[Any] = getattr(parser, "_deprecated", set())
    for action in parser._actions:
        if not action.option_strings:
            continue
        name = next((string for string in action.option_strings if string.startswith("--")), action.option_strings[0])
        entry: dict[str, Any] = {
            "action": type(action).__name__,
            "dest": action.dest,
            "nargs": 1 if action.nargs is None else action.nargs,
            "option_strings": sorted(strings[id(action)]),
        }
        if action.nargs != 0:
            entry.update(_type_of(action.type))
        if action.choices is not None:
            choices = list(action.choices)
            if not all(choice is None or isinstance(choice, str | int | float) for choice in choices):
                raise ValueError(f"{name}: choices {choices!r} are not plain values")
            if entry["type"] not in ("str", "int", "float"):
                raise ValueError(f"{name}: choices on a {entry['type']} value, which the checker cannot convert")
            entry["choices"] = sorted(choices, key=_choice_key)
        if isinstance(action, argparse.BooleanOptionalAction):
            negative = []
            for string in strings[id(action)]:
                namespace = argparse.Namespace()
                action(parser, namespace, None, string)
                if getattr(namespace, action.dest) is False:
                    negative.append(string)
            entry["negative_option_strings"] = sorted(negative)
        if action in deprecated:
            entry["deprecated"] = True
        if action.required:
            entry["required"] = True
        if name in options:
            raise ValueError(f"{name}: two actions")
        options[name] = entry
    return options


def _plain(value: Any) -> Any:
    """A parsed value as JSON; an object other than a dict, list or scalar by its type name."""
    return json.loads(json.dumps(value, default=lambda other: f"<{type(other).__name__}>"))


def _one_line(message: str) -> str:
    """A message on one line, without object addresses (`<function loads at 0x7f...>`)."""
    return re.sub(r" at 0x[0-9a-f]+", "", " ".join(message.split()))


def _real_verdict(top: Any, parser: Any, argv: Sequence[str]) -> dict[str, Any]:
    """What `vllm serve ARGV` makes of its arguments (parsing only: before `ServeSubcommand.validate`)."""
    stdout, stderr = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            namespace = top.parse_args(["serve", *argv])
    except SystemExit as exit_:
        message = stderr.getvalue().split(": error: ", 1)[-1]
        return {"accepted": False, "error": _one_line(message) or f"exit status {exit_.code}"}
    except Exception as error:
        return {"accepted": False, "error": _one_line(f"{type(error).__name__}: {error}")}
    dests = {action.dest for action in parser._actions if action.dest != "help"}
    return {
        "accepted": True,
        "values": {
            dest: _plain(getattr(namespace, dest))
            for dest in sorted(dests)
            if hasattr(namespace, dest) and getattr(namespace, dest) != parser.get_default(dest)
        },
    }


def dump(output: Path) -> None:
    """Write the table of the vLLM installed in this Python to `output` (what `refresh` runs)."""
    top, parser = _serve_parser()
    table = {
        "format": TABLE_FORMAT,
        "generator": GENERATOR,
        "parser": "vllm.entrypoints.cli.serve.ServeSubcommand().subparser_init(), under the `vllm` parser",
        "python": f"{sys.version_info.major}.{sys.version_info.minor}",
        "vllm": importlib.metadata.version("vllm"),
        "positionals": [
            {"dest": action.dest, "nargs": 1 if action.nargs is None else action.nargs}
            for action in parser._actions
            if not action.option_strings
        ],
        "options": _option_table(parser),
        "probes": {
            probe.name: {"argv": list(probe.argv), **_real_verdict(top, parser, probe.argv)} for probe in PROBES
        },
    }
    output.write_text(render_table(table))


# ---------------------------------------------------------------- refresh (runs in the project's environment)


@contextlib.contextmanager
def _stub_library() -> Iterator[Path]:
    """A directory with libcuda.so.1 compiled from the vendored stub."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise ValueError("no C compiler (cc or gcc) on PATH to build the libcuda stub")
    with tempfile.TemporaryDirectory(prefix="vllm-args-") as directory:
        built = subprocess.run(
            [compiler, "-shared", "-fPIC", "-o", f"{directory}/libcuda.so.1", str(STUB_SOURCE)],
            capture_output=True,
            text=True,
            check=False,
        )
        if built.returncode != 0:
            raise ValueError(f"{compiler} could not build {STUB_SOURCE.name}: {_last_line(built.stderr)}")
        yield Path(directory)


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


def refresh(version: str, python: Path, directory: Path = DIRECTORY, timeout: float = 1800) -> Path:
    """Regenerate the table of `version` with `python`, a Python with vllm==`version` installed."""
    if not VERSION_PATTERN.fullmatch(version):
        raise ValueError(f"{version!r} is not a vLLM release version like 0.33.0")
    if not (python.is_file() and os.access(python, os.X_OK)):
        raise ValueError(f"{python}: not a Python executable (VLLM_PYTHON: a Python with vllm=={version})")
    environment = {name: value for name, value in os.environ.items() if not name.startswith("VLLM_")}
    with _stub_library() as stub:
        output = stub / "table.json"
        environment.update(
            LD_LIBRARY_PATH=os.pathsep.join(filter(None, [str(stub), environment.get("LD_LIBRARY_PATH")])),
            PYTHONHASHSEED="0",
            VLLM_LOGGING_LEVEL="ERROR",
        )
        run = subprocess.run(
            [str(python), "-m", "schemas.vllm_args_refresh", "dump", str(output)],
            cwd=ROOT,
            env=environment,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if run.returncode != 0 or not output.is_file():
            raise ValueError(f"{python} could not build vLLM's serve parser: {_last_line(run.stderr)}")
        table = json.loads(output.read_text())
    if table["vllm"] != version:
        raise ValueError(f"{python} has vllm {table['vllm']}, not {version}")
    path = table_path(version, directory)
    path.write_text(render_table(table))
    # the pack's copy follows the tables it is made from: beside them when they are not the vendored ones
    write_pack_flags(directory, PACK_FLAGS if directory == DIRECTORY else directory / PACK_FLAGS.name)
    return path


def write_pack_flags(directory: Path = DIRECTORY, output: Path = PACK_FLAGS) -> Path:
    """The policy pack's copy of every vendored table (`pack-flags`; `refresh` writes it too)."""
    output.write_text(render_pack_flags(pack_flags(directory)))
    return output


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m schemas.vllm_args_refresh", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    refresh_parser = commands.add_parser("refresh", help="regenerate the table of one vLLM release")
    refresh_parser.add_argument("version", help="the vLLM release, like 0.33.0")
    refresh_parser.add_argument("--python", type=Path, required=True, help="a Python with that vLLM installed")
    check_parser = commands.add_parser("check", help="check `vllm serve` arguments against a table")
    check_parser.add_argument("version")
    check_parser.add_argument("args", nargs=argparse.REMAINDER, help="the arguments after `vllm serve` (after --)")
    commands.add_parser("pack-flags", help="write the policy pack's copy of the tables (policies/vllm_flags.json)")
    dump_parser = commands.add_parser("dump", help="(run by refresh inside vLLM's environment)")
    dump_parser.add_argument("output", type=Path)
    args = parser.parse_args(argv)
    try:
        if args.command == "refresh":
            print(f"wrote {refresh(args.version, args.python).relative_to(ROOT)} and {PACK_FLAGS.relative_to(ROOT)}")
        elif args.command == "pack-flags":
            print(f"wrote {write_pack_flags().relative_to(ROOT)}")
        elif args.command == "check":
            problems = check_serve_args(args.args[1:] if args.args[:1] == ["--"] else args.args, args.version)
            for problem in problems:
                print(problem)
            return 1 if problems else 0
        else:
            dump(args.output)
    except (OSError, ValueError, subprocess.TimeoutExpired) as error:
        print(f"vllm-args: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
