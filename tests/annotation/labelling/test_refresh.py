"""Suggestions re-decoded from the annotator's labels: labelled sentences clamped, the rest given them, nothing stored."""

from __future__ import annotations

import pytest
from django.urls import reverse

import alignment.aligning.service as aligning
from alignment.aligning.measures import run_measure
from alignment.importing.readers import ImportOptions
from alignment.importing.service import corpus_import_files
from alignment.models import AlignedPair, AlignmentRun, CandidateAlignment
from alignment.services import corpus_get_or_create
from annotation import services
from annotation.labelling import refresh
from annotation.labels import LINKED_LABELS
from annotation.models import LabelEvent
from tests.annotation.conftest import label_now, tram_project

# The complex text says the same two things twice: which copy the simple sentences go to is for the labels to say.
TWICE_COMPLEX = (
    "The old lighthouse keeper climbed the tower every evening. He lit the great lamp for the fishing boats. "
    "Storms often cut the island off for weeks. The old lighthouse keeper climbed the tower every evening. "
    "He lit the great lamp for the fishing boats.\n"
)
TWICE_SIMPLE = "The old keeper climbed the lighthouse tower every evening. He lit the lamp for the boats.\n"


def lighthouse_project(owner, annotators: list, model_dir: str):
    """(project, pair, simple ids, complex ids): the pair above, aligned by the model in ``model_dir``, assigned to ``annotators``."""
    corpus, _ = corpus_get_or_create(name="Lighthouse", language="en", owner=owner)
    files = [("Light-adv.txt", TWICE_COMPLEX.encode()), ("Light-ele.txt", TWICE_SIMPLE.encode())]
    report = corpus_import_files(corpus=corpus, files=files, options=ImportOptions(format="text"))
    assert not report.errors, report.errors
    run = aligning.alignment_run_create(corpus=corpus, model_dir=model_dir)
    run = aligning.alignment_run_execute(run_id=run.pk, build_measure=run_measure)
    assert run.status == AlignmentRun.Status.SUCCEEDED, run.error
    project, pair, simple, complex_ = tram_project(corpus, owner, annotators, "Lighthouse")
    project.suggestion_run = run
    project.save()
    assert len(simple) == 2 and len(complex_) == 5
    return project, pair, simple, complex_


@pytest.fixture
def twice(owner, annotator, monkeypatch, settings):
    """:func:`lighthouse_project` with a suggestion run of the shipped default model."""
    monkeypatch.setattr("alignment.jobs.enqueue.defer", lambda *args, **kwargs: None)
    return lighthouse_project(owner, [annotator], settings.ALIGNER_MODEL_DIR)


def _top(entries: list[dict]) -> int | None:
    """The complex sentence the screen would offer first as a suggestion (``j`` then ``a``), or None."""
    suggested = [entry for entry in entries if entry["predicted"] in LINKED_LABELS]
    return suggested[0]["complex"] if suggested else None


def test_with_no_labels_the_refresh_suggests_what_the_run_stored(twice, annotator):
    project, pair, simple, _ = twice
    answer = refresh.refreshed_suggestions(project, annotator, pair)
    assert answer["stored"] == simple and answer["candidates"] == {} and answer["known"] == 0  # the screen keeps the run's
    for simple_id in simple:
        stored = set(
            CandidateAlignment.objects.filter(run=project.suggestion_run, pair=pair, simple_sentence_id=simple_id)
            .exclude(label="not_aligned")
            .values_list("complex_sentence_id", flat=True)
        )
        decoded = refresh.full_suggestions(project, annotator, pair)["candidates"][str(simple_id)]
        assert {entry["complex"] for entry in decoded if entry["predicted"] in LINKED_LABELS} == stored  # as decoding again gives


@pytest.mark.parametrize("copy", [0, 1])
def test_a_label_moves_the_neighbours_suggestion_to_the_same_copy_and_leaves_the_labelled_sentence_out(twice, annotator, copy):
    project, pair, simple, complex_ = twice
    first, second = (complex_[0], complex_[1]) if copy == 0 else (complex_[3], complex_[4])
    label_now(project, annotator, pair, simple[0], first, "aligned")
    answer = refresh.refreshed_suggestions(project, annotator, pair)
    assert set(answer["candidates"]) == {str(simple[1])} and answer["known"] == 1  # the labelled sentence is never in the answer
    entries = answer["candidates"][str(simple[1])]
    assert _top(entries) == second, entries
    assert 0.0 <= entries[0]["confidence"] <= 1.0


