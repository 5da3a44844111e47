"""What a live refresh costs and who may run one: on a 500 x 500 pair only windows near the labels are decoded, within a
row budget however many labels there are; with windows as large as the pair the answer is the full decoding's; and each
annotator has one refresh at a time (429 with Retry-After beyond it, in any web process) without holding up another's."""

from __future__ import annotations

import threading

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connections
from django.test import Client
from django.urls import reverse

import alignment.aligning.service as aligning
from alignment.aligning.measures import run_measure
from alignment.importing.readers import ImportOptions
from alignment.importing.service import corpus_import_files
from alignment.models import AlignmentRun
from alignment.services import corpus_get_or_create
from annotation.labelling import refresh
from annotation.labelling.screen import candidates_by_simple
from models_ml.aligning import window
from tests.annotation.conftest import label_now, tram_project
from tests.annotation.labelling.test_refresh import lighthouse_project


def _document(count: int, simple: bool) -> bytes:
    """``count`` sentences in paragraphs of 10 (as bench/refresh_latency.py); the simple side drops each one's last clause."""
    places = ["the harbour", "the old mill", "a village school", "the station", "the river bank", "a small farm", "the market"]
    people = ["The mayor", "A teacher", "Two fishermen", "The council", "A young doctor", "The children", "Our neighbour"]
    sentences = []
    for i in range(count):
        clause = "" if simple else f", although the weather on day {i} was {['cold', 'wet', 'fine'][i % 3]}"
        sentences.append(f"{people[i % 7]} visited {places[(i // 7) % 7]} in week {i}{clause}.")
    return "\n\n".join("\n".join(sentences[k : k + 10]) for k in range(0, count, 10)).encode()


def long_project(owner, annotators: list, sentences: int):
    """(project, pair, simple ids, complex ids): a ``sentences`` x ``sentences`` pair aligned by the shipped model."""
    corpus, _ = corpus_get_or_create(name=f"Long {sentences}", language="en", owner=owner)
    files = [("Long-adv.txt", _document(sentences, False)), ("Long-ele.txt", _document(sentences, True))]
    report = corpus_import_files(corpus=corpus, files=files, options=ImportOptions(format="presplit"))
    assert not report.errors, report.errors
    run = aligning.alignment_run_create(corpus=corpus, model_dir=settings.ALIGNER_MODEL_DIR, measures=["learned"])
    run = aligning.alignment_run_execute(run_id=run.pk, build_measure=run_measure)
    assert run.status == AlignmentRun.Status.SUCCEEDED, run.error
    project, pair, simple, complex_ = tram_project(corpus, owner, annotators, f"Long {sentences}")
    project.suggestion_run = run
    project.save()
    return project, pair, simple, complex_


@pytest.fixture
def quiet_queue(monkeypatch):
    monkeypatch.setattr("alignment.jobs.enqueue.defer", lambda *args, **kwargs: None)


@pytest.mark.slow
def test_on_a_500_by_500_pair_a_refresh_decodes_a_bounded_number_of_rows_however_many_labels(owner, annotator, quiet_queue):
    project, pair, simple, complex_ = long_project(owner, [annotator], 500)
    first = refresh.refreshed_suggestions(project, annotator, pair)
    assert first["decoded_rows"] == 0 and first["next"] is None  # nothing labelled: the run's own suggestions everywhere
    assert first["candidates"] == {} and first["stored"] == simple

    for j in range(40):  # labelled in document order: one window, at the frontier
        label_now(project, annotator, pair, simple[j], complex_[j])
    frontier = refresh.refreshed_suggestions(project, annotator, pair)
    assert {simple.index(int(pk)) for pk in frontier["candidates"]} == set(range(40, 40 + window.CONTEXT_ROWS))  # simple #39's reach
    assert frontier["stored"] == simple[40 + window.CONTEXT_ROWS :] and frontier["next"] is None
    assert frontier["decoded_rows"] <= window.CONTEXT_ROWS + 2

    for j in range(60, 500, 7):  # 63 more labels spread over the pair
        label_now(project, annotator, pair, simple[j], complex_[min(j + 1, 499)])
    spread = refresh.refreshed_suggestions(project, annotator, pair)
    assert spread["decoded_rows"] <= window.ROW_BUDGET and spread["next"] is not None  # bounded: the rest follows
    assert spread["known"] == 103
    labelled = set(range(40)) | set(range(60, 500, 7))
    reach = {k for j in labelled for k in range(j - window.CONTEXT_ROWS, j + window.CONTEXT_ROWS + 1) if 0 <= k < 500} - labelled
    assert spread["stored"] == [pk for k, pk in enumerate(simple) if k not in reach | labelled]
    answered, start = set(spread["candidates"]), spread["next"]
    while start is not None:  # what the screen asks next, until every label's window is answered
        later = refresh.refreshed_suggestions(project, annotator, pair, start=start)
        assert later["decoded_rows"] <= window.ROW_BUDGET and later["stored"] == []
        answered, start = answered | set(later["candidates"]), later["next"]
    assert answered == {str(simple[k]) for k in reach}  # never a labelled sentence


