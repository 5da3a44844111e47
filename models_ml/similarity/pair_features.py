"""Features of every (simple, complex) sentence pair of one document pair, for a learned pair scorer.

Why: one similarity measure cannot tell a split from an unrelated pair. When a complex
sentence is split into three simple ones, each part shares only a third of the complex
sentence, so a symmetric cosine is low for every part, while *how much of the simple
sentence the complex one covers* stays high. And an English encoder is weak on German,
where characters and words still carry the pair. So the scorer (:mod:`models_ml.similarity.pair_scorer`)
sees several views of each pair, each an (m, n) matrix (row = simple sentence):

* ``char3_cosine``: TF-IDF cosine of character 3-grams (CATS' C3G), IDF over the pair's sentences;
* ``char3_cover_simple`` / ``char3_cover_complex``: share of one side's distinct 3-grams found
  in the other (asymmetric: a split part is covered by its complex sentence, not the reverse);
* ``word_cover_simple`` / ``word_cover_complex``: IDF-weighted share of one side's content words
  (no stop words, prefix-stemmed so "Hauses" meets "Haus") found in the other;
* ``length_ratio``: log of simple / complex length in characters;
* ``position``: distance of the two sentences' relative positions in their documents;
* ``embedding_cosine``: cosine of sentence vectors, when the caller has them (optional);
* relative views of the strongest of these (``*_row_margin``: the score minus the best score of
  the simple sentence's row, 0 for its best; ``*_col_margin`` the same over the complex column;
  ``*_neighbour``: the better score of the simple sentence just before or after against the
  same complex sentence, which is how a split looks from one of its parts). Margins are what
  keep the aligner from linking a sentence whose best match is weak everywhere.

Everything is sparse matrix products over the two documents' sentences: O(m n) memory for the
output and no Python loop over pairs.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np
from scipy import sparse

from models_ml.similarity.measures import TfidfCosine, validate_sentences
from models_ml.similarity.stop_words import STOP_WORDS

__all__ = ["BASE_FEATURES", "CHAR3_FEATURE", "EMBEDDING_FEATURES", "feature_names", "pair_features"]

_WORD = re.compile(r"[^\W\d_]+")  # letters only: numbers and punctuation carry no content here
_STOP = frozenset().union(*STOP_WORDS.values())
STEM_LENGTH = 5  # German and English inflection mostly changes the end of a word

BASE_FEATURES = (
    "char3_cosine",
    "char3_cover_simple",
    "char3_cover_complex",
    "word_cover_simple",
    "word_cover_complex",
    "length_ratio",
    "position",
)
CHAR3_FEATURE = BASE_FEATURES.index("char3_cosine")  # its column: the char 3-gram TF-IDF measure's scores as they are
RELATIVE_OF = ("char3_cosine", "char3_cover_simple", "word_cover_simple")
EMBEDDING_FEATURES = ("embedding_cosine",)


def feature_names(with_embedding: bool) -> tuple[str, ...]:
    """The feature order of :func:`pair_features` (the last axis of its result)."""
    relative_sources = RELATIVE_OF + (EMBEDDING_FEATURES if with_embedding else ())
    relative = tuple(f"{name}_{kind}" for name in relative_sources for kind in ("row_margin", "col_margin", "neighbour"))
    return BASE_FEATURES + (EMBEDDING_FEATURES if with_embedding else ()) + relative


def pair_features(simple: Sequence[str], complex: Sequence[str], embedding_cosine: np.ndarray | None = None) -> np.ndarray:
    """Feature tensor (m, n, f) in the order of :func:`feature_names` (``embedding_cosine`` given or not).

    The ``char3_cosine`` column (:data:`CHAR3_FEATURE`) is exactly what ``TfidfCosine("char3").score`` returns: an
    alignment run stores it as that measure's scores instead of computing them again."""
    simple = validate_sentences(simple, "simple")
    complex = validate_sentences(complex, "complex")
    m, n = len(simple), len(complex)
    with_embedding = embedding_cosine is not None
    names = feature_names(with_embedding)
    if m == 0 or n == 0:
        return np.zeros((m, n, len(names)), dtype=np.float32)
    char3 = TfidfCosine("char3")
    counts = char3.term_counts(simple, complex)  # the pair's 3-grams, taken once for the cosine and the covers
    views: dict[str, np.ndarray] = {"char3_cosine": char3.score_counts(counts)}
    views["char3_cover_simple"], views["char3_cover_complex"] = _cover(_indicator_of(counts.simple), _indicator_of(counts.complex), None)
    simple_words, complex_words = [_content_stems(s) for s in simple], [_content_stems(c) for c in complex]
    views["word_cover_simple"], views["word_cover_complex"] = _set_cover(simple_words, complex_words, _idf(simple_words + complex_words))
    simple_length = np.array([len(s) for s in simple], dtype=np.float32)  # (m,)
    complex_length = np.array([len(c) for c in complex], dtype=np.float32)  # (n,)
    views["length_ratio"] = np.log((simple_length[:, None] + 1.0) / (complex_length[None, :] + 1.0))  # (m, n)
    simple_position = (np.arange(m, dtype=np.float32) + 0.5) / m  # (m,)
    complex_position = (np.arange(n, dtype=np.float32) + 0.5) / n  # (n,)
    views["position"] = np.abs(simple_position[:, None] - complex_position[None, :])  # (m, n)
    if with_embedding:
        cosine = np.asarray(embedding_cosine, dtype=np.float32)
        if cosine.shape != (m, n):
            raise ValueError(f"embedding_cosine has shape {cosine.shape}, expected {(m, n)}")
        views["embedding_cosine"] = cosine
    for name in RELATIVE_OF + (EMBEDDING_FEATURES if with_embedding else ()):
        score = views[name]  # (m, n)
        views[f"{name}_row_margin"] = score - score.max(axis=1, keepdims=True)
        views[f"{name}_col_margin"] = score - score.max(axis=0, keepdims=True)
        views[f"{name}_neighbour"] = _neighbour(score)
    return np.stack([views[name] for name in names], axis=-1).astype(np.float32)  # (m, n, f)


