"""Mining jobs in the app (LHA): sharded, resumable, cancellable, never duplicating pairs; the mined-pair browser."""

from __future__ import annotations

import pytest
from django.conf import settings

from alignment import services
from alignment.importing.readers import ImportOptions
from alignment.importing.service import corpus_import_files
from alignment.mining import lha_shard
from alignment.mining import service as mining
from alignment.mining.models import MinedPair, MiningJob, MiningShard
from alignment.models import Document
from alignment.services import corpus_get_or_create

COMPLEX = {
    "Tram": "The city council approved a new tram line on Tuesday.\nThe tram line will connect the harbour with the university.\nConstruction begins in spring and will last three years.\n",
    "Bees": "Honeybees visit thousands of flowers every day to collect nectar.\nThe bees turn the nectar into honey inside the hive.\nBeekeepers harvest the honey in late summer.\n",
    "Volcano": "The volcano on the northern island erupted again on Sunday morning.\nThick clouds of ash forced the airport to cancel many flights.\nNearby villages were evacuated before the lava flowed.\n",
    "Library": "The city library reopened after a renovation lasting two years.\nVisitors can now borrow electronic books with their library card.\nThe library is open until ten in the evening.\n",
}
SIMPLE = {
    "Tram": "The city council wants a new tram line.\nThe tram line will go from the harbour to the university.\nConstruction begins in spring.\n",
    "Bees": "Honeybees visit many flowers every day.\nThe bees make honey from nectar in the hive.\nBeekeepers take the honey in summer.\n",
    "Volcano": "The volcano on the island erupted on Sunday.\nThe ash forced the airport to cancel flights.\nVillages were evacuated before the lava came.\n",
    "Library": "The library opened again after two years.\nVisitors can borrow electronic books.\nThe library is open until ten.\n",
}


@pytest.fixture
def two_corpora(owner, run_worker):
    return embedded_news_corpora(owner, run_worker)


def embedded_news_corpora(owner, run_embedding_worker) -> list:
    """The complex texts in one corpus and the simple ones in another, pairing hidden, both embedded
    (``run_embedding_worker(["embedding"])`` runs the queued embedding jobs)."""
    corpora = []
    for name, texts in (("Complex news", COMPLEX), ("Simple news", SIMPLE)):
        corpus, _ = corpus_get_or_create(name=name, language="en", owner=owner)
        files = [(f"{title}-adv.txt", text.encode()) for title, text in texts.items()]
        assert not corpus_import_files(corpus=corpus, files=files, options=ImportOptions(format="presplit")).errors
        services.embedding_run_create(corpus=corpus, encoder_name=settings.ENCODER_MODEL)
        corpora.append(corpus)
    run_embedding_worker(["embedding"])
    return corpora


def _mine(source, target, run_worker, **config):
    job, created = mining.mining_job_create(source_corpus=source, target_corpus=target, config=config, shard_documents=2)
    run_worker(["mining"])
    job.refresh_from_db()
    return job, created


def test_lha_job_finds_the_hidden_document_pairing_and_aligned_sentences_across_shards(two_corpora, run_worker) -> None:
    source, target = two_corpora
    job, created = _mine(source, target, run_worker, k_documents=1, theta_d=0.3, k_sentences=1, theta_s=0.5)
    assert created and job.status == MiningJob.Status.SUCCEEDED, job.error
    assert job.shards_total == 2 and job.shards_done == 2 and job.documents_done == 4
    pairs = list(MinedPair.objects.filter(job=job).select_related("source_document", "target_document"))
    assert job.pairs_found == len(pairs) >= 8
    assert all(p.source_document.external_id == p.target_document.external_id for p in pairs)  # the true pairing
    first = next(p for p in pairs if p.source_document.external_id == "Tram" and p.source_sentences == [1])
    assert first.target_sentences == [1] and first.overlap >= 0.4 and first.length_ratio <= 1.5
    stats = mining.mining_job_statistics(job)
    assert stats["pairs"] == len(pairs) and stats["source_tokens"] > stats["target_tokens"]


