"""Hybrid LHA in the app: each document's character 3-gram TF-IDF stored as a sparsevec under the job's one IDF,
documents and sentences found and scored by the fused score exactly as the in-memory reference does, the corpus's
language choosing the retrieval, dense LHA jobs keeping their identity, and bad settings refused."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict

import numpy as np
import pytest
from django.conf import settings
from django.db import connection
from django.urls import reverse

from alignment import services
from alignment.importing.readers import ImportOptions
from alignment.importing.service import corpus_import_files
from alignment.mining import service as mining
from alignment.mining.lha_service import LHA_HYBRID_DENSE_WEIGHT, LHA_HYBRID_THETA_D, LHA_HYBRID_THETA_S
from alignment.mining.models import MinedPair, MiningDocumentVector, MiningJob
from alignment.models import Document, SentenceEmbedding
from alignment.services import corpus_get_or_create
from models_ml.mining.hybrid_lha import document_text, document_vectoriser, mine_hybrid_lha
from models_ml.mining.lha import LHAConfig
from models_ml.mining.retrieval import LEXICAL_DIMENSIONS, LexicalVectoriser
from models_ml.mining.types import MiningDocument

COMPLEX = {
    "Rat": "Der Gemeinderat hat am Dienstag eine neue Straßenbahnlinie beschlossen.\n"
    "Die Linie soll den Hafen mit der Universität verbinden.\nDie Bauarbeiten beginnen im Frühjahr und dauern drei Jahre.\n",
    "Bienen": "Honigbienen besuchen jeden Tag Tausende von Blüten, um Nektar zu sammeln.\n"
    "Im Bienenstock verwandeln die Bienen den Nektar in Honig.\nDie Imker ernten den Honig im Spätsommer.\n",
    "Vulkan": "Der Vulkan auf der nördlichen Insel ist am Sonntagmorgen erneut ausgebrochen.\n"
    "Dichte Aschewolken zwangen den Flughafen, viele Flüge zu streichen.\nDie Dörfer in der Nähe wurden geräumt.\n",
    "Bibliothek": "Die Stadtbibliothek wurde nach einer zweijährigen Renovierung wieder eröffnet.\n"
    "Besucher können jetzt mit ihrem Ausweis elektronische Bücher ausleihen.\nDie Bibliothek ist bis zehn Uhr abends geöffnet.\n",
}
SIMPLE = {
    "Rat": "Der Gemeinderat will eine neue Straßenbahnlinie.\nDie Linie fährt vom Hafen zur Universität.\nDer Bau beginnt im Frühjahr.\n",
    "Bienen": "Honigbienen besuchen jeden Tag viele Blüten.\nDie Bienen machen im Bienenstock Honig aus Nektar.\nDie Imker ernten den Honig im Sommer.\n",
    "Vulkan": "Der Vulkan auf der Insel ist am Sonntag ausgebrochen.\nWegen der Asche hat der Flughafen Flüge gestrichen.\nDie Dörfer wurden geräumt.\n",
    "Bibliothek": "Die Bibliothek ist nach zwei Jahren wieder offen.\nBesucher können elektronische Bücher ausleihen.\nDie Bibliothek ist bis zehn Uhr offen.\n",
}
SETTINGS = {"k_documents": 2, "theta_d": 0.0, "k_sentences": 1, "theta_s": 0.3, "language": "de"}


def _corpora(owner, run_worker=None, language: str = "de") -> list:
    corpora = []
    for name, texts in (("Komplex", COMPLEX), ("Einfach", SIMPLE)):
        corpus, _ = corpus_get_or_create(name=name, language=language, owner=owner)
        files = [(f"{title}-adv.txt", text.encode()) for title, text in texts.items()]
        assert not corpus_import_files(corpus=corpus, files=files, options=ImportOptions(format="presplit")).errors
        services.embedding_run_create(corpus=corpus, encoder_name=settings.ENCODER_MODEL)
        corpora.append(corpus)
    if run_worker is not None:
        run_worker(["embedding"])
    return corpora


@pytest.fixture
def german(owner, run_worker):
    return _corpora(owner, run_worker)


def _hybrid_job(german, run_worker, **config) -> MiningJob:
    job, created = mining.mining_job_create(
        source_corpus=german[0], target_corpus=german[1], config={**SETTINGS, **config}, shard_documents=2
    )
    run_worker(["mining"])
    job.refresh_from_db()
    assert created and job.status == MiningJob.Status.SUCCEEDED, job.error
    return job


def _documents(corpus) -> list[MiningDocument]:
    return [
        MiningDocument(d.external_id, [s.text for s in d.sentences.order_by("index")])
        for d in Document.objects.filter(corpus=corpus).order_by("pk")
    ]


def _stored_vectors():
    """The app's sentence vectors by text: the in-memory reference reads the same vectors the job read."""
    rows = SentenceEmbedding.objects.filter(encoder__name=settings.ENCODER_MODEL).values_list("sentence__text", "vector")
    return {text: np.asarray(vector, dtype=np.float32) for text, vector in rows}


