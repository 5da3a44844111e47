"""The default aligner on the demo corpus, scored against the hand-written reference in ALIGNMENTS.md.

The demo stories were written for the project, so this is a regression guard on data no
model was trained on: splits, merges, deletions, additions and paraphrases, in English.
"""

from __future__ import annotations

import pytest
from django.conf import settings

from alignment.aligning.measures import run_measure
from alignment.aligning.service import alignment_run_create, alignment_run_execute
from alignment.models import CandidateAlignment, DocumentPair
from models_ml.data.evaluate import evaluate_pairs
from models_ml.data.io import AlignmentGroup
from webapp.demo import demo_corpus_import, demo_reference_groups


def test_reference_parses_every_story_with_its_sentence_counts(owner):
    corpus, _ = demo_corpus_import(owner=owner)
    reference = demo_reference_groups()
    assert len(reference) == 6
    for pair in DocumentPair.objects.filter(corpus=corpus).select_related("complex_document", "simple_document"):
        complex_count, simple_count, groups = reference[pair.complex_document.external_id]
        assert (pair.complex_document.sentences.count(), pair.simple_document.sentences.count()) == (complex_count, simple_count)
        assert groups


@pytest.mark.parametrize(("measure", "floor"), [("embedding_cosine", 0.75), ("learned", 0.75)])
def test_default_aligner_recovers_most_reference_groups(owner, measure, floor):
    """embedding_cosine: the untrained, hand-calibrated CRF; learned: the shipped default model (ALIGNER_MODEL_DIR)."""
    corpus, _ = demo_corpus_import(owner=owner)
    corpus.alignment_runs.all().delete()
    run = alignment_run_create(corpus=corpus, aligner_config={"measure": measure}, measures=[measure], model_dir=settings.ALIGNER_MODEL_DIR)
    assert (run.config["model_dir"] != "") == (measure == "learned")
    run = alignment_run_execute(run_id=run.pk, build_measure=run_measure)
    reference = demo_reference_groups()
    total = None
    for pair in run.pairs.select_related("complex_document"):
        complex_count, simple_count, gold = reference[pair.complex_document.external_id]
        rows = CandidateAlignment.objects.filter(run=run, pair=pair).exclude(label="not_aligned")
        by_group: dict[int, tuple[set[int], set[int]]] = {}
        for simple_index, complex_index, group in rows.values_list("simple_sentence__index", "complex_sentence__index", "group_index"):
            by_group.setdefault(group, (set(), set()))
            by_group[group][0].add(complex_index)
            by_group[group][1].add(simple_index)
        predicted = [AlignmentGroup(complex=tuple(c), simple=tuple(s), label="aligned") for c, s in by_group.values()]
        report = evaluate_pairs(gold, predicted, simple_count, complex_count)
        total = report if total is None else total + report
    assert total is not None
    print(measure, "pair F1", round(total.sentence_task1.f1, 3), "group F1", round(total.group_task1.f1, 3))
    assert total.sentence_task1.f1 >= floor, total.as_dict()
    assert total.group_task1.f1 >= floor - 0.15, total.as_dict()
