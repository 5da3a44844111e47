"""Huge pairs are aligned block by block: bounded work per step, resumable inside a pair, cancellable between blocks."""

from __future__ import annotations

import pytest

from alignment.aligning.measures import run_measure
from alignment.aligning.service import alignment_run_cancel, alignment_run_create, alignment_run_execute
from alignment.importing.readers import ImportOptions
from alignment.importing.service import corpus_import_files
from alignment.jobs.slices import SliceOver, TimeSlice
from alignment.models import AlignedPair, AlignmentRun, CandidateAlignment, PairBlock
from alignment.services import corpus_get_or_create
from tests.alignment.conftest import synthetic_sentences

LEXICAL = ["tfidf_cosine", "jaccard"]
CONFIG = {"measure": "tfidf_cosine", "null_score": 0.15, "paragraph_variant": "none"}
BLOCK = 32  # rows per block with the settings of the ``blocks`` fixture
pytestmark = pytest.mark.slow  # each aligns a pair of 400-800 x 600-1,200 sentences: 5-15 s


def huge_texts(count: int) -> tuple[list[str], list[str], dict[int, int]]:
    """``count`` complex sentences, a simple one for two of every three (shortened), and simple index -> complex partner."""
    complex_sentences = synthetic_sentences(count)
    simple, partner = [], {}
    for i, sentence in enumerate(complex_sentences):
        if i % 3 != 2:
            words = sentence.split()
            partner[len(simple)] = i
            simple.append(" ".join(words[:2] + words[-3:]))  # "The council opened on day 17."
    return simple, complex_sentences, partner


@pytest.fixture
def huge_pair(owner):
    def make(count: int):
        corpus, _ = corpus_get_or_create(name=f"Huge {count}", language="en", owner=owner)
        simple, complex_sentences, partner = huge_texts(count)
        files = [("Book-adv.txt", "\n".join(complex_sentences).encode()), ("Book-ele.txt", "\n".join(simple).encode())]
        report = corpus_import_files(corpus=corpus, files=files, options=ImportOptions(format="presplit"))
        assert not report.errors, report.errors
        return corpus, partner

    return make


@pytest.fixture
def blocks(settings):
    settings.ALIGN_BLOCK_MIN_CELLS = 10_000
    settings.ALIGN_BLOCK_ROWS = 288  # 32 rows per block for the untrained CRF, which merges up to 3 sentences (288 / 3**2)
    settings.ALIGN_BLOCK_MAX_COLS = 160
    return settings


def _execute(run: AlignmentRun, time_slice: TimeSlice | None = None) -> int:
    """Run it as the worker does, slice after slice (the task wrapper requeues on SliceOver); the number of slices."""
    slices = 0
    while True:
        slices += 1
        try:
            alignment_run_execute(run_id=run.pk, build_measure=run_measure, time_slice=time_slice)
            return slices
        except SliceOver:
            AlignmentRun.objects.get(pk=run.pk).mark_yielded()


def _links(run: AlignmentRun) -> set[tuple[int, int]]:
    rows = CandidateAlignment.objects.filter(run=run).exclude(label="not_aligned")
    return set(rows.values_list("simple_sentence__index", "complex_sentence__index"))


