"""The vLLM releases the project pins: the image of each, and what that release needs from the stack.

A stack runs the release its `engine.image` tag names (`vllm/vllm-openai:v0.19.0` is 0.19.0, also
from a mirror registry). Only pinned releases are accepted: each has a vendored table of its
`vllm serve` arguments (schemas/vllm/, generated from the release's own parser by `make vllm-args`)
that the stack's command line is checked against before anything is declared.

Facts below were read in the releases' own code (the PyPI wheels vllm==0.19.0 and vllm==0.33.0):
- `VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS`: vllm/envs.py defaults it to "0" in 0.19.0 and to "1"
  in 0.33.0, so the stack always renders it, 1 or 0, whatever the release's default.
- The BF16 MTP branch of NVFP4 checkpoints: 0.33.0 vllm/model_executor/models/qwen3_5_mtp.py keeps
  the MTP layers unquantized ("mtp.fc is stored as BF16 in NVFP4 checkpoints ... Force
  unquantized", https://github.com/vllm-project/vllm/pull/38832); 0.19.0's qwen3_5_mtp.py has no such
  handling (before that change,
  `method=mtp` on the NVFP4 checkpoint failed with an AssertionError).
- The FP8 accuracy fix for Qwen 3.5 on Blackwell (DeepGEMM E8M0 scales,
  https://github.com/vllm-project/vllm/pull/38083): both releases
  auto-disable DeepGEMM for `qwen3_5_text` / `qwen3_5_moe_text` on SM100 (vllm/utils/deep_gemm.py
  `_DEEPGEMM_BLACKWELL_EXCLUDED_MODEL_TYPES`, called from vllm/config/vllm.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from common.sources import DEEPGEMM_FIX_URL
from schemas import vllm_args

IMAGE_REPOSITORY = "vllm/vllm-openai"
RELEASE_TAG = re.compile(r"^v?(\d+\.\d+\.\d+)$")


@dataclass(frozen=True)
class VllmRelease:
    """One pinned vLLM release."""

    version: str
    # The linux/amd64 manifest digest of the release's image where a public pin was found (A4
    # nodes are x86-64); None where none could be verified here: prod then needs engine.imageDigest.
    image_digest: str | None
    # vllm/envs.py default of VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS in this release.
    estimates_cudagraphs_by_default: bool
    # Whether the release loads the BF16 MTP branch of an NVFP4 checkpoint
    # (https://github.com/vllm-project/vllm/pull/38832).
    loads_nvfp4_mtp: bool
    why: str

    @property
    def image(self) -> str:
        return f"{IMAGE_REPOSITORY}:v{self.version}"


RELEASES: dict[str, VllmRelease] = {
    release.version: release
    for release in (
        VllmRelease(
            version="0.19.0",
            # The digest a public project pins for vllm/vllm-openai:v0.19.0 (linux/amd64); confirm
            # with `docker buildx imagetools inspect vllm/vllm-openai:v0.19.0`.
            image_digest="sha256:7a0f0fdd2771464b6976625c2b2d5dd46f566aa00fbc53eceab86ef50883da90",
            estimates_cudagraphs_by_default=False,
            loads_nvfp4_mtp=False,
            why="the first release with the fix of 0.18.0's degraded FP8 accuracy of Qwen 3.5 on B200 (DeepGEMM "
            f"off for Qwen 3.5 on Blackwell, its FP8 layers on CUTLASS kernels: {DEEPGEMM_FIX_URL})",
        ),
        VllmRelease(
            version="0.33.0",
            image_digest=None,
            estimates_cudagraphs_by_default=True,
            loads_nvfp4_mtp=True,
            why="the current release (PyPI, November 2026): --moe-backend choices for NVFP4 on Blackwell, "
            "the NVFP4 checkpoints' BF16 MTP branch; nothing measured on it yet",
        ),
    )
}
MEASURED_RELEASE = "0.19.0"
CURRENT_RELEASE = "0.33.0"


def image_release(image: str) -> str | None:
    """The vLLM version an image reference's tag names (`...:v0.19.0` -> "0.19.0"), else None."""
    last = image.split("@", 1)[0].rsplit("/", 1)[-1]
    if ":" not in last:
        return None
    match = RELEASE_TAG.match(last.rsplit(":", 1)[1])
    return match.group(1) if match else None


def release_problem(image: str) -> str:
    """Empty when the image runs a pinned release with a vendored argument table; else what is wrong
    and what is allowed."""
    allowed = ", ".join(f"v{version}" for version in RELEASES)
    version = image_release(image)
    if version is None:
        return f"has a tag that names no vLLM release; allowed: a tag of a pinned release ({allowed})"
    if version not in vllm_args.versions():
        return (
            f"is vLLM {version}, which has no vendored `vllm serve` argument table; allowed: {allowed} "
            f"(a new release needs its table, make vllm-args VERSION={version}, and its facts in "
            "schemas/vllm_releases.py)"
        )
    if version not in RELEASES:
        return f"is vLLM {version}, which has a table but is not pinned in schemas/vllm_releases.py; allowed: {allowed}"
    return ""


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))
