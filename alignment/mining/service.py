"""Mining jobs in the app: create (deduplicated by settings), prepare (document vectors, shards), run shards.

LHA here follows ``models_ml.mining.lha`` with the database doing the nearest-neighbour search:
document vectors (mean of the stored sentence vectors, renormalised) live in
DocumentEmbedding with a partial HNSW index per encoder, and each source document's K
nearest target documents come from it; the sentence step runs on the two documents' stored
vectors. A shard covers a range of source documents (by position in id order) and commits
after each batch of them with its pairs and its new position (alignment/mining/lha_shard.py), so it resumes after
a crash, stops between batches when cancelled, and never stores a pair twice (unique per job).
Memory per shard: one batch's documents and their targets' vectors (``lha_shard.BATCH_SENTENCES``). A hybrid LHA job adds each document's
character 3-gram TF-IDF and scores documents and sentences by the fused score (alignment/mining/lha_service.py).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable

import numpy as np
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Count, F
from django.template.defaultfilters import pluralize

from alignment.errors import ServiceError
from alignment.jobs.database import database_lost
from alignment.jobs.enqueue import enqueue_on_commit
from alignment.jobs.models import Pickup, error_text
from alignment.mining.cancelling import CancelCheck, PrepareCancelled
from alignment.mining.document_vectors import corpora_document_vectors, document_index_ensure, document_index_make_room
from alignment.mining.index_store import index_forget
from alignment.mining.lha_search import document_search
from alignment.mining.lha_service import (
    lexical_documents_ensure,
    lha_config,
    lha_retrieval_for,
    lha_stored_config,
)
from alignment.mining.lha_shard import lha_shard_run
from alignment.mining.models import DocumentEmbedding, MinedPair, MiningJob, MiningNeighbours, MiningShard
from alignment.mining.muss_encoding import encode_shard_run
from alignment.mining.muss_service import (
    SHARD_SEQUENCES,
    muss_prepare,
    muss_shard_run,
    muss_stored_config,
    pairs_shards_create,
)
from alignment.mining.statistics import statistics_refresh
from alignment.mining.worker_index import worker_indexes_release
from alignment.models import Corpus, Document, Encoder, Sentence
from models_ml.similarity.multilingual import encoder_for_language

SHARD_DOCUMENTS = 1000  # about a second of work a shard (50 was chosen when a shard mined 20 documents/s; at 500/s a
# shard's own bookkeeping, its pickup, counts and finish, became a fifth of a 3,000-document job; at 1,100/s each
# shard's first read and last store, which nothing overlaps, were 7 % of its time at 500: bench/lha_scale.py)


def mining_job_create(
    *, source_corpus: Corpus, target_corpus: Corpus | None = None, config: dict | None = None, method: str = "lha",
    created_by: AbstractBaseUser | None = None, shard_documents: int = SHARD_DOCUMENTS, shard_sequences: int = SHARD_SEQUENCES,
) -> tuple[MiningJob, bool]:  # fmt: skip
    """Queue a job (LHA: source → target corpus; MUSS: within the source corpus); ValueError names a bad setting.

    The same corpora, method and settings return the existing job (resumed when it had failed or was cancelled).
    """
    encoder = (config or {}).get("encoder", settings.ENCODER_MODEL)
    if method == "muss":
        target_corpus = source_corpus
        retrieval = (config or {}).get("retrieval") or MUSS_DEFAULT_RETRIEVAL
        encoder = (config or {}).get("encoder") or mining_encoder_for(source_corpus.language)
        known = source_corpus.language.split("-")[0].lower()  # the ACCESS attributes' word ranks in the corpus's language
        config = {"language": known, **(config or {})} if known and known != "und" else config
        stored = muss_stored_config(config, encoder, shard_sequences, retrieval)
    elif method == "lha":
        if target_corpus is None:
            raise ServiceError("LHA needs a target corpus", field="target_corpus")
        retrieval = (config or {}).get("retrieval") or lha_retrieval_for(source_corpus.language)
        stored = lha_stored_config(config, encoder, shard_documents, retrieval)
    else:
        raise ValueError(f"unknown mining method {method!r}; methods: lha, muss")
    key = json.dumps({"method": method, "source": source_corpus.pk, "target": target_corpus.pk, "config": stored}, sort_keys=True)
    digest = hashlib.sha256(key.encode()).hexdigest()
    with transaction.atomic():
        job, created = MiningJob.objects.get_or_create(
            config_hash=digest,
            defaults={
                "method": method,
                "retrieval": stored.get("retrieval", MiningJob.Retrieval.DENSE),
                "source_corpus": source_corpus,
                "target_corpus": target_corpus,
                "config": stored,
                "created_by": created_by,
            },
        )
        if not created and not job.mark_queued(cancel_requested=False):  # failed or cancelled: resumed; else the same job
            return job, False
        enqueue_on_commit(PREPARE_TASK, job, options={"queue": settings.MINING_PREPARE_QUEUE}, job_id=job.pk)
    job.refresh_from_db()
    return job, created


# MUSS searches dense by default in every language: on German DEplain-web its lexical and hybrid views found fewer
# gold-like pairs than dense (bench/muss_gold.py, docs/mining.md): their nearest neighbours are near-copies, which
# MUSS drops as near-identical, so fewer paraphrases reach the margin. Hybrid is there when asked for.
MUSS_DEFAULT_RETRIEVAL = "dense"


def mining_encoder_for(language: str) -> str:
    """A new MUSS job's default encoder: ENCODER_MODEL for English, else the multilingual one that covers the language."""
    return encoder_for_language(language, settings.ENCODER_MODEL)