def test_the_same_settings_give_the_same_job_and_no_duplicate_pairs(two_corpora, run_worker) -> None:
    source, target = two_corpora
    job, _ = _mine(source, target, run_worker, k_documents=1, theta_d=0.3, theta_s=0.5)
    count = MinedPair.objects.count()
    again, created = _mine(source, target, run_worker, k_documents=1, theta_d=0.3, theta_s=0.5)
    assert again.pk == job.pk and not created
    MiningShard.objects.filter(job=job).update(position=0, status=MiningShard.Status.QUEUED)  # force a re-run of every shard
    MiningJob.objects.filter(pk=job.pk).update(status=MiningJob.Status.RUNNING, shards_done=0)
    for shard in MiningShard.objects.filter(job=job):
        mining.mining_shard_execute(shard_id=shard.pk)
    assert MinedPair.objects.count() == count
    other, created = _mine(source, target, run_worker, k_documents=1, theta_d=0.3, theta_s=0.6)
    assert created and other.pk != job.pk


def test_a_crashed_shard_resumes_where_it_stopped(two_corpora, run_worker, monkeypatch) -> None:
    source, target = two_corpora
    monkeypatch.setattr(lha_shard, "BATCH_DOCUMENTS", 1)  # a batch of one document
    real = lha_shard.mine_batch
    calls = []

    def crash_on_third(job, batch, config, encoder, read=None):
        calls.append(batch)
        if len(calls) == 3:
            raise MemoryError("worker ran out of memory")
        return real(job, batch, config, encoder, read)

    monkeypatch.setattr(lha_shard, "mine_batch", crash_on_third)
    job, _ = _mine(source, target, run_worker, k_documents=1, theta_d=0.3, theta_s=0.5)
    assert job.status == MiningJob.Status.FAILED and "out of memory" in job.error
    done_before = job.documents_done
    monkeypatch.setattr(lha_shard, "mine_batch", real)
    resumed, created = _mine(source, target, run_worker, k_documents=1, theta_d=0.3, theta_s=0.5)
    assert resumed.pk == job.pk and not created and resumed.status == MiningJob.Status.SUCCEEDED, resumed.error
    assert done_before == 2 and resumed.documents_done == 4  # the crashed document was mined once, after the resume
    fresh_pairs = set(MinedPair.objects.filter(job=job).values_list("source_document__external_id", "source_key", "target_key"))
    assert len(fresh_pairs) == resumed.pairs_found


def test_cancel_stops_between_batches_and_keeps_the_pairs_found(two_corpora, run_worker, monkeypatch) -> None:
    source, target = two_corpora
    job, _ = mining.mining_job_create(source_corpus=source, target_corpus=target, config={"theta_d": 0.3}, shard_documents=4)
    mining.mining_job_prepare(job_id=job.pk)
    shard = MiningShard.objects.get(job=job)
    monkeypatch.setattr(lha_shard, "BATCH_DOCUMENTS", 1)  # a batch of one document
    original = lha_shard.mine_batch

    def cancel_after_first(job_, batch, config, encoder, read=None):
        MiningJob.objects.filter(pk=job.pk).update(cancel_requested=True)
        return original(job_, batch, config, encoder, read)

    monkeypatch.setattr(lha_shard, "mine_batch", cancel_after_first)
    mining.mining_shard_execute(shard_id=shard.pk)
    job.refresh_from_db()
    shard.refresh_from_db()
    assert job.status == MiningJob.Status.CANCELLED and job.documents_done == 1 and shard.position == 1
    assert MinedPair.objects.filter(job=job).exists()  # the first batch's pairs were stored with its position


def test_missing_sentence_vectors_are_refused_at_start_and_fail_the_prepare_with_the_corpus_named(owner, db) -> None:
    source, _ = corpus_get_or_create(name="No vectors", language="en", owner=owner)
    assert not corpus_import_files(
        corpus=source, files=[("A-adv.txt", b"One sentence.\n")], options=ImportOptions(format="presplit")
    ).errors
    services.encoder_get_or_create(name=settings.ENCODER_MODEL, dimensions=384)
    with pytest.raises(ValueError, match=r"corpus 'No vectors': 1 of 1 sentence has no vector .* embedding job"):
        mining.corpora_ready_for_mining(corpora=[source], encoder_name=settings.ENCODER_MODEL)
    job, _ = mining.mining_job_create(source_corpus=source, target_corpus=source, config={})  # a caller that did not check
    job = mining.mining_job_prepare(job_id=job.pk)
    assert job.status == MiningJob.Status.FAILED
    assert "corpus 'No vectors': 1 sentence has no vector" in job.error and "embedding job" in job.error


