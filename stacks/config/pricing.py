"""Prices per A4 node hour by capacity source, with where each default comes from."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import Field

from stacks.config.base import ConfigModel

# Prices in USD. Each default names where it comes from and when; "derived" and "estimate" mark
# figures that could not be verified at a price list from here (docs/capacity.md).
PUBLISHED_SPOT_PER_NODE_HOUR = 32.61  # write-up (March 2026), RECIPE section 9: a4-highgpu-8g Spot VM
PUBLISHED_COMMITTED_1Y_PER_NODE_HOUR = 88.93  # write-up (March 2026), RECIPE section 9: 1-year commitment
# Derived, not verified: the 1-year price over (1 - 37%), the resource-based 1-year CUD rate of
# accelerator-optimized VMs; a reservation without a commitment is billed at this price.
DERIVED_ON_DEMAND_PER_NODE_HOUR = round(PUBLISHED_COMMITTED_1Y_PER_NODE_HOUR / (1 - 0.37), 2)
# Derived, not verified: 3-year resource-based CUD of 55% off the on-demand-equivalent price.
DERIVED_COMMITTED_3Y_PER_NODE_HOUR = round(DERIVED_ON_DEMAND_PER_NODE_HOUR * (1 - 0.55), 2)
# Flex-start (DWS): "discounted up to 53%" (RECIPE section 3; "About Flex-start VMs": A4 vCPUs,
# memory and GPUs "at a discounted price"); the full 53% off on-demand is taken, not verified.
DERIVED_FLEX_START_PER_NODE_HOUR = round(DERIVED_ON_DEMAND_PER_NODE_HOUR * (1 - 0.53), 2)


class ReservationBilling(StrEnum):
    """How the A4 nodes of a specific reservation are paid for."""

    on_demand = "onDemand"
    commit_1y = "commit1y"
    commit_3y = "commit3y"


class PricingConfig(ConfigModel):
    """USD prices the planner uses (capacity.json, plan.md, goal sizing against a budget)."""

    spot_per_node_hour: Annotated[float, Field(ge=0)] = PUBLISHED_SPOT_PER_NODE_HOUR
    flex_start_per_node_hour: Annotated[float, Field(ge=0)] = DERIVED_FLEX_START_PER_NODE_HOUR
    on_demand_per_node_hour: Annotated[float, Field(ge=0)] = DERIVED_ON_DEMAND_PER_NODE_HOUR
    committed_1y_per_node_hour: Annotated[float, Field(ge=0)] = PUBLISHED_COMMITTED_1Y_PER_NODE_HOUR
    committed_3y_per_node_hour: Annotated[float, Field(ge=0)] = DERIVED_COMMITTED_3Y_PER_NODE_HOUR
    reservation_billing: ReservationBilling = Field(
        default=ReservationBilling.commit_1y,
        description="The pricing of a reservation source used for goal sizing against a budget.",
    )
    # GKE pricing ("Autopilot mode", node-based billing of accelerator Pods): Compute Engine price
    # plus an Autopilot premium. The premium per SKU could not be verified here: 10% is an
    # estimate; set it from the GKE pricing page.
    autopilot_premium_fraction: Annotated[float, Field(ge=0, le=1)] = 0.10
    # Compute Engine disk pricing, Hyperdisk ML (us-central1): not verified here, estimates.
    hyperdisk_ml_per_gib_month: Annotated[float, Field(ge=0)] = 0.08
    hyperdisk_ml_per_mibps_month: Annotated[float, Field(ge=0)] = 0.12
    # Compute Engine pricing, custom image storage per GiB-month (the weights' disk image the serving
    # disks are made from): not verified here, an estimate.
    image_per_gib_month: Annotated[float, Field(ge=0)] = 0.05
    # GKE pricing, "Cluster management fee and free tier" (read 2026-11): $0.10 per cluster-hour;
    # the free tier gives $74.40 a month per billing account to one zonal or Autopilot cluster.
    cluster_fee_per_hour: Annotated[float, Field(ge=0)] = 0.10
    cluster_free_tier: bool = Field(
        default=False, description="Count the $74.40/month free-tier credit against this cluster's fee."
    )
    utilization: Annotated[float, Field(gt=0, le=1)] = Field(
        default=0.5, description="Average load as a fraction of full load, for $ per million tokens."
    )
