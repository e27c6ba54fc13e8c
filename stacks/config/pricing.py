"""Prices per A4 node hour by capacity source, with where each default comes from."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import Field

from common.sources import WRITEUP
from stacks.config.base import ConfigModel

# Prices in USD. Each default names where it comes from and when; "derived" and "estimate" mark
# figures that could not be verified at a price list from here (docs/capacity.md).
PUBLISHED_SPOT_PER_NODE_HOUR = 32.61  # the benchmark write-up (March 2026): a4-highgpu-8g Spot VM
PUBLISHED_COMMITTED_1Y_PER_NODE_HOUR = 88.93  # the benchmark write-up (March 2026): 1-year commitment
# Derived, not verified (commands/plan/prices.py says so beside each price in plan.md): the 1-year
# price over (1 - 37%), taken as the resource-based 1-year CUD rate of accelerator-optimized VMs; a
# reservation without a commitment is billed at this price.
COMMITTED_1Y_DISCOUNT = 0.37
DERIVED_ON_DEMAND_PER_NODE_HOUR = round(PUBLISHED_COMMITTED_1Y_PER_NODE_HOUR / (1 - COMMITTED_1Y_DISCOUNT), 2)
# Derived, not verified: 3-year resource-based CUD of 55% off the on-demand-equivalent price.
COMMITTED_3Y_DISCOUNT = 0.55
DERIVED_COMMITTED_3Y_PER_NODE_HOUR = round(DERIVED_ON_DEMAND_PER_NODE_HOUR * (1 - COMMITTED_3Y_DISCOUNT), 2)
# Flex-start (DWS): "discounted up to 53%" ("About Flex-start VMs": A4 vCPUs,
# memory and GPUs "at a discounted price"); the full 53% off on-demand is taken, not verified.
FLEX_START_DISCOUNT = 0.53
DERIVED_FLEX_START_PER_NODE_HOUR = round(DERIVED_ON_DEMAND_PER_NODE_HOUR * (1 - FLEX_START_DISCOUNT), 2)

# Upper bounds of the prices: far above any real price (about 70x the derived on-demand node-hour,
# 1,000x the disk, image and cluster-fee prices), low enough that every figure the planner computes
# stays an ordinary finite number. The largest: 256 nodes (capacity.MAX_NODES) x 730 h x 10,000 USD
# x (1 + the premium, at most 1) is 3.7e9 USD a month; 4 zones x 1,200,000 MiB/s (weights' largest
# throughput) x 100 USD is 4.8e8. Without a bound, 1e308 overflowed to infinity and the render crashed.
MAX_NODE_HOUR_PRICE = 10_000
MAX_STORAGE_MONTH_PRICE = 100
MAX_CLUSTER_FEE_PER_HOUR = 100
# USD per million tokens divides by the utilization: 1% keeps it within 100x the full-load figure.
MIN_UTILIZATION = 0.01

NodeHourPrice = Annotated[float, Field(ge=0, le=MAX_NODE_HOUR_PRICE)]
StorageMonthPrice = Annotated[float, Field(ge=0, le=MAX_STORAGE_MONTH_PRICE)]


class ReservationBilling(StrEnum):
    """How the A4 nodes of a specific reservation are paid for."""

    on_demand = "onDemand"
    commit_1y = "commit1y"
    commit_3y = "commit3y"


class PricingConfig(ConfigModel):
    """USD prices the planner uses (capacity.json, plan.md, goal sizing against a budget)."""

    spot_per_node_hour: NodeHourPrice = Field(
        default=PUBLISHED_SPOT_PER_NODE_HOUR,
        description=(
            "USD per A4 Spot node-hour before the Autopilot premium. Default 32.61: published in the write-up "
            f"{WRITEUP}; Spot prices move."
        ),
    )
    flex_start_per_node_hour: NodeHourPrice = Field(
        default=DERIVED_FLEX_START_PER_NODE_HOUR,
        description=(
            'USD per A4 Flex-start node-hour. Default: the derived on-demand price less 53% ("up to '
            '53%" off): an estimate, not verified.'
        ),
    )
    on_demand_per_node_hour: NodeHourPrice = Field(
        default=DERIVED_ON_DEMAND_PER_NODE_HOUR,
        description=(
            "USD per A4 node-hour without a commitment (a reservation billed on demand). Default: the "
            "1-year price over (1 - 37%): derived, not verified."
        ),
    )
    committed_1y_per_node_hour: NodeHourPrice = Field(
        default=PUBLISHED_COMMITTED_1Y_PER_NODE_HOUR,
        description=(
            f"USD per A4 node-hour with a 1-year commitment. Default 88.93: published in the write-up {WRITEUP}."
        ),
    )
    committed_3y_per_node_hour: NodeHourPrice = Field(
        default=DERIVED_COMMITTED_3Y_PER_NODE_HOUR,
        description=(
            "USD per A4 node-hour with a 3-year commitment. Default: on demand less 55%: derived, not verified."
        ),
    )
    reservation_billing: ReservationBilling = Field(
        default=ReservationBilling.commit_1y,
        description="How a reservation source is billed when sizing against a budget: onDemand, commit1y or commit3y.",
    )
    # GKE pricing ("Autopilot mode", node-based billing of accelerator Pods): Compute Engine price plus an Autopilot
    # premium. The premium per SKU could not be verified here: 10% is an estimate; set it from the GKE pricing page.
    autopilot_premium_fraction: Annotated[float, Field(ge=0, le=1)] = Field(
        default=0.10,
        description=(
            "Autopilot's premium on the node price for GPU pods, as a fraction (0-1). Default 0.10: "
            "an estimate; set it from the GKE pricing page."
        ),
    )
    # Compute Engine disk pricing, Hyperdisk ML (us-central1): not verified here, estimates.
    hyperdisk_ml_per_gib_month: StorageMonthPrice = Field(
        default=0.08,
        description=(
            "USD per GiB-month of Hyperdisk ML capacity. Default 0.08: an estimate (us-central1), not verified."
        ),
    )
    hyperdisk_ml_per_mibps_month: StorageMonthPrice = Field(
        default=0.12,
        description=(
            "USD per MiB/s-month of provisioned Hyperdisk ML throughput. Default 0.12: an estimate, not verified."
        ),
    )
    # Compute Engine pricing, custom image storage per GiB-month (the weights' disk image the serving
    # disks are made from): not verified here, an estimate.
    image_per_gib_month: StorageMonthPrice = Field(
        default=0.05,
        description="USD per GiB-month of the weights' disk image. Default 0.05: an estimate, not verified.",
    )
    # GKE pricing, "Cluster management fee and free tier" (read 2026-11): $0.10 per cluster-hour;
    # the free tier gives $74.40 a month per billing account to one zonal or Autopilot cluster.
    cluster_fee_per_hour: Annotated[float, Field(ge=0, le=MAX_CLUSTER_FEE_PER_HOUR)] = Field(
        default=0.10, description="USD per cluster-hour of GKE cluster management. Default 0.10 (GKE pricing)."
    )
    cluster_free_tier: bool = Field(
        default=False, description="Count the $74.40/month free-tier credit against this cluster's fee."
    )
    utilization: Annotated[float, Field(ge=MIN_UTILIZATION, le=1)] = Field(
        default=0.5,
        description=(
            "Average load as a fraction of full load, for USD per million total tokens (input + output) at that load."
        ),
    )
