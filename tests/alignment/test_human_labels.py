"""The model against the humans, item by item: what counts as a missed link, an extra one, or a different label."""

from __future__ import annotations

import pytest

from alignment import human_labels
from alignment.human_labels import DIFFERS, EXTRA, MISSED, HumanLabel, HumanLabels, overlay_build, verdict

ALIGNED, PARTIAL, NOT = HumanLabel("aligned", "agreed"), HumanLabel("partial", "agreed"), HumanLabel("not_aligned", "agreed")
DISAGREE = HumanLabel("", "annotators disagree", "anna: aligned · ben: not aligned")


@pytest.mark.parametrize(
    ("model", "human", "verified", "expected"),
    [
        ("not_aligned", ALIGNED, False, MISSED),
        (None, PARTIAL, False, MISSED),  # never even a candidate
        ("aligned", NOT, False, EXTRA),
        ("aligned", PARTIAL, False, DIFFERS),
        ("partial", PARTIAL, False, ""),
        ("not_aligned", NOT, False, ""),
        ("aligned", DISAGREE, True, ""),  # the annotators have not settled it: no verdict
        ("aligned", None, False, ""),  # nobody labelled it: unknown
        ("aligned", None, True, EXTRA),  # verified gold: what nobody linked is not aligned
        ("not_aligned", None, True, ""),
    ],
)
def test_verdict(model, human, verified, expected):
    assert verdict(model, human, verified=verified) == expected


def test_overlay_lists_human_links_without_a_candidate_and_counts_the_verdicts():
    labels = HumanLabels(project="P", verified=False, items={(0, 0): ALIGNED, (2, 5): PARTIAL, (1, 1): NOT, (3, 3): NOT})
    overlay = overlay_build(labels, {(0, 0): "aligned", (1, 1): "partial", (4, 4): "aligned"})
    assert overlay.unproposed == [((2, 5), PARTIAL)]  # (3, 3) is no link, so it is no miss
    assert (overlay.missed, overlay.extra, overlay.differs) == (1, 1, 0)
    assert overlay.disagreeing() == {(2, 5), (1, 1)}
    assert overlay.cells[(4, 4)] == (None, "") and overlay.cells[(0, 0)] == (ALIGNED, "")


def test_without_a_provider_there_are_no_labels(monkeypatch):
    monkeypatch.setattr(human_labels, "_provider", None)
    assert human_labels.pair_human_labels(user=None, pair=None) is None
