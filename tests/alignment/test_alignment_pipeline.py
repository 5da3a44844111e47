"""A run's reads and writes on its helper thread (alignment/aligning/pipeline.py) store what the run's own thread stores.

Outside a transaction a run reads ahead and stores behind on a helper thread with its own connection; inside one
(this suite's rolled-back tests) it does both inline. Both must leave the same rows, an error on the helper must
reach the run (marked failed, the pairs stored before it kept), and the helper's connection must be closed.
"""

from __future__ import annotations

import time

import pytest
from django.db import connection, transaction

from alignment.aligning import pipeline, storing
from alignment.aligning.measures import run_measure
from alignment.aligning.reading import pair_read
from alignment.aligning.service import alignment_run_create, alignment_run_execute
from alignment.importing.readers import ImportOptions
from alignment.importing.service import corpus_import_files
from alignment.jobs import helper_io
from alignment.models import AlignedPair, AlignmentRun, CandidateAlignment, DocumentPair, ParagraphAlignment
from alignment.services import corpus_get_or_create
from tests.alignment.conftest import LEXICAL, TFIDF_CONFIG, synthetic_sentences

pytestmark = pytest.mark.django_db(transaction=True)  # a helper thread's connection sees only committed rows

PAIRS = 9  # more than two read batches (1 + READ_BATCH), and more than one store batch below
BACKEND_EXIT_POLLS = 500  # 10 ms apart: a hang guard while a closed backend leaves pg_stat_activity


@pytest.fixture
def nine_pairs(owner):
    corpus, _ = corpus_get_or_create(name="Nine", language="en", owner=owner)
    sentences = synthetic_sentences(PAIRS * 8)
    files = []
    for number in range(PAIRS):
        own = sentences[number * 8 : number * 8 + 8]
        complex_text = "\n".join(own[:4]) + "\n\n" + "\n".join(own[4:])
        simple_text = "\n".join(sentence.split(",")[0] for sentence in own[::2])
        files += [(f"Story{number}-adv.txt", complex_text.encode()), (f"Story{number}-ele.txt", simple_text.encode())]
    assert not corpus_import_files(corpus=corpus, files=files, options=ImportOptions(format="presplit")).errors
    return corpus


@pytest.fixture
def helpers_seen(monkeypatch):
    """``threaded`` of every RunIO made, so a test knows which path it ran."""
    seen: list[bool] = []
    made = helper_io.RunIO.__init__

    def record(self):
        made(self)
        seen.append(self.threaded)

    monkeypatch.setattr(helper_io.RunIO, "__init__", record)
    monkeypatch.setattr(storing.PendingWrites, "MAX_PAIRS", 4)  # three batches for nine pairs
    return seen


def _stored(run: AlignmentRun) -> dict:
    candidates = CandidateAlignment.objects.filter(run=run).order_by("pair_id", "simple_sentence_id", "complex_sentence_id")
    return {
        "candidates": list(candidates.values_list("pair_id", "simple_sentence_id", "complex_sentence_id", "label", "score", "disagreement", "scores")),
        "pairs": list(AlignedPair.objects.filter(run=run).order_by("pair_id").values_list("pair_id", "simple_count", "complex_count", "viterbi", "matrices")),
        "paragraphs": list(ParagraphAlignment.objects.filter(run=run).order_by("pk").values_list("pair_id", "simple_paragraphs", "complex_paragraphs")),
    }  # fmt: skip


