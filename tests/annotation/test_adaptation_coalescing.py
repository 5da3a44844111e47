"""Automatic adaptation is bounded whatever the presses: per project at most one job waits and one runs, "done" on a
finished pair nobody changed queues nothing, and workers never run two jobs of one project side by side.

Presses go through the real "done" view; no job trains here (a "fast worker" only moves the rows' status)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.urls import reverse
from procrastinate import sql

from alignment.models import DocumentPair
from annotation import services
from annotation.models import AdaptationJob, AnnotationProject, Assignment
from annotation.training.adaptation import ADAPT_TASK, adaptation_lock
from tests.annotation.conftest import label_now
from tests.annotation.gold_set import import_articles

Status = AdaptationJob.Status


@pytest.fixture
def deferred(monkeypatch) -> list[tuple[str, dict]]:
    """No worker: each task queued is recorded with its Procrastinate options."""
    queued: list[tuple[str, dict]] = []
    monkeypatch.setattr(
        "alignment.jobs.enqueue.defer", lambda task_name, job=None, *, options=None, **kwargs: queued.append((task_name, options or {}))
    )
    return queued


@pytest.fixture
def project(owner) -> AnnotationProject:
    """Six pairs (imported, not aligned), all assigned to one annotator, gina."""
    corpus = import_articles(owner)
    gina = get_user_model().objects.create_user("gina", password="gina-pass-123")
    project = services.project_create(name="Bounded adaptation", corpus=corpus, created_by=owner, overlap=1)
    services.membership_set(project=project, user=gina, role="annotator")
    services.assignments_distribute(project=project)
    return project


@pytest.fixture
def gina(project, client):
    gina = get_user_model().objects.get(username="gina")
    client.force_login(gina)
    return gina


@pytest.fixture
def press_done(client, project, gina, django_capture_on_commit_callbacks):
    """Press "d" on a pair of the annotation screen: the view, with the queue's on-commit callbacks run."""

    def press(pair: DocumentPair) -> dict:
        url = reverse("annotation:assignment_done", kwargs={"project_id": project.pk, "pair_id": pair.pk})
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(url, HTTP_ACCEPT="application/json")
        assert response.status_code == 200, response.content
        return response.json()

    return press


def pairs_of(project: AnnotationProject) -> list[DocumentPair]:
    return list(project.pairs.order_by("pk"))


def fast_worker_finishes_what_waits(project: AnnotationProject) -> None:
    """What a worker does in the few seconds between two presses: runs every waiting job to an outcome."""
    for job in AdaptationJob.objects.filter(project=project, status=Status.QUEUED):
        assert job.mark_running() and job.mark_succeeded(outcome=AdaptationJob.Outcome.NOT_ADAPTED, reason="nothing to adapt")


def statuses(project: AnnotationProject) -> list[str]:
    return sorted(AdaptationJob.objects.filter(project=project).values_list("status", flat=True))


def test_done_pressed_20_times_on_one_pair_queues_one_adaptation_even_when_each_job_ends_at_once(project, press_done, deferred):
    pair = pairs_of(project)[0]
    for _ in range(20):
        answer = press_done(pair)
        assert answer["done"] is True
        fast_worker_finishes_what_waits(project)
    assert statuses(project) == [Status.SUCCEEDED] and [name for name, _ in deferred] == [ADAPT_TASK]


def test_done_on_a_pair_already_finished_queues_nothing(project, gina, press_done, deferred):
    pair = pairs_of(project)[0]
    finished, newly = services.assignment_complete(project=project, annotator=gina, pair=pair)
    assert newly
    answer = press_done(pair)
    assert answer["done"] is True and answer["completed_at"] == finished.completed_at.isoformat()  # still finished then
    assert not AdaptationJob.objects.exists() and deferred == []


def test_a_finished_pair_changed_since_is_finished_again_by_one_press_and_queues_one_adaptation(project, gina, press_done, deferred):
    pair = pairs_of(project)[0]
    press_done(pair)
    fast_worker_finishes_what_waits(project)
    first_done = Assignment.objects.get(project=project, pair=pair).completed_at
    simple = pair.simple_document.sentences.order_by("index").first()
    complex_ = pair.complex_document.sentences.order_by("index").first()
    label_now(project, gina, pair, simple.pk, complex_.pk)  # a label changed on the finished pair
    for _ in range(5):
        press_done(pair)
        fast_worker_finishes_what_waits(project)
    assert Assignment.objects.get(project=project, pair=pair).completed_at > first_done  # finished again, with the new label
    assert statuses(project) == [Status.SUCCEEDED, Status.SUCCEEDED] and len(deferred) == 2


def test_while_one_runs_presses_on_many_pairs_leave_exactly_one_queued_pointing_at_the_last(project, press_done, deferred):
    first, *others = pairs_of(project)
    press_done(first)
    running = AdaptationJob.objects.get()
    assert running.mark_running()
    for pair in others:
        press_done(pair)
        press_done(pair)  # pressed twice: the second finishes nothing
    queued = AdaptationJob.objects.get(project=project, status=Status.QUEUED)
    assert statuses(project) == [Status.QUEUED, Status.RUNNING] and queued.after_pair == others[-1]
    assert deferred == [(ADAPT_TASK, {"lock": adaptation_lock(project.pk)})] * 2


def fetch(worker_id: int) -> tuple[int, str] | None:
    """What a worker of the training queue would start next, as Procrastinate fetches it: (job id, task) or None."""
    with connection.cursor() as cursor:
        cursor.execute(sql.queries["fetch_job"], {"queues": ["training"], "worker_id": worker_id})
        row = cursor.fetchone()
    return (row[0], row[2]) if row and row[0] is not None else None


def test_a_worker_never_starts_a_projects_second_adaptation_while_one_runs_or_after_it_is_requeued(project, press_done):
    """Real Procrastinate jobs (no ``deferred`` here): the second job of the project waits behind the first, even when
    the stalled-job sweep requeues the first."""
    first_pair, second_pair = pairs_of(project)[:2]
    with connection.cursor() as cursor:
        cursor.execute(sql.queries["register_worker"])
        (worker_id,) = cursor.fetchone()
    press_done(first_pair)
    first = AdaptationJob.objects.get()
    assert fetch(worker_id) == (first.procrastinate_job_id, ADAPT_TASK) and first.mark_running()
    press_done(second_pair)  # while it runs: the follow-up
    second = AdaptationJob.objects.get(status=Status.QUEUED)
    assert second.procrastinate_job_id is not None and fetch(worker_id) is None  # not beside the first
    with connection.cursor() as cursor:  # its worker died: the sweep puts it back
        cursor.execute(
            sql.queries["retry_job"],
            {"job_id": first.procrastinate_job_id, "retry_at": None, "new_priority": None, "new_queue_name": None, "new_lock": None},
        )
    assert fetch(worker_id) == (first.procrastinate_job_id, ADAPT_TASK)  # the requeued one again, not its follow-up
    with connection.cursor() as cursor:
        cursor.execute(sql.queries["finish_job"], {"job_id": first.procrastinate_job_id, "status": "succeeded", "delete_job": False})
    assert fetch(worker_id) == (second.procrastinate_job_id, ADAPT_TASK)
