"""How ``pytest -n`` (pytest-xdist) hands the suite to its workers: whole files, and the process group, as units.

xdist's own schedulers send single tests (``load``) or one unit per file or ``xdist_group`` (``loadfile``,
``loadgroup``). This suite wants both at once: a test file is one unit, so its module-scoped fixtures (the
access matrix's world, a fine-tuned cross-encoder, ONNX exports) are built on one worker, once; and the
process-level tests (tests/markers.py) are one unit, so they never run two at a time. Under pytest 9,
xdist's own ``loadgroup`` does not work (it writes the group into ``Item._nodeid``, which pytest 9 no
longer reads), so the group is written into the node id here, as ``…@processes``, and read back by
:class:`FileOrGroupScheduling`.

The units are handed out in collection order, and :func:`longest_first` makes that order the process group,
then the files by their estimated weight: the long units start first and short ones fill in at the end, so
neither worker waits alone for a long unit at the end of the run.
"""

from __future__ import annotations

import pytest
from _pytest.nodeid import coerce_node_id
from xdist.scheduler import LoadScopeScheduling

from tests.markers import PROCESS_GROUP

GROUP_SEPARATOR = "@"  # as xdist's loadgroup writes it: "<node id>@<group>"


def group_of(item: pytest.Item) -> str | None:
    names = sorted({str(mark.args[0] if mark.args else mark.kwargs.get("name", "default")) for mark in item.iter_markers("xdist_group")})
    return "_".join(names) or None


def node_ids_set(items: list[pytest.Item]) -> None:
    """Give every item a node id of its own, with its xdist group (if any) after ``@``.

    schemathesis names each API operation's test ``test…[GET /api/…]`` but gives them all one node id (under
    pytest 9), and xdist runs one test per node id: 40 of the 41 API fuzzing tests were silently not run.
    """
    for item in items:
        if not item.nodeid.endswith(f"::{item.name}"):
            item._id = item.parent.id.child(item.name)  # what pytest's Node.__init__ sets when no node id is passed
        group = group_of(item)
        if group and GROUP_SEPARATOR not in item.nodeid:
            item._id = coerce_node_id(f"{item.nodeid}{GROUP_SEPARATOR}{group}")


SLOW_WEIGHT = 100  # a slow test counts as this many ordinary ones (seconds to minutes against a fraction of a second)


def _file(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


def longest_first(items: list[pytest.Item]) -> None:
    """Sort in place: the process group first, then each file's tests together, the heaviest files first.

    A file's weight is its number of tests, a slow one counting SLOW_WEIGHT: a rough but free estimate of its time
    (the access matrix's 1,143 requests, the API fuzzing, the files with browser journeys or real workers), so that the
    run ends with small files on both workers instead of one worker alone on a long one. Within a file the order is
    kept (pytest-django's).
    """
    weight: dict[str, int] = {}
    first: dict[str, int] = {}
    for index, item in enumerate(items):
        path = _file(item)
        weight[path] = weight.get(path, 0) + (SLOW_WEIGHT if item.get_closest_marker("slow") else 1)
        first.setdefault(path, index)

    def rank(item: pytest.Item) -> tuple[bool, int, int]:
        path = _file(item)
        return group_of(item) != PROCESS_GROUP, -weight[path], first[path]

    items.sort(key=rank)


class FileOrGroupScheduling(LoadScopeScheduling):
    """xdist's scope scheduling with one scope per xdist group, else one per test file."""

    def _split_scope(self, nodeid: str) -> str:
        if nodeid.rfind(GROUP_SEPARATOR) > nodeid.rfind("]"):
            return nodeid.rsplit(GROUP_SEPARATOR, 1)[-1]
        return nodeid.split("::", 1)[0]
