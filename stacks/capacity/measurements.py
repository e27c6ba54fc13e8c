"""Measured throughput: the one file every figure of the planner comes from, and how a stack finds its own.

`stacks/capacity/measurements.yaml` holds the measurements: the published write-up's runs and every result a user
records with `bench-compare --record`. Each names its source and the configuration it was measured at
(`Configuration`: profile, checkpoint, vLLM release, every engine setting that changes throughput, the load shape, the
routing). A stack gets a figure only from the entries whose configuration equals its own, field for field; an entry
with a field its source does not give (`unknown`) is kept as a record and never matches.
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime
import functools
import math
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union, get_args, get_type_hints

from pydantic import BeforeValidator, Field, ValidationError, create_model, field_validator, model_validator
from pydantic.alias_generators import to_camel

from common import input_files
from common.model_ranges import allowed_range, bound_words
from common.sources import lookalike_host, uncitable
from common.text import kind_of_value
from components import startup_report
from components.capacity import CAPACITY_KIND_PATTERN
from components.vllm import ENGINE_FIELDS, EngineFlags
from policies.redaction import secret_kinds
from schemas.vllm_releases import image_release
from stacks.config.base import ConfigModel
from stacks.config.engine import capture_size, default_capture_size
from stacks.config.pattern_words import allowed_by
from stacks.config.quoting import quote
from stacks.config.routing import RoutingMode
from stacks.config.stack import StackConfig

MEASUREMENTS_FILE = Path(__file__).resolve().parent / "measurements.yaml"
UNKNOWN = "unknown"
# The repository's file is a few KiB; a measurements file is read bounded like every input.
MAX_MEASUREMENTS_BYTES = 1024 * 1024
# Aliases share one object when loaded; what reads the document walks each use, so they count expanded.
MAX_MEASUREMENTS_NODES = 100_000
Unknown = Literal["unknown"]
MEASUREMENT_ID = r"^[a-z0-9][a-z0-9-]{0,62}$"


# The engine settings a measurement matches on: the engine's one field list (components/vllm.py
# ENGINE_FIELDS, in its order), under the file's own names where they differ, less those that leave
# throughput alone or are matched another way.
MEASURED_AS = {
    "enable_expert_parallel": "expert_parallel",
    "enable_prefix_caching": "prefix_caching",
    "enable_chunked_prefill": "chunked_prefill",
}
NOT_MEASURED = frozenset(
    {
        "image",  # matched by its release (vllmRelease)
        "image_digest",
        "port",
        # splits chat output text after generation on the API server; the benchmark's plain
        # /v1/completions requests never run it (docs/profiles.md)
        "reasoning_parser",
        "cpu",
        "memory",
        "ephemeral_storage",
    }
)
MEASURED_ENGINE_FIELDS = tuple(name for name in ENGINE_FIELDS if name not in NOT_MEASURED)
# a setting a measurement writes otherwise than the flag's own type
WRITTEN_AS: dict[str, Any] = {
    "speculative": str,
    "stream_interval": int,
    "extra_args": list[str],
    "extra_env": dict[str, str],
}
DESCRIBED_AS = {
    "speculative": "`off` or `mtp-N` (engine.speculative).",
    "attention_backend": "engine.attentionBackend (null: vLLM's choice).",
    "max_cudagraph_capture_size": "engine.maxCudagraphCaptureSize as a number; null: vLLM's default capture sizes "
    "(also an explicit size equal to 0.19.0's default, which captures the same graphs).",
    "stream_interval": "engine.streamInterval (1, vLLM's default, when the stack leaves it out).",
}
# settings added after the first measurements were written: what an entry without them ran at
WRITTEN_BEFORE = {"max_cudagraph_capture_size": None, "stream_interval": 1}


def _measured_field(name: str) -> tuple[Any, Any]:
    """An engine setting as a measurement's field: its type, `unknown` allowed, and its description."""
    written = WRITTEN_AS.get(name, get_type_hints(EngineFlags)[name])
    nullable = type(None) in get_args(written)
    if nullable:
        written = Union[tuple(kind for kind in get_args(written) if kind is not type(None))]  # noqa: UP007
    annotation = written | Unknown | None if nullable else written | Unknown
    description = DESCRIBED_AS.get(name, f"engine.{to_camel(name)}")
    if name in WRITTEN_BEFORE:
        return annotation, Field(default=WRITTEN_BEFORE[name], description=description)
    return annotation, Field(description=description)


