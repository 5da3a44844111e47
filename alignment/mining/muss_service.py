"""MUSS paraphrase mining in the app, sharded over sequence ranges in two phases.

prepare     builds the corpus's sequences (``models_ml.mining.muss.candidate_sequences``), encodes them
            in batches into MiningSequence rows (idempotent: stops where it stopped; a large job in encode
            shards on several workers, ``alignment.mining.muss_encoding``) and builds the search index
            (for pgvector, a partial HNSW index over the job's vectors);
neighbours  shards: every sequence's k nearest sequences (self excluded; pgvector or faiss, see
            ``search_backend``) and
            their mean cosine, the margin's denominator;
pairs       shards, once every neighbours shard is done: cosine bound, ratio margin, the
            symmetric de-duplication of ``mine_muss`` (the smaller index emits a pair both
            sides found), the filters and the ACCESS attributes, as MinedPair rows.

Both shard kinds commit per batch of sequences with their position, so they resume and stop
between batches; pairs are unique per job. Memory: one batch of sequences and their
neighbours' rows at a time; the vectors stay in PostgreSQL (with the faiss search, each worker
also holds the job's vectors in its index).
"""

from __future__ import annotations

import itertools
import operator
from array import array
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, fields

import numpy as np
import psycopg
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F

from alignment.copying import copy_binary, packed_half_rows, packed_sparse_rows
from alignment.jobs.helper_io import RunIO, run_overlapped
from alignment.mining.cancelling import CancelCheck
from alignment.mining.models import MiningJob, MiningNeighbours, MiningSequence, MiningShard
from alignment.mining.muss_rows import SequenceRow, batch_rows
from alignment.mining.pair_store import PairRow, mined_pairs_store
from alignment.mining.search_backend import hybrid_settings, nearest_sequences, search_prepare
from alignment.mining.statistics import statistics_refresh
from alignment.models import Document, Sentence
from models_ml.mining.muss import (
    MussConfig,
    Sequence,
    access_attributes,
    candidate_sequences,
    ratio_margin,
    rejection_reason,
)
from models_ml.mining.retrieval import LEXICAL_DIMENSIONS, LexicalVectoriser, document_frequency
from models_ml.mining.types import MiningDocument

SHARD_SEQUENCES = 2000
BATCH = 1000  # sequences per committed batch: its bookkeeping (position, progress, heartbeat) was 5 % of a job at 100
Encode = Callable[[list[str]], np.ndarray]


# Hybrid retrieval's defaults: the weighted sum's dense share (bench/deplain_retrieval.py: 0.3 was best with USE
# multilingual v3) and the bound on 1 - fused score (see docs/mining.md, "Hybrid mining").
HYBRID_DENSE_WEIGHT = 0.3
HYBRID_MAX_DISTANCE = 0.6
JOB_SETTINGS = {"encoder", "shard_sequences", "retrieval", "dense_weight"}


def muss_config(config: dict | None) -> MussConfig:
    known = {f.name for f in fields(MussConfig)}
    unknown = set(config or {}) - known - JOB_SETTINGS
    if unknown:
        raise ValueError(f"unknown MUSS setting(s) {sorted(unknown)}; settings: {', '.join(sorted(known | JOB_SETTINGS))}")
    return MussConfig(**{k: v for k, v in (config or {}).items() if k in known})


def muss_stored_config(config: dict | None, encoder: str, shard_sequences: int, retrieval: str = "dense") -> dict:
    """The job's settings as stored (and hashed). A dense job stores no retrieval keys, so jobs made before hybrid
    retrieval existed keep their identity; a hybrid one stores ``retrieval``, ``dense_weight`` and, unless given,
    the hybrid bound on ``max_distance`` (its scores are on another scale than the dense cosine)."""
    if shard_sequences < 1:
        raise ValueError(f"shard_sequences must be >= 1, got {shard_sequences}")
    config = dict(config or {})
    hybrid = hybrid_settings(config, retrieval, HYBRID_DENSE_WEIGHT, "MUSS")
    if hybrid:
        config.setdefault("max_distance", HYBRID_MAX_DISTANCE)
    return {**asdict(muss_config(config)), "encoder": encoder, "shard_sequences": shard_sequences, **hybrid}


