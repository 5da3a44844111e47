"""The simulated annotator of ``bench/annotator_keys.py`` (bench/_keys.py): its key counts on pairs whose answer is known.

When the gold alignment is the aligner's own decoding, the one-decision-per-sentence walk costs exactly ``j`` per
simple sentence, ``Enter`` per suggested link, one ``l`` per further link of a sentence, and ``d`` (with the done
dialog's ``Enter`` when a sentence is left unlabelled); ``A`` per paragraph row then leaves only ``j`` and ``d``.
"""

from __future__ import annotations

import pytest
from django.conf import settings

from bench._keys import annotate_pair, gold_labels, reach
from models_ml.aligning.aligner import Aligner
from models_ml.data.io import AlignmentGroup, GoldPair

COMPLEX = [
    "The tram line opened in the city centre in May after three years of work.",
    "It cost far more than the council had planned.",
    "Many shops along the route lost customers during the building work.",
    "The new trams are quiet and run every five minutes.",
    "Some people still prefer to drive into town.",
    "The mayor said the line would cut traffic by a fifth.",
]
SIMPLE = [
    "The tram line opened in May.",
    "The work took three years.",
    "It cost more than planned.",
    "The new trams are quiet.",
    "They run every five minutes.",
    "The mayor said there would be less traffic.",
]


@pytest.fixture(scope="module")
def aligner():
    return Aligner.load(settings.ALIGNER_MODEL_DIR, device="cpu")


def own_decoding(aligner) -> GoldPair:
    """A pair whose gold is exactly what the aligner decodes on it."""
    result = aligner.align(COMPLEX, SIMPLE, [0, 0, 0, 1, 1, 1], [0, 0, 0, 1, 1, 1])
    groups = [AlignmentGroup(complex=g.complex, simple=g.simple, label=g.label) for g in result.groups]
    return GoldPair("own", COMPLEX, SIMPLE, groups, [0, 0, 0, 1, 1, 1], [0, 0, 0, 1, 1, 1])


def test_the_aligners_own_answer_costs_one_move_and_one_accept_per_link(aligner):
    pair = own_decoding(aligner)
    links = gold_labels(pair)
    assert sum(map(len, links)) >= 4, pair.groups  # the pair is aligned enough to say something
    tally = annotate_pair(aligner, pair, None, "sentence")
    unlinked = sum(1 for g in links if not g)
    assert tally.keys["next-simple"] == len(SIMPLE)
    assert tally.keys["accept"] == sum(map(len, links))
    assert tally.keys["next-candidate"] == sum(len(g) - 1 for g in links if g)
    assert tally.keys["finish"] == 1 and tally.keys["finish-confirm"] == (1 if unlinked else 0)
    assert tally.total == len(SIMPLE) + sum(2 * len(g) - 1 for g in links if g) + 1 + (1 if unlinked else 0)


def test_accepting_each_paragraph_row_leaves_only_the_moves(aligner):
    pair = own_decoding(aligner)
    tally = annotate_pair(aligner, pair, None, "paragraph")
    assert (tally.bulk, tally.bulk_wrong) == (sum(map(len, gold_labels(pair))), 0)
    assert set(tally.keys) <= {"next-simple", "accept-paragraph", "finish", "finish-confirm"}, tally.keys
    assert tally.keys["next-simple"] == len(SIMPLE)


def test_a_partner_the_aligner_did_not_suggest_is_found_and_the_wrong_suggestion_answered(aligner):
    """Gold links simple 0 to complex 4 only: the walk reaches it (candidates or jump list) and labels it; the
    suggestion it had is left unlabelled (not aligned once done), and every other sentence says no with ``n``."""
    pair = GoldPair("moved", COMPLEX, SIMPLE, [AlignmentGroup(complex=(4,), simple=(0,), label="aligned")], None, None)
    tally = annotate_pair(aligner, pair, None, "sentence")
    assert tally.keys["label-aligned"] + tally.keys["accept"] == 1
    assert tally.keys["next-candidate"] + tally.keys["prev-candidate"] + tally.keys["jump"] >= 1
    assert tally.keys["label-not_aligned"] >= 3  # the later sentences' suggestions are all wrong


def test_the_jump_list_is_taken_when_the_candidate_list_is_longer():
    entries = [{"complex": i} for i in (3, 5, 7, 9, 11, 13)]
    assert reach(entries, 3, 5) == ["next-candidate"]
    assert reach(entries, 13, 11) == ["prev-candidate"]
    assert reach(entries, 3, 13) == ["jump", "jump-type", "jump-type", "jump-pick"]  # 4 keys, not 5 l's
    assert reach(entries, None, 3) == ["next-candidate"]
    assert reach(entries, 3, 120) == ["jump", "jump-type", "jump-type", "jump-type", "jump-pick"]
