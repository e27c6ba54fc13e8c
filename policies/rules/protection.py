"""Production stacks keep what is slow to rebuild: the cluster and the weight disks."""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ReportViolation, StackValidationArgs, StackValidationPolicy

from policies.graph import CLUSTER_TYPE, ENVIRONMENT_LABEL, environments, pod_templates, weights_links
from policies.settings import Setting, config_schema
from policies.vllm_command import vllm_servers

# pulumi-gcp's deletion policies that keep a disk when Pulumi deletes it (ABANDON drops it from the
# stack and leaves it in the project; PREVENT fails the deletion).
KEEPING_DELETION_POLICIES = ("ABANDON", "PREVENT")

PRODUCTION_ENVIRONMENTS = Setting(
    "productionEnvironments",
    ["prod"],
    f"environments (gcp provider defaultLabels.environment, Namespace label {ENVIRONMENT_LABEL}) that are production",
)


def _production_is_protected(args: StackValidationArgs, report: ReportViolation) -> None:
    production = set(PRODUCTION_ENVIRONMENTS.read(args.get_config()))
    environment = sorted(environments(args.resources) & production)
    if not environment:
        return
    for cluster in args.resources:
        if cluster.resource_type != CLUSTER_TYPE:
            continue
        if cluster.props.get("deletionProtection") is not True:
            report(f"{environment[0]} cluster without deletionProtection", cluster.urn)
        if not cluster.opts.protect:
            report(f"{environment[0]} cluster without the Pulumi protect option", cluster.urn)
    holders = {}
    for resource, _ in pod_templates(args.resources):
        for server in vllm_servers(resource.resource_type, resource.props):
            for link in weights_links(args.resources, server.weights_claim):
                if link.holds_weights:
                    holders[link.resource.name] = link
    for link in holders.values():
        if link.resource.opts.protect or link.resource.props.get("deletionPolicy") in KEEPING_DELETION_POLICIES:
            continue
        keeps = " or deletionPolicy ABANDON" if link.kind == "disk" else ""
        report(f"{environment[0]} weights {link.kind} without the Pulumi protect option{keeps}", link.resource.urn)


PRODUCTION_IS_PROTECTED = StackValidationPolicy(
    name="LLM-PROD-001",
    display_name="Production keeps deletion protection on the cluster and the weight disks",
    description=(
        "In a production stack (environment label in productionEnvironments, default prod) the GKE cluster needs "
        "deletionProtection and the Pulumi protect option, and every resource whose deletion deletes the served "
        "weights (the Hyperdisk ML disks, a volume or claim that does not retain them) the protect option, "
        "or for a disk the deletionPolicy ABANDON that keeps it while letting a revision change replace it: "
        "rebuilding costs node provisioning (~5-6 min), a weight re-download and ~10 min of model load per node."
    ),
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_production_is_protected,
    config_schema=config_schema(PRODUCTION_ENVIRONMENTS),
)
