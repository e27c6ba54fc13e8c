"""`check-policies RESOURCES_JSON`: the policy pack applied offline to a render's resources.json.

The same policy objects the engine runs get the same argument types, built the way the engine
builds them: every resource goes to every resource policy as `ResourceValidationArgs` with its
inputs; the whole graph goes to every stack policy as `StackValidationArgs` of `PolicyResource`s
(parents and dependencies linked); properties arrive behind the SDK's unknown-checking proxy with
every number a float; policy config gets the schema defaults and may override enforcement levels;
a rule that reads a value unknown at preview yields an advisory "can't run" diagnostic.
The one difference: the engine hands stack policies outputs, the render has inputs (the same
values at preview for the resources of this stack), and secrets are "[secret]" instead of plaintext.
"""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import asdict, dataclass
from inspect import isawaitable
from pathlib import Path
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyCustomTimeouts,
    PolicyProviderResource,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
)
from pulumi_policy.proxy import UnknownValueError, unknown_checking_proxy

from commands.check_policies.pack_config import check_policy_config
from commands.io.cli import STACK_HELP, command_parser, path_argument, stack_ref
from commands.io.console import folded, guarded, shown
from commands.io.output import unfinished_write
from commands.io.records import validated_records
from common.input_files import MIB, InputError, parse_json, read_json, read_text
from policies.pack import PACK_NAME, POLICIES
from policies.redaction import redact_secrets

STACK_TARGET = "(stack)"
DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(h|ms|m|s)")
SECONDS_PER_UNIT = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
REPORTED_LEVELS = {
    EnforcementLevel.MANDATORY: "mandatory",
    EnforcementLevel.REMEDIATE: "mandatory",
    EnforcementLevel.ADVISORY: "advisory",
}


@dataclass(frozen=True, order=True)
class Violation:
    policy: str
    resource: str
    level: str
    message: str
    type: str

    def __post_init__(self) -> None:
        # A message may quote an input; a token in it must not reach stderr, policy.json or plan.md.
        object.__setattr__(self, "message", redact_secrets(self.message))

    @property
    def mandatory(self) -> bool:
        return self.level == "mandatory"

    def line(self) -> str:
        """One line, whatever the names in it hold (a forged record's name with line breaks adds no lines)."""
        return folded(f"{self.level} {self.policy} {self.resource}: {self.message}")


def engine_shaped(value: Any) -> Any:
    """Property values as the engine's protobuf structs deliver them: every number a float."""
    if isinstance(value, Mapping):
        return {key: engine_shaped(item) for key, item in value.items()}
    if isinstance(value, list):
        return [engine_shaped(item) for item in value]
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def _seconds(duration: str) -> float:
    return sum(float(amount) * SECONDS_PER_UNIT[unit] for amount, unit in DURATION_PART.findall(duration))


def _urn(record: Mapping[str, Any], stack: str, project: str) -> str:
    return f"urn:pulumi:{stack}::{project}::{record['type']}::{record['name']}"


def _options(record: Mapping[str, Any], parent_urn: str | None) -> Any:
    # a null option (the record check lets it through) is the option not set
    options = record["options"]
    timeouts = options.get("customTimeouts") or {}
    return PolicyResourceOptions(
        protect=bool(options.get("protect")),
        ignore_changes=list(options.get("ignoreChanges") or []),
        delete_before_replace=options.get("deleteBeforeReplace"),
        aliases=[],
        custom_timeouts=PolicyCustomTimeouts(
            *(_seconds(timeouts.get(operation, "")) for operation in ("create", "update", "delete"))
        ),
        additional_secret_outputs=list(options.get("additionalSecretOutputs") or []),
        parent=parent_urn,
    )


@dataclass(frozen=True)
class PolicySettings:
    """One policy's level and config, resolved from a policy config file the way the engine does."""

    level: Any
    config: dict[str, Any]


