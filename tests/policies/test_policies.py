"""The policy pack: every rule on its fixtures, on the real stacks and on mutated renders (the pack's
files: test_pack_files.py; the runner against the engine's own policy server:
tests/commands/check_policies/test_runner.py)."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
import yaml

from commands.check_policies.runner import Violation, check_records
from policies.pack import PACK_NAME, POLICIES
from policies.redaction import token_candidates
from policies.rules.engine import MAX_REQUEST_TOKENS_ANNOTATION
from tests.conftest import RenderStack
from tests.policies.mutations import MUTATIONS, with_flag
from tests.policy_fixtures import (
    FIXTURES,
    PolicyFixture,
    inputs_of,
    load_balancer,
    queue_autoscaled,
    set_flag,
    vllm_container,
    without,
)
from tests.policy_stacks import gateway_stack, record, serving_stack
from tests.rendered import ROOT, STACK_FILES, RenderedStack, run_render

LEVELS = {policy.name: policy.enforcement_level.value for policy in POLICIES}


def verdicts(violations: list[Violation], policy: str) -> list[Violation]:
    return [violation for violation in violations if violation.policy == policy]


# ---------------------------------------------------------------- the pack itself


def test_policy_ids_are_unique_and_stable() -> None:
    names = [policy.name for policy in POLICIES]
    assert len(names) == len(set(names))
    for policy in POLICIES:
        assert re.fullmatch(r"LLM-(GPU|VLLM|SEC|WGT|NET|GKE|PROD|BENCH|OPS)-\d{3}", policy.name)
        assert policy.enforcement_level.value in ("mandatory", "advisory")
        assert policy.display_name and len(policy.description) > 80


def test_every_policy_has_a_passing_and_a_failing_fixture() -> None:
    expected = {f"{policy.name}_{outcome}" for policy in POLICIES for outcome in ("pass", "fail")}
    assert set(FIXTURES) == expected


def test_the_recipe_stack_passes_every_rule() -> None:
    for fixture in (serving_stack(), serving_stack("dev"), gateway_stack()):
        assert check_records(fixture) == []


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_fixture(name: str) -> None:
    policy, outcome = name.rsplit("_", 1)
    fixture: PolicyFixture = FIXTURES[name]()
    found = verdicts(check_records(fixture.records, fixture.config), policy)
    if outcome == "pass":
        assert found == []
    else:
        assert found, f"{policy} reported nothing"
        assert {violation.level for violation in found} == {LEVELS[policy]}


@pytest.mark.parametrize(("held_seconds", "reported"), [("600", True), ("180", False), (None, False)])
def test_held_nodes_quiet_the_queue_autoscaling_warning_only_within_the_bound(
    held_seconds: str | None, reported: bool
) -> None:
    """A held node skips the node phase, not the pod's start-up: ~10 min on one is still over 180 s."""
    records = queue_autoscaled(serving_stack(), held=True, held_seconds=held_seconds)
    found = verdicts(check_records(records), "LLM-OPS-005")
    assert bool(found) == reported
    assert (
        not found
        or "~600 s (the stack's planning figure: plan.md's Time to serve says which phases are "
        + ("measured) on a held node, still over the stack's bound of 180 s")
        in found[0].message
    )


def test_an_autoscaler_whose_floor_is_its_ceiling_adds_no_pod_to_warn_of() -> None:
    records = queue_autoscaled(serving_stack(), held=False)
    assert verdicts(check_records(records), "LLM-OPS-005"), "the fixture warns as it is"
    spec = next(record for record in records if record["name"] == "llm-hpa")["inputs"]["spec"]
    spec["minReplicas"] = spec["maxReplicas"]
    assert verdicts(check_records(records), "LLM-OPS-005") == []


# ---------------------------------------------------------------- policy config


def test_policy_config_allows_a_named_load_balancer() -> None:
    records = load_balancer(serving_stack())
    assert verdicts(check_records(records, {"LLM-NET-003": {"allowedServices": ["qwen-serving"]}}), "LLM-NET-003") == []


def test_policy_config_overrides_enforcement_levels() -> None:
    records = set_flag(serving_stack(), "--max-num-seqs", 512)
    assert verdicts(check_records(records, {"LLM-VLLM-007": "disabled"}), "LLM-VLLM-007") == []
    (raised,) = verdicts(check_records(records, {"all": "mandatory"}), "LLM-VLLM-007")
    assert raised.mandatory


