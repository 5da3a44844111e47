"""Alignment runs on awkward inputs: defined behaviour for each, in the running app."""

from __future__ import annotations

import numpy as np
import pytest

from alignment.aligning.measures import run_measure
from alignment.aligning.scoring import HEATMAP_MAX_CELLS, unpack_matrices
from alignment.aligning.service import alignment_run_create, alignment_run_execute
from alignment.importing.readers import ImportOptions
from alignment.importing.service import corpus_import_files
from alignment.models import AlignedPair, CandidateAlignment, Document, DocumentPair, PairBlock, Paragraph
from alignment.services import corpus_get_or_create
from tests.alignment.conftest import synthetic_sentences

LEXICAL = ["tfidf_cosine", "char3_tfidf_cosine", "jaccard"]


def _corpus(owner, name: str, language: str, files: dict[str, str]):
    corpus, _ = corpus_get_or_create(name=name, language=language, owner=owner)
    report = corpus_import_files(
        corpus=corpus, files=[(f, t.encode()) for f, t in files.items()], options=ImportOptions(format="presplit", language=language)
    )
    assert not report.errors, report.errors
    return corpus


def _run(corpus, config: dict, measures=LEXICAL):
    run = alignment_run_create(corpus=corpus, aligner_config=config, measures=measures)
    run = alignment_run_execute(run_id=run.pk, build_measure=run_measure)
    assert run.status == "succeeded", run.error
    return run


def _predicted(run) -> set[tuple[int, int]]:
    rows = CandidateAlignment.objects.filter(run=run).exclude(label="not_aligned")
    return set(rows.values_list("simple_sentence__index", "complex_sentence__index"))


def test_a_document_without_sentences_gives_an_empty_result_not_an_error(owner, tram_corpus):
    adv = tram_corpus.documents.get(level="adv")
    empty = Document.objects.create(corpus=tram_corpus, external_id="Tram", level="blank", raw_text="", content_hash="e", text_hash="e")
    Paragraph.objects.create(document=empty, index=0, char_start=0, char_end=0)
    pair = DocumentPair.objects.create(corpus=tram_corpus, complex_document=adv, simple_document=empty)
    run = alignment_run_create(corpus=tram_corpus, pairs=[pair], aligner_config={"measure": "jaccard"}, measures=["jaccard"])
    run = alignment_run_execute(run_id=run.pk, build_measure=run_measure)
    assert run.status == "succeeded" and run.pairs_done == 1 and run.candidates_written == 0
    stored = AlignedPair.objects.get(run=run)
    assert (stored.simple_count, stored.complex_count, stored.viterbi) == (0, adv.sentences.count(), [])


def test_one_sentence_documents_align_their_only_sentences(owner):
    corpus = _corpus(
        owner,
        "One",
        "en",
        {
            "Solo-adv.txt": "The committee postponed its decision on the new stadium until next spring.\n",
            "Solo-ele.txt": "The committee will decide about the stadium next spring.\n",
        },
    )
    run = _run(corpus, {"measure": "tfidf_cosine", "null_score": 0.15})
    assert _predicted(run) == {(0, 0)}


def test_identical_documents_align_one_to_one_on_the_diagonal(owner):
    text = "\n".join(synthetic_sentences(12)) + "\n"
    corpus = _corpus(owner, "Twins", "en", {"Twin-adv.txt": text, "Twin-ele.txt": text})
    run = _run(corpus, {"measure": "tfidf_cosine", "null_score": 0.15})
    assert _predicted(run) == {(i, i) for i in range(12)}
    assert set(CandidateAlignment.objects.filter(run=run, label="aligned").values_list("crf_marginal", flat=True)) != set()
    assert min(CandidateAlignment.objects.filter(run=run).exclude(label="not_aligned").values_list("crf_marginal", flat=True)) > 0.9


def test_a_language_the_encoder_was_not_trained_on_still_aligns_with_character_measures(owner):
    """MiniLM is English; Greek text becomes mostly unknown word pieces, so its cosines are weak.

    Defined behaviour: the run completes, every candidate carries the embedding score for
    inspection, and a character measure as the CRF's measure finds the right pairs.
    """
    corpus = _corpus(
        owner,
        "Greek",
        "el",
        {
            "Nea-adv.txt": "Το δημοτικό συμβούλιο ενέκρινε νέα γραμμή τραμ την Τρίτη.\nΗ κατασκευή ξεκινά την άνοιξη και θα διαρκέσει τρία χρόνια.\n",
            "Nea-ele.txt": "Η πόλη θα φτιάξει νέα γραμμή τραμ.\nΗ κατασκευή ξεκινά την άνοιξη.\n",
        },
    )
    run = _run(corpus, {"measure": "char3_tfidf_cosine", "null_score": 0.2}, measures=["char3_tfidf_cosine", "embedding_cosine"])
    assert _predicted(run) == {(0, 0), (1, 1)}
    assert all("embedding_cosine" in scores for scores in CandidateAlignment.objects.filter(run=run).values_list("scores", flat=True))


@pytest.mark.slow
def test_two_thousand_sentence_documents_stay_bounded(owner):
    """2,000 x 2,000 without paragraph alignment: pruned CRF, no stored heatmap, a bounded candidate set."""
    sentences = synthetic_sentences(2000)
    text = "\n".join(sentences) + "\n"
    corpus = _corpus(owner, "Long", "en", {"Long-adv.txt": text, "Long-ele.txt": text})
    run = _run(corpus, {"measure": "jaccard", "null_score": 0.5, "paragraph_variant": "none"}, measures=["jaccard"])
    stored = AlignedPair.objects.get(run=run)
    assert HEATMAP_MAX_CELLS < 2000 * 2000 and stored.matrices == b"" and unpack_matrices(stored.matrices) == {}
    assert len(stored.viterbi) == 2000
    # aligned block by block (past ALIGN_BLOCK_MIN_CELLS): each block adds its columns' best pairs and the pairs its CRF gives
    # at least 5 % (at most 20 a row): linear in the pair, not m x n
    blocks = PairBlock.objects.filter(run=run).count()
    assert blocks > 1 and run.candidates_written <= (3 + 1 + 20) * 2000 + blocks * 384
    predicted = _predicted(run)
    assert len(predicted) >= 1990 and np.mean([s == c for s, c in predicted]) > 0.99
