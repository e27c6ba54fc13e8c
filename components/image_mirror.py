"""Pull-through mirrors of Docker Hub and ghcr.io: two Artifact Registry remote repositories in the
cluster's region, readable by the nodes, and the rewriting of image references onto them.

Why (GKE "Use Image streaming to pull container images", requirements): image streaming serves an
image's files on demand, instead of pulling it whole before the container starts, for images in an
Artifact Registry standard or remote repository or on Docker Hub; private nodes need Private Google
Access on their subnet, the project needs the Container File System API
(containerfilesystem.googleapis.com), and a custom node service account needs
`roles/serviceusage.serviceUsageConsumer` in the project that hosts the images. Without a mirror every
new A4 node pulls the multi-gigabyte vLLM image from Docker Hub through the cluster's Cloud NAT, whose shared
addresses also meet Docker Hub's anonymous pull limit. A remote repository downloads each image once,
caches it in the region and serves later pulls from the cache (Artifact Registry "Remote repositories
overview"; upstreams: Docker Hub, GitHub Container Registry ghcr.io, among others: "Create remote
repositories").

Fields, as pulumi-gcp 10.2.0 `gcp.artifactregistry.Repository` (terraform-provider-google
google_artifact_registry_repository) documents them: `mode="REMOTE_REPOSITORY"`, `format="DOCKER"`,
`remote_repository_config.docker_repository.public_repository="DOCKER_HUB"` for Docker Hub, and
`remote_repository_config.common_repository.uri` ("URI to the registry, e.g. https://registry-1.docker.io")
for ghcr.io: `docker_repository.custom_repository` is marked "[Deprecated, please use commonRepository
instead]" in the same schema. The nodes pull as their service account: `roles/artifactregistry.reader`
on each repository ("Deploying to Google Kubernetes Engine", Artifact Registry docs).

A manifest digest is a hash of the manifest's bytes, which the remote repository stores as the
upstream served them, so `image@sha256:...` names the same image through the mirror.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_gcp as gcp

DOCKER_HUB_DOMAINS = ("docker.io", "index.docker.io", "registry-1.docker.io")
GHCR_DOMAIN = "ghcr.io"
GHCR_URI = "https://ghcr.io"
READER_ROLE = "roles/artifactregistry.reader"
API = "artifactregistry.googleapis.com"


def repository_ids(cluster_name: str) -> tuple[str, str]:
    """The Docker Hub and ghcr.io mirrors' repository ids (a letter first, lower-case letters, digits and
    hyphens, at most 63: the cluster name's grammar, 40 at most, and a suffix)."""
    return f"{cluster_name}-dockerhub", f"{cluster_name}-ghcr"


@dataclass(frozen=True)
class MirrorAddresses:
    """Where the two mirrors serve images: `REGION-docker.pkg.dev/PROJECT/REPOSITORY`."""

    docker_hub: str
    ghcr: str

    @classmethod
    def of(cls, project: str, region: str, cluster_name: str) -> MirrorAddresses:
        docker_hub, ghcr = repository_ids(cluster_name)
        host = f"{region}-docker.pkg.dev/{project}"
        return cls(docker_hub=f"{host}/{docker_hub}", ghcr=f"{host}/{ghcr}")


def split_domain(image: str) -> tuple[str, str]:
    """An image reference's registry and the rest, as Docker reads a reference
    (distribution/reference normalize.go splitDockerDomain): the first component is a registry when it
    holds a '.' or a ':' or is `localhost`; else the registry is Docker Hub, and a one-component name is
    an official image under `library/`."""
    first, _, rest = image.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        return first, rest
    path_end = len(image.split("@", 1)[0].split(":", 1)[0])
    if "/" not in image[:path_end]:
        return "docker.io", f"library/{image}"
    return "docker.io", image


