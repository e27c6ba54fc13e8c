"""Config to component arguments: the one place where the stack's config groups become the typed Args
the components own, so the composition, the derived checks and plan.md read the same values."""

from __future__ import annotations

from collections.abc import Sequence

from components.capacity import CapacitySource, FlexStartCapacity, ReservationCapacity, SpotCapacity
from components.vllm import (
    MODEL_LOAD_MINUTES,
    NODE_PROVISIONING_MINUTES,
    EngineFlags,
    Speculative,
    drain_seconds,
    engine_args,
    grace_seconds,
)
from components.weights import DownloaderArgs, local_model_path
from stacks.config.capacity import CapacitySource as CapacitySourceConfig
from stacks.config.capacity import FlexStartSource, ReservationSource
from stacks.config.engine import EngineConfig, capture_size
from stacks.config.stack import StackConfig
from stacks.config.weights import DownloaderConfig


def internal_load_balancer_ranges(config: StackConfig) -> tuple[str, ...]:
    """The internal load balancer's client ranges (none without one): as configured, else the subnet's."""
    routing = config.routing
    if not routing.internal_load_balancer:
        return ()
    if routing.internal_load_balancer_source_ranges is not None:
        return tuple(routing.internal_load_balancer_source_ranges)
    return (config.cluster.network.subnet_cidr,)


def spot_only(config: StackConfig) -> bool:
    """Every capacity source is Spot: the serving pods cannot land on longer-lived capacity."""
    return all(source.type == "spot" for source in config.capacity.sources)


def serve_arguments(config: StackConfig) -> list[str]:
    """The `vllm serve` arguments the stack renders (for plan.md)."""
    return engine_args(
        engine_flags(config.engine, config.workload.concurrency_per_node),
        local_model_path(config.weights.mount_path, config.weights.model),
        config.served_model_name,
        drain_seconds(grace_seconds(spot_only(config))),
    )


def engine_flags(engine: EngineConfig, concurrency_per_node: int | None = None) -> EngineFlags:
    """The component's engine settings; `concurrency_per_node` (workload.concurrencyPerNode) resolves a
    capture size matched to the workload."""
    speculative = engine.speculative
    return EngineFlags(
        image=engine.image,
        image_digest=engine.image_digest,
        port=engine.port,
        data_parallel_size=engine.data_parallel_size,
        tensor_parallel_size=engine.tensor_parallel_size,
        enable_expert_parallel=engine.enable_expert_parallel,
        max_model_len=engine.max_model_len,
        max_num_batched_tokens=engine.max_num_batched_tokens,
        max_num_seqs=engine.max_num_seqs,
        kv_cache_dtype=engine.kv_cache_dtype.value,
        gpu_memory_utilization=engine.gpu_memory_utilization,
        enable_prefix_caching=engine.enable_prefix_caching,
        enable_chunked_prefill=engine.enable_chunked_prefill,
        attention_backend=engine.attention_backend,
        optimization_level=engine.optimization_level,
        speculative=None
        if speculative is None
        else Speculative(speculative.method, speculative.num_speculative_tokens),
        mamba_cache_mode=None if engine.mamba_cache_mode is None else engine.mamba_cache_mode.value,
        mamba_block_size=engine.mamba_block_size,
        language_model_only=engine.language_model_only,
        moe_backend=engine.moe_backend,
        max_cudagraph_capture_size=capture_size(engine, concurrency_per_node),
        reasoning_parser=engine.reasoning_parser,
        estimate_cudagraphs=engine.estimate_cudagraphs,
        stream_interval=engine.stream_interval,
        extra_args=tuple(engine.extra_args),
        extra_env=dict(engine.extra_env),
        cpu=engine.cpu,
        memory=engine.memory,
        ephemeral_storage=engine.ephemeral_storage,
    )


def downloader_args(downloader: DownloaderConfig) -> DownloaderArgs:
    return DownloaderArgs(
        image=downloader.image,
        machine_family=downloader.machine_family,
        arch=downloader.arch,
        cpu=downloader.cpu,
        memory=downloader.memory,
        retries=downloader.retries,
    )


# One pod's move off a recycled node: a node (provisioning) and a model load (components/vllm.py).
POD_MOVE_SECONDS = (NODE_PROVISIONING_MINUTES + MODEL_LOAD_MINUTES) * 60


def flex_start_recycling_seconds(pods: int) -> int:
    """The recycling lead that moves `pods` pods one at a time before their Flex-start nodes, started
    together, reach the end of their run together."""
    return pods * POD_MOVE_SECONDS


def capacity_sources(sources: Sequence[CapacitySourceConfig], most_pods: int) -> list[CapacitySource]:
    """The stack's capacity fallback order as the capacity component's own source types (a Flex-start
    recycling lead left null covers moving `most_pods` pods)."""
    result: list[CapacitySource] = []
    for source in sources:
        if isinstance(source, ReservationSource):
            result.append(ReservationCapacity(name=source.name, project=source.project))
        elif isinstance(source, FlexStartSource):
            result.append(
                FlexStartCapacity(
                    node_recycling_lead_time_seconds=source.node_recycling_lead_time_seconds
                    or flex_start_recycling_seconds(most_pods),
                    max_run_duration_seconds=source.max_run_duration_seconds,
                )
            )
        else:
            result.append(SpotCapacity())
    return result
