"""Reads: what a user may see, and the queries pages and jobs need."""

from __future__ import annotations

import time
from collections.abc import Sequence

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.cache import caches
from django.db import connection
from django.db.models import Count, Func, IntegerField, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Cast
from django.shortcuts import get_object_or_404
from pgvector.django import CosineDistance, VectorField

from alignment.errors import ServiceError
from alignment.importing.models import ImportJob
from alignment.models import (
    AlignmentRun,
    Corpus,
    Document,
    DocumentPair,
    EmbeddingRun,
    Encoder,
    Paragraph,
    Sentence,
    SentenceEmbedding,
)
from alignment.paging import in_order
from alignment.segmenting.models import SegmentEdit

PAIR_ORDER = ("complex_document__external_id", "complex_document__level", "simple_document__level", "pk")  # lists of pairs, pages apart


def pairs_in_order(ids: Sequence[int]) -> list[DocumentPair]:
    """The document pairs ``ids`` (a page of a list sorted by :data:`PAIR_ORDER`) with their documents, in that order."""
    return in_order(DocumentPair.objects.select_related("complex_document", "simple_document__corpus"), ids)


def corpora_visible_to(user: AbstractBaseUser | AnonymousUser) -> QuerySet[Corpus]:
    """Staff see every corpus; others see the ones they own and the shared ones."""
    if not user.is_authenticated:
        return Corpus.objects.none()
    if user.is_staff:
        return Corpus.objects.all()
    return Corpus.objects.filter(Q(owner=user) | Q(is_shared=True))


def count_of(queryset: QuerySet) -> Subquery:
    """A correlated ``SELECT count(*)`` of ``queryset`` (filtered with ``OuterRef``) for ``annotate``: 0, never NULL, when
    nothing matches, and no GROUP BY over the outer rows (a ``Count`` over two joins multiplies rows and needs DISTINCT)."""
    counted = queryset.order_by().annotate(count=Func("pk", function="COUNT", output_field=IntegerField())).values("count")
    return Subquery(counted, output_field=IntegerField())


def sentence_count(document: str) -> Subquery:
    """For ``annotate``: the sentences of the document the outer row's field ``document`` names ("pair__simple_document")."""
    return count_of(Sentence.objects.filter(document_id=OuterRef(document)))


def corpus_list_with_counts(user: AbstractBaseUser) -> QuerySet[Corpus]:
    """The corpora ``user`` sees with their documents and pairs counted each on its own (two ``Count`` over the two joins
    multiplied them: 20,000 documents by 10,000 pairs, 200 M rows to make distinct, filled the disk with sort files)."""
    return (
        corpora_visible_to(user)
        .annotate(
            document_count=count_of(Document.objects.filter(corpus=OuterRef("pk"))),
            pair_count=count_of(DocumentPair.objects.filter(corpus=OuterRef("pk"))),
        )
        .select_related("owner")
    )


def corpus_get_for_user(user: AbstractBaseUser, corpus_id: int) -> Corpus:
    """The corpus, or 404 when it does not exist *or* the user may not see it (no existence leak)."""
    return get_object_or_404(corpora_visible_to(user), pk=corpus_id)


def corpus_name_refusal(user: AbstractBaseUser, name: str) -> str | None:
    """Why ``user`` cannot give a new corpus the name ``name``, or None when it is free.

    Names are unique across all users. For a corpus the user may not see, the message says only
    that the name is not available: it never confirms that someone has a private corpus so called.
    """
    corpus = Corpus.objects.filter(name=name).first()
    if corpus is None:
        return None
    if corpora_visible_to(user).filter(pk=corpus.pk).exists():
        owner = "yours" if corpus.owner_id == user.pk else "it belongs to someone else"
        return f"a corpus called {name!r} exists already ({owner}); choose another name"
    return f"the name {name!r} is not available; choose another name"


def corpus_for_import(user: AbstractBaseUser, name: str) -> Corpus | None:
    """The corpus called ``name`` if the user may add to it; ServiceError on ``corpus_name`` if it exists but is not theirs."""
    corpus = Corpus.objects.filter(name=name).first()
    if corpus is None:
        return None
    if corpus.owner_id != user.pk and not user.is_staff:
        raise ServiceError(corpus_name_refusal(user, name), field="corpus_name")
    return corpus


def corpus_names_for_import(user: AbstractBaseUser) -> list[str]:
    """Names of the corpora the user may add documents to (their own; all for staff)."""
    corpora = Corpus.objects.all() if user.is_staff else Corpus.objects.filter(owner=user)
    return list(corpora.order_by("name").values_list("name", flat=True))


def import_jobs_for_user(user: AbstractBaseUser) -> QuerySet[ImportJob]:
    """The import jobs a user may see, on the job page and in the API: the ones they started (staff: every one)."""
    jobs = ImportJob.objects.select_related("corpus", "created_by")
    return jobs if user.is_staff else jobs.filter(created_by=user)


def pair_get_for_user(user: AbstractBaseUser, pair_id: int) -> DocumentPair:
    return get_object_or_404(
        DocumentPair.objects.filter(corpus__in=corpora_visible_to(user)).select_related("corpus", "complex_document", "simple_document"),
        pk=pair_id,
    )


def embedding_run_get_for_user(user: AbstractBaseUser, run_id: int) -> EmbeddingRun:
    return get_object_or_404(EmbeddingRun.objects.filter(corpus__in=corpora_visible_to(user)), pk=run_id)