def test_policy_config_changes_a_threshold() -> None:
    records = set_flag(serving_stack(), "--max-model-len", 8192)
    assert verdicts(check_records(records), "LLM-VLLM-008")
    assert verdicts(check_records(records, {"LLM-VLLM-008": {"maxOverallocation": 4}}), "LLM-VLLM-008") == []


def test_a_reused_proxy_subnet_is_named_on_the_gateway() -> None:
    records = [record for record in gateway_stack() if record["name"] != "llm-proxy-subnet"]
    assert verdicts(check_records(records), "LLM-NET-001")
    annotations = {"llm-serving/proxy-only-subnet": "shared-proxy-only"}
    inputs_of(records, "llm-gateway")["metadata"]["annotations"] = annotations
    assert verdicts(check_records(records), "LLM-NET-001") == []
    assert (
        verdicts(
            check_records(
                without(gateway_stack(), "llm-proxy-subnet"), {"LLM-NET-001": {"proxySubnetManagedElsewhere": True}}
            ),
            "LLM-NET-001",
        )
        == []
    )


def test_production_names_come_from_policy_config() -> None:
    records = serving_stack("dev")
    assert verdicts(check_records(records), "LLM-PROD-001") == []
    found = verdicts(check_records(records, {"LLM-PROD-001": {"productionEnvironments": ["dev"]}}), "LLM-PROD-001")
    assert {violation.resource for violation in found} >= {"llm-gke", f"llm-weights-disk-{'us-central1-b'}"}


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("hf_" + "aB3" * 12, 1),
        ("hf_test_token", 1),
        ("git clone https://user:hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789@huggingface.co/x", 1),
        ("hf_transfer", 0),
        ("from huggingface_hub import hf_hub_download", 0),
        ("HF_HUB_OFFLINE", 0),
        ("[secret]", 0),
    ],
)
def test_token_candidates(text: str, tokens: int) -> None:
    assert len(list(token_candidates(text))) == tokens


