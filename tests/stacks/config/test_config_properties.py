"""Property test over the whole config model: any stack file either renders or is refused in one
line (exit 2) with nothing written; never a traceback, a crash message, a hang or partial output.

Configs are a valid preset stack with a few keys replaced: each replaced key is any leaf of the
model's JSON schema (so new keys are covered without editing this file), its value drawn from
the schema (in range, at and past the bounds, enum members, defaults) or hostile (wrong types,
infinities, control characters, huge strings).
"""

from __future__ import annotations

import tempfile
from datetime import timedelta
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from stacks.config.stack import StackConfig
from tests.rendered import run_render

NAMESPACE = "gke-b200-serving"
SCHEMA = StackConfig.model_json_schema(by_alias=True)
DEFINITIONS: dict[str, Any] = SCHEMA["$defs"]

HOSTILE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=60),
    st.text(alphabet=st.characters(codec="ascii"), max_size=8).map(lambda text: "-" + text),
    st.just("x" * 5000),
    st.lists(st.text(max_size=5), max_size=3),
    st.dictionaries(st.text(max_size=8), st.integers(), max_size=2),
)


def _resolved(schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = {**DEFINITIONS[schema["$ref"].rsplit("/", 1)[-1]], **{k: v for k, v in schema.items() if k != "$ref"}}
    return schema


def near_miss(valid: str) -> st.SearchStrategy[str]:
    """A valid value with one character inserted or replaced: look-alike digits, letters, separators."""
    return st.tuples(st.integers(min_value=0, max_value=len(valid)), st.characters(), st.booleans()).map(
        lambda edit: valid[: edit[0]] + edit[1] + valid[edit[0] + int(edit[2]) :]
    )


def from_schema(schema: dict[str, Any], depth: int = 0) -> st.SearchStrategy[Any]:
    """Values of one schema node: mostly plausible, sometimes hostile."""
    schema = _resolved(schema)
    choices: list[st.SearchStrategy[Any]] = []
    if "default" in schema:
        choices.append(st.just(schema["default"]))
    for variant in schema.get("anyOf", []) + schema.get("oneOf", []):
        choices.append(from_schema(variant, depth + 1))
    if "enum" in schema:
        choices.append(st.sampled_from(schema["enum"]))
    if "const" in schema:
        choices.append(st.just(schema["const"]))
    kind = schema.get("type")
    if kind == "integer":
        low, high = schema.get("minimum", -(2**31)), schema.get("maximum", 2**31)
        choices.append(st.integers(min_value=low - 2, max_value=high + 2))
    elif kind == "number":
        choices.append(st.floats(min_value=-1.0, max_value=float(schema.get("maximum", 1e6)) * 2))
    elif kind == "boolean":
        choices.append(st.booleans())
    elif kind == "string":
        choices.append(st.text(max_size=40))
        if isinstance(schema.get("default"), str):
            choices.append(near_miss(schema["default"]))
    elif kind == "array" and depth < 3:
        choices.append(st.lists(from_schema(schema.get("items", {}), depth + 1), max_size=3))
    elif kind == "object" and depth < 3:
        properties = schema.get("properties", {})
        choices.append(
            st.fixed_dictionaries(
                {}, optional={name: from_schema(item, depth + 1) for name, item in properties.items()}
            )
        )
    if not choices:
        return HOSTILE
    return st.one_of(st.one_of(*choices), st.one_of(*choices), HOSTILE)


def leaves(schema: dict[str, Any], path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], dict[str, Any]]]:
    """Every key of the model as a path, with its schema; objects are walked, lists are leaves."""
    schema = _resolved(schema)
    properties = schema.get("properties")
    if schema.get("type") != "object" or not properties:
        return [(path, schema)]
    found = [(path, schema)] if path else []
    for name, item in properties.items():
        found += leaves(item, (*path, name))
    return found


LEAVES = leaves(SCHEMA)
CHANGE = st.sampled_from(LEAVES).flatmap(lambda leaf: st.tuples(st.just(leaf[0]), from_schema(leaf[1])))


def stack_document(environment: str, changes: list[tuple[tuple[str, ...], Any]]) -> dict[str, Any]:
    config: dict[str, Any] = {"environment": environment, "project": "my-llm-test", "zones": ["us-central1-b"]}
    for path, value in changes:
        target = config
        for part in path[:-1]:
            if not isinstance(target.get(part), dict):
                target[part] = {}
            target = target[part]
        target[path[-1]] = value
    return {"config": {f"{NAMESPACE}:{key}": value for key, value in config.items()}}


@settings(
    max_examples=40,
    deadline=timedelta(seconds=60),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=True,
)
@given(environment=st.sampled_from(["dev", "staging", "prod"]), changes=st.lists(CHANGE, min_size=1, max_size=3))
def test_any_config_renders_or_is_refused_in_one_line(
    environment: str, changes: list[tuple[tuple[str, ...], Any]]
) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        stack_file = Path(scratch) / "Pulumi.generated.yaml"
        stack_file.write_text(yaml.safe_dump(stack_document(environment, changes), allow_unicode=False))
        out = Path(scratch) / "out"
        captured = run_render("generated", "--config-file", str(stack_file), "--out", str(out))
        status = captured.returncode
        event(f"exit {status}")
        assert "Traceback" not in captured.stderr
        assert "render failed" not in captured.stderr, captured.stderr
        if status == 2:
            assert len(captured.stderr.splitlines()) == 1, captured.stderr
            assert captured.stderr.startswith("invalid stack config: ")
            assert not out.exists()
        else:
            assert status in (0, 1), captured.stderr
            assert (out / "resources.json").is_file() and (out / "plan.md").is_file()