def _settings(policy: Any, config: Mapping[str, Any]) -> PolicySettings:
    def level_in(entry: Any) -> Any:
        value = entry.get("enforcementLevel") if isinstance(entry, Mapping) else entry
        return EnforcementLevel(value) if value else None

    entry = config.get(policy.name, {})
    level = level_in(entry) or level_in(config.get("all")) or policy.enforcement_level or EnforcementLevel.ADVISORY
    schema = policy.config_schema.properties if policy.config_schema is not None else {}
    values = {key: setting["default"] for key, setting in schema.items() if "default" in setting}
    if isinstance(entry, Mapping):
        values.update({key: value for key, value in entry.items() if key != "enforcementLevel"})
    return PolicySettings(level, values)


@dataclass(frozen=True)
class Graph:
    """A render's records, shaped once the way the engine hands resources to policies."""

    records: Sequence[Mapping[str, Any]]
    urns: Mapping[str, str]
    props: Mapping[str, Any]
    options: Mapping[str, Any]
    providers: Mapping[str, Any]

    @classmethod
    def of(cls, records: Sequence[Mapping[str, Any]], stack: str, project: str) -> Graph:
        urns = {record["name"]: _urn(record, stack, project) for record in records}
        props = {record["name"]: unknown_checking_proxy(engine_shaped(record["inputs"])) for record in records}
        providers = {
            record["name"]: PolicyProviderResource(
                record["type"], props[record["name"]], urns[record["name"]], record["name"]
            )
            for record in records
            if record["type"].startswith("pulumi:providers:")
        }
        options = {record["name"]: _options(record, urns.get(record.get("parent") or "")) for record in records}
        return cls(records, urns, props, options, providers)

    def name_of(self, urn: str | None) -> str:
        return next((name for name, known in self.urns.items() if known == urn), STACK_TARGET)

    def type_of(self, name: str) -> str:
        return next((record["type"] for record in self.records if record["name"] == name), "")

    def resource_args(self, record: Mapping[str, Any], config: dict[str, Any]) -> Any:
        name = record["name"]
        provider = self.providers.get(record.get("provider") or "")
        return ResourceValidationArgs(
            record["type"], self.props[name], self.urns[name], name, self.options[name], provider, config
        )

    def stack_args(self, config: dict[str, Any]) -> Any:
        resources = {
            record["name"]: PolicyResource(
                record["type"],
                self.props[record["name"]],
                self.urns[record["name"]],
                record["name"],
                self.options[record["name"]],
                self.providers.get(record.get("provider") or ""),
                None,
                [],
                {},
            )
            for record in self.records
        }
        for record in self.records:
            resource = resources[record["name"]]
            resource.parent = resources.get(record.get("parent") or "")
            resource.dependencies = [
                resources[name] for name in record["options"].get("dependsOn") or [] if name in resources
            ]
        return StackValidationArgs(list(resources.values()), config)


def _validate(policy: Any, args: Any, report: Any) -> None:
    """Run one validation, awaiting it when the rule is async (as the engine's servicer does)."""
    validation = policy.validate(args, report)
    if isawaitable(validation):

        async def wait(awaitable: Awaitable[Any]) -> None:
            await awaitable

        asyncio.run(wait(validation))


def _policy_verdicts(policy: Any, settings: PolicySettings, graph: Graph) -> list[Violation]:
    level = REPORTED_LEVELS[settings.level]
    found: list[Violation] = []

    def collect(subject: str, args: Any, report: Any) -> None:
        try:
            _validate(policy, args, report)
        except UnknownValueError as error:
            message = f"can't run policy '{policy.name}' during preview: {error.message}"
            found.append(Violation(policy.name, subject, "advisory", message, graph.type_of(subject)))

    if isinstance(policy, ResourceValidationPolicy):
        for record in graph.records:
            name = record["name"]

            def report_resource(message: str, urn: str | None = None, name: str = name) -> None:
                found.append(Violation(policy.name, name, level, message, graph.type_of(name)))

            collect(name, graph.resource_args(record, settings.config), report_resource)
    else:

        def report_stack(message: str, urn: str | None = None) -> None:
            name = graph.name_of(urn)
            found.append(Violation(policy.name, name, level, message, graph.type_of(name)))

        collect(STACK_TARGET, graph.stack_args(settings.config), report_stack)
    return found