def test_mining_from_or_into_an_empty_corpus_is_refused_on_the_form_with_the_corpus_named(owner, client, db) -> None:
    filled, _ = corpus_get_or_create(name="Filled", language="en", owner=owner)
    assert not corpus_import_files(
        corpus=filled, files=[("A-adv.txt", b"One sentence.\n")], options=ImportOptions(format="presplit")
    ).errors
    empty, _ = corpus_get_or_create(name="Empty", language="en", owner=owner)
    client.force_login(owner)
    lha = {"method": "lha", "k_documents": 5, "theta_d": 0.5, "k_sentences": 5, "theta_s": 0.6, "language": "en"}
    from_empty = client.post(f"/corpora/{empty.pk}/mine/", {**lha, "target_corpus": filled.pk})
    assert from_empty.status_code == 200
    assert "corpus &#x27;Empty&#x27; has no documents: import documents into it before mining" in from_empty.content.decode()
    into_empty = client.post(f"/corpora/{filled.pk}/mine/", {**lha, "target_corpus": empty.pk})
    assert "corpus &#x27;Empty&#x27; has no documents" in into_empty.content.decode()  # emptiness first, then vectors
    assert into_empty.context["form"].errors["target_corpus"] == ["corpus 'Empty' has no documents: import documents into it before mining"]
    assert from_empty.context["form"].errors["__all__"][0].startswith("corpus 'Empty'")  # the source is no form field
    both_filled = client.post(f"/corpora/{filled.pk}/mine/", {**lha, "target_corpus": filled_too(owner).pk})
    assert "corpus &#x27;Filled&#x27;: 1 of 1 sentence has no vector" in both_filled.content.decode()
    services.embedding_run_create(corpus=filled, encoder_name=settings.ENCODER_MODEL)  # queued, not run: still no vectors
    muss = client.post(f"/corpora/{empty.pk}/mine/", {"method": "muss", "k": 6, "max_distance": 0.3, "min_margin": 1.04, "language": "en"})
    assert "corpus &#x27;Empty&#x27; has no documents" in muss.content.decode()
    assert not MiningJob.objects.exists()
    job, _ = mining.mining_job_create(source_corpus=filled, target_corpus=empty, config={})  # a caller that did not check
    job = mining.mining_job_prepare(job_id=job.pk)
    assert job.status == MiningJob.Status.FAILED and job.error == "corpus 'Empty' has no documents: import documents into it before mining"


def filled_too(owner):
    corpus, _ = corpus_get_or_create(name="Filled too", language="en", owner=owner)
    assert not corpus_import_files(corpus=corpus, files=[("B-adv.txt", b"Another one.\n")], options=ImportOptions(format="presplit")).errors
    return corpus


def test_into_an_embedded_corpus_with_nothing_similar_the_card_says_why_there_are_no_pairs(two_corpora, run_worker, client, owner) -> None:
    source, target = two_corpora
    job, _ = _mine(source, target, run_worker, k_documents=1, theta_d=0.99, theta_s=0.99)
    assert job.status == MiningJob.Status.SUCCEEDED and job.pairs_found == 0
    client.force_login(owner)
    page = client.get(f"/mining/{job.pk}/").content.decode()
    assert 'id="no-pairs-reason"' in page and "θd 0.99" in page and "No pairs: the job found none" in page


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"k_documents": 5, "window": 3}, "unknown LHA setting"),
        ({"theta_s": 2.0}, "theta_s"),
        ({"global_variant": True}, "CLI"),
        ({"rerank": "rwmd"}, "CLI only"),
    ],
)
def test_bad_settings_are_refused_before_a_job_exists(owner, db, config, message) -> None:
    corpus, _ = corpus_get_or_create(name="C", language="en", owner=owner)
    with pytest.raises(ValueError, match=message):
        mining.mining_job_create(source_corpus=corpus, target_corpus=corpus, config=config)
    assert not MiningJob.objects.exists()