class _Measured(ConfigModel):
    profile: str = Field(description="The serving profile (`profile`).")
    model: str = Field(description="The checkpoint (weights.model).")
    vllm_release: str = Field(description="The vLLM release the figures stand for (engine.image's tag).")


if TYPE_CHECKING:

    class _MeasuredEngine(_Measured):
        """The engine settings, as the type checker sees them: built at import from the one list."""

        def __getattr__(self, name: str) -> Any: ...

else:
    _MeasuredEngine = create_model(
        "_MeasuredEngine",
        __base__=_Measured,
        **{MEASURED_AS.get(name, name): _measured_field(name) for name in MEASURED_ENGINE_FIELDS},
    )


class Configuration(_MeasuredEngine):
    """What a measurement was taken at; a stack's own is computed by `configuration_of`.
    `unknown` marks a field its source does not give. The engine settings between `vllmRelease` and
    `dataset` are the engine's field list (MEASURED_ENGINE_FIELDS)."""

    dataset: str | Unknown = Field(description="The benchmark's prompts (benchmark.dataset).")
    input_tokens: int | Unknown = Field(description="Mean prompt tokens (benchmark.inputLen).")
    output_tokens: int | Unknown = Field(description="Mean output tokens (benchmark.outputLen).")
    range_ratio: float | Unknown = Field(description="Spread of the lengths (benchmark.rangeRatio).")
    ignore_eos: bool | Unknown = Field(description="Outputs run to their length (benchmark.ignoreEos).")
    concurrency_per_node: float | Unknown = Field(description="Concurrent requests per node (workload).")
    max_prompt_tokens: int | Unknown = Field(description="Longest prompt the stack is sized for (workload).")
    max_output_tokens: int | Unknown = Field(description="Longest output the stack is sized for (workload).")
    routing: Literal["clusterip", "gateway"] | Unknown = Field(description="routing.mode")
    picker: str | Unknown | None = Field(
        description="The Endpoint Picker image without its digest (routing.gateway.eppImage), gateway routing only."
    )
    endpoint_per_rank: bool | Unknown | None = Field(
        default=None,
        description="routing.gateway.endpointPerRank, gateway routing only: a `vllm serve` per data-parallel rank "
        "(true) or one for all ranks (false, the write-up's layout) start and carry load differently. Left out of an "
        "entry recorded before it was written: unknown with gateway routing (that entry then matches no stack).",
    )

    @model_validator(mode="before")
    @classmethod
    def _layout_written_before(cls, data: Any) -> Any:
        """An entry without `endpointPerRank` was recorded before the layout was written: with gateway routing either
        layout may have run (the per-rank one is the default since it exists), so it is unknown; else it has none."""
        if not isinstance(data, dict) or "endpointPerRank" in data or "endpoint_per_rank" in data:
            return data
        return {**data, "endpointPerRank": None if data.get("routing") == RoutingMode.clusterip.value else UNKNOWN}

    @property
    def complete(self) -> bool:
        return UNKNOWN not in self.model_dump(mode="json").values()


# Upper bounds of the figures the planner computes with: far above any real run, and low enough that
# every figure derived from them stays finite (1e308 tokens/s once made the plan's figures infinite).
MAX_RATE = 1e12
# ... and a lower bound on a rate, far below any real run, that keeps their ratios finite and non-zero (a
# recorded 5e-324 tokens/s once made the completion caveat divide by zero in every later plan).
MIN_RATE = 1e-3
MAX_MILLISECONDS = 1e9
MAX_REQUESTS = 10**15
MAX_SECONDS = 1e7
MAX_REPORTED_PODS = 100_000


