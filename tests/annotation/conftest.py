"""Shared fixtures for the annotation tests: an annotator, the tram pair, a two-annotator team, a suggestion run."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.contrib.auth import get_user_model

import alignment.aligning.service as aligning
from alignment.aligning.measures import run_measure
from alignment.models import AlignmentRun, Document, DocumentPair, Sentence
from annotation import services
from annotation.models import AnnotationProject
from models_ml.data.io import GoldPair


@pytest.fixture
def annotator(db):
    return get_user_model().objects.create_user("anna", password="anna-pass-123")


@pytest.fixture
def pair(tram_corpus):
    return DocumentPair.objects.get(corpus=tram_corpus)


@dataclass
class Team:
    """A project over the tram pair with annotators anna and ben both assigned it."""

    project: AnnotationProject
    anna: object
    ben: object
    pair: DocumentPair
    simple: list[Sentence]
    complex_: list[Sentence]

    def label(self, user, simple_index: int, complex_index: int, value: str) -> None:
        services.label_record(
            project=self.project,
            annotator=user,
            pair=self.pair,
            simple_sentence_id=self.simple[simple_index].pk,
            complex_sentence_id=self.complex_[complex_index].pk,
            label=value,
            expected_previous=None,
        )


@pytest.fixture
def team_of_two(tram_corpus, owner, pair, annotator) -> Team:
    """Anna is the ``annotator`` fixture, so a test may ask for both without creating her twice."""
    anna, ben = annotator, get_user_model().objects.create_user("ben", password="b-pass-123")
    project = services.project_create(name="Team", corpus=tram_corpus, created_by=owner, overlap=2)
    for user in (anna, ben):
        services.membership_set(project=project, user=user, role="annotator")
    services.assignments_distribute(project=project)
    simple = list(pair.simple_document.sentences.order_by("index"))
    complex_ = list(pair.complex_document.sentences.order_by("index"))
    return Team(project, anna, ben, pair, simple, complex_)


def tram_project(corpus, owner, annotators: list, name: str) -> tuple[AnnotationProject, DocumentPair, list[int], list[int]]:
    """A project over ``corpus``'s one pair with every annotator assigned it: (project, pair, simple ids, complex ids)."""
    project = services.project_create(name=name, corpus=corpus, created_by=owner, overlap=len(annotators))
    for user in annotators:
        services.membership_set(project=project, user=user, role="annotator")
    services.assignments_distribute(project=project)
    pair = DocumentPair.objects.get(corpus=corpus)
    simple = list(pair.simple_document.sentences.order_by("index").values_list("pk", flat=True))
    complex_ = list(pair.complex_document.sentences.order_by("index").values_list("pk", flat=True))
    return project, pair, simple, complex_


def label_now(project, annotator, pair, simple_id: int, complex_id: int, label: str = "aligned", **options):
    """One first label by ``annotator`` through the service (``expected_previous`` None), as the screen saves it."""
    return services.label_record(
        project=project, annotator=annotator, pair=pair, simple_sentence_id=simple_id, complex_sentence_id=complex_id,
        label=label, expected_previous=None, **options,
    )  # fmt: skip


def lexical_run(corpus, monkeypatch) -> AlignmentRun:
    """``corpus`` aligned by a lexical run (no encoder), in this process (no worker)."""
    monkeypatch.setattr("alignment.jobs.enqueue.defer", lambda *args, **kwargs: None)
    run = aligning.alignment_run_create(
        corpus=corpus,
        aligner_config={"measure": "tfidf_cosine", "null_score": 0.15, "paragraph_variant": "newsela"},
        measures=["tfidf_cosine", "jaccard"],
    )
    run = aligning.alignment_run_execute(run_id=run.pk, build_measure=run_measure)
    assert run.status == AlignmentRun.Status.SUCCEEDED, run.error
    return run


def tiny_gold_pair() -> GoldPair:
    """Three complex sentences, two simple ones, three gold links (one partial): a gold import's smallest case."""
    return GoldPair(
        pair_id="p1", complex_sentences=["A long sentence.", "Another one here.", "A third."], simple_sentences=["Short.", "Two."],
        groups=[], complex_paragraphs=None, simple_paragraphs=None, links=[(0, 0, "aligned"), (1, 0, "partial"), (2, 1, "aligned")],
    )  # fmt: skip


@pytest.fixture
def suggestion_run(tram_corpus, monkeypatch):
    """The tram pair aligned by a lexical run (no encoder), in this process."""
    return lexical_run(tram_corpus, monkeypatch)


def bare_pairs(corpus, count: int, article: str = "a") -> list[DocumentPair]:
    """``count`` pairs of two empty documents each (articles named ``article`` and a number), written directly: for
    what works on a project's pairs, not on their text (giving them out, adding them to a project)."""
    documents = Document.objects.bulk_create(
        Document(
            corpus=corpus,
            external_id=f"{article}{n // 2}",
            level=("adv", "ele")[n % 2],
            raw_text="",
            content_hash=f"{article}{n}",
            text_hash=f"{article}{n}",
        )  # fmt: skip
        for n in range(2 * count)
    )
    return DocumentPair.objects.bulk_create(
        DocumentPair(corpus=corpus, complex_document=documents[2 * n], simple_document=documents[2 * n + 1]) for n in range(count)
    )
