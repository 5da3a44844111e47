"""A pair's stored vectors are read in pgvector's binary format, in the order asked for, or not at all when one is missing."""

from __future__ import annotations

import numpy as np

from alignment.aligning.reading import stored_vectors
from alignment.models import Encoder, Sentence, SentenceEmbedding


def test_stored_vectors_come_back_in_the_order_asked_and_none_when_one_is_missing(tram_corpus) -> None:
    sentences = list(Sentence.objects.filter(document__corpus=tram_corpus).order_by("pk")[:3])
    encoder = Encoder.objects.create(name="test-encoder", dimensions=4)
    other = Encoder.objects.create(name="other-encoder", dimensions=4)
    vectors = np.arange(12, dtype=np.float32).reshape(3, 4) / 7
    for sentence, vector in zip(sentences, vectors):
        SentenceEmbedding.objects.create(sentence=sentence, encoder=encoder, vector=vector)
    SentenceEmbedding.objects.create(sentence=sentences[0], encoder=other, vector=np.ones(4, dtype=np.float32))

    ids = [sentences[2].pk, sentences[0].pk, sentences[1].pk]
    read = stored_vectors(ids, "test-encoder")
    assert read.dtype == np.float32 and read.shape == (3, 4)
    assert np.array_equal(read, vectors[[2, 0, 1]])
    assert stored_vectors(ids, "other-encoder") is None  # only one of the three has a vector of this encoder
    assert stored_vectors([], "test-encoder") is None
