"""Flipping a corpus's level pairs (alignment/pairs_flip.py): the service, the command and the corpus page's button."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from alignment.aligning import service as aligning
from alignment.aligning.measures import run_measure
from alignment.aligning.reading import pair_read
from alignment.aligning.scoring import PairScorer
from alignment.aligning.storing import PendingWrites
from alignment.errors import ServiceError
from alignment.importing.readers import ImportOptions
from alignment.importing.service import corpus_import_files
from alignment.models import AlignedPair, AlignmentRun, CandidateAlignment, Corpus, DocumentPair, ParagraphAlignment
from alignment.pairs_flip import corpus_pairs_flip
from alignment.services import corpus_get_or_create
from annotation.models import Assignment, LabelEvent
from annotation.services import project_create
from tests.alignment.test_import_direction import GERMAN_A2, GERMAN_C2, directions
from tests.webapp.access_world import database_fingerprint

TFIDF = {"measure": "tfidf_cosine", "null_score": 0.15, "paragraph_variant": "none"}


@pytest.fixture
def wrong_way(owner) -> Corpus:
    """Two German articles imported with A2 as the complex side (the issue's mistake), aligned once."""
    corpus, _ = corpus_get_or_create(name="Wetter", language="de", owner=owner)
    files = []
    for article in ("Wetter", "Regen"):
        files += [(f"{article}-A2.txt", GERMAN_A2.encode()), (f"{article}-C2.txt", GERMAN_C2.replace("Harz", f"Harz ({article})").encode())]
    corpus_import_files(corpus=corpus, files=files, options=ImportOptions(language="de", level_order=("A2", "C2")))
    assert directions() == {("Wetter", "A2", "C2"), ("Regen", "A2", "C2")}
    run = aligning.alignment_run_create(corpus=corpus, aligner_config=TFIDF, measures=["jaccard"])
    aligning.alignment_run_execute(run_id=run.pk, build_measure=run_measure)
    assert AlignedPair.objects.filter(run=run).count() == 2 and CandidateAlignment.objects.filter(run=run).exists()
    corpus.refresh_from_db()
    return corpus


@pytest.mark.slow
def test_a_corpus_without_labels_is_flipped_its_old_results_go_and_a_new_run_aligns_it(wrong_way, owner):
    old_run = AlignmentRun.objects.get()
    pair_ids = set(DocumentPair.objects.values_list("pk", flat=True))
    outcome = corpus_pairs_flip(corpus=wrong_way, created_by=owner)
    assert (outcome.order_before, outcome.order_after, outcome.pairs_flipped, outcome.results_removed) == (["A2", "C2"], ["C2", "A2"], 2, 2)
    assert directions() == {("Wetter", "C2", "A2"), ("Regen", "C2", "A2")}
    assert set(DocumentPair.objects.values_list("pk", flat=True)) == pair_ids  # the same pairs, turned round: links keep working
    wrong_way.refresh_from_db()
    assert wrong_way.level_order == ["C2", "A2"]
    # the old direction's results are gone, and the old run's scope and counts no longer claim them
    assert not CandidateAlignment.objects.exists() and not AlignedPair.objects.exists() and not ParagraphAlignment.objects.exists()
    old_run.refresh_from_db()
    assert old_run.status == "succeeded" and not old_run.pairs.exists()
    assert (old_run.pairs_total, old_run.pairs_done, old_run.candidates_written, old_run.label_counts) == (0, 0, 0, {})
    # the new run aligns the new direction: its simple sentences are the A2 documents'
    run = outcome.alignment_run
    assert run.status == "queued" and set(run.pairs.values_list("pk", flat=True)) == pair_ids
    aligning.alignment_run_execute(run_id=run.pk, build_measure=run_measure)
    candidates = CandidateAlignment.objects.filter(run=run)
    assert candidates.exists() and set(candidates.values_list("simple_sentence__document__level", flat=True)) == {"A2"}
    # a later import follows the flipped order, and flipping again restores the first direction
    corpus_import_files(
        corpus=wrong_way,
        files=[("Sturm-A2.txt", GERMAN_A2.encode()), ("Sturm-C2.txt", b"Ein Sturm zieht auf.")],
        options=ImportOptions(language="de"),
    )
    assert ("Sturm", "C2", "A2") in directions()
    assert corpus_pairs_flip(corpus=wrong_way, align=False).order_after == ["A2", "C2"]
    assert directions() == {("Wetter", "A2", "C2"), ("Regen", "A2", "C2"), ("Sturm", "A2", "C2")}


def test_a_corpus_whose_pairs_have_labels_is_not_flipped_and_nothing_changes(wrong_way, owner):
    pair = DocumentPair.objects.get(complex_document__external_id="Wetter")
    project = project_create(name="Wetter labels", corpus=wrong_way, created_by=owner, pairs=[pair])
    LabelEvent.objects.create(
        project=project, pair=pair, annotator=owner, new_label="aligned",
        simple_sentence=pair.simple_document.sentences.first(), complex_sentence=pair.complex_document.sentences.first(),
    )  # fmt: skip
    before = database_fingerprint()
    with pytest.raises(ServiceError) as refused:
        corpus_pairs_flip(corpus=wrong_way, created_by=owner)
    message = str(refused.value)
    assert message.startswith("corpus 'Wetter' was not flipped: annotation depends on its direction (")
    assert f"1 label event on pair {pair.pk} in project 'Wetter labels'" in message
    assert f"annotation project 'Wetter labels' holds pair {pair.pk}" in message
    assert "Labels, adjudications and assignments name each sentence pair's simple and complex side" in message
    assert message.endswith("; nothing was changed")
    assert database_fingerprint() == before


def test_an_assignment_in_progress_refuses_the_flip_too(wrong_way, owner):
    pairs = list(DocumentPair.objects.order_by("pk"))
    project = project_create(name="Wetter work", corpus=wrong_way, created_by=owner, pairs=pairs)
    Assignment.objects.create(project=project, pair=pairs[1], annotator=owner)
    with pytest.raises(ServiceError, match=rf"1 assignment on pair {pairs[1].pk} in project 'Wetter work'"):
        corpus_pairs_flip(corpus=wrong_way)
    assert directions() == {("Wetter", "A2", "C2"), ("Regen", "A2", "C2")}


def test_a_result_a_worker_computed_before_the_flip_is_not_stored_after_it(wrong_way):
    run = aligning.alignment_run_create(corpus=wrong_way, aligner_config=TFIDF, measures=["jaccard"])
    stale = DocumentPair.objects.get(complex_document__external_id="Wetter")  # what the worker read: A2 complex
    DocumentPair.objects.filter(pk=stale.pk).update(complex_document=stale.simple_document, simple_document=stale.complex_document)
    aligner = aligning.aligner_from_run_config(run.config)
    scorer = PairScorer(aligner, run.measures, lambda name: run_measure(name, aligner), top_k=3)
    writes = PendingWrites(run.pk)
    read = pair_read(stale.simple_document_id, stale.complex_document_id, aligner.config.encoder)
    aligning._align_one(run, run, stale, read, scorer, None, writes)
    writes.flush()
    assert not AlignedPair.objects.filter(run=run).exists() and not CandidateAlignment.objects.filter(run=run).exists()


def test_the_command_flips_or_says_why_not(wrong_way, owner):
    out = StringIO()
    call_command("flip_pairs", corpus="Wetter", no_align=True, stdout=out)
    assert "Flipped 2 pair(s) of corpus 'Wetter': level order (most complex first) was A2, C2, is now C2, A2" in out.getvalue()
    with pytest.raises(CommandError, match="--corpus: no corpus called 'Nope'"):
        call_command("flip_pairs", corpus="Nope")
    project_create(name="Wetter labels", corpus=wrong_way, created_by=owner)
    with pytest.raises(CommandError, match="corpus 'Wetter' was not flipped: annotation depends on its direction"):
        call_command("flip_pairs", corpus="Wetter")


def test_the_corpus_page_shows_the_direction_and_its_owner_flips_it_with_one_button(client, wrong_way, owner):
    client.force_login(owner)
    page = re.sub(r"\s+", " ", client.get(reverse("alignment:corpus_detail", args=[wrong_way.pk])).content.decode())
    assert 'Complex → simple: <span class="level">A2</span> → <span class="level">C2</span>' in page
    assert f'action="{reverse("alignment:corpus_flip", args=[wrong_way.pk])}"' in page and 'id="flip-pairs"' in page
    response = client.post(reverse("alignment:corpus_flip", args=[wrong_way.pk]), follow=True)
    page = re.sub(r"\s+", " ", response.content.decode())
    assert "Flipped 2 pairs: C2 → A2 (complex → simple); 2 alignment results of the old direction removed; alignment run #" in page
    assert 'Complex → simple: <span class="level">C2</span> → <span class="level">A2</span>' in page
    assert directions() == {("Wetter", "C2", "A2"), ("Regen", "C2", "A2")}


def test_a_refused_flip_on_the_page_says_why_and_changes_nothing(client, wrong_way, owner):
    project_create(name="Wetter labels", corpus=wrong_way, created_by=owner)
    client.force_login(owner)
    before = database_fingerprint()
    response = client.post(reverse("alignment:corpus_flip", args=[wrong_way.pk]), follow=True)
    assert "corpus &#x27;Wetter&#x27; was not flipped: annotation depends on its direction" in response.content.decode()
    assert database_fingerprint() == before


def test_a_reader_of_a_shared_corpus_sees_the_direction_but_no_flip_button(client, wrong_way, outsider):
    Corpus.objects.filter(pk=wrong_way.pk).update(is_shared=True)
    client.force_login(outsider)
    page = client.get(reverse("alignment:corpus_detail", args=[wrong_way.pk])).content.decode()
    assert "Complex → simple:" in page and 'id="flip-pairs"' not in page
    assert client.post(reverse("alignment:corpus_flip", args=[wrong_way.pk])).status_code == 403
    assert directions() == {("Wetter", "A2", "C2"), ("Regen", "A2", "C2")}
