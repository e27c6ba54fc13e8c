"""Time to serve: how long a new replica takes from scale-up to ready, the figures it rests on, and
the bounds the stack holds it to (`timeToServe.*`; the model is stacks/capacity/time_to_serve.py).

The write-up the stack reproduces ("1 Million Tokens per Second: Qwen 3.5 27B on GKE with B200
GPUs", Google Cloud - Community on Medium, March 2026) measured, for its configuration only: GKE
Autopilot brings up an A4 node in ~5-6 min, then the pod takes ~10 min (image pull, model load,
torch.compile and CUDA graph capture). No breakdown of the pod's ~10 min was published.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from common.sources import WRITEUP as WRITEUP_CITATION
from stacks.config.base import ConfigModel, SwitchedGroup

# The write-up's figures (recipe profile only): an A4 node in 5-6 min, the pod in ~10 min.
RECIPE_NODE_SECONDS_MIN = 300
RECIPE_NODE_SECONDS = 360
RECIPE_POD_SECONDS = 600
# Cited by title and link wherever a phase rests on it (plan.md, capacity.json).
THE_WRITEUP = f"the write-up {WRITEUP_CITATION}"
# The goal the stack states: a new replica's pod phase (scheduled to ready) within 3 min, and a
# replica on a held node ready within 3 min. Peers cut the largest part of it: Google's fast-start
# inference reference architecture (GoogleCloudPlatform/accelerated-platforms, read at its version of
# 2026-09-17) streams Gemma 4 31B's 58.99 GiB into an H100 in 48.2 s (commands/render/time_to_serve.py).
GOAL_POD_SECONDS = 180
# Hyperdisk ML limits per volume (Compute Engine "About Hyperdisk ML",
# cloud.google.com/compute/docs/disks/hd-types/hyperdisk-ml): throughput 400-1,200,000 MiB/s.
HYPERDISK_ML_MIN_MIBPS = 400
HYPERDISK_ML_MAX_MIBPS = 1_200_000


class TimeToServeConfig(ConfigModel):
    """What a new replica's start-up is assumed to cost where it was not measured, and the bounds
    plan.md and the policies hold it to."""

    bound_seconds: Annotated[int, Field(ge=60, le=7200)] = Field(
        default=GOAL_POD_SECONDS,
        description="Seconds a new replica may take from scale-up to ready before policy LLM-OPS-005 warns that "
        "queue-depth autoscaling without held capacity reacts too late (60-7200). Default 180, the stated goal.",
    )
    weights_read_bound_seconds: Annotated[int, Field(ge=10, le=3600)] = Field(
        default=120,
        description="plan.md warns when every node waking at once reads the checkpoint from its zone's disk for "
        "longer than this (10-3600 s). Default 120, two thirds of the 180 s pod goal.",
    )
    image_gib: Annotated[float | None, Field(gt=0, le=1024)] = Field(
        default=None,
        description="Compressed size of the engine image in GiB, for the computed image-pull phase (with "
        "imagePullMibps; `docker manifest inspect` sums its layers). Default: not known, the phase is not computed.",
    )
    # The phase is imageGib / this: at 1 MiB/s the largest image takes 12 days, a finite figure; a
    # rate near zero made it infinite and the render crashed.
    image_pull_mibps: Annotated[float | None, Field(ge=1, le=100_000)] = Field(
        default=None,
        description="Rate a new node pulls the engine image at, MiB/s (measured, e.g. from the start-up report's "
        "imagePulledSeconds). Default: not known, the phase is not computed.",
    )


class WarmCapacityConfig(SwitchedGroup):
    """Spare A4 nodes held up (a GKE CapacityBuffer of the serving Deployment's pods), so that a new
    replica skips node provisioning; with a schedule, held in the serving windows only."""

    enabled: bool = Field(
        default=False,
        description="Declare the CapacityBuffer; true as soon as the group sets any other key, unless it says false. "
        "Needs GKE >= 1.35.2-gke.1842000: cluster.minMasterVersion 1.36 or later (1.35 is refused: a channel "
        "may give it an older patch).",
    )
    nodes: Annotated[int, Field(ge=1, le=64)] = Field(
        default=1,
        description="A4 nodes held beyond the serving pods (the buffer's replicas), 1-64; each is billed like a "
        "serving node while held.",
    )
