"""The checkpoint, the Hyperdisk ML disks that hold it and the Job that downloads it."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from common.grammars import hf_repo_problem, mount_path_problem, revision_problem
from stacks.config.base import ConfigModel, Image, Quantity, checked

# alpine/git: git and git-lfs preinstalled (alpine-docker/git Dockerfile: `apk add git git-lfs`),
# published for linux/amd64 and linux/arm64 (C4A). The digest is the one a public project pins
# for this tag; confirm it with `docker buildx imagetools inspect alpine/git:v2.49.1`.
DOWNLOADER_IMAGE = "alpine/git:v2.49.1@sha256:c0280cf9572316299b08544065d3bf35db65043d5e3963982ec50647d2746e26"
COMMIT_ID = re.compile(r"^[0-9a-f]{40}$")
IMAGE_DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")


# The largest Hyperdisk ML volume (GiB), Compute Engine's limit for the disk type.
MAX_DISK_GIB = 65536


class DownloaderConfig(ConfigModel):
    """The one-off Job that copies the checkpoint from Hugging Face onto the scratch disk."""

    machine_family: Annotated[str, Field(pattern=r"^[a-z][a-z0-9]+$")] = Field(
        default="c4a",
        description=(
            "Machine family of the download node (nodeSelector cloud.google.com/machine-family). "
            "Recipe: c4a, a cheap Arm node."
        ),
    )
    arch: Literal["arm64", "amd64"] = Field(
        default="arm64",
        description=(
            "CPU architecture of the download node (nodeSelector kubernetes.io/arch): arm64 or amd64; "
            "must match machineFamily."
        ),
    )
    image: Image = Field(
        default=DOWNLOADER_IMAGE,
        description=(
            "Image with git and git-lfs (the recipe cloned with Git LFS; Xet stalled on large "
            "checkpoints): an OCI reference; prod needs a digest."
        ),
    )
    cpu: Quantity = Field(default="4", description="CPU request and limit of the download container.")
    memory: Quantity = Field(default="16Gi", description="Memory request and limit of the download container.")
    retries: Annotated[int, Field(ge=0, le=20)] = Field(
        default=5,
        description=(
            "Retries of the download, 0-20: the Job's backoffLimit, and each git step inside the pod "
            "is tried retries + 1 times."
        ),
    )


class WeightsConfig(ConfigModel):
    """The model checkpoint, the Hyperdisk ML disks that serve it read-only, and the Job that downloads it."""

    model: str = Field(
        default="Qwen/Qwen3.5-27B-FP8",
        description="Hugging Face model id `org/name`. Default: the recipe's Qwen/Qwen3.5-27B-FP8.",
    )
    revision: str = Field(
        default="main",
        description="Branch, tag or commit; prod needs a 40-hex commit id "
        "(`git ls-remote https://huggingface.co/MODEL main`).",
    )
    size_gib: Annotated[int, Field(ge=4, le=MAX_DISK_GIB)] = Field(
        default=100,
        description=(
            "Size of each Hyperdisk ML disk in GiB (4-65536); must hold the checkpoint twice plus 10% "
            "(the download keeps Git LFS objects and the checkout)."
        ),
    )
    checkpoint_gib: Annotated[int | None, Field(ge=1, le=65536)] = Field(
        default=None,
        description="Size of the checkpoint; defaults to an estimate from the model name's parameter count and dtype.",
    )
    throughput_mibps: Annotated[int, Field(ge=400, le=1_200_000)] = Field(
        default=2400,
        description=(
            "Provisioned throughput of each serving disk in MiB/s (400-1,200,000). Default 2400, GKE's example value."
        ),
    )
    target_load_seconds: Annotated[int | None, Field(ge=10, le=3600)] = Field(
        default=None,
        description="Size each serving disk's throughput instead (exclusive with throughputMibps): every node of "
        "its zone waking at once reads the checkpoint in this many seconds (10-3600), within Hyperdisk ML's "
        "400-1,200,000 MiB/s. Default: off, throughputMibps applies.",
    )
    mount_path: str = Field(
        default="/models",
        description=(
            "Where the serving pod mounts the weights read-only (absolute, normalised); the model "
            "loads from `<mountPath>/<model>`."
        ),
    )
    protect: bool | None = Field(
        default=None,
        description="Keep the disk image and serving disks when Pulumi deletes them (deletionPolicy "
        "ABANDON); defaults to the environment preset.",
    )
    downloader: DownloaderConfig = Field(default=DownloaderConfig(), description="The download Job.")

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

    @model_validator(mode="after")
    def _one_throughput(self) -> WeightsConfig:
        if self.target_load_seconds is not None and "throughput_mibps" in self.model_fields_set:
            raise ValueError("set throughputMibps or targetLoadSeconds, not both (the target sizes the throughput)")
        if self.target_load_seconds is not None and self.checkpoint_gib is None:
            raise ValueError("targetLoadSeconds needs checkpointGib, the size the disk throughput is sized for")
        return self

    @property
    def pinned(self) -> bool:
        """Whether the revision is an immutable commit id rather than a branch or tag."""
        return bool(COMMIT_ID.match(self.revision))
