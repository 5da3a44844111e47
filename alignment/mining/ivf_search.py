"""A MUSS job's neighbours past ``MINING_FAISS_MAX_SEQUENCES``: the MUSS paper's IVF-SQ8 index, built once per worker.

The index (:class:`models_ml.mining.ivf_index.IvfIndex`) is trained on every ``n / sample``-th stored vector, then
filled from a binary COPY of all of them a chunk at a time, so a worker holds one byte a dimension of the job's
vectors and one chunk, never the float32 collection. A batch of queries reads its own vectors from PostgreSQL (the
source of truth), and its candidates' vectors to re-rank them by the exact cosine. The index's settings (cells,
nprobe, PCA, training sample) are recorded on the job (``search_index``) and shown on its page. Training is
deterministic (faiss's k-means seed, the same sample), so every worker builds the same index.
"""

from __future__ import annotations

import os
import threading

import numpy as np
from django.conf import settings

from alignment.mining.models import MiningJob, MiningSequence
from alignment.mining.vectors import stored_rows, vectors_of
from models_ml.mining.ivf_index import IvfIndex

CHUNK = 20_000  # vectors added to the index at a time (30 MB at 384 dimensions)
_lock = threading.Lock()
_cached: tuple[tuple[int, int], IvfIndex] | None = None


def job_ivf_index(job: MiningJob, count: int) -> IvfIndex:
    """The job's IVF index over its ``count`` stored sequences, built on first use in this process and kept."""
    global _cached
    key = (int(job.pk), count)
    with _lock:
        if _cached is not None and _cached[0] == key:
            return _cached[1]
        _cached = None
        cells = int(settings.MINING_IVF_CELLS) or None
        every = max(1, count // IvfIndex.sample_size(count, cells))
        sample = np.stack([row[1].to_numpy() for row in stored_rows(job, every=every)])
        threads = int(settings.ENCODER_THREADS) or (os.cpu_count() or 1)
        index = IvfIndex(sample, count, cells=cells, nprobe=int(settings.MINING_IVF_NPROBE), threads=threads)
        del sample
        ids, vectors = [], []
        for row in stored_rows(job):
            ids.append(row[0])
            vectors.append(row[1].to_numpy())
            if len(ids) >= CHUNK:
                index.add(np.stack(vectors), np.array(ids))
                ids, vectors = [], []
        if ids:
            index.add(np.stack(vectors), np.array(ids))
        MiningJob.objects.filter(pk=job.pk).update(search_index={"kind": "ivf", **index.settings.as_dict()})
        _cached = (key, index)
        return index


def ivf_nearest(job: MiningJob, rows: list[MiningSequence], k: int) -> list[list[list[float]]]:
    """Per row, its k nearest sequences as ``[index, cosine]`` best first, itself excluded (the backends' shape)."""
    index = job_ivf_index(job, job.documents_total // 2)  # prepare stores 2 x the sequences; no COUNT per batch
    own = np.array([row.index for row in rows], dtype=np.int64)  # rows come in index order
    result = index.search(vectors_of(job, own), k, lambda ids: vectors_of(job, ids), exclude=own)
    return [[[int(i), float(s)] for i, s in zip(ids, scores) if i >= 0] for ids, scores in zip(result.indices, result.scores)]
