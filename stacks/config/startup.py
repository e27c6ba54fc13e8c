"""How fast a new serving pod starts: the image mirror and the compile cache.

Neither changes an engine argument or what the engine computes: the pod pulls the same image bytes (by digest) from a
mirror in its region, and reads the compiled kernels an earlier pod of the same configuration wrote instead of compiling
them again. The recipe's throughput measurement therefore stands with them on or off.

Defaults: the mirror is on (the container is byte for byte the recipe's: the same manifest digest from another address).
The compile cache is off: it moves the engine's compile and autotune caches onto a Cloud Storage FUSE mount, a file
system the recipe never ran on and this project has not yet run vLLM on (renames, locks and concurrent writers behave
differently there than on a local disk); turn it on per stack (`startup.compileCache.enabled: true`) and keep it once a
pod of the configuration has started from it.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from stacks.config.base import ConfigModel


class ImageMirrorConfig(ConfigModel):
    """Artifact Registry remote repositories (pull-through caches) of Docker Hub and ghcr.io."""

    enabled: bool = Field(
        default=True,
        description="Pull the Docker Hub images (vLLM, the downloader) and ghcr.io images (the Endpoint Picker) "
        "through two Artifact Registry remote repositories the stack declares in its region, `<cluster>-dockerhub` "
        "and `<cluster>-ghcr`, which the nodes read: each image crosses the internet once per region, not once per "
        "node through the NAT (and Docker Hub's anonymous pull limit), and Autopilot's image streaming serves it. "
        "Off: the nodes pull from the upstream registries.",
    )


class CompileCacheConfig(ConfigModel):
    """A Cloud Storage bucket that keeps vLLM's torch.compile, Triton and FlashInfer artifacts between pods."""

    enabled: bool = Field(
        default=False,
        description="Mount a Cloud Storage bucket (GCS FUSE CSI driver, Workload Identity) as the engine's compile "
        "caches: the first pod of a configuration writes them, later pods read them. Each configuration has its "
        "own folder, named by a hash of the vLLM release, the profile and the serve arguments and environment, so "
        "another release, profile or flag set never reads a stale entry. Off (default): each pod compiles into an "
        "emptyDir, as the recipe did (not yet run on Cloud Storage FUSE: see docs/operations.md).",
    )
    max_age_days: Annotated[int, Field(ge=1, le=3650)] = Field(
        default=30,
        description="Objects older than this many days are deleted by the bucket's lifecycle rule (1-3650): the "
        "folders of configurations no longer served go, and, since an object's age counts from its creation and a "
        "read does not renew it, a served one's too, which its next cold pods compile again.",
    )


class StartupConfig(ConfigModel):
    """What makes a new serving pod ready sooner, without changing what it serves."""

    image_mirror: ImageMirrorConfig = Field(default=ImageMirrorConfig(), description="The registry mirrors.")
    compile_cache: CompileCacheConfig = Field(default=CompileCacheConfig(), description="The shared compile cache.")
