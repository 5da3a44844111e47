"""Corpora ready for LHA without an encoder, and running a mining job in this process, for the mining command and API tests.

Each sentence gets a bag-of-words vector (its words hashed into 384 columns, unit length) stored as the configured
encoder's, so a simple sentence lies near the complex sentence it retells and LHA finds the hidden pairing, with
no model loaded. A job runs in-process: prepare, then each shard, as a worker would.
"""

from __future__ import annotations

import zlib

import numpy as np
from django.conf import settings

from alignment.importing.readers import ImportOptions
from alignment.importing.service import corpus_import_files
from alignment.mining import service as mining
from alignment.mining.models import MiningJob, MiningShard
from alignment.models import Corpus, Sentence, SentenceEmbedding
from alignment.services import corpus_get_or_create, encoder_get_or_create

COMPLEX = {
    "Tram": "The city council approved a new tram line on Tuesday.\nThe tram line will connect the harbour with the university.\n",
    "Bees": "Honeybees visit thousands of flowers every day to collect nectar.\nThe bees turn the nectar into honey inside the hive.\n",
    "Volcano": "The volcano on the northern island erupted again on Sunday.\nThick clouds of ash forced the airport to cancel flights.\n",
}
SIMPLE = {
    "Tram": "The city council wants a new tram line.\nThe tram line will go from the harbour to the university.\n",
    "Bees": "Honeybees visit many flowers every day.\nThe bees make honey from nectar in the hive.\n",
    "Volcano": "The volcano on the island erupted on Sunday.\nThe ash forced the airport to cancel flights.\n",
}
DIMENSIONS = 384


def word_vector(text: str) -> list[float]:
    vector = np.zeros(DIMENSIONS, dtype=np.float32)
    for word in text.lower().replace(".", " ").replace(",", " ").split():
        vector[zlib.crc32(word.encode()) % DIMENSIONS] += 1.0
    return (vector / max(float(np.linalg.norm(vector)), 1e-9)).tolist()


def mineable_corpus(owner, name: str, texts: dict[str, str], *, shared: bool = False, vectors: bool = True) -> Corpus:
    """A corpus of ``texts`` (title -> one sentence a line), with every sentence's vector unless ``vectors`` is False."""
    corpus, _ = corpus_get_or_create(name=name, language="en", owner=owner, is_shared=shared)
    files = [(f"{title}-adv.txt", text.encode()) for title, text in texts.items()]
    assert not corpus_import_files(corpus=corpus, files=files, options=ImportOptions(format="presplit")).errors
    if vectors:
        encoder = encoder_get_or_create(name=settings.ENCODER_MODEL, dimensions=DIMENSIONS)
        SentenceEmbedding.objects.bulk_create(
            SentenceEmbedding(sentence=sentence, encoder=encoder, vector=word_vector(sentence.text))
            for sentence in Sentence.objects.filter(document__corpus=corpus)
        )
    return corpus


def news_corpora(owner, *, shared: bool = False) -> tuple[Corpus, Corpus]:
    """The complex articles and the simple ones, as two corpora with the pairing hidden."""
    return mineable_corpus(owner, "Complex news", COMPLEX, shared=shared), mineable_corpus(owner, "Simple news", SIMPLE, shared=shared)


def mining_step(job: MiningJob) -> bool:
    """One step of a worker's work on ``job``: its prepare, else its next unfinished shard; False when none is left."""
    job.refresh_from_db(fields=["status"])
    if job.status == MiningJob.Status.QUEUED:
        mining.mining_job_prepare(job_id=job.pk)
        return True
    shard = MiningShard.objects.filter(job=job).exclude(status=MiningShard.Status.SUCCEEDED).order_by("index").first()
    if shard is None or job.status != MiningJob.Status.RUNNING:
        return False
    mining.mining_shard_execute(shard_id=shard.pk)
    return True


def mining_run(job: MiningJob) -> MiningJob:
    """Run ``job`` to its end in this process."""
    while mining_step(job):
        pass
    job.refresh_from_db()
    return job
