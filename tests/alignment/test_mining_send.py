"""Send to annotation from a mining job: the complex document is the complex side whichever way the job
mined, the pairs live in the complex side's corpus, and the project starts with suggestions for every
simple sentence once the alignment run queued with it has finished."""

from __future__ import annotations

import pytest

from alignment.importing.readers import ImportOptions
from alignment.importing.service import corpus_import_files
from alignment.mining.direction import document_pair_direction, level_more_complex, lha_direction
from alignment.mining.models import MiningJob
from alignment.models import AlignmentRun, CandidateAlignment, Corpus, Document, Sentence
from alignment.services import corpus_get_or_create
from annotation.models import AnnotationProject
from tests.alignment.test_mining import _mine, two_corpora  # noqa: F401 - the fixture is used by name


@pytest.mark.slow
def test_sending_pairs_mined_from_the_simple_corpus_puts_the_complex_document_first_and_aligns_the_pairs(
    two_corpora, run_worker, client, owner
) -> None:
    complex_corpus, simple_corpus = two_corpora
    job, _ = _mine(simple_corpus, complex_corpus, run_worker, k_documents=1, theta_d=0.3, theta_s=0.5)  # from the simple side
    assert job.status == MiningJob.Status.SUCCEEDED and job.pairs_found >= 4
    client.force_login(owner)
    response = client.post(f"/annotate/mining/{job.pk}/send/", {"name": "Mined backwards", "sample": 50, "filters": ""}, follow=True)
    project = AnnotationProject.objects.get(name="Mined backwards")
    pairs = list(project.pairs.select_related("complex_document", "simple_document"))
    assert len(pairs) >= 3  # Library: its simple sentences fail the length filter this way round
    assert all(p.complex_document.corpus_id == complex_corpus.pk and p.simple_document.corpus_id == simple_corpus.pk for p in pairs)
    assert project.corpus_id == complex_corpus.pk and all(p.corpus_id == complex_corpus.pk and p.origin == "mined" for p in pairs)
    assert not simple_corpus.pairs.exists()  # the job's source corpus lists none of them
    assert "corpus &#x27;Complex news&#x27; has the longer sentences" in response.content.decode()

    mined = CandidateAlignment.objects.filter(run=project.suggestion_run).select_related("pair", "simple_sentence", "complex_sentence")
    assert mined.count() >= 4
    assert all(
        c.simple_sentence.document_id == c.pair.simple_document_id and c.complex_sentence.document_id == c.pair.complex_document_id
        for c in mined
    )
    assert any(
        c.simple_sentence.text.startswith("The tram line will go") and c.complex_sentence.text.startswith("The tram line will connect")
        for c in mined
    )

    aligner_run = project.pending_suggestion_run
    assert aligner_run is not None and aligner_run.status == AlignmentRun.Status.QUEUED and aligner_run.corpus_id == complex_corpus.pk
    simple_sentences = Sentence.objects.filter(document__pairs_as_simple__in=pairs)
    mined_suggested = set(mined.values_list("simple_sentence_id", flat=True))
    assert mined_suggested < set(simple_sentences.values_list("pk", flat=True))  # the mined links leave sentences without one
    run_worker(["alignment"])
    project.refresh_from_db()
    assert project.suggestion_run_id == aligner_run.pk and project.pending_suggestion_run_id is None
    suggested = CandidateAlignment.objects.filter(run=project.suggestion_run, label__in=["aligned", "partial"])
    assert set(suggested.values_list("simple_sentence_id", flat=True)) == set(simple_sentences.values_list("pk", flat=True))


def test_levels_decide_the_complex_side_across_corpora_before_sentence_lengths() -> None:
    plain = Corpus(name="plain")
    assert level_more_complex("adv", "ele", [plain]) is True
    assert level_more_complex("ele", "adv", [plain]) is False
    assert level_more_complex("0", "3", [plain]) is True  # numbers as in Newsela: 0 is the original
    assert level_more_complex("adv", "adv", [plain]) is None
    assert level_more_complex("B1", "A2", [plain]) is True  # CEFR is a known scheme
    assert level_more_complex("A2", "adv", [plain]) is None  # two schemes: never compared, sentence lengths decide
    assert level_more_complex("foo", "bar", [plain]) is None  # unknown labels: no decision here
    assert level_more_complex("bar", "foo", [plain, Corpus(name="named", level_order=["bar", "foo"])]) is True
    assert level_more_complex("A2", "B1", [Corpus(name="reversed", level_order=["A2", "B1"])]) is True  # a corpus's order first


def _corpus_with(owner, name: str, files: dict[str, str]) -> Corpus:
    corpus, _ = corpus_get_or_create(name=name, language="en", owner=owner)
    encoded = [(file_name, text.encode()) for file_name, text in files.items()]
    assert not corpus_import_files(corpus=corpus, files=encoded, options=ImportOptions(format="presplit")).errors
    return corpus


def test_lha_direction_follows_the_levels_of_the_two_corpora(owner, db) -> None:
    elementary = _corpus_with(
        owner, "OSE ele", {"Bees-ele.txt": "Honeybees visit thousands of flowers every single day to collect nectar.\n"}
    )
    advanced = _corpus_with(owner, "OSE adv", {"Bees-adv.txt": "Bees visit flowers.\n"})  # shorter, but the level says adv
    job = MiningJob.objects.create(method="lha", source_corpus=elementary, target_corpus=advanced, config={}, config_hash="h")
    direction = lha_direction(job)
    assert not direction.source_is_complex and direction.reason == "level 'adv' is more complex than 'ele'"


def test_muss_direction_is_per_document_pair_and_the_same_in_both_orders(owner, db) -> None:
    corpus = _corpus_with(owner, "Mixed", {
        "A-ele.txt": "Bees make honey.\n", "A-adv.txt": "Honeybees turn the nectar of many flowers into honey.\n",
        "B-adv.txt": "Short one.\n", "C-adv.txt": "A much longer sentence with many more words in it.\n",
    })  # fmt: skip
    job = MiningJob.objects.create(method="muss", source_corpus=corpus, target_corpus=corpus, config={}, config_hash="m")
    document = {d.external_id + "-" + d.level: d for d in Document.objects.filter(corpus=corpus)}
    assert document_pair_direction(job, document["A-ele"], document["A-adv"]).source_is_complex is False
    assert document_pair_direction(job, document["A-adv"], document["A-ele"]).source_is_complex is True
    by_length = document_pair_direction(job, document["B-adv"], document["C-adv"])
    assert not by_length.source_is_complex and "longer sentences" in by_length.reason
    assert document_pair_direction(job, document["C-adv"], document["B-adv"]).source_is_complex
