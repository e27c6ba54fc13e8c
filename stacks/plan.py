"""plan.md: a readable summary of a render, with the capacity and cost sheet."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from components.vllm import engine_args
from components.weights import local_model_path
from stacks.config import B200_GPUS_PER_NODE, StackConfig
from stacks.operations import plan_section as operations_section


def _source_label(source: Any) -> str:
    if source.type == "reservation":
        owner = f" (project {source.project})" if source.project else ""
        return f"reservation `{source.name}`{owner}"
    if source.type == "flexStart":
        return f"Flex-start (max run {source.max_run_duration_seconds} s)"
    return "Spot"


def _control_plane_label(config: StackConfig) -> str:
    networks = config.cluster.authorized_networks
    if networks is None:
        ip_endpoint = "IP endpoint open (IAM/RBAC only)"
    else:
        ip_endpoint = f"IP endpoint limited to {', '.join(n.cidr_block for n in networks) or 'no outside range'}"
    nodes = "private nodes + Cloud NAT" if config.cluster.private_nodes else "nodes with external IPs"
    return f"DNS endpoint (IAM), {ip_endpoint}; {nodes}"


def key_settings(config: StackConfig) -> list[tuple[str, str]]:
    return [
        ("environment", config.environment.value),
        ("project / region / zones", f"{config.project} / {config.region} / {', '.join(config.zones)}"),
        (
            "cluster",
            f"{config.cluster.name}, {config.cluster.release_channel.value}, >= {config.cluster.min_master_version}",
        ),
        ("control plane", _control_plane_label(config)),
        (
            "deletion protection",
            f"cluster {'on' if config.protected else 'off'}, weights {'on' if config.weights_protected else 'off'}",
        ),
        ("A4 nodes (8x B200 each)", str(config.capacity.nodes)),
        ("capacity fallback", " -> ".join(_source_label(source) for source in config.capacity.sources)),
        ("model", f"{config.weights.model}@{config.weights.revision} served as `{config.served_model_name}`"),
        ("weights", f"Hyperdisk ML {config.weights.size_gib} GiB, {config.weights.throughput_mibps} MiB/s"),
        (
            "engine",
            f"{config.engine.image}, DP {config.engine.data_parallel_size} x TP {config.engine.tensor_parallel_size}",
        ),
        (
            "vllm serve",
            " ".join(
                f"`{arg}`"
                for arg in engine_args(
                    config.engine,
                    local_model_path(config.weights.mount_path, config.weights.model),
                    config.served_model_name,
                )
            ),
        ),
        ("routing", config.routing.mode.value),
    ]


def cost_sheet(config: StackConfig) -> list[str]:
    nodes = config.capacity.nodes
    economics = config.economics
    tokens_per_second = nodes * economics.tokens_per_second_per_node
    million_tokens_per_hour = tokens_per_second * 3600 / 1e6
    rows = [
        "| | per node | stack |",
        "|---|---|---|",
        f"| A4 nodes / B200 GPUs | 1 / {B200_GPUS_PER_NODE} | {nodes} / {nodes * B200_GPUS_PER_NODE} |",
        f"| expected total tok/s (recipe: {economics.tokens_per_second_per_node:,.0f} per node at 12 nodes) "
        f"| {economics.tokens_per_second_per_node:,.0f} | {tokens_per_second:,.0f} |",
        f"| concurrent requests sized for | {config.workload.concurrency_per_node:,} "
        f"| {nodes * config.workload.concurrency_per_node:,} |",
    ]
    for label, price in (
        ("Spot", economics.spot_per_node_hour),
        ("1-year committed", economics.committed_per_node_hour),
    ):
        rows.append(
            f"| {label} USD/h (VM, before Autopilot premium) | {price:,.2f} | {nodes * price:,.2f} "
            f"(USD {nodes * price / million_tokens_per_hour:.3f} per million tokens) |"
        )
    return rows


def policy_section(policy: dict[str, Any]) -> list[str]:
    """The verdicts of the policy pack (`policy.json`) as a table."""
    lines = [
        "## Policy verdicts",
        "",
        f"{policy['policies']} policies of pack `{policy['pack']}`: {policy['mandatory']} mandatory, "
        f"{policy['advisory']} advisory violation(s).",
    ]
    if policy["violations"]:
        lines += ["", "| level | policy | resource | message |", "|---|---|---|---|"]
        lines += [
            f"| {item['level']} | {item['policy']} | {item['resource']} | {item['message'].replace('|', '/')} |"
            for item in policy["violations"]
        ]
    return lines


def plan_markdown(
    stack: str,
    config: StackConfig,
    records: list[dict[str, Any]],
    outputs: dict[str, Any],
    manifests: list[str],
    placeholders: list[str],
    policy: dict[str, Any],
) -> str:
    lines = [f"# Plan for stack `{stack}`", ""]
    if placeholders:
        lines += [
            "Offline placeholders (secrets that cannot be decrypted here): "
            + ", ".join(f"`{key}`" for key in placeholders),
            "",
        ]
    lines += ["## Key settings", "", "| setting | value |", "|---|---|"]
    lines += [f"| {name} | {value} |" for name, value in key_settings(config)]
    lines += ["", "## Capacity and cost", "", *cost_sheet(config)]
    lines += ["", *operations_section(config)]
    lines += ["", *policy_section(policy)]

    children: dict[str | None, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        children[record["parent"]].append(record)
    components = [record for record in records if not record["custom"]]
    lines += ["", f"## Resources ({len(records)})", ""]
    for component in components:
        lines += [f"### {component['name']} ({component['type']})", ""]
        members = [record for record in children[component["name"]] if record["custom"]]
        lines += [f"- `{record['type']}` {record['name']}" for record in members] or ["- (components only)"]
        lines.append("")
    top_level = [record for record in children[None] if record["custom"]]
    if top_level:
        lines += ["### stack-level", ""] + [f"- `{record['type']}` {record['name']}" for record in top_level] + [""]
    lines += [f"## Kubernetes manifests ({len(manifests)})", ""] + [f"- manifests/{name}" for name in manifests]
    lines += ["", "## Stack outputs", ""] + [f"- `{key}`: `{value}`" for key, value in sorted(outputs.items())]
    return "\n".join(lines) + "\n"
