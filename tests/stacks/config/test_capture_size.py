"""engine.maxCudagraphCaptureSize: matched to the workload, rendered, refused when wrong, and what
the planner carries to it."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from stacks.args import serve_arguments
from stacks.capacity.measurements import configuration_of, load, matching
from stacks.load.loader import InvalidConfig, validate
from tests.conftest import RenderStack
from tests.rendered import ROOT
from tests.variants import PROJECT, stack_settings


def prod(**settings: Any) -> Any:
    return validate({**stack_settings("prod"), **settings})


def test_the_flag_is_rendered_only_when_set() -> None:
    assert not any(arg.startswith("--max-cudagraph-capture-size") for arg in serve_arguments(prod()))
    matched = prod(engine={"maxCudagraphCaptureSize": "workload"}, workload={"concurrencyPerNode": 256})
    assert "--max-cudagraph-capture-size=64" in serve_arguments(matched)
    assert "--max-cudagraph-capture-size=96" in serve_arguments(prod(engine={"maxCudagraphCaptureSize": 96}))


@pytest.mark.parametrize("stack", ["dev", "staging"])
def test_a_size_matched_to_the_workload_renders_in_either_routing(
    stack: str, render_stack: RenderStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The whole program, one serving container (ClusterIP) or one per rank (the Gateway): every Args
    the composition builds reads the size through the workload (the serving ports' list did not)."""
    document = yaml.safe_load((ROOT / f"Pulumi.{stack}.yaml").read_text())
    engine = document["config"].get(f"{PROJECT}:engine") or {}
    document["config"][f"{PROJECT}:engine"] = {**engine, "maxCudagraphCaptureSize": "workload"}
    path = tmp_path_factory.mktemp("capture") / f"Pulumi.{stack}.yaml"
    path.write_text(yaml.safe_dump(document))
    rendered = render_stack(stack, path)
    engines = [
        container
        for deployment in rendered.kind("Deployment")
        for container in deployment["spec"]["template"]["spec"]["containers"]
        if any(arg.startswith("--max-num-seqs") for arg in container.get("args", []))
    ]
    assert engines and all("--max-cudagraph-capture-size=512" in container["args"] for container in engines)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("all", "'all' is not a capture size; allowed: a number of tokens, 'workload' or null"),
        (True, "is not a capture size"),
        (0, "greater than or equal to 1"),
        (20000, "maxCudagraphCaptureSize 20000 is above maxNumBatchedTokens 16384"),
    ],
)
def test_hostile_sizes_are_refused(value: object, message: str) -> None:
    with pytest.raises(InvalidConfig, match=message):
        prod(engine={"maxCudagraphCaptureSize": value})


def test_the_planner_carries_figures_only_to_the_same_capture_sizes() -> None:
    measured = load().measurements
    # The recipe's workload size is 0.19.0's default (512): the same graphs, the measured figures stand.
    same = prod(engine={"maxCudagraphCaptureSize": "workload"})
    assert configuration_of(same).max_cudagraph_capture_size is None
    assert matching(configuration_of(same), measured) is not None
    # Another size captures other graphs: not measured.
    other = prod(engine={"maxCudagraphCaptureSize": 256})
    assert configuration_of(other).max_cudagraph_capture_size == 256
    assert matching(configuration_of(other), measured) is None
    # On 0.33.0 vLLM's default adds the decode sizes of speculative decoding: an explicit 512 is never
    # the default there.
    newer = prod(
        engine={
            "image": "vllm/vllm-openai:v0.33.0",
            "imageDigest": "sha256:" + "cd" * 32,
            "maxCudagraphCaptureSize": 512,
        }
    )
    assert configuration_of(newer).max_cudagraph_capture_size == 512
