"""Where each price the planner uses comes from, in the words plan.md and `plan` print under the cost
table: the public page, and for a derived price what it is derived from and how. A price the stack
sets itself (pricing.*) is named as the stack's; one left at its default says what the default rests on."""

from __future__ import annotations

from common.sources import (
    ABOUT_FLEX_START,
    CUD_OVERVIEW,
    DISK_PRICING,
    GKE_PRICING,
    GPU_PRICING,
    RESERVATIONS,
    WRITEUP,
    cited,
)
from stacks.capacity.planner import FREE_TIER_CREDIT_PER_MONTH, HOURS_PER_MONTH
from stacks.config.pricing import (
    COMMITTED_1Y_DISCOUNT,
    COMMITTED_3Y_DISCOUNT,
    FLEX_START_DISCOUNT,
    PricingConfig,
)

# What the planner's cost covers (commands/plan/capacity_plan.py, docs/capacity.md "Cost") and what it leaves out:
# plan.md says it under its cost table, a preview under its cost lines, so that neither an "all in" figure nor a +0
# is read as the whole bill.
PRICED_ITEMS = (
    "the A4 (B200) nodes for the hours they run (node price + Autopilot premium), the weights' Hyperdisk ML disks "
    "and disk image, and the cluster fee"
)
NOT_PRICED_ITEMS = (
    "the gateway's Endpoint Picker pods (Autopilot CPU pods, routing.gateway.eppReplicas x eppCpu/eppMemory) and "
    "the Application Load Balancer its Gateway provisions (forwarding rule, proxy instance hours, data processed), the "
    "internal passthrough load balancer of routing.internalLoadBalancer, the other CPU pods (benchmark, downloads, "
    "metrics adapter), Cloud NAT, the registry mirror and compile-cache storage, network egress, Cloud Logging and "
    "Monitoring"
)


def _default(pricing: PricingConfig, name: str) -> bool:
    return bool(getattr(pricing, name) == PricingConfig.model_fields[name].default)


def _default_of(name: str) -> float:
    """A price's default: the derived prices are derived from the defaults, not from a price a stack sets."""
    return float(PricingConfig.model_fields[name].default)


def _own(pricing: PricingConfig, name: str, what: str) -> str:
    key = PricingConfig.model_fields[name].alias or name
    return f"{what} USD {getattr(pricing, name):,.2f}: set by this stack (pricing.{key})"