def corpora_ready_for_mining(*, corpora: list[Corpus], encoder_name: str | None, field_by_corpus: dict[int, str] | None = None) -> None:
    """ServiceError naming the corpus when one has nothing to mine: no documents or no sentences (checked for all
    corpora first), then, with ``encoder_name`` (LHA reads stored vectors), sentences without a vector from it.
    ``field_by_corpus``: corpus id -> the form field that chose it (the error's ``field``).
    The start form calls it before :func:`mining_job_create`, so a job never "succeeds" with 0 pairs because a
    corpus was empty or not embedded yet; prepare checks again (documents here, vectors later) for other callers."""
    unique = list(dict.fromkeys(corpora))
    field_of = field_by_corpus or {}
    for corpus in unique:
        if not Document.objects.filter(corpus=corpus).exists():
            raise ServiceError(
                f"corpus {corpus.name!r} has no documents: import documents into it before mining", field=field_of.get(corpus.pk)
            )
        if not Sentence.objects.filter(document__corpus=corpus).exists():
            raise ServiceError(f"corpus {corpus.name!r} has documents but no sentences: nothing to mine", field=field_of.get(corpus.pk))
    for corpus in unique if encoder_name else []:
        sentences = Sentence.objects.filter(document__corpus=corpus)
        missing = sentences.exclude(embeddings__encoder__name=encoder_name).count()
        if missing:
            raise ServiceError(
                f"corpus {corpus.name!r}: {missing} of {_sentences(sentences.count())} {'has' if missing == 1 else 'have'} no vector "
                f"from {encoder_name} yet; "
                "run its embedding job (corpus page → Embed missing sentences) and wait for it to finish, then start mining",
                field=field_of.get(corpus.pk),
            )


def _sentences(count: int) -> str:
    return f"{count} sentence{pluralize(count)}"


PREPARE_TASK = "alignment.mining_prepare"
SHARD_TASK = "alignment.mining_shard"


def _enqueue_all(shard_ids: list[int]) -> None:
    """Queue the shards' tasks: encode shards on MINING_PREPARE_QUEUE (they run the encoder), the others on "mining"."""
    for shard in MiningShard.objects.filter(pk__in=shard_ids):
        options = {"queue": settings.MINING_PREPARE_QUEUE} if shard.phase == MiningShard.Phase.ENCODE else None
        enqueue_on_commit(SHARD_TASK, shard, options=options, shard_id=shard.pk)


