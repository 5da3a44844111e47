"""Simple peers for the aligner benchmark: Gale & Church (1993) and a similarity arg-max.

The benchmark needs reference points that use no training data, so that the CRF aligner's
figures can be read against something:

* :func:`gale_church_align` - the classic length-based dynamic programme. It sees only
  sentence lengths in characters, is monotone, and is what parallel-corpus tools used
  before embeddings; a learned aligner that does not beat it is not worth its cost.
* :func:`argmax_baseline` - link each simple sentence to its most similar complex
  sentence when that similarity reaches a threshold, no sequence model at all. With the
  char 3-gram TF-IDF measure (:class:`models_ml.similarity.measures.TfidfCosine`) and threshold
  0.5 it is the "arg-max >= 0.5, no CRF" row of the benchmark.

Both return :class:`models_ml.data.io.AlignmentGroup` lists labelled "aligned", so
:mod:`models_ml.data.evaluate` scores them like any other aligner.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np
from scipy import special

from models_ml.data.io import AlignmentGroup, connected_groups

__all__ = ["GALE_CHURCH_BEADS", "argmax_baseline", "gale_church_align"]

# (complex sentences, simple sentences) -> prior probability of that bead. The first six are
# Gale & Church's (1993, table 5). 1:3 and 3:1 are not in the paper: simplification splits
# long sentences often enough that without them a 1:3 split is forced into 1:2 + 0:1 (the
# third simple sentence unaligned). The priors do not sum to 1; only their logs are used as
# costs, so that does not matter. Order matters only for ties: earlier beads win.
GALE_CHURCH_BEADS: dict[tuple[int, int], float] = {
    (1, 1): 0.89,
    (1, 0): 0.0099,
    (0, 1): 0.0099,
    (2, 1): 0.089,
    (1, 2): 0.089,
    (2, 2): 0.011,
    (1, 3): 0.005,
    (3, 1): 0.005,
}
GALE_CHURCH_VARIANCE = 6.8  # s^2: variance of simple characters per complex character (Gale & Church 1993)


def _length_penalty(complex_chars: np.ndarray, simple_chars: np.ndarray, c: float, s2: float) -> np.ndarray:
    """-log P(delta | match) for character counts, as in Gale & Church's ``match`` function.

    delta = (c * l1 - l2) / sqrt(s2 * mean), mean = (l1 + l2 / c) / 2, and
    P = 2 * (1 - Phi(|delta|)), computed in log space so long sentences do not underflow.
    Two empty sides cost 0. Shapes: both inputs (k,) or broadcastable, result the same.
    """
    complex_chars = np.asarray(complex_chars, dtype=np.float64)
    simple_chars = np.asarray(simple_chars, dtype=np.float64)
    mean = (complex_chars + simple_chars / c) / 2.0
    safe_mean = np.where(mean > 0, mean, 1.0)
    delta = np.abs(c * complex_chars - simple_chars) / np.sqrt(s2 * safe_mean)
    penalty = -(math.log(2.0) + special.log_ndtr(-delta))
    return np.where(mean > 0, penalty, 0.0)


def _check_sentences(sentences: Sequence[str], side: str) -> list[int]:
    lengths = []
    for index, sentence in enumerate(sentences):
        if not isinstance(sentence, str):
            raise ValueError(f"{side} sentence {index} must be a string, got {type(sentence).__name__}")
        lengths.append(len(sentence))
    return lengths


def _check_beads(beads: Mapping[tuple[int, int], float]) -> list[tuple[int, int, float]]:
    """Beads as (complex count, simple count, cost = -log prior), in the mapping's order."""
    if not beads:
        raise ValueError("the bead set is empty")
    checked = []
    for key, prior in beads.items():
        if (
            not isinstance(key, tuple)
            or len(key) != 2
            or any(not isinstance(k, int) or isinstance(k, bool) or k < 0 for k in key)
            or key == (0, 0)
        ):
            raise ValueError(f"a bead must be a (complex count, simple count) pair of non-negative ints, not both 0; got {key!r}")
        if not (isinstance(prior, (int, float)) and 0.0 < prior <= 1.0):
            raise ValueError(f"bead {key} has prior {prior!r}; priors must lie in (0, 1]")
        checked.append((key[0], key[1], -math.log(prior)))
    return checked


