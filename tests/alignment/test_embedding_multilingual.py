"""The embedding job with a packaged multilingual encoder as ENCODER_MODEL: its vectors, its Encoder row, its index."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import connection

from alignment import services
from alignment.models import EmbeddingRun, Encoder, Sentence, SentenceEmbedding
from models_ml.similarity.multilingual import USE_ENCODER

pytestmark = pytest.mark.django_db(transaction=True)


def test_worker_embeds_with_use_multilingual_as_512_dimension_vectors(tram_corpus, run_worker, settings):
    settings.ENCODER_MODEL = USE_ENCODER
    settings.ENCODER_BACKEND = "openvino"  # a backend is for sentence-transformers models; USE runs its own engine
    run = services.embedding_run_create(corpus=tram_corpus, encoder_name=settings.ENCODER_MODEL)
    run_worker()
    run.refresh_from_db()
    assert run.status == EmbeddingRun.Status.SUCCEEDED, run.error
    sentences = Sentence.objects.filter(document__corpus=tram_corpus).count()
    assert run.total_sentences == run.embedded_sentences == sentences
    encoder = Encoder.objects.get(name=USE_ENCODER)
    assert encoder.dimensions == 512
    vectors = np.asarray(
        [embedding.vector for embedding in SentenceEmbedding.objects.filter(sentence__document__corpus=tram_corpus, encoder=encoder)],
        dtype=np.float32,
    )
    assert vectors.shape == (sentences, 512)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    with connection.cursor() as cursor:  # the HNSW index casts to this encoder's 512 dimensions
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s", [encoder.index_name])
        assert "vector(512)" in cursor.fetchone()[0]
