"""Which side of a mined document pair is the complex one.

A mining job knows only a *source* (the corpus it started from) and a *target*; either may
be the simpler style, e.g. a user mining from an elementary corpus towards an advanced one.
Sending pairs to annotation needs complex → simple, as in the level pairing. The levels
decide when they can be compared (a corpus's ``level_order``, else one known scheme such as
CEFR, see :mod:`alignment.levels`, the one home of level ordering); otherwise the side with
the longer sentences (words per sentence, :class:`~alignment.levels.Readability`) is the complex
one, the usual proxy for complexity. LHA decides once per job (one corpus is the complex style;
the lengths of its mined sentences), MUSS per document pair (both documents come from one
corpus; the lengths of the two documents' sentences, so both orders of a pair agree).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from django.db.models import Count, Func, IntegerField, Sum

from alignment.levels import Readability, readability_verdict, scheme_verdict
from alignment.mining.models import MinedPair, MiningJob
from alignment.models import Corpus, Document, Sentence


@dataclass(frozen=True)
class Direction:
    """``source_is_complex``: the job's source side is the complex document; ``reason`` says why, for the user."""

    source_is_complex: bool
    reason: str


def level_more_complex(first: str, second: str, corpora: Iterable[Corpus]) -> bool | None:
    """Whether level ``first`` is more complex than ``second``: a corpus's level order naming both, else one known
    scheme ranking both apart; None when neither decides (unknown levels, or levels of two schemes)."""
    for corpus in corpora:
        explicit = list(corpus.level_order or [])
        if first in explicit and second in explicit and first != second:
            return explicit.index(first) < explicit.index(second)
    by_scheme = scheme_verdict(first, second)
    return None if by_scheme is None else by_scheme[0]


def _mined_readability(job: MiningJob) -> tuple[Readability, Readability]:
    """Words and sentences of the source and of the target side of the job's mined items."""
    sums = MinedPair.objects.filter(job=job).aggregate(
        st=Sum("source_tokens"), sc=Sum("source_count"), tt=Sum("target_tokens"), tc=Sum("target_count")
    )
    return Readability(sums["st"] or 0, sums["sc"] or 0, None), Readability(sums["tt"] or 0, sums["tc"] or 0, None)


class _WordCount(Func):
    template = "array_length(regexp_split_to_array(btrim(%(expressions)s), '\\s+'), 1)"
    output_field = IntegerField()


def _document_readability(document: Document) -> Readability:
    counts = Sentence.objects.filter(document=document).aggregate(words=Sum(_WordCount("text")), sentences=Count("pk"))
    return Readability(counts["words"] or 0, counts["sentences"], None)


def _decide(
    levels: tuple[str, str], corpora: list[Corpus], readability: Callable[[], tuple[Readability, Readability]], names: tuple[str, str]
) -> Direction:
    """``levels``, ``readability`` (called only when the levels do not decide) and ``names``: (source, target)."""
    by_level = level_more_complex(levels[0], levels[1], corpora)
    if by_level is not None:
        complex_level, simple_level = levels if by_level else levels[::-1]
        return Direction(by_level, f"level {complex_level!r} is more complex than {simple_level!r}")
    source, target = readability()
    longer = readability_verdict(source, target)  # words per sentence; a tie keeps the job's own order: source → target
    harder, easier = (source, target) if longer else (target, source)
    return Direction(
        longer,
        f"{names[0] if longer else names[1]} has the longer sentences: "
        f"{harder.words_per_sentence:.1f} vs {easier.words_per_sentence:.1f} words per sentence",
    )


def _dominant_level(corpus: Corpus) -> str:
    row = Document.objects.filter(corpus=corpus).values("level").annotate(n=Count("pk")).order_by("-n", "level").first()
    return row["level"] if row else ""


def lha_direction(job: MiningJob) -> Direction:
    """One direction for the whole job: the corpora's most common levels, else their mined sentence lengths."""
    source, target = job.source_corpus, job.target_corpus
    return _decide(
        (_dominant_level(source), _dominant_level(target)), [source, target], lambda: _mined_readability(job),
        (f"corpus {source.name!r}", f"corpus {target.name!r}"),
    )  # fmt: skip


def document_pair_direction(job: MiningJob, source: Document, target: Document) -> Direction:
    """MUSS: the two documents' levels in their corpus, else their sentence lengths (a tie: the lower id is complex)."""
    first, second = sorted([source, target], key=lambda document: document.pk)  # both orders of a pair decide alike
    decided = _decide(
        (first.level, second.level), [job.source_corpus],
        lambda: (_document_readability(first), _document_readability(second)),
        (f"document {first}", f"document {second}"),
    )  # fmt: skip
    first_is_complex = decided.source_is_complex
    return Direction(first_is_complex == (first.pk == source.pk), decided.reason)
