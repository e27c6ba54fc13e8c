from __future__ import annotations

import gc
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

try:
    import fcntl
except ImportError:  # not on Windows: there each worker renders its own
    fcntl = None  # type: ignore[assignment]
import yaml

from tests.rendered import RENDER_TIMEOUT_SECONDS, ROOT, STACK_FILES, CommandRun, RenderedStack, run_render

# The shipped environments, for tests that assert what a preset gives.
STACKS = ("dev", "staging", "prod")

RenderStack = Callable[..., RenderedStack]


def pytest_report_header() -> str:
    return "stack files checked: " + ", ".join(f"Pulumi.{name}.yaml" for name in STACK_FILES)


CHECKOV = ROOT / ".tools" / "checkov" / "bin" / "checkov"
CHECKOV_TIMEOUT_SECONDS = 300
BACKGROUND_FIXTURES = frozenset({"command_line_render", "checkov_report"})


class CommandLineRender:
    """`render` of every stack file plus one that violates a mandatory policy, as a real process,
    then checkov over the stack files' manifests (from its own environment, `make checkov`).

    Started before the tests run, it works on a core of its own while the suite imports the
    providers and renders in-process; the tests that need it run last. The in-process renders are
    byte-identical to this one (test_render checks), so checkov scans exactly what the suite asserts
    on. Its outcome lands in `result.json` in its directory, which is all the tests read: under
    pytest-xdist the controller starts the one background run and every worker reads that file."""

    VIOLATING = "violating"
    RESULT = "result.json"

    def __init__(self, checkov_cache: Path | None = None) -> None:
        self.checkov_cache = checkov_cache
        self.directory = Path(tempfile.mkdtemp(prefix="render-cli-"))
        violating = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
        violating["config"]["gke-b200-serving:engine"] = {"gpuMemoryUtilization": 0.95}
        violating_file = self.directory / f"Pulumi.{self.VIOLATING}.yaml"
        violating_file.write_text(yaml.safe_dump(violating))
        out = self.directory / "out"
        render = [sys.executable, "-m", "commands.render.command"]
        command = [*render, *STACK_FILES, str(violating_file), "--out", str(out)]
        self.process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.scanner: subprocess.Popen[str] | None = None
        self.stopping = False
        # Held while checkov starts and while stopping: a scan never starts after stop() looked for one
        # to kill (it would run to its end, minutes without a cached report, while the session waits).
        self.starting = threading.Lock()
        self.worker = threading.Thread(target=self._render_then_scan, args=(out,), daemon=True)
        self.worker.start()

    def _render_then_scan(self, out: Path) -> None:
        """Whatever happens, a result file: the tests waiting for it fail with the reason, not a timeout."""
        result: dict[str, Any]
        try:
            stdout, stderr = self.process.communicate(timeout=RENDER_TIMEOUT_SECONDS)
            result = {"returncode": self.process.returncode, "stdout": stdout, "stderr": stderr}
            if self.stopping:
                result["error"] = "the session ended before the command-line render finished"
            elif CHECKOV.exists():
                result["checkov"] = self._scan(out)
        except BaseException:  # reported to the waiting tests
            result = {"error": f"the command-line render or checkov failed:\n{traceback.format_exc()}"}
        written = self.directory / f".{self.RESULT}"
        written.write_text(json.dumps(result))
        written.rename(self.directory / self.RESULT)

    def _scan(self, out: Path) -> str:
        """checkov's JSON report on the stack files' manifests, sealed off from the user's checkov
        settings (CKV_/BC_/PRISMA_ variables, a .checkov.yaml in the home or working directory).
        The report is then a function of checkov's version, its arguments and the files scanned:
        with pytest's cache, the report on the same bytes is reused (`pytest --cache-clear` rescans)."""
        arguments = ["--skip-path", self.VIOLATING, "--framework", "kubernetes", "--skip-download", "--output", "json"]
        installed = sorted(path.name for path in CHECKOV.parent.parent.glob("lib/python*/site-packages/checkov-*"))
        key = hashlib.sha256(json.dumps([installed, arguments]).encode())
        for path in sorted(out.rglob("*")):
            if path.is_file() and self.VIOLATING not in path.relative_to(out).parts:
                key.update(f"\0{path.relative_to(out)}\0".encode() + path.read_bytes())
        cached = self.checkov_cache / f"{key.hexdigest()}.json" if self.checkov_cache else None
        if cached is not None and cached.exists():
            return cached.read_text()
        with tempfile.TemporaryDirectory() as home:
            environment = {
                name: value for name, value in os.environ.items() if not name.startswith(("CKV_", "BC_", "PRISMA_"))
            }
            with self.starting:
                if self.stopping:
                    raise RuntimeError("the session ended before checkov started")
                self.scanner = subprocess.Popen(
                    [str(CHECKOV), "--directory", str(out), *arguments],
                    cwd=home,
                    env={**environment, "HOME": home},
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            report, errors = self.scanner.communicate(timeout=CHECKOV_TIMEOUT_SECONDS)
        if self.scanner.returncode not in (0, 1) or not _is_checkov_report(report):
            raise RuntimeError(f"checkov exited {self.scanner.returncode} without a report: {errors[-2000:]}")
        if cached is not None:
            _replace_cached_report(cached, report)
        return report

    def stop(self) -> None:
        with self.starting:
            self.stopping = True
        for process in (self.process, self.scanner):
            if process is not None and process.poll() is None:
                process.kill()
        self.worker.join(CHECKOV_TIMEOUT_SECONDS)
        shutil.rmtree(self.directory, ignore_errors=True)


def _is_checkov_report(text: str) -> bool:
    try:
        report = json.loads(text)
    except ValueError:
        return False
    reports = report if isinstance(report, list) else [report]
    return bool(reports) and all(isinstance(item, dict) and {"results", "summary"} <= item.keys() for item in reports)


def _replace_cached_report(cached: Path, report: str) -> None:
    """Keep one report (the latest manifests'); the cache is best effort (`--cache-clear` may remove it)."""
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        for old in cached.parent.glob("*.json"):
            old.unlink(missing_ok=True)
        partial = cached.with_suffix(".partial")
        partial.write_text(report)
        partial.rename(cached)
    except OSError:
        pass


def finished(directory: Path) -> dict[str, Any]:
    """The background run's result, once it is there."""
    deadline = time.monotonic() + RENDER_TIMEOUT_SECONDS + CHECKOV_TIMEOUT_SECONDS
    result = directory / CommandLineRender.RESULT
    while not result.exists():
        assert time.monotonic() < deadline, "the command-line render or checkov did not finish"
        time.sleep(0.1)
    finished_run: dict[str, Any] = json.loads(result.read_text())
    if "error" in finished_run:
        pytest.fail(finished_run["error"])
    return finished_run


COMMAND_LINE_RENDER = pytest.StashKey[CommandLineRender]()
BACKGROUND_DIRECTORY = pytest.StashKey[Path]()
WORKER_INPUT_KEY = "command_line_render"


def _start_background(config: pytest.Config) -> None:
    cache = getattr(config, "cache", None)  # None with `-p no:cacheprovider`
    background = CommandLineRender(cache.mkdir("checkov") if cache is not None else None)
    config.stash[COMMAND_LINE_RENDER] = background
    config.stash[BACKGROUND_DIRECTORY] = background.directory


def _distributes_tests(config: pytest.Config) -> bool:
    """This process is the pytest-xdist controller of a run that executes tests (xdist's own test)."""
    return (
        not config.option.collectonly and config.getoption("dist", "no") != "no" and bool(config.getoption("tx", None))
    )


def _may_select_a_waiting_test(config: pytest.Config) -> bool:
    """Whether a test file this run collects from names a fixture of the background run, read as text
    before any worker collects (the controller collects nothing): `pytest -n 2 tests/components` does
    not render every stack file and start checkov on a core of its own. A path that is not a file or
    folder here counts as naming one; a test the reading misses still gets the run, from its worker."""
    for argument in config.args:
        path = Path(config.invocation_params.dir, argument.split("::")[0])
        files = sorted(path.rglob("test*.py")) if path.is_dir() else [path]
        for file in files:
            try:
                text = file.read_text(errors="replace")
            except OSError:
                return True
            if any(name in text for name in BACKGROUND_FIXTURES):
                return True
    return False


def pytest_configure(config: pytest.Config) -> None:
    worker_input = getattr(config, "workerinput", None)
    if worker_input is not None and WORKER_INPUT_KEY in worker_input:
        config.stash[BACKGROUND_DIRECTORY] = Path(worker_input[WORKER_INPUT_KEY])
    elif worker_input is None and _distributes_tests(config) and _may_select_a_waiting_test(config):
        _start_background(config)  # one run for every worker


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist: tell each worker where the controller's background run writes its result."""
    if BACKGROUND_DIRECTORY in node.config.stash:
        node.workerinput[WORKER_INPUT_KEY] = str(node.config.stash[BACKGROUND_DIRECTORY])


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run the tests that wait for the background run last, and start it here if no controller did."""
    waiting = [item for item in items if BACKGROUND_FIXTURES & set(getattr(item, "fixturenames", ()))]
    if waiting and not config.option.collectonly:
        if BACKGROUND_DIRECTORY not in config.stash:
            _start_background(config)
        items[:] = [item for item in items if item not in waiting] + waiting


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown() -> None:
    """After each test, collect what it left and freeze the rest (the pattern of the `gc.freeze`
    documentation). A worker keeps every session fixture's renders and the tracer's caches for the whole
    run, and each full collection (the runtime's, and the one the setting tracer makes after its runs)
    rescanned all of them: 11% of the suite's CPU went to collections. Frozen, a collection looks only at
    what the running test made. Garbage is collected first, so nothing but what outlives its test stays."""
    gc.collect()
    gc.freeze()


def pytest_unconfigure(config: pytest.Config) -> None:
    if COMMAND_LINE_RENDER in config.stash:
        config.stash[COMMAND_LINE_RENDER].stop()


@pytest.fixture(scope="session")
def command_line_render(pytestconfig: pytest.Config) -> Iterator[tuple[CommandRun, Path]]:
    """The finished command-line render and its output directory (one folder per stack)."""
    directory = pytestconfig.stash[BACKGROUND_DIRECTORY]
    result = finished(directory)
    yield CommandRun(result["returncode"], result["stdout"], result["stderr"]), directory / "out"


@pytest.fixture(scope="session")
def checkov_report(pytestconfig: pytest.Config) -> list[dict[str, Any]]:
    """checkov's JSON reports on the manifests of every stack file (file paths start /STACK/)."""
    result = finished(pytestconfig.stash[BACKGROUND_DIRECTORY])
    if "checkov" not in result:
        pytest.fail(f"{CHECKOV.relative_to(ROOT)} is missing: run `make checkov` (make test does)")
    report = json.loads(result["checkov"])
    return report if isinstance(report, list) else [report]


def _rendered_once(out: Path, args: list[str]) -> None:
    run = run_render(*args, "--out", str(out))
    assert run.returncode == 0, f"render {' '.join(args)} failed ({run.returncode}): {run.stderr}"


def _shared_render(shared: Path, key: str, args: list[str]) -> Path:
    """The render of `args` made once for every pytest-xdist worker of this run: the first worker
    to want it renders it under a lock; the others wait, then read the same folder."""
    shared.mkdir(exist_ok=True)
    out = shared / key
    with (shared / f"{key}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not out.is_dir():
            partial = shared / f"{key}.partial"
            shutil.rmtree(partial, ignore_errors=True)
            _rendered_once(partial, args)
            partial.rename(out)
    return out


@pytest.fixture(scope="session")
def render_stack(tmp_path_factory: pytest.TempPathFactory) -> RenderStack:
    """Render a stack (or a stack file) once per session, in this process, through `render`'s main().
    Under pytest-xdist the workers share the renders (keyed by stack name and the stack file's
    bytes): a render every worker wants is made once, not once per worker."""
    cache: dict[tuple[str, str | None], RenderedStack] = {}
    # Workers of one run share the parent of their base temporary folders (pytest-N/popen-gwK).
    shared = tmp_path_factory.getbasetemp().parent / "shared-renders" if os.environ.get("PYTEST_XDIST_WORKER") else None

    def render(stack: str, config_file: Path | None = None) -> RenderedStack:
        key = (stack, str(config_file) if config_file else None)
        if key not in cache:
            args = [stack] if config_file is None else [stack, "--config-file", str(config_file)]
            if shared is not None and fcntl is not None:
                content = hashlib.sha256(config_file.read_bytes()).hexdigest()[:16] if config_file else "stack-file"
                cache[key] = RenderedStack(_shared_render(shared, f"{stack}-{content}", args))
            else:
                out = tmp_path_factory.mktemp(f"render-{stack}")
                _rendered_once(out, args)
                cache[key] = RenderedStack(out)
        return cache[key]

    return render


@pytest.fixture(scope="session", params=STACK_FILES)
def stack(request: pytest.FixtureRequest, render_stack: RenderStack) -> RenderedStack:
    """Every stack file in the repository, rendered."""
    return render_stack(request.param)


@pytest.fixture(scope="session")
def dev(render_stack: RenderStack) -> RenderedStack:
    return render_stack("dev")


@pytest.fixture(scope="session")
def staging(render_stack: RenderStack) -> RenderedStack:
    return render_stack("staging")


@pytest.fixture(scope="session")
def prod(render_stack: RenderStack) -> RenderedStack:
    return render_stack("prod")