def test_a_pair_past_the_limit_is_aligned_block_by_block_and_finds_its_partners(huge_pair, blocks):
    corpus, partner = huge_pair(1200)  # 800 x 1,200 = 960,000 cells
    run = alignment_run_create(corpus=corpus, aligner_config=CONFIG, measures=LEXICAL)
    _execute(run)
    run.refresh_from_db()
    assert run.status == AlignmentRun.Status.SUCCEEDED, run.error
    plan = list(PairBlock.objects.filter(run=run).order_by("index"))
    assert len(plan) == 25 and all(block.done for block in plan)  # 800 / 32
    assert [block.rows[0] for block in plan] == list(range(0, 800, BLOCK)) and plan[-1].rows[1] == 800
    assert all(sum(end - start for start, end in block.cols) <= 160 for block in plan)
    aligned = AlignedPair.objects.get(run=run)
    assert (aligned.simple_count, aligned.complex_count, len(aligned.viterbi)) == (800, 1200, 800)
    assert aligned.matrices == b""  # no heatmap of a pair this size
    found = _links(run)
    recovered = sum((j, i) in found for j, i in partner.items())
    assert recovered / len(partner) >= 0.95, f"{recovered} of {len(partner)} partners"
    groups = CandidateAlignment.objects.filter(run=run, group_index__isnull=False).values_list("group_index", "simple_sentence__index")
    simple_of_group: dict[int, set[int]] = {}
    for group, simple in groups:
        simple_of_group.setdefault(group, set()).add(simple // BLOCK)
    assert all(len(block_numbers) == 1 for block_numbers in simple_of_group.values()), "group numbers are unique across blocks"
    assert (
        run.pairs_done == 1 and run.sentences_done == 2000 and run.candidates_written == CandidateAlignment.objects.filter(run=run).count()
    )


def test_a_huge_pair_gives_its_worker_back_between_blocks_and_resumes_where_it_stopped(huge_pair, blocks):
    corpus, _ = huge_pair(600)
    whole = alignment_run_create(corpus=corpus, aligner_config=CONFIG, measures=LEXICAL)
    _execute(whole)
    sliced = alignment_run_create(corpus=corpus, aligner_config=CONFIG, measures=LEXICAL)
    slices = _execute(sliced, TimeSlice(1e-9))  # over after every block
    # one block per slice; then the pair is stored (and the slice, checked between pairs, is over again); then the run ends
    assert slices == PairBlock.objects.filter(run=sliced).count() + 2
    sliced.refresh_from_db()
    assert sliced.status == AlignmentRun.Status.SUCCEEDED and sliced.slices == slices - 1
    assert _links(sliced) == _links(whole)
    assert CandidateAlignment.objects.filter(run=sliced).count() == CandidateAlignment.objects.filter(run=whole).count()
    viterbi = AlignedPair.objects.filter(run__in=[whole, sliced]).values_list("viterbi", flat=True)
    assert viterbi[0] == viterbi[1]


def test_cancel_stops_a_huge_pair_after_the_block_in_flight_and_a_resume_continues_there(huge_pair, blocks, monkeypatch):
    corpus, _ = huge_pair(600)
    run = alignment_run_create(corpus=corpus, aligner_config=CONFIG, measures=LEXICAL)
    from alignment.aligning import service

    stored = service.store_block

    def store_then_cancel(run_id, *args, **kwargs):
        stored(run_id, *args, **kwargs)
        if PairBlock.objects.filter(run_id=run_id, done=True).count() == 2:
            alignment_run_cancel(run=AlignmentRun.objects.get(pk=run_id))  # a user presses Cancel during block 2

    monkeypatch.setattr(service, "store_block", store_then_cancel)
    _execute(run)
    run.refresh_from_db()
    assert run.status == AlignmentRun.Status.CANCELLED
    assert PairBlock.objects.filter(run=run, done=True).count() == 2, "stopped after the block in flight"
    assert not AlignedPair.objects.filter(run=run).exists()
    monkeypatch.setattr(service, "store_block", stored)
    from alignment.aligning.service import alignment_run_retry

    alignment_run_retry(run=run)
    _execute(run)
    run.refresh_from_db()
    assert run.status == AlignmentRun.Status.SUCCEEDED and run.pairs_done == 1
    assert PairBlock.objects.filter(run=run).count() == PairBlock.objects.filter(run=run, done=True).count() == 13  # ceil(400 / 32)


def test_cancel_while_planning_a_huge_pair_stops_before_any_block(huge_pair, blocks, monkeypatch):
    corpus, _ = huge_pair(600)
    run = alignment_run_create(corpus=corpus, aligner_config=CONFIG, measures=LEXICAL)
    from models_ml.aligning import blockwise

    planned = blockwise.plan_blocks

    def plan_while_cancelled(*args, should_stop, **kwargs):
        AlignmentRun.objects.filter(pk=run.pk).update(cancel_requested=True)
        return planned(*args, should_stop=should_stop, **kwargs)

    monkeypatch.setattr(blockwise, "plan_blocks", plan_while_cancelled)
    _execute(run)
    run.refresh_from_db()
    assert run.status == AlignmentRun.Status.CANCELLED and not PairBlock.objects.filter(run=run).exists()


def test_a_document_over_the_sentence_limit_is_refused_naming_the_file_and_nothing_is_stored(owner, settings):
    settings.IMPORT_MAX_DOCUMENT_SENTENCES = 500
    corpus, _ = corpus_get_or_create(name="Too long", language="en", owner=owner)
    files = [("Long-adv.txt", "\n".join(synthetic_sentences(501)).encode()), ("Short-adv.txt", b"One sentence here.\n")]
    report = corpus_import_files(corpus=corpus, files=files, options=ImportOptions(format="presplit"))
    [error] = report.errors
    assert error.file == "Long-adv.txt"
    assert "Long-adv.txt" in error.error and "501 sentences" in error.error and "at most 500" in error.error
    assert "IMPORT_MAX_DOCUMENT_SENTENCES" in error.error
    assert list(corpus.documents.values_list("external_id", flat=True)) == ["Short"]