def gale_church_align(
    complex_sentences: Sequence[str],
    simple_sentences: Sequence[str],
    *,
    beads: Mapping[tuple[int, int], float] = GALE_CHURCH_BEADS,
    c: float | None = None,
    s2: float = GALE_CHURCH_VARIANCE,
) -> list[AlignmentGroup]:
    """Align two sentence lists by character lengths alone (Gale & Church 1993).

    Dynamic programme over (complex prefix, simple prefix): every step is a bead from
    ``beads`` (keys are (complex count, simple count), values prior probabilities), costing
    -log prior + :func:`_length_penalty` of the characters on both sides. The cheapest path
    is monotone and places every sentence in exactly one bead, 1:0 / 0:1 beads being
    deletions. Lengths are ``len(sentence)`` in characters, whitespace included.

    c: expected simple characters per complex character. Gale & Church use 1 (translations
    are about as long as their source); simplified text is shorter, so by default c is
    estimated per document as total simple characters / total complex characters (1 when
    either side has no characters). s2: the variance of that ratio, 6.8 as in the paper.

    Returns one "aligned" group (score None) per bead with sentences on both sides, in
    document order. Empty input on either side gives []. Time O(m * n * len(beads)),
    memory O(m * n), m and n the numbers of complex and simple sentences.
    Raises ValueError on non-string sentences, a bad bead set, c or s2 <= 0, or when the
    bead set cannot reach the end of both documents (e.g. no 1:0 bead and m > n).

    One function over 60 lines on purpose: the dynamic programme, its 0:b scan and the
    back-trace share the cost and back-pointer tables and read as the paper's one recursion.
    """
    complex_lengths = _check_sentences(complex_sentences, "complex")
    simple_lengths = _check_sentences(simple_sentences, "simple")
    bead_list = _check_beads(beads)
    if not (math.isfinite(s2) and s2 > 0):
        raise ValueError(f"s2 must be a positive number, got {s2!r}")
    if c is None:
        total_complex, total_simple = sum(complex_lengths), sum(simple_lengths)
        c = total_simple / total_complex if total_complex and total_simple else 1.0
    elif not (math.isfinite(c) and c > 0):
        raise ValueError(f"c must be a positive number, got {c!r}")
    m, n = len(complex_lengths), len(simple_lengths)
    if m == 0 or n == 0:
        return []

    complex_prefix = np.concatenate([[0], np.cumsum(complex_lengths)]).astype(np.float64)  # (m+1,)
    simple_prefix = np.concatenate([[0], np.cumsum(simple_lengths)]).astype(np.float64)  # (n+1,)
    cost = np.full((m + 1, n + 1), np.inf)  # (m+1, n+1) cheapest path to (i complex, j simple) done
    back = np.full((m + 1, n + 1), -1, dtype=np.int64)  # (m+1, n+1) index into bead_list of the last bead
    cost[0, 0] = 0.0
    # 0:b beads depend on the same row, so they run as a scan along j after the others.
    simple_only = [(k, b, prior_cost) for k, (a, b, prior_cost) in enumerate(bead_list) if a == 0]
    simple_only_costs = {  # bead index -> (n+1,) cost of that bead ending at simple sentence j
        k: np.concatenate([np.full(b, np.inf), prior_cost + _length_penalty(0.0, simple_prefix[b:] - simple_prefix[:-b], c, s2)])
        for k, b, prior_cost in simple_only
    }
    for i in range(m + 1):
        for k, (a, b, prior_cost) in enumerate(bead_list):
            if a == 0 or a > i or b > n:
                continue
            complex_chars = complex_prefix[i] - complex_prefix[i - a]
            simple_chars = simple_prefix[b:] - simple_prefix[: n + 1 - b]  # (n+1-b,) bead ending at j = b..n
            candidate = cost[i - a, : n + 1 - b] + prior_cost + _length_penalty(complex_chars, simple_chars, c, s2)
            better = candidate < cost[i, b:]  # (n+1-b,)
            cost[i, b:][better] = candidate[better]
            back[i, b:][better] = k
        if simple_only:
            row_cost, row_back = cost[i], back[i]
            for j in range(1, n + 1):
                for k, b, _ in simple_only:
                    if j >= b and row_cost[j - b] + simple_only_costs[k][j] < row_cost[j]:
                        row_cost[j] = row_cost[j - b] + simple_only_costs[k][j]
                        row_back[j] = k
    if not math.isfinite(cost[m, n]):
        raise ValueError(f"the bead set {sorted(beads)} cannot align {m} complex with {n} simple sentences")

    groups: list[AlignmentGroup] = []
    i, j = m, n
    while i > 0 or j > 0:
        a, b, _ = bead_list[int(back[i, j])]
        if a and b:
            groups.append(AlignmentGroup(tuple(range(i - a, i)), tuple(range(j - b, j)), "aligned"))
        i, j = i - a, j - b
    groups.reverse()
    return groups


def argmax_baseline(similarity: np.ndarray, threshold: float) -> list[AlignmentGroup]:
    """Link every simple sentence to its most similar complex sentence if that reaches ``threshold``.

    similarity: (m simple, n complex) matrix, higher = more similar (any measure of
    :mod:`models_ml.similarity.measures`). Simple sentence j is linked to argmax_i similarity[j, i]
    (the first on ties) when that maximum is >= threshold; links sharing a sentence are
    merged by :func:`models_ml.data.io.connected_groups` (so two simple sentences with the same
    best complex sentence form a 1:2 split). A group's score is the mean similarity of its
    links; labels are "aligned". No order constraint: the result need not be monotone.
    Raises ValueError if similarity is not 2-D, holds NaN or infinities, or threshold is not finite.
    """
    matrix = np.asarray(similarity, dtype=np.float64)  # (m, n)
    if matrix.ndim != 2:
        raise ValueError(f"similarity must be a 2-D (simple, complex) matrix, got shape {matrix.shape}")
    if not np.isfinite(matrix).all():
        raise ValueError("similarity contains NaN or infinite values")
    if not math.isfinite(threshold):
        raise ValueError(f"threshold must be a finite number, got {threshold!r}")
    if matrix.size == 0:
        return []
    best_complex = matrix.argmax(axis=1)  # (m,) arg-max complex sentence per simple sentence
    best_similarity = matrix[np.arange(matrix.shape[0]), best_complex]  # (m,)
    linked = np.flatnonzero(best_similarity >= threshold)  # (k,) simple sentences with a link
    groups = connected_groups((int(best_complex[j]), int(j), "aligned") for j in linked)
    # Each simple sentence has at most one link, so a group's links are its simple sentences'.
    return [replace(group, score=float(best_similarity[list(group.simple)].mean())) for group in groups]