# PyYAML reads YAML 1.2's `9.5e4` as text, which the strict model refused as "not a valid number".
YAML_NUMBER = BeforeValidator(input_files.yaml_12_number)
# Seconds of a pod's start-up (a phase's time since its creation, or a span of it).
Seconds = Annotated[float, Field(ge=0, le=MAX_SECONDS), YAML_NUMBER]


class Run(ConfigModel):
    """One benchmark run at one node count (a figure left out was not reported)."""

    nodes: Annotated[int, Field(ge=1, le=10_000)] = Field(description="A4 nodes serving.")
    total_tokens_per_second: Annotated[float, Field(ge=MIN_RATE, le=MAX_RATE), YAML_NUMBER] = Field(
        description="Input + output tokens per second."
    )
    output_tokens_per_second: Annotated[float | None, Field(ge=MIN_RATE, le=MAX_RATE), YAML_NUMBER] = Field(
        default=None, description="Output only."
    )
    requests_per_second: Annotated[float | None, Field(ge=MIN_RATE, le=MAX_RATE), YAML_NUMBER] = Field(
        default=None, description="Completed requests per second, as the benchmark counted them."
    )
    tpot_median_ms: Annotated[float | None, Field(gt=0, le=MAX_MILLISECONDS), YAML_NUMBER] = Field(
        default=None, description="Median time per token."
    )
    ttft_median_ms: Annotated[float | None, Field(gt=0, le=MAX_MILLISECONDS), YAML_NUMBER] = Field(
        default=None, description="Median time to 1st token."
    )
    completed: Annotated[int | None, Field(ge=0, le=MAX_REQUESTS)] = Field(
        default=None, description="Completed requests."
    )
    failed: Annotated[int | None, Field(ge=0, le=MAX_REQUESTS)] = Field(default=None, description="Failed requests.")

    @model_validator(mode="after")
    def _one_run_could_give_them(self) -> Run:
        """Figures no run gives together are a typo or an edit: every figure read from them would be untrue."""
        total, output, rate = self.total_tokens_per_second, self.output_tokens_per_second, self.requests_per_second
        if output is not None and output > total:
            raise ValueError(
                f"outputTokensPerSecond {output:,.0f} is above totalTokensPerSecond {total:,.0f}; allowed: "
                "at most the total (input + output)"
            )
        if rate is not None and rate > total:
            raise ValueError(
                f"requestsPerSecond {rate:,.0f} is above totalTokensPerSecond {total:,.0f}; allowed: at most "
                "the total (a request has at least one token)"
            )
        if self.completed == 0:
            raise ValueError("completed is 0 with a throughput; allowed: the requests the run completed (at least 1)")
        return self


class StartupConditions(ConfigModel):
    """What decides a new replica's start-up besides the configuration: a report stands for a stack of the same."""

    capacity_sources: Annotated[
        list[Annotated[str, Field(pattern=CAPACITY_KIND_PATTERN)]], Field(min_length=1, max_length=8)
    ] = Field(description="capacity.sources' types, in order (the node's provisioning).")
    compile_cache: bool = Field(description="startup.compileCache.enabled (torch.compile read, not run).")
    image_mirror: bool = Field(description="startup.imageMirror.enabled (the image pull).")
    weights_read: Annotated[str, Field(pattern=r"^[0-9]{1,7} (s|MiB/s)$")] = Field(
        description="weights.targetLoadSeconds (`60 s`: each node reads in it), else each serving disk's `2400 MiB/s`."
    )

    @model_validator(mode="before")
    @classmethod
    def _as_first_recorded(cls, data: Any) -> Any:
        """`weightsReadMibps: N` as bench-compare --record first wrote it (at 8c62d31, an hour): `N MiB/s`."""
        if not isinstance(data, dict) or "weightsReadMibps" not in data or "weightsRead" in data:
            return data
        return {key: value for key, value in data.items() if key != "weightsReadMibps"} | {
            "weightsRead": f"{data['weightsReadMibps']} MiB/s"
        }