def test_the_stacks_own_token_outside_its_secret_is_a_violation(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pasted into extraEnv (or any input but the Secret's payload) the stack's own token is no exemption,
    also when it does not look like hf_..."""
    for token in ("hf_" + "Zy9" * 12, "canary-0f3b9d2e41c7a8"):
        monkeypatch.setenv("PULUMI_CONFIG", json.dumps({f"{PACK_NAME}:hfToken": token}))
        records = serving_stack()
        inputs_of(records, "llm-hf-token")["stringData"]["token"] = token
        assert verdicts(check_records(records), "LLM-SEC-001") == []
        vllm_env = inputs_of(records, "llm-vllm")["spec"]["template"]["spec"]["containers"][0]["env"]
        vllm_env.append({"name": "MY_TOKEN", "value": f"Bearer {token}"})
        found = verdicts(check_records(records), "LLM-SEC-001")
        assert found and "own Hugging Face token" in found[0].message
        assert token not in found[0].message


def test_the_stacks_own_secret_token_is_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine hands a policy pack decrypted secrets and the decrypted stack config."""
    token = "hf_" + "Zy9" * 12
    records = serving_stack()
    inputs_of(records, "llm-hf-token")["stringData"]["token"] = token
    assert verdicts(check_records(records), "LLM-SEC-001")
    monkeypatch.setenv("PULUMI_CONFIG", json.dumps({f"{PACK_NAME}:hfToken": token}))
    assert verdicts(check_records(records), "LLM-SEC-001") == []


# ---------------------------------------------------------------- the real stacks


@pytest.mark.parametrize("name", STACK_FILES)
def test_every_stack_file_passes(name: str, render_stack: RenderStack) -> None:
    """`render` exits 1 on a mandatory violation (the fixture asserts 0); policy.json holds the verdicts."""
    rendered = render_stack(name)
    policy = json.loads((rendered.directory / "policy.json").read_text())
    assert policy["mandatory"] == 0, policy["violations"]
    assert policy["policies"] == len(POLICIES)
    assert [Violation(**item) for item in policy["violations"]] == check_records(rendered.resources)
    assert "## Policy verdicts" in rendered.plan


@pytest.fixture(scope="session")
def rendered(dev: RenderedStack, staging: RenderedStack, prod: RenderedStack) -> dict[str, RenderedStack]:
    return {"dev": dev, "staging": staging, "prod": prod}


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_mutated_render_is_reported(mutation: str, rendered: dict[str, RenderedStack]) -> None:
    stack, mutate, policy = MUTATIONS[mutation]
    records = copy.deepcopy(rendered[stack].resources)
    mutate(records)
    found = verdicts(check_records(records), policy)
    assert found, f"{policy} missed {mutation}"
    assert {violation.level for violation in found} == {LEVELS[policy]}


def test_prefix_caching_off_for_a_hybrid_model_is_named_with_or_without_a_block_size(
    rendered: dict[str, RenderedStack],
) -> None:
    """A day-2 review: prefix caching turned off with the block size unset (the stack refuses a block size without
    it) was reported as "--mamba-block-size is unset" alone, and the reader set the block size again."""
    for block_size in (None, 16):
        records = with_flag(copy.deepcopy(rendered["prod"].resources), "--enable-prefix-caching", None)
        with_flag(records, "--mamba-block-size", block_size)
        (found,) = verdicts(check_records(records), "LLM-VLLM-009")
        assert "--enable-prefix-caching is off, which the block size needs" in found.message


def test_every_rule_has_a_mutation_of_a_real_stack() -> None:
    assert {policy for _, _, policy in MUTATIONS.values()} == set(LEVELS)


def test_render_fails_on_a_mandatory_violation_after_writing_its_files(tmp_path: Path) -> None:
    stack_doc = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    stack_doc["config"]["gke-b200-serving:engine"] = {"maxNumSeqs": 512, "gpuMemoryUtilization": 0.95}
    config_file = tmp_path / "Pulumi.bad.yaml"
    config_file.write_text(yaml.safe_dump(stack_doc))
    out = tmp_path / "out"
    run = run_render("bad", "--config-file", str(config_file), "--out", str(out))
    assert run.returncode == 1, run.stderr
    assert "mandatory LLM-VLLM-006" in run.stderr and "advisory LLM-VLLM-007" in run.stderr
    policy = json.loads((out / "policy.json").read_text())
    # advisory: LLM-VLLM-007, and LLM-WGT-003 because the dev stack follows the branch main
    assert policy["mandatory"] == 1 and policy["advisory"] == 2
    assert "| mandatory | LLM-VLLM-006 |" in (out / "plan.md").read_text()


@pytest.mark.parametrize(
    ("model", "served", "repository"),
    [
        ("/models/Qwen/Qwen3.5-27B-FP8", "Qwen/Qwen3.5-27B-FP8", "Qwen/Qwen3.5-27B-FP8"),
        ("/models/nvidia/Qwen3.5-397B-A17B-NVFP4", "qwen-big", "nvidia/Qwen3.5-397B-A17B-NVFP4"),
        ("/models/m", None, "ORG/MODEL"),
    ],
)
def test_the_revision_hint_names_the_workloads_own_checkpoint(model: str, served: str | None, repository: str) -> None:
    """LLM-WGT-003's git ls-remote hint is for the model the workload serves, not a placeholder."""
    from policies.rules.weights import _repository_of

    assert _repository_of(model, served) == repository


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "0.9x"])
def test_a_gpu_memory_utilization_that_is_no_number_breaks_the_mtp_headroom_rule(value: str) -> None:
    """A hand-edited render with `--gpu-memory-utilization=nan` passed the mandatory rule (read as the default)."""
    records = set_flag(serving_stack(), "--gpu-memory-utilization", value)
    (violation,) = verdicts(check_records(records), "LLM-VLLM-006")
    assert f"--gpu-memory-utilization={value} is not a finite number" in violation.message


def test_a_hand_edited_context_check_says_what_it_read() -> None:
    """A negative max-request-tokens annotation gave `-2560.0x the longest request (-1 tokens)`, and a
    --max-model-len of 1e400 was shown as the native 262144 it was read as."""
    records = set_flag(serving_stack(), "--max-model-len", "1e400")
    template = inputs_of(records, "llm-vllm")["spec"]["template"]
    template.setdefault("metadata", {}).setdefault("annotations", {})[MAX_REQUEST_TOKENS_ANNOTATION] = "-1"
    (violation,) = verdicts(check_records(records), "LLM-VLLM-008")
    assert "--max-model-len 1e400 (no finite number, read as 262144)" in violation.message
    assert "-1 tokens" not in violation.message and "x the longest request (" in violation.message


