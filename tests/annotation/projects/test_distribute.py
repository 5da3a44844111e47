"""Giving a project's pairs out: each pair to the annotators it lacks, least-loaded first, in a few statements a chunk."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from procrastinate.contrib.django.models import ProcrastinateJob

from annotation import services
from annotation.models import Assignment
from annotation.projects import assigning
from tests.annotation.conftest import bare_pairs
from tests.e2e.worker import work


def _project(corpus, owner, pairs, annotators, overlap):
    project = services.project_create(name=f"Spread {len(pairs)}", corpus=corpus, created_by=owner, overlap=overlap)
    project.pairs.set(pairs)
    for user in annotators:
        services.membership_set(project=project, user=user, role="annotator")
    return project


def _users(*names):
    return [get_user_model().objects.create_user(name, password=f"{name}-pass-123") for name in names]


def _one_pair_at_a_time(pair_ids, have, load, overlap):
    """What the distribution gives, written plainly: pair after pair, least-loaded annotator first, lower id on a tie."""
    given = []
    for pair_id in pair_ids:
        for user_id in sorted((u for u in load if u not in have.get(pair_id, set())), key=lambda u: (load[u], u)):
            if len(have.get(pair_id, set())) >= overlap:
                break
            have.setdefault(pair_id, set()).add(user_id)
            load[user_id] += 1
            given.append((pair_id, user_id))
    return given


def test_pairs_go_to_the_least_loaded_annotators_they_lack_across_chunks(owner, corpus, monkeypatch):
    monkeypatch.setattr(assigning, "DISTRIBUTE_CHUNK", 4)  # 25 pairs in seven chunks
    anna, ben, cleo, viewer = _users("anna", "ben", "cleo", "vic")
    pairs = bare_pairs(corpus, 25)
    project = _project(corpus, owner, pairs, [anna, ben, cleo], overlap=2)
    # Work given before: two of anna's, a pair already full (one of its annotators no longer one), a pair half given.
    before = [(pairs[0], anna), (pairs[0], viewer), (pairs[3], anna), (pairs[9], cleo)]
    Assignment.objects.bulk_create(Assignment(project=project, pair=pair, annotator=user) for pair, user in before)
    have = {}
    for pair, user in before:
        have.setdefault(pair.pk, set()).add(user.pk)
    expected = _one_pair_at_a_time([p.pk for p in pairs], have, {anna.pk: 2, ben.pk: 0, cleo.pk: 1}, overlap=2)

    assert services.assignments_distribute(project=project) == len(expected) == 2 * 25 - 4
    given = set(Assignment.objects.filter(project=project).values_list("pair_id", "annotator_id"))
    assert given == {(pair.pk, user.pk) for pair, user in before} | set(expected)
    loads = [Assignment.objects.filter(project=project, annotator=user).count() for user in (anna, ben, cleo)]
    assert max(loads) - min(loads) <= 1  # spread evenly, the work given before included
    assert services.assignments_distribute(project=project) == 0  # a second press gives nothing


@pytest.mark.parametrize("overlap", [1, 3])
def test_a_press_takes_the_same_statements_for_ten_pairs_as_for_sixty(owner, corpus, overlap):
    annotators = _users("anna", "ben", "cleo")
    statements = []
    for count, article in ((10, "a"), (60, "b")):
        project = _project(corpus, owner, bare_pairs(corpus, count, article), annotators, overlap)
        with CaptureQueriesContext(connection) as queries:
            assert services.assignments_distribute(project=project) == count * overlap
        statements.append(len(queries))
    assert statements[0] == statements[1]


def test_a_project_without_annotators_is_refused_and_given_nothing(owner, corpus):
    project = _project(corpus, owner, bare_pairs(corpus, 3), [], overlap=1)
    with pytest.raises(ValueError, match="has no annotators"):
        services.assignments_distribute(project=project)
    assert not Assignment.objects.filter(project=project).exists()


def _assign_jobs() -> list[dict]:
    return [job.args for job in ProcrastinateJob.objects.filter(task_name=assigning.ASSIGN_TASK, status="todo")]


def test_a_large_project_is_assigned_by_one_background_job_however_often_it_is_pressed(client, owner, corpus, settings):
    settings.ASSIGN_INLINE_MAX_PAIRS = 5
    (anna,) = _users("anna")
    project = _project(corpus, owner, bare_pairs(corpus, 6), [anna], overlap=1)
    client.force_login(owner)
    url = reverse("annotation:project_assign", args=[project.pk])
    page = client.post(url, follow=True).content.decode()
    client.post(url)
    assert "Assigning the project&#x27;s pairs in the background." in page and 'id="assigning-note"' in page
    assert _assign_jobs() == [{"project_id": project.pk}]  # the second press found it waiting
    assert not Assignment.objects.filter(project=project).exists()  # nothing given out in the request
    progress = reverse("annotation:project_assign_progress", args=[project.pk])
    assert f'hx-get="{progress}"' in page and "0 of 6 assignments so far" in page
    note = client.get(progress, headers={"HX-Request": "true"})
    assert 'id="assigning-note"' in note.content.decode() and "0 of 6 assignments so far" in note.content.decode()
    assigning.assignments_distribute_later(**_assign_jobs()[0])  # what the worker runs
    assert Assignment.objects.filter(project=project, annotator=anna).count() == 6
    ProcrastinateJob.objects.filter(task_name=assigning.ASSIGN_TASK).update(status="succeeded")  # as the worker ends it
    ended = client.get(progress, headers={"HX-Request": "true"})
    assert ended.status_code == 204 and ended["HX-Refresh"] == "true"  # the page reloads with the assignments
    client.force_login(anna)
    assert client.get(progress).status_code == 403


def test_a_large_project_without_annotators_is_refused_at_the_press_and_nothing_is_queued(client, owner, corpus, settings):
    settings.ASSIGN_INLINE_MAX_PAIRS = 5
    project = _project(corpus, owner, bare_pairs(corpus, 6), [], overlap=1)
    client.force_login(owner)
    page = client.post(reverse("annotation:project_assign", args=[project.pk]), follow=True).content.decode()
    assert "has no annotators to assign work to" in page and _assign_jobs() == []


def test_a_background_job_for_a_project_deleted_or_left_without_annotators_gives_nothing_out(owner, corpus, caplog):
    (anna,) = _users("anna")
    project = _project(corpus, owner, bare_pairs(corpus, 2), [anna], overlap=1)
    services.membership_set(project=project, user=anna, role="viewer")  # the only annotator left before the job ran
    assigning.assignments_distribute_later(project_id=project.pk)
    assert not Assignment.objects.filter(project=project).exists() and "has no annotators" in caplog.text
    assigning.assignments_distribute_later(project_id=project.pk + 1000)  # no such project: nothing to do


@pytest.mark.django_db(transaction=True)
def test_a_background_job_commits_each_chunk_and_continues_after_its_time_slice_as_one_press_would(owner, corpus, monkeypatch, settings):
    """The real worker: every chunk's slice has run out, so each job gives four pairs out, commits, and defers the rest
    in the same transaction; the pairs end with exactly the annotators one request would have given them."""
    monkeypatch.setattr(assigning, "DISTRIBUTE_CHUNK", 4)  # 25 pairs in seven chunks
    settings.ASSIGN_INLINE_MAX_PAIRS, settings.JOB_SLICE_SECONDS = 5, 1e-6
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE procrastinate_jobs CASCADE")
    anna, ben, cleo = _users("anna", "ben", "cleo")
    pairs = bare_pairs(corpus, 25)
    project = _project(corpus, owner, pairs, [anna, ben, cleo], overlap=2)
    expected = _one_pair_at_a_time([p.pk for p in pairs], {}, {anna.pk: 0, ben.pk: 0, cleo.pk: 0}, overlap=2)

    assert services.assignments_distribute_press(project=project) is None  # queued, nothing given in the request
    work(["maintenance"])
    assert set(Assignment.objects.filter(project=project).values_list("pair_id", "annotator_id")) == set(expected)
    runs = ProcrastinateJob.objects.filter(task_name=assigning.ASSIGN_TASK).order_by("id")
    assert [(job.status, job.args.get("after")) for job in runs] == [("succeeded", None)] + [
        ("succeeded", pairs[index].pk) for index in (3, 7, 11, 15, 19, 23)
    ]
    assert not assigning.assigning_in_background(project)


def test_stop_assigning_cancels_a_waiting_job_for_its_manager_only_and_a_press_queues_one_again(client, owner, corpus, settings):
    settings.ASSIGN_INLINE_MAX_PAIRS = 5
    (anna,) = _users("anna")
    project = _project(corpus, owner, bare_pairs(corpus, 6), [anna], overlap=1)
    assign, stop = (reverse(name, args=[project.pk]) for name in ("annotation:project_assign", "annotation:project_assign_stop"))
    client.force_login(anna)  # an annotator of the project may not stop it
    assert client.post(stop).status_code in (403, 404)
    client.force_login(owner)
    client.post(assign)
    (waiting,) = ProcrastinateJob.objects.filter(task_name=assigning.ASSIGN_TASK, status="todo")

    page = client.post(stop, follow=True).content.decode()
    assert "Stopped giving pairs out: 0 of 6 pairs have an annotator so far." in page and 'id="assigning-note"' not in page
    assert ProcrastinateJob.objects.get(pk=waiting.pk).status == "cancelled" and not assigning.assigning_in_background(project)
    assert "Nothing to stop: no pairs were being given out." in client.post(stop, follow=True).content.decode()
    client.post(assign)  # the stopped job no longer holds the queueing lock
    assert _assign_jobs() == [{"project_id": project.pk}]


def test_a_running_job_asked_to_stop_gives_nothing_more_and_the_next_press_gives_out_the_rest(owner, corpus, monkeypatch, settings):
    """Stopped between its first and second chunk, the job keeps the first chunk's assignments, gives no more and
    queues no continuation; the next press ends with what one press would have given."""
    monkeypatch.setattr(assigning, "DISTRIBUTE_CHUNK", 4)
    settings.ASSIGN_INLINE_MAX_PAIRS = 5
    anna, ben = _users("anna", "ben")
    pairs = bare_pairs(corpus, 10)
    project = _project(corpus, owner, pairs, [anna, ben], overlap=1)
    services.assignments_distribute_press(project=project)
    ProcrastinateJob.objects.filter(task_name=assigning.ASSIGN_TASK).update(status="doing")  # the worker took it
    chunks, stopped = assigning._pair_chunks, []

    def stop_after_the_first(project_id, after=0):
        for number, chunk in enumerate(chunks(project_id, after)):
            if number == 1:
                stopped.append(services.assignments_distribute_stop(project=project))
            yield chunk

    monkeypatch.setattr(assigning, "_pair_chunks", stop_after_the_first)
    assert assigning.assigning_in_background(project)
    assigning.assignments_distribute_later(project_id=project.pk)
    assert stopped == [4] and Assignment.objects.filter(project=project).count() == 4
    assert not assigning.assigning_in_background(project) and _assign_jobs() == []  # no continuation waits
    ProcrastinateJob.objects.filter(task_name=assigning.ASSIGN_TASK).update(status="succeeded")  # the worker ended it

    monkeypatch.setattr(assigning, "_pair_chunks", chunks)
    services.assignments_distribute_press(project=project)
    assigning.assignments_distribute_later(**_assign_jobs()[0])
    expected = _one_pair_at_a_time([p.pk for p in pairs], {}, {anna.pk: 0, ben.pk: 0}, overlap=1)
    assert set(Assignment.objects.filter(project=project).values_list("pair_id", "annotator_id")) == set(expected)
