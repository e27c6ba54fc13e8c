"""The checkpoint, the Hyperdisk ML disks that hold it and the Job that downloads it."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, field_validator

from stacks.config.base import ConfigModel, Image, Quantity, checked
from stacks.config.grammars import (
    hf_repo_problem,
    mount_path_problem,
    revision_problem,
)

# alpine/git: git and git-lfs preinstalled (alpine-docker/git Dockerfile: `apk add git git-lfs`),
# published for linux/amd64 and linux/arm64 (C4A). The digest is the one a public project pins
# for this tag; confirm it with `docker buildx imagetools inspect alpine/git:v2.49.1`.
DOWNLOADER_IMAGE = "alpine/git:v2.49.1@sha256:c0280cf9572316299b08544065d3bf35db65043d5e3963982ec50647d2746e26"
COMMIT_ID = re.compile(r"^[0-9a-f]{40}$")
IMAGE_DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")


class DownloaderConfig(ConfigModel):
    """The one-off Job that copies the checkpoint from Hugging Face onto the scratch disk."""

    machine_family: Annotated[str, Field(pattern=r"^[a-z][a-z0-9]+$")] = "c4a"
    arch: Literal["arm64", "amd64"] = "arm64"
    image: Image = DOWNLOADER_IMAGE
    cpu: Quantity = "4"
    memory: Quantity = "16Gi"
    retries: Annotated[int, Field(ge=0, le=20)] = 5


class WeightsConfig(ConfigModel):
    model: str = "Qwen/Qwen3.5-27B-FP8"
    revision: str = Field(
        default="main",
        description="Branch, tag or commit; prod needs a 40-hex commit id "
        "(`git ls-remote https://huggingface.co/MODEL main`).",
    )
    size_gib: Annotated[int, Field(ge=4, le=65536)] = 100
    checkpoint_gib: Annotated[int | None, Field(ge=1, le=65536)] = Field(
        default=None,
        description="Size of the checkpoint; defaults to an estimate from the model name's parameter count and dtype.",
    )
    throughput_mibps: Annotated[int, Field(ge=400, le=1_200_000)] = 2400
    mount_path: str = "/models"
    protect: bool | None = Field(
        default=None,
        description="Keep the disk image and serving disks when Pulumi deletes them (deletionPolicy "
        "ABANDON); defaults to the environment preset.",
    )
    downloader: DownloaderConfig = DownloaderConfig()

    @field_validator("model")
    @classmethod
    def _model_id(cls, value: str) -> str:
        return checked(hf_repo_problem(value), value)

    @field_validator("revision")
    @classmethod
    def _revision(cls, value: str) -> str:
        return checked(revision_problem(value), value)

    @field_validator("mount_path")
    @classmethod
    def _mount_path(cls, value: str) -> str:
        return checked(mount_path_problem(value), value)

    @property
    def pinned(self) -> bool:
        """Whether the revision is an immutable commit id rather than a branch or tag."""
        return bool(COMMIT_ID.match(self.revision))