def _backends() -> set[int]:
    """The clients' server processes on this test database, autovacuum's left out (by pid: a connection an earlier
    test left may close meanwhile, so a count would not say whose it was)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend'")
        return {pid for (pid,) in cursor.fetchall()}


def _new_backends(before: set[int]) -> set[int]:
    """Backends not in ``before``, once a closed one has had time to leave pg_stat_activity (it leaves after its
    process exits, a moment after the client closed the socket)."""
    for _ in range(BACKEND_EXIT_POLLS):
        new = _backends() - before
        if not new:
            return new
        time.sleep(0.01)
    return new


def test_the_helper_thread_stores_exactly_what_the_inline_path_stores(nine_pairs, helpers_seen):
    backends = _backends()
    threaded = alignment_run_create(corpus=nine_pairs, aligner_config=TFIDF_CONFIG, measures=LEXICAL)
    alignment_run_execute(run_id=threaded.pk, build_measure=run_measure)
    assert not _new_backends(backends)  # the helper closed its own connection
    inline = alignment_run_create(corpus=nine_pairs, aligner_config=TFIDF_CONFIG, measures=LEXICAL)
    with transaction.atomic():
        alignment_run_execute(run_id=inline.pk, build_measure=run_measure)
    assert helpers_seen == [True, False]
    threaded.refresh_from_db()
    inline.refresh_from_db()
    assert threaded.status == inline.status == "succeeded"
    assert threaded.pairs_done == inline.pairs_done == PAIRS and threaded.label_counts == inline.label_counts
    first, second = _stored(threaded), _stored(inline)
    assert len(first["pairs"]) == PAIRS and len(first["candidates"]) == threaded.candidates_written > PAIRS
    assert first == second
    assert all(matrices for *_, matrices in first["pairs"])  # the heatmaps went through COPY as bytea


def test_an_error_on_the_helper_fails_the_run_and_keeps_the_batches_stored_before_it(nine_pairs, helpers_seen, monkeypatch):
    real_store = storing.store_outcomes
    batches: list[int] = []

    def fail_second_batch(run_id, items):
        batches.append(len(items))
        if len(batches) == 2:
            raise RuntimeError("disk full while storing the second batch")
        real_store(run_id, items)

    monkeypatch.setattr(storing, "store_outcomes", fail_second_batch)
    run = alignment_run_create(corpus=nine_pairs, aligner_config=TFIDF_CONFIG, measures=LEXICAL)
    with pytest.raises(RuntimeError, match="disk full"):
        alignment_run_execute(run_id=run.pk, build_measure=run_measure)
    run.refresh_from_db()
    assert helpers_seen == [True]
    assert run.status == "failed" and "disk full while storing the second batch" in run.error
    assert batches == [4, 4]  # nothing more was stored after the failed batch
    assert run.pairs_done == AlignedPair.objects.filter(run=run).count() == 4  # the first batch, whole
    assert not CandidateAlignment.objects.filter(run=run).exclude(pair__aligned_pairs__run=run).exists()  # nothing half-written


@pytest.mark.parametrize(("budget", "per_batch"), [(10, 1), (30, 2)])  # each of the nine pairs has 12 sentences
def test_pairs_past_the_sentence_budget_are_read_in_a_later_batch_in_their_order(nine_pairs, monkeypatch, budget, per_batch):
    monkeypatch.setattr(pipeline, "READ_AHEAD_SENTENCES", budget)
    read_counts: list[int] = []
    real_read = pipeline.pairs_read

    def record(pairs, encoder_name, max_sentences):
        reads = real_read(pairs, encoder_name, max_sentences)
        read_counts.append(len(reads))
        return reads

    monkeypatch.setattr(pipeline, "pairs_read", record)
    pending = DocumentPair.objects.filter(corpus=nine_pairs).order_by("pk")
    io = helper_io.RunIO()
    try:
        assert io.threaded
        got = list(pipeline.read_ahead(pending, "", io))
    finally:
        io.close()
    assert [pair.pk for pair, _ in got] == [pair.pk for pair in pending]
    for pair, read in got:
        alone = pair_read(pair.simple_document_id, pair.complex_document_id, "")
        assert (read.simple.ids, read.complex_side.ids, read.complex_side.texts) == (
            alone.simple.ids,
            alone.complex_side.ids,
            alone.complex_side.texts,
        )
    assert read_counts == [1] + [per_batch] * ((PAIRS - 1) // per_batch) + ([(PAIRS - 1) % per_batch] if (PAIRS - 1) % per_batch else [])
