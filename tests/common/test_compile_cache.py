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