def test_browser_filters_sorts_searches_and_refuses_bad_parameters(two_corpora, run_worker, client, owner, outsider) -> None:
    source, target = two_corpora
    job, _ = _mine(source, target, run_worker, k_documents=1, theta_d=0.3, theta_s=0.5)
    client.force_login(owner)
    url = f"/mining/{job.pk}/"
    page = client.get(url)
    assert page.status_code == 200 and f"{job.pairs_found} pairs match." in page.content.decode()
    honey = client.get(url, {"q": "honey"}).content.decode()
    assert "Beekeepers" in honey and "tram" not in honey.lower().split("mined pairs")[1]
    high = client.get(url, {"score_min": "0.8", "sort": "length_ratio"}).context["page"]
    assert all(p.score >= 0.8 for p in high) and [p.length_ratio for p in high] == sorted(p.length_ratio for p in high)
    assert all(p.shape == "1:1" for p in client.get(url, {"shape": "1:1"}).context["page"])
    bad = client.get(url, {"score_min": "high"})
    assert bad.status_code == 400 and b"score_min" in bad.content
    assert client.get(url, {"sort": "nonsense"}).status_code == 400
    client.force_login(outsider)
    assert client.get(url).status_code == 404


def test_the_last_poll_of_the_job_card_also_swaps_in_the_pairs_table_filtered_as_the_page_is(
    two_corpora, run_worker, client, owner
) -> None:
    source, target = two_corpora
    job, _ = _mine(source, target, run_worker, k_documents=1, theta_d=0.3, theta_s=0.5)
    client.force_login(owner)
    poll = f"/mining/{job.pk}/progress/"
    page_url = f"http://testserver/mining/{job.pk}/?q=honey"
    html = client.get(poll, HTTP_HX_REQUEST="true", HTTP_HX_CURRENT_URL=page_url).content.decode()
    assert 'id="pairs" hx-swap-oob="true"' in html and "Beekeepers" in html and "tram" not in html.split('id="pairs"')[1].lower()
    honey = MinedPair.objects.filter(job=job, source_text__icontains="honey") | MinedPair.objects.filter(
        job=job, target_text__icontains="honey"
    )
    assert f"{honey.count()} pair{'' if honey.count() == 1 else 's'} match{'es' if honey.count() == 1 else ''}." in html
    MiningJob.objects.filter(pk=job.pk).update(status=MiningJob.Status.RUNNING)  # while it runs, the card alone
    assert 'id="pairs"' not in client.get(poll, HTTP_HX_REQUEST="true", HTTP_HX_CURRENT_URL=page_url).content.decode()


def test_a_job_drops_near_copies_when_asked_as_the_form_does_by_default(two_corpora, run_worker, client, owner) -> None:
    source, target = two_corpora
    found = {
        name: {(p.source_text, p.target_text) for p in MinedPair.objects.filter(job=job)}
        for name, job in (
            ("kept", _mine(source, target, run_worker, k_documents=1, theta_d=0.3, k_sentences=1, theta_s=0.5)[0]),
            ("dropped", _mine(source, target, run_worker, k_documents=1, theta_d=0.3, k_sentences=1, theta_s=0.5, min_levenshtein=0.2)[0]),
        )
    }
    copy = ("The tram line will connect the harbour with the university.", "The tram line will go from the harbour to the university.")
    assert copy in found["kept"] and found["dropped"] == found["kept"] - {copy}  # 0.15 apart: a near-copy at 0.2
    client.force_login(owner)
    form = client.get(f"/corpora/{source.pk}/mine/").content.decode()
    assert 'name="min_levenshtein"' in form and 'value="0.2"' in form


def test_start_page_creates_a_job_from_the_form(two_corpora, client, owner) -> None:
    source, target = two_corpora
    client.force_login(owner)
    response = client.post(f"/corpora/{source.pk}/mine/", {
        "target_corpus": target.pk, "k_documents": 2, "theta_d": 0.4, "k_sentences": 1, "theta_s": 0.6,
        "min_overlap": "", "max_length_ratio": 1.5, "language": "en",
    })  # fmt: skip
    job = MiningJob.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/mining/{job.pk}/"
    assert job.config["min_overlap"] is None and job.config["k_documents"] == 2
    assert Document.objects.filter(corpus=target).count() == 4