def startup_conditions(config: StackConfig) -> StartupConditions:
    cache, mirror = config.startup.compile_cache.enabled, config.startup.image_mirror.enabled
    kinds, weights = [str(source.type) for source in config.capacity.sources], config.weights
    # a disk sized by targetLoadSeconds grows with the nodes that read it: each reads in the same time
    sized = weights.target_load_seconds is not None and weights.checkpoint_gib is not None
    read = f"{weights.target_load_seconds} s" if sized else f"{config.serving_throughput_mibps} MiB/s"
    return StartupConditions(capacity_sources=kinds, compile_cache=cache, image_mirror=mirror, weights_read=read)


# The planner's phases a pod's own span times: (the report's phase that ends it, the one it starts from or None).
SPANS: dict[str, tuple[str, str | None]] = {
    "node": ("scheduledSeconds", None),
    "imagePull": ("imagePulledSeconds", "scheduledSeconds"),
    "engineStart": ("engineReadySeconds", "containerStartedSeconds"),
    "pod": ("readySeconds", "scheduledSeconds"),
}


class StartupPhases(ConfigModel):
    """The serving pods' start-up as the benchmark Job's start-up report gave it (STARTUP_PHASES lines,
    components/startup_report.py): per phase, seconds since each pod was created, the median and the largest over the
    pods that reported it; per planner phase (`SPANS`), the median of each pod's own span."""

    pods: Annotated[int, Field(ge=1, le=MAX_REPORTED_PODS)] = Field(description="Serving pods the report covered.")
    cold_pods: Annotated[int | None, Field(ge=0, le=MAX_REPORTED_PODS)] = Field(
        default=None, description="Of them, pods that started cold, on a node made for them with the image pulled."
    )
    median_seconds: dict[str, Seconds] = Field(description="Median per phase.")
    max_seconds: dict[str, Seconds] = Field(description="Largest per phase.")
    median_span_seconds: dict[str, Seconds] | None = Field(default=None, description="Median of each pod's own span.")
    max_span_seconds: dict[str, Seconds] | None = Field(default=None, description="Largest of each pod's own span.")
    conditions: StartupConditions | None = Field(
        default=None, description="What they started under (none: no stack's)."
    )

    @model_validator(mode="after")
    def _known_phases(self) -> StartupPhases:
        if self.cold_pods is not None and self.cold_pods > self.pods:
            raise ValueError(f"startup: coldPods {self.cold_pods} is more than pods {self.pods}")
        for name in (*self.median_seconds, *self.max_seconds):
            if name not in startup_report.PHASES:
                raise ValueError(f"startup: unknown phase {name!r}; allowed: {', '.join(startup_report.PHASES)}")
            if self.median_seconds.get(name, 0) > self.max_seconds.get(name, math.inf):
                raise ValueError(f"startup: the median of {name} is above its largest value; allowed: at most it")
        for name, seconds in [*(self.median_span_seconds or {}).items(), *(self.max_span_seconds or {}).items()]:
            if name not in SPANS:
                raise ValueError(f"startup: unknown span {name!r}; allowed: {', '.join(SPANS)}")
            if seconds > self.max_seconds.get(SPANS[name][0], math.inf):  # no pod's span is longer than its end
                raise ValueError(f"startup: the {name} span is above the largest {SPANS[name][0]}; allowed: at most it")
        return self


def latest_run_date() -> datetime.date:
    """The latest date a run may carry: today somewhere on Earth (UTC+14 is a day ahead of UTC)."""
    return datetime.datetime.now(datetime.UTC).date() + datetime.timedelta(days=1)