def check_records(
    records: Sequence[Mapping[str, Any]],
    config: Mapping[str, Any] | None = None,
    stack: str = "offline",
    project: str = PACK_NAME,
    policies: Sequence[Any] = POLICIES,
) -> list[Violation]:
    """Every violation the pack reports for a render's resource records, sorted."""
    graph = Graph.of(records, stack, project)
    violations: set[Violation] = set()
    for policy in policies:
        settings = _settings(policy, config or {})
        if settings.level != EnforcementLevel.DISABLED:
            violations.update(_policy_verdicts(policy, settings, graph))
    return sorted(violations)


def summary(violations: Sequence[Violation]) -> dict[str, Any]:
    """The verdicts as `policy.json` holds them."""
    return {
        "pack": PACK_NAME,
        "policies": len(POLICIES),
        "mandatory": sum(violation.mandatory for violation in violations),
        "advisory": sum(not violation.mandatory for violation in violations),
        "violations": [asdict(violation) for violation in violations],
    }


RESOURCES_LIMIT = 64 * MIB
CONFIG_LIMIT = 1 * MIB


def read_policy_config(path: Path) -> dict[str, Any]:
    """A policy config file, checked against the pack (empty content is no config, as for the engine)."""
    text = read_text(path, CONFIG_LIMIT)
    config = parse_json(text, str(path)) if text.strip() else {}
    return check_policy_config(config, POLICIES, str(path))


EXIT_CODES = {
    0: "no mandatory violation (advisory ones are printed too)",
    1: "a mandatory violation",
    2: "bad arguments, an unusable resources file, a policy config that does not fit the pack",
}


@guarded("check-policies")
def main(argv: list[str] | None = None) -> int:
    parser = command_parser(
        "check-policies",
        "Apply the policy pack to a render's resources.json: one line per violation on standard output, "
        "the counts on standard error.",
        EXIT_CODES,
    )
    parser.add_argument(
        "resources",
        type=path_argument,
        metavar="RESOURCES_JSON",
        help="a render's resources.json, or the render's folder",
    )
    parser.add_argument(
        "--config",
        type=path_argument,
        metavar="FILE",
        help="policy config JSON, as for `pulumi preview --policy-pack-config` (levels and settings per policy)",
    )
    parser.add_argument(
        "--stack", default="offline", metavar="STACK", help=f"the stack in the resources' URNs: {STACK_HELP}"
    )
    args = parser.parse_args(argv)
    if args.resources.is_dir():  # `check-policies build/dev`: the render's folder
        args.resources = args.resources / "resources.json"
    stopped = unfinished_write(args.resources.parent, [args.resources.name])
    if stopped is not None:
        raise InputError(stopped)
    records = validated_records(read_json(args.resources, RESOURCES_LIMIT), str(args.resources))
    if not records:  # an emptied file would pass every policy
        raise InputError(
            f"{shown(args.resources)}: holds no resource record; allowed: a render's resources.json, which holds every "
            "resource the stack declares (its providers among them)"
        )
    config = read_policy_config(args.config) if args.config else {}
    violations = check_records(records, config, stack=stack_ref(args.stack).name)
    for violation in violations:
        print(violation.line())
    counts = summary(violations)
    print(
        f"{counts['mandatory']} mandatory, {counts['advisory']} advisory violation(s) "
        f"from {counts['policies']} policies",
        file=sys.stderr,
    )
    return 1 if counts["mandatory"] else 0


if __name__ == "__main__":
    sys.exit(main())
