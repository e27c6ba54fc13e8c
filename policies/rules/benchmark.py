"""The benchmark client: a load generator that is itself the bottleneck measures nothing."""

from __future__ import annotations

import re
from typing import Any

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, ResourceValidationPolicy

from policies.kubernetes import POD_SPEC_PATHS, metadata_name
from policies.settings import Setting, config_schema
from policies.values import as_list, as_mapping, as_text, cpu_cores, dig, number_text

BENCH_COMMAND = re.compile(r"vllm\s+bench\s+serve\b(?P<flags>[^\n&|;]*)")
MAX_CONCURRENCY = re.compile(r"--max-concurrency[=\s]+(\d+)")
# One `vllm bench serve` process saturates one core near 16K connections (the benchmark write-up).
CLIENT_SATURATION = 16_000
MAX_CONCURRENCY_PER_CLIENT = Setting(
    "maxConcurrencyPerClient",
    4000,
    "in-flight requests one vllm bench serve client may hold",
    minimum=1,
    maximum=CLIENT_SATURATION,
)
MAX_CONCURRENCY_PER_CPU = Setting(
    "maxConcurrencyPerCpu",
    4000,
    "in-flight requests of all clients in a container per CPU core of its limit",
    minimum=1,
    maximum=CLIENT_SATURATION,
)


def _bench_clients(container: Any) -> list[int | None]:
    """The --max-concurrency of every `vllm bench serve` a container runs (None: unbounded)."""
    text = "\n".join(as_text(part) for part in [*as_list(container.get("command")), *as_list(container.get("args"))])
    clients: list[int | None] = []
    for match in BENCH_COMMAND.finditer(text):
        limit = MAX_CONCURRENCY.search(match.group("flags"))
        clients.append(int(limit.group(1)) if limit else None)
    return clients


def _benchmark_not_client_bound(args: ResourceValidationArgs, report: ReportViolation) -> None:
    path = POD_SPEC_PATHS.get(args.resource_type)
    if path is None:
        return
    config = args.get_config()
    per_client = MAX_CONCURRENCY_PER_CLIENT.read(config)
    per_cpu = MAX_CONCURRENCY_PER_CPU.read(config)
    for item in as_list(dig(args.props, *path, "containers")):
        container = as_mapping(item)
        clients = _bench_clients(container)
        if not clients:
            continue
        where = f"{metadata_name(args.props)} container {as_text(container.get('name'))}"
        if None in clients:
            report(
                f"{where}: a vllm bench serve client has no --max-concurrency; give each client at most {per_client}"
            )
            continue
        limits = [limit for limit in clients if limit is not None]
        if max(limits) > per_client:
            report(
                f"{where}: a client holds {max(limits)} concurrent requests; split the load over more clients "
                f"of at most {per_client} each"
            )
        cores = cpu_cores(dig(container, "resources", "limits", "cpu"))
        total = sum(limits)
        if cores is None or total > cores * per_cpu:
            shown = "no CPU limit" if cores is None else f"{number_text(cores)} CPU"
            report(
                f"{where}: {len(limits)} client(s) drive {total} concurrent requests on {shown}; "
                f"allow at most {per_cpu} per core"
            )


BENCHMARK_NOT_CLIENT_BOUND = ResourceValidationPolicy(
    name="LLM-BENCH-001",
    display_name="Benchmark clients cannot be CPU-bound",
    description=(
        "Every vllm bench serve client must bound its --max-concurrency (4,000 by default) and a container's clients "
        "together may hold at most 4,000 requests per CPU core of its limit: one Python client saturates one core "
        "near 16K connections, and the benchmark write-up lost GPU hours when 8 nodes looked slower than 4 until the "
        "load was split over parallel clients of ~1K concurrency on a 16 vCPU node."
    ),
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_benchmark_not_client_bound,
    config_schema=config_schema(MAX_CONCURRENCY_PER_CLIENT, MAX_CONCURRENCY_PER_CPU),
)
