"""Reads for the researcher's inspection view of one document pair: runs, candidates, heatmap, word diff.

Selectors-style: these functions read and shape data for ``pair_inspect.html`` and
never write. Query parameters are parsed in :mod:`alignment.inspect_state`, so a bad value
turns into a message that names the parameter instead of an exception. Human labels come
through :mod:`alignment.human_labels`, for the viewer's eyes only.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import QuerySet
from django.http import QueryDict
from django.shortcuts import get_object_or_404

from alignment.aligning.measures import measure_meaning
from alignment.aligning.scoring import HEATMAP_MAX_CELLS, unpack_matrices
from alignment.human_labels import HumanLabel, Item, Overlay, overlay_build, pair_human_labels
from alignment.inspect_state import HUMAN_CHOICES, LABEL_CHOICES, LABEL_FILTERS, SORTS, InspectState, inspect_params_parse
from alignment.models import (
    AlignedPair,
    AlignmentRun,
    CandidateAlignment,
    DocumentPair,
    ParagraphAlignment,
    Sentence,
)
from alignment.selectors import corpora_visible_to
from alignment.word_diff import WordDiff, word_diff  # word_diff is re-exported: the annotation screen imports it from here

CRF_MARGINAL = "crf_marginal"
TABLE_ROW_LIMIT = 500
TOOLTIP_CHARS = 160  # heatmap hover


@dataclass(frozen=True)
class ScoreColumn:
    """A number the page shows, and what it is: the researcher sees raw scores, so each one says what it means."""

    name: str
    header: str  # the name with break points, so long names may wrap
    meaning: str
    primary: bool = False  # the CRF's measure: its score is the CRF's raw emission


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
    human: HumanLabel | None = None
    verdict: str = ""  # how the model compares with the humans (alignment.human_labels.VERDICTS), "" when they agree


@dataclass(frozen=True)
class UnproposedLink:
    """A pair the humans link that the run never made a candidate: the plainest kind of miss."""

    simple_number: int  # 1-based, as the page counts
    complex_number: int
    human: HumanLabel
    simple_text: str
    complex_text: str


@dataclass
class PairInspection:
    """Everything ``pair_inspect.html`` shows for one pair; ``run`` is None when no run aligned it."""

    state: InspectState
    errors: list[str] = field(default_factory=list)
    runs: list[AlignmentRun] = field(default_factory=list)
    run: AlignmentRun | None = None
    measures: list[str] = field(default_factory=list)  # the run's measures, table columns
    score_columns: list[ScoreColumn] = field(default_factory=list)  # the run's measures, then the CRF marginal
    measure_choices: list[str] = field(default_factory=list)
    measure_meaning: str = ""  # what the heatmap's numbers are
    heatmap: dict | None = None
    heatmap_missing_reason: str = ""
    rows: list[CandidateRow] = field(default_factory=list)
    matching: int = 0
    sort_links: dict[str, str] = field(default_factory=dict)
    selected: CandidateAlignment | None = None
    diff: WordDiff | None = None
    group_members: list[CandidateAlignment] = field(default_factory=list)
    selected_scores: list[tuple[str, float | None, str]] = field(default_factory=list)
    selected_note: MarginalNote | None = None
    selected_human: tuple[HumanLabel | None, str] | None = None  # (human label, verdict) of the open candidate
    marginal_tags: set[str] = field(default_factory=set)  # the tags in the table, explained once above it
    label_choices: list[tuple[str, str]] = field(default_factory=lambda: list(LABEL_CHOICES))
    human_choices: list[tuple[str, str]] = field(default_factory=lambda: list(HUMAN_CHOICES))
    overlay: Overlay | None = None  # None: no human labels this viewer may see
    unproposed: list[UnproposedLink] = field(default_factory=list)  # human links with no candidate row


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


def candidate_scores(candidate: CandidateAlignment, measures: list[str]) -> list[tuple[str, float | None, str]]:
    """(measure, score, what the score is) in the run's measure order; the stored JSON does not keep that order."""
    return [(name, candidate.scores.get(name), measure_meaning(name)) for name in measures]


def candidate_human(user: AbstractBaseUser | AnonymousUser, candidate: CandidateAlignment) -> tuple[HumanLabel | None, str] | None:
    """(human label, verdict) of one candidate as ``user`` may see it; None when they see no labels of its pair."""
    overlay = _overlay(user, candidate.run, candidate.pair)
    if overlay is None:
        return None
    return overlay.cells.get((candidate.simple_sentence.index, candidate.complex_sentence.index), (None, ""))


def _overlay(user: AbstractBaseUser | AnonymousUser | None, run: AlignmentRun, pair: DocumentPair) -> Overlay | None:
    """The human labels ``user`` may see beside the run's candidates (None without any)."""
    labels = pair_human_labels(user=user, pair=pair) if user is not None else None
    if labels is None:
        return None
    predicted = CandidateAlignment.objects.filter(run=run, pair=pair).values_list(
        "simple_sentence__index", "complex_sentence__index", "label"
    )
    return overlay_build(labels, {(j, i): label for j, i, label in predicted})


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