@pytest.mark.slow
def test_a_german_hybrid_lha_job_equals_the_exact_fused_reference(german, run_worker) -> None:
    job = _hybrid_job(german, run_worker)
    assert job.retrieval == MiningJob.Retrieval.HYBRID  # German: hybrid by default
    assert job.config["retrieval"] == "hybrid" and job.config["dense_weight"] == LHA_HYBRID_DENSE_WEIGHT
    vectors = _stored_vectors()
    source, target = _documents(german[0]), _documents(german[1])
    expected = mine_hybrid_lha(
        source, target, encode=lambda texts: np.stack([vectors[t] for t in texts]), config=LHAConfig(**SETTINGS),
        dense_weight=LHA_HYBRID_DENSE_WEIGHT,
    )  # fmt: skip
    expected = {(m.source_doc, m.target_doc, m.source, m.target): (m.score, m.doc_score) for m in expected}
    pairs = MinedPair.objects.filter(job=job).select_related("source_document", "target_document")
    found = {
        (p.source_document.external_id, p.target_document.external_id, tuple(p.source_sentences), tuple(p.target_sentences)): (
            p.score,
            p.doc_score,
        )
        for p in pairs
    }
    assert len(found) >= 8 and set(found) == set(expected)
    for key, (score, doc_score) in found.items():
        assert (score, doc_score) == pytest.approx(expected[key], abs=1e-4), key
    assert {(s, t) for s, t, _, _ in found} == {(name, name) for name in COMPLEX}  # the hidden pairing, nothing else
    assert ("Rat", "Rat", (1,), (1,)) in found and ("Bienen", "Bienen", (2,), (2,)) in found


def test_the_document_vectors_are_stored_under_the_jobs_one_idf_with_a_sparse_index(german, run_worker) -> None:
    job = _hybrid_job(german, run_worker)
    rows = list(MiningDocumentVector.objects.filter(job=job).select_related("document").order_by("document_id"))
    assert len(rows) == 8 and {row.document.corpus_id for row in rows} == {german[0].pk, german[1].pk}
    documents = _documents(german[0]) + _documents(german[1])
    vectoriser = document_vectoriser([d.sentences for d in documents])  # fitted on whole documents of both corpora
    assert np.array_equal(LexicalVectoriser.from_bytes(job.lexical_idf).idf, vectoriser.idf)
    texts = [document_text([s.text for s in row.document.sentences.order_by("index")]) for row in rows]
    expected = vectoriser.transform(texts).toarray()  # (8, D)
    for row, want in zip(rows, expected):
        stored = row.lexical.to_numpy()
        assert stored.shape == (LEXICAL_DIMENSIONS,) and 0 < np.count_nonzero(stored) <= 1000
        assert np.linalg.norm(stored) == pytest.approx(1.0, abs=1e-5) and np.abs(stored - want).max() < 1e-5
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s", [f"mining_document_lexical_hnsw_{job.pk}"])
        definition = cursor.fetchone()[0]
    assert "sparsevec_ip_ops" in definition and f"job_id = {job.pk}" in definition
    mining.mining_job_prepare(job_id=job.pk)  # prepared again: nothing added twice
    assert MiningDocumentVector.objects.filter(job=job).count() == 8