def _stream_sequences(job: MiningJob, config: MussConfig, documents: tuple[int, int] | None = None) -> Iterator[Sequence]:
    """The corpus's candidate sequences in ``candidate_sequences`` order, one document in memory at a time; with
    ``documents`` (first and last id), those of the documents in that range only (an encode shard's).

    One server-side cursor over every sentence in (document, index) order, read STREAM_CHUNK rows at a time, instead
    of a query per document (100,000 of them at a million sequences: py-spy put 4.2 of a 25 s prepare there at 30,000).
    """
    sentences = Sentence.objects.filter(document__corpus_id=job.source_corpus_id)
    if documents is not None:
        sentences = sentences.filter(document_id__gte=documents[0], document_id__lte=documents[1])
    rows = sentences.order_by("document_id", "index").values_list("document_id", "text").iterator(chunk_size=STREAM_CHUNK)
    for doc, sentences in itertools.groupby(rows, key=operator.itemgetter(0)):
        texts = [text for _, text in sentences]
        yield from candidate_sequences([MiningDocument(str(doc), texts)], config)


STREAM_CHUNK = 5_000  # sentence rows a fetch of the prepare's cursor holds


def muss_prepare(job: MiningJob, encode: Encode) -> list[int]:
    """Sequences, their vectors and index, and the neighbours shards; returns the shard ids still to run.

    A job of more than MINING_ENCODE_SHARD_SEQUENCES sequences is first cut into encode shards (returned while any is
    open; the last one done queues this prepare again, which then builds the index and the neighbours shards), a
    smaller one encoded here. Streams: one document's sentences and one batch of sequences in memory; a rerun skips
    the sequences already stored (same order, so the same indices). A job cancelled in its pairs phase gets its open
    pairs shards back.
    """
    config = muss_config(job.config)
    check = CancelCheck(job)  # raises PrepareCancelled between batches once the job's cancel is asked for
    check()
    if not MiningShard.objects.filter(job=job).exists() and not MiningSequence.objects.filter(job=job).exists():
        statistics_refresh([Document, Sentence])  # the job's first prepare: its corpus most likely just loaded
    vectoriser = _lexical_vectoriser(job, config, check) if job.retrieval == MiningJob.Retrieval.HYBRID else None
    encode_shards = _encode_shards(job, config, check)
    if any(shard.status != MiningShard.Status.SUCCEEDED for shard in encode_shards):  # the last one continues this prepare
        return [shard.pk for shard in encode_shards if shard.status != MiningShard.Status.SUCCEEDED]
    total = encode_shards[-1].end if encode_shards else _encode_here(job, config, encode, vectoriser, check)
    neighbours = MiningShard.objects.filter(job=job, phase=MiningShard.Phase.NEIGHBOURS)
    first_search = not neighbours.exists()  # not a resumed prepare: no neighbours shard made yet
    if first_search:  # the sequences just stored: the shards' reads are planned on fresh statistics
        statistics_refresh([MiningSequence])
    search_prepare(job, total, check)
    size = int(job.config["shard_sequences"])
    progress = {"documents_done": 0} if encode_shards and first_search else {}  # from the encoding's count
    for index, start in enumerate(range(0, total, size)):
        MiningShard.objects.get_or_create(
            job=job,
            phase=MiningShard.Phase.NEIGHBOURS,
            index=index,
            defaults={"start": start, "end": min(start + size, total), "position": start},
        )
    MiningJob.objects.filter(pk=job.pk).update(
        documents_total=2 * total, shards_total=len(encode_shards) + 2 * neighbours.count(), **progress
    )
    pending = list(neighbours.exclude(status=MiningShard.Status.SUCCEEDED).values_list("pk", flat=True))
    return pending or pairs_shards_create(job)  # a job cancelled in its pairs phase resumes there


def _encode_here(job: MiningJob, config: MussConfig, encode: Encode, vectoriser: LexicalVectoriser | None, check: CancelCheck) -> int:
    """Encode and store the sequences not stored yet in this task, a batch at a time; the job's sequence count."""
    done = MiningSequence.objects.filter(job=job).count()
    total = 0
    batch: list[tuple[int, Sequence]] = []

    def flush() -> None:
        sequences_encode_store(job, batch, encode, vectoriser, config.encode_batch)
        batch.clear()
        check()

    for sequence in _stream_sequences(job, config):
        if total >= done:
            batch.append((total, sequence))
            if len(batch) >= stored_batch(config):
                flush()
        total += 1
    if batch:
        flush()
    return total


