"""Capacity-source kinds: one registry (components/capacity.py CAPACITY_KINDS) that the config's
source types, the Args, the loader and the planner read; an unknown kind is an error, never Spot."""

from __future__ import annotations

import typing

import pytest

from commands.plan.capacity_plan import PRICING_LABELS
from components.capacity import CAPACITY_KINDS, SpotCapacity, capacity_kind, capacity_source
from stacks.args import capacity_sources, spot_only
from stacks.capacity.planner import node_price
from stacks.config.capacity import CapacitySource, SpotSource
from stacks.config.pricing import PricingConfig
from stacks.load.loader import validate


def config_types() -> set[str]:
    union = typing.get_args(typing.get_args(CapacitySource)[0])
    return {typing.get_args(model.model_fields["type"].annotation)[0] for model in union}


def test_the_config_offers_exactly_the_registered_kinds() -> None:
    assert config_types() == set(CAPACITY_KINDS)


def test_an_unknown_kind_is_an_error_not_spot() -> None:
    with pytest.raises(ValueError, match="unknown capacity source type 'onDemand'"):
        capacity_kind("onDemand")
    stray = SpotSource.model_construct(type="onDemand")  # type: ignore[arg-type]  # past validation, as args once took it
    with pytest.raises(ValueError, match="onDemand"):
        capacity_sources([stray], recycling_seconds=2100)
    assert capacity_source("spot", {}) == SpotCapacity()


def test_every_kind_is_priced_and_labelled_and_only_spot_is_preemptible() -> None:
    pricing = PricingConfig()
    for kind in CAPACITY_KINDS.values():
        if kind.price_setting is not None:
            assert node_price(pricing, kind.type) == getattr(pricing, kind.price_setting)
            assert PRICING_LABELS[kind.type] == kind.label
    assert {kind.type for kind in CAPACITY_KINDS.values() if kind.preemptible} == {"spot"}


@pytest.mark.parametrize(
    ("sources", "expected"), [([{"type": "spot"}], True), ([{"type": "flexStart"}, {"type": "spot"}], False)]
)
def test_spot_only_reads_the_registry(sources: list[dict[str, str]], expected: bool) -> None:
    config = validate({"environment": "dev", "project": "my-llm-dev", "capacity": {"nodes": 1, "sources": sources}})
    assert spot_only(config) is expected


@pytest.mark.parametrize(
    ("source", "label"),
    [
        ({"type": "spot"}, "Spot"),
        ({"type": "flexStart", "maxRunDurationSeconds": 5400}, "Flex-start (nodes live at most 1 h 30 min)"),
        ({"type": "reservation", "name": "r1"}, "reservation `r1`"),
        ({"type": "reservation", "name": "r1", "project": "owner-proj"}, "reservation `r1` (project owner-proj)"),
    ],
)
def test_each_source_says_how_plan_md_names_it(source: dict[str, object], label: str) -> None:
    config = validate({"environment": "dev", "project": "my-llm-dev", "capacity": {"nodes": 1, "sources": [source]}})
    assert config.capacity.sources[0].label == label