def alignment_run_get_for_user(user: AbstractBaseUser, run_id: int) -> AlignmentRun:
    return get_object_or_404(AlignmentRun.objects.filter(corpus__in=corpora_visible_to(user)).select_related("corpus"), pk=run_id)


def user_may_run_jobs(user: AbstractBaseUser, corpus: Corpus) -> bool:
    """Starting, retrying and cancelling a corpus's jobs (embedding, alignment, mining with it as source) is
    for the corpus owner and staff; others who may see a shared corpus only look."""
    return bool(user.is_staff or corpus.owner_id == user.pk)


def alignment_runs_recent(corpus: Corpus, limit: int = 5) -> list[AlignmentRun]:
    return list(corpus.alignment_runs.all()[:limit])


def alignment_run_pairs(run: AlignmentRun) -> QuerySet[DocumentPair]:
    """The run's pairs with whether (and how fast) each is done: ``done_seconds`` is None while pending."""
    from django.db.models import F, FilteredRelation

    return (
        run.pairs.annotate(done=FilteredRelation("aligned_pairs", condition=Q(aligned_pairs__run=run)))
        .annotate(done_seconds=F("done__seconds"))
        .select_related("complex_document", "simple_document")
        .order_by("pk")
    )


COUNTS_ACTIVE_SECONDS = 15  # while an embedding run of the corpus is queued or running, its counts are this old at most


def corpus_counts(corpus: Corpus) -> tuple[int, list[dict]]:
    """The corpus's sentences and, per encoder, how many have a vector (the corpus page's jobs panel, polled while a job
    runs). Counted over every sentence: about a second at 560,000 (``bench/corpus_scale.py --pairs 10000``, the only
    page over 300 ms there), so kept in the host's figures cache while the corpus stays as it is: its documents and the
    newest sentence, vector and sentence edit anywhere, read by index lookups; while one of its embedding runs is
    active, counted again at most every :data:`COUNTS_ACTIVE_SECONDS` instead of at every new vector."""
    tables = {m.__name__: m._meta.db_table for m in (Document, Sentence, SentenceEmbedding, SegmentEdit, EmbeddingRun)}
    active = (EmbeddingRun.Status.QUEUED, EmbeddingRun.Status.RUNNING)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT (SELECT count(*) FROM {tables['Document']} WHERE corpus_id = %(c)s), (SELECT max(id) FROM {tables['Document']}"
            f" WHERE corpus_id = %(c)s), (SELECT max(id) FROM {tables['Sentence']}), (SELECT max(id) FROM {tables['SentenceEmbedding']}),"
            f" (SELECT max(id) FROM {tables['SegmentEdit']}), EXISTS (SELECT 1 FROM {tables['EmbeddingRun']} WHERE corpus_id = %(c)s"
            " AND status = ANY(%(active)s))",
            {"c": corpus.pk, "active": list(active)},
        )
        *state, running = cursor.fetchone()
    if running:  # every stored batch adds vectors: a poll would count again each time
        state[3] = f"active {int(time.time() // COUNTS_ACTIVE_SECONDS)}"
    figures = caches["figures"]  # shared by the host's web processes (settings.CACHES)
    # created_at too: the cache folder may be shared by databases whose corpora share a pk (parallel test workers)
    key, version = f"corpus:{corpus.pk}:{corpus.created_at.timestamp()}:counts", repr(state)
    entry = figures.get(key)
    if entry is not None and entry["version"] == version:
        return entry["value"]
    sentences = Sentence.objects.filter(document__corpus=corpus).count()
    vectors = list(
        SentenceEmbedding.objects.filter(sentence__document__corpus=corpus)
        .values("encoder__name")
        .annotate(vectors=Count("id"))
        .order_by("encoder__name")
    )
    figures.set(key, {"version": version, "value": (sentences, vectors)}, 30 * 24 * 3600)
    return sentences, vectors


def corpus_needs_embedding(corpus: Corpus, encoder_name: str) -> bool:
    """True when some sentence of the corpus has no vector from the encoder called ``encoder_name``."""
    encoder = Encoder.objects.filter(name=encoder_name).first()
    sentences = Sentence.objects.filter(document__corpus=corpus)
    if encoder is None:
        return sentences.exists()
    return sentences.exclude(embeddings__encoder=encoder).exists()


def document_paragraphs(document_id: int) -> list[tuple[Paragraph, list[Sentence]]]:
    """The document's paragraphs with their sentences, in two queries."""
    paragraphs = list(Paragraph.objects.filter(document_id=document_id).order_by("index"))
    by_paragraph: dict[int, list[Sentence]] = {p.pk: [] for p in paragraphs}
    for sentence in Sentence.objects.filter(document_id=document_id).order_by("index"):
        by_paragraph[sentence.paragraph_id].append(sentence)
    return [(p, by_paragraph[p.pk]) for p in paragraphs]


def sentence_nearest(*, encoder: Encoder, vector, limit: int = 10, corpus: Corpus | None = None) -> QuerySet[SentenceEmbedding]:
    """The ``limit`` stored sentences closest (cosine) to ``vector`` among ``encoder``'s vectors.

    The cast and the ``encoder`` filter match the encoder's partial HNSW index,
    so PostgreSQL can answer from the index instead of scanning every vector.
    """
    typed = Cast("vector", VectorField(dimensions=encoder.dimensions))
    queryset = SentenceEmbedding.objects.filter(encoder=encoder)
    if corpus is not None:
        queryset = queryset.filter(sentence__document__corpus=corpus)
    return queryset.annotate(distance=CosineDistance(typed, vector)).order_by("distance").select_related("sentence")[:limit]
