"""Serving profiles: a checkpoint and the engine settings that serve it on one A4 node (8x B200).

The stack key `profile` names one; the profile's settings become the defaults of `weights`, `engine` and `workload`
(under the environment preset and the stack's own keys, which win). A profile is validated like a stack: its engine
settings are an `EngineConfig`, its workload a `WorkloadConfig`. Its measurements (`stacks/capacity/measurements.yaml`)
are keyed by its name among the rest of the configuration; one with none gets no figure.

Where each choice was checked, what was not, and that nothing but the 27B is measured on B200: docs/profiles.md.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from components.vllm import PROFILE_ENGINE_FIELDS
from schemas.vllm_releases import CURRENT_RELEASE, MEASURED_RELEASE, RELEASES, image_release, version_key
from stacks.config.base import ConfigModel
from stacks.config.engine import EngineConfig, MambaCacheMode, SpeculativeConfig, WorkloadConfig
from stacks.config.presets import merge
from stacks.config.quoting import quote


class ProfileName(StrEnum):
    qwen3_5_27b_fp8 = "qwen3.5-27b-fp8"
    qwen3_5_35b_a3b_fp8 = "qwen3.5-35b-a3b-fp8"
    qwen3_5_122b_a10b_fp8 = "qwen3.5-122b-a10b-fp8"
    qwen3_5_397b_a17b_nvfp4 = "qwen3.5-397b-a17b-nvfp4"


DEFAULT_PROFILE = ProfileName.qwen3_5_27b_fp8


class Checkpoint(ConfigModel):
    """The weights a profile serves and the facts about them the stack relies on."""

    model: str = Field(description="Hugging Face repository id (weights.model).")
    quantization: Literal["fp8", "nvfp4"] = Field(
        description="fp8: Qwen's official FP8 checkpoints; nvfp4: NVIDIA ModelOpt FP4 experts (Blackwell only)."
    )
    size_gib: Annotated[int, Field(ge=1)] = Field(description="Size on disk (weights.checkpointGib).")
    total_parameters_billion: Annotated[float, Field(gt=0)] = Field(description="All parameters.")
    active_parameters_billion: Annotated[float, Field(gt=0)] = Field(
        description="Parameters per token (the total for a dense model)."
    )
    mtp_heads: bool = Field(description="Whether the checkpoint carries multi-token-prediction heads (MTP drafts).")
    hybrid_attention: bool = Field(
        description="Gated DeltaNet + full attention (Qwen 3.5): needs the mamba cache flags (policy LLM-VLLM-009)."
    )
    native_context: Annotated[int, Field(ge=1)] = Field(description="Context length the model was trained for.")

    @property
    def mixture_of_experts(self) -> bool:
        return self.active_parameters_billion < self.total_parameters_billion


# Engine keys that only fit the profile's own checkpoint: another weights.model must set them itself.
CHECKPOINT_ENGINE_KEYS = (
    "speculative",
    "mamba_cache_mode",
    "mamba_block_size",
    "language_model_only",
    "enable_expert_parallel",
    "moe_backend",
    "reasoning_parser",
)


class ServingProfile(ConfigModel):
    """One checkpoint served on one A4 node: what `profile: NAME` sets."""

    name: ProfileName = Field(description="The value of the stack key `profile`.")
    summary: str = Field(description="One line for plan.md and the docs.")
    checkpoint: Checkpoint = Field(description="The weights and their facts.")
    disk_gib: Annotated[int, Field(ge=4)] = Field(
        description="weights.sizeGib: holds the checkpoint twice during the download, plus 10%."
    )
    engine: EngineConfig = Field(description="The engine settings; the keys in PROFILE_ENGINE_FIELDS become defaults.")
    workload: WorkloadConfig = Field(description="The traffic one node is sized for (workload.*).")

    @property
    def release(self) -> str:
        """The vLLM release the profile is validated on (its image's tag)."""
        version = image_release(self.engine.image)
        assert version is not None  # EngineConfig refuses an image without a pinned release
        return version

    @model_validator(mode="after")
    def _consistent(self) -> ServingProfile:
        engine, checkpoint = self.engine, self.checkpoint
        if engine.speculative is not None and not checkpoint.mtp_heads:
            raise ValueError(f"{self.name}: speculative decoding needs MTP heads, which {checkpoint.model} lacks")
        if checkpoint.mixture_of_experts and engine.data_parallel_size > 1 and not engine.enable_expert_parallel:
            raise ValueError(f"{self.name}: a MoE model with data parallel needs enableExpertParallel")
        if checkpoint.hybrid_attention != (engine.mamba_cache_mode is MambaCacheMode.align):
            raise ValueError(f"{self.name}: mambaCacheMode align exactly for the hybrid checkpoints")
        if self.disk_gib < 2.2 * checkpoint.size_gib:
            raise ValueError(f"{self.name}: diskGib {self.disk_gib} cannot hold the checkpoint twice plus 10%")
        return self

    def stack_defaults(self, stack_model: str | None) -> dict[str, Any]:
        """The settings the profile gives a stack (camelCase, as in a stack file). A stack that
        serves another checkpoint keeps the profile's engine and workload but not the checkpoint's
        size facts (the estimate from its name and the default disk apply)."""
        engine = self.engine.model_dump(mode="json", by_alias=True, include=set(PROFILE_ENGINE_FIELDS))
        weights: dict[str, Any] = {"model": self.checkpoint.model}
        if stack_model in (None, self.checkpoint.model):
            weights |= {"checkpointGib": self.checkpoint.size_gib, "sizeGib": self.disk_gib}
        return {"weights": weights, "engine": engine, "workload": self.workload.model_dump(mode="json", by_alias=True)}

    def foreign_checkpoint_keys(self, stack_engine: dict[str, Any]) -> list[str]:
        """The checkpoint-specific engine keys the profile sets (to anything but off) that a stack
        serving another checkpoint left to the profile."""
        defaults = self.engine.model_dump(mode="json", by_alias=True, include=set(CHECKPOINT_ENGINE_KEYS))
        return [key for key, value in defaults.items() if value not in (None, False) and key not in stack_engine]


_MOE_RELEASE_IMAGE = RELEASES[CURRENT_RELEASE].image


def _moe_engine(**settings: Any) -> EngineConfig:
    """The MoE profiles' engine: the recipes' throughput layout (DP 8 + expert parallel, text only,
    FP8 KV, the hybrid cache flags of the 27B recipe) on the current release, MTP off."""
    return EngineConfig.model_validate(
        {
            "image": _MOE_RELEASE_IMAGE,
            "dataParallelSize": 8,
            "tensorParallelSize": 1,
            "enableExpertParallel": True,
            "gpuMemoryUtilization": 0.9,
            "attentionBackend": None,
            "speculative": None,
            "languageModelOnly": True,
            **settings,
        }
    )


def _qwen3_5(
    model: str, quantization: Literal["fp8", "nvfp4"], size_gib: int, total: float, active: float
) -> Checkpoint:
    """A Qwen 3.5 checkpoint: every one the profiles serve carries MTP heads and hybrid attention, and
    was trained for a 262,144-token context."""
    return Checkpoint(
        model=model,
        quantization=quantization,
        size_gib=size_gib,
        total_parameters_billion=total,
        active_parameters_billion=active,
        mtp_heads=True,
        hybrid_attention=True,
        native_context=262_144,
    )


PROFILES: dict[ProfileName, ServingProfile] = {
    profile.name: profile
    for profile in (
        ServingProfile(
            name=ProfileName.qwen3_5_27b_fp8,
            summary="Qwen 3.5 27B (dense) FP8, one copy per GPU: the published recipe, measured on B200",
            checkpoint=_qwen3_5("Qwen/Qwen3.5-27B-FP8", "fp8", size_gib=29, total=27, active=27),
            disk_gib=100,
            engine=EngineConfig(),
            workload=WorkloadConfig(),
        ),
        ServingProfile(
            name=ProfileName.qwen3_5_35b_a3b_fp8,
            summary="Qwen 3.5 35B-A3B (MoE, 3B active) FP8, data parallel 8 + expert parallel; not measured",
            checkpoint=_qwen3_5("Qwen/Qwen3.5-35B-A3B-FP8", "fp8", size_gib=40, total=35, active=3),
            disk_gib=100,
            engine=_moe_engine(),
            workload=WorkloadConfig(),
        ),
        ServingProfile(
            name=ProfileName.qwen3_5_122b_a10b_fp8,
            summary="Qwen 3.5 122B-A10B (MoE, 10B active) FP8, data parallel 8 + expert parallel; not measured",
            checkpoint=_qwen3_5("Qwen/Qwen3.5-122B-A10B-FP8", "fp8", size_gib=137, total=122, active=10),
            disk_gib=320,
            engine=_moe_engine(),
            workload=WorkloadConfig(),
        ),
        ServingProfile(
            name=ProfileName.qwen3_5_397b_a17b_nvfp4,
            summary="Qwen 3.5 397B-A17B (MoE, 17B active), NVIDIA's NVFP4 checkpoint, data parallel 8 + expert "
            "parallel, FlashInfer TRT-LLM FP4 MoE kernels; not measured in this layout",
            checkpoint=_qwen3_5("nvidia/Qwen3.5-397B-A17B-NVFP4", "nvfp4", size_gib=222, total=397, active=17),
            disk_gib=500,
            engine=_moe_engine(moeBackend="flashinfer_trtllm", maxNumSeqs=1024),
            workload=WorkloadConfig(concurrency_per_node=1024),
        ),
    )
}
assert PROFILES[DEFAULT_PROFILE].release == MEASURED_RELEASE


def profile_of(name: str | ProfileName) -> ServingProfile:
    return PROFILES[ProfileName(name)]


def profile_for_model(model: str) -> ServingProfile | None:
    """The profile whose checkpoint a model id is, if any."""
    return next((profile for profile in PROFILES.values() if profile.checkpoint.model == model), None)


def mtp_problem(model: str, speculative: SpeculativeConfig | None, image: str) -> str:
    """Why MTP cannot run for a known checkpoint on this release (empty when it can or is off)."""
    profile = profile_for_model(model)
    if speculative is None or profile is None:
        return ""
    if not profile.checkpoint.mtp_heads:
        return f"{model} has no MTP heads; set engine.speculative: null"
    release = image_release(image)
    loads = [version for version, facts in RELEASES.items() if facts.loads_nvfp4_mtp]
    if profile.checkpoint.quantization == "nvfp4" and release is not None and not RELEASES[release].loads_nvfp4_mtp:
        first = min(loads, key=version_key)
        return (
            f"vLLM {release} cannot load the BF16 MTP branch of {model} "
            f"(https://github.com/vllm-project/vllm/pull/38832); use a v{first} image or set engine.speculative: null"
        )
    return ""


def apply_profile(raw: dict[str, Any]) -> dict[str, Any]:
    """Lay the stack's settings (preset applied) over its profile's; an unknown profile name passes
    through for validation to report."""
    name = raw.get("profile", DEFAULT_PROFILE.value)
    # a list or a mapping (unhashable) is left to validation too, which names the allowed profiles
    if not isinstance(name, str) or name not in {profile.value for profile in ProfileName}:
        return raw
    weights = raw.get("weights")
    model = weights.get("model") if isinstance(weights, dict) else None
    return merge(PROFILES[ProfileName(name)].stack_defaults(model if isinstance(model, str) else None), raw)


def foreign_checkpoint_problem(profile: ServingProfile, model: str, raw: dict[str, Any]) -> str:
    """One line when the stack serves another checkpoint than its profile's and left a
    checkpoint-specific engine key (MTP, the hybrid cache, MoE kernels, ...) to the profile."""
    if model == profile.checkpoint.model:
        return ""
    engine = raw.get("engine")
    left = profile.foreign_checkpoint_keys(engine if isinstance(engine, dict) else {})
    if not left:
        return ""
    keys = ", ".join(f"engine.{key}" for key in left)
    return (
        f"weights.model: {quote(model)} is not the checkpoint of profile {profile.name.value}; set {keys} "
        "for it (null or false turns one off) or pick its profile"
    )
