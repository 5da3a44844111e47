"""Turning a corpus's level pairs round: each pair's simple document becomes its complex one, in one transaction.

What changes: every level pair of the corpus (mined pairs keep the direction their job chose) swaps its
two documents, the corpus's level order is reversed, so later imports pair the same way, and an
alignment run over the flipped pairs is queued when the transaction commits.

What goes: the alignment results of the flipped pairs (candidates, paragraph alignments, heatmaps).
They were computed in the old direction: each candidate names its simple and complex sentence, the CRF
reads the simple side in order, so none of it can be turned round; kept, a run page or the inspection
view would show them as if they were for the new direction. The runs that held them lose these pairs
from their scope and their counts; the runs themselves, and their other pairs, stay as they were.

What refuses, changing nothing: a pair or sentence that annotation (or anything outside ``alignment``)
refers to. Labels are append-only events naming a (simple sentence, complex sentence) of a pair;
adjudications, assignments, verifications, paragraph corrections, gold items, training snapshots and
exported datasets all fix those roles. Turning them round would mean rewriting history that must only
grow, or appending mirrored events beside an old chain that still names the old roles, so the flip
refuses and says which pairs and projects hold them. The references are found through Django's
relations, not a list of annotation models: alignment never imports annotation, and a model added later
is refused too until someone decides how it survives a flip.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.base_user import AbstractBaseUser
from django.db import transaction
from django.db.models import Exists, F, OuterRef

from alignment.aligning.results import pair_results_remove
from alignment.aligning.service import alignment_run_for_new_pairs
from alignment.errors import ServiceError
from alignment.level_order import corpus_levels, corpus_pair_order
from alignment.models import AlignedPair, AlignmentRun, CandidateAlignment, Corpus, DocumentPair, ParagraphAlignment, Sentence
from alignment.refusals import in_projects, listed
from alignment.services import document_pairs_sync, level_sort_key

# The flip's own business: results it removes and run scopes it shrinks. Any other relation to a pair refuses it.
_RESULTS = {(AlignedPair, "pair"), (ParagraphAlignment, "pair"), (CandidateAlignment, "pair"), (AlignmentRun, "pairs")}


@dataclass(frozen=True)
class FlipOutcome:
    corpus: Corpus
    order_before: list[str]  # most complex first
    order_after: list[str]
    pairs_flipped: int
    results_removed: int  # (run, pair) results of the old direction that were removed
    alignment_run: AlignmentRun | None


def corpus_pairs_flip(*, corpus: Corpus, created_by: AbstractBaseUser | None = None, align: bool = True) -> FlipOutcome:
    """Reverse the direction of the corpus's level pairs, or refuse (ServiceError, nothing changed) and say why."""
    with transaction.atomic():
        corpus = Corpus.objects.select_for_update().get(pk=corpus.pk)  # imports settle the order under the same lock
        pairs = DocumentPair.objects.filter(corpus=corpus, origin=DocumentPair.Origin.PAIRING)
        pair_ids = list(pairs.order_by("pk").values_list("pk", flat=True))
        if not pair_ids:
            raise ServiceError(f"corpus {corpus.name!r} has no level pairs to flip")
        refusal = _refusal(corpus, pair_ids)
        if refusal:
            raise ServiceError(f"corpus {corpus.name!r} was not flipped: {refusal}; nothing was changed")
        before = _full_order(corpus)
        removed = pair_results_remove(pair_ids)
        pairs.update(complex_document=F("simple_document"), simple_document=F("complex_document"))
        corpus.level_order = before[::-1]
        corpus.save(update_fields=["level_order"])
        document_pairs_sync(corpus=corpus)  # the pairs already follow the reversed order: it finds nothing to change
        run = alignment_run_for_new_pairs(corpus=corpus, created_by=created_by) if align else None
    return FlipOutcome(corpus, before, before[::-1], len(pair_ids), removed, run)


def _full_order(corpus: Corpus) -> list[str]:
    """Every level the corpus has or names, most complex first, the paired levels in the order their pairs run."""
    levels = sorted({*corpus_levels(corpus), *(corpus.level_order or [])}, key=level_sort_key(corpus))
    pair_order = corpus_pair_order(corpus)
    paired = iter(pair_order)
    return [next(paired) if level in pair_order else level for level in levels]  # paired levels keep their slots, in pair order


def _refusal(corpus: Corpus, pair_ids: list[int]) -> str:
    """Why the pairs cannot be flipped (what outside alignment refers to them or their sentences), or ""."""
    reasons, reported = [], set()
    for relation in DocumentPair._meta.related_objects:
        model, name = relation.related_model, relation.field.name
        if (model, name) in _RESULTS:
            continue
        rows = model._default_manager.filter(**{f"{name}__in": pair_ids})
        if rows.exists():
            used = DocumentPair.objects.filter(pk__in=pair_ids, **{f"{relation.field.related_query_name()}__isnull": False})
            named = sorted(set(used.values_list("pk", flat=True)))
            on_pairs = f"pair{'s' if len(named) > 1 else ''} {listed(named)}"
            if _is_project(model):
                projects = sorted(set(rows.values_list("name", flat=True)))
                reasons.append(
                    f"{_noun(model, len(projects))} {listed([repr(p) for p in projects])} hold{'s' if len(projects) == 1 else ''} {on_pairs}"
                )
            else:
                reasons.append(f"{_count(rows, model)} on {on_pairs}{in_projects(rows, model)}")
            reported.add(model)
    for relation in Sentence._meta.related_objects:
        model, name = relation.related_model, relation.field.name
        if model._meta.app_label == "alignment" or model in reported:
            continue  # vectors and mining sequences do not depend on the direction; labels were named with their pairs
        rows = model._default_manager.filter(**{f"{name}__document__corpus": corpus})
        if rows.exists():
            reasons.append(f"{_count(rows, model)} naming its sentences{in_projects(rows, model)}")
    reasons.extend(_twins(pair_ids))
    if not reasons:
        return ""
    return (
        "annotation depends on its direction (" + "; ".join(dict.fromkeys(reasons)) + "). Labels, adjudications and assignments "
        "name each sentence pair's simple and complex side and are never rewritten, so they would not survive a flip. Import "
        "the files again into a new corpus with the right level order (the Import page's level order field)"
    )


def _twins(pair_ids: list[int]) -> list[str]:
    """Mined pairs that already join two documents the other way round: the flip would make a second such pair."""
    other_way = DocumentPair.objects.filter(
        complex_document_id=OuterRef("simple_document_id"), simple_document_id=OuterRef("complex_document_id")
    )
    twins = sorted(DocumentPair.objects.filter(pk__in=pair_ids).filter(Exists(other_way)).values_list("pk", flat=True))
    return [f"pairs {listed(twins)} already exist the other way round as mined pairs"] if twins else []


def _noun(model, count: int) -> str:
    return str(model._meta.verbose_name if count == 1 else model._meta.verbose_name_plural)


def _count(rows, model) -> str:
    count = rows.distinct().count()
    return f"{count} {_noun(model, count)}"


def _is_project(model) -> bool:
    """Rows that are projects themselves (a project's pairs), not rows belonging to one."""
    return model._meta.model_name.endswith("project") and "name" in {field.name for field in model._meta.get_fields()}
