"""The published recipe's `vllm serve` arguments, as the stack renders them by default (plus the
drain a Spot-only stack gets: 25 s grace - 5 s endpoint removal - 5 s exit margin; a stack that may
land on Flex-start or reserved nodes drains for 600 - 10 s: `with_drain`). The line is the `rendered`
probe of schemas/vllm_args.py, which every vendored argument table records the real parser's verdict
on, so the tests hold the render to a line vLLM was seen to accept; all but --reasoning-parser, which
the tables' recording predates (schemas/vllm/README.md, "Known gap")."""

from schemas.vllm_args import RENDERED

MODEL_PATH = "/models/Qwen/Qwen3.5-27B-FP8"
SERVED_NAME = "Qwen/Qwen3.5-27B-FP8"
RECIPE_ARGS = list(RENDERED)


def with_drain(seconds: int) -> list[str]:
    """The recipe's arguments with another --shutdown-timeout."""
    drain = f"--shutdown-timeout={seconds}"
    return [drain if arg.startswith("--shutdown-timeout=") else arg for arg in RECIPE_ARGS]