@pytest.mark.parametrize(
    ("written", "read"), [("32k", "32k (32000)"), ("8K", "8K (8192)"), ("2.5K", "2.5K (no finite")]
)
def test_a_context_in_vllms_human_readable_form_is_read_as_vllm_reads_it(written: str, read: str) -> None:
    """vLLM takes `--max-model-len=32k` as 32,000 (`human_readable_int`); the rule read it as no number."""
    (violation,) = verdicts(check_records(set_flag(serving_stack(), "--max-model-len", written)), "LLM-VLLM-008")
    assert f"--max-model-len {read}" in violation.message


@pytest.mark.parametrize("written", ["--api-k", "--api-ke=", "--api_ke"])
def test_an_abbreviated_secret_flag_is_read_as_vllm_reads_it(written: str) -> None:
    """argparse expands `--api-k` to `--api-key`: a hand-edited render passed LLM-SEC-004 with a literal key."""
    value = "local" + "-shared-value"
    records = serving_stack()
    vllm_container(records)["args"] = [
        *vllm_container(records)["args"],
        *([written + value] if written.endswith("=") else [written, value]),
    ]
    (violation,) = verdicts(check_records(records), "LLM-SEC-004")
    assert "(vLLM reads --api-key) takes a secret" in violation.message
    assert value not in violation.message


@pytest.mark.parametrize(
    ("image", "flag"),
    [
        ("vllm/vllm-openai:v0.33.0", "--device-memory-utilization"),
        ("vllm/vllm-openai:v0.19.0", "--gpu-memory-util"),
        ("vllm/vllm-openai:v0.19.0", "--gpu_memory_utilization"),
    ],
)
def test_the_mtp_headroom_rule_reads_an_alias_or_abbreviation_of_the_flag(image: str, flag: str) -> None:
    records = set_flag(serving_stack(), flag, 0.95)
    vllm_container(records)["image"] = image
    (violation,) = verdicts(check_records(records), "LLM-VLLM-006")
    assert "--gpu-memory-utilization=0.95 with MTP" in violation.message


def test_a_serve_command_line_is_split_as_vllms_parser_splits_it() -> None:
    """How many values an option takes comes from the release's table: an on/off flag takes none, so the
    model after it is the model; `--api-key` takes every value up to the next option."""
    from policies.vllm_command import vllm_servers

    records = serving_stack()
    container = vllm_container(records)
    container["args"] = ["--enforce-eager", "/models/m", "-tp", "4", "--seed", "-1", "--api-key", "a", "b", "-dp=2"]
    deployment = inputs_of(records, "llm-vllm")
    (server,) = vllm_servers("kubernetes:apps/v1:Deployment", deployment)
    assert server.model == "/models/m"
    assert server.flags == {
        "enforce-eager": None,
        "tensor-parallel-size": "4",
        "seed": "-1",
        "api-key": "a b",
        "data-parallel-size": "2",
    }
    assert server.parallel_gpus == 8


@pytest.mark.parametrize("spelling", ["--api-key", "--api_key", "--api-k"])
def test_a_secret_flag_inside_a_shell_script_is_found(spelling: str) -> None:
    """`sh -c "exec vllm serve ... --api-key KEY"` passed LLM-SEC-004: only separate arguments were read."""
    value = "hunter" + "2pass99"
    records = serving_stack()
    container = vllm_container(records)
    container["command"] = ["sh", "-c", " ".join(["exec", "vllm", "serve", *container["args"], spelling, value])]
    container["args"] = []
    (violation,) = verdicts(check_records(records), "LLM-SEC-004")
    assert f"container vllm: {spelling.replace('_', '-')}" in violation.message and value not in violation.message


@pytest.mark.parametrize("spelling", ["--api-key", "--api_key"])
def test_a_secret_flag_in_its_own_argument_is_reported_once(spelling: str) -> None:
    records = set_flag(serving_stack(), spelling, "hunter" + "2pass99")
    messages = [violation.message for violation in verdicts(check_records(records), "LLM-SEC-004")]
    (flagged,) = [message for message in messages if "takes a secret" in message]
    assert flagged.startswith("spec.template.spec.containers[0].args[")