def test_send_a_sample_or_a_selection_to_a_new_annotation_project_whose_suggestions_are_the_mined_links(
    two_corpora, run_worker, client, owner
) -> None:
    from alignment.models import CandidateAlignment, DocumentPair
    from alignment.services import document_pairs_sync
    from annotation.models import AnnotationProject

    source, target = two_corpora
    job, _ = _mine(source, target, run_worker, k_documents=1, theta_d=0.3, theta_s=0.5)
    client.force_login(owner)
    response = client.post(f"/annotate/mining/{job.pk}/send/", {"name": "Mined sample", "sample": 3, "seed": 1, "filters": "shape=1:1"})
    project = AnnotationProject.objects.get(name="Mined sample")
    assert response.status_code == 302 and response["Location"] == f"/annotate/projects/{project.pk}/"
    candidates = CandidateAlignment.objects.filter(run=project.suggestion_run)
    assert candidates.count() == 3 and set(candidates.values_list("label", flat=True)) == {"aligned"}
    pairs = DocumentPair.objects.filter(annotation_projects=project)
    assert all(p.origin == "mined" and p.corpus_id == source.pk and p.simple_document.corpus_id == target.pk for p in pairs)
    document_pairs_sync(corpus=source)  # the level pairing leaves mined pairs alone
    assert DocumentPair.objects.filter(annotation_projects=project).count() == pairs.count()
    review = client.get(f"/annotate/projects/{project.pk}/pairs/{pairs.first().pk}/review/")
    assert review.status_code == 200  # the manager's review page opens a pair that joins two corpora
    chosen = list(job.pairs.values_list("pk", flat=True)[:2])
    client.post(f"/annotate/mining/{job.pk}/send/", {"name": "Mined picks", "selected": chosen, "filters": ""})
    picked = AnnotationProject.objects.get(name="Mined picks")
    expected = sum(p.source_count * p.target_count for p in job.pairs.filter(pk__in=chosen))
    assert CandidateAlignment.objects.filter(run=picked.suggestion_run).count() == expected
    again = client.post(f"/annotate/mining/{job.pk}/send/", {"name": "Mined picks", "sample": 2, "filters": ""}, follow=True)
    assert "exists already" in again.content.decode() and AnnotationProject.objects.count() == 2


PARAPHRASES = {
    "Budget": "The committee approved the annual budget on Monday.\nPenguins live in the southern hemisphere.\n",
    "Council": "On Monday the annual budget was approved by the committee.\nThe harbour will get a new ferry next year.\n",
    "Weather": "Heavy rain flooded several streets in the old town.\nA new ferry will serve the harbour from next year.\n",
}


