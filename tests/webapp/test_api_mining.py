"""REST API: mining jobs (list, start, read, cancel) and their mined pairs (paged, filtered, sorted), for every persona.

The corpora are the news articles of tests/alignment/mining_support.py: LHA-ready without a model, and a job runs
in this process, so the pairs are real ones.
"""

from __future__ import annotations

import pytest
from procrastinate.contrib.django.models import ProcrastinateJob
from rest_framework.test import APIClient

from alignment.mining.models import MinedPair, MiningJob
from alignment.mining.starting import mining_job_start
from alignment.services import corpus_get_or_create
from tests.alignment.mining_support import SIMPLE, mineable_corpus, mining_run, news_corpora
from tests.webapp.api_support import fast_password_hashing, results  # noqa: F401 - pytest fixtures used as arguments
from webapp.accounts.services import api_token_create

LHA = {"k_documents": 1, "theta_s": 0.6}


def as_user(user) -> APIClient:
    client = APIClient()
    if user is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Token {api_token_create(user=user).key}")
    return client


@pytest.fixture
def corpora(owner):
    return news_corpora(owner)


@pytest.fixture
def mined(corpora, owner) -> MiningJob:
    """A finished LHA job from the complex articles to the simple ones."""
    source, target = corpora
    job, _ = mining_job_start(corpus=source, method="lha", data={"target_corpus": target.pk, **LHA}, user=owner)
    return mining_run(job)


def start(client: APIClient, body: dict):
    return client.post("/api/mining-jobs/", body, format="json")


def test_the_owner_starts_a_job_with_the_forms_defaults_and_it_is_queued_once(corpora, owner, django_capture_on_commit_callbacks):
    source, target = corpora
    body = {"source_corpus": source.pk, "method": "lha", "target_corpus": target.pk, "k_documents": 2, "min_overlap": None}
    with django_capture_on_commit_callbacks(execute=True):
        response = start(as_user(owner), body)
    assert response.status_code == 201, response.content
    answer = response.json()
    job = MiningJob.objects.get(pk=answer["id"])
    assert answer["status"] == "queued" and answer["method"] == "lha" and answer["statistics"]["pairs"] == 0
    assert job.created_by == owner and job.config["k_documents"] == 2 and job.config["k_sentences"] == 5  # the form's value
    assert job.config["min_overlap"] is None and job.config["min_levenshtein"] == 0.2  # emptied: off; left out: the form's
    assert ProcrastinateJob.objects.get(task_name="alignment.mining_prepare").args == {"job_id": job.pk}
    again = start(as_user(owner), body)
    assert again.status_code == 200 and again.json()["id"] == job.pk and MiningJob.objects.count() == 1


def test_a_muss_job_needs_no_target(corpora, staff):
    response = start(as_user(staff), {"source_corpus": corpora[1].pk, "method": "muss", "k": 4})
    assert response.status_code == 201, response.content
    job = MiningJob.objects.get()
    assert job.target_corpus_id == corpora[1].pk and job.config["k"] == 4 and job.config["min_margin"] == 1.06


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"k_documents": 0}, "k_documents", "Ensure this value is greater than or equal to 1."),
        ({"theta_s": "high"}, "theta_s", "Enter a number."),
        ({"theta_d": 2}, "theta_d", "Ensure this value is less than or equal to 1.0."),
        ({"retrieval": "sparse"}, "retrieval", "Select a valid choice."),
        ({"window": 3}, "window", "not a setting of LHA jobs; their settings: target_corpus, retrieval"),
        ({"method": "laser"}, "method", '"laser" is not a valid choice.'),
        ({"target_corpus": None}, "target_corpus", "This field is required."),
        ({"target_corpus": 999999}, "target_corpus", "corpus 999999 is not one you may mine towards"),
        ({"target_corpus": "bare"}, "target_corpus", "corpus 'Bare': 2 of 2 sentences have no vector from"),
        ({"method": "muss", "target_corpus": "simple"}, "target_corpus", "not a setting of MUSS jobs"),
        ({"method": "muss", "k": 51}, "k", "Ensure this value is less than or equal to 50."),
        ({"source_corpus": None}, "source_corpus", "This field may not be null."),
        ({"source_corpus": "empty"}, "source_corpus", "corpus 'Empty' has no documents: import documents into it before mining"),
    ],
)
def test_bad_settings_answer_400_naming_the_field_and_queue_nothing(
    corpora, owner, body, field, message, django_capture_on_commit_callbacks
):
    source, target = corpora
    named = {
        "bare": mineable_corpus(owner, "Bare", {"Tram": SIMPLE["Tram"]}, vectors=False).pk, "simple": target.pk,
        "empty": corpus_get_or_create(name="Empty", language="en", owner=owner)[0].pk,
    }  # fmt: skip
    towards = {} if body.get("method") == "muss" else {"target_corpus": target.pk}
    body = {"source_corpus": source.pk, **towards, **{key: named.get(value, value) for key, value in body.items()}}
    with django_capture_on_commit_callbacks(execute=True):
        response = start(as_user(owner), body)
    assert response.status_code == 400, response.content
    assert list(response.json()) == [field] and message in response.json()[field][0]
    assert not MiningJob.objects.exists() and not ProcrastinateJob.objects.filter(task_name="alignment.mining_prepare").exists()