def test_with_windows_as_large_as_the_pair_the_refresh_is_the_full_decoding(owner, annotator, quiet_queue, monkeypatch):
    project, pair, simple, complex_ = long_project(owner, [annotator], 40)
    for j, i, label in [(3, 5, "aligned"), (12, 12, "not_aligned"), (20, 21, "partial"), (20, 22, "aligned"), (33, 30, "aligned")]:
        label_now(project, annotator, pair, simple[j], complex_[i], label)
    monkeypatch.setattr(window, "CONTEXT_ROWS", 40)
    monkeypatch.setattr(window, "ROW_BUDGET", 10_000)
    windowed = refresh.refreshed_suggestions(project, annotator, pair)
    full = refresh.full_suggestions(project, annotator, pair)

    assert windowed["next"] is None and windowed["known"] == full["known"] == 4
    unlabelled = {str(pk) for j, pk in enumerate(simple) if j not in (3, 12, 20, 33)}
    assert set(windowed["candidates"]) | set(map(str, windowed["stored"])) == set(full["candidates"]) == unlabelled
    assert len(windowed["candidates"]) > len(unlabelled) // 2  # the labelled blocks, whole
    for simple_id, got in windowed["candidates"].items():
        entries = full["candidates"][simple_id]
        assert [(e["complex"], e["predicted"], e["score"], e["basis"]) for e in got] == [
            (e["complex"], e["predicted"], e["score"], e["basis"]) for e in entries
        ], simple_id
        assert [e["confidence"] for e in got] == pytest.approx([e["confidence"] for e in entries], abs=2e-3)
    run_says = candidates_by_simple(project.suggestion_run, pair, {})  # where no label reaches: what the run stored
    for simple_id in windowed["stored"]:
        assert {(e["complex"], e["predicted"]) for e in run_says.get(simple_id, [])} == {
            (e["complex"], e["predicted"]) for e in full["candidates"][str(simple_id)]
        }


def _other_session():
    """A second database session, as another web process has: advisory locks taken there are held against this one."""
    other = connections.create_connection("default")
    other.ensure_connection()
    return other


def test_while_an_annotators_refresh_runs_elsewhere_theirs_gets_429_with_retry_after_and_anothers_is_answered(
    client, owner, annotator, quiet_queue
):
    second = get_user_model().objects.create_user("second", password="second-pass-123")
    project, pair, *_ = lighthouse_project(owner, [annotator, second], settings.ALIGNER_MODEL_DIR)
    url = reverse("annotation:suggestions_refresh", args=[project.pk, pair.pk])
    other = _other_session()
    try:
        with other.cursor() as cursor:  # the annotator's refresh in flight in another web process
            cursor.execute("SELECT pg_advisory_lock(%s, %s)", [refresh._USER_LOCKS, annotator.pk])
        client.force_login(annotator)
        refused = client.get(url)
        assert refused.status_code == 429 and refused["Retry-After"] == str(refresh.RETRY_AFTER_SECONDS)
        assert "still running" in refused.json()["error"]
        client.force_login(second)
        assert client.get(url).status_code == 200

        with other.cursor() as cursor:  # that refresh ends; every slot is taken by others
            cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [refresh._USER_LOCKS, annotator.pk])
            for slot in range(refresh.REFRESH_SLOTS):
                cursor.execute("SELECT pg_advisory_lock(%s, %s)", [refresh._SLOT_LOCKS, slot])
        busy = client.get(url)
        assert busy.status_code == 429 and busy["Retry-After"] == str(refresh.BUSY_RETRY_AFTER_SECONDS)
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock_all()")
        client.force_login(annotator)
        assert client.get(url).status_code == 200
    finally:
        other.close()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_flood_of_one_annotators_refreshes_gets_429_beyond_the_one_running_and_anothers_is_answered(
    owner, annotator, quiet_queue, monkeypatch
):
    second = get_user_model().objects.create_user("second", password="second-pass-123")
    project, pair, *_ = lighthouse_project(owner, [annotator, second], settings.ALIGNER_MODEL_DIR)
    url = reverse("annotation:suggestions_refresh", args=[project.pk, pair.pk])
    inside, release = threading.Event(), threading.Event()
    decode = refresh.refreshed_suggestions

    def held(project_, user, pair_, **options):  # the annotator's first refresh stays in flight until released
        if user.pk == annotator.pk and not inside.is_set():
            inside.set()
            assert release.wait(60), "the test never released the first refresh"
        return decode(project_, user, pair_, **options)

    monkeypatch.setattr(refresh, "refreshed_suggestions", held)
    answers: dict[str, list] = {"first": [], "flood": [], "second": []}

    def ask(user, into: str) -> None:
        browser = Client()
        browser.force_login(user)
        try:
            answers[into].append(browser.get(url))
        finally:
            connections.close_all()

    first = threading.Thread(target=ask, args=(annotator, "first"))
    first.start()
    assert inside.wait(60), "the first refresh never started"
    flood = [threading.Thread(target=ask, args=(annotator, "flood")) for _ in range(6)]
    for thread in [*flood, threading.Thread(target=ask, args=(second, "second"))]:
        thread.start()
        thread.join(60)
    release.set()
    first.join(60)

    assert [answer.status_code for answer in answers["flood"]] == [429] * 6
    assert all(answer["Retry-After"] == str(refresh.RETRY_AFTER_SECONDS) for answer in answers["flood"])
    assert [answer.status_code for answer in answers["second"]] == [200]
    assert [answer.status_code for answer in answers["first"]] == [200]
    ask(annotator, "first")  # the turn is free again
    assert answers["first"][-1].status_code == 200
