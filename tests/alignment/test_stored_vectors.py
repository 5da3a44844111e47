"""A pair's stored vectors are read in pgvector's binary format, in the order asked for, or not at all when one is missing."""

from __future__ import annotations

import numpy as np

from alignment.aligning.reading import pair_read, pairs_read, stored_vectors
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


def test_pairs_read_together_are_each_pair_read_alone_in_their_order(stories, settings) -> None:
    pairs = list(stories.pairs.order_by("pk"))
    encoder = Encoder.objects.create(name="test-encoder", dimensions=3)
    rng = np.random.default_rng(1)
    for pair in pairs[1:]:  # the first pair's sentences have no vector: it is read without
        for sentence in Sentence.objects.filter(document_id__in=[pair.simple_document_id, pair.complex_document_id]):
            SentenceEmbedding.objects.create(sentence=sentence, encoder=encoder, vector=rng.standard_normal(3).astype(np.float32))
    sizes = [
        Sentence.objects.filter(document_id=p.simple_document_id).count()
        * Sentence.objects.filter(document_id=p.complex_document_id).count()
        for p in pairs
    ]
    huge = max(range(len(pairs)), key=sizes.__getitem__)
    settings.ALIGN_BLOCK_MIN_CELLS = sizes[huge] - 1  # that pair is aligned block by block: not read
    asked = [(p.simple_document_id, p.complex_document_id) for p in [*pairs, pairs[1], pairs[0]]]  # a pair twice, in another order

    together = pairs_read(asked, "test-encoder")
    alone = [pair_read(simple_id, complex_id, "test-encoder") for simple_id, complex_id in asked]
    assert [read is None for read in together] == [read is None for read in alone] == [n == huge for n in [0, 1, 2, 1, 0]]
    for mine, its in zip(together, alone):
        if mine is None:
            continue
        for side, other in ((mine.simple, its.simple), (mine.complex_side, its.complex_side)):
            assert (side.ids, side.texts, side.paragraphs) == (other.ids, other.texts, other.paragraphs) and side.ids
            assert (side.vectors is None) == (other.vectors is None)
            assert side.vectors is None or np.array_equal(side.vectors, other.vectors)
    assert sum(read is not None and read.simple.vectors is not None for read in together) == sum(
        n != 0 and n != huge for n in [0, 1, 2, 1, 0]
    )


def test_a_sentence_budget_reads_the_first_pairs_within_it_and_always_the_first(stories, settings) -> None:
    pairs = [(p.simple_document_id, p.complex_document_id) for p in stories.pairs.order_by("pk")]
    sentences = [Sentence.objects.filter(document_id__in=pair).count() for pair in pairs]
    assert len(pairs) == 3
    assert len(pairs_read(pairs, "", max_sentences=sentences[0] + sentences[1])) == 2
    assert len(pairs_read(pairs, "", max_sentences=sentences[0] + sentences[1] - 1)) == 1
    assert len(pairs_read(pairs, "", max_sentences=1)) == 1  # the first pair is read whatever the budget
    assert len(pairs_read(pairs, "", max_sentences=sum(sentences))) == 3
    settings.ALIGN_BLOCK_MIN_CELLS = 0  # every pair huge: none read, so none counts against the budget
    assert pairs_read(pairs, "", max_sentences=1) == [None, None, None]
