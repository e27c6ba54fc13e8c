"""The published recipe's `vllm serve` arguments, as the stack renders them by default (plus the
drain a Spot-only stack gets: 25 s grace - 5 s endpoint removal - 5 s exit margin; a stack that may
land on Flex-start or reserved nodes drains for 600 - 10 s: `with_drain`)."""

MODEL_PATH = "/models/Qwen/Qwen3.5-27B-FP8"
SERVED_NAME = "Qwen/Qwen3.5-27B-FP8"
RECIPE_ARGS = [
    MODEL_PATH,
    f"--served-model-name={SERVED_NAME}",
    "--port=8000",
    "--data-parallel-size=8",
    "--tensor-parallel-size=1",
    "--max-model-len=2560",
    "--max-num-batched-tokens=16384",
    "--max-num-seqs=8192",
    "--kv-cache-dtype=fp8_e4m3",
    "--gpu-memory-utilization=0.92",
    "--enable-prefix-caching",
    "--enable-chunked-prefill",
    "--attention-backend=FLASHINFER",
    "-O3",
    '--speculative-config={"method":"mtp","num_speculative_tokens":1}',
    "--mamba-cache-mode=align",
    "--mamba-block-size=8",
    "--shutdown-timeout=15",
]


def with_drain(seconds: int) -> list[str]:
    """The recipe's arguments with another --shutdown-timeout."""
    drain = f"--shutdown-timeout={seconds}"
    return [drain if arg.startswith("--shutdown-timeout=") else arg for arg in RECIPE_ARGS]