def _encode_shards(job: MiningJob, config: MussConfig, check: CancelCheck) -> list[MiningShard]:
    """The job's encode shards (:mod:`alignment.mining.muss_encoding`), cut the first time at document boundaries by
    counting each document's sequences (text only, no encoder; :func:`encode_cuts`). None for a job of no more than
    MINING_ENCODE_SHARD_SEQUENCES sequences, with the setting 0, or for a job whose prepare began encoding before (it
    goes on so). Memory: 16 bytes a document while it counts."""
    shards = list(MiningShard.objects.filter(job=job, phase=MiningShard.Phase.ENCODE).order_by("index"))
    smallest = int(settings.MINING_ENCODE_SHARD_SEQUENCES)
    if shards or smallest < 1 or MiningSequence.objects.filter(job=job).exists():
        return shards
    documents, ends = array("q"), array("q")  # each document's id, and the count of sequences up to its last
    grouped = itertools.groupby(_stream_sequences(job, config), key=operator.attrgetter("doc_id"))
    for position, (document, sequences) in enumerate(grouped):
        documents.append(int(document))
        ends.append((ends[-1] if ends else 0) + sum(1 for _ in sequences))
        if position % 100 == 99:
            check()
    cuts = encode_cuts(np.frombuffer(documents, dtype=np.int64), np.frombuffer(ends, dtype=np.int64), smallest)
    if len(cuts) < 2:
        return []
    MiningShard.objects.bulk_create(
        [
            MiningShard(
                job=job,
                phase=MiningShard.Phase.ENCODE,
                index=index,
                document_first=first,
                document_last=last,
                start=start,
                end=end,
                position=start,
            )
            for index, (first, last, start, end) in enumerate(cuts)
        ],
        ignore_conflicts=True,  # a second prepare of the job cut the same shards first
    )
    MiningJob.objects.filter(pk=job.pk).update(documents_total=cuts[-1][3], documents_done=0, shards_total=len(cuts), shards_done=0)
    return list(MiningShard.objects.filter(job=job, phase=MiningShard.Phase.ENCODE).order_by("index"))


SEQUENCE_COLUMNS = ("job_id", "index", "document_id", "start", "end", "text", "vector", "lexical")
SEQUENCE_TYPES = ("int8", "int4", "int8", "int4", "int4", "text", "halfvec", "sparsevec")


def stored_batch(config: MussConfig) -> int:
    """Sequences encoded and stored in one transaction: ``encode_batch`` a call, at least BATCH a commit (a commit of
    256 with its position, progress and cancel check was about a third of the stand-in's encode shards, py-spy)."""
    return max(config.encode_batch, BATCH)


def sequences_encode_store(
    job: MiningJob, batch: list[tuple[int, Sequence]], encode: Encode, vectoriser: LexicalVectoriser | None, per_call: int
) -> None:
    """A batch of (index, sequence) encoded, ``per_call`` texts an ``encode`` call (and, for a hybrid job, its 3-gram
    vectors made) and stored: the prepare's and the encode shards' one way of writing sequences."""
    texts = [sequence.text for _, sequence in batch]
    vectors = np.concatenate([encode(texts[start : start + per_call]) for start in range(0, len(texts), per_call)])  # (b, d) unit rows
    lexical = [None] * len(batch) if vectoriser is None else packed_sparse_rows(vectoriser.transform(texts))
    _sequences_store(job, batch, vectors, lexical)


def _sequences_store(job: MiningJob, batch: list[tuple[int, Sequence]], vectors: np.ndarray, lexical: list) -> None:
    """One encoded batch as MiningSequence rows, by binary COPY (vectors in pgvector's binary ``halfvec`` format:
    formatting them as text for INSERTs was most of prepare, docs/benchmarks.md "Mining at scale"). One statement: all
    rows or none, so a resumed prepare, which starts after the rows stored (``done``), never writes one twice."""
    rows = (
        (job.pk, index, int(s.doc_id), s.start, s.end, s.text, v, w) for (index, s), v, w in zip(batch, packed_half_rows(vectors), lexical)
    )
    copy_binary(MiningSequence, SEQUENCE_COLUMNS, SEQUENCE_TYPES, rows)


