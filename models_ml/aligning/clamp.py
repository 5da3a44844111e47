"""Clamped decoding: the CRF decodes a pair with some simple sentences' links already known.

An annotator's labels (or a ``--fixed`` file) say, for some simple sentences, exactly which
complex sentences they go to (possibly none). The CRF decodes monotonically, so those known
links say a lot about their neighbours: if simple 10 goes to complex 12, simple 11 most likely
goes to 12 or 13. Clamping keeps each known sentence to the states its links allow and lets
Viterbi and forward-backward run over the rest, so the suggestions and marginals of the
unknown sentences are the CRF's *given* what is known (:meth:`NeuralCRF.clamped`).

A known simple sentence linked to complex sentences ``C`` may take any span state inside ``C``
(with single-sentence states only, any one of them; the span that best fits its neighbours is
what the transitions see); one linked to nothing takes the null state. Its own output is ``C``
itself, whatever state it took.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from models_ml.aligning.crf import span_states

Fixed = Mapping[int, Sequence[int]]  # simple sentence -> its complex sentences (empty: unaligned)


def fixed_check(fixed: Fixed, m: int, n: int) -> dict[int, tuple[int, ...]]:
    """``fixed`` as sorted tuples; ValueError naming a simple or complex index outside the document."""
    checked: dict[int, tuple[int, ...]] = {}
    for simple, complex_indices in fixed.items():
        if not 0 <= int(simple) < m:
            raise ValueError(f"known simple sentence {simple} is outside 0..{m - 1}")
        outside = [c for c in complex_indices if not 0 <= int(c) < n]
        if outside:
            raise ValueError(f"known simple sentence {simple} links complex sentence(s) {outside} outside 0..{n - 1}")
        checked[int(simple)] = tuple(sorted({int(c) for c in complex_indices}))
    return checked


def allowed_states(fixed: Mapping[int, Sequence[int]], m: int, n: int, max_span: int) -> np.ndarray:
    """(m, K+1) bool: every state for an unknown sentence; for a known one, null alone or the spans inside its links.

    ``fixed`` maps local simple indices (0..m-1) to local complex indices (0..n-1). A known
    sentence whose links all lie outside these n columns (another paragraph block) takes null here.
    """
    starts, ends = span_states(n, max_span)  # (K,), (K,)
    allowed = np.ones((m, len(starts) + 1), dtype=bool)  # (m, K+1)
    for simple, complex_indices in fixed.items():
        links = np.zeros(n + 1, dtype=np.int64)  # prefix counts of linked columns
        inside = [c for c in complex_indices if 0 <= c < n]
        if not inside:
            allowed[simple] = False
            allowed[simple, 0] = True
            continue
        marked = np.zeros(n, dtype=np.int64)
        marked[inside] = 1
        links[1:] = np.cumsum(marked)
        covered = links[ends] - links[starts]  # (K,) linked columns inside each span
        allowed[simple, 0] = False
        allowed[simple, 1:] = covered == (ends - starts)  # the whole span is linked
    return allowed
