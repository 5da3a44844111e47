"""The suite's own layout under pytest-xdist (CONTRIBUTING.md, "Running tests"): what the scheduler relies on."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.markers import PROCESS_GROUP
from tests.scheduling import FileOrGroupScheduling, group_of


def _in_process_group(item: pytest.Item) -> bool:
    return group_of(item) == PROCESS_GROUP


def test_every_collected_test_has_its_own_node_id(request) -> None:
    """xdist hands tests out by node id and runs one test per id: a repeated id is a test that never runs."""
    repeated = [node_id for node_id, count in Counter(item.nodeid for item in request.session.items).items() if count > 1]
    assert not repeated, repeated


def test_the_process_level_group_comes_first(request) -> None:
    """The group is the longest unit of work: scheduled last, the whole run would wait for it."""
    grouped = [_in_process_group(item) for item in request.session.items]
    assert grouped == sorted(grouped, reverse=True)


def test_a_unit_of_work_is_a_group_or_else_a_file() -> None:
    scope = FileOrGroupScheduling._split_scope
    assert scope(None, "tests/webapp/test_job_kill.py::test_a_job[embedding]@processes") == "processes"
    assert scope(None, "tests/webapp/test_api_schema.py::test_api_fuzzing[GET /api/a@b/]") == "tests/webapp/test_api_schema.py"
    assert scope(None, "tests/e2e/test_csp.py::Test::test_x") == "tests/e2e/test_csp.py"


def test_the_process_level_tests_carry_their_group_in_their_node_id(request) -> None:
    grouped = [item.nodeid for item in request.session.items if _in_process_group(item)]
    assert all(node_id.endswith("@" + PROCESS_GROUP) for node_id in grouped), grouped


def test_the_fast_lane_leaves_out_browsers_real_corpora_and_processes(request) -> None:
    """``-m "not slow"`` (CONTRIBUTING.md, "The fast lane"): every browser test, real-corpus test and process-level test
    is marked slow, so none of them is left in a fast-lane run."""
    unmarked = [
        item.nodeid for item in request.session.items
        if (item.path.parent.name == "e2e" or item.get_closest_marker("shared_data") or _in_process_group(item))
        and not item.get_closest_marker("slow")
    ]  # fmt: skip
    assert not unmarked, unmarked
