"""Label writes under concurrency (two tabs, double submits), and the database's guarantee of one chain per item.

The race tests use real threads, each with its own database connection (``transaction=True``),
going through the real endpoints. Where a race must really happen, the test holds the
assignment's row lock itself until both writers are seen waiting on it in ``pg_stat_activity``,
so both read the history only after the lock is released. Nothing is timed or asserted about time.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable

import pytest
from django.contrib.auth import get_user_model
from django.db import IntegrityError, connection, transaction
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from annotation import labels, services
from annotation.models import Assignment, LabelEvent
from tests.annotation.conftest import tram_project

LOCK_WAIT_POLLS = 6000  # polls of pg_stat_activity, 10 ms apart, before giving up (a hang guard, not a timing assertion)


@pytest.fixture
def world(tram_corpus, owner):
    """A project over the tram pair with ten annotators, all assigned it."""
    users = [get_user_model().objects.create_user(f"annotator{n}") for n in range(10)]  # no password: no hashing cost
    project, pair, simple, complex_ = tram_project(tram_corpus, owner, users, "Race")
    return project, pair, users, simple, complex_


def _in_threads(workers: list[Callable[[], object]]) -> list[object]:
    """Run each worker in its own thread (its own connection, closed at the end); their results in order."""
    results: list[object] = [None] * len(workers)
    errors: list[BaseException] = []

    def run(index: int) -> None:
        try:
            results[index] = workers[index]()
        except BaseException as error:  # surfaced in the test thread below
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(workers))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    return results


def _wait_until_blocked(count: int) -> None:
    """Until ``count`` other sessions wait for a lock (they queue behind the row lock this test holds)."""
    for _ in range(LOCK_WAIT_POLLS):
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_stat_clear_snapshot(), pg_sleep(0.01)")  # inside a transaction the view is a cached snapshot
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid()")
            if cursor.fetchone()[0] >= count:
                return
    raise AssertionError(f"{count} writers never queued for the assignment lock")


def _race_under_lock(assignment: Assignment, workers: list[Callable[[], object]]) -> list[object]:
    """Hold the assignment's row lock until every worker waits for it, then let them all go at once."""
    results: list[object] = []
    with transaction.atomic():
        Assignment.objects.select_for_update().get(pk=assignment.pk)
        runner = threading.Thread(target=lambda: results.extend(_in_threads(workers)))
        runner.start()
        _wait_until_blocked(len(workers))
    runner.join()
    return results


def _screen_post(user, project, pair, data: dict) -> Callable[[], int]:
    def post() -> int:
        client = Client(raise_request_exception=False)  # a server error is a 500 to count, not an exception
        client.force_login(user)
        url = reverse("annotation:label_save", kwargs={"project_id": project.pk, "pair_id": pair.pk})
        return client.post(url, data).status_code

    return post


def _api_post(user, project, data: dict) -> Callable[[], tuple[int, dict]]:
    def post() -> tuple[int, dict]:
        client = APIClient(raise_request_exception=False)  # a server error is a 500 to count, not an exception
        client.force_authenticate(user)
        response = client.post(f"/api/projects/{project.pk}/labels/", data, format="json")
        return response.status_code, response.json() if response.status_code < 500 else {}

    return post


@pytest.mark.django_db(transaction=True)
def test_two_first_labels_from_two_tabs_on_the_screen_one_saved_one_conflict(world):
    project, pair, users, simple, complex_ = world
    anna = users[0]
    assignment = Assignment.objects.get(project=project, annotator=anna)
    item = {"simple_sentence_id": simple[0], "complex_sentence_id": complex_[0], "expected_previous": "", "seconds_spent": "1.5"}
    statuses = _race_under_lock(assignment, [
        _screen_post(anna, project, pair, {**item, "label": "aligned"}),
        _screen_post(anna, project, pair, {**item, "label": "partial"}),
    ])  # fmt: skip
    assert sorted(statuses) == [200, 409]
    assert LabelEvent.objects.filter(project=project, annotator=anna).count() == 1


@pytest.mark.django_db(transaction=True)
def test_two_first_labels_through_the_api_one_201_one_409_never_500(world):
    project, pair, users, simple, complex_ = world
    anna = users[0]
    assignment = Assignment.objects.get(project=project, annotator=anna)
    item = {"pair": pair.pk, "simple_sentence": simple[1], "complex_sentence": complex_[1], "expected_previous": None}
    answers = _race_under_lock(assignment, [
        _api_post(anna, project, {**item, "label": "aligned"}),
        _api_post(anna, project, {**item, "label": "not_aligned"}),
    ])  # fmt: skip
    codes = sorted(code for code, _body in answers)
    assert codes == [201, 409]
    stored = LabelEvent.objects.get(project=project, annotator=anna)
    conflict = next(body for code, body in answers if code == 409)
    assert conflict["current"]["id"] == stored.pk and "changed elsewhere" in conflict["error"]