def mining_job_cancel(*, job: MiningJob) -> MiningJob:
    """Shards stop after the document in flight; pairs found so far are kept."""
    MiningJob.objects.filter(pk=job.pk, status__in=[MiningJob.Status.QUEUED, MiningJob.Status.RUNNING]).update(cancel_requested=True)
    job.refresh_from_db()
    return job


def _fail(job_id: int, error: str) -> None:
    MiningJob(pk=job_id).mark_failed(error)
    worker_indexes_release(job_id)


def _shard_ranges(job: MiningJob, size: int) -> list[tuple[int, int, int, int]]:
    """(start, end, first document id, last document id) of each LHA shard of ``size`` source documents in id order,
    from one streamed read of the ids (the boundaries kept, not the ids)."""
    ranges: list[tuple[int, int, int, int]] = []
    ids = Document.objects.filter(corpus=job.source_corpus).order_by("pk").values_list("pk", flat=True)
    count, first, last = 0, 0, 0
    for position, document_id in enumerate(ids.iterator(chunk_size=10_000)):
        count = position + 1
        if position % size == 0:
            first = document_id
        last = document_id
        if count % size == 0:
            ranges.append((count - size, count, first, last))
    if count % size:
        ranges.append((count - count % size, count, first, last))
    return ranges


def _shard_document_ids(job: MiningJob, shard: MiningShard) -> list[int]:
    """The shard's source documents in id order: those between its first and last document id (a range read, however
    far into the corpus the shard lies); a shard made before it kept its ids is read by position (``OFFSET``)."""
    documents = Document.objects.filter(corpus=job.source_corpus).order_by("pk").values_list("pk", flat=True)
    if shard.document_first is not None and shard.document_last is not None:
        return list(documents.filter(pk__gte=shard.document_first, pk__lte=shard.document_last))
    return list(documents[shard.start : shard.end])


def mining_job_prepare(*, job_id: int, encode: Callable[[list[str]], np.ndarray] | None = None) -> MiningJob:
    """LHA: document vectors of both corpora, then one shard per ``shard_documents`` source documents.
    MUSS: sequences and their vectors (``encode``), then the neighbours shards. Idempotent: found "running"
    (its worker died, or shards are running) it resumes, or fails after JOB_MAX_ATTEMPTS (Job.pickup). A cancel stops
    it between batches (``alignment.mining.cancelling``); what it stored stays for the job's resumption."""
    job = MiningJob.objects.select_related("source_corpus", "target_corpus").get(pk=job_id)
    if job.pickup() in (Pickup.SKIP, Pickup.GAVE_UP):
        return job
    try:
        corpora_ready_for_mining(corpora=[job.source_corpus, job.target_corpus], encoder_name=None)
        if job.method == MiningJob.Method.MUSS and encode is None:
            raise ValueError("MUSS needs an encoder to embed its sequences")
        pending = muss_prepare(job, encode) if job.method == MiningJob.Method.MUSS else _lha_prepare(job)
    except PrepareCancelled:
        job.mark_cancelled()
        worker_indexes_release(job_id)
        return MiningJob.objects.get(pk=job_id)
    except ValueError as error:
        _fail(job_id, str(error))
        return MiningJob.objects.get(pk=job_id)
    except Exception as exc:  # a crash: the job says so; creating it again resumes where it stopped
        _fail(job_id, f"prepare: {type(exc).__name__}: {exc}")
        raise
    _enqueue_all(pending)
    if not pending:
        _finish(job_id)
    return MiningJob.objects.get(pk=job_id)