def test_who_may_see_a_shared_corpus_reads_its_jobs_but_starts_and_cancels_none(owner, outsider, django_capture_on_commit_callbacks):
    source, target = news_corpora(owner, shared=True)
    job, _ = mining_job_start(corpus=source, method="lha", data={"target_corpus": target.pk}, user=owner)
    client = as_user(outsider)
    assert [row["id"] for row in results(client.get("/api/mining-jobs/"))] == [job.pk]
    assert client.get(f"/api/mining-jobs/{job.pk}/").status_code == 200
    with django_capture_on_commit_callbacks(execute=True):
        started = start(client, {"source_corpus": source.pk, "target_corpus": target.pk, "k_documents": 3})
    assert started.status_code == 403 and started.json()["detail"].startswith("only the owner of corpus 'Complex news' and staff")
    assert MiningJob.objects.count() == 1 and not ProcrastinateJob.objects.exists()
    assert client.post(f"/api/mining-jobs/{job.pk}/cancel/").status_code == 403
    job.refresh_from_db()
    assert not job.cancel_requested


def test_an_outsider_cannot_see_or_name_a_private_corpus_or_its_jobs(mined, outsider, corpora):
    client = as_user(outsider)
    assert results(client.get("/api/mining-jobs/")) == []
    for url in (f"/api/mining-jobs/{mined.pk}/", f"/api/mining-jobs/{mined.pk}/pairs/"):
        assert client.get(url).status_code == 404
    assert client.post(f"/api/mining-jobs/{mined.pk}/cancel/").status_code == 404
    refused = start(client, {"source_corpus": corpora[0].pk, "target_corpus": corpora[1].pk})
    assert refused.status_code == 400 and "does not exist" in refused.json()["source_corpus"][0]
    assert MiningJob.objects.count() == 1
    assert as_user(None).get("/api/mining-jobs/").status_code in (401, 403)


def test_the_owner_cancels_a_running_job_and_it_stops_keeping_its_pairs(corpora, owner):
    source, target = corpora
    job, _ = mining_job_start(corpus=source, method="lha", data={"target_corpus": target.pk}, user=owner)
    MiningJob.objects.filter(pk=job.pk).update(status="running")
    response = as_user(owner).post(f"/api/mining-jobs/{job.pk}/cancel/")
    assert response.status_code == 200 and response.json()["cancel_requested"] is True and response.json()["status"] == "running"
    job.refresh_from_db()
    assert job.cancel_requested


def test_a_job_reads_with_its_progress_and_statistics(mined, owner):
    answer = as_user(owner).get(f"/api/mining-jobs/{mined.pk}/").json()
    pairs = MinedPair.objects.filter(job=mined).count()
    assert answer["status"] == "succeeded" and answer["percent"] == 100 and answer["unit"] == "source documents"
    assert (answer["documents_done"], answer["documents_total"], answer["pairs_found"]) == (3, 3, pairs)
    assert answer["statistics"]["pairs"] == pairs > 0 and answer["statistics"]["shapes_1_1"] == pairs


