"""Reads for the researcher's inspection view of one document pair: runs, candidates, heatmap, word diff.

Selectors-style: these functions read and shape data for ``pair_inspect.html`` and
never write. Query parameters are parsed here, not in the view, so a bad value turns
into a message that names the parameter instead of an exception.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlencode

import numpy as np
from django.contrib.auth.models import AbstractBaseUser
from django.db.models import QuerySet
from django.http import QueryDict
from django.shortcuts import get_object_or_404

from alignment.aligning.scoring import HEATMAP_MAX_CELLS, unpack_matrices
from alignment.models import (
    AlignedPair,
    AlignmentRun,
    CandidateAlignment,
    DocumentPair,
    ParagraphAlignment,
    Sentence,
)
from alignment.selectors import corpora_visible_to

CRF_MARGINAL = "crf_marginal"
TABLE_ROW_LIMIT = 500
TOOLTIP_CHARS = 160  # heatmap hover
SORTS: dict[str, tuple[str, ...]] = {
    "position": ("simple_sentence__index", "complex_sentence__index"),
    "score": ("score",),
    "-score": ("-score",),
    "crf_marginal": ("crf_marginal",),
    "-crf_marginal": ("-crf_marginal",),
    "disagreement": ("disagreement",),
    "-disagreement": ("-disagreement",),
}
LABEL_FILTERS: dict[str, tuple[str, ...] | None] = {
    "all": None,
    "predicted": (CandidateAlignment.Label.ALIGNED, CandidateAlignment.Label.PARTIAL),
    "aligned": (CandidateAlignment.Label.ALIGNED,),
    "partial": (CandidateAlignment.Label.PARTIAL,),
    "not_aligned": (CandidateAlignment.Label.NOT_ALIGNED,),
}
LABEL_CHOICES = [
    ("all", "all"),
    ("predicted", "predicted (aligned + partial)"),
    ("aligned", "aligned"),
    ("partial", "partial"),
    ("not_aligned", "not aligned"),
]
WORD_TOKEN = re.compile(r"\w+(?:['’\-]\w+)*|[^\w\s]")  # words (with inner apostrophes/hyphens) and single punctuation marks


@dataclass(frozen=True)
class InspectState:
    """The view's query parameters after validation; ``query()`` rebuilds links that keep them."""

    run_id: int | None = None
    measure: str = ""
    sort: str = "position"
    label: str = "all"
    min_disagreement: float | None = None
    candidate_id: int | None = None

    def query(self, **changes: Any) -> str:
        """``?run=..&measure=..`` for this state with ``changes`` applied; empty values are left out."""
        state = replace(self, **changes)
        values = {
            "run": state.run_id,
            "measure": state.measure,
            "sort": state.sort,
            "label": state.label,
            "min_disagreement": state.min_disagreement,
            "candidate": state.candidate_id,
        }
        return "?" + urlencode({key: value for key, value in values.items() if value not in (None, "")})


@dataclass(frozen=True)
class MarginalNote:
    """Why a candidate's CRF marginal looks at odds with its label: a short tag for the table and a sentence."""

    tag: str
    text: str


@dataclass
class CandidateRow:
    candidate: CandidateAlignment
    scores: list[float | None]  # one per run measure, in run.measures order
    link: str  # the full page with this candidate's diff open
    marginal_note: MarginalNote | None = None


@dataclass
class DiffSegment:
    kind: str  # equal | del | ins
    text: str
    space_before: bool
    replaced: bool = False  # part of a replacement (marked on both sides) rather than a pure deletion/insertion


@dataclass
class WordDiff:
    complex_segments: list[DiffSegment]
    simple_segments: list[DiffSegment]


