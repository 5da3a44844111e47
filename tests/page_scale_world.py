"""A corpus and project of ``n`` document pairs built in bulk, for the page-scale tests and ``bench/page_scale.py``.

Everything is written with ``bulk_create`` (no services, no per-row saves), so a world of 10,000 pairs takes
seconds. Each pair is an article of two levels (adv -> ele) of ``sentences`` sentences (3 unless asked) in one
paragraph each. One succeeded alignment run covers every pair (its AlignedPair, ParagraphAlignment and ``links``
candidates per simple sentence: the diagonal one, then its next neighbours); one project over every pair suggests from
it, with anna and ben assigned every pair: anna labelled every candidate, ben all but those of the last simple sentence
of unverified pairs (his queue is not empty; the third sentence's diagonal one partial, except in the verified pairs,
where they agree), anna marked hers done, every
fifth pair is verified and every seventh flagged by ben; anna commented on every pair. ``owner`` owns the corpus and manages the project; ``viera`` views it.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from alignment.models import (
    AlignedPair,
    AlignmentRun,
    CandidateAlignment,
    Corpus,
    Document,
    DocumentPair,
    Paragraph,
    ParagraphAlignment,
    Sentence,
)
from annotation.export.models import ExportJob
from annotation.labels import assignments_recount
from annotation.models import AnnotationProject, Assignment, GoldItem, ItemEvent, LabelEvent, PairVerification, ProjectMembership

SENTENCES = 3  # a side, unless world_build is asked for more
CHUNK = 1000  # pairs written per round of bulk inserts


@dataclass
class World:
    owner: object
    anna: object
    ben: object
    viera: object
    corpus: Corpus
    run: AlignmentRun
    project: AnnotationProject
    first_pair: DocumentPair


def _user(name: str, **extra):
    return get_user_model().objects.create_user(name, password=f"{name}-pass-123", **extra)


def _document(corpus: Corpus, index: int, level: str, count: int) -> tuple[Document, Paragraph, list[Sentence]]:
    side = "C" if level == "adv" else "S"
    texts = [f"{side}{index} sentence {k}: the tram line reaches the harbour in year {index + k}." for k in range(count)]
    raw = " ".join(texts)
    document = Document(
        corpus=corpus, external_id=f"article-{index:05d}", title=f"Article {index}", level=level, raw_text=raw,
        content_hash=f"{index}-{level}", text_hash=f"{index}-{level}", source={"file": f"article-{index:05d}-{level}.txt"},
    )  # fmt: skip
    paragraph = Paragraph(document=document, index=0, char_start=0, char_end=len(raw))
    starts = [sum(len(t) + 1 for t in texts[:k]) for k in range(count)]
    sentences = [
        Sentence(
            document=document, paragraph=paragraph, index=k, index_in_paragraph=k, text=text, char_start=start, char_end=start + len(text)
        )
        for k, (text, start) in enumerate(zip(texts, starts, strict=True))
    ]
    return document, paragraph, sentences


def _pairs_write(corpus: Corpus, start: int, stop: int, count: int) -> list[tuple[DocumentPair, list[Sentence], list[Sentence]]]:
    """Documents, paragraphs, sentences and pairs for articles ``start``..``stop``: [(pair, complex sentences, simple sentences)]."""
    built = [(_document(corpus, i, "adv", count), _document(corpus, i, "ele", count)) for i in range(start, stop)]
    sides = [side for article in built for side in article]
    Document.objects.bulk_create([document for document, _, _ in sides])
    for document, paragraph, _ in sides:
        paragraph.document_id = document.pk
    Paragraph.objects.bulk_create([paragraph for _, paragraph, _ in sides])
    for document, paragraph, sentences in sides:
        for sentence in sentences:
            sentence.document_id, sentence.paragraph_id = document.pk, paragraph.pk
    Sentence.objects.bulk_create([s for _, _, sentences in sides for s in sentences], batch_size=5000)
    pairs = DocumentPair.objects.bulk_create(
        DocumentPair(corpus=corpus, complex_document=complex_[0], simple_document=simple[0]) for complex_, simple in built
    )
    return [(pair, complex_[2], simple[2]) for pair, (complex_, simple) in zip(pairs, built, strict=True)]


def _links(count: int, links: int) -> list[tuple[int, int]]:
    """(simple, complex) sentence indexes of a pair's candidates: each simple sentence's diagonal partner, then the next ones."""
    return [(k, (k + j) % count) for k in range(count) for j in range(min(links, count))]


def _run_results(run: AlignmentRun, chunk: list, count: int, links: int) -> None:
    run.pairs.add(*(pair for pair, _, _ in chunk))
    AlignedPair.objects.bulk_create(
        AlignedPair(run=run, pair=pair, simple_count=count, complex_count=count, viterbi=[[k] for k in range(count)], seconds=0.01)
        for pair, _, _ in chunk
    )
    ParagraphAlignment.objects.bulk_create(
        ParagraphAlignment(run=run, pair=pair, simple_paragraphs=[0], complex_paragraphs=[0]) for pair, _, _ in chunk
    )
    CandidateAlignment.objects.bulk_create(
        [
            CandidateAlignment(
                run=run, pair=pair, simple_sentence=simple[k], complex_sentence=complex_[c], scores={"jaccard": 0.8}, score=0.8,
                crf_marginal=0.9 - 0.1 * (k % 3), label="aligned" if k == c else "not_aligned", group_index=k, group_score=0.9,
                disagreement=0.0,
            )
            for pair, complex_, simple in chunk
            for k, c in _links(count, links)
        ],
        batch_size=5000,
    )  # fmt: skip


def _labels(project: AnnotationProject, anna, ben, chunk: list, offset: int, count: int, links: int) -> None:
    now = timezone.now()
    project.pairs.add(*(pair for pair, _, _ in chunk))
    Assignment.objects.bulk_create(
        Assignment(project=project, pair=pair, annotator=user, completed_at=now if user is anna else None)
        for pair, _, _ in chunk
        for user in (anna, ben)
    )
    numbered = list(enumerate(chunk, start=offset))
    events = [
        LabelEvent(
            project=project, pair=pair, annotator=user, simple_sentence=simple[k], complex_sentence=complex_[c],
            new_label="not_aligned" if k != c else "partial" if user is ben and k == 2 and i % 5 else "aligned", seconds_spent=4.0,
        )
        for i, (pair, complex_, simple) in numbered
        for user in (anna, ben)
        for k, c in _links(count, links)
        if user is anna or k < count - 1 or i % 5 == 0  # ben has the last simple sentence of unverified pairs left
    ]  # fmt: skip
    LabelEvent.objects.bulk_create(events, batch_size=5000)
    PairVerification.objects.bulk_create(
        PairVerification(project=project, pair=pair, verified=True, by=project.created_by) for i, (pair, _, _) in numbered if i % 5 == 0
    )
    ItemEvent.objects.bulk_create(
        [ItemEvent(project=project, pair=pair, annotator=ben, kind="flag") for i, (pair, _, _) in numbered if i % 7 == 0]
        + [
            ItemEvent(project=project, pair=pair, annotator=anna, kind="comment", text=f"pair {i}: the third sentence?")
            for i, (pair, _, _) in numbered
        ]
    )


def world_build(n: int, *, name: str = "Scale", sentences: int = SENTENCES, links: int = 1) -> World:
    """``n`` document pairs of ``sentences`` sentences a side with ``links`` candidates per simple sentence, in one corpus
    and one project, as the module docstring says."""
    owner, anna, ben, viera = (
        _user(f"{name.lower()}-owner"),
        _user(f"{name.lower()}-anna"),
        _user(f"{name.lower()}-ben"),
        _user(f"{name.lower()}-viera"),
    )
    corpus = Corpus.objects.create(name=name, language="en", owner=owner, level_order=["adv", "ele"])
    run = AlignmentRun.objects.create(
        corpus=corpus, status=AlignmentRun.Status.SUCCEEDED, config={"measures": ["jaccard"], "aligner": {"measure": "jaccard"}},
        model_version="untrained", pairs_total=n, pairs_done=n, sentences_done=2 * sentences * n, candidates_written=len(_links(sentences, links)) * n,
        label_counts={"aligned": sentences * n}, busy_seconds=0.01 * n, created_by=owner,
        started_at=timezone.now(), finished_at=timezone.now(),
    )  # fmt: skip
    project = AnnotationProject.objects.create(name=f"{name} project", corpus=corpus, suggestion_run=run, overlap=2, created_by=owner)
    ProjectMembership.objects.bulk_create(
        ProjectMembership(project=project, user=user, role=role)
        for user, role in ((owner, "manager"), (anna, "annotator"), (ben, "annotator"), (viera, "viewer"))
    )
    first = None
    step = max(50, CHUNK * SENTENCES // len(_links(sentences, links)))  # about as many rows per round whatever the shape
    for start in range(0, n, step):
        with transaction.atomic():
            chunk = _pairs_write(corpus, start, min(n, start + step), sentences)
            _run_results(run, chunk, sentences, links)
            _labels(project, anna, ben, chunk, start, sentences, links)
            assignments_recount(project, pair_ids=[pair.pk for pair, _, _ in chunk])
            if first is None:
                first = chunk[0]
                GoldItem.objects.create(project=project, simple_sentence=first[2][0], complex_sentence=first[1][0], label="aligned")
    ExportJob.objects.bulk_create(ExportJob(project=project, options={"formats": ["tsv"]}, created_by=owner) for _ in range(3))
    return World(owner, anna, ben, viera, corpus, run, project, first[0])
