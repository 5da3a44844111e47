"""A corpus's level order in the database: the direction its pairs have now, and the order an import settles.

The rules (schemes, readability, how constraints combine) are :mod:`alignment.levels`'; this module
feeds them the corpus's facts. The strongest fact is the pairs the corpus already has: an import never
turns an existing pair round (that is :func:`alignment.pairs_flip.corpus_pairs_flip`'s job, which
refuses when labels depend on the direction). Corpora imported before levels had schemes keep the
direction their pairs were given, because the order is read from the pairs, not from today's rules.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

from alignment.errors import ServiceError
from alignment.levels import Constraint, LevelOrder, Readability, level_order_decide, readability_of_text
from alignment.models import Corpus, Document, DocumentPair
from alignment.services import level_sort_key

PAIRS_BASIS = "the corpus's existing pairs"
REQUESTED_BASIS = "your order"
STORED_BASIS = "the corpus's level order"


def corpus_levels(corpus: Corpus) -> list[str]:
    return sorted(set(Document.objects.filter(corpus=corpus).values_list("level", flat=True)))


def corpus_pair_edges(corpus: Corpus) -> set[tuple[str, str]]:
    """(complex level, simple level) of the corpus's level pairs (mined pairs are not the pairing's)."""
    pairs = DocumentPair.objects.filter(corpus=corpus, origin=DocumentPair.Origin.PAIRING)
    return set(
        pairs.order_by().values_list("complex_document__level", "simple_document__level").distinct()
    )  # no ordering: one row per edge


def corpus_pair_order(corpus: Corpus, edges: set[tuple[str, str]] | None = None) -> list[str]:
    """The levels that have pairs, most complex first as the pairs run; levels the pairs do not order
    against each other (other articles) follow the corpus's sort key, as when the pairs were made."""
    edges = corpus_pair_edges(corpus) if edges is None else edges
    key = level_sort_key(corpus)
    remaining = {level for edge in edges for level in edge}
    order: list[str] = []
    while remaining:
        sources = [level for level in remaining if not any(c in remaining and s == level for c, s in edges)]
        chosen = min(sources or remaining, key=lambda level: (key(level), level))  # a cycle (pairs from two orders): the key decides
        order.append(chosen)
        remaining.discard(chosen)
    return order


def level_order_check_against_pairs(corpus: Corpus, requested: Sequence[str], edges: set[tuple[str, str]] | None = None) -> None:
    """ServiceError on ``level_order`` when the requested order would turn one of the corpus's pairs round."""
    edges = corpus_pair_edges(corpus) if edges is None else edges
    for first, second in itertools.combinations(requested, 2):
        if (second, first) in edges:
            raise ServiceError(
                f"corpus {corpus.name!r} already pairs {second!r} as the complex side and {first!r} as the simple one; "
                f"an import never turns existing pairs round. Leave {first!r} and {second!r} out of the order, or reverse "
                "the corpus's pairs first (Flip direction on the corpus page, or manage.py flip_pairs)",
                field="level_order",
            )


def level_order_constraints(corpus: Corpus | None, requested: Sequence[str] = ()) -> list[Constraint]:
    """What an import must keep, strongest first: the corpus's pairs, the order the user gave, the corpus's stored order."""
    if corpus is None or corpus.pk is None:
        return [Constraint(tuple(requested), REQUESTED_BASIS)] if requested else []
    edges = corpus_pair_edges(corpus)
    level_order_check_against_pairs(corpus, requested, edges)
    constraints = []
    if edges:
        constraints.append(Constraint(tuple(corpus_pair_order(corpus, edges)), PAIRS_BASIS))
    if requested:
        constraints.append(Constraint(tuple(requested), REQUESTED_BASIS))
    if corpus.level_order:
        constraints.append(Constraint(tuple(corpus.level_order), STORED_BASIS))
    return constraints


def corpus_readability(corpus: Corpus) -> Callable[[str], Readability]:
    """Readability of each level over the corpus's stored documents (their cleaned text), read when first asked."""

    def of_level(level: str) -> Readability:
        total = Readability()
        for text in Document.objects.filter(corpus=corpus, level=level).values_list("raw_text", flat=True).iterator():
            total += readability_of_text(text)
        return total

    return of_level


def corpus_level_order_settle(*, corpus: Corpus, requested: Sequence[str] = ()) -> LevelOrder:
    """Decide the order of all the corpus's levels and store it where the sort key alone would not give it.

    Runs after an import stored its documents and before the pairs are made. ServiceError (on
    ``level_order``) when ``requested`` contradicts the existing pairs; the import checks that first.
    """
    levels = corpus_levels(corpus)
    decided = level_order_decide(levels, constraints=level_order_constraints(corpus, requested), readability=corpus_readability(corpus))
    if sorted(levels, key=level_sort_key(corpus)) != decided.order:
        corpus.level_order = [*decided.order, *(level for level in corpus.level_order or [] if level not in decided.order)]
        corpus.save(update_fields=["level_order"])
    return decided


def corpus_direction(corpus: Corpus) -> list[str]:
    """The levels of the corpus's level pairs as the pairs run now, most complex first (the corpus page shows it)."""
    return corpus_pair_order(corpus)
