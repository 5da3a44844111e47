"""Each label records the suggestion run (and model) that was suggesting when it was made, and the export cites it.

The export used to take every item's ``aligner`` block from the project's suggestion run *now*: after a
re-alignment, that is a run created after the labels, whose suggestions nobody saw.
"""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.db import connection
from rest_framework.test import APIClient

from alignment.aligning import service as aligning
from alignment.aligning.measures import run_measure
from alignment.models import AlignmentRun, CandidateAlignment, DocumentPair
from annotation import services
from annotation.export.selection import pair_exports
from annotation.models import AnnotationProject, LabelEvent, ModelActivation
from tests.annotation.conftest import label_now

backfill = importlib.import_module("annotation.migrations.0012_label_suggestion_provenance").backfill


def _run(corpus, measure: str) -> AlignmentRun:
    run = aligning.alignment_run_create(corpus=corpus, aligner_config={"measure": measure}, measures=["jaccard", "tfidf_cosine"])
    run = aligning.alignment_run_execute(run_id=run.pk, build_measure=run_measure)
    assert run.status == AlignmentRun.Status.SUCCEEDED, run.error
    return run


@pytest.fixture
def realigned(tram_corpus, owner):
    """anna and ben label under run A (jaccard); then a re-alignment B (tfidf) becomes the suggestion run and ben
    labels one more item under it. Returns (project, run A, run B, pair, the item both labelled, ben's later item)."""
    users = get_user_model().objects
    anna, ben = users.create_user("anna", password="a-pass-123"), users.create_user("ben", password="b-pass-123")
    first = _run(tram_corpus, "jaccard")
    project = services.project_create(name="Realigned", corpus=tram_corpus, created_by=owner, suggestion_run=first, overlap=2)
    for user in (anna, ben):
        services.membership_set(project=project, user=user, role="annotator")
    services.assignments_distribute(project=project)
    pair = DocumentPair.objects.get(corpus=tram_corpus)
    both, later = CandidateAlignment.objects.filter(run=first, pair=pair).order_by("-score")[:2]
    item, other = (both.simple_sentence_id, both.complex_sentence_id), (later.simple_sentence_id, later.complex_sentence_id)
    label_now(project, anna, pair, *item, "aligned")
    label_now(project, ben, pair, *item, "aligned")
    second = _run(tram_corpus, "tfidf_cosine")
    AnnotationProject.objects.filter(pk=project.pk).update(suggestion_run=second)  # as suggestions_switch does
    project.refresh_from_db()
    label_now(project, ben, pair, *other, "partial")
    for key in (item, other):
        services.adjudicate(
            project=project, reviewer=owner, pair=pair, simple_sentence_id=key[0], complex_sentence_id=key[1], label="aligned",
            expected_previous=None,
        )  # fmt: skip
    return project, first, second, pair, item, other


def _exported(project, pair) -> dict[tuple[int, int], object]:
    [(_, exported)] = list(pair_exports(project, [pair.pk], include_majority=False))
    return {(item.simple.pk, item.complex.pk): item for item in exported.items}


def test_the_export_cites_the_run_each_label_was_made_with_not_the_current_one(realigned) -> None:
    project, first, second, pair, item, other = realigned
    items = _exported(project, pair)
    shared = items[item]
    assert [a["annotator"] for a in shared.annotations] == ["anna", "ben"]
    for annotation in shared.annotations:
        assert annotation["suggestion"]["run_id"] == first.pk and annotation["suggestion"]["provenance"] == "recorded"
        assert (
            annotation["suggestion"]["model"] == "the hand-calibrated aligner on jaccard" and annotation["suggestion"]["kind"] == "stored"
        )
    candidate = CandidateAlignment.objects.get(run=first, simple_sentence_id=item[0], complex_sentence_id=item[1])
    assert shared.aligner["run_id"] == first.pk != project.suggestion_run_id  # the run they saw, not the re-alignment
    assert shared.aligner["model"] == "the hand-calibrated aligner on jaccard" and shared.aligner["seen_by"] == ["anna", "ben"]
    assert shared.aligner["score"] == candidate.score and shared.aligner["predicted_label"] == candidate.label
    [bens] = items[other].annotations
    assert bens["suggestion"]["run_id"] == second.pk and bens["suggestion"]["model"] == "the hand-calibrated aligner on tfidf_cosine"
    later = CandidateAlignment.objects.filter(run=second, simple_sentence_id=other[0], complex_sentence_id=other[1]).first()
    assert (items[other].aligner or {}).get("run_id") == (second.pk if later else None)


