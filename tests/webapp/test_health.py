"""Health you can see: /healthz and /readyz for probes, a 503 while the database is away, job cards that say why they wait."""

from __future__ import annotations

import html
import json

import psycopg
import pytest
from django.db import OperationalError, connection
from django.test import RequestFactory
from django.urls import reverse

from alignment import services
from webapp.error_views import server_error


def _workers(*ages_seconds: int) -> None:
    """Replace Procrastinate's worker rows with workers whose last heartbeat is this many seconds old."""
    with connection.cursor() as cursor:
        cursor.execute("UPDATE procrastinate_jobs SET worker_id = NULL")
        cursor.execute("DELETE FROM procrastinate_workers")
        for age in ages_seconds:
            cursor.execute("INSERT INTO procrastinate_workers (last_heartbeat) VALUES (now() - make_interval(secs => %s))", [age])


def test_healthz_answers_anyone_without_touching_the_database(client, db, django_assert_num_queries) -> None:
    with django_assert_num_queries(0):
        response = client.get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}
    assert "no-cache" in response["Cache-Control"]


def test_readyz_is_ready_with_the_database_and_a_live_worker(client, db) -> None:
    _workers(3, 600)
    response = client.get(reverse("readyz"))
    body = response.json()
    assert response.status_code == 200 and body["status"] == "ready"
    assert body["database"] == "ok" and body["workers"] == 1  # the 10-minute-old heartbeat is a dead worker


def test_readyz_is_unavailable_and_says_why_when_no_worker_beats(client, db) -> None:
    _workers(600)
    response = client.get(reverse("readyz"))
    body = response.json()
    assert response.status_code == 503 and body["status"] == "unavailable"
    assert body["workers"] == 0 and "procrastinate worker" in body["problem"]
    assert body["newest_worker_heartbeat"] is not None


def _raised(exception: BaseException):
    """Call the 500 handler as Django does: while ``exception`` is being handled."""
    request = RequestFactory().get("/annotate/")
    try:
        raise exception
    except BaseException:
        return server_error(request)


def test_a_lost_database_is_a_503_with_retry_after_not_a_500() -> None:
    lost = OperationalError("server closed the connection unexpectedly")
    lost.__cause__ = psycopg.OperationalError("server closed the connection unexpectedly")
    response = _raised(lost)
    assert response.status_code == 503 and response["Retry-After"] == "5"
    assert b"Back in a moment" in response.content and b"Traceback" not in response.content


def test_a_lost_database_under_the_api_is_json() -> None:
    request = RequestFactory().get("/api/corpora/")
    try:
        try:
            raise psycopg.OperationalError("connection failed: could not connect to server")
        except psycopg.OperationalError as cause:
            raise OperationalError("connection failed: could not connect to server") from cause  # as Django wraps it
    except OperationalError:
        response = server_error(request)
    assert response.status_code == 503 and "restarting" in json.loads(response.content)["detail"]


def test_any_other_error_stays_a_500() -> None:
    assert _raised(ValueError("a bug")).status_code == 500


@pytest.mark.django_db(transaction=True)
def test_a_queued_job_nobody_picks_up_says_no_worker_is_running_and_how_to_start_one(client, tram_corpus, owner) -> None:
    run = services.embedding_run_create(corpus=tram_corpus, encoder_name="all-MiniLM-L6-v2", created_by=owner)
    run.refresh_from_db()
    _workers(900)
    client.force_login(owner)
    page = client.get(reverse("alignment:corpus_detail", args=[tram_corpus.pk])).content.decode()
    assert "waiting for a worker" in page  # just queued: nothing to worry about yet
    with connection.cursor() as cursor:  # queued two minutes ago
        cursor.execute("UPDATE procrastinate_events SET at = at - interval '2 minutes' WHERE job_id = %s", [run.procrastinate_job_id])
    page = client.get(reverse("alignment:corpus_detail", args=[tram_corpus.pk])).content.decode()
    assert "No worker is running" in page and "<code>python manage.py procrastinate worker</code>" in page

    _workers(2)  # a worker is alive: then the card says what the job waits for
    page = html.unescape(client.get(reverse("alignment:corpus_detail", args=[tram_corpus.pk])).content.decode())
    assert "No worker is running" not in page
    assert "1 worker running" in page and "queue 'embedding'" in page