@dataclass
class PairInspection:
    """Everything ``pair_inspect.html`` shows for one pair; ``run`` is None when no run aligned it."""

    state: InspectState
    errors: list[str] = field(default_factory=list)
    runs: list[AlignmentRun] = field(default_factory=list)
    run: AlignmentRun | None = None
    measures: list[str] = field(default_factory=list)  # the run's measures, table columns
    measure_headers: list[tuple[str, str]] = field(default_factory=list)  # (name, header with break points)
    measure_choices: list[str] = field(default_factory=list)
    heatmap: dict | None = None
    heatmap_missing_reason: str = ""
    rows: list[CandidateRow] = field(default_factory=list)
    matching: int = 0
    sort_links: dict[str, str] = field(default_factory=dict)
    selected: CandidateAlignment | None = None
    diff: WordDiff | None = None
    group_members: list[CandidateAlignment] = field(default_factory=list)
    selected_scores: list[tuple[str, float | None]] = field(default_factory=list)
    selected_note: MarginalNote | None = None
    marginal_tags: set[str] = field(default_factory=set)  # the tags in the table, explained once above it
    label_choices: list[tuple[str, str]] = field(default_factory=lambda: list(LABEL_CHOICES))


def inspect_params_parse(query: QueryDict) -> tuple[InspectState, list[str]]:
    """Validated parameters (bad ones fall back to their default) and one message per bad parameter."""
    errors: list[str] = []
    run_id = _int_param(query, "run", errors)
    candidate_id = _int_param(query, "candidate", errors)
    sort = query.get("sort", "") or "position"
    if sort not in SORTS:
        errors.append(f"sort: unknown order {sort!r}; choose one of {', '.join(SORTS)}")
        sort = "position"
    label = query.get("label", "") or "all"
    if label not in LABEL_FILTERS:
        errors.append(f"label: unknown label filter {label!r}; choose one of {', '.join(LABEL_FILTERS)}")
        label = "all"
    min_disagreement = None
    raw = query.get("min_disagreement", "").strip()
    if raw:
        try:
            min_disagreement = float(raw)
            if not math.isfinite(min_disagreement):
                raise ValueError
        except ValueError:
            errors.append(f"min_disagreement: {raw!r} is not a number (use e.g. 0.3)")
            min_disagreement = None
    state = InspectState(
        run_id=run_id,
        measure=query.get("measure", ""),
        sort=sort,
        label=label,
        min_disagreement=min_disagreement,
        candidate_id=candidate_id,
    )
    return state, errors


def _int_param(query: QueryDict, name: str, errors: list[str]) -> int | None:
    raw = query.get(name, "").strip()
    if not raw:
        return None
    if not raw.isdigit():
        errors.append(f"{name}: {raw!r} is not an id (a whole number)")
        return None
    return int(raw)


def pair_runs(pair: DocumentPair) -> list[AlignmentRun]:
    """Runs that stored a result for ``pair``, newest first (older runs are never overwritten)."""
    return list(AlignmentRun.objects.filter(aligned_pairs__pair=pair).order_by("-created_at", "-pk"))


def pair_candidates(
    run: AlignmentRun, pair: DocumentPair, *, sort: str = "position", label: str = "all", min_disagreement: float | None = None
) -> QuerySet[CandidateAlignment]:
    """The run's candidates for the pair, filtered by label group and disagreement, in ``sort`` order."""
    candidates = CandidateAlignment.objects.filter(run=run, pair=pair).select_related("simple_sentence", "complex_sentence")
    labels = LABEL_FILTERS[label]
    if labels is not None:
        candidates = candidates.filter(label__in=labels)
    if min_disagreement is not None:
        candidates = candidates.filter(disagreement__gte=min_disagreement)
    return candidates.order_by(*SORTS[sort], *SORTS["position"])  # position breaks ties, so pages are stable


def candidate_get_for_user(user: AbstractBaseUser, candidate_id: int) -> CandidateAlignment:
    """The candidate, or 404 when it does not exist or its pair's corpus is hidden from the user."""
    visible = CandidateAlignment.objects.filter(pair__corpus__in=corpora_visible_to(user))
    return get_object_or_404(visible.select_related("run", "pair", "simple_sentence", "complex_sentence"), pk=candidate_id)


def candidate_group_members(candidate: CandidateAlignment) -> list[CandidateAlignment]:
    """The other candidates of the same predicted group (same run, pair and group index)."""
    if candidate.group_index is None:
        return []
    members = CandidateAlignment.objects.filter(run_id=candidate.run_id, pair_id=candidate.pair_id, group_index=candidate.group_index)
    return list(members.exclude(pk=candidate.pk).select_related("simple_sentence", "complex_sentence").order_by(*SORTS["position"]))


