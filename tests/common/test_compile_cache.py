"""The compile cache's key (common/compile_cache.py): another release or flag set is another folder."""

from __future__ import annotations

import dataclasses
from typing import Any

import pulumi

from common.compile_cache import compile_cache_key
from components.compile_cache import CacheMount
from components.vllm import VllmEngine, engine_env
from tests.components.test_vllm_component import ARGS
from tests.construct import build


def engine_with_cache(**changes: Any) -> tuple[VllmEngine, dict[str, Any]]:
    args = dataclasses.replace(ARGS, compile_cache=CacheMount(bucket="cache-bucket", service_account="qwen"), **changes)
    engines: list[VllmEngine] = []

    def declare() -> None:
        engines.append(VllmEngine("vllm", args))
        pulumi.export("key", engines[0].compile_cache_key)

    built = build(declare)
    (deployment,) = built.kind("Deployment")
    return engines[0], deployment


def test_another_release_or_flag_set_is_another_folder() -> None:
    base = engine_with_cache()[0].compile_cache_key
    other_release = dataclasses.replace(ARGS.engine, image="vllm/vllm-openai:v0.33.0", image_digest=None)
    other_flags = dataclasses.replace(ARGS.engine, max_num_seqs=4096)
    other_env = dataclasses.replace(ARGS.engine, extra_env={"EXTRA": "2"})
    keys = {base}
    for engine in (other_release, other_flags, other_env):
        keys.add(engine_with_cache(engine=engine)[0].compile_cache_key)
    assert len(keys) == 4
    # The same image through a registry mirror, or the caches moved elsewhere, keep the folder.
    mirrored = engine_with_cache(
        pull_image="europe-west4-docker.pkg.dev/p/llm-dockerhub/vllm/vllm-openai:v0.19.0@sha256:" + "a" * 64
    )
    assert mirrored[0].compile_cache_key == base
    env = engine_env(ARGS.engine, shared_cache=True)
    assert compile_cache_key("i:v1", ["a"], env) == compile_cache_key("i:v1", ["a"], {**env, "VLLM_CACHE_ROOT": "/x"})


def test_a_capacity_source_change_keeps_the_folder() -> None:
    """A time-to-serve review: the drain time (`--shutdown-timeout`, 15 s Spot-only, 590 s with Flex-start) was in the
    key, so adding a Flex-start source sent every pod to an empty folder though nothing compiled differs."""
    spot, flex = engine_with_cache(spot_only=True), engine_with_cache(spot_only=False)
    drains = {
        arg
        for _, deployment in (spot, flex)
        for arg in deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        if arg.startswith("--shutdown-timeout")
    }
    assert len(drains) == 2, drains
    assert spot[0].compile_cache_key == flex[0].compile_cache_key