def source_problem(source: str, shown_in: str) -> str | None:
    """Why `source` cannot be a measurement's source, or None: it holds a secret (which `shown_in`, the
    place that would show it), or names what a reader of the plan cannot open (`common.sources.uncitable`)."""
    kinds = secret_kinds(source)
    if kinds:
        return f"holds {kinds[0]}, which {shown_in}; say who measured it and where it is published"
    hidden = next((char for char in source if unicodedata.category(char) in ("Cc", "Cf") or char in "`<>["), None)
    if hidden is not None:
        # a bidirectional override, a zero-width character or markup (plan.md prints it) shows another text
        return (
            f"holds the character U+{ord(hidden):04X} ({unicodedata.name(hidden, 'a control character')}), which shows "
            "a reader another text than it holds (a code span, HTML, a link); allowed: printable text without ` < > ["
        )
    found = uncitable(source)
    if found:
        return (
            f"names {quote(found[0], limit=80)}, which a reader of the plan cannot open; "
            "allowed: a public URL or a title"
        )
    host = lookalike_host(source)
    if host is not None:
        # a letter of another script that looks like a Latin one (Cyrillic o in cloud.google.com) names another site
        return (
            f"names the host {quote(host, limit=80)}, which holds letters outside ASCII that may look like others; "
            "allowed: a host in ASCII (an internationalized name as its xn-- form)"
        )
    return None


class Measurement(ConfigModel):
    """A set of runs of one configuration, with where they come from."""

    id: Annotated[str, Field(pattern=MEASUREMENT_ID)] = Field(description="Stable name, cited by the planner.")
    source: Annotated[str, Field(min_length=1)] = Field(description="Who measured it, where it is published.")
    date: Annotated[str, Field(pattern=r"^\d{4}-\d{2}(-\d{2})?$")] = Field(description="When (YYYY-MM[-DD]).")
    measured_release: Annotated[str, Field(pattern=r"^\d+\.\d+\.\d+$")] = Field(
        description="The vLLM release it actually ran on (like 0.19.0)."
    )
    note: str = Field(default="", description="What a reader must know to trust or use it.")
    configuration: Configuration = Field(description="What was measured.")
    runs: Annotated[list[Run], Field(min_length=1)] = Field(description="One per node count.")
    startup: StartupPhases | None = Field(
        default=None, description="The serving pods' start-up phases the run's start-up report gave."
    )

    @field_validator("source")
    @classmethod
    def _citable(cls, value: str) -> str:
        problem = source_problem(value, shown_in="plan.md would show")
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("date")
    @classmethod
    def _past_date(cls, value: str) -> str:
        """A real day or month, not after today anywhere (`latest_run_date`): a run is recorded once it has run."""
        year, month, *day = (int(part) for part in value.split("-"))
        try:
            first = datetime.date(year, month, day[0] if day else 1)
        except ValueError:
            raise ValueError(f"{value} is no day of the calendar; allowed: a date YYYY-MM or YYYY-MM-DD") from None
        if first > latest_run_date():
            raise ValueError(f"{value} is in the future; allowed: the date the run was made, today or earlier")
        return value

    @field_validator("date", mode="before")
    @classmethod
    def _written_date(cls, value: Any) -> Any:
        """An unquoted `date: 2026-11-20` reaches here as a YAML date: keep its ISO text."""
        return value.isoformat() if isinstance(value, datetime.date) else value

    @model_validator(mode="after")
    def _one_run_per_node_count(self) -> Measurement:
        counts = [run.nodes for run in self.runs]
        if len(set(counts)) != len(counts):
            raise ValueError(f"measurement {self.id}: two runs at the same node count")
        return self


class MeasurementsFile(ConfigModel):
    measurements: list[Measurement] = Field(description="Every measurement, oldest first.")

    @model_validator(mode="after")
    def _unique_ids(self) -> MeasurementsFile:
        ids = [measurement.id for measurement in self.measurements]
        if len(set(ids)) != len(ids):
            raise ValueError("two measurements share an id")
        return self