def test_muss_job_mines_paraphrases_of_different_documents_in_sharded_phases(owner, run_worker, settings) -> None:
    from models_ml.mining.muss import MussConfig, mine_muss
    from models_ml.mining.types import MiningDocument
    from models_ml.similarity.encoders import load_sentence_encoder

    corpus, _ = corpus_get_or_create(name="Paraphrases", language="en", owner=owner)
    files = [(f"{title}-adv.txt", text.encode()) for title, text in PARAPHRASES.items()]
    assert not corpus_import_files(corpus=corpus, files=files, options=ImportOptions(format="presplit")).errors
    settings.MINING_ENCODE_SHARD_SEQUENCES = 4  # encoded in shards too
    job, created = mining.mining_job_create(source_corpus=corpus, method="muss", config={"k": 4}, shard_sequences=4)
    run_worker(["mining"])
    job.refresh_from_db()
    assert created and job.status == MiningJob.Status.SUCCEEDED, job.error
    encoded, searched = (MiningShard.objects.filter(job=job, phase=phase).count() for phase in ("encode", "neighbours"))
    assert job.target_corpus_id == corpus.pk and encoded > 1 and searched > 2 and job.shards_total == encoded + 2 * searched
    found = {(p.source_text, p.target_text) for p in MinedPair.objects.filter(job=job)}
    assert ("The committee approved the annual budget on Monday.", "On Monday the annual budget was approved by the committee.") in found
    assert all(p.source_document_id != p.target_document_id for p in MinedPair.objects.filter(job=job))
    pair = MinedPair.objects.filter(job=job).first()
    assert set(pair.features) >= {"cosine", "margin", "char_ratio", "levenshtein_replace_only", "word_rank_ratio", "dependency_depth_ratio"}
    # The same sequences mined without a database agree with the app (exact vs HNSW search on a tiny collection).
    encoder = load_sentence_encoder(device="cpu")
    documents = [
        MiningDocument(str(d.pk), list(d.sentences.order_by("index").values_list("text", flat=True)))
        for d in Document.objects.filter(corpus=corpus).order_by("pk")
    ]
    offline = {
        (p.source_text, p.target_text) for p in mine_muss(documents, encode=lambda t: encoder.encode(list(t)), config=MussConfig(k=4))
    }
    assert offline == found
    again, created = mining.mining_job_create(source_corpus=corpus, method="muss", config={"k": 4}, shard_sequences=4)
    assert again.pk == job.pk and not created
    from alignment.mining import browse

    ratios = [p.features["char_ratio"] for p in MinedPair.objects.filter(job=job)]
    cut = sorted(ratios)[len(ratios) // 2]
    kept = browse.mined_pairs(job, browse.filters_from({"char_ratio_max": str(cut)}))
    assert kept.count() == sum(r <= cut for r in ratios) and all(p.features["char_ratio"] <= cut for p in kept)


def test_bad_muss_settings_are_refused(owner, db) -> None:
    corpus, _ = corpus_get_or_create(name="C", language="en", owner=owner)
    with pytest.raises(ValueError, match="unknown MUSS setting"):
        mining.mining_job_create(source_corpus=corpus, method="muss", config={"theta_s": 0.5})
    with pytest.raises(ValueError, match="unknown mining method"):
        mining.mining_job_create(source_corpus=corpus, method="laser")


def test_start_page_creates_a_muss_job(owner, client, db) -> None:
    corpus, _ = corpus_get_or_create(name="Solo", language="en", owner=owner)
    assert not corpus_import_files(
        corpus=corpus, files=[("A-adv.txt", b"One sentence.\n")], options=ImportOptions(format="presplit")
    ).errors
    client.force_login(owner)
    assert b"MUSS: paraphrases within Solo" in client.get(f"/corpora/{corpus.pk}/mine/").content
    response = client.post(
        f"/corpora/{corpus.pk}/mine/", {"method": "muss", "k": 6, "max_distance": 0.3, "min_margin": 1.04, "language": "en"}
    )
    job = MiningJob.objects.get()
    assert response.status_code == 302 and job.method == "muss" and job.config["k"] == 6 and job.target_corpus_id == corpus.pk
    bad = client.post(f"/corpora/{corpus.pk}/mine/", {"method": "muss", "k": 0, "max_distance": 0.3, "min_margin": 1.04, "language": "en"})
    assert bad.status_code == 200 and MiningJob.objects.count() == 1


def test_muss_prepare_resumes_after_a_crash_without_reencoding_stored_sequences(owner, db, monkeypatch) -> None:
    import numpy as np

    from alignment.mining import muss_service
    from alignment.mining.models import MiningSequence

    monkeypatch.setattr(muss_service, "BATCH", 1)  # a commit per encode_batch (2) sequences

    corpus, _ = corpus_get_or_create(name="Resume", language="en", owner=owner)
    files = [(f"{title}-adv.txt", text.encode()) for title, text in PARAPHRASES.items()]
    assert not corpus_import_files(corpus=corpus, files=files, options=ImportOptions(format="presplit")).errors
    job, _ = mining.mining_job_create(source_corpus=corpus, method="muss", config={"encode_batch": 2})
    encoded: list[str] = []

    def encode(texts):
        if len(encoded) >= 4:
            raise MemoryError("encoder died")
        encoded.extend(texts)
        return np.tile(np.eye(1, 8, dtype=np.float32), (len(texts), 1))

    with pytest.raises(MemoryError):
        mining.mining_job_prepare(job_id=job.pk, encode=encode)
    assert MiningSequence.objects.filter(job=job).count() == 4
    job.refresh_from_db()
    assert job.status == MiningJob.Status.FAILED and "encoder died" in job.error
    first_four = list(encoded)
    encoded.clear()
    again, created = mining.mining_job_create(source_corpus=corpus, method="muss", config={"encode_batch": 2})
    assert again.pk == job.pk and not created and again.status == MiningJob.Status.QUEUED

    def encode_rest(texts):
        encoded.extend(texts)
        return np.tile(np.eye(1, 8, dtype=np.float32), (len(texts), 1))

    mining.mining_job_prepare(job_id=job.pk, encode=encode_rest)
    stored = list(MiningSequence.objects.filter(job=job).order_by("index").values_list("text", flat=True))
    assert stored[:4] == first_four and stored[4:] == encoded and len(set(stored)) == len(stored)