def candidate_scores(candidate: CandidateAlignment, measures: list[str]) -> list[tuple[str, float | None]]:
    """(measure, score) in the run's measure order; the stored JSON does not keep that order."""
    return [(name, candidate.scores.get(name)) for name in measures]


def marginal_notes(candidates: list[CandidateAlignment]) -> dict[int, MarginalNote]:
    """Candidate id -> why its CRF marginal is surprising, for candidates of one run and pair (others left out).

    Both cases are right but puzzle a reader. *via group*: a predicted pair whose simple sentence's
    own Viterbi state does not cover the complex sentence; neighbours sharing complex sentences form
    one n:m group whose label covers all its pairs (as gold groups are read), while the marginal is
    this sentence's own belief, which can be 0.000. *not scored*: a pair outside every aligned
    paragraph group, where the CRF never decodes, so its marginal is 0 by construction.
    """
    if not candidates:
        return {}
    run_id, pair = candidates[0].run_id, candidates[0].pair
    viterbi = AlignedPair.objects.filter(run_id=run_id, pair=pair).values_list("viterbi", flat=True).first() or []
    simple_paragraphs = _paragraph_positions(pair.simple_document_id)
    complex_paragraphs = _paragraph_positions(pair.complex_document_id)
    blocks = [
        (set(simple), set(complex_))
        for simple, complex_ in ParagraphAlignment.objects.filter(run_id=run_id, pair=pair).values_list(
            "simple_paragraphs", "complex_paragraphs"
        )
    ]
    notes: dict[int, MarginalNote] = {}
    for candidate in candidates:
        j, i = candidate.simple_sentence.index, candidate.complex_sentence.index
        own = viterbi[j] if j < len(viterbi) else []
        if candidate.label != CandidateAlignment.Label.NOT_ALIGNED and i not in own:
            span = f"{min(own) + 1}" + (f"–{max(own) + 1}" if len(own) > 1 else "") if own else ""  # 1-based, "3" or "3–4"
            chose = f"complex #{span}" if own else "no complex sentence"
            notes[candidate.pk] = MarginalNote(
                tag="via group",
                text=f"In group {candidate.group_index} through its neighbours: simple #{j + 1}'s own CRF choice is {chose}, "
                f"not complex #{i + 1}. The group's label covers every simple × complex pair of the group; the CRF marginal "
                "is this simple sentence's own belief in this complex sentence.",
            )
        elif not any(simple_paragraphs.get(j) in simple and complex_paragraphs.get(i) in complex_ for simple, complex_ in blocks):
            notes[candidate.pk] = MarginalNote(
                tag="not scored",
                text="Outside the aligned paragraphs: the CRF only decodes sentence pairs inside an aligned paragraph group, "
                "so it never scored this pair and its marginal is 0. It is listed for its similarity scores.",
            )
    return notes


def _paragraph_positions(document_id: int) -> dict[int, int]:
    """Sentence index -> its paragraph's position among paragraphs with sentences, as ParagraphAlignment counts them."""
    rows = list(Sentence.objects.filter(document_id=document_id).values_list("index", "paragraph__index"))
    dense = {number: position for position, number in enumerate(sorted({paragraph for _, paragraph in rows}))}
    return {index: dense[paragraph] for index, paragraph in rows}


def word_diff(complex_text: str, simple_text: str) -> WordDiff:
    """Word-level differences: words only in the complex sentence are ``del``, words new in the simple one ``ins``.

    Tokens are words and punctuation marks, compared case-insensitively; adjacent tokens
    of the same kind are merged into one segment so the page shows ``<del>a few words</del>``.
    """
    complex_tokens = _tokens(complex_text)
    simple_tokens = _tokens(simple_text)
    matcher = difflib.SequenceMatcher(
        a=[text.casefold() for text, _ in complex_tokens], b=[text.casefold() for text, _ in simple_tokens], autojunk=False
    )
    complex_kinds: list[tuple[str, bool]] = []
    simple_kinds: list[tuple[str, bool]] = []
    for tag, a0, a1, b0, b1 in matcher.get_opcodes():
        if tag == "equal":
            complex_kinds += [("equal", False)] * (a1 - a0)
            simple_kinds += [("equal", False)] * (b1 - b0)
        else:
            complex_kinds += [("del", tag == "replace")] * (a1 - a0)
            simple_kinds += [("ins", tag == "replace")] * (b1 - b0)
    return WordDiff(_segments(complex_tokens, complex_kinds), _segments(simple_tokens, simple_kinds))


