"""REST API: alignment runs (start, status, cancel) and their candidates, for every persona."""

from __future__ import annotations

import pytest
from procrastinate.contrib.django.models import ProcrastinateJob

from alignment.models import AlignmentRun, CandidateAlignment, Corpus
from alignment.services import corpus_get_or_create
from tests.webapp.api_support import api_world, fast_password_hashing, results  # noqa: F401 - pytest fixtures used as arguments

LEXICAL = {"measure": "tfidf_cosine", "paragraph_variant": "none", "also_score": ["jaccard"]}


def test_owner_starts_a_run_over_chosen_pairs_and_it_is_queued_for_the_worker(api_world, django_capture_on_commit_callbacks):
    client = api_world.client("owner")
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/api/alignment-runs/", {"corpus": api_world.corpus.pk, "pairs": [api_world.pair.pk], **LEXICAL}, format="json"
        )
    assert response.status_code == 201, response.content
    body = response.json()
    run = AlignmentRun.objects.get(pk=body["id"])
    assert body["status"] == "queued" and body["scope"] == "pairs" and body["pairs_total"] == 1 and body["percent"] == 0
    assert run.measures == ["tfidf_cosine", "jaccard"] and run.created_by == api_world.users["owner"]
    job = ProcrastinateJob.objects.get(id=run.procrastinate_job_id)  # enqueued on commit, like the corpus page
    assert job.task_name == "alignment.align_pairs" and job.args == {"run_id": run.pk}


def test_without_pairs_the_run_covers_the_whole_corpus(api_world):
    response = api_world.client("staff").post("/api/alignment-runs/", {"corpus": api_world.corpus.pk, **LEXICAL}, format="json")
    assert response.status_code == 201 and response.json()["scope"] == "corpus"


@pytest.mark.parametrize(("persona", "code"), [("outsider", 400), ("anna", 400)])
def test_users_who_cannot_see_the_corpus_cannot_name_it(api_world, persona, code):
    response = api_world.client(persona).post("/api/alignment-runs/", {"corpus": api_world.corpus.pk, **LEXICAL}, format="json")
    assert response.status_code == code and "does not exist" in response.json()["corpus"][0]
    assert AlignmentRun.objects.count() == 1


def test_a_viewer_of_a_shared_corpus_sees_runs_but_cannot_start_or_cancel(api_world):
    Corpus.objects.filter(pk=api_world.corpus.pk).update(is_shared=True)
    client = api_world.client("outsider")
    assert client.get(api_world.url("alignment-runs/{run}/")).status_code == 200
    started = client.post("/api/alignment-runs/", {"corpus": api_world.corpus.pk, **LEXICAL}, format="json")
    assert started.status_code == 403 and "only the owner" in started.json()["detail"]
    queued = AlignmentRun.objects.create(corpus=api_world.corpus, config={}, model_version="x", pairs_total=1)
    assert client.post(f"/api/alignment-runs/{queued.pk}/cancel/").status_code == 403
    queued.refresh_from_db()
    assert queued.status == "queued" and AlignmentRun.objects.count() == 2


@pytest.mark.parametrize(
    ("extra", "field", "message"),
    [
        ({"measure": "telepathy"}, "measure", "not a valid choice"),
        ({"also_score": ["telepathy"]}, "also_score", "not a valid choice"),
        ({"pairs": []}, "pairs", "at least one"),
        ({"pairs": [999999]}, "pairs", "does not exist"),
        ({"paragraph_variant": 3}, "paragraph_variant", "not a valid choice"),
    ],
)
def test_bad_run_input_names_the_field_and_starts_nothing(api_world, extra, field, message):
    response = api_world.client("owner").post("/api/alignment-runs/", {"corpus": api_world.corpus.pk, **LEXICAL, **extra}, format="json")
    assert response.status_code == 400
    assert message in str(response.json()[field])
    assert AlignmentRun.objects.count() == 1


def test_a_pair_of_another_corpus_is_refused(api_world):
    other, _ = corpus_get_or_create(name="Other", language="en", owner=api_world.users["owner"])
    response = api_world.client("owner").post(
        "/api/alignment-runs/", {"corpus": other.pk, "pairs": [api_world.pair.pk], **LEXICAL}, format="json"
    )
    assert response.status_code == 400 and "do not belong to corpus" in response.json()["pairs"][0]
    assert AlignmentRun.objects.count() == 1