def test_a_dense_lha_job_keeps_the_identity_it_had_before_hybrid_retrieval(owner) -> None:
    source, target = _corpora(owner, language="en")
    job, created = mining.mining_job_create(source_corpus=source, target_corpus=target, config={"theta_s": 0.6})
    assert created and job.retrieval == MiningJob.Retrieval.DENSE and job.lexical_idf is None
    assert "retrieval" not in job.config and "dense_weight" not in job.config and job.config["theta_d"] == 0.5
    legacy = {
        **asdict(LHAConfig(theta_s=0.6)),
        "encoder": settings.ENCODER_MODEL,
        "shard_documents": mining.SHARD_DOCUMENTS,
    }  # as stored before
    key = json.dumps({"method": "lha", "source": source.pk, "target": target.pk, "config": legacy}, sort_keys=True)
    assert job.config == legacy and job.config_hash == hashlib.sha256(key.encode()).hexdigest()
    again, created = mining.mining_job_create(source_corpus=source, target_corpus=target, config={"theta_s": 0.6, "retrieval": "dense"})
    assert again.pk == job.pk and not created
    hybrid, created = mining.mining_job_create(source_corpus=source, target_corpus=target, config={"theta_s": 0.6, "retrieval": "hybrid"})
    assert created and hybrid.retrieval == MiningJob.Retrieval.HYBRID and hybrid.config["theta_d"] == LHA_HYBRID_THETA_D


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"retrieval": "sparse"}, "unknown retrieval 'sparse'; LHA jobs search dense or hybrid"),
        ({"retrieval": "hybrid", "dense_weight": 1.5}, "dense_weight must be a number from 0 to 1, got 1.5"),
        ({"retrieval": "hybrid", "dense_weight": -0.1}, "dense_weight must be a number from 0 to 1, got -0.1"),
        ({"retrieval": "hybrid", "dense_weight": "half"}, "dense_weight must be a number from 0 to 1, got 'half'"),
        ({"retrieval": "dense", "dense_weight": 0.5}, "dense_weight is a setting of hybrid retrieval"),
        ({"retrieval": "hybrid", "theta_s": 1.5}, r"LHAConfig.theta_s must be a cosine in \[-1, 1\]"),
        ({"retrieval": "hybrid", "lexical_share": 0.5}, r"unknown LHA setting\(s\) \['lexical_share'\]"),
    ],
)
def test_bad_hybrid_lha_settings_are_refused_and_nothing_is_stored(owner, config, message) -> None:
    source, target = _corpora(owner)
    with pytest.raises(ValueError, match=message):
        mining.mining_job_create(source_corpus=source, target_corpus=target, method="lha", config=config)
    assert not MiningJob.objects.exists() and not MiningDocumentVector.objects.exists()


def test_the_job_page_says_an_lha_job_is_hybrid_and_its_scores_fused(german, run_worker, client, owner) -> None:
    job = _hybrid_job(german, run_worker)
    client.force_login(owner)
    html = client.get(reverse("alignment:mining_job", args=[job.pk])).content.decode()
    weight = LHA_HYBRID_DENSE_WEIGHT
    assert f"Retrieval: hybrid (character 3-gram TF-IDF + encoder cosine), {weight} × dense + {round(1 - weight, 3)} × lexical" in html
    assert f"encoder {settings.ENCODER_MODEL}" in html and "corpus language de" in html
    assert "(fused)</span></th>" in html and "(cosine)</span></th>" not in html


def test_the_lha_form_leaves_retrieval_and_thresholds_to_the_corpus_language_unless_chosen(german, client, owner) -> None:
    client.force_login(owner)
    url = reverse("alignment:mining_start", args=[german[0].pk])
    form = {"method": "lha", "target_corpus": german[1].pk, "retrieval": "", "k_documents": 5, "theta_d": "", "k_sentences": 5,
            "theta_s": "", "min_overlap": "", "max_length_ratio": 1.5, "language": "de"}  # fmt: skip
    assert client.post(url, form).status_code == 302
    job = MiningJob.objects.get()
    assert job.retrieval == "hybrid" and (job.config["theta_d"], job.config["theta_s"]) == (LHA_HYBRID_THETA_D, LHA_HYBRID_THETA_S)
    assert job.config["min_overlap"] is None  # an empty filter stays off
    assert client.post(url, {**form, "retrieval": "dense", "theta_s": 0.7}).status_code == 302
    dense = MiningJob.objects.exclude(pk=job.pk).get()
    assert dense.retrieval == "dense" and (dense.config["theta_d"], dense.config["theta_s"]) == (0.5, 0.7)
    assert "retrieval" not in dense.config
    refused = client.post(url, {**form, "retrieval": "sparse"})
    assert refused.status_code == 200 and "Select a valid choice" in refused.content.decode()
    assert MiningJob.objects.count() == 2