@pytest.mark.django_db(transaction=True)
def test_two_relabels_naming_the_same_previous_one_saved_one_conflict(world):
    """The second link of a chain races too: before, one of these was an IntegrityError on previous_id (a 500)."""
    project, pair, users, simple, complex_ = world
    anna = users[0]
    first = services.label_record(project=project, annotator=anna, pair=pair, simple_sentence_id=simple[2],
                                  complex_sentence_id=complex_[2], label="aligned", expected_previous=None)  # fmt: skip
    assignment = Assignment.objects.get(project=project, annotator=anna)
    item = {"pair": pair.pk, "simple_sentence": simple[2], "complex_sentence": complex_[2], "expected_previous": first.pk}
    answers = _race_under_lock(assignment, [_api_post(anna, project, {**item, "label": "partial"}) for _ in range(2)])
    assert sorted(code for code, _body in answers) == [201, 409]
    assert LabelEvent.objects.filter(project=project, annotator=anna, previous=first).count() == 1


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_twenty_clients_double_submitting_lose_nothing_and_duplicate_nothing(world):
    """Ten annotators, each with two tabs that submit every change at the same moment (a double submit).

    Counts what the server acknowledged against what it stored: 0 lost, 0 duplicated, 0 5xx.
    """
    project, pair, users, simple, complex_ = world
    items = [(simple[i], complex_[i]) for i in range(3)]
    steps = [(items[step % 3], ("aligned", "partial", "not_aligned")[step % 3]) for step in range(6)]  # every item twice
    barriers = {user.pk: threading.Barrier(2, timeout=120) for user in users}  # the timeout only guards against a hang

    def tab(user) -> list[tuple[int, int | None]]:
        try:
            return _double_submitting_tab(user)
        except BaseException:
            barriers[user.pk].abort()  # do not leave the other tab waiting
            raise

    def _double_submitting_tab(user) -> list[tuple[int, int | None]]:
        client = APIClient(raise_request_exception=False)  # a server error is a 500 to count, not an exception
        client.force_authenticate(user)
        seen: dict[tuple[int, int], int | None] = {}  # this tab's idea of the latest event per item
        outcomes = []
        for (simple_id, complex_id), label in steps:
            barriers[user.pk].wait()  # both tabs send this change together
            body = {"pair": pair.pk, "simple_sentence": simple_id, "complex_sentence": complex_id, "label": label,
                    "expected_previous": seen.get((simple_id, complex_id))}  # fmt: skip
            response = client.post(f"/api/projects/{project.pk}/labels/", body, format="json")
            payload = response.json() if response.status_code < 500 else {}
            if response.status_code == 201:
                seen[(simple_id, complex_id)] = payload["id"]
            elif response.status_code == 409:  # the other tab won: carry on from what it stored, as the screen does
                seen[(simple_id, complex_id)] = payload["current"]["id"]
            outcomes.append((response.status_code, payload.get("id") if response.status_code == 201 else None))
        return outcomes

    outcomes = [outcome for tab_outcomes in _in_threads([lambda u=u: tab(u) for u in users for _ in range(2)]) for outcome in tab_outcomes]
    codes = Counter(code for code, _id in outcomes)
    acknowledged = {event_id for code, event_id in outcomes if code == 201}
    stored = set(LabelEvent.objects.filter(project=project).values_list("pk", flat=True))
    assert sum(n for code, n in codes.items() if code >= 500) == 0, codes
    assert set(codes) <= {201, 409}, codes
    assert codes[201] == len(users) * len(steps) and codes[409] == len(users) * len(steps)  # one of each double submit
    assert acknowledged - stored == set(), "lost: acknowledged but not stored"
    assert stored - acknowledged == set(), "duplicated: stored but never acknowledged"
    chains = Counter(LabelEvent.objects.filter(project=project).values_list("annotator", "simple_sentence", "complex_sentence", "previous"))
    assert max(chains.values()) == 1  # no item has two first events or an event replaced twice


def test_the_database_refuses_a_second_first_event_for_an_item(world):
    project, pair, users, simple, complex_ = world
    anna = users[0]
    services.label_record(project=project, annotator=anna, pair=pair, simple_sentence_id=simple[0],
                          complex_sentence_id=complex_[0], label="aligned", expected_previous=None)  # fmt: skip
    with pytest.raises(IntegrityError, match="label_event_one_first_per_annotator_item"), transaction.atomic():
        LabelEvent.objects.create(project=project, pair=pair, annotator=anna, simple_sentence_id=simple[0],
                                  complex_sentence_id=complex_[0], new_label="partial")  # fmt: skip
    # Another annotator's first event on the same item, and a first adjudication, are other chains.
    services.label_record(project=project, annotator=users[1], pair=pair, simple_sentence_id=simple[0],
                          complex_sentence_id=complex_[0], label="partial", expected_previous=None)  # fmt: skip
    services.adjudicate(project=project, reviewer=anna, pair=pair, simple_sentence_id=simple[0],
                        complex_sentence_id=complex_[0], label="aligned", expected_previous=None)  # fmt: skip
    with pytest.raises(IntegrityError, match="label_event_one_first_adjudication_per_item"), transaction.atomic():
        LabelEvent.objects.create(project=project, pair=pair, annotator=users[1], simple_sentence_id=simple[0],
                                  complex_sentence_id=complex_[0], new_label="partial", source="adjudication")  # fmt: skip


def test_a_write_that_loses_the_race_at_the_constraint_is_a_conflict_not_an_error(world, monkeypatch):
    """Had the read still been stale, the unique constraint's refusal comes back as LabelConflict (a 409), not a 500."""
    project, pair, users, simple, complex_ = world
    anna = users[0]
    existing = LabelEvent.objects.create(project=project, pair=pair, annotator=anna, simple_sentence_id=simple[3],
                                         complex_sentence_id=complex_[3], new_label="aligned")  # fmt: skip
    monkeypatch.setattr(labels, "write_guard", lambda *args: None)  # the stale read the old guard made: "no event yet"
    with pytest.raises(services.LabelConflict) as conflict:
        services.label_record(project=project, annotator=anna, pair=pair, simple_sentence_id=simple[3],
                              complex_sentence_id=complex_[3], label="partial", expected_previous=None)  # fmt: skip
    assert conflict.value.current.pk == existing.pk
    assert LabelEvent.objects.filter(project=project, annotator=anna).count() == 1
