"""VllmEngine's rollout wait on its own: it grows with the nodes and the capacity sources."""

from __future__ import annotations

from components.vllm import rollout_wait


def test_rollout_wait_grows_with_nodes_and_sources() -> None:
    small, more_nodes, more_sources = rollout_wait(1, 1, 1), rollout_wait(4, 1, 1), rollout_wait(1, 3, 1)
    assert more_nodes.update_minutes == 4 * small.update_minutes
    assert more_nodes.create_minutes == small.create_minutes
    assert more_sources.create_minutes > small.create_minutes