def through_mirror(image: str, mirror: MirrorAddresses | None) -> str:
    """The reference a node pulls: a Docker Hub or ghcr.io image through its mirror (tag and digest
    kept), any other registry's image (registry.k8s.io, gcr.io, Artifact Registry) as it is."""
    if mirror is None:
        return image
    domain, rest = split_domain(image)
    if domain in DOCKER_HUB_DOMAINS:
        return f"{mirror.docker_hub}/{rest}"
    if domain == GHCR_DOMAIN:
        return f"{mirror.ghcr}/{rest}"
    return image


def pull_policy(image: str) -> str:
    """`IfNotPresent` for an image pinned by digest (the node's copy is the same bytes), else `Always`
    (a tag may move)."""
    return "IfNotPresent" if "@sha256:" in image else "Always"


@dataclass(frozen=True)
class ImageMirrorArgs:
    project: str
    region: str
    cluster_name: str
    # The accounts the nodes pull as (`serviceAccount:EMAIL`); the readers of both repositories.
    node_members: tuple[pulumi.Input[str], ...]
    labels: dict[str, str] = field(default_factory=dict)
    # What the repositories wait for: the Artifact Registry API of this `up`.
    after: tuple[pulumi.Resource, ...] = ()


class ImageMirror(pulumi.ComponentResource):
    TYPE = "llm-serving:images:ImageMirror"
    docker_hub: gcp.artifactregistry.Repository
    ghcr: gcp.artifactregistry.Repository
    readers: list[gcp.artifactregistry.RepositoryIamMember]
    addresses: MirrorAddresses

    def __init__(self, name: str, args: ImageMirrorArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(self.TYPE, name, None, opts)
        # The repository id is unique in the project and region: the engine deletes before it replaces.
        named = pulumi.ResourceOptions(parent=self, depends_on=list(args.after), delete_before_replace=True)
        docker_hub_id, ghcr_id = repository_ids(args.cluster_name)
        self.docker_hub = gcp.artifactregistry.Repository(
            f"{name}-dockerhub",
            project=args.project,
            location=args.region,
            repository_id=docker_hub_id,
            format="DOCKER",
            mode="REMOTE_REPOSITORY",
            description=f"Pull-through cache of Docker Hub for the nodes of {args.cluster_name}",
            remote_repository_config=gcp.artifactregistry.RepositoryRemoteRepositoryConfigArgs(
                description="Docker Hub",
                docker_repository=gcp.artifactregistry.RepositoryRemoteRepositoryConfigDockerRepositoryArgs(
                    public_repository="DOCKER_HUB"
                ),
            ),
            labels=args.labels,
            opts=named,
        )
        self.ghcr = gcp.artifactregistry.Repository(
            f"{name}-ghcr",
            project=args.project,
            location=args.region,
            repository_id=ghcr_id,
            format="DOCKER",
            mode="REMOTE_REPOSITORY",
            description=f"Pull-through cache of ghcr.io for the nodes of {args.cluster_name}",
            remote_repository_config=gcp.artifactregistry.RepositoryRemoteRepositoryConfigArgs(
                description="GitHub Container Registry",
                common_repository=gcp.artifactregistry.RepositoryRemoteRepositoryConfigCommonRepositoryArgs(
                    uri=GHCR_URI
                ),
            ),
            labels=args.labels,
            opts=named,
        )
        child = pulumi.ResourceOptions(parent=self)
        self.readers = [
            gcp.artifactregistry.RepositoryIamMember(
                f"{name}-{label}-reader-{index}",
                project=args.project,
                location=args.region,
                repository=repository.repository_id,
                role=READER_ROLE,
                member=member,
                opts=child,
            )
            for label, repository in (("dockerhub", self.docker_hub), ("ghcr", self.ghcr))
            for index, member in enumerate(args.node_members)
        ]
        self.addresses = MirrorAddresses.of(args.project, args.region, args.cluster_name)
        self.register_outputs({"dockerHubMirror": self.addresses.docker_hub, "ghcrMirror": self.addresses.ghcr})
