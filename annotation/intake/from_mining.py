"""Send mined pairs to annotation: a new project whose suggestions are exactly the mined links.

The mined items are grouped by (source document, target document); each group becomes a
document pair (origin "mined") whose complex side is the more complex document, whichever
side of the job it came from (:mod:`alignment.mining.direction`). The pairs live in the
corpus of their complex documents, as a level pair of those documents would, so mining
from a simple corpus towards a complex one does not put them in the simple corpus. A
suggestion run records the mined links as candidates (label "aligned", the mining score as
score and marginal) so the project starts with them, and an alignment run over the new
pairs is queued to take over when it finishes, so every simple sentence gets a suggestion.
All or nothing.
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from alignment.aligning.service import alignment_run_create
from alignment.mining.direction import document_pair_direction, lha_direction
from alignment.mining.models import MinedPair, MiningJob
from alignment.models import (
    AlignedPair,
    AlignmentRun,
    CandidateAlignment,
    Corpus,
    Document,
    DocumentPair,
    Sentence,
)
from annotation import services
from annotation.models import AnnotationProject
from annotation.selectors import corpora_for_projects, project_name_refusal
from models_ml.aligning.aligner_config import AlignerConfig

MAX_SEND = 5000


def mined_pairs_choose(pairs, *, selected: list[int] | None = None, sample: int | None = None, seed: int = 0) -> list[MinedPair]:
    """The selected pairs (ids among ``pairs``), or a seeded random sample of ``pairs``."""
    if selected:
        chosen = list(pairs.filter(pk__in=selected))
        missing = set(selected) - {p.pk for p in chosen}
        if missing:
            raise ValueError(f"mined pair(s) {sorted(missing)[:5]} are not in this job's filtered pairs")
        return chosen
    if not sample or sample < 1:
        raise ValueError("select pairs or give a sample size of at least 1")
    ids = list(pairs.values_list("pk", flat=True))
    if sample > MAX_SEND:
        raise ValueError(f"at most {MAX_SEND} pairs can be sent at once, got a sample of {sample}")
    picked = random.Random(seed).sample(ids, min(sample, len(ids)))
    return list(MinedPair.objects.filter(pk__in=picked))


def mined_pairs_to_project(*, job: MiningJob, pairs: list[MinedPair], name: str, by: AbstractBaseUser) -> AnnotationProject:
    """A new project over the document pairs of ``pairs``, complex → simple, in the complex side's corpus.

    Its first suggestions are the mined links; an alignment run over the new pairs is queued and
    becomes the suggestion run when it succeeds (the pending switch a promotion uses), so every
    simple sentence gets the aligner's suggestion, not only the mined ones. All or nothing.
    """
    if not pairs:
        raise ValueError("no mined pairs to send")
    if len(pairs) > MAX_SEND:
        raise ValueError(f"at most {MAX_SEND} pairs can be sent at once, got {len(pairs)}")
    refusal = project_name_refusal(by, name)  # never confirms another user's private project
    if refusal:
        raise ValueError(refusal)
    by_documents: dict[tuple[int, int], list[MinedPair]] = defaultdict(list)
    for pair in sorted(pairs, key=lambda p: (p.source_document_id, p.target_document_id, p.source_key, p.target_key)):
        by_documents[(pair.source_document_id, pair.target_document_id)].append(pair)
    sides = _sides(job, list(by_documents))
    corpus = _home_corpus(job, sides, by)
    with transaction.atomic():
        document_pairs = {key: _document_pair(side, corpus) for key, side in sides.items()}
        run = _mined_links_run(job, corpus, by, by_documents, document_pairs, sides)
        project = services.project_create(
            name=name, corpus=corpus, created_by=by, pairs=list(dict.fromkeys(document_pairs.values())), suggestion_run=run,
            overlap=1, guidelines=f"Mined by mining job #{job.pk} ({job.get_method_display()}): accept the proposed links that are "
            "real paraphrases or simplifications, reject the others.",
        )  # fmt: skip
        services.membership_set(project=project, user=by, role="manager")
        aligner_run = alignment_run_create(
            corpus=corpus, pairs=list(project.pairs.all()), created_by=by, model_dir=settings.ALIGNER_MODEL_DIR
        )
        AnnotationProject.objects.filter(pk=project.pk).update(pending_suggestion_run=aligner_run)
    project.refresh_from_db()
    return project


@dataclass(frozen=True)
class _Side:
    """One document pair of the send: which mined document is the complex one, and why."""

    complex_document: Document
    simple_document: Document
    source_is_complex: bool
    reason: str


def _sides(job: MiningJob, keys: list[tuple[int, int]]) -> dict[tuple[int, int], _Side]:
    documents = Document.objects.in_bulk({doc for key in keys for doc in key})
    lha = lha_direction(job) if job.method == MiningJob.Method.LHA else None
    sides = {}
    for source_id, target_id in keys:
        source, target = documents[source_id], documents[target_id]
        direction = lha or document_pair_direction(job, source, target)
        complex_document, simple_document = (source, target) if direction.source_is_complex else (target, source)
        sides[(source_id, target_id)] = _Side(complex_document, simple_document, direction.source_is_complex, direction.reason)
    return sides


def _home_corpus(job: MiningJob, sides: dict[tuple[int, int], _Side], by: AbstractBaseUser) -> Corpus:
    """The corpus of the complex documents (where a level pair of them would live); the job's source corpus
    when the sender may not build projects there (a corpus shared by someone else)."""
    complex_corpora = {side.complex_document.corpus_id for side in sides.values()}
    if len(complex_corpora) == 1 and corpora_for_projects(by).filter(pk__in=complex_corpora).exists():
        return Corpus.objects.get(pk=complex_corpora.pop())
    return job.source_corpus


def _document_pair(side: _Side, corpus: Corpus) -> DocumentPair:
    pair, _ = DocumentPair.objects.get_or_create(
        complex_document=side.complex_document, simple_document=side.simple_document,
        defaults={"corpus": corpus, "origin": DocumentPair.Origin.MINED},
    )  # fmt: skip
    if pair.corpus_id != corpus.pk:
        raise ValueError(
            f"the document pair {side.complex_document} → {side.simple_document} already belongs to corpus {pair.corpus.name!r}, "
            f"not {corpus.name!r}: send these pairs from a job of that corpus"
        )
    return pair


def _mined_links_run(
    job: MiningJob, corpus: Corpus, by: AbstractBaseUser, by_documents: dict[tuple[int, int], list[MinedPair]],
    document_pairs: dict[tuple[int, int], DocumentPair], sides: dict[tuple[int, int], _Side],
) -> AlignmentRun:  # fmt: skip
    """A finished run whose candidates are exactly the mined links ("aligned", the mining score as score and marginal)."""
    now = timezone.now()
    unique_pairs = list(dict.fromkeys(document_pairs.values()))
    reasons = sorted({side.reason for side in sides.values()})
    run = AlignmentRun.objects.create(
        corpus=corpus, scope=AlignmentRun.Scope.PAIRS, status=AlignmentRun.Status.SUCCEEDED,
        config={"aligner": AlignerConfig().to_dict(), "measures": ["mined"], "model_dir": "", "top_k": 0, "mining_job": job.pk,
                "complex_side": reasons},
        model_version=f"mined by mining job #{job.pk} ({job.get_method_display()})", pairs_total=len(unique_pairs),
        pairs_done=len(unique_pairs), created_by=by, started_at=now, finished_at=now,
    )  # fmt: skip
    run.pairs.set(unique_pairs)
    candidates = []
    for document_pair in unique_pairs:
        AlignedPair.objects.create(
            run=run, pair=document_pair, simple_count=len(_sentence_ids(document_pair.simple_document_id)),
            complex_count=len(_sentence_ids(document_pair.complex_document_id)),
        )  # fmt: skip
    groups: dict[int, int] = defaultdict(int)  # both orders of a document pair (MUSS) share its group numbers
    for key, items in by_documents.items():
        document_pair, side = document_pairs[key], sides[key]
        complex_ids = _sentence_ids(side.complex_document.pk)
        simple_ids = _sentence_ids(side.simple_document.pk)
        for item in items:
            group = groups[document_pair.pk]
            groups[document_pair.pk] += 1
            complex_indices, simple_indices = (
                (item.source_sentences, item.target_sentences) if side.source_is_complex else (item.target_sentences, item.source_sentences)
            )
            for i in complex_indices:
                for j in simple_indices:
                    candidates.append(CandidateAlignment(
                        run=run, pair=document_pair, simple_sentence_id=simple_ids[j], complex_sentence_id=complex_ids[i],
                        scores={"mined": item.score}, score=item.score, crf_marginal=min(max(item.score, 0.0), 1.0), label="aligned",
                        group_index=group, group_score=item.score, disagreement=0.0,
                    ))  # fmt: skip
    CandidateAlignment.objects.bulk_create(candidates, batch_size=2000, ignore_conflicts=True)
    run.candidates_written = len(candidates)
    run.label_counts = {"aligned": len(candidates)}
    run.save(update_fields=["candidates_written", "label_counts"])
    return run


def _sentence_ids(document_id: int) -> list[int]:
    return list(Sentence.objects.filter(document_id=document_id).order_by("index").values_list("pk", flat=True))
