"""pgvector nearest-neighbour search over stored sentence embeddings."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import connection, transaction

from alignment import selectors, services
from alignment.models import Sentence, SentenceEmbedding


def _unit(vector: list[float]) -> list[float]:
    array = np.asarray(vector, dtype=np.float32)
    return (array / np.linalg.norm(array)).tolist()


@pytest.fixture
def embedded_tram_corpus(tram_corpus):
    """Hand-made 3-d vectors so the expected ordering is known exactly."""
    encoder = services.encoder_get_or_create(name="toy-3d", dimensions=3)
    services.encoder_get_or_create(name="other-3d", dimensions=3)
    sentences = list(Sentence.objects.filter(document__corpus=tram_corpus).order_by("document__level", "index")[:4])
    angles = [0.0, 0.3, 0.9, 1.4]  # increasing angle from the x axis = increasing cosine distance
    SentenceEmbedding.objects.bulk_create(
        SentenceEmbedding(sentence=s, encoder=encoder, vector=_unit([np.cos(a), np.sin(a), 0.0])) for s, a in zip(sentences, angles)
    )
    return encoder, sentences


def test_nearest_neighbours_come_in_cosine_distance_order(embedded_tram_corpus):
    encoder, sentences = embedded_tram_corpus
    query = _unit([np.cos(0.35), np.sin(0.35), 0.0])  # closest to angle 0.3, then 0.0, then 0.9, then 1.4
    found = list(selectors.sentence_nearest(encoder=encoder, vector=query, limit=4))
    assert [e.sentence_id for e in found] == [sentences[i].pk for i in (1, 0, 2, 3)]
    distances = [e.distance for e in found]
    assert distances == sorted(distances)
    assert distances[0] == pytest.approx(1 - np.cos(0.05), abs=1e-5)


def test_vectors_of_another_encoder_are_never_mixed_in(embedded_tram_corpus):
    encoder, sentences = embedded_tram_corpus
    other = services.encoder_get_or_create(name="other-3d", dimensions=3)
    SentenceEmbedding.objects.create(sentence=sentences[3], encoder=other, vector=_unit([1.0, 0.0, 0.0]))
    found = list(selectors.sentence_nearest(encoder=encoder, vector=_unit([1.0, 0.0, 0.0]), limit=10))
    assert len(found) == 4
    assert all(e.encoder_id == encoder.pk for e in found)


@pytest.mark.django_db(transaction=True)  # CREATE INDEX CONCURRENTLY, as the job runs it, needs autocommit
def test_each_encoder_gets_a_partial_hnsw_cosine_index_that_the_query_uses(embedded_tram_corpus):
    encoder, _ = embedded_tram_corpus
    assert services.encoder_index_ensure(encoder=encoder) is True
    assert services.encoder_index_ensure(encoder=encoder) is False  # idempotent
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s", [encoder.index_name])
        (definition,) = cursor.fetchone()
        assert "USING hnsw" in definition and "vector_cosine_ops" in definition
        assert f"encoder_id = {encoder.pk}" in definition
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # 4 rows: make the planner show it can use the index
        cursor.execute("SET LOCAL enable_sort = off")  # ... rather than any other index plus a sort (seen after other tests' rows)
        queryset = selectors.sentence_nearest(encoder=encoder, vector=_unit([1.0, 0.0, 0.0]), limit=2)
        plan = queryset.explain()
    assert encoder.index_name in plan


def test_registering_an_encoder_with_another_dimension_is_refused(db):
    services.encoder_get_or_create(name="toy", dimensions=3)
    with pytest.raises(ValueError, match="registered with 3 dimensions"):
        services.encoder_get_or_create(name="toy", dimensions=4)


def test_an_index_build_gets_the_memory_its_graph_needs_up_to_the_setting(settings):
    settings.EMBEDDING_INDEX_BUILD_MEMORY_MB = 2048
    assert services.index_build_memory_mb(20_000, 384) == 59  # the embedded server's 64 MB hold it
    assert services.index_build_memory_mb(200_000, 384) == 586
    assert services.index_build_memory_mb(1_000_000, 384) == 2048  # capped (2,930 MB needed)


def _watch_index_builds(monkeypatch, seen: list[str]) -> None:
    """Record ``maintenance_work_mem`` as each ``CREATE INDEX`` starts, on every cursor of this process."""
    execute = connection.cursor().__class__.execute

    def watch(self, sql, params=None):
        if "CREATE INDEX" in str(sql):
            execute(self, "SHOW maintenance_work_mem")
            seen.append(self.fetchone()[0])
        return execute(self, sql, params)

    monkeypatch.setattr(connection.cursor().__class__, "execute", watch)


@pytest.mark.django_db(transaction=True)
def test_a_large_build_raises_maintenance_work_mem_for_itself_only(embedded_tram_corpus, monkeypatch):
    encoder, _ = embedded_tram_corpus
    seen = []
    monkeypatch.setattr(services, "index_build_memory_mb", lambda vectors, dimensions: 300)
    _watch_index_builds(monkeypatch, seen)
    with connection.cursor() as cursor:
        cursor.execute("SHOW maintenance_work_mem")
        (before,) = cursor.fetchone()
    assert services.encoder_index_ensure(encoder=encoder) is True
    assert seen == ["300MB"]
    with connection.cursor() as cursor:
        cursor.execute("SHOW maintenance_work_mem")
        assert cursor.fetchone() == (before,)  # the session's own again


@pytest.mark.django_db(transaction=True)
def test_a_mining_index_build_also_gets_the_memory_its_graph_needs_for_itself_only(embedded_tram_corpus, monkeypatch):
    """The mining jobs' document and sequence indexes went on disk past the embedded server's 64 MB (60,000 document
    vectors: 69 s), as the embedding job's did before it raised the memory."""
    from alignment.mining import search_backend
    from alignment.models import SentenceEmbedding

    encoder, _ = embedded_tram_corpus
    seen, sizes = [], []
    monkeypatch.setattr(search_backend, "index_build_memory_mb", lambda vectors, dimensions: sizes.append((vectors, dimensions)) or 300)
    _watch_index_builds(monkeypatch, seen)
    with connection.cursor() as cursor:
        cursor.execute("SHOW maintenance_work_mem")
        (before,) = cursor.fetchone()
    table = SentenceEmbedding._meta.db_table
    search_backend.partial_hnsw_index("mining_memory_probe", table, int(encoder.dimensions), "encoder_id", encoder.pk)
    assert seen == ["300MB"] and sizes == [(SentenceEmbedding.objects.filter(encoder=encoder).count(), int(encoder.dimensions))]
    with connection.cursor() as cursor:
        cursor.execute("SHOW maintenance_work_mem")
        assert cursor.fetchone() == (before,)  # the session's own again
        cursor.execute("DROP INDEX mining_memory_probe")