def test_a_cross_encoder_run_without_a_model_is_refused_with_the_reason(api_world, settings):
    settings.CROSS_ENCODER_MODEL_DIR = ""
    payload = {"corpus": api_world.corpus.pk, "measure": "cross_encoder", "also_score": []}
    response = api_world.client("owner").post("/api/alignment-runs/", payload, format="json")
    assert response.status_code == 400 and "fine-tuned pair classifier" in response.json()["non_field_errors"][0]


def test_owner_cancels_a_queued_run(api_world):
    queued = AlignmentRun.objects.create(corpus=api_world.corpus, config={}, model_version="x", pairs_total=1)
    response = api_world.client("owner").post(f"/api/alignment-runs/{queued.pk}/cancel/")
    assert response.status_code == 200 and response.json()["status"] == "cancelled"
    queued.refresh_from_db()
    assert queued.status == "cancelled" and queued.finished_at is not None


def test_cancelling_a_running_run_asks_it_to_stop(api_world):
    running = AlignmentRun.objects.create(corpus=api_world.corpus, config={}, model_version="x", pairs_total=1, status="running")
    body = api_world.client("staff").post(f"/api/alignment-runs/{running.pk}/cancel/").json()
    assert body["status"] == "running" and body["cancel_requested"] is True


@pytest.mark.parametrize("persona", ["outsider", "anna", "viewer"])
def test_a_private_run_is_404_for_others_even_project_members(api_world, persona):
    client = api_world.client(persona)
    assert client.get(api_world.url("alignment-runs/{run}/")).status_code == 404
    assert client.post(api_world.url("alignment-runs/{run}/cancel/")).status_code == 404
    assert results(client.get("/api/alignment-runs/")) == []


def test_run_status_shows_progress_and_filters(api_world):
    client = api_world.client("owner")
    body = client.get(api_world.url("alignment-runs/{run}/")).json()
    assert body["status"] == "succeeded" and body["percent"] == 100 and body["pairs_done"] == 1
    assert body["candidates_written"] == CandidateAlignment.objects.filter(run=api_world.run).count()
    assert body["measures"] == ["tfidf_cosine", "jaccard"]
    assert len(results(client.get(api_world.url("alignment-runs/?corpus={corpus}&status=succeeded")))) == 1
    assert results(client.get("/api/alignment-runs/?status=failed")) == []
    assert len(results(client.get(api_world.url("alignment-runs/?pair={pair}")))) == 1
    assert client.get("/api/alignment-runs/?status=exploded").status_code == 400


def test_candidates_list_filters_by_run_pair_label_and_score(api_world):
    client = api_world.client("owner")
    everything = results(client.get(api_world.url("candidates/?run={run}&pair={pair}&page_size=500")))
    stored = CandidateAlignment.objects.filter(run=api_world.run)
    assert len(everything) == stored.count() > 0
    first = everything[0]
    candidate = stored.get(pk=first["id"])
    assert first["simple_text"] == candidate.simple_sentence.text and first["scores"].keys() == {"tfidf_cosine", "jaccard"}
    aligned = results(client.get(api_world.url("candidates/?run={run}&label=aligned&page_size=500")))
    assert {row["label"] for row in aligned} == {"aligned"} and len(aligned) == stored.filter(label="aligned").count()
    high = results(client.get(api_world.url("candidates/?run={run}&score_min=0.3&score_max=0.9&page_size=500")))
    assert all(0.3 <= row["score"] <= 0.9 for row in high) and len(high) == stored.filter(score__gte=0.3, score__lte=0.9).count()
    by_score = results(client.get(api_world.url("candidates/?run={run}&ordering=-score")))
    assert [row["score"] for row in by_score] == sorted((row["score"] for row in by_score), reverse=True)
    assert client.get("/api/candidates/?label=maybe").status_code == 400
    assert client.get("/api/candidates/?score_min=high").status_code == 400


@pytest.mark.parametrize(("persona", "visible"), [("owner", True), ("staff", True), ("outsider", False), ("anna", False)])
def test_candidates_follow_corpus_visibility(api_world, persona, visible):
    candidate = CandidateAlignment.objects.filter(run=api_world.run).first()
    client = api_world.client(persona)
    assert client.get(f"/api/candidates/{candidate.pk}/").status_code == (200 if visible else 404)
    assert bool(results(client.get("/api/candidates/"))) is visible


def test_candidates_are_read_only(api_world):
    candidate = CandidateAlignment.objects.filter(run=api_world.run).first()
    client = api_world.client("owner")
    assert client.post("/api/candidates/", {}, format="json").status_code == 405
    assert client.put(f"/api/candidates/{candidate.pk}/", {"label": "aligned"}, format="json").status_code == 405
    assert client.delete(f"/api/candidates/{candidate.pk}/").status_code == 405
