"""Serving profiles: each renders policy-clean on 8 GPUs with its checkpoint, disk and release; stack keys override."""

from __future__ import annotations

import json
from typing import Any

import pytest

from commands.render.plan_md import key_settings
from schemas import vllm_args
from schemas.vllm_args import check_serve_args, image_version
from schemas.vllm_releases import RELEASES, image_release
from stacks.config.engine import EngineConfig, WorkloadConfig
from stacks.config.presets import apply_preset
from stacks.config.profiles import DEFAULT_PROFILE, PROFILES, ProfileName
from stacks.config.stack import StackConfig
from stacks.load.loader import InvalidConfig, validate
from tests.conftest import STACKS, RenderStack
from tests.rendered import RenderedStack
from tests.variants import PROFILE_VARIANTS, render_variant, stack_settings


def test_exactly_the_profiles() -> None:
    assert [profile.value for profile in ProfileName] == [
        "qwen3.5-27b-fp8",
        "qwen3.5-35b-a3b-fp8",
        "qwen3.5-122b-a10b-fp8",
        "qwen3.5-397b-a17b-nvfp4",
    ]
    assert set(PROFILES) == set(ProfileName) == set(PROFILE_VARIANTS)
    assert DEFAULT_PROFILE is ProfileName.qwen3_5_27b_fp8


def test_the_default_profile_is_the_recipe_the_model_defaults_hold() -> None:
    default = PROFILES[DEFAULT_PROFILE]
    assert default.engine == EngineConfig()
    assert default.workload == WorkloadConfig()
    assert default.release == "0.19.0"


@pytest.mark.parametrize("stack", STACKS)
def test_the_default_profile_changes_no_setting_of_a_shipped_stack(stack: str) -> None:
    raw = stack_settings(stack)
    without_profile = StackConfig.model_validate_json(json.dumps(apply_preset(raw)), by_alias=True, by_name=False)
    with_profile = validate(raw)
    assert with_profile.engine == without_profile.engine
    assert with_profile.workload == without_profile.workload
    assert with_profile.weights.model_copy(update={"checkpoint_gib": None}) == without_profile.weights
    assert with_profile.weights.checkpoint_gib == 29, "the profile knows its checkpoint's size"


def rendered_profile(name: str, render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory) -> RenderedStack:
    variant = PROFILE_VARIANTS[name]
    return render_stack(variant) if variant in STACKS else render_variant(variant, render_stack, tmp_path_factory)


def serving_container(rendered: RenderedStack) -> dict[str, Any]:
    containers = [
        container
        for deployment in rendered.kind("Deployment")
        for container in deployment["spec"]["template"]["spec"]["containers"]
        if container["name"] == "vllm"
    ]
    (container,) = containers
    found: dict[str, Any] = container
    return found


def serve_args(rendered: RenderedStack) -> list[str]:
    args: list[str] = serving_container(rendered)["args"]
    return args


