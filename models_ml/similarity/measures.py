"""Sentence-similarity measures between a simple and a complex document, behind one interface.

Every measure turns ``simple`` (m sentences) and ``complex`` (n sentences) into a
float32 matrix of shape (m, n): higher means more similar. The aligners
(CRF, paragraph alignment, LHA) only see that matrix, so any measure here can
drive any of them.

Measures in this module:

* :class:`EmbeddingCosine` - cosine of bi-encoder sentence vectors (MiniLM by default).
* :class:`JaccardSimilarity` - word-set overlap, the Xu et al. (2015) baseline.
* :class:`TfidfCosine` - TF-IDF cosine over words (Paetzold et al. 2017) or over
  character 3-grams (the C3G measure of CATS, Stajner et al.).

The word-embedding alignment measures of Kajiwara & Komachi (2016) live in
:mod:`models_ml.similarity.wordalign`; :func:`build_measure` knows all of them by name.
:class:`LearnedCombiner` fits a logistic regression over several measures' scores.

Tokenisation: words are maximal runs of Unicode word characters (regex ``\\w+``),
lower-cased; punctuation is dropped. A sentence that is empty or only
whitespace/punctuation has no tokens and scores 0 against everything.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any, Protocol, runtime_checkable

import numpy as np
from scipy import sparse, special

from models_ml.similarity.encoders import ENCODE_BATCH_SIZE, SentenceEncoder

WORD_PATTERN = re.compile(r"\w+")
DEFAULT_CHUNK_ROWS = 1024


@runtime_checkable
class SimilarityMeasure(Protocol):
    """Scores every (simple, complex) sentence pair."""

    name: str

    def score(self, simple: Sequence[str], complex: Sequence[str]) -> np.ndarray:
        """float32 matrix of shape (len(simple), len(complex)); higher = more similar."""
        ...


def word_tokens(sentence: str) -> list[str]:
    """Lower-cased ``\\w+`` tokens: Unicode-aware, punctuation dropped."""
    return WORD_PATTERN.findall(sentence.lower())


def char_trigrams(sentence: str) -> list[str]:
    """Character 3-grams of the lower-cased sentence, whitespace collapsed and padded by one space.

    The padding lets word boundaries count (" th", "he "); a blank sentence has none.
    """
    text = " ".join(sentence.lower().split())
    if not text:
        return []
    padded = f" {text} "
    return [padded[i : i + 3] for i in range(len(padded) - 2)]


def validate_sentences(sentences: Sequence[str], side: str) -> list[str]:
    """A list copy of ``sentences``; rejects a bare string (it would be scored character by character)."""
    if isinstance(sentences, str):
        raise ValueError(f"{side} sentences must be a sequence of strings, not a single string")
    checked = list(sentences)
    for index, sentence in enumerate(checked):
        if not isinstance(sentence, str):
            raise ValueError(f"{side} sentence {index} is {type(sentence).__name__}, expected str")
    return checked


# --- bi-encoder cosine -------------------------------------------------------------------------


class EmbeddingCosine:
    """Cosine similarity of sentence embeddings from a bi-encoder.

    Scores are raw cosines in [-1, 1], not clipped: downstream thresholds (LHA's
    theta_s, the paragraph aligner's taus) are set on that scale. Blank sentences
    are not sent to the encoder and get a row/column of zeros.

    Memory: the (m, n) float32 result is the only large array (2000 x 2000 is
    16 MB; 20000 x 20000 would be 1.6 GB - use nearest-neighbour search, as LHA
    does, for documents that large). Sentences are encoded in batches of
    ``batch_size`` and the product is written block by block, ``chunk_rows`` rows at a time.
    """

    name = "embedding_cosine"

    def __init__(self, encoder: SentenceEncoder, *, batch_size: int = ENCODE_BATCH_SIZE, chunk_rows: int = DEFAULT_CHUNK_ROWS) -> None:
        if batch_size < 1 or chunk_rows < 1:
            raise ValueError(f"batch_size and chunk_rows must be >= 1, got {batch_size} and {chunk_rows}")
        self.encoder = encoder
        self.batch_size = batch_size
        self.chunk_rows = chunk_rows

    def score(self, simple: Sequence[str], complex: Sequence[str]) -> np.ndarray:
        simple_vecs = self._embed(validate_sentences(simple, "simple"))  # (m, d)
        complex_vecs = self._embed(validate_sentences(complex, "complex"))  # (n, d)
        return self.score_embeddings(simple_vecs, complex_vecs)

    def score_embeddings(self, simple_vecs: np.ndarray, complex_vecs: np.ndarray) -> np.ndarray:
        """Cosine matrix (m, n) of precomputed vectors (m, d) and (n, d); zero vectors score 0."""
        simple_vecs = _unit_rows(_as_matrix(simple_vecs, "simple_vecs"))  # (m, d)
        complex_vecs = _unit_rows(_as_matrix(complex_vecs, "complex_vecs"))  # (n, d)
        if simple_vecs.shape[1] != complex_vecs.shape[1]:
            raise ValueError(
                f"embedding widths differ: simple_vecs has {simple_vecs.shape[1]} columns, complex_vecs has {complex_vecs.shape[1]}"
            )
        scores = np.empty((simple_vecs.shape[0], complex_vecs.shape[0]), dtype=np.float32)  # (m, n)
        complex_t = np.ascontiguousarray(complex_vecs.T)  # (d, n)
        for start in range(0, simple_vecs.shape[0], self.chunk_rows):
            stop = start + self.chunk_rows
            np.matmul(simple_vecs[start:stop], complex_t, out=scores[start:stop])  # (chunk, n)
        return scores

    def _embed(self, sentences: list[str]) -> np.ndarray:
        present = [i for i, sentence in enumerate(sentences) if sentence.strip()]
        vectors = np.zeros((len(sentences), self.encoder.dimensions), dtype=np.float32)  # (k, d)
        if present:
            encoded = self.encoder.encode([sentences[i] for i in present], batch_size=self.batch_size)
            vectors[present] = np.asarray(encoded, dtype=np.float32)  # (len(present), d)
        return vectors


def _as_matrix(vectors: np.ndarray, label: str) -> np.ndarray:
    array = np.asarray(vectors, dtype=np.float32)
    if array.ndim != 2:
        raise ValueError(f"{label} must be a 2-D array (rows, dimensions), got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{label} contains NaN or infinite values")
    return array


def _unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length; all-zero rows stay zero so they score 0, not NaN."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)  # (k, 1)
    return vectors / np.where(norms > 0, norms, 1.0).astype(np.float32)


# --- lexical baselines -------------------------------------------------------------------------


def _term_matrix(term_lists: Sequence[Sequence[str]], vocabulary: dict[str, int]) -> sparse.csr_matrix:
    """Term counts, shape (len(term_lists), len(vocabulary)); every term must be in the vocabulary.

    The terms are looked up and the row pointers summed in C (``np.fromiter`` over ``map``): a Python loop over every
    term, with :func:`_vocabulary`'s and the document frequencies', was half of a character 3-gram cosine's time."""
    lengths = [len(terms) for terms in term_lists]
    indptr = np.zeros(len(term_lists) + 1, dtype=np.int32)
    np.cumsum(lengths, out=indptr[1:])
    indices = np.fromiter(map(vocabulary.__getitem__, chain.from_iterable(term_lists)), dtype=np.int32, count=int(indptr[-1]))
    data = np.ones(len(indices), dtype=np.float32)
    matrix = sparse.csr_matrix((data, indices, indptr), shape=(len(term_lists), len(vocabulary)))
    matrix.sum_duplicates()  # repeated terms become counts
    return matrix


def _vocabulary(*term_lists: Sequence[Sequence[str]]) -> dict[str, int]:
    """Each term's column: the order in which the lists first name it."""
    terms = dict.fromkeys(chain.from_iterable(chain.from_iterable(term_lists)))
    return dict(zip(terms, range(len(terms))))


class JaccardSimilarity:
    """|A ∩ B| / |A ∪ B| of the two sentences' lower-cased word sets (Xu et al. 2015); 0 when both are empty."""

    name = "jaccard"

    def score(self, simple: Sequence[str], complex: Sequence[str]) -> np.ndarray:
        simple_sets = [sorted(set(word_tokens(s))) for s in validate_sentences(simple, "simple")]
        complex_sets = [sorted(set(word_tokens(c))) for c in validate_sentences(complex, "complex")]
        vocabulary = _vocabulary(simple_sets, complex_sets)
        simple_bin = _term_matrix(simple_sets, vocabulary)  # (m, V), 0/1
        complex_bin = _term_matrix(complex_sets, vocabulary)  # (n, V), 0/1
        intersection = (simple_bin @ complex_bin.T).toarray()  # (m, n)
        simple_sizes = np.array([len(s) for s in simple_sets], dtype=np.float32)  # (m,)
        complex_sizes = np.array([len(c) for c in complex_sets], dtype=np.float32)  # (n,)
        union = simple_sizes[:, None] + complex_sizes[None, :] - intersection  # (m, n)
        scores = np.divide(intersection, union, out=np.zeros_like(intersection), where=union > 0)
        return scores.astype(np.float32, copy=False)


_ANALYZERS: dict[str, Callable[[str], list[str]]] = {"word": word_tokens, "char3": char_trigrams}


@dataclass(frozen=True)
class TermCounts:
    """A pair's term counts: ``simple`` (m, V) and ``complex`` (n, V), sparse, no stored zeros; ``vocabulary``: term -> column."""

    simple: sparse.csr_matrix
    complex: sparse.csr_matrix
    vocabulary: dict[str, int]


class TfidfCosine:
    """Cosine of TF-IDF vectors over words (Paetzold et al. 2017) or character 3-grams (CATS' C3G).

    Term frequency is the raw count; IDF is the smoothed ``log((1 + N) / (1 + df)) + 1``.
    Without ``idf_corpus`` the IDF is fitted on the sentences of the two documents
    being scored (N = m + n), so it changes from one document pair to the next;
    with ``idf_corpus`` it is fitted once on those sentences, and a term the corpus
    never saw gets the largest IDF, ``log(1 + N) + 1``. Scores lie in [0, 1].
    """

    def __init__(self, analyzer: str = "word", *, idf_corpus: Sequence[str] | None = None) -> None:
        if analyzer not in _ANALYZERS:
            raise ValueError(f"unknown TF-IDF analyzer {analyzer!r}; known: {', '.join(sorted(_ANALYZERS))}")
        self.analyzer = analyzer
        self.name = "tfidf_cosine" if analyzer == "word" else "char3_tfidf_cosine"
        self._analyze = _ANALYZERS[analyzer]
        self._corpus_df: Counter[str] | None = None
        self._corpus_size = 0
        if idf_corpus is not None:
            corpus_terms = [self._analyze(s) for s in validate_sentences(idf_corpus, "idf_corpus")]
            if not corpus_terms:
                raise ValueError("idf_corpus is empty; pass None to fit the IDF on the documents being scored")
            self._corpus_df = Counter(term for terms in corpus_terms for term in set(terms))
            self._corpus_size = len(corpus_terms)

    def score(self, simple: Sequence[str], complex: Sequence[str]) -> np.ndarray:
        return self.score_counts(self.term_counts(simple, complex))

    def term_counts(self, simple: Sequence[str], complex: Sequence[str]) -> TermCounts:
        """Both sides' terms counted over one vocabulary: what :meth:`score_counts` scores, and what the learned
        scorer's cover features read too (so a pair's 3-grams are taken once)."""
        simple_terms = [self._analyze(s) for s in validate_sentences(simple, "simple")]
        complex_terms = [self._analyze(c) for c in validate_sentences(complex, "complex")]
        vocabulary = _vocabulary(simple_terms, complex_terms)
        return TermCounts(_term_matrix(simple_terms, vocabulary), _term_matrix(complex_terms, vocabulary), vocabulary)

    def score_counts(self, counts: TermCounts) -> np.ndarray:
        """:meth:`score` of counts from :meth:`term_counts` (of this analyzer)."""
        vocabulary, simple_counts, complex_counts = counts.vocabulary, counts.simple, counts.complex  # (m, V), (n, V)
        idf = self._idf(vocabulary, simple_counts, complex_counts)  # (V,)
        simple_tfidf = _l2_normalise_rows(simple_counts @ sparse.diags(idf))  # (m, V)
        complex_tfidf = _l2_normalise_rows(complex_counts @ sparse.diags(idf))  # (n, V)
        scores = (simple_tfidf @ complex_tfidf.T).toarray()  # (m, n)
        return np.clip(scores, 0.0, 1.0).astype(np.float32, copy=False)

    def _idf(self, vocabulary: dict[str, int], *counts: sparse.csr_matrix) -> np.ndarray:
        """Each column's IDF: from ``counts``, the sentences being scored (a column's stored entries, one a sentence
        that has the term), or from the fitted corpus."""
        if self._corpus_df is None:
            size = sum(matrix.shape[0] for matrix in counts)
            frequencies = sum(np.bincount(matrix.indices, minlength=len(vocabulary)) for matrix in counts).astype(np.float32)  # (V,)
        else:
            size = self._corpus_size
            frequencies = np.array([self._corpus_df.get(term, 0) for term in vocabulary], dtype=np.float32)  # (V,)
        return (np.log((1.0 + size) / (1.0 + frequencies)) + 1.0).astype(np.float32)


def _l2_normalise_rows(matrix: sparse.spmatrix) -> sparse.csr_matrix:
    norms = np.sqrt(np.asarray(matrix.multiply(matrix).sum(axis=1)).ravel())  # (k,)
    inverse = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
    return sparse.csr_matrix(sparse.diags(inverse.astype(np.float32)) @ matrix)


# --- registry ----------------------------------------------------------------------------------


def _encoder_from_options(encoder: SentenceEncoder | None, device: str) -> SentenceEncoder:
    if encoder is not None:
        return encoder
    from models_ml.similarity.encoders import load_sentence_encoder

    return load_sentence_encoder(device=device)


def _build_embedding_cosine(*, encoder: SentenceEncoder | None = None, device: str = "", **options: Any) -> SimilarityMeasure:
    return EmbeddingCosine(_encoder_from_options(encoder, device), **options)


def _build_word_alignment(name: str) -> Callable[..., SimilarityMeasure]:
    def build(*, encoder: Any = None, device: str = "", **options: Any) -> SimilarityMeasure:
        from models_ml.similarity import wordalign  # imported late: wordalign imports this module

        return wordalign.build_word_alignment_measure(name, _encoder_from_options(encoder, device), **options)

    return build


def _build_cross_encoder(*, encoder: Any = None, device: str = "", **options: Any) -> SimilarityMeasure:
    """Cross-encoder pair classifier; ``encoder`` is accepted (the aligner passes one) and unused.

    Options: ``model_dir`` (a folder written by ``save_pair_classifier``; without it the head
    is untrained and the scores are meaningless), ``batch_size``, ``chunk_pairs``.
    """
    # imported late: it loads transformers and imports this module
    from models_ml.similarity import cross_encoder

    return cross_encoder.build_cross_encoder_measure(device=device, **options)


MEASURE_BUILDERS: dict[str, Callable[..., SimilarityMeasure]] = {
    "embedding_cosine": _build_embedding_cosine,
    "jaccard": JaccardSimilarity,
    "tfidf_cosine": lambda **options: TfidfCosine("word", **options),
    "char3_tfidf_cosine": lambda **options: TfidfCosine("char3", **options),
    **{
        name: _build_word_alignment(name)
        for name in (
            "word_average",
            "word_max",
            "word_max_simple_to_complex",
            "word_max_complex_to_simple",
            "word_hungarian",
            "word_movers",
        )
    },
    "cross_encoder": _build_cross_encoder,
}


def build_measure(name: str, **options: Any) -> SimilarityMeasure:
    """The measure registered as ``name``, built with ``options``.

    Encoder-based measures take ``encoder=`` (a loaded :class:`SentenceEncoder`;
    for word alignment one with a ``.model`` SentenceTransformer) or ``device=``
    to load the bundled MiniLM there. Word-alignment measures also take
    ``token_source`` ("static" or "contextual") and ``theta``.
    """
    builder = MEASURE_BUILDERS.get(name)
    if builder is None:
        raise ValueError(f"unknown similarity measure {name!r}; known measures: {', '.join(sorted(MEASURE_BUILDERS))}")
    try:
        return builder(**options)
    except TypeError as error:  # an option the measure does not take
        raise ValueError(f"bad options for similarity measure {name!r}: {error}") from error


# --- learned combination -----------------------------------------------------------------------


def measure_features(measures: Sequence[SimilarityMeasure], simple: Sequence[str], complex: Sequence[str]) -> np.ndarray:
    """Every measure's (m, n) scores stacked into features of shape (m, n, len(measures))."""
    if not measures:
        raise ValueError("measure_features needs at least one measure")
    return np.stack([measure.score(simple, complex) for measure in measures], axis=-1).astype(np.float32)


@dataclass(frozen=True)
class CombinerConfig:
    """``l2`` penalises the weights (not the bias) of the standardised features, as sklearn's 1/C."""

    l2: float = 1.0
    max_iter: int = 500


@dataclass(frozen=True)
class CombinerParameters:
    """What a fitted combiner needs to predict; plain arrays so it can be saved with the run."""

    feature_mean: np.ndarray  # (f,)
    feature_scale: np.ndarray  # (f,)
    weights: np.ndarray  # (f,)
    bias: float


class LearnedCombiner:
    """Logistic regression over several measures' scores: P(aligned | features).

    Fitting is deterministic (L-BFGS from zero weights on a convex loss), so it takes no seed.
    """

    def __init__(self, config: CombinerConfig | None = None) -> None:
        self.config = config or CombinerConfig()
        if self.config.l2 < 0 or self.config.max_iter < 1:
            raise ValueError(f"CombinerConfig needs l2 >= 0 and max_iter >= 1, got {self.config}")
        self.parameters: CombinerParameters | None = None

    def fit(self, features: np.ndarray, labels: np.ndarray) -> LearnedCombiner:
        """Fit on ``features`` (k, f) and 0/1 ``labels`` (k,); both classes must occur."""
        features = _as_matrix(features, "features").astype(np.float64)  # (k, f)
        labels = np.asarray(labels, dtype=np.float64).ravel()  # (k,)
        if labels.shape[0] != features.shape[0]:
            raise ValueError(f"features have {features.shape[0]} rows but labels have {labels.shape[0]}")
        if not np.all((labels == 0) | (labels == 1)):
            raise ValueError("labels must be 0 (not aligned) or 1 (aligned)")
        if labels.min() == labels.max():
            raise ValueError("labels contain only one class; a logistic regression needs both")
        mean = features.mean(axis=0)  # (f,)
        scale = features.std(axis=0)  # (f,)
        scale = np.where(scale > 0, scale, 1.0)
        standardised = (features - mean) / scale  # (k, f)

        def loss_and_gradient(theta: np.ndarray) -> tuple[float, np.ndarray]:
            weights, bias = theta[:-1], theta[-1]
            logits = standardised @ weights + bias  # (k,)
            loss = np.sum(np.logaddexp(0.0, logits) - labels * logits) + 0.5 * self.config.l2 * weights @ weights
            residual = special.expit(logits) - labels  # (k,)
            gradient = np.append(standardised.T @ residual + self.config.l2 * weights, residual.sum())  # (f + 1,)
            return float(loss), gradient

        start = np.zeros(features.shape[1] + 1)
        from scipy import optimize  # here, not at the top: only fitting needs it, and it is 0.2-0.3 s of every process's start

        result = optimize.minimize(loss_and_gradient, start, jac=True, method="L-BFGS-B", options={"maxiter": self.config.max_iter})
        self.parameters = CombinerParameters(feature_mean=mean, feature_scale=scale, weights=result.x[:-1].copy(), bias=float(result.x[-1]))
        return self

    def predict_proba(self, features: np.ndarray) -> np.ndarray:
        """P(aligned) for ``features`` of shape (..., f), e.g. (k, f) or (m, n, f); float32 of shape (...)."""
        if self.parameters is None:
            raise ValueError("LearnedCombiner.predict_proba called before fit")
        array = np.asarray(features, dtype=np.float64)
        width = self.parameters.weights.shape[0]
        if array.ndim < 1 or array.shape[-1] != width:
            raise ValueError(f"features must end in {width} columns (one per measure), got shape {array.shape}")
        standardised = (array - self.parameters.feature_mean) / self.parameters.feature_scale  # (..., f)
        logits = standardised @ self.parameters.weights + self.parameters.bias  # (...)
        return special.expit(logits).astype(np.float32)