def pricing_notes(pricing: PricingConfig, owns_cluster: bool = True, reserved: bool = False) -> tuple[str, ...]:
    """`reserved`: a capacity source of the stack is a reservation."""
    notes = []
    check = f"check the current A4 (a4-highgpu-8g) prices on {cited(GPU_PRICING)}"
    published = {
        "spot_per_node_hour": "Spot",
        "committed_1y_per_node_hour": "1-year commitment",
    }
    for name, what in published.items():
        if _default(pricing, name):
            notes.append(
                f"{what} USD {getattr(pricing, name):,.2f} per A4 node-hour: published in the write-up {WRITEUP}, "
                f"not read from a price list here{'; Spot prices move' if name == 'spot_per_node_hour' else ''}; "
                f"{check}"
            )
        else:
            notes.append(_own(pricing, name, f"{what} per A4 node-hour"))
    on_demand = pricing.on_demand_per_node_hour
    if _default(pricing, "on_demand_per_node_hour"):
        notes.append(
            f"on-demand-equivalent (a reservation without commitment) USD {on_demand:,.2f} per node-hour: derived, "
            f"not verified: the write-up's 1-year price (USD {_default_of('committed_1y_per_node_hour'):,.2f}) divided "
            f"by (1 - {COMMITTED_1Y_DISCOUNT:.0%}), assuming A4's "
            f"1-year resource-based commitment is {COMMITTED_1Y_DISCOUNT:.0%} off on-demand (the discounts are on "
            f"{cited(CUD_OVERVIEW)}; A4's own rate was not read here); {check}"
        )
    else:
        notes.append(_own(pricing, "on_demand_per_node_hour", "on-demand-equivalent per node-hour"))
    if _default(pricing, "committed_3y_per_node_hour"):
        notes.append(
            f"3-year commitment USD {pricing.committed_3y_per_node_hour:,.2f} per node-hour: derived, not verified: "
            f"the default on-demand-equivalent (USD {_default_of('on_demand_per_node_hour'):,.2f}) x "
            f"(1 - {COMMITTED_3Y_DISCOUNT:.0%}), assuming a "
            f"{COMMITTED_3Y_DISCOUNT:.0%} 3-year resource-based discount ({cited(CUD_OVERVIEW)}); {check}"
        )
    else:
        notes.append(_own(pricing, "committed_3y_per_node_hour", "3-year commitment per node-hour"))
    if _default(pricing, "flex_start_per_node_hour"):
        notes.append(
            f"Flex-start USD {pricing.flex_start_per_node_hour:,.2f} per node-hour: derived, not verified: the "
            f"default on-demand-equivalent (USD {_default_of('on_demand_per_node_hour'):,.2f}) x "
            f"(1 - {FLEX_START_DISCOUNT:.0%}), the largest ('up to') Flex-start "
            f"discount taken as A4's; {cited(ABOUT_FLEX_START)} says only that A4 is billed at a discounted "
            f"price; {check}"
        )
    else:
        notes.append(_own(pricing, "flex_start_per_node_hour", "Flex-start per node-hour"))
    premium = f"Autopilot premium {pricing.autopilot_premium_fraction:.0%} of the node price"
    if _default(pricing, "autopilot_premium_fraction"):
        notes.append(
            f"{premium}: an estimate, not verified: Autopilot bills accelerator Pods by their node (the Compute "
            f"Engine price) plus a premium per SKU ({cited(GKE_PRICING)}, 'Autopilot mode'); set "
            "pricing.autopilotPremiumFraction from that page"
        )
    else:
        notes.append(f"{premium}: set by this stack (pricing.autopilotPremiumFraction)")
    disks = (
        f"Hyperdisk ML USD {pricing.hyperdisk_ml_per_gib_month:,.3f}/GiB-month and USD "
        f"{pricing.hyperdisk_ml_per_mibps_month:,.3f} per MiB/s-month (one serving disk per zone), the weights' "
        f"disk image USD {pricing.image_per_gib_month:,.3f}/GiB-month"
    )
    storage = ("hyperdisk_ml_per_gib_month", "hyperdisk_ml_per_mibps_month", "image_per_gib_month")
    if all(_default(pricing, name) for name in storage):
        notes.append(f"{disks}: estimates for us-central1, not verified; the prices are on {cited(DISK_PRICING)}")
    else:
        notes.append(
            f"{disks}: the stack's pricing settings (those left at their default are estimates, not "
            f"verified; {cited(DISK_PRICING)})"
        )
    if owns_cluster:
        notes.append(
            f"cluster fee USD {pricing.cluster_fee_per_hour:,.2f}/h ({cited(GKE_PRICING)}, 'Cluster management "
            f"fee and free tier': USD 0.10 per cluster-hour); the USD {FREE_TIER_CREDIT_PER_MONTH:.2f}/month "
            "free-tier credit counts only with pricing.clusterFreeTier"
        )
    else:
        notes.append("no cluster fee: the stack deploys into an existing cluster, whose fee its owner pays")
    notes.append(
        "USD per month = the node-hours the schedule and autoscaler keep up x (node price + premium), plus disks, "
        f"image{' and cluster fee' if owns_cluster else ''} for all {HOURS_PER_MONTH} h of the month"
    )
    if reserved:
        notes.append(
            "a reservation is billed from its creation to its deletion, used or not, at the on-demand rate with "
            f"any commitment's discount ({cited(RESERVATIONS)}): its month is its size x {HOURS_PER_MONTH} h at the "
            "reservation's price above, whatever the schedule and autoscaler run (the stack does not know its "
            "size); the reservation rows count only the hours pods run, and a node on it costs nothing more while "
            "a pod warms up or it is held"
        )
    return tuple(notes)
