"""A large MUSS job's encoding in shards, so that several workers (several hosts, GPU ones where there are any) encode
one job instead of its prepare alone.

The prepare counts the corpus's candidate sequences document by document (text only, no encoder) and cuts them at
document boundaries into "encode" shards, large first and ``MINING_ENCODE_SHARD_SEQUENCES`` at the end
(``muss_service.encode_cuts``), each knowing its documents
[document_first, document_last] and its sequences' indices [start, end) (``muss_service._encode_shards``). Each
shard is its own task on ``MINING_PREPARE_QUEUE``: it streams its documents' sequences, encodes them a batch at a
time and stores each batch with its position in one transaction, so it resumes after the last batch stored, never
stores one twice, and stops between batches when the job is cancelled. The shard that finishes the phase hands the
job back to its prepare, queued as a continuation (as a time slice is), which builds the search index and the
neighbours shards as before (``alignment.mining.service``). A job of one shard's sequences, or any job with
MINING_ENCODE_SHARD_SEQUENCES 0, is encoded by its prepare itself.

Memory per shard: one document's sentences and one batch of sequences and vectors.
"""

from __future__ import annotations

from collections.abc import Callable

from django.db import transaction
from django.db.models import F

from alignment.mining.models import MiningJob, MiningShard
from alignment.mining.muss_service import Encode, _stream_sequences, muss_config, sequences_encode_store, stored_batch
from models_ml.mining.muss import Sequence
from models_ml.mining.retrieval import LexicalVectoriser


def encode_shard_run(shard: MiningShard, encode: Encode, cancelled: Callable[[], bool]) -> bool:
    """Encode and store the shard's sequences from its position on, a batch at a time; False when it stopped for a
    cancel. ValueError when its documents no longer hold the sequences counted when the job was prepared."""
    job = shard.job
    config = muss_config(job.config)
    vectoriser = LexicalVectoriser.from_bytes(job.lexical_idf) if job.retrieval == MiningJob.Retrieval.HYBRID else None
    index, batch = shard.start, []
    for sequence in _stream_sequences(job, config, documents=(shard.document_first, shard.document_last)):
        if index >= shard.end:
            raise ValueError(_changed(shard))
        if index >= shard.position:
            batch.append((index, sequence))
        index += 1
        if len(batch) >= stored_batch(config):
            if cancelled():
                return False
            _store(shard, batch, encode, vectoriser, config.encode_batch)
            batch = []
    if index != shard.end:
        raise ValueError(_changed(shard))
    if batch:
        if cancelled():
            return False
        _store(shard, batch, encode, vectoriser, config.encode_batch)
    return True


def _store(
    shard: MiningShard, batch: list[tuple[int, Sequence]], encode: Encode, vectoriser: LexicalVectoriser | None, per_call: int
) -> None:
    """One batch encoded (``per_call`` texts an ``encode`` call) and stored with the shard's new position and the job's
    progress, all in one transaction."""
    with transaction.atomic():
        sequences_encode_store(shard.job, batch, encode, vectoriser, per_call)
        shard.heartbeat(position=batch[-1][0] + 1)
        MiningJob.objects.filter(pk=shard.job_id).update(documents_done=F("documents_done") + len(batch))


def _changed(shard: MiningShard) -> str:
    return (
        f"documents {shard.document_first}-{shard.document_last} no longer hold the "
        f"{shard.end - shard.start} sequences counted when the job was prepared (the corpus changed while it was mined); "
        "start a new job"
    )