class MeasurementsError(ValueError):
    """The measurements file cannot be read; the message is one line naming the file."""


UNION_MEMBERS = ("float", "int", "str", "bool")
# pydantic's bound errors, and the bound's name in the error's context
BOUNDS = {"greater_than": "gt", "greater_than_equal": "ge", "less_than": "lt", "less_than_equal": "le"}


def validation_line(error: ValidationError) -> str:
    first = error.errors(include_url=False)[0]
    # not the member of a union pydantic tried (`gpuMemoryUtilization.float`): no key of the file
    where = ".".join(str(part) for part in first["loc"] if part not in UNION_MEMBERS) or "the document"
    if first["type"] == "string_pattern_mismatch":
        allowed = allowed_by(str(first.get("ctx", {}).get("pattern", "")))
        return f"{where}: {quote(first.get('input'))} is not allowed; allowed: {allowed}"
    if first["type"] in BOUNDS:  # pydantic's "Input should be less than ..." names neither the value nor a range
        name = BOUNDS[first["type"]]
        allowed = allowed_range(MeasurementsFile, first["loc"]) or f"; allowed: {bound_words(name, first['ctx'][name])}"
        return f"{where}: {quote(first.get('input'))} is out of range{allowed}"
    number = first["type"].startswith(("int_", "float_", "finite_number"))  # of another type: say the range
    allowed = allowed_range(MeasurementsFile, first["loc"]) if number else ""
    if number and not allowed:
        unknown = any("literal['unknown']" in map(str, other["loc"]) for other in error.errors(include_url=False))
        allowed = f" (got {quote(first.get('input'))}); allowed: a finite number{' or unknown' if unknown else ''}"
    return f"{where}: {first['msg'].removeprefix('Value error, ')}{allowed}"


def parse(text: str, where: str) -> MeasurementsFile:
    """The measurements in a YAML text, or MeasurementsError naming `where`."""
    try:
        document = input_files.parse_yaml(text, where, MAX_MEASUREMENTS_NODES)
    except input_files.InputError as error:
        raise MeasurementsError(str(error)) from None
    if not isinstance(document, dict) or document.get("measurements", []) is None:
        kind = "empty" if document is None else kind_of_value(document)
        what = "`measurements:` is empty" if isinstance(document, dict) else f"the document is {kind}"
        raise MeasurementsError(
            f"{where}: {what}; allowed: `measurements:` and a list (`measurements: []` for none yet)"
        )
    try:
        return MeasurementsFile.model_validate(document, by_alias=True, by_name=False)
    except ValidationError as error:
        raise MeasurementsError(f"{where}: {validation_line(error)}") from None


def read(path: Path) -> str:
    """The file's text: a regular file of at most MAX_MEASUREMENTS_BYTES (not a FIFO or a device)."""
    try:
        return input_files.read_text(path, MAX_MEASUREMENTS_BYTES)
    except input_files.InputError as error:
        raise MeasurementsError(str(error)) from None


@functools.lru_cache(maxsize=8)
def _load(path: Path, mtime_ns: int) -> MeasurementsFile:
    return parse(read(path), str(path))


# The file `load()` reads when given none: the repository's, or the one a command was given
# (`render --measurements`, through `using`), for everything the command computes.
_default_file: contextvars.ContextVar[Path] = contextvars.ContextVar("measurements_file", default=MEASUREMENTS_FILE)


@contextlib.contextmanager
def using(path: Path | None) -> Iterator[None]:
    """Within the block, `load()` without a path reads `path` (the repository's file when None)."""
    token = _default_file.set(path or MEASUREMENTS_FILE)
    try:
        yield
    finally:
        _default_file.reset(token)


def in_effect() -> Path:
    """The file `load()` reads when given none: the repository's, or the one `using` names."""
    return _default_file.get()


