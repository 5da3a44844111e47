"""A MUSS job's neighbours past ``MINING_FAISS_MAX_SEQUENCES``: the MUSS paper's IVF-SQ8 index, built once per job.

The job's prepare builds the index once and stores it in PostgreSQL (``alignment.mining.index_store``), as it does
the HNSW index; a worker reads it instead of training its own (a worker that finds none, or its parts gone, builds
it). The index (:class:`models_ml.mining.ivf_index.IvfIndex`) is trained on every ``n / sample``-th stored vector, then
filled from a binary COPY of all of them a chunk at a time, so a worker holds one byte a dimension of the job's
vectors and one chunk, never the float32 collection. A batch of queries reads its own vectors from PostgreSQL (the
source of truth), and its candidates' vectors to re-rank them by the exact cosine. The index's settings (cells,
nprobe, PCA, training sample) are recorded on the job (``search_index``) and shown on its page. Training is
deterministic (faiss's k-means seed, the same sample), so an index built again is the same index.
"""

from __future__ import annotations

import os

import numpy as np
from django.conf import settings

from alignment.mining.cancelling import NEVER, CancelCheck
from alignment.mining.index_store import index_store, index_stored, ivf_load
from alignment.mining.models import MiningJob, MiningSequence
from alignment.mining.vectors import as_float32, stored_rows, vector_chunks, vectors_of
from alignment.mining.worker_index import WorkerIndex
from models_ml.mining.ivf_index import IvfIndex

_ivf_index: WorkerIndex[IvfIndex] = WorkerIndex()  # key (job, sequences)


def ivf_prepare(job: MiningJob, count: int, check: CancelCheck) -> None:
    """The prepare's part: the job's IVF index over its ``count`` sequences, built once (``check`` between chunks) and
    stored for the workers, unless it is stored already (a resumed prepare builds nothing); kept for shards run here."""
    if index_stored(job, count):
        return
    index = _built(job, count, check)
    index_store(job, index, count, {"kind": "ivf", **index.settings.as_dict()})
    _ivf_index.keep((int(job.pk), count), index)


def job_ivf_index(job: MiningJob, count: int) -> IvfIndex:
    """The job's IVF index over its ``count`` stored sequences: the stored one, read on first use in this process and
    kept while the job's shards come (built here where none is stored, and recorded on the job)."""

    def build() -> IvfIndex:
        index = ivf_load(job, count, threads=worker_threads())
        if index is None:
            index = _built(job, count, NEVER)
            MiningJob.objects.filter(pk=job.pk).update(search_index={"kind": "ivf", **index.settings.as_dict()})
        return index

    index = _ivf_index.get((int(job.pk), count), build)
    assert index is not None  # build never gives None
    return index


def worker_threads() -> int:
    """The threads a worker's faiss work uses: ENCODER_THREADS, else one per core."""
    return int(settings.ENCODER_THREADS) or (os.cpu_count() or 1)


def _built(job: MiningJob, count: int, check: CancelCheck) -> IvfIndex:
    """Trained on every ``n / sample``-th stored vector, then filled from a binary COPY a chunk at a time."""
    cells = int(settings.MINING_IVF_CELLS) or None
    every = max(1, count // IvfIndex.sample_size(count, cells))
    sample = as_float32([row[1] for row in stored_rows(job, every=every)])
    index = IvfIndex(sample, count, cells=cells, nprobe=int(settings.MINING_IVF_NPROBE), threads=worker_threads())
    del sample
    for ids, vectors in vector_chunks(job, count):  # a COPY a chunk: the check asks the database between two
        index.add(vectors, ids)
        check()
    return index


def ivf_nearest(job: MiningJob, rows: list[MiningSequence], k: int) -> list[list[list[float]]]:
    """Per row, its k nearest sequences as ``[index, cosine]`` best first, itself excluded (the backends' shape)."""
    index = job_ivf_index(job, job.documents_total // 2)  # prepare stores 2 x the sequences; no COUNT per batch
    own = np.array([row.index for row in rows], dtype=np.int64)  # rows come in index order
    result = index.search(vectors_of(job, own), k, lambda ids: vectors_of(job, ids), exclude=own)
    return [[[int(i), float(s)] for i, s in zip(ids, scores) if i >= 0] for ids, scores in zip(result.indices, result.scores)]