def _tokens(text: str) -> list[tuple[str, bool]]:
    """(token, preceded by whitespace) for each word or punctuation mark."""
    return [(match.group(), match.start() > 0 and text[match.start() - 1].isspace()) for match in WORD_TOKEN.finditer(text)]


def _segments(tokens: list[tuple[str, bool]], kinds: list[tuple[str, bool]]) -> list[DiffSegment]:
    segments: list[DiffSegment] = []
    for (text, space), (kind, replaced) in zip(tokens, kinds):
        last = segments[-1] if segments else None
        if last is not None and last.kind == kind and last.replaced == replaced:
            last.text += (" " if space else "") + text
        else:
            segments.append(DiffSegment(kind=kind, text=text, space_before=space and bool(segments), replaced=replaced))
    return segments


def _side_rows(document_id: int) -> tuple[list[str], list[int]]:
    """Sentence texts in order and each one's paragraph position, numbered as the aligner numbered them.

    The aligner skips paragraphs without sentences (see ``side_sentences``), so
    ParagraphAlignment indices are positions among the paragraphs that have sentences.
    """
    rows = list(Sentence.objects.filter(document_id=document_id).order_by("index").values_list("text", "paragraph__index"))
    dense = {number: position for position, number in enumerate(sorted({paragraph for _, paragraph in rows}))}
    return [text for text, _ in rows], [dense[paragraph] for _, paragraph in rows]


def _truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def heatmap_payload(aligned: AlignedPair, measure: str, matrix: np.ndarray) -> dict:
    """JSON-ready heatmap: values (m, n) rounded to 3 decimals, paragraph blocks, Viterbi cells, candidate ids.

    Rows are simple sentences, columns complex sentences (both 0-based positions).
    """
    pair = aligned.pair
    simple_texts, simple_paragraphs = _side_rows(pair.simple_document_id)
    complex_texts, complex_paragraphs = _side_rows(pair.complex_document_id)
    blocks = []
    for group in ParagraphAlignment.objects.filter(run_id=aligned.run_id, pair=pair).order_by("pk"):
        simple_group, complex_group = set(group.simple_paragraphs), set(group.complex_paragraphs)
        rows = [j for j, paragraph in enumerate(simple_paragraphs) if paragraph in simple_group]
        cols = [i for i, paragraph in enumerate(complex_paragraphs) if paragraph in complex_group]
        if rows and cols:  # a paragraph left unaligned on one side has no rectangle to draw
            blocks.append({"row0": min(rows), "row1": max(rows), "col0": min(cols), "col1": max(cols)})
    viterbi = [[j, i] for j, chosen in enumerate(aligned.viterbi) for i in chosen]
    candidates = {
        f"{j}:{i}": pk
        for pk, j, i in CandidateAlignment.objects.filter(run_id=aligned.run_id, pair=pair).values_list(
            "pk", "simple_sentence__index", "complex_sentence__index"
        )
    }
    values = np.round(matrix.astype(np.float64), 3)  # (m, n); float64 so JSON prints 0.123, not 0.12300000339
    return {
        "measure": measure,
        "rows": int(values.shape[0]),
        "cols": int(values.shape[1]),
        "values": values.tolist(),
        "min": float(values.min()) if values.size else 0.0,
        "max": float(values.max()) if values.size else 0.0,
        "simple": [_truncate(text, TOOLTIP_CHARS) for text in simple_texts],
        "complex": [_truncate(text, TOOLTIP_CHARS) for text in complex_texts],
        "blocks": blocks,
        "viterbi": viterbi,
        "candidates": candidates,
    }