def load(path: Path | None = None) -> MeasurementsFile:
    """The measurements in a file, by default the repository's or the one `using` names (re-read when the
    file changes)."""
    path = path or in_effect()
    try:
        mtime = path.stat().st_mtime_ns
    except OSError as error:
        raise MeasurementsError(f"{path}: {error.strerror}") from None
    return _load(path, mtime)


def _speculative(config: StackConfig) -> str:
    speculative = config.engine.speculative
    return "off" if speculative is None else speculative.label


def capture_setting(config: StackConfig, release: str | None) -> int | None:
    """The capture size the engine runs with, None for vLLM's default (in 0.19.0 an explicit size equal
    to the default yields the same capture sizes: vllm/config/vllm.py _set_cudagraph_sizes)."""
    size = capture_size(config.engine, config.workload.concurrency_per_node)
    return None if size == default_capture_size(config.engine, release) else size


def _measured_value(config: StackConfig, name: str, release: str | None) -> Any:
    """An engine setting as a measurement writes it."""
    if name == "speculative":
        return _speculative(config)
    if name == "max_cudagraph_capture_size":
        return capture_setting(config, release)
    if name == "stream_interval":
        return config.engine.stream_interval or 1
    value = getattr(config.engine, name)
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, dict):
        return dict(sorted(value.items()))
    return list(value) if isinstance(value, list) else value


def configuration_of(
    config: StackConfig, routing: RoutingMode | None = None, nodes: int | None = None
) -> Configuration:
    """The configuration a stack runs (with another routing mode for the chart's other line). The
    load's concurrency per node is the benchmark's (benchmark.concurrency over `nodes`) when set."""
    engine, benchmark = config.engine, config.benchmark
    mode = routing or config.routing.mode
    release = image_release(engine.image)
    concurrency = float(config.workload.concurrency_per_node)
    if benchmark.concurrency is not None and nodes:
        concurrency = benchmark.concurrency / nodes
    return Configuration(
        profile=config.profile.value,
        model=config.weights.model,
        vllm_release=release or UNKNOWN,
        **{MEASURED_AS.get(name, name): _measured_value(config, name, release) for name in MEASURED_ENGINE_FIELDS},
        dataset=benchmark.dataset,
        input_tokens=benchmark.input_len,
        output_tokens=benchmark.output_len,
        range_ratio=benchmark.range_ratio,
        ignore_eos=benchmark.ignore_eos,
        concurrency_per_node=concurrency,
        max_prompt_tokens=config.workload.max_prompt_tokens,
        max_output_tokens=config.workload.max_output_tokens,
        routing=mode.value,
        picker=config.routing.gateway.epp_image.partition("@")[0] if mode is RoutingMode.gateway else None,
        endpoint_per_rank=config.routing.gateway.endpoint_per_rank if mode is RoutingMode.gateway else None,
    )


@dataclass(frozen=True)
class Match:
    """The runs of every measurement of one configuration, by node count; where two measured the
    same count, the newer one's run (the later in the file on the same date)."""

    runs: tuple[Run, ...]
    measurements: tuple[Measurement, ...]
    # The measurement each of `runs` comes from.
    run_sources: tuple[Measurement, ...]


def matching(configuration: Configuration, measurements: Sequence[Measurement]) -> Match | None:
    if not configuration.complete:
        return None
    found = [item for item in measurements if item.configuration.complete and item.configuration == configuration]
    if not found:
        return None
    ordered = sorted(enumerate(found), key=lambda pair: (pair[1].date, pair[0]))
    by_nodes: dict[int, tuple[Run, Measurement]] = {}
    for _, measurement in ordered:
        for run in measurement.runs:
            by_nodes[run.nodes] = (run, measurement)
    return Match(
        runs=tuple(by_nodes[count][0] for count in sorted(by_nodes)),
        measurements=tuple(measurement for _, measurement in ordered),
        run_sources=tuple(by_nodes[count][1] for count in sorted(by_nodes)),
    )
