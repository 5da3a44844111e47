"""A pair's stored vectors are read in pgvector's binary format, in the order asked for, or not at all when one is missing."""

from __future__ import annotations

import numpy as np

from alignment.aligning.reading import pair_read, stored_vectors
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


def test_a_pairs_read_has_each_sides_vectors_in_sentence_order_bit_for_bit(tram_corpus) -> None:
    pair = tram_corpus.pairs.get()
    encoder = Encoder.objects.create(name="test-encoder", dimensions=3)
    rng = np.random.default_rng(0)
    expected = {}
    for document_id in (pair.simple_document_id, pair.complex_document_id):
        sentences = list(Sentence.objects.filter(document_id=document_id).order_by("index"))
        expected[document_id] = rng.standard_normal((len(sentences), 3)).astype(np.float32)
        for sentence, vector in zip(reversed(sentences), expected[document_id][::-1]):  # stored out of order
            SentenceEmbedding.objects.create(sentence=sentence, encoder=encoder, vector=vector)
    read = pair_read(pair.simple_document_id, pair.complex_document_id, "test-encoder")
    assert read.simple.vectors.dtype == np.float32 and np.array_equal(read.simple.vectors, expected[pair.simple_document_id])
    assert np.array_equal(read.complex_side.vectors, expected[pair.complex_document_id])
    assert pair_read(pair.simple_document_id, pair.complex_document_id, "no-such-encoder").simple.vectors is None