def test_a_label_without_suggestions_says_so_and_adjudications_and_imports_record_nothing(tram_corpus, owner, annotator) -> None:
    project = services.project_create(name="Bare", corpus=tram_corpus, created_by=owner, overlap=1)
    services.membership_set(project=project, user=annotator, role="annotator")
    services.assignments_distribute(project=project)
    pair = DocumentPair.objects.get(corpus=tram_corpus)
    simple, complex_ = pair.simple_document.sentences.first(), pair.complex_document.sentences.first()
    event = label_now(project, annotator, pair, simple.pk, complex_.pk)
    assert event.suggestion_run is None
    assert event.suggestion == {"run_id": None, "model": None, "model_version": None, "kind": "none", "basis": "recorded"}
    queued = aligning.alignment_run_create(corpus=tram_corpus, aligner_config={"measure": "jaccard"})  # not run: no pair aligned
    AnnotationProject.objects.filter(pk=project.pk).update(suggestion_run=queued)
    project.refresh_from_db()
    undo = services.label_undo(project=project, annotator=annotator, pair=pair)
    assert undo.source == "undo" and undo.suggestion_run is None
    assert undo.suggestion["run_id"] == queued.pk and undo.suggestion["kind"] == "none"
    adjudication = services.adjudicate(
        project=project, reviewer=owner, pair=pair, simple_sentence_id=simple.pk, complex_sentence_id=complex_.pk, label="aligned",
        expected_previous=None,
    )  # fmt: skip
    second_simple, second_complex = (
        pair.simple_document.sentences.order_by("index")[1],
        pair.complex_document.sentences.order_by("index")[1],
    )
    imported = label_now(project, annotator, pair, second_simple.pk, second_complex.pk, source="import")
    assert adjudication.suggestion == {} == imported.suggestion and adjudication.suggestion_run is None


def test_the_api_lists_each_labels_suggestion(realigned) -> None:
    project, first, second, pair, item, other = realigned
    api = APIClient()
    api.force_authenticate(project.created_by)
    rows = api.get(f"/api/projects/{project.pk}/labels/", {"page_size": 100}).json()["results"]
    by_annotator = {(row["annotator"], row["simple_sentence"], row["complex_sentence"]): row for row in rows}
    assert by_annotator[("anna", *item)]["suggestion_run"] == first.pk
    assert by_annotator[("ben", *other)]["suggestion"]["run_id"] == second.pk
    assert by_annotator[("ben", *other)]["suggestion"]["basis"] == "recorded"


def _forget_provenance() -> None:
    """Make every event look as it did before migration 0012 (the model refuses updates; SQL does not)."""
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {LabelEvent._meta.db_table} SET suggestion = '{{}}'::jsonb, suggestion_run_id = NULL")


def test_the_backfill_guesses_the_run_that_was_suggesting_by_when_each_run_finished(realigned, owner) -> None:
    """Run A is the project's first suggestion run: it is not recorded anywhere once B replaced it, so labels made
    before B finished are "unknown"; B came from a rollback (an activation row), so labels after it are B's."""
    project, first, second, pair, item, other = realigned
    ModelActivation.objects.create(project=project, version=None, previous=None, action="rollback", alignment_run=second, by=owner)
    events = {
        (e.annotator.username, e.simple_sentence_id, e.complex_sentence_id): e.pk for e in LabelEvent.objects.exclude(source="adjudication")
    }
    _forget_provenance()
    with connection.schema_editor() as editor:
        backfill(apps, editor)
    stored = dict(LabelEvent.objects.values_list("pk", "suggestion"))
    runs = dict(LabelEvent.objects.values_list("pk", "suggestion_run_id"))
    unknown = {"run_id": None, "model": None, "model_version": None, "kind": "unknown", "basis": "backfilled"}
    assert stored[events[("anna", *item)]] == unknown == stored[events[("ben", *item)]]
    later = events[("ben", *other)]
    assert stored[later] == {
        "run_id": second.pk, "model": None, "model_version": second.model_version, "kind": "stored", "basis": "backfilled",
    }  # fmt: skip
    assert runs[later] == second.pk
    assert all(value == {} for pk, value in stored.items() if pk not in events.values())  # adjudications: nothing
    [(_, exported)] = list(pair_exports(project, [pair.pk], include_majority=False))
    [bens] = next(i for i in exported.items if (i.simple.pk, i.complex.pk) == other).annotations
    assert bens["suggestion"]["provenance"] == "backfilled" and bens["suggestion"]["model"] == "the hand-calibrated aligner on tfidf_cosine"


def test_the_backfill_takes_the_projects_only_run_for_labels_after_it_finished(realigned) -> None:
    project, first, second, pair, item, other = realigned
    AnnotationProject.objects.filter(pk=project.pk).update(suggestion_run=first)  # never re-aligned: A all along
    _forget_provenance()
    with connection.schema_editor() as editor:
        backfill(apps, editor)
    guesses = set(
        LabelEvent.objects.exclude(source="adjudication").values_list("suggestion_run_id", "suggestion__kind", "suggestion__basis")
    )
    assert guesses == {(first.pk, "stored", "backfilled")}