def heatmap_payload(aligned: AlignedPair, measure: str, matrix: np.ndarray, overlay: Overlay | None = None) -> dict:
    """JSON-ready heatmap: values (m, n) rounded to 3 decimals, paragraph blocks, Viterbi cells, candidate ids and
    labels, and the human labels (``overlay``) with each one's verdict on the model.

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
    rows = CandidateAlignment.objects.filter(run_id=aligned.run_id, pair=pair).values_list(
        "pk", "simple_sentence__index", "complex_sentence__index", "label"
    )
    candidates, predicted = {}, {}
    for pk, j, i, label in rows:
        candidates[f"{j}:{i}"], predicted[f"{j}:{i}"] = pk, label
    human = {
        f"{j}:{i}": {"label": label.label if label else None, "status": label.status if label else "", "verdict": found}
        for (j, i), (label, found) in (overlay.cells.items() if overlay else ())
        if label is not None or found
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
        "predicted": predicted,
        "meaning": measure_meaning(measure),
        "human": human,
        "human_source": overlay.labels.source if overlay else "",
        "human_verified": bool(overlay and overlay.labels.verified),
    }


def pair_inspection_build(
    *, pair: DocumentPair, query: QueryDict, user: AbstractBaseUser | AnonymousUser | None = None, with_heatmap: bool = True
) -> PairInspection:
    """Resolve the run, measure and candidate the query asks for and read what the page shows.

    A bad parameter adds a message naming it and falls back to its default, so the page
    still shows something useful next to the message. ``user`` decides which human labels
    are shown (none without one).
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
    view.score_columns = [
        ScoreColumn(name, name.replace("_", "_\u200b"), measure_meaning(name), primary=name == run.primary_measure) for name in run.measures
    ]
    view.measure_choices = [*run.measures, CRF_MARGINAL]
    measure = state.measure or run.primary_measure
    if measure not in view.measure_choices:
        errors.append(f"measure: {measure!r} was not scored by run {run.pk}; choose one of {', '.join(view.measure_choices)}")
        measure = run.primary_measure
    view.measure_meaning = measure_meaning(measure)
    state = replace(state, run_id=run.pk, measure=measure)
    view.selected = _selected_candidate(run, pair, state.candidate_id, errors)
    view.state = state = replace(state, candidate_id=view.selected.pk if view.selected else None)
    view.overlay = _overlay(user, run, pair)
    _attach_table(view, run, pair)
    if with_heatmap:
        _attach_heatmap(view, run, pair, measure)
    return view


def _attach_table(view: PairInspection, run: AlignmentRun, pair: DocumentPair) -> None:
    """The candidate rows the filters keep, in the chosen order, with their notes, human labels and sort links."""
    state, overlay = view.state, view.overlay
    candidates = pair_candidates(run, pair, sort=state.sort, label=state.label, min_disagreement=state.min_disagreement)
    if state.human != "all":
        kept = _human_filter(overlay, state.human)
        every = CandidateAlignment.objects.filter(run=run, pair=pair).values_list("pk", "simple_sentence__index", "complex_sentence__index")
        candidates = candidates.filter(pk__in=[pk for pk, j, i in every if (j, i) in kept])
    view.matching = candidates.count()
    shown = list(candidates.select_related("pair")[:TABLE_ROW_LIMIT])
    notes = marginal_notes(shown + ([view.selected] if view.selected is not None else []))
    cells = overlay.cells if overlay is not None else {}
    view.rows = []
    for c in shown:
        human, found = cells.get((c.simple_sentence.index, c.complex_sentence.index), (None, ""))
        scores = [c.scores.get(name) for name in run.measures]
        view.rows.append(CandidateRow(c, scores, state.query(candidate_id=c.pk), notes.get(c.pk), human, found))
    view.marginal_tags = {row.marginal_note.tag for row in view.rows if row.marginal_note}
    view.unproposed = _unproposed_links(pair, overlay) if overlay is not None and overlay.unproposed else []
    view.sort_links = {
        column: state.query(sort="position" if column == "position" else (column if state.sort == f"-{column}" else f"-{column}"))
        for column in ("position", "score", "crf_marginal", "disagreement")
    }
    if view.selected is not None:
        view.diff = word_diff(view.selected.complex_sentence.text, view.selected.simple_sentence.text)
        view.group_members = candidate_group_members(view.selected)
        view.selected_scores = candidate_scores(view.selected, run.measures)
        view.selected_note = notes.get(view.selected.pk)
        if overlay is not None:
            view.selected_human = cells.get((view.selected.simple_sentence.index, view.selected.complex_sentence.index), (None, ""))


def _unproposed_links(pair: DocumentPair, overlay: Overlay) -> list[UnproposedLink]:
    simple = dict(Sentence.objects.filter(document_id=pair.simple_document_id).values_list("index", "text"))
    complex_ = dict(Sentence.objects.filter(document_id=pair.complex_document_id).values_list("index", "text"))
    return [UnproposedLink(j + 1, i + 1, human, simple.get(j, ""), complex_.get(i, "")) for (j, i), human in overlay.unproposed]


def _human_filter(overlay: Overlay | None, human: str) -> set[Item]:
    """The items the human filter keeps: labelled by humans, or where the model disagrees with them."""
    if overlay is None:
        return set()
    if human == "disagrees":
        return overlay.disagreeing()
    return {item for item, (label, _) in overlay.cells.items() if label is not None}


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
    view.heatmap = heatmap_payload(aligned, measure, matrices[measure], view.overlay)