@pytest.mark.parametrize("name", [profile.value for profile in ProfileName])
def test_each_profile_renders_policy_clean_on_eight_gpus(
    name: str, render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    profile = PROFILES[ProfileName(name)]
    rendered = rendered_profile(name, render_stack, tmp_path_factory)
    policy = json.loads((rendered.directory / "policy.json").read_text())
    assert policy["mandatory"] == 0
    # the dev revision warning, and the time-to-serve advisory where the stack autoscales on queue depth
    autoscaled = bool(rendered.kind("HorizontalPodAutoscaler"))
    expected = {"LLM-WGT-003", *(["LLM-OPS-005"] if autoscaled else [])}
    assert {item["policy"] for item in policy["violations"]} <= expected
    container = serving_container(rendered)
    assert container["resources"]["limits"]["nvidia.com/gpu"] == "8"
    flags = dict(arg.removeprefix("--").split("=", 1) for arg in serve_args(rendered)[1:] if "=" in arg)
    assert int(flags["data-parallel-size"]) * int(flags["tensor-parallel-size"]) == 8
    args = serve_args(rendered)
    assert args[0] == f"/models/{profile.checkpoint.model}"
    assert ("--enable-expert-parallel" in args) is profile.checkpoint.mixture_of_experts
    assert ("speculative-config" in flags) is (profile.engine.speculative is not None)
    assert flags["kv-cache-dtype"] == "fp8_e4m3", "never an NVFP4 KV cache"
    assert flags.get("mamba-cache-mode") == ("align" if profile.checkpoint.hybrid_attention else None)
    assert image_release(container["image"]) == profile.release
    env = {item["name"]: item["value"] for item in container["env"]}
    assert env["VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS"] == "1", "explicit on every release"
    assert check_serve_args(args, image_version(container["image"])) == [], "the real parser of its release takes it"


@pytest.mark.parametrize("name", [profile.value for profile in ProfileName])
def test_each_profile_sizes_its_disk_for_its_checkpoint(
    name: str, render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    profile = PROFILES[ProfileName(name)]
    rendered = rendered_profile(name, render_stack, tmp_path_factory)
    disks = [record["inputs"] for record in rendered.of_type("gcp:compute/disk:Disk")]
    serving = [disk for disk in disks if disk["type"] == "hyperdisk-ml"]
    assert serving and all(disk["size"] == profile.disk_gib for disk in serving)
    assert profile.disk_gib >= 2.2 * profile.checkpoint.size_gib, "twice the checkpoint during the download, +10%"


def test_every_pinned_release_has_its_argument_table() -> None:
    assert sorted(RELEASES) == vllm_args.versions()


def test_the_moe_profiles_run_the_current_release_and_the_nvfp4_one_its_fp4_kernels() -> None:
    for name in (ProfileName.qwen3_5_35b_a3b_fp8, ProfileName.qwen3_5_122b_a10b_fp8):
        assert PROFILES[name].release == "0.33.0"
    nvfp4 = PROFILES[ProfileName.qwen3_5_397b_a17b_nvfp4]
    assert nvfp4.engine.moe_backend == "flashinfer_trtllm"
    assert nvfp4.checkpoint.quantization == "nvfp4"
    assert RELEASES[nvfp4.release].loads_nvfp4_mtp


def test_stack_keys_override_a_profile_and_are_validated() -> None:
    base = {"environment": "dev", "project": "my-llm-dev", "profile": "qwen3.5-397b-a17b-nvfp4"}
    with_mtp = validate({**base, "engine": {"speculative": {"method": "mtp", "numSpeculativeTokens": 1}}})
    assert with_mtp.engine.speculative is not None and with_mtp.engine.moe_backend == "flashinfer_trtllm"
    assert validate({**base, "workload": {"concurrencyPerNode": 512}}).workload.max_prompt_tokens == 1536
    with pytest.raises(InvalidConfig, match="it must equal the 8 GPUs of an A4 node"):
        validate({**base, "engine": {"dataParallelSize": 4}})
    with pytest.raises(InvalidConfig, match=r"engine\.speculative: vLLM 0\.19\.0 cannot load the BF16 MTP branch"):
        validate({**base, "engine": {"image": "vllm/vllm-openai:v0.19.0", "speculative": {"method": "mtp"}}})
    with pytest.raises(InvalidConfig, match=r"profile: Input should be 'qwen3\.5-27b-fp8'"):
        validate({**base, "profile": "qwen3.5-27b"})


def test_another_checkpoint_must_set_what_the_profile_set_for_its_own() -> None:
    base = {"environment": "dev", "project": "my-llm-dev"}
    llama = {"model": "meta-llama/Llama-3.1-70B-Instruct", "sizeGib": 400}
    with pytest.raises(InvalidConfig) as error:
        validate({**base, "weights": llama})
    assert str(error.value) == (
        "invalid stack config: weights.model: 'meta-llama/Llama-3.1-70B-Instruct' is not the checkpoint of profile "
        "qwen3.5-27b-fp8; set engine.speculative, engine.mambaCacheMode, engine.mambaBlockSize, "
        "engine.reasoningParser for it (null or false turns one off) or pick its profile"
    )
    engine = {"speculative": None, "mambaCacheMode": None, "mambaBlockSize": None, "reasoningParser": None}
    config = validate({**base, "weights": llama, "engine": engine})
    assert config.weights.checkpoint_gib is None, "the profile's checkpoint size does not follow another model"
    assert config.engine.speculative is None and config.engine.data_parallel_size == 8
    assert dict(key_settings(config))["profile"] == (
        "qwen3.5-27b-fp8: its engine and workload defaults only; the stack serves another checkpoint than the "
        "profile's Qwen/Qwen3.5-27B-FP8"
    ), "not the profile's summary (the published recipe, measured on B200)"
