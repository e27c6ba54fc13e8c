"""GKE versions: the feature minimums the stack relies on and how versions compare, for the config's
checks (stacks/), the existing-cluster look-up (components/) and the offline stand-in cluster (commands/)."""

from __future__ import annotations

import re

# Feature minimums (GKE docs "About GKE Inference Gateway": InferencePool v1 from
# 1.34.0-gke.1626000; "About custom compute classes": 1.30.3-gke.1451000).
B200_MIN_GKE_VERSION = "1.32.2-gke.1422000"
COMPUTE_CLASS_MIN_GKE_VERSION = "1.30.3-gke.1451000"
INFERENCE_POOL_MIN_GKE_VERSION = "1.34.0-gke.1626000"
# GKE docs "Configure capacity buffers": active buffers from 1.35.2-gke.1842000 (Standard and Autopilot).
CAPACITY_BUFFER_MIN_GKE_VERSION = "1.35.2-gke.1842000"
# Every feature minimum above (the newest is the offline stand-in cluster's version).
FEATURE_MIN_GKE_VERSIONS = (
    B200_MIN_GKE_VERSION,
    COMPUTE_CLASS_MIN_GKE_VERSION,
    INFERENCE_POOL_MIN_GKE_VERSION,
    CAPACITY_BUFFER_MIN_GKE_VERSION,
)
# A minor-version floor: GKE resolves it to a patch its release channel offers when the cluster is
# created (the provider sends it as initialClusterVersion), so it never names a retired patch.
DEFAULT_MIN_MASTER_VERSION = "1.34"
GKE_VERSION_PATTERN = re.compile(r"^([0-9]{1,9})\.([0-9]{1,9})\.([0-9]{1,9})-gke\.([0-9]{1,12})\Z")
GKE_MINOR_PATTERN = re.compile(r"^([0-9]{1,9})\.([0-9]{1,9})\Z")
VERSION_PART = re.compile(r"\d+")


def gke_version_key(version: str) -> tuple[int, ...]:
    """A full GKE version (`1.34.0-gke.1626000`) as the numbers it compares by."""
    match = GKE_VERSION_PATTERN.match(version)
    if not match:
        raise ValueError(f"not a GKE version like {B200_MIN_GKE_VERSION}")
    return tuple(int(part) for part in match.groups())


def satisfies_gke_minimum(floor: str, minimum: str) -> bool:
    """Whether every version a `minMasterVersion` floor can give the cluster is at least `minimum`.

    A full version compares patch by patch. A minor floor (`1.34`) resolves to a patch of that minor
    the channel offers at creation: it meets a minimum of an older minor, and of the same minor only
    when the minimum is a build of that minor's first patch (`1.34.0-gke.N`): a channel offers a minor's
    patches from the one it was promoted with on, which is not known to be newer than a later patch's
    (`1.35` may give 1.35.0 or 1.35.1, below capacity buffers' 1.35.2-gke.1842000).
    """
    minor = GKE_MINOR_PATTERN.match(floor)
    if minor:
        floor_minor = tuple(int(part) for part in minor.groups())
        required = gke_version_key(minimum)
        return floor_minor > required[:2] or (floor_minor == required[:2] and required[2] == 0)
    return gke_version_key(floor) >= gke_version_key(minimum)


def version_at_least(version: str, minimum: str) -> bool:
    """A version the GKE API reports (`1.34.0-gke.1626000`, or any other spelling of numbers) compared
    number by number with a full minimum; an empty one is older than any."""
    return tuple(map(int, VERSION_PART.findall(version))) >= tuple(map(int, VERSION_PART.findall(minimum)))