@pytest.mark.parametrize(
    "command",
    [
        ["sh", "-c", "exec vllm  serve {args}"],  # two spaces
        ["sh", "-c", "python3 -m vllm.entrypoints.openai.api_server {args}"],
        ["python3", "-m", "vllm.entrypoints.cli.main", "serve", "{args}"],
    ],
)
def test_the_pack_reads_every_way_to_start_vllms_server(command: list[str]) -> None:
    """A server started otherwise than `vllm serve` with one space was no vLLM server to the pack: every
    vLLM rule passed, LLM-VLLM-006 on 0.99 of the GPU memory with MTP."""
    records = set_flag(serving_stack(), "--gpu-memory-utilization", 0.99)
    container = vllm_container(records)
    args = container["args"]
    if command[-1] == "{args}":
        container["command"], container["args"] = command[:-1], args
    else:
        container["command"], container["args"] = [*command[:-1], command[-1].format(args=" ".join(args))], []
    assert verdicts(check_records(records), "LLM-VLLM-006")


@pytest.mark.parametrize(
    "flags",
    [
        ["--speculative-config.method=mtp", "--speculative-config.num_speculative_tokens=5"],
        ["--speculative-config=$(SPEC)"],
    ],
)
def test_mtp_5_is_found_in_vllms_dotted_form_and_through_a_variable(flags: list[str]) -> None:
    """vLLM merges `--speculative-config.method=mtp ...` into one JSON flag; Kubernetes expands $(SPEC) from the
    container's environment: LLM-VLLM-004 (mandatory) passed both."""
    records = set_flag(serving_stack(), "--speculative-config", None)
    container = vllm_container(records)
    container["args"] = [*container["args"], *flags]
    container["env"] = [*container["env"], {"name": "SPEC", "value": '{"method":"mtp","num_speculative_tokens":5}'}]
    assert verdicts(check_records(records), "LLM-VLLM-004")


@pytest.mark.parametrize(
    ("data", "env"),
    [
        ({"VLLM_API_KEY": "Canary" + "CM1x9Zq"}, None),  # a variable through the container's envFrom
        ({"serve.sh": "exec vllm serve /m --api-key Canary" + "CM2x9Zq"}, None),
        (None, {"name": "VLLM_EXTRA", "value": "--api-key Canary" + "CM3x9Zq"}),
    ],
)
def test_a_literal_key_in_a_config_map_or_a_variables_value_is_found(
    data: dict[str, str] | None, env: dict[str, str] | None
) -> None:
    """A ConfigMap is no Secret: its entries are plain text in the manifest and the state (LLM-SEC-004 passed)."""
    records = serving_stack()
    if data is not None:
        inputs = {"metadata": {"name": "engine-env", "namespace": "llm-serving"}, "data": data}
        records.append(record("kubernetes:core/v1:ConfigMap", "engine-env", inputs))
        vllm_container(records)["envFrom"] = [{"configMapRef": {"name": "engine-env"}}]
    if env is not None:
        vllm_container(records)["env"].append(env)
    found = verdicts(check_records(records), "LLM-SEC-004")
    assert found and not any("Canary" in violation.message for violation in found)


MTP_5 = '{"method":"mtp","num_speculative_tokens":5}'
SPEC_TEMPLATE = '{"method":"mtp","num_speculative_tokens":$(N)}'


@pytest.mark.parametrize(
    ("script", "env"),
    [
        # Kubernetes expands a variable's value from the ones before it
        ("--speculative-config=$(SC)", [{"name": "N", "value": "5"}, {"name": "SC", "value": SPEC_TEMPLATE}]),
        # the shell expands $VAR and ${VAR} from the container's environment
        ('sh -c "exec vllm serve {args} --speculative-config \\"$SC\\""', [{"name": "SC", "value": MTP_5}]),
        ("sh -c 'cd /tmp&&vllm serve {args} --speculative-config=${SC}'", [{"name": "SC", "value": MTP_5}]),
    ],
)
def test_mtp_5_is_found_through_the_environment_and_shell_lines(script: str, env: list[dict[str, str]]) -> None:
    records = set_flag(serving_stack(), "--speculative-config", None)
    container = vllm_container(records)
    container["env"] = [*container["env"], *env]
    if script.startswith("sh -c"):
        line = script.removeprefix("sh -c ")[1:-1].replace('\\"', '"').replace("{args}", " ".join(container["args"]))
        container["command"], container["args"] = ["sh", "-c", line], []
    else:
        container["args"] = [*container["args"], script]
    assert verdicts(check_records(records), "LLM-VLLM-004")