def _lha_prepare(job: MiningJob) -> list[int]:
    """Both corpora's document vectors (and a hybrid job's lexical ones), then the shards; returns those still to run."""
    check = CancelCheck(job)
    check()
    encoder = Encoder.objects.filter(name=job.config["encoder"]).first()
    if encoder is None:
        raise ValueError(f"no vectors from encoder {job.config['encoder']!r}: run the embedding job of both corpora first")
    corpora = list(dict.fromkeys([job.source_corpus, job.target_corpus]))
    new = Document.objects.filter(corpus__in=corpora).exclude(embeddings__encoder=encoder).exists()
    if new:  # a large share of new document vectors: into no index, which is built again over them all below
        document_index_make_room(corpora, encoder, check)
    # corpora mined for the first time with this encoder are most likely just loaded and embedded: fresh statistics
    corpora_document_vectors(corpora, encoder, check, refresh=new)
    search = document_search(job)
    if search["backend"] == "pgvector":  # pgvector's document index; faiss builds its own in each worker
        document_index_ensure(encoder, check)
    MiningJob.objects.filter(pk=job.pk).update(search_index=search)
    if new:
        statistics_refresh([Document, DocumentEmbedding])
    if job.retrieval == MiningJob.Retrieval.HYBRID:
        lexical_documents_ensure(job, check)
    ranges = _shard_ranges(job, int(job.config["shard_documents"]))
    total = ranges[-1][1] if ranges else 0
    with transaction.atomic():
        for index, (start, end, first, last) in enumerate(ranges):
            MiningShard.objects.get_or_create(
                job=job, index=index,
                defaults={"start": start, "end": end, "position": start, "document_first": first, "document_last": last},
            )  # fmt: skip
        shards = MiningShard.objects.filter(job=job)
        MiningJob.objects.filter(pk=job.pk).update(
            shards_total=shards.count(), documents_total=total, shards_done=shards.filter(status=MiningShard.Status.SUCCEEDED).count()
        )
        return list(shards.exclude(status=MiningShard.Status.SUCCEEDED).values_list("pk", flat=True))


def mining_shard_execute(*, shard_id: int, encode: Callable[[list[str]], np.ndarray] | None = None) -> MiningShard:
    """Mine the shard's remaining source documents (or sequences), committing after each one (batch); a MUSS encode
    shard encodes its sequences with ``encode``.

    Found "running" (its worker died) it resumes from its position; after JOB_MAX_ATTEMPTS it fails, and so does the job.
    """
    shard = MiningShard.objects.select_related("job", "job__source_corpus", "job__target_corpus").get(pk=shard_id)
    job = shard.job
    if job.status not in (MiningJob.Status.QUEUED, MiningJob.Status.RUNNING):
        return shard
    shard.mark_queued()  # a shard that failed before its job was queued again is retried
    pickup = shard.pickup()
    if pickup is Pickup.SKIP:
        return shard
    if pickup is Pickup.GAVE_UP:
        _fail(job.pk, f"shard {shard.index}: {shard.error}")
        return shard
    if job.method == MiningJob.Method.MUSS:
        return _muss_shard_execute(shard, encode)
    config = lha_config(job.config)
    encoder = Encoder.objects.get(name=job.config["encoder"])
    ids = _shard_document_ids(job, shard)
    try:
        if not lha_shard_run(job, shard, ids, config, encoder, lambda: MiningJob.objects.filter(pk=job.pk, cancel_requested=True).exists()):
            return _cancel(job, shard)
    except PrepareCancelled:  # during the worker's build of the job's document index
        return _cancel(job, shard)
    except Exception as exc:
        if not database_lost(exc):  # a lost database leaves the shard running: the task's retry resumes it
            shard.mark_failed(error_text(exc))
            _fail(job.pk, f"shard {shard.index}: {error_text(exc)}")
        raise
    with transaction.atomic():
        if shard.mark_succeeded(pairs_found=_count(job, shard, ids)):
            MiningJob.objects.filter(pk=job.pk).update(shards_done=F("shards_done") + 1)
    _finish(job.pk)
    return MiningShard.objects.get(pk=shard_id)