def pair_inspection_build(*, pair: DocumentPair, query: QueryDict, with_heatmap: bool = True) -> PairInspection:
    """Resolve the run, measure and candidate the query asks for and read what the page shows.

    A bad parameter adds a message naming it and falls back to its default, so the page
    still shows something useful next to the message.
    """
    state, errors = inspect_params_parse(query)
    view = PairInspection(state=state, errors=errors, runs=pair_runs(pair))
    if not view.runs:
        return view
    run = next((candidate for candidate in view.runs if candidate.pk == state.run_id), None)
    if state.run_id is not None and run is None:
        errors.append(f"run: run {state.run_id} has no stored result for this pair; showing the latest run instead")
    run = run or view.runs[0]
    view.run = run
    view.measures = run.measures
    view.measure_headers = [(name, name.replace("_", "_\u200b")) for name in run.measures]  # long names may wrap
    view.measure_choices = [*run.measures, CRF_MARGINAL]
    measure = state.measure or run.primary_measure
    if measure not in view.measure_choices:
        errors.append(f"measure: {measure!r} was not scored by run {run.pk}; choose one of {', '.join(view.measure_choices)}")
        measure = run.primary_measure
    state = replace(state, run_id=run.pk, measure=measure)
    view.selected = _selected_candidate(run, pair, state.candidate_id, errors)
    state = replace(state, candidate_id=view.selected.pk if view.selected else None)
    view.state = state

    candidates = pair_candidates(run, pair, sort=state.sort, label=state.label, min_disagreement=state.min_disagreement)
    view.matching = candidates.count()
    shown = list(candidates.select_related("pair")[:TABLE_ROW_LIMIT])
    notes = marginal_notes(shown + ([view.selected] if view.selected is not None else []))
    view.rows = [
        CandidateRow(
            candidate=c,
            scores=[c.scores.get(name) for name in run.measures],
            link=state.query(candidate_id=c.pk),
            marginal_note=notes.get(c.pk),
        )
        for c in shown
    ]
    view.marginal_tags = {row.marginal_note.tag for row in view.rows if row.marginal_note}
    view.sort_links = {
        column: state.query(sort="position" if column == "position" else (column if state.sort == f"-{column}" else f"-{column}"))
        for column in ("position", "score", "crf_marginal", "disagreement")
    }
    if view.selected is not None:
        view.diff = word_diff(view.selected.complex_sentence.text, view.selected.simple_sentence.text)
        view.group_members = candidate_group_members(view.selected)
        view.selected_scores = candidate_scores(view.selected, run.measures)
        view.selected_note = notes.get(view.selected.pk)
    if with_heatmap:
        _attach_heatmap(view, run, pair, measure)
    return view


def _selected_candidate(run: AlignmentRun, pair: DocumentPair, candidate_id: int | None, errors: list[str]) -> CandidateAlignment | None:
    if candidate_id is None:
        return None
    selected = (
        CandidateAlignment.objects.filter(run=run, pair=pair, pk=candidate_id)
        .select_related("pair", "simple_sentence", "complex_sentence")
        .first()
    )
    if selected is None:
        errors.append(f"candidate: candidate {candidate_id} does not belong to run {run.pk} of this pair")
    return selected


def _attach_heatmap(view: PairInspection, run: AlignmentRun, pair: DocumentPair, measure: str) -> None:
    aligned = AlignedPair.objects.select_related("pair").get(run=run, pair=pair)
    matrices = unpack_matrices(aligned.matrices)
    if not matrices:
        cells = aligned.simple_count * aligned.complex_count
        view.heatmap_missing_reason = (
            f"The similarity matrices of this pair were not stored: {aligned.simple_count} × {aligned.complex_count} = "
            f"{cells:,} cells is above the heatmap limit of {HEATMAP_MAX_CELLS:,} cells (or the pair is empty)."
        )
        return
    if measure not in matrices:
        view.heatmap_missing_reason = f"Run {run.pk} stored no matrix for {measure!r} for this pair."
        return
    view.heatmap = heatmap_payload(aligned, measure, matrices[measure])