def test_a_sentence_labelled_only_not_aligned_is_clamped_to_nothing():
    labels = {(10, 20): LabelEvent(new_label="not_aligned"), (11, 21): LabelEvent(new_label="aligned"), (11, 22): LabelEvent(new_label="")}
    assert refresh.fixed_links(labels, [10, 11, 12], [20, 21, 22]) == {0: (), 1: (1,)}


def test_the_refresh_stores_nothing(twice, annotator):
    project, pair, simple, complex_ = twice
    label_now(project, annotator, pair, simple[0], complex_[3], "aligned")
    before = list(CandidateAlignment.objects.filter(run=project.suggestion_run).values_list("pk", "label", "crf_marginal"))
    refresh.refreshed_suggestions(project, annotator, pair)
    assert list(CandidateAlignment.objects.filter(run=project.suggestion_run).values_list("pk", "label", "crf_marginal")) == before
    assert LabelEvent.objects.filter(project=project).count() == 1


def test_the_screen_asks_for_it_and_a_label_made_on_it_records_refreshed(client, twice, annotator):
    project, pair, simple, complex_ = twice
    client.force_login(annotator)
    label_now(project, annotator, pair, simple[0], complex_[3], "aligned")
    answer = client.get(reverse("annotation:suggestions_refresh", args=[project.pk, pair.pk]))
    assert answer.status_code == 200 and set(answer.json()["candidates"]) == {str(simple[1])}
    saved = client.post(
        reverse("annotation:label_save", args=[project.pk, pair.pk]),
        {"simple_sentence_id": simple[1], "complex_sentence_id": complex_[1], "label": "aligned", "suggestions": "refreshed"},
    )
    assert saved.status_code == 200, saved.content
    event = LabelEvent.objects.filter(project=project).latest("pk")
    assert event.suggestion["kind"] == "refreshed" and event.suggestion["run_id"] == project.suggestion_run.pk
    assert event.suggestion_run == project.suggestion_run
    plain = label_now(project, annotator, pair, simple[0], complex_[0], "aligned")
    assert plain.suggestion["kind"] == "stored"


def test_a_label_saying_it_was_shown_something_unknown_is_refused_and_stores_nothing(client, twice, annotator):
    project, pair, simple, complex_ = twice
    client.force_login(annotator)
    answer = client.post(
        reverse("annotation:label_save", args=[project.pk, pair.pk]),
        {"simple_sentence_id": simple[1], "complex_sentence_id": complex_[1], "label": "aligned", "suggestions": "guessed"},
    )
    assert answer.status_code == 400 and "suggestions" in answer.json()["error"]
    assert not LabelEvent.objects.filter(project=project).exists()


def test_without_stored_scores_or_a_run_the_refresh_says_why(client, twice, annotator):
    project, pair, *_ = twice
    AlignedPair.objects.filter(run=project.suggestion_run, pair=pair).update(matrices=b"")
    client.force_login(annotator)
    answer = client.get(reverse("annotation:suggestions_refresh", args=[project.pk, pair.pk]))
    assert answer.status_code == 400 and "stored no learned scores" in answer.json()["error"]
    project.suggestion_run = None
    project.save()
    with pytest.raises(refresh.RefreshUnavailable, match="no suggestion run"):
        refresh.refreshed_suggestions(project, annotator, pair)


def test_after_an_undo_the_sentences_no_label_reaches_are_named_stored_for_the_screen_to_put_back(twice, annotator):
    project, pair, simple, complex_ = twice
    label_now(project, annotator, pair, simple[0], complex_[3], "aligned")
    labelled = refresh.refreshed_suggestions(project, annotator, pair)
    assert set(labelled["candidates"]) == {str(simple[1])} and labelled["stored"] == []
    services.label_undo_action(project=project, annotator=annotator, pair=pair, client_action_id="")
    undone = refresh.refreshed_suggestions(project, annotator, pair)
    assert undone["candidates"] == {} and undone["stored"] == simple and undone["known"] == 0