def test_a_key_read_from_the_environment_in_a_shell_line_is_no_literal() -> None:
    """`--api-key "$VLLM_API_KEY"` (the variable from a Secret) is what the rule asks for: no violation."""
    records = serving_stack()
    container = vllm_container(records)
    secret = {"secretKeyRef": {"name": "engine-env", "key": "VLLM_API_KEY"}}
    container["env"] = [*container["env"], {"name": "VLLM_API_KEY", "valueFrom": secret}]
    for key in ('"$VLLM_API_KEY"', "${VLLM_API_KEY}", '"$(cat /var/run/secrets/key)"', "$(VLLM_API_KEY)"):
        line = " ".join(["exec", "vllm", "serve", *vllm_container(serving_stack())["args"], "--api-key", key])
        container["command"], container["args"] = ["sh", "-c", line], []
        assert not verdicts(check_records(records), "LLM-SEC-004"), key


def test_a_key_written_as_a_shell_default_is_a_literal() -> None:
    """`${KEY:-VALUE}` is VALUE when KEY is unset: the key is in the pod spec, as a shell line, a variable's value or a
    ConfigMap's entry; a default that reads another variable is not."""
    key = "Zq7pW3" + "xKv9Lm"
    literals = (f'"${{UNSET:-{key}}}"', f"${{UNSET:={key}}}", f"${{SET:+{key}}}", f'"$(printf {key})"', f"${{K}}{key}")
    for value in literals:
        records = serving_stack()
        container = vllm_container(records)
        line = " ".join(["exec", "vllm", "serve", *container["args"], "--api-key", value])
        container["command"], container["args"] = ["sh", "-c", line], []
        assert verdicts(check_records(records), "LLM-SEC-004"), value
    records = serving_stack()
    vllm_container(records)["env"].append({"name": "VLLM_EXTRA", "value": f"--api-key ${{K:-{key}}}"})
    assert verdicts(check_records(records), "LLM-SEC-004")
    for other in ("${UNSET:-$OTHER}", '${VLLM_API_KEY:-"$FALLBACK"}', '"$VLLM_API_KEY"', "'${VLLM_API_KEY}'"):
        assert not verdicts(check_records(set_flag(serving_stack(), "--api-key", other)), "LLM-SEC-004"), other
    records = serving_stack()
    container = vllm_container(records)
    line = " ".join(["exec", "vllm", "serve", *container["args"], "--api-key", '${VLLM_API_KEY:-"${OTHER}"}'])
    container["command"], container["args"] = ["sh", "-c", line], []
    assert not verdicts(check_records(records), "LLM-SEC-004")


def test_a_secret_named_variable_read_from_a_config_map_is_found() -> None:
    """`VLLM_API_KEY` from a ConfigMap's key is the key in plain text in the manifest and the state."""
    records = serving_stack()
    reference = {"configMapKeyRef": {"name": "engine-env", "key": "value"}}
    vllm_container(records)["env"].append({"name": "VLLM_API_KEY", "valueFrom": reference})
    (violation,) = verdicts(check_records(records), "LLM-SEC-004")
    assert "the variable VLLM_API_KEY is named like a secret and read from a ConfigMap" in violation.message


def test_a_key_given_after_the_equals_sign_is_a_literal_whatever_it_starts_with() -> None:
    """`--api-key=-x...` is the key `-x...` (argparse takes what follows `=`); `--api-key $(VAR)` is the
    variable Kubernetes expands from the container's environment."""
    literal = verdicts(check_records(set_flag(serving_stack(), "--api-key", "-x7Kq" + "9Zw2")), "LLM-SEC-004")
    assert any("--api-key takes a secret" in violation.message for violation in literal)
    assert not verdicts(check_records(set_flag(serving_stack(), "--api-key", "$(VLLM_API_KEY)")), "LLM-SEC-004")


def test_a_secret_flag_reported_hides_no_other_secret_of_its_resource() -> None:
    """The secret flag's report stood for every text with a secret-named flag in the resource: a password in
    another variable beside a harmless flag went unreported (a diff review)."""
    records = serving_stack()
    env = vllm_container(records).setdefault("env", [])
    env += [
        {"name": "A_OPTS", "value": "--api-key " + "Zq8hunter2xyz"},
        {"name": "B_SETUP", "value": "vllm --api-key-file /k --hf-token true && mysql password=" + "Hunter22xy"},
    ]
    messages = [violation.message for violation in verdicts(check_records(records), "LLM-SEC-004")]
    assert any("env[" in message and "--api-key" in message for message in messages)
    assert any(message.startswith("a password or key assignment at") for message in messages)