def _content_stems(sentence: str) -> set[str]:
    """Lower-cased words of letters, stop words dropped, cut to their first STEM_LENGTH letters."""
    return {word[:STEM_LENGTH] for word in _WORD.findall(sentence.lower()) if word not in _STOP}


def _idf(term_sets: Sequence[set[str]]) -> dict[str, float]:
    frequencies = Counter(term for terms in term_sets for term in terms)
    size = len(term_sets)
    return {term: math.log((1.0 + size) / (1.0 + df)) + 1.0 for term, df in frequencies.items()}


def _set_cover(
    simple_sets: Sequence[set[str]], complex_sets: Sequence[set[str]], weights: dict[str, float] | None
) -> tuple[np.ndarray, np.ndarray]:
    """(share of each simple set found in each complex set, the reverse): two (m, n) matrices in [0, 1].

    With ``weights`` a term counts with its weight (IDF), else 1. An empty set covers and is covered by nothing.
    """
    vocabulary: dict[str, int] = {}
    for terms in (*simple_sets, *complex_sets):
        for term in terms:
            vocabulary.setdefault(term, len(vocabulary))
    weight = np.ones(len(vocabulary), dtype=np.float32)  # (V,)
    if weights is not None:
        for term, index in vocabulary.items():
            weight[index] = weights[term]
    return _cover(_indicator(simple_sets, vocabulary), _indicator(complex_sets, vocabulary), weight)


def _cover(simple_matrix: sparse.csr_matrix, complex_matrix: sparse.csr_matrix, weight: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_set_cover` of 0/1 matrices (m, V) and (n, V) over one vocabulary; ``weight`` (V,), or None for 1 each."""
    if weight is None:
        weight = np.ones(simple_matrix.shape[1], dtype=np.float32)  # (V,)
    shared = (simple_matrix @ sparse.diags(weight) @ complex_matrix.T).toarray()  # (m, n) weighted intersection
    simple_mass = np.asarray(simple_matrix @ weight).ravel()  # (m,)
    complex_mass = np.asarray(complex_matrix @ weight).ravel()  # (n,)
    cover_simple = np.divide(shared, simple_mass[:, None], out=np.zeros_like(shared), where=simple_mass[:, None] > 0)
    cover_complex = np.divide(shared, complex_mass[None, :], out=np.zeros_like(shared), where=complex_mass[None, :] > 0)
    return cover_simple.astype(np.float32), cover_complex.astype(np.float32)


def _indicator(term_sets: Sequence[set[str]], vocabulary: dict[str, int]) -> sparse.csr_matrix:
    indices = [vocabulary[term] for terms in term_sets for term in sorted(terms)]
    indptr = np.cumsum([0, *(len(terms) for terms in term_sets)])
    data = np.ones(len(indices), dtype=np.float32)
    return sparse.csr_matrix((data, indices, indptr), shape=(len(term_sets), len(vocabulary)))


def _indicator_of(counts: sparse.csr_matrix) -> sparse.csr_matrix:
    """The 0/1 matrix of term counts (each sentence's distinct terms), same shape and columns."""
    return sparse.csr_matrix((np.ones(len(counts.data), dtype=np.float32), counts.indices, counts.indptr), shape=counts.shape)


def _neighbour(score: np.ndarray) -> np.ndarray:
    """max(score[j-1, i], score[j+1, i]) for every (j, i); a missing neighbour counts as 0."""
    padded = np.pad(score, ((1, 1), (0, 0)))  # (m + 2, n)
    return np.maximum(padded[:-2], padded[2:])