def test_the_list_filters_by_corpus_status_and_method(mined, corpora, owner):
    queued, _ = mining_job_start(corpus=corpora[1], method="muss", data={}, user=owner)
    client = as_user(owner)

    def ids(query: str) -> list[int]:
        return [row["id"] for row in results(client.get(f"/api/mining-jobs/{query}"))]

    assert ids("") == [queued.pk, mined.pk]
    assert ids(f"?corpus={corpora[0].pk}") == [mined.pk] and ids(f"?corpus={corpora[1].pk}") == [queued.pk, mined.pk]
    assert ids("?status=queued") == [queued.pk] and ids("?method=lha") == [mined.pk]
    assert client.get("/api/mining-jobs/?status=lost").status_code == 400


def test_pairs_page_through_with_the_pages_filters_and_sorts(mined, owner):
    client = as_user(owner)
    url = f"/api/mining-jobs/{mined.pk}/pairs/"
    everything = results(client.get(url, {"page_size": 500}))
    assert len(everything) == MinedPair.objects.filter(job=mined).count() >= 3
    assert [row["score"] for row in everything] == sorted((row["score"] for row in everything), reverse=True)
    first = client.get(url, {"page_size": 2}).json()
    assert first["count"] == len(everything) and len(first["results"]) == 2 and "page=2" in first["next"]
    second = client.get(url, {"page_size": 2, "page": 2}).json()
    assert [row["id"] for row in first["results"] + second["results"]] == [row["id"] for row in everything][:4]
    high = results(client.get(url, {"score_min": "0.8", "sort": "length_ratio"}))
    assert high and all(row["score"] >= 0.8 for row in high) and len(high) < len(everything)
    assert [row["length_ratio"] for row in high] == sorted(row["length_ratio"] for row in high)
    honey = results(client.get(url, {"q": "honey", "shape": "1:1"}))
    assert [row["source_text"] for row in honey] == ["The bees turn the nectar into honey inside the hive."]
    assert honey[0]["source_numbers"] == "2" and honey[0]["source_sentences"] == [1] and honey[0]["shape"] == "1:1"


@pytest.mark.parametrize(
    ("query", "field", "message"),
    [
        ({"score_min": "high"}, "score_min", "score_min: 'high' is not a number"),
        ({"overlap_max": "inf"}, "overlap_max", "is not a finite number"),
        ({"shape": "2:2"}, "shape", "shape: '2:2' is not one of 1:1, 1:n, n:1, n:m"),
        ({"sort": "random"}, "sort", "sort: 'random' is not an order; orders: score (best score first)"),
        ({"q": "x" * 201}, "q", "q: the search text is 201 characters long; the limit is 200"),
    ],
)
def test_a_bad_pair_filter_answers_400_naming_it(mined, owner, query, field, message):
    response = as_user(owner).get(f"/api/mining-jobs/{mined.pk}/pairs/", query)
    assert response.status_code == 400 and list(response.json()) == [field] and message in response.json()[field][0]


def test_the_schema_describes_the_mining_endpoints_and_the_forms_settings(client):
    schema = client.get("/api/schema/?format=json").json()
    paths = schema["paths"]
    assert {"/api/mining-jobs/", "/api/mining-jobs/{id}/", "/api/mining-jobs/{id}/cancel/", "/api/mining-jobs/{id}/pairs/"} <= set(paths)
    assert set(paths["/api/mining-jobs/"]) >= {"get", "post"} and set(paths["/api/mining-jobs/{id}/pairs/"]) == {"get"}
    settings = schema["components"]["schemas"]["MiningJobCreateRequest"]["properties"]
    assert settings["k"]["maximum"] == 50 and settings["min_overlap"]["nullable"] is True and settings["k_documents"]["minimum"] == 1
    assert "Left out: 0.4." in settings["min_overlap"]["description"]
    filters = {parameter["name"] for parameter in paths["/api/mining-jobs/{id}/pairs/"]["get"]["parameters"]}
    assert {"score_min", "char_ratio_max", "shape", "q", "sort", "page", "page_size"} <= filters
