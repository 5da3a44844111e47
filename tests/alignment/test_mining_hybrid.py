"""Hybrid MUSS mining in the app: the lexical view stored next to the dense one, both search backends agreeing with
the exact fused search, the corpus's language choosing retrieval and encoder, and dense jobs keeping their identity."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
from django.db import connection
from django.urls import reverse
from pgvector import SparseVector

from alignment.copying import packed_sparse_rows
from alignment.importing.readers import ImportOptions
from alignment.importing.service import corpus_import_files
from alignment.mining import search_backend
from alignment.mining import service as mining
from alignment.mining.models import MinedPair, MiningJob, MiningSequence
from alignment.services import corpus_get_or_create
from models_ml.mining.hybrid_index import exact_hybrid
from models_ml.mining.retrieval import LEXICAL_DIMENSIONS, LexicalVectoriser
from models_ml.similarity.multilingual import USE_ENCODER

GERMAN = {
    "Rat": "Der Gemeinderat hat am Montag den Haushalt für das nächste Jahr beschlossen.\nIm Hafen liegen viele kleine Boote.\n",
    "Zeitung": "Am Montag beschloss der Gemeinderat den Haushalt für das kommende Jahr.\nDie Bibliothek bleibt im August geschlossen.\n",
    "Wetter": "Starker Regen hat mehrere Straßen in der Altstadt überflutet.\nIm August bleibt die Bibliothek geschlossen.\n",
    "Sport": "Die Mannschaft gewann das Spiel mit drei zu eins.\nMehrere Straßen der Altstadt wurden von starkem Regen überflutet.\n",
}


def _german_corpus(owner):
    corpus, created = corpus_get_or_create(name="Absätze", language="de", owner=owner)
    if created or not corpus.documents.exists():
        files = [(f"{title}-adv.txt", text.encode()) for title, text in GERMAN.items()]
        assert not corpus_import_files(corpus=corpus, files=files, options=ImportOptions(format="presplit")).errors
    return corpus


def _hybrid_job(owner, run_worker, settings, backend: str, **config) -> MiningJob:
    settings.MINING_SEARCH_BACKEND = backend
    job, _ = mining.mining_job_create(
        source_corpus=_german_corpus(owner), method="muss", config={"k": 3, "retrieval": "hybrid", **config}, shard_sequences=3
    )
    run_worker(["mining"])
    job.refresh_from_db()
    assert job.status == MiningJob.Status.SUCCEEDED, job.error
    return job


def _stored(job: MiningJob):
    rows = list(MiningSequence.objects.filter(job=job).order_by("index"))
    ids = np.array([row.index for row in rows])
    dense = np.array([row.vector for row in rows], dtype=np.float32)
    lexical = search_backend._stored_views(job, len(rows))[2]
    return rows, ids, dense, lexical


@pytest.mark.slow
def test_a_hybrid_job_on_a_german_corpus_stores_both_views_and_finds_the_exact_fused_neighbours(owner, run_worker, settings) -> None:
    job = _hybrid_job(owner, run_worker, settings, "pgvector")
    assert job.retrieval == MiningJob.Retrieval.HYBRID and job.config["encoder"] == USE_ENCODER
    assert job.config["retrieval"] == "hybrid" and job.config["dense_weight"] == pytest.approx(0.3)
    assert job.config["language"] == "de"  # the ACCESS attributes rank words in the corpus's language
    rows, ids, dense, lexical = _stored(job)
    assert dense.shape == (12, 512)  # 4 documents x (2 sentences + both together)
    assert lexical.shape == (12, LEXICAL_DIMENSIONS) and 0 < np.diff(lexical.indptr).max() <= 1000
    assert np.linalg.norm(lexical.toarray(), axis=1) == pytest.approx(np.ones(12), abs=1e-5)
    vectoriser = LexicalVectoriser.from_bytes(job.lexical_idf)  # the job's one IDF version produced its stored rows
    again = vectoriser.transform([row.text for row in rows])
    assert abs(again - lexical).max() < 1e-5
    reference = exact_hybrid(dense, lexical, ids, 3, dense_weight=0.3)  # exact fused search: the reference
    for row, expected_ids, expected_scores in zip(rows, reference.indices, reference.scores):
        assert [i for i, _ in row.neighbours] == expected_ids.tolist(), row.text
        assert [s for _, s in row.neighbours] == pytest.approx(expected_scores.tolist(), abs=1e-4)
    found = {frozenset((p.source_text, p.target_text)) for p in MinedPair.objects.filter(job=job)}
    assert frozenset(GERMAN["Rat"].splitlines()[0:1] + GERMAN["Zeitung"].splitlines()[0:1]) in found
    assert frozenset((GERMAN["Zeitung"].splitlines()[1], GERMAN["Wetter"].splitlines()[1])) in found
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s", [f"mining_sequence_lexical_hnsw_{job.pk}"])
        assert "sparsevec_ip_ops" in cursor.fetchone()[0]


@pytest.mark.slow
def test_both_search_backends_give_a_hybrid_job_the_same_neighbours(owner, run_worker, settings) -> None:
    by_pgvector = _hybrid_job(owner, run_worker, settings, "pgvector")
    by_faiss = _hybrid_job(owner, run_worker, settings, "faiss", min_margin=1.0)  # another setting: another job
    assert by_faiss.pk != by_pgvector.pk
    expected = {row.index: row.neighbours for row in MiningSequence.objects.filter(job=by_pgvector)}
    found = {row.index: row.neighbours for row in MiningSequence.objects.filter(job=by_faiss)}
    assert len(found) == len(expected) == 12
    for index, neighbours in expected.items():
        assert [i for i, _ in found[index]] == [i for i, _ in neighbours], index
        # the faiss side reads the stored halves as unit rows, so its cosines are pgvector's (5e-6 apart without)
        assert [s for _, s in found[index]] == pytest.approx([s for _, s in neighbours], abs=1e-6)
    assert isinstance(search_backend.job_index(by_faiss), search_backend.HybridIndex)


def test_the_job_page_says_which_retrieval_and_encoder_mined(owner, run_worker, settings, client) -> None:
    job = _hybrid_job(owner, run_worker, settings, "pgvector")
    client.force_login(owner)
    html = client.get(reverse("alignment:mining_job", args=[job.pk])).content.decode()
    assert "Retrieval: hybrid (character 3-gram TF-IDF + encoder cosine), 0.3 × dense + 0.7 × lexical" in html
    assert f"encoder {USE_ENCODER}" in html and "corpus language de" in html


def test_an_english_dense_job_keeps_the_identity_it_had_before_hybrid_retrieval(owner) -> None:
    corpus, _ = corpus_get_or_create(name="English", language="en", owner=owner)
    from tests.alignment.test_mining import PARAPHRASES

    files = [(f"{title}-adv.txt", text.encode()) for title, text in PARAPHRASES.items()]
    assert not corpus_import_files(corpus=corpus, files=files, options=ImportOptions(format="presplit")).errors
    job, created = mining.mining_job_create(source_corpus=corpus, method="muss", config={"k": 4})
    assert created and job.retrieval == MiningJob.Retrieval.DENSE
    assert "retrieval" not in job.config and "dense_weight" not in job.config and job.lexical_idf is None
    legacy = {key: value for key, value in job.config.items()}  # what a job stored before hybrid retrieval existed
    key = json.dumps({"method": "muss", "source": corpus.pk, "target": corpus.pk, "config": legacy}, sort_keys=True)
    assert job.config_hash == hashlib.sha256(key.encode()).hexdigest()
    again, created = mining.mining_job_create(source_corpus=corpus, method="muss", config={"k": 4, "retrieval": "dense"})
    assert again.pk == job.pk and not created
    hybrid, created = mining.mining_job_create(source_corpus=corpus, method="muss", config={"k": 4, "retrieval": "hybrid"})
    assert created and hybrid.pk != job.pk and hybrid.retrieval == MiningJob.Retrieval.HYBRID


@pytest.mark.parametrize(
    ("method", "config", "message"),
    [
        ("muss", {"retrieval": "sparse"}, "unknown retrieval 'sparse'"),
        ("muss", {"retrieval": "hybrid", "dense_weight": 1.5}, "dense_weight must be a number from 0 to 1, got 1.5"),
        ("muss", {"retrieval": "hybrid", "dense_weight": "half"}, "dense_weight must be a number from 0 to 1, got 'half'"),
        ("muss", {"retrieval": "dense", "dense_weight": 0.5}, "dense_weight is a setting of hybrid retrieval"),
    ],
)
def test_bad_retrieval_settings_are_refused_and_nothing_is_stored(owner, method, config, message) -> None:
    corpus = _german_corpus(owner)
    with pytest.raises(ValueError, match=message):
        mining.mining_job_create(source_corpus=corpus, target_corpus=corpus, method=method, config=config)
    assert not MiningJob.objects.exists()


def test_the_muss_form_leaves_retrieval_and_bound_to_the_corpus_language_unless_chosen(owner, client) -> None:
    corpus = _german_corpus(owner)
    client.force_login(owner)
    url = reverse("alignment:mining_start", args=[corpus.pk])
    page = client.get(url).content.decode()  # the filters' language starts at the corpus's
    assert page.count('<option value="de" selected>German</option>') == 2
    form = {"method": "muss", "k": 8, "min_margin": 1.06, "language": "de", "retrieval": "", "max_distance": ""}
    assert client.post(url, form).status_code == 302  # German: dense (it measured best for MUSS) with USE multilingual
    job = MiningJob.objects.get()
    assert job.retrieval == "dense" and job.config["max_distance"] == 0.25 and job.config["encoder"] == USE_ENCODER
    assert client.post(url, {**form, "retrieval": "hybrid"}).status_code == 302
    hybrid = MiningJob.objects.exclude(pk=job.pk).get()
    assert hybrid.retrieval == "hybrid" and hybrid.config["max_distance"] == 0.6 and hybrid.config["encoder"] == USE_ENCODER
    refused = client.post(url, {**form, "retrieval": "sparse"})
    assert refused.status_code == 200 and "Select a valid choice" in refused.content.decode()
    assert MiningJob.objects.count() == 2


def test_the_mining_pages_never_read_a_jobs_idf(owner, run_worker, settings, client) -> None:
    """The IDF is hundreds of KB on a real corpus; the job card is polled every few seconds."""
    from django.test.utils import CaptureQueriesContext

    job = _hybrid_job(owner, run_worker, settings, "pgvector")
    assert job.lexical_idf
    client.force_login(owner)
    with CaptureQueriesContext(connection) as queries:
        assert client.get(reverse("alignment:mining_job_progress", args=[job.pk])).status_code == 200
        assert client.get(reverse("alignment:mining_job", args=[job.pk])).status_code == 200
        assert client.get(reverse("alignment:mining_start", args=[job.source_corpus_id])).status_code == 200
    assert not [query["sql"] for query in queries.captured_queries if "lexical_idf" in query["sql"]]


def test_lexical_rows_packed_for_copy_are_pgvector_s_own_binary_sparsevecs() -> None:
    sentences = ["Der Gemeinderat hat den Haushalt beschlossen.", "Im Hafen liegen viele kleine Boote.", " "]  # " ": no 3-gram
    lexical = LexicalVectoriser.fit(sentences).transform(sentences)
    lexical.data[0] = 0.0  # an explicit zero, which a sparsevec cannot hold
    packed = packed_sparse_rows(lexical)
    assert [row.to_binary() for row in packed] == [SparseVector(lexical[row]).to_binary() for row in range(lexical.shape[0])]
    assert packed[-1].to_binary() == SparseVector({}, LEXICAL_DIMENSIONS).to_binary()
