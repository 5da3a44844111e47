"""Send mined pairs to annotation: a new project whose suggestions are exactly the mined links.

The mined items are grouped by (source document, target document); each group becomes a
document pair of the source corpus (origin "mined", the source document as the complex side,
possibly a document of another corpus as the simple side). A suggestion run records the
mined links as candidates (label "aligned", the mining score as score and marginal), so the
annotation screen and the queue show them as proposals to accept or reject. All or nothing.
"""

from __future__ import annotations

import random
from collections import defaultdict

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from alignment.mining.models import MinedPair, MiningJob
from alignment.models import (
    AlignedPair,
    AlignmentRun,
    CandidateAlignment,
    DocumentPair,
    Sentence,
)
from annotation import services
from annotation.models import AnnotationProject
from annotation.selectors import project_name_refusal
from models_ml.aligner import AlignerConfig

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
    with transaction.atomic():
        corpus = job.source_corpus
        document_pairs = {}
        for source_id, target_id in by_documents:
            document_pairs[(source_id, target_id)], _ = DocumentPair.objects.get_or_create(
                complex_document_id=source_id, simple_document_id=target_id,
                defaults={"corpus": corpus, "origin": DocumentPair.Origin.MINED},
            )  # fmt: skip
        now = timezone.now()
        run = AlignmentRun.objects.create(
            corpus=corpus, scope=AlignmentRun.Scope.PAIRS, status=AlignmentRun.Status.SUCCEEDED,
            config={"aligner": AlignerConfig().to_dict(), "measures": ["mined"], "model_dir": "", "top_k": 0, "mining_job": job.pk},
            model_version=f"mined by mining job #{job.pk} ({job.get_method_display()})", pairs_total=len(document_pairs),
            pairs_done=len(document_pairs), created_by=by, started_at=now, finished_at=now,
        )  # fmt: skip
        run.pairs.set(document_pairs.values())
        candidates = []
        for key, items in by_documents.items():
            document_pair = document_pairs[key]
            source_ids = _sentence_ids(key[0])
            target_ids = _sentence_ids(key[1])
            AlignedPair.objects.create(run=run, pair=document_pair, simple_count=len(target_ids), complex_count=len(source_ids))
            for group, item in enumerate(items):
                for i in item.source_sentences:
                    for j in item.target_sentences:
                        candidates.append(CandidateAlignment(
                            run=run, pair=document_pair, simple_sentence_id=target_ids[j], complex_sentence_id=source_ids[i],
                            scores={"mined": item.score}, score=item.score, crf_marginal=min(max(item.score, 0.0), 1.0), label="aligned",
                            group_index=group, group_score=item.score, disagreement=0.0,
                        ))  # fmt: skip
        CandidateAlignment.objects.bulk_create(candidates, batch_size=2000, ignore_conflicts=True)
        run.candidates_written = len(candidates)
        run.label_counts = {"aligned": len(candidates)}
        run.save(update_fields=["candidates_written", "label_counts"])
        project = services.project_create(
            name=name, corpus=corpus, created_by=by, pairs=list(document_pairs.values()), suggestion_run=run, overlap=1,
            guidelines=f"Mined by mining job #{job.pk} ({job.get_method_display()}): accept the proposed links that are real "
            "paraphrases or simplifications, reject the others.",
        )  # fmt: skip
        services.membership_set(project=project, user=by, role="manager")
    return project


def _sentence_ids(document_id: int) -> list[int]:
    return list(Sentence.objects.filter(document_id=document_id).order_by("index").values_list("pk", flat=True))