def _cancel(job: MiningJob, shard: MiningShard) -> MiningShard:
    MiningShard.objects.filter(pk=shard.pk).update(status=MiningShard.Status.QUEUED)  # resumable when the job is queued again
    job.mark_cancelled()
    worker_indexes_release(job.pk)
    return MiningShard.objects.get(pk=shard.pk)


def _muss_shard_execute(shard: MiningShard, encode: Callable[[list[str]], np.ndarray] | None) -> MiningShard:
    job = shard.job

    def cancelled() -> bool:
        return MiningJob.objects.filter(pk=job.pk, cancel_requested=True).exists()

    try:
        if shard.phase != MiningShard.Phase.ENCODE:
            finished = muss_shard_run(shard, cancelled)
        elif encode is None:
            raise ValueError("a MUSS encode shard needs an encoder to embed its sequences")
        else:
            finished = encode_shard_run(shard, encode, cancelled)
    except Exception as exc:
        if not database_lost(exc):  # a lost database leaves the shard running: the task's retry resumes it
            shard.mark_failed(error_text(exc))
            _fail(job.pk, f"{shard.phase} shard {shard.index}: {error_text(exc)}")
        raise
    if not finished:
        return _cancel(job, shard)
    with transaction.atomic():
        if shard.mark_succeeded():
            MiningJob.objects.filter(pk=job.pk).update(shards_done=F("shards_done") + 1)
        locked = MiningJob.objects.select_for_update().get(pk=job.pk)
        same_phase = MiningShard.objects.filter(job=job, phase=shard.phase).exclude(status=MiningShard.Status.SUCCEEDED)
        if shard.phase == MiningShard.Phase.NEIGHBOURS and not same_phase.exists():
            statistics_refresh([MiningNeighbours])  # just filled: each pairs batch joins it (a stale plan read all of it)
            _enqueue_all(pairs_shards_create(locked))
        if shard.phase == MiningShard.Phase.ENCODE and not same_phase.exists() and locked.mark_yielded():
            enqueue_on_commit(PREPARE_TASK, locked, options={"queue": settings.MINING_PREPARE_QUEUE}, job_id=job.pk)  # its index
    _finish(job.pk)
    return MiningShard.objects.get(pk=shard.pk)


def _count(job: MiningJob, shard: MiningShard, ids: list[int]) -> int:
    return MinedPair.objects.filter(job=job, source_document_id__in=ids).count()


def _finish(job_id: int) -> None:
    """Mark the job succeeded once every shard is done (whichever shard finishes last does it)."""
    with transaction.atomic():
        job = MiningJob.objects.select_for_update().get(pk=job_id)
        if job.status == MiningJob.Status.RUNNING and job.shards_done >= job.shards_total:
            job.mark_succeeded(pairs_found=MinedPair.objects.filter(job=job).count())
            index_forget(job)
            worker_indexes_release(job_id)  # this worker's; the others' let go of theirs once idle


def mining_job_statistics(job: MiningJob) -> dict:
    """Per-job figures in the manner of the seeds' tables: pairs, mean tokens per side, % multi-sentence items."""
    from django.db.models import Avg, Q

    figures = MinedPair.objects.filter(job=job).aggregate(
        pairs=Count("pk"), source_tokens=Avg("source_tokens"), target_tokens=Avg("target_tokens"),
        source_multi=Count("pk", filter=Q(source_count__gt=1)), target_multi=Count("pk", filter=Q(target_count__gt=1)),
        shapes_1_1=Count("pk", filter=Q(source_count=1, target_count=1)),
    )  # fmt: skip
    pairs = figures["pairs"] or 0
    return {
        **figures,
        "source_multi_percent": 100.0 * figures["source_multi"] / pairs if pairs else 0.0,
        "target_multi_percent": 100.0 * figures["target_multi"] / pairs if pairs else 0.0,
    }