def _lexical_vectoriser(job: MiningJob, config: MussConfig, check: CancelCheck) -> LexicalVectoriser:
    """The job's one IDF version: fitted on all its sequences on the first prepare (one streamed pass) and stored,
    so a resumed prepare and every shard weigh 3-grams the same way."""
    if job.lexical_idf is not None:
        return LexicalVectoriser.from_bytes(job.lexical_idf)
    frequency = np.zeros(LEXICAL_DIMENSIONS, dtype=np.int64)
    count, texts = 0, []
    for sequence in _stream_sequences(job, config):
        texts.append(sequence.text)
        if len(texts) >= 1000:
            frequency += document_frequency(texts)
            count, texts = count + len(texts), []
            check()
    if texts:
        frequency += document_frequency(texts)
        count += len(texts)
    vectoriser = LexicalVectoriser.from_document_frequency(frequency, count)
    job.lexical_idf = vectoriser.to_bytes()
    MiningJob.objects.filter(pk=job.pk).update(lexical_idf=job.lexical_idf)
    return vectoriser


GUIDED_PARTS = 8  # an encode shard takes about this share (1/8) of the sequences not yet cut ...
LARGEST_SHARD = 40  # ... between MINING_ENCODE_SHARD_SEQUENCES and this many times it


def encode_cuts(documents: np.ndarray, ends: np.ndarray, smallest: int) -> list[tuple[int, int, int, int]]:
    """(first document, last document, start, end) of each encode shard, at document boundaries: guided
    self-scheduling, large shards first and smaller ones towards the end, so that few tasks carry the job and the
    workers finish together (shards of one fixed size were either many, each a task's overhead, or left a worker idle
    for a whole shard at the end). ``documents`` (n,): ids in order; ``ends`` (n,): sequences up to each one's last."""
    cuts: list[tuple[int, int, int, int]] = []
    total = int(ends[-1]) if len(ends) else 0
    first, start = 0, 0
    while first < len(documents):
        size = min(max((total - start) // GUIDED_PARTS, smallest), LARGEST_SHARD * smallest)
        last = min(int(np.searchsorted(ends, start + size)), len(documents) - 1)  # the first document reaching the size
        cuts.append((int(documents[first]), int(documents[last]), start, int(ends[last])))
        first, start = last + 1, int(ends[last])
    return cuts


def pairs_shards_create(job: MiningJob) -> list[int]:
    """After the last neighbours shard: the pairs shards over the same ranges (idempotent)."""
    for shard in MiningShard.objects.filter(job=job, phase=MiningShard.Phase.NEIGHBOURS):
        MiningShard.objects.get_or_create(
            job=job,
            phase=MiningShard.Phase.PAIRS,
            index=shard.index,
            defaults={"start": shard.start, "end": shard.end, "position": shard.start},
        )
    return list(
        MiningShard.objects.filter(job=job, phase=MiningShard.Phase.PAIRS)
        .exclude(status=MiningShard.Status.SUCCEEDED)
        .values_list("pk", flat=True)
    )


def neighbours_batch(job: MiningJob, begin: int, end: int) -> int:
    """Store the k nearest sequences (and their mean cosine) of sequences [begin, end)."""
    config = muss_config(job.config)
    rows = list(MiningSequence.objects.filter(job=job, index__gte=begin, index__lt=end).only("pk", "index").order_by("index"))
    found = nearest_sequences(job, rows, config.k)
    neighbours_store(
        (row.pk, [int(i) for i, _ in nearest], [float(s) for _, s in nearest], float(np.mean([s for _, s in nearest])) if nearest else 0.0)
        for row, nearest in zip(rows, found)
    )
    return len(rows)


NEIGHBOUR_COLUMNS = ("sequence_id", "ids", "scores", "knn_mean")
NEIGHBOUR_TYPES = ("int8", "int4[]", "float8[]", "float8")


def neighbours_store(rows: Iterable[tuple[int, list[int], list[float], float]]) -> None:
    """A batch's neighbours, (sequence id, indices, scores, mean score) each, into their narrow table by binary COPY: an
    UPDATE of the sequence rows rewrote them whole (docs/benchmarks.md). The batch commits with its shard's position, so
    a resumed shard never stores it twice; should a second worker on the same shard have stored it first (a requeued
    stalled task), the key refuses the COPY and the batch replaces the rows there (the same search's answer)."""
    rows = list(rows)
    try:
        with transaction.atomic():  # a savepoint: the fallback below runs in the batch's transaction
            copy_binary(MiningNeighbours, NEIGHBOUR_COLUMNS, NEIGHBOUR_TYPES, rows)
    except (IntegrityError, psycopg.IntegrityError):  # the COPY runs on psycopg's own cursor: its error is psycopg's
        MiningNeighbours.objects.filter(sequence_id__in=[row[0] for row in rows]).delete()
        copy_binary(MiningNeighbours, NEIGHBOUR_COLUMNS, NEIGHBOUR_TYPES, rows)


def _as_sequence(row: SequenceRow) -> Sequence:
    return Sequence(str(row.document_id), row.start, row.end, row.text)


def pairs_batch(job: MiningJob, begin: int, end: int) -> list[PairRow]:
    """The mined pairs emitted by sequences [begin, end), as rows to store."""
    return pairs_of(job, *batch_rows(job, begin, end))  # plain rows: model instances were half of a batch


def pairs_of(job: MiningJob, rows: list[SequenceRow], others: dict[int, SequenceRow]) -> list[PairRow]:
    """The mined pairs that ``rows`` emit, their neighbours' rows in ``others`` (:func:`batch_rows`'s)."""
    config = muss_config(job.config)
    found = []
    for row in rows:
        for other_index, cosine in zip(row.neighbour_ids or (), row.neighbour_scores or ()):
            other = others[other_index]
            if other.index < row.index and row.index in (other.neighbour_ids or ()):
                continue  # the smaller index found this pair too and emits it
            low, high = (row, other) if row.index < other.index else (other, row)
            cosine = float(cosine)
            if 1.0 - cosine >= config.max_distance:
                continue
            margin = float(ratio_margin(cosine, low.knn_mean, high.knn_mean))
            if margin < config.min_margin:
                continue
            source, target = _as_sequence(low), _as_sequence(high)
            if rejection_reason(source, target, min_levenshtein=config.min_levenshtein) is not None:
                continue
            features = {"cosine": cosine, "margin": margin, **access_attributes(source.text, target.text, config.language)}
            found.append(
                PairRow(
                    job_id=job.pk, source_document_id=low.document_id, target_document_id=high.document_id,
                    source_sentences=list(range(low.start, low.end)), target_sentences=list(range(high.start, high.end)),
                    source_key=f"{low.start}-{low.end}", target_key=f"{high.start}-{high.end}",
                    source_text=low.text, target_text=high.text, source_count=low.end - low.start, target_count=high.end - high.start,
                    source_tokens=len(low.text.split()), target_tokens=len(high.text.split()), score=margin, doc_score=None,
                    length_ratio=len(high.text) / max(len(low.text), 1), overlap=None, features=features,
                )
            )  # fmt: skip
    return found


def muss_shard_run(shard: MiningShard, cancelled: Callable[[], bool]) -> bool:
    """Run the shard from its position in batches; False when it stopped for a cancel. A pairs shard reads its next
    batch's rows ahead and stores its last batch's pairs behind on a helper thread while it mines, as an LHA shard does
    (:func:`~alignment.jobs.helper_io.run_overlapped`)."""
    job = shard.job
    ranges = ((begin, min(begin + BATCH, shard.end)) for begin in range(shard.position, shard.end, BATCH))
    if shard.phase == MiningShard.Phase.NEIGHBOURS:
        for begin, end in ranges:
            if cancelled():
                return False
            with transaction.atomic():
                neighbours_batch(job, begin, end)
                _advance(job, shard, begin, end)
        return True
    io = RunIO()
    try:
        return run_overlapped(
            io,
            ranges,
            read=lambda span: batch_rows(job, *span),
            work=lambda span, read: pairs_of(job, *read),
            store=lambda span, found: _pairs_store(job, shard, span, found),
            cancelled=cancelled,
        )
    finally:
        io.close()


def _pairs_store(job: MiningJob, shard: MiningShard, span: tuple[int, int], found: list[PairRow]) -> None:
    with transaction.atomic():
        mined_pairs_store(found)
        _advance(job, shard, *span)


def _advance(job: MiningJob, shard: MiningShard, begin: int, end: int) -> None:
    shard.heartbeat(position=end)
    MiningJob.objects.filter(pk=job.pk).update(documents_done=F("documents_done") + (end - begin))
