"""Which side of a mined document pair is the complex one.

A mining job knows only a *source* (the corpus it started from) and a *target*; either may
be the simpler style, e.g. a user mining from an elementary corpus towards an advanced one.
Sending pairs to annotation needs complex → simple, as in the level pairing. The levels
decide when they can be compared (a corpus's ``level_order``, the known readability labels
or numbers, see :func:`alignment.services.level_sort_key`); otherwise the side with the
longer sentences (words per sentence) is the complex one, the usual proxy for complexity.
LHA decides once per job (one corpus is the complex style; the lengths of its mined
sentences), MUSS per document pair (both documents come from one corpus; the lengths of
the two documents' sentences, so both orders of a pair agree).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from django.db.models import Avg, Count, Func, IntegerField, Sum

from alignment.mining.models import MinedPair, MiningJob
from alignment.models import Corpus, Document, Sentence
from alignment.services import level_sort_key

_UNRANKED = 3  # level_sort_key's category for a level it cannot place


@dataclass(frozen=True)
class Direction:
    """``source_is_complex``: the job's source side is the complex document; ``reason`` says why, for the user."""

    source_is_complex: bool
    reason: str


def level_more_complex(first: str, second: str, corpora: Iterable[Corpus]) -> bool | None:
    """Whether level ``first`` is more complex than ``second``; None when no corpus's order ranks both apart."""
    for corpus in corpora:
        key = level_sort_key(corpus)
        a, b = key(first), key(second)
        if a[0] == b[0] != _UNRANKED and a != b:  # ranked the same way: one explicit order, known labels or numbers
            return a < b
    return None


def _mined_words_per_sentence(job: MiningJob) -> tuple[float, float]:
    """Mean words per sentence of the source and of the target side of the job's mined items."""
    sums = MinedPair.objects.filter(job=job).aggregate(
        st=Sum("source_tokens"), sc=Sum("source_count"), tt=Sum("target_tokens"), tc=Sum("target_count")
    )
    return (sums["st"] or 0) / max(sums["sc"] or 0, 1), (sums["tt"] or 0) / max(sums["tc"] or 0, 1)


class _WordCount(Func):
    template = "array_length(regexp_split_to_array(btrim(%(expressions)s), '\\s+'), 1)"
    output_field = IntegerField()


def _document_words_per_sentence(document: Document) -> float:
    return float(Sentence.objects.filter(document=document).aggregate(words=Avg(_WordCount("text")))["words"] or 0.0)


def _decide(levels: tuple[str, str], corpora: list[Corpus], words: Callable[[], tuple[float, float]], names: tuple[str, str]) -> Direction:
    """``levels``, ``words`` (called only when the levels do not decide) and ``names``: (source, target)."""
    by_level = level_more_complex(levels[0], levels[1], corpora)
    if by_level is not None:
        complex_level, simple_level = levels if by_level else levels[::-1]
        return Direction(by_level, f"level {complex_level!r} is more complex than {simple_level!r}")
    source_words, target_words = words()
    longer = source_words >= target_words  # a tie keeps the job's own order: source → target
    return Direction(
        longer,
        f"{names[0] if longer else names[1]} has the longer sentences: "
        f"{max(source_words, target_words):.1f} vs {min(source_words, target_words):.1f} words per sentence",
    )


def _dominant_level(corpus: Corpus) -> str:
    row = Document.objects.filter(corpus=corpus).values("level").annotate(n=Count("pk")).order_by("-n", "level").first()
    return row["level"] if row else ""


def lha_direction(job: MiningJob) -> Direction:
    """One direction for the whole job: the corpora's most common levels, else their mined sentence lengths."""
    source, target = job.source_corpus, job.target_corpus
    return _decide(
        (_dominant_level(source), _dominant_level(target)), [source, target], lambda: _mined_words_per_sentence(job),
        (f"corpus {source.name!r}", f"corpus {target.name!r}"),
    )  # fmt: skip


def document_pair_direction(job: MiningJob, source: Document, target: Document) -> Direction:
    """MUSS: the two documents' levels in their corpus, else their sentence lengths (a tie: the lower id is complex)."""
    first, second = sorted([source, target], key=lambda document: document.pk)  # both orders of a pair decide alike
    decided = _decide(
        (first.level, second.level), [job.source_corpus],
        lambda: (_document_words_per_sentence(first), _document_words_per_sentence(second)),
        (f"document {first}", f"document {second}"),
    )  # fmt: skip
    first_is_complex = decided.source_is_complex
    return Direction(first_is_complex == (first.pk == source.pk), decided.reason)
