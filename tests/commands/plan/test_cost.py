"""The cost of a plan: the write-up's prices, per hour, month and million tokens."""

from __future__ import annotations

import pytest

from commands.plan.capacity_plan import cost
from commands.plan.prices import pricing_notes
from components.capacity import CAPACITY_KINDS, CapacityKind
from stacks.capacity.expectation import expect
from stacks.capacity.planner import storage_of
from stacks.config.pricing import PricingConfig
from stacks.config.routing import RoutingMode
from tests.stacks.capacity.test_planner import write_up_runs
from tests.variants import stack_config

TOLERANCE = 0.02


def test_published_twelve_node_prices_and_cost_per_million_tokens() -> None:
    config = stack_config("prod")
    storage = storage_of(config)
    total = expect(config, 12, write_up_runs(), RoutingMode.clusterip).total_tokens_per_second
    spot = cost("spot", 12, total, storage, config.pricing)
    committed = cost("commit1y", 12, total, storage, config.pricing)
    assert spot.nodes_per_hour == pytest.approx(391, rel=TOLERANCE)
    assert committed.nodes_per_hour == pytest.approx(1_067, rel=TOLERANCE)
    assert spot.usd_per_million_tokens_nodes_only is not None and spot.usd_per_million_tokens_nodes_only < 0.10
    # the write-up says ~$0.30/M committed; its own price and throughput give $0.27/M
    assert committed.usd_per_million_tokens_nodes_only == pytest.approx(0.27, abs=0.005)
    assert committed.total_per_hour > committed.nodes_per_hour, "premium, disks, image and fee are added"
    assert committed.total_per_month == pytest.approx(committed.total_per_hour * 730), "around the clock"
    assert committed.usd_per_million_tokens_at_utilization == pytest.approx(
        (committed.usd_per_million_tokens_full_load or 0) / config.pricing.utilization
    )


@pytest.mark.parametrize("kind", [kind for kind in CAPACITY_KINDS.values() if kind.price_setting is not None])
def test_every_priced_capacity_kind_says_where_its_price_comes_from(kind: CapacityKind) -> None:
    """A kind's node-hour price is a figure of plan.md's cost table: its note under "Prices" names it, at its
    default (the source it rests on) and when the stack sets it (the key)."""
    assert kind.price_setting is not None
    default = PricingConfig()
    own = default.model_copy(update={kind.price_setting: 12.34})
    key = PricingConfig.model_fields[kind.price_setting].alias or kind.price_setting
    default_price = f"USD {getattr(default, kind.price_setting):,.2f}"
    assert [note for note in pricing_notes(default) if default_price in note and "https://" in note]
    assert [note for note in pricing_notes(own) if "USD 12.34" in note and f"(pricing.{key})" in note]


def test_a_derived_price_names_the_default_it_comes_from_when_a_stack_sets_its_base() -> None:
    """onDemandPerNodeHour 100 kept Flex-start's derived 66.35 with "the on-demand-equivalent above x (1 - 53%)",
    which the plan then showed as 100 (a platform review): the derivation names the default it is made from."""
    own = PricingConfig().model_copy(update={"on_demand_per_node_hour": 100.0, "committed_1y_per_node_hour": 60.0})
    (flex,) = [note for note in pricing_notes(own) if note.startswith("Flex-start USD 66.35")]
    assert "the default on-demand-equivalent (USD 141.16) x (1 - 53%)" in flex
    assert not [note for note in pricing_notes(own) if "on-demand-equivalent above" in note]
