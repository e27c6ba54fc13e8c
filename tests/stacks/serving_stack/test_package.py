"""The stack as a package other Pulumi programs use: the components' schema as the SDK's own
analyzer derives it (what `pulumi package add` generates SDKs from), and the components declared
from a program under the mocks."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from typing import Any

import pytest
import yaml

from commands.engine import mocks
from commands.stackfile import stack_settings
from stacks.config.stack import StackConfig
from stacks.load.loader import InvalidConfig, validate
from stacks.serving_stack import (
    PACKAGE_NAME,
    ServingLayer,
    ServingStack,
    ServingStackArgs,
    settings_of,
)
from tests.rendered import ROOT

STACK = f"{PACKAGE_NAME}:index:ServingStack"
LAYER = f"{PACKAGE_NAME}:index:ServingLayer"
OUTPUTS = {
    "clusterName",
    "namespace",
    "getCredentials",
    "servedModelName",
    "tryIt",
    "endpoint",
    "gatewayAddressCommand",
    "dashboardUrl",
    "stackOutputs",
}


# The schemas as a fresh process makes them, as `pulumi package add` and the provider host
# (provider/__main__.py) do: the analyzer reads the descriptions from the source of each class
# (inspect.getsource), and twice in a full pytest-xdist run a worker's in-process analysis missed some
# (not reproduced alone), which no provider process would.
SCHEMAS = """
import json
from pulumi.provider.experimental.analyzer import Analyzer
from pulumi.provider.experimental.component import ComponentProvider
from pulumi.provider.experimental.schema import generate_schema
from stacks.serving_stack import COMPONENTS, PACKAGE_NAME

result = Analyzer(PACKAGE_NAME).analyze(COMPONENTS)
dependencies = sorted(result["dependencies"], key=lambda dependency: dependency.name)
package = generate_schema(
    PACKAGE_NAME, "0.1.0", None, result["component_definitions"], result["type_definitions"], dependencies
)
served = ComponentProvider(COMPONENTS, PACKAGE_NAME, "0.1.0").schema
print(json.dumps({"generated": package.to_json(), "served": json.loads(served) if served else None}))
"""


@pytest.fixture(scope="module")
def schemas() -> dict[str, Any]:
    made = subprocess.run(
        [sys.executable, "-c", SCHEMAS], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False
    )
    assert made.returncode == 0, made.stderr[-3000:]
    document: dict[str, Any] = json.loads(made.stdout.strip().splitlines()[-1])
    return document


@pytest.fixture(scope="module")
def schema(schemas: dict[str, Any]) -> dict[str, Any]:
    generated: dict[str, Any] = schemas["generated"]
    return generated


def test_the_package_has_both_components(schema: dict[str, Any]) -> None:
    assert schema["name"] == PACKAGE_NAME
    assert set(schema["resources"]) == {STACK, LAYER}
    assert all(resource["isComponent"] for resource in schema["resources"].values())


def test_inputs_are_the_stack_files_settings(schema: dict[str, Any]) -> None:
    stack = schema["resources"][STACK]
    layer = schema["resources"][LAYER]
    assert sorted(stack["requiredInputs"]) == ["environment", "hfToken", "project"]
    assert sorted(layer["requiredInputs"]) == ["clusterName", "environment", "hfToken", "project"]
    assert "cluster" in stack["inputProperties"] and "cluster" not in layer["inputProperties"]
    inputs = stack["inputProperties"]
    assert inputs["environment"]["$ref"] == f"#/types/{PACKAGE_NAME}:index:Environment"
    assert inputs["zones"]["type"] == "array" and inputs["zones"]["items"]["type"] == "string"
    assert inputs["capacity"]["additionalProperties"]["$ref"] == "pulumi.json#/Any"
    # The token may be an Output (a secret); settings are plain: they are validated when declared.
    assert "plain" not in inputs["hfToken"] and inputs["project"]["plain"] is True
    environment = schema["types"][f"{PACKAGE_NAME}:index:Environment"]
    assert [value["value"] for value in environment["enum"]] == ["dev", "staging", "prod"]


def test_outputs_are_typed(schema: dict[str, Any]) -> None:
    for token in (STACK, LAYER):
        resource = schema["resources"][token]
        assert set(resource["properties"]) == OUTPUTS
        assert resource["properties"]["clusterName"]["type"] == "string"
        assert sorted(resource["required"]) == sorted(OUTPUTS - {"endpoint", "gatewayAddressCommand", "dashboardUrl"})


def test_every_property_is_described(schema: dict[str, Any]) -> None:
    for token, resource in schema["resources"].items():
        assert resource.get("description"), token
        for kind in ("inputProperties", "properties"):
            for name, item in resource[kind].items():
                assert item.get("description"), f"{token} {kind} {name}"


def test_the_provider_host_serves_this_schema(schemas: dict[str, Any]) -> None:
    """ComponentProvider is what component_provider_host runs (provider/__main__.py)."""
    assert schemas["served"] is not None
    assert schemas["served"]["resources"] == schemas["generated"]["resources"]
    main = (ROOT / "provider" / "__main__.py").read_text()
    assert "component_provider_host(COMPONENTS, name=PACKAGE_NAME" in main
    plugin = yaml.safe_load((ROOT / "provider" / "PulumiPlugin.yaml").read_text())
    assert plugin["runtime"]["name"] == "python"
    assert (ROOT / "provider" / "requirements.txt").read_text().splitlines()[-1] == ".."


PROGRAM = """
import pulumi
from stacks.serving_stack import ServingLayer, ServingStack

