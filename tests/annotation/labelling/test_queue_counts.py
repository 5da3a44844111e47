"""The queue's figures kept on each assignment (``annotation.labels.assignments_recount``) stay what the rows say, so the
queue serves from them exactly what it would serve by reading every suggestion: through labels set, changed, cleared
and undone, skips and their undo, test items made from verified pairs, a new suggestion run and a suggestion removed."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.db.models import Count, Window
from procrastinate.contrib.django.models import ProcrastinateJob

from alignment.aligning.measures import run_measure
from alignment.aligning.service import alignment_run_create, alignment_run_execute
from alignment.importing.readers import ImportOptions
from alignment.importing.service import corpus_import_files
from alignment.models import CandidateAlignment, DocumentPair
from annotation import labels, services
from annotation.labelling import quality, queue
from annotation.models import AnnotationProject, Assignment, GoldItem
from tests.conftest import SAMPLE_ADV, SAMPLE_ELE

ORDERS = ("uncertainty", "disagreement")


def _aligned_run(corpus):
    run = alignment_run_create(
        corpus=corpus, aligner_config={"measure": "tfidf_cosine", "null_score": 0.15, "paragraph_variant": "none"},
        measures=["tfidf_cosine", "jaccard"],
    )  # fmt: skip
    return alignment_run_execute(run_id=run.pk, build_measure=run_measure)


@pytest.fixture
def three_pairs(tram_corpus, owner):
    """A project of three pairs (the tram article and two retellings of it), all anna's and ben's, with suggestions."""
    for name, words in (("Bus", ("tram", "bus")), ("Ferry", ("tram", "ferry"))):
        files = [(f"{name}-adv.txt", SAMPLE_ADV.replace(*words).encode()), (f"{name}-ele.txt", SAMPLE_ELE.replace(*words).encode())]
        report = corpus_import_files(corpus=tram_corpus, files=files, options=ImportOptions(format="text"))
        assert not report.errors, report.errors
    assert DocumentPair.objects.filter(corpus=tram_corpus).count() == 3
    run = _aligned_run(tram_corpus)
    users = [get_user_model().objects.create_user(name, password=f"{name}-pass-123") for name in ("anna", "ben")]
    project = services.project_create(name="Kept queue", corpus=tram_corpus, created_by=owner, overlap=2, suggestion_run=run)
    AnnotationProject.objects.filter(pk=project.pk).update(test_item_rate=0.0)
    project.refresh_from_db()
    for user in users:
        services.membership_set(project=project, user=user, role="annotator")
    services.assignments_distribute(project=project)
    return project, users, run


def _from_rows(project, annotator, order):
    """What the queue serves when it reads every suggestion: (next id, how many are left)."""
    row = queue.candidate_queue(project, annotator, order).annotate(left=Window(Count("pk"))).values_list("pk", "left").first()
    return row if row is not None else (None, 0)


KEPT = ("labelled", "labelled_ever", "queue_run_id", "queue_open", "queue_uncertainty_first", "queue_disagreement_first")


def _kept(project) -> list[tuple]:
    return list(Assignment.objects.filter(project=project).order_by("pk").values_list(*KEPT))


def _assert_kept_right(project, users) -> None:
    kept = _kept(project)
    labels.assignments_recount(project)
    assert kept == _kept(project)  # already what a recount from the rows says, before the queue's check could mend it
    for user in users:
        assert queue._kept_counts_fresh(project, user)
        for order in ORDERS:
            assert queue._next_candidate(project, user, order) == _from_rows(project, user, order), (user, order)
        assert queue.queue_left(project, user) == _from_rows(project, user, "disagreement")[1]


def _answer(project, user, candidate_id, label="aligned"):
    queue.queue_answer(project=project, annotator=user, kind="candidate", item_id=candidate_id, label=label, seconds_spent=None)


def test_the_kept_queue_serves_what_the_rows_say_through_labels_skips_and_undo(three_pairs) -> None:
    project, (anna, ben), run = three_pairs
    total = CandidateAlignment.objects.filter(run=run).count()
    assert total > 6
    _assert_kept_right(project, [anna, ben])
    assert queue.queue_left(project, anna) == total
    for _ in range(4):  # answer the first few in each order: the next pair's first comes up
        for order in ORDERS:
            _answer(project, anna, queue._next_candidate(project, anna, order)[0])
            _assert_kept_right(project, [anna, ben])
    assert queue.queue_left(project, anna) == total - 8 and queue.queue_left(project, ben) == total  # ben's queue is his
    first = queue.queue_next(project, anna, "uncertainty")
    queue.queue_skip(project=project, annotator=anna, kind="candidate", item_id=first.item_id)
    _assert_kept_right(project, [anna, ben])
    assert queue.queue_undo(project=project, annotator=anna).item_ref == first.ref  # the skip taken back
    _assert_kept_right(project, [anna, ben])
    for _ in range(3):
        queue.queue_undo(project=project, annotator=anna)  # labels undone: back in the queue
        _assert_kept_right(project, [anna, ben])
    candidate = CandidateAlignment.objects.get(pk=queue._next_candidate(project, anna, "uncertainty")[0])
    undone = labels.latest_event(project, anna, candidate.simple_sentence_id, candidate.complex_sentence_id)  # an undone label
    event = services.label_record(
        project=project, annotator=anna, pair=candidate.pair, simple_sentence_id=candidate.simple_sentence_id,
        complex_sentence_id=candidate.complex_sentence_id, label="partial", expected_previous=undone.pk,
    )  # fmt: skip
    changed = services.label_record(
        project=project, annotator=anna, pair=candidate.pair, simple_sentence_id=candidate.simple_sentence_id,
        complex_sentence_id=candidate.complex_sentence_id, label="not_aligned", expected_previous=event.pk,
    )  # fmt: skip
    _assert_kept_right(project, [anna, ben])
    services.label_record(
        project=project, annotator=anna, pair=candidate.pair, simple_sentence_id=candidate.simple_sentence_id,
        complex_sentence_id=candidate.complex_sentence_id, label="", expected_previous=changed.pk,
    )  # fmt: skip
    _assert_kept_right(project, [anna, ben])  # a cleared label puts it back


def test_answering_everything_empties_the_kept_queue(three_pairs) -> None:
    project, (anna, ben), run = three_pairs
    while (candidate_id := queue._next_candidate(project, anna, "disagreement")[0]) is not None:
        _answer(project, anna, candidate_id, "not_aligned")
    assert queue.queue_left(project, anna) == 0 and queue.queue_next(project, anna) is None
    assert not Assignment.objects.filter(project=project, annotator=anna, queue_open__gt=0).exists()
    assert Assignment.objects.filter(project=project, annotator=anna).aggregate(n=Count("pk"))["n"] == 3
    _assert_kept_right(project, [anna, ben])


def test_test_items_made_from_a_verified_pair_leave_every_queue(three_pairs, owner) -> None:
    project, (anna, ben), run = three_pairs
    pair = DocumentPair.objects.filter(corpus=project.corpus).order_by("pk").first()
    for candidate in CandidateAlignment.objects.filter(run=run, pair=pair):
        for user in (anna, ben):
            _answer(project, user, candidate.pk)
    services.pair_verify(project=project, pair=pair, by=owner)
    assert quality.gold_items_from_verified(project) > 0
    assert GoldItem.objects.filter(project=project).exists()
    _assert_kept_right(project, [anna, ben])


def test_a_new_suggestion_run_is_served_from_the_rows_until_the_job_counts_it_again(three_pairs) -> None:
    project, (anna, ben), run = three_pairs
    _answer(project, anna, queue._next_candidate(project, anna, "uncertainty")[0])
    new_run = _aligned_run(project.corpus)
    AnnotationProject.objects.filter(pk=project.pk).update(suggestion_run=new_run)  # as a promotion's switch does
    project.refresh_from_db()
    assert not queue._kept_counts_fresh(project, anna)
    assert not queue._kept_counts_fresh(project, ben)
    recounts = ProcrastinateJob.objects.filter(task_name=queue.QUEUE_RECOUNT_TASK, status="todo")
    assert list(recounts.values_list("args", flat=True)) == [{"project_id": project.pk}]  # one, however many ask
    served = queue._next_candidate(project, anna, "uncertainty")
    assert served == _from_rows(project, anna, "uncertainty") and CandidateAlignment.objects.get(pk=served[0]).run_id == new_run.pk
    assert queue.queue_counts_recount(project_id=project.pk, chunk=2) == 3  # in slices of two pairs
    _assert_kept_right(project, [anna, ben])


def test_a_removed_suggestion_is_passed_over_and_its_pair_counted_again(three_pairs) -> None:
    project, (anna, ben), run = three_pairs
    first_id, left = queue._next_candidate(project, anna, "uncertainty")
    CandidateAlignment.objects.filter(pk=first_id).delete()  # behind the kept figures' back, as a pair flip does
    served, now_left = queue._next_candidate(project, anna, "uncertainty")
    assert served != first_id and (served, now_left) == _from_rows(project, anna, "uncertainty")
    assert queue._next_candidate(project, ben, "uncertainty") == _from_rows(project, ben, "uncertainty")  # ben's mended as he asks
    _assert_kept_right(project, [anna, ben])


def test_the_recount_names_no_other_project_or_annotator(three_pairs) -> None:
    project, (anna, ben), run = three_pairs
    Assignment.objects.filter(project=project).update(queue_open=0, queue_run_id=None)
    labels.assignments_recount(project, annotator_id=anna.pk)
    assert not Assignment.objects.filter(project=project, annotator=ben, queue_open__gt=0).exists()
    assert queue.queue_left(project, anna) == _from_rows(project, anna, "disagreement")[1] > 0
