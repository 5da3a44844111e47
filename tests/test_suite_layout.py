"""The suite's own layout under pytest-xdist (CONTRIBUTING.md, "Running tests"): what the scheduler relies on."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.markers import PROCESS_GROUP


def _in_process_group(item: pytest.Item) -> bool:
    return any(mark.args == (PROCESS_GROUP,) for mark in item.iter_markers("xdist_group"))


def test_every_collected_test_has_its_own_node_id(request) -> None:
    """xdist hands tests out by node id and runs one test per id: a repeated id is a test that never runs."""
    repeated = [node_id for node_id, count in Counter(item.nodeid for item in request.session.items).items() if count > 1]
    assert not repeated, repeated


def test_the_process_level_group_comes_first(request) -> None:
    """The group is the longest unit of work: scheduled last, the whole run would wait for it."""
    grouped = [_in_process_group(item) for item in request.session.items]
    assert grouped == sorted(grouped, reverse=True)