token = pulumi.Output.secret("hf_offline_placeholder")
for team in ("team-a", "team-b"):
    stack = ServingStack(team, {
        "environment": "dev",
        "project": "my-llm-dev",
        "hf_token": token,
        "cluster": {"name": team, "namespace": team},
        "capacity": {"nodes": 2.0},
    })
    pulumi.export(f"{team}-cluster", stack.cluster_name)
layer = ServingLayer("shared", {
    "cluster_name": "platform-autopilot",
    "namespace": "llm-shared",
    "environment": "staging",
    "project": "my-llm-staging",
    "hf_token": token,
    "autoscaling": {"metricsAdapter": "existing"},
})
pulumi.export("shared-endpoint", layer.gateway_address_command)
pulumi.export("shared-outputs", layer.stack_outputs)
"""


@pytest.fixture(scope="module")
def declared(tmp_path_factory: pytest.TempPathFactory) -> mocks.RunResult:
    program = tmp_path_factory.mktemp("package") / "program.py"
    program.write_text(PROGRAM)
    return mocks.run_program(stack_settings.load_stack_settings("dev"), program=program)


def test_components_declare_the_stack_under_themselves(declared: mocks.RunResult) -> None:
    urns = Counter(registration.urn for registration in declared.registrations)
    assert not [urn for urn, count in urns.items() if count > 1]
    by_urn = {registration.urn: registration for registration in declared.registrations}
    roots = {registration.urn for registration in declared.registrations if registration.type in (STACK, LAYER)}
    assert len(roots) == 3
    for registration in declared.registrations:
        if registration.urn in roots:
            continue
        parent = registration.parent
        while parent not in roots:
            assert parent in by_urn, f"{registration.type} {registration.name} is not under a component"
            parent = by_urn[parent].parent
        assert registration.name.startswith(by_urn[parent].name), registration.name


def test_each_component_is_the_whole_stack(declared: mocks.RunResult) -> None:
    types = Counter(registration.type for registration in declared.registrations)
    assert types["gcp:container/cluster:Cluster"] == 2  # the two ServingStacks; the layer creates none
    assert types["llm-serving:gke:ExistingCluster"] == 1
    assert declared.outputs["team-a-cluster"] == "team-a"
    assert declared.outputs["shared-endpoint"].startswith("kubectl get gateway")
    assert declared.outputs["shared-outputs"]["clusterName"] == "platform-autopilot"
    nodes = [
        registration.inputs["spec"]["replicas"]
        for registration in declared.registrations
        if registration.type == "kubernetes:apps/v1:Deployment" and registration.name.startswith("team-a")
    ]
    assert nodes == [2]


def test_settings_are_validated_as_in_a_stack_file() -> None:
    settings = settings_of({"environment": "dev", "project": "my-llm-dev", "capacity": {"nodes": -1.0}}, None)
    assert settings["capacity"] == {"nodes": -1}
    with pytest.raises(InvalidConfig, match=r"capacity\.nodes"):
        validate(settings)


def test_every_stack_file_setting_is_an_argument() -> None:
    """The components take every top-level setting of a stack file (profile, startup, timeToServe and
    warmCapacity were refused as unknown keys), under its Python name."""
    every: dict[str, Any] = {key: {} for key in ServingStackArgs.__optional_keys__}
    settings = settings_of({**every, "environment": "dev", "project": "p"}, every["cluster"])
    assert set(settings) == {field.alias or name for name, field in StackConfig.model_fields.items()}
    chosen = settings_of({"environment": "dev", "project": "my-llm-dev", "profile": "qwen3.5-35b-a3b-fp8"}, None)
    assert validate(chosen).profile == "qwen3.5-35b-a3b-fp8"


@pytest.mark.parametrize(
    ("component", "args", "message"),
    [
        (ServingStack, {"regoin": "europe-west4"}, "regoin: unknown key; did you mean 'region'?"),
        (ServingStack, {"hfToken": "x"}, "hfToken: unknown key; did you mean 'hf_token'?"),
        (ServingLayer, {"clusterName": "c"}, "clusterName: unknown key; did you mean 'cluster_name'?"),
        (ServingStack, {"zzz": 1}, "zzz: unknown key; allowed keys here: autoscaling, benchmark,"),
        (ServingLayer, {"hf_token": None}, "cluster_name: required key is missing"),
        (ServingStack, {"environment": "qa"}, "environment: Input should be 'dev', 'staging' or 'prod' (got 'qa')"),
        (ServingStack, {"profile": ["qwen3.5-27b-fp8"]}, "profile: Input should be 'qwen3.5-27b-fp8'"),
        (ServingStack, {"warmCapacity": {"nodes": 1}}, "warmCapacity: unknown key; did you mean 'warm_capacity'?"),
    ],
)
def test_component_args_are_refused_in_one_line_as_a_stack_files_keys(
    component: type, args: dict[str, Any], message: str
) -> None:
    """A misspelled argument used to be ignored (regoin deployed to the default region) and a missing
    one was a bare KeyError."""
    base = {"environment": "dev", "project": "my-llm-dev", "hf_token": "hf_offline_placeholder"}
    with pytest.raises(InvalidConfig) as error:
        component("llm", {key: value for key, value in {**base, **args}.items() if value is not None})
    assert str(error.value).startswith(f"invalid stack config: {message}")
    assert "\n" not in str(error.value)
    missing = {key: value for key, value in base.items() if key != "hf_token"}
    with pytest.raises(InvalidConfig, match=r"^invalid stack config: hf_token: required key is missing$"):
        ServingStack("llm", missing)  # type: ignore[arg-type]
