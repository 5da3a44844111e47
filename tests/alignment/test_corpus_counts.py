"""The corpus page's sentence and vector counts (a second of counting at 560,000 sentences) are counted once while the
corpus stays as it is, again after anything that changes them, and at most every few seconds while a run embeds it."""

from __future__ import annotations

from alignment import selectors
from alignment.importing.readers import ImportOptions
from alignment.importing.service import corpus_import_files
from alignment.models import EmbeddingRun, Encoder, Sentence, SentenceEmbedding
from alignment.services import corpus_get_or_create


def _import(corpus, name: str, text: str) -> None:
    assert not corpus_import_files(corpus=corpus, files=[(name, text.encode())], options=ImportOptions(format="presplit")).errors


def _embed(sentence: Sentence, encoder: Encoder) -> None:
    SentenceEmbedding.objects.create(sentence=sentence, encoder=encoder, vector=[1.0, 0.0, 0.0])


def test_the_counts_are_read_from_the_cache_until_a_document_a_vector_or_an_active_run_changes_them(
    owner, db, django_assert_num_queries, monkeypatch
) -> None:
    corpus, _ = corpus_get_or_create(name="Counted", language="en", owner=owner)
    _import(corpus, "one-adv.txt", "The first sentence.\nThe second sentence.\n")
    assert selectors.corpus_counts(corpus) == (2, [])
    with django_assert_num_queries(1):  # the corpus's state, by index lookups: nothing counted
        assert selectors.corpus_counts(corpus) == (2, [])

    encoder = Encoder.objects.create(name="tiny", dimensions=3)
    first, second = Sentence.objects.filter(document__corpus=corpus).order_by("pk")
    _embed(first, encoder)
    assert selectors.corpus_counts(corpus) == (2, [{"encoder__name": "tiny", "vectors": 1}])
    _import(corpus, "two-adv.txt", "A third sentence.\n")
    assert selectors.corpus_counts(corpus) == (3, [{"encoder__name": "tiny", "vectors": 1}])

    clock = [1_000_000.0]
    monkeypatch.setattr(selectors.time, "time", lambda: clock[0])
    EmbeddingRun.objects.create(corpus=corpus, encoder_name="tiny", status=EmbeddingRun.Status.RUNNING)
    assert selectors.corpus_counts(corpus)[1] == [{"encoder__name": "tiny", "vectors": 1}]
    _embed(second, encoder)  # a batch stored by the run: the panel's poll reads the counts of a few seconds ago
    with django_assert_num_queries(1):
        assert selectors.corpus_counts(corpus)[1] == [{"encoder__name": "tiny", "vectors": 1}]
    clock[0] += selectors.COUNTS_ACTIVE_SECONDS
    assert selectors.corpus_counts(corpus)[1] == [{"encoder__name": "tiny", "vectors": 2}]
    EmbeddingRun.objects.filter(corpus=corpus).update(status=EmbeddingRun.Status.SUCCEEDED)
    _embed(Sentence.objects.filter(document__corpus=corpus).order_by("pk").last(), encoder)
    assert selectors.corpus_counts(corpus) == (3, [{"encoder__name": "tiny", "vectors": 3}])  # the run ended: exact again
