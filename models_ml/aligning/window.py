"""Clamped decoding of a few windows of rows instead of the whole pair: what a label can change, and only that.

Why: after each label the annotation screen asks for the pair decoded again with the labels clamped
(:mod:`models_ml.aligning.clamp`). Decoding a whole 500 x 500 pair costs 0.5-5 s on one core (O(m K^2) in the
CRF, K states per simple sentence), too much for a web request. But the CRF (:mod:`models_ml.aligning.crf`) is
a linear chain over the simple sentences of each block (a paragraph group, :meth:`Aligner.blocks`): once one
sentence's state is known, the sentences before it and those after it are independent, and a label's pull on
the others' Viterbi states and marginals fades within a few sentences. So only the rows near a label are
decoded again, and each window is joined to the rest of the pair by clamping the rows just outside it to the
states the run stored (its Viterbi path, ``AlignedPair.viterbi``).

What is decoded, per block:

- the rows within ``context`` rows of a *centre* (a labelled simple sentence; the caller lists them most
  important first), except labelled rows whose label allows a single state (one link, or none): those are
  known states that cut the chain, so they bound a window instead of being decoded in it;
- each maximal run of such rows (with an unlabelled one in it) is a *piece*, decoded with the rows just outside
  it clamped: a labelled row to its label, any other row to the state the run stored;
- over a band of the block's columns: those that the piece's clamps, labels and stored states touch, and
  ``BAND_MARGIN`` columns either side (the CRF's transitions penalise jumps, so a window's states stay near the
  stored path); all the block's columns when the piece is the whole block or the block is narrow.

A block's pieces are decoded by one :meth:`Aligner.align` call, stacked with a row clamped to null between two
(see :func:`_decode_pieces`: each is decoded exactly as it would be alone). A piece that is its whole block is
decoded over all its columns with no clamp but the labels: exactly the full clamped decoding of that block.
Pieces are taken centre by centre until ``budget`` rows (clamps included, wide bands weighing more) have been
decoded; ``next_centre`` says where a further call would go on.

A stored state that is a span of two or more complex sentences (``max_span`` > 1) clamps its row to the spans
inside it (what :func:`models_ml.aligning.clamp.allowed_states` allows), not to that one span: the window's
edge is then a little looser than the stored path.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from models_ml.aligning.aligner import Aligner, AlignmentResult, BlockPlan
from models_ml.aligning.clamp import Fixed, fixed_check
from models_ml.data.io import AlignmentGroup

__all__ = ["BAND_MARGIN", "CONTEXT_ROWS", "ROW_BUDGET", "WindowedDecode", "decode_windows"]

CONTEXT_ROWS = 8
"""Rows decoded on each side of a label. On the 500 x 500 pair of ``bench/refresh_latency.py`` (shipped model), a label
that moved a sentence's link by 1 to 3 complex sentences changed no other sentence's Viterbi link more than 2 rows away
(24 labels tried against the full decoding), and the windows' suggestions equal the full decoding's on every sentence
they answer; 8 leaves a margin for texts whose sentences are less distinct, and keeps a window at 17 rows plus the two
clamps."""

BAND_MARGIN = 8
"""Columns kept on each side of the columns a piece's clamps, labels and stored states touch. Within a window of
17 rows the stored path moves a few columns; a state further from it than this would need a jump that the
trained transitions make improbable."""

NARROW_BLOCK_COLUMNS = 64
"""A block with at most this many complex sentences is decoded over all its columns (the band saves nothing there)."""

ROW_BUDGET = 80
"""Rows decoded per call, clamps included, a row over a band wider than ``NARROW_BLOCK_COLUMNS`` counting
(width / NARROW_BLOCK_COLUMNS)^2 rows. 80 narrow rows take about 50 ms on one core of the 2-core reference machine
with the shipped model (``bench/refresh_latency.py``), a third of the refresh's 150 ms p95 budget: enough for the
frontier of an annotator labelling in document order (one window) or the four most recent scattered labels. The
first centre's window is always decoded, however wide: a label far from the stored path (the other telling of a
story told twice) makes a band as wide as the gap, up to the whole block (about 0.2 s for 500 columns)."""


@dataclass
class WindowedDecode:
    """What :func:`decode_windows` found for one (m, n) pair.

    result: full-size, as :meth:`Aligner.align` would answer for the rows in ``decoded`` (their links, state
        marginals, pair marginals and groups); the other rows keep the stored path (labelled rows their labels)
        with marginal 1 and no pair marginals.
    decoded: the rows decoded again, in document order (labelled rows with several allowed states among them).
    rows_decoded: the rows the CRF ran over, clamps included: the cost, at most ``budget`` unless the first
        centre's window alone is larger.
    deferred: rows within reach of a centre that the budget left out (not decoded this time).
    next_centre: the index in ``centres`` to go on from, or None when every centre was reached.
    """

    result: AlignmentResult
    decoded: list[int]
    rows_decoded: int
    deferred: list[int] = field(default_factory=list)
    next_centre: int | None = None


@dataclass
class _Block:
    """One block of the plan: its rows (r,), columns (c,), masked similarity (r, c), and the labels inside it."""

    rows: np.ndarray
    cols: np.ndarray
    sim: np.ndarray
    links: dict[int, tuple[int, ...]]  # position of a labelled row -> its complex sentences in this block, as positions
    column_position: dict[int, int]  # document index of each of the block's complex sentences -> its position

    def cut(self, position: int) -> bool:
        """A labelled row whose label allows one state: a known state, which ends a window instead of being decoded."""
        return position in self.links and len(self.links[position]) <= 1


def decode_windows(
    aligner: Aligner,
    plan: BlockPlan,
    similarity: np.ndarray,
    fixed: Fixed,
    stored: Sequence[Sequence[int]],
    centres: Sequence[int],
    *,
    start: int = 0,
    context: int = CONTEXT_ROWS,
    budget: int = ROW_BUDGET,
) -> WindowedDecode:
    """Decode the windows around ``centres[start:]`` of one pair, given its labels ``fixed`` (see the module docstring).

    ``plan`` is ``aligner.blocks(similarity, ...)`` for the (m, n) ``similarity`` the run decoded; ``stored`` the
    run's links per simple sentence (its Viterbi path); ``fixed`` the labels, as for :meth:`Aligner.align`.
    """
    m, n = similarity.shape
    if len(stored) != m:
        raise ValueError(f"the stored path has {len(stored)} simple sentences, the scores {m}")
    fixed = fixed_check(fixed, m, n)
    blocks = [_block(rows, cols, sim, fixed, n) for rows, cols, sim in plan.blocks]
    block_of = np.full(m, -1, dtype=np.int64)  # (m,) block of each simple sentence, -1 outside every block
    position_of = np.zeros(m, dtype=np.int64)  # (m,) its position in that block
    for index, block in enumerate(blocks):
        block_of[block.rows] = index
        position_of[block.rows] = np.arange(len(block.rows))
    chosen, next_centre = _choose(blocks, block_of, position_of, stored, centres, start, context, budget)
    links = [tuple(int(c) for c in fixed.get(j, stored[j])) for j in range(m)]
    result = AlignmentResult(
        groups=[],
        similarity=similarity,
        paragraph_mask=plan.mask,
        paragraph_groups=plan.paragraph_groups,
        chosen_complex=links,
        state_marginals=np.ones(m, dtype=np.float32),  # (m,)
        pair_marginals=np.zeros((m, n), dtype=np.float32),  # (m, n)
    )
    decoded: list[int] = []
    rows_decoded = 0
    for index, positions in sorted(chosen.items()):
        if _pieces(blocks[index], positions):
            rows_decoded += _decode_pieces(aligner, blocks[index], positions, stored, result, decoded)
    result.groups.sort(key=lambda group: (group.simple[0], group.complex[0]))
    deferred = _deferred(blocks, block_of, position_of, centres[next_centre:], chosen, context) if next_centre is not None else []
    return WindowedDecode(result, sorted(decoded), rows_decoded, deferred, next_centre)


def _block(rows: np.ndarray, cols: np.ndarray, sim: np.ndarray, fixed: dict[int, tuple[int, ...]], n: int) -> _Block:
    column_position = np.full(n, -1, dtype=np.int64)  # (n,)
    column_position[cols] = np.arange(len(cols))
    links = {
        position: tuple(int(column_position[c]) for c in fixed[int(row)] if column_position[c] >= 0)
        for position, row in enumerate(rows)
        if int(row) in fixed
    }
    return _Block(rows, cols, sim, links, {int(c): k for k, c in enumerate(cols)})


def _window(block: _Block, position: int, context: int) -> set[int]:
    """The positions a centre at ``position`` re-decodes: within ``context`` of it, known states left out."""
    return {p for p in range(max(0, position - context), min(len(block.rows), position + context + 1)) if not block.cut(p)}


def _pieces(block: _Block, positions: set[int]) -> list[tuple[int, int]]:
    """The runs of ``positions`` worth decoding, as (first, last): those with an unlabelled row (a run of labelled rows
    between two known states changes nothing the refresh shows)."""
    return [(a, b) for a, b in _runs(sorted(positions)) if any(p not in block.links for p in range(a, b + 1))]


def _cost(block: _Block, positions: set[int], stored: Sequence[Sequence[int]]) -> float:
    """What decoding ``positions`` of a block costs, in rows over a narrow band: the rows the CRF runs over (each piece,
    the clamp on either side, a separator between two), each counting (width / NARROW_BLOCK_COLUMNS)^2 times when the
    band is wider (the CRF's work per row grows with the square of its states)."""
    pieces = [_piece(block, first, last, stored) for first, last in _pieces(block, positions)]
    if not pieces:
        return 0.0
    rows = sum(piece.high - piece.low + 1 for piece in pieces) + len(pieces) - 1
    width = max(len(piece.band) for piece in pieces)
    return rows * max(1.0, (width / NARROW_BLOCK_COLUMNS) ** 2)


def _choose(
    blocks: list[_Block],
    block_of: np.ndarray,
    position_of: np.ndarray,
    stored: Sequence[Sequence[int]],
    centres: Sequence[int],
    start: int,
    context: int,
    budget: int,
) -> tuple[dict[int, set[int]], int | None]:
    """Block -> positions to decode, centre by centre while the budget lasts; and the first centre left out (or None)."""
    chosen: dict[int, set[int]] = {}
    costs: dict[int, float] = {}
    for index in range(start, len(centres)):
        row = int(centres[index])
        if not 0 <= row < len(block_of) or block_of[row] < 0:
            continue  # outside every block: the CRF never decodes it
        number = int(block_of[row])
        trial = chosen.get(number, set()) | _window(blocks[number], int(position_of[row]), context)
        if number in chosen and trial == chosen[number]:
            continue  # nothing new: its window lies inside those already taken (a run of labels in document order)
        cost = _cost(blocks[number], trial, stored)
        spent = sum(costs.values())
        if spent and spent - costs.get(number, 0) + cost > budget:
            return chosen, index
        chosen[number], costs[number] = trial, cost
    return chosen, None


def _runs(positions: list[int]) -> list[tuple[int, int]]:
    """Maximal runs of consecutive positions, as (first, last)."""
    runs: list[tuple[int, int]] = []
    for position in positions:
        if runs and runs[-1][1] == position - 1:
            runs[-1] = (runs[-1][0], position)
        else:
            runs.append((position, position))
    return runs


@dataclass
class _Piece:
    """Positions ``first..last`` of a block to decode, its rows ``low..high`` (the clamps included), their known
    states (position -> column positions) and the band of column positions it is decoded over."""

    first: int
    last: int
    low: int
    high: int
    known: dict[int, tuple[int, ...]]
    band: np.ndarray


def _decode_pieces(
    aligner: Aligner, block: _Block, positions: set[int], stored: Sequence[Sequence[int]], result: AlignmentResult, decoded: list[int]
) -> int:
    """Decode a block's ``positions``, piece by piece in one call; write them into ``result``; the rows run over.

    Long because it stacks the pieces and reads them back. The pieces are stacked in document order into one
    (rows, width) matrix, each over a band of the same width, with a row clamped to the null state between two
    pieces: a piece's last row is clamped too (or ends the block, and then its piece is the last), and every
    non-null state moves to null by the same transition, so the separator adds the same to every path and each
    piece is decoded exactly as it would be alone; it also keeps groups from joining across pieces. Only the first
    piece can start the block (from the virtual null state, as the block's own decoding does).
    """
    pieces = [_piece(block, first, last, stored) for first, last in _pieces(block, positions)]
    width = max(len(piece.band) for piece in pieces)
    separator = np.full((1, width), aligner.config.masked_similarity, dtype=block.sim.dtype)  # (1, width)
    stacked: list[np.ndarray] = []
    local_fixed: dict[int, tuple[int, ...]] = {}
    offsets: list[int] = []
    for piece in pieces:
        if stacked:
            local_fixed[sum(len(rows) for rows in stacked)] = ()
            stacked.append(separator)
        offsets.append(sum(len(rows) for rows in stacked))
        piece.band = _widened(piece.band, width, len(block.cols))
        stacked.append(block.sim[np.ix_(np.arange(piece.low, piece.high + 1), piece.band)])  # (rows of the piece, width)
        band_index = {int(c): k for k, c in enumerate(piece.band)}
        local_fixed.update({offsets[-1] + p - piece.low: tuple(band_index[c] for c in links) for p, links in piece.known.items()})
    sim = np.concatenate(stacked)  # (rows, width)
    local = aligner.align([""] * width, [""] * len(sim), similarity=sim, fixed=local_fixed)
    for piece, offset in zip(pieces, offsets):
        columns = block.cols[piece.band]  # (width,) document indices of the piece's columns
        for p in range(piece.first, piece.last + 1):
            row, at = int(block.rows[p]), offset + p - piece.low
            decoded.append(row)
            if p in block.links:  # a labelled row keeps its links (all of them, in any block), as Aligner.align does
                continue
            result.chosen_complex[row] = tuple(int(columns[c]) for c in local.chosen_complex[at])
            result.state_marginals[row] = local.state_marginals[at]
            result.pair_marginals[row, columns] = local.pair_marginals[at]
    for group in local.groups:  # never across a separator: each lies in one piece
        piece = pieces[bisect_right(offsets, group.simple[0]) - 1]
        offset = offsets[pieces.index(piece)]
        inside = [piece.low + s - offset for s in group.simple]
        if any(piece.first <= p <= piece.last for p in inside):
            columns = block.cols[piece.band]
            simple = tuple(int(block.rows[p]) for p in inside)
            result.groups.append(AlignmentGroup(tuple(int(columns[c]) for c in group.complex), simple, group.label, group.score))
    return len(sim)


def _piece(block: _Block, first: int, last: int, stored: Sequence[Sequence[int]]) -> _Piece:
    """Positions ``first..last`` with their clamps: a label where there is one, else the run's stored state."""
    low = first - 1 if first > 0 else first
    high = last + 1 if last < len(block.rows) - 1 else last
    known = {p: block.links[p] for p in range(low, high + 1) if p in block.links}
    for p in {low, high} - {first, last} - set(known):
        known[p] = tuple(block.column_position[c] for c in stored[int(block.rows[p])] if c in block.column_position)
    whole = (low, high) == (0, len(block.rows) - 1)
    return _Piece(first, last, low, high, known, _band(block, range(low, high + 1), known, stored, whole=whole))


def _band(
    block: _Block,
    span: range,
    known: dict[int, tuple[int, ...]],
    stored: Sequence[Sequence[int]],
    *,
    whole: bool,
) -> np.ndarray:
    """The block's column positions a piece is decoded over (consecutive): see the module docstring."""
    width = len(block.cols)
    if whole or width <= NARROW_BLOCK_COLUMNS:
        return np.arange(width)
    touched = {c for links in known.values() for c in links}  # the clamps' and the labels' columns
    touched |= {block.column_position[c] for p in span for c in stored[int(block.rows[p])] if c in block.column_position}
    if not touched:  # nothing in the piece is linked: around its rows' best columns
        touched = {int(c) for c in block.sim[np.asarray(span)].argmax(axis=1)}
    low, high = max(0, min(touched) - BAND_MARGIN), min(width - 1, max(touched) + BAND_MARGIN)
    return np.arange(low, high + 1)


def _widened(band: np.ndarray, width: int, columns: int) -> np.ndarray:
    """``band`` (consecutive column positions) grown to ``width`` columns, to the right first, within the block."""
    low = max(0, min(int(band[0]), columns - width))
    return np.arange(low, low + width)


def _deferred(
    blocks: list[_Block], block_of: np.ndarray, position_of: np.ndarray, centres: Sequence[int], chosen: dict[int, set[int]], context: int
) -> list[int]:
    """Rows the windows of ``centres`` would decode that ``chosen`` does not."""
    rows: set[int] = set()
    for row in centres:
        row = int(row)
        if 0 <= row < len(block_of) and block_of[row] >= 0:
            number = int(block_of[row])
            window = _window(blocks[number], int(position_of[row]), context) - chosen.get(number, set())
            rows |= {int(blocks[number].rows[p]) for p in window}
    return sorted(rows)
