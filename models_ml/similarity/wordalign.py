"""Word-embedding alignment similarities of Kajiwara & Komachi (2016), over MiniLM token vectors.

The paper (seed 001, section 3; restated in docs/algorithms.md section 4) scores a
sentence pair from the cosine phi(x_i, y_j) of every word pair:

* Average: mean of phi over all word pairs.
* Maximum: asym(x, y) = mean over x_i of max_j phi(x_i, y_j); symmetric = mean of both directions.
* Hungarian: the one-to-one word matching with the largest total phi, divided by min(|x|, |y|).
* WMD: one minus the Word Mover's Distance between the normalised bags of words.

Choices this module makes where the paper leaves room:

* Words are ``\\w+`` runs of the original sentence (as in :mod:`models_ml.similarity.measures`);
  punctuation is dropped. A word's vector is the mean of the vectors of the MiniLM
  word pieces inside it, then scaled to unit length so phi is a dot product.
  Special pieces ([CLS], [SEP], padding, [UNK]) never count; a word left with
  no pieces is dropped.
* Two piece-vector sources: ``"static"`` - rows of the transformer's input
  (word-piece) embedding table, no position or context, so the same word has
  the same vector everywhere; ``"contextual"`` - last-layer outputs of the
  transformer for the whole sentence (truncated to the model's max_seq_length
  pieces; words past that are dropped).
* Threshold: a word pair counts when phi >= theta (up to 1e-6 float tolerance);
  other pairs get phi = 0, they are not removed from the averages' denominators.
  The paper writes "> theta" in section 4 and ">= 0.49" in section 5; ">=" lets
  theta = 1 keep exactly matching static tokens. Kept values are clipped to
  [0, 1], so theta in [0, 1] keeps every score in [0, 1]. WMD is not thresholded
  (the paper thresholds only the other three).
* WMD: uniform weights over word occurrences, Euclidean distance between unit
  word vectors (in [0, 2]); the similarity is 1 - WMD / 2, in [0, 1].
* A sentence with no words scores 0 against everything.

Cost: word vectors are computed once per distinct sentence per call. Average
and maximum are vectorised over all complex words at once; Hungarian and WMD
solve one small assignment / transport problem per sentence pair.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from models_ml.similarity.measures import WORD_PATTERN, SimilarityMeasure, validate_sentences

DEFAULT_THETA = 0.49
THRESHOLD_TOLERANCE = 1e-6
TokenSource = Literal["static", "contextual"]
TOKEN_SOURCES: tuple[str, ...] = ("static", "contextual")
MAX_DIRECTIONS: tuple[str, ...] = ("symmetric", "simple_to_complex", "complex_to_simple")


# --- pure scores over one token-similarity matrix ----------------------------------------------


def threshold_token_similarity(phi: np.ndarray, theta: float) -> np.ndarray:
    """``phi`` (k, l) with pairs below ``theta`` set to 0 and kept values clipped to [0, 1]."""
    phi = np.asarray(phi, dtype=np.float32)
    kept = phi >= theta - THRESHOLD_TOLERANCE
    return np.where(kept, np.clip(phi, 0.0, 1.0), np.float32(0.0)).astype(np.float32)


def average_alignment(phi: np.ndarray) -> float:
    """Mean of (thresholded) phi over all k * l word pairs; 0 when either side is empty."""
    return float(phi.mean()) if phi.size else 0.0


def max_alignment_asymmetric(phi: np.ndarray) -> float:
    """asym(x, y) for phi of shape (|x|, |y|): mean over x's words of their best match in y."""
    return float(phi.max(axis=1).mean()) if phi.size else 0.0


def max_alignment(phi: np.ndarray) -> float:
    """Symmetric maximum alignment: (asym(x, y) + asym(y, x)) / 2."""
    return 0.5 * (max_alignment_asymmetric(phi) + max_alignment_asymmetric(phi.T))


def hungarian_alignment(phi: np.ndarray) -> float:
    """Largest total phi of a one-to-one word matching, divided by min(|x|, |y|)."""
    if phi.size == 0:
        return 0.0
    from scipy.optimize import linear_sum_assignment  # here: scipy.optimize is 0.2-0.3 s of every web process's start

    rows, cols = linear_sum_assignment(phi, maximize=True)  # min(k, l) matched pairs
    return float(phi[rows, cols].sum() / min(phi.shape))


def _euclidean(x_vectors: np.ndarray, y_vectors: np.ndarray) -> np.ndarray:
    """Distances between (k, d) and (l, d) word vectors: (k, l), in [0, 2] for unit vectors."""
    from scipy.spatial.distance import cdist  # here, as scipy.optimize above

    return cdist(x_vectors, y_vectors, metric="euclidean")


def word_movers_similarity(x_vectors: np.ndarray, y_vectors: np.ndarray) -> float:
    """1 - WMD / 2 between uniform bags of unit word vectors (k, d) and (l, d); 0 when either is empty."""
    if len(x_vectors) == 0 or len(y_vectors) == 0:
        return 0.0
    import ot  # imported here: POT loads torch as one of its backends, two seconds for every process that imports this module

    distances = _euclidean(x_vectors, y_vectors)
    x_weights = np.full(len(x_vectors), 1.0 / len(x_vectors))  # (k,)
    y_weights = np.full(len(y_vectors), 1.0 / len(y_vectors))  # (l,)
    distance = float(ot.emd2(x_weights, y_weights, distances))
    return float(np.clip(1.0 - distance / 2.0, 0.0, 1.0))


def relaxed_word_movers_similarity(x_vectors: np.ndarray, y_vectors: np.ndarray) -> float:
    """1 - RWMD / 2 between uniform bags of unit word vectors (k, d) and (l, d); 0 when either is empty.

    RWMD (Kusner et al. 2015) relaxes one marginal at a time: every word moves to its nearest
    word on the other side; the larger of the two relaxed costs is a lower bound on the WMD.
    """
    if len(x_vectors) == 0 or len(y_vectors) == 0:
        return 0.0
    distances = _euclidean(x_vectors, y_vectors)
    relaxed = max(distances.min(axis=1).mean(), distances.min(axis=0).mean())
    return float(np.clip(1.0 - relaxed / 2.0, 0.0, 1.0))


# --- token vectors from MiniLM -----------------------------------------------------------------


def pool_pieces_into_words(piece_vectors: np.ndarray, piece_offsets: np.ndarray, keep: np.ndarray, sentence: str) -> np.ndarray:
    """Unit word vectors (w, d) from piece vectors (p, d), character offsets (p, 2) and a keep mask (p,).

    A piece belongs to the ``\\w+`` word whose span contains its first character.
    """
    spans = np.array([match.span() for match in WORD_PATTERN.finditer(sentence)], dtype=np.int64).reshape(-1, 2)
    width = piece_vectors.shape[1]
    if len(spans) == 0:
        return np.zeros((0, width), dtype=np.float32)
    starts = piece_offsets[:, 0]  # (p,)
    word_index = np.searchsorted(spans[:, 0], starts, side="right") - 1  # (p,), -1 before the first word
    inside = keep & (word_index >= 0) & (starts < spans[np.maximum(word_index, 0), 1])  # (p,)
    sums = np.zeros((len(spans), width), dtype=np.float32)  # (w, d)
    np.add.at(sums, word_index[inside], piece_vectors[inside])
    counts = np.bincount(word_index[inside], minlength=len(spans))  # (w,)
    norms = np.linalg.norm(sums, axis=1)  # (w,); the mean's direction equals the sum's
    present = (counts > 0) & (norms > 0)
    return (sums[present] / norms[present, None]).astype(np.float32)  # (w', d)


class TokenVectorizer:
    """Turns sentences into unit word vectors (w, d) using a sentence-transformers BERT-style model.

    ``model`` is a ``sentence_transformers.SentenceTransformer`` (e.g.
    ``load_sentence_encoder(device=...).model``); the contextual source runs on
    the device the model was loaded on.
    """

    def __init__(self, model: Any, *, source: TokenSource = "static", batch_size: int = 32) -> None:
        if source not in TOKEN_SOURCES:
            raise ValueError(f"unknown token source {source!r}; known: {', '.join(TOKEN_SOURCES)}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.model = model
        self.source = source
        self.batch_size = batch_size
        self.tokenizer = model.tokenizer
        self.transformer = model[0].auto_model
        self._special_ids = np.array(sorted(self.tokenizer.all_special_ids), dtype=np.int64)

    def vectorize(self, sentences: Sequence[str]) -> list[np.ndarray]:
        """One (w_i, d) float32 array of unit word vectors per sentence; (0, d) for a sentence without words."""
        sentences = list(sentences)
        if self.source == "static":
            return [self._static_words(sentence) for sentence in sentences]
        vectors: list[np.ndarray] = []
        for start in range(0, len(sentences), self.batch_size):
            vectors.extend(self._contextual_words(sentences[start : start + self.batch_size]))
        return vectors

    def _static_words(self, sentence: str) -> np.ndarray:
        import torch

        encoded = self.tokenizer(sentence, add_special_tokens=False, return_offsets_mapping=True, truncation=False)
        ids = np.asarray(encoded["input_ids"], dtype=np.int64)  # (p,)
        offsets = np.asarray(encoded["offset_mapping"], dtype=np.int64).reshape(-1, 2)  # (p, 2)
        table = self.transformer.get_input_embeddings().weight  # (vocab, d)
        with torch.inference_mode():
            pieces = table[torch.as_tensor(ids, device=table.device)].float().cpu().numpy()  # (p, d)
        keep = ~np.isin(ids, self._special_ids)  # (p,)
        return pool_pieces_into_words(pieces, offsets, keep, sentence)

    def _contextual_words(self, sentences: list[str]) -> list[np.ndarray]:
        import torch

        encoded = self.tokenizer(
            sentences,
            padding=True,
            truncation=True,
            max_length=self.model.max_seq_length,
            return_offsets_mapping=True,
            return_special_tokens_mask=True,
            return_tensors="pt",
        )
        offsets = encoded.pop("offset_mapping").numpy()  # (b, p, 2)
        special = encoded.pop("special_tokens_mask").numpy().astype(bool)  # (b, p)
        ids = encoded["input_ids"].numpy()  # (b, p)
        device = next(self.transformer.parameters()).device
        with torch.inference_mode():
            inputs = {key: value.to(device) for key, value in encoded.items()}
            hidden = self.transformer(**inputs).last_hidden_state.float().cpu().numpy()  # (b, p, d)
        keep = ~special & (encoded["attention_mask"].numpy() == 1) & ~np.isin(ids, self._special_ids)  # (b, p)
        return [pool_pieces_into_words(hidden[b], offsets[b], keep[b], sentence) for b, sentence in enumerate(sentences)]


# --- measures ----------------------------------------------------------------------------------


class WordAlignmentMeasure(ABC):
    """Shared plumbing: validate, vectorise each distinct sentence once, score every pair."""

    name: str

    def __init__(self, vectorizer: TokenVectorizer | None, *, theta: float = DEFAULT_THETA) -> None:
        if not 0.0 <= theta <= 1.0:
            raise ValueError(f"theta must lie in [0, 1], got {theta}")
        self.vectorizer = vectorizer
        self.theta = theta

    def score(self, simple: Sequence[str], complex: Sequence[str]) -> np.ndarray:
        simple = validate_sentences(simple, "simple")
        complex = validate_sentences(complex, "complex")
        if self.vectorizer is None:
            raise ValueError(f"{self.name} was built without a TokenVectorizer; use score_token_vectors instead")
        distinct = list(dict.fromkeys(simple + complex))
        by_sentence = dict(zip(distinct, self.vectorizer.vectorize(distinct), strict=True))
        return self.score_token_vectors([by_sentence[s] for s in simple], [by_sentence[c] for c in complex])

    def score_token_vectors(self, simple_words: Sequence[np.ndarray], complex_words: Sequence[np.ndarray]) -> np.ndarray:
        """(m, n) float32 scores from per-sentence unit word vectors, (w_i, d) each."""
        simple_words = [_check_words(words, f"simple sentence {i}") for i, words in enumerate(simple_words)]
        complex_words = [_check_words(words, f"complex sentence {j}") for j, words in enumerate(complex_words)]
        widths = {words.shape[1] for words in simple_words + complex_words if len(words)}
        if len(widths) > 1:
            raise ValueError(f"word vectors have different widths: {sorted(widths)}")
        scores = np.zeros((len(simple_words), len(complex_words)), dtype=np.float32)  # (m, n)
        rows = [i for i, words in enumerate(simple_words) if len(words)]
        cols = [j for j, words in enumerate(complex_words) if len(words)]
        if rows and cols:
            block = self._score_present([simple_words[i] for i in rows], [complex_words[j] for j in cols])
            scores[np.ix_(rows, cols)] = block  # (len(rows), len(cols))
        return scores

    @abstractmethod
    def _score_present(self, simple_words: list[np.ndarray], complex_words: list[np.ndarray]) -> np.ndarray:
        """Scores for sentences that all have at least one word."""


def _check_words(words: np.ndarray, label: str) -> np.ndarray:
    array = np.asarray(words, dtype=np.float32)
    if array.ndim != 2:
        raise ValueError(f"word vectors of {label} must have shape (words, dimensions), got {array.shape}")
    return array


class _StackedAlignment(WordAlignmentMeasure):
    """Average and maximum need only row/column reductions, so all complex words are scored at once."""

    def _score_present(self, simple_words: list[np.ndarray], complex_words: list[np.ndarray]) -> np.ndarray:
        lengths = np.array([len(words) for words in complex_words])  # (n,)
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])  # (n,), segment starts; no segment is empty
        stacked = np.concatenate(complex_words, axis=0)  # (L, d), L = total complex words
        scores = np.empty((len(simple_words), len(complex_words)), dtype=np.float32)  # (m, n)
        for i, words in enumerate(simple_words):
            phi = threshold_token_similarity(words @ stacked.T, self.theta)  # (w_i, L)
            scores[i] = self._reduce(phi, starts, lengths)
        return scores

    @abstractmethod
    def _reduce(self, phi: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """(n,) scores of one simple sentence from phi (w, L) split into n segments."""


class AverageAlignment(_StackedAlignment):
    """Mean thresholded phi over all word pairs (paper section 3.1)."""

    name = "word_average"

    def _reduce(self, phi: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        totals = np.add.reduceat(phi.sum(axis=0), starts)  # (n,)
        return totals / (phi.shape[0] * lengths)


class MaxAlignment(_StackedAlignment):
    """Maximum alignment (paper section 3.2) in one direction or symmetrised.

    ``simple_to_complex`` is asym(simple, complex): how much of the simple sentence
    the complex one covers; ``complex_to_simple`` the reverse; ``symmetric`` their mean.
    """

    def __init__(self, vectorizer: TokenVectorizer | None, *, theta: float = DEFAULT_THETA, direction: str = "symmetric") -> None:
        super().__init__(vectorizer, theta=theta)
        if direction not in MAX_DIRECTIONS:
            raise ValueError(f"unknown maximum-alignment direction {direction!r}; known: {', '.join(MAX_DIRECTIONS)}")
        self.direction = direction
        self.name = "word_max" if direction == "symmetric" else f"word_max_{direction}"

    def _reduce(self, phi: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        simple_to_complex = np.maximum.reduceat(phi, starts, axis=1).mean(axis=0)  # (w, n) -> (n,)
        complex_to_simple = np.add.reduceat(phi.max(axis=0), starts) / lengths  # (L,) -> (n,)
        if self.direction == "simple_to_complex":
            return simple_to_complex
        if self.direction == "complex_to_simple":
            return complex_to_simple
        return 0.5 * (simple_to_complex + complex_to_simple)


class HungarianAlignment(WordAlignmentMeasure):
    """One-to-one word matching maximising total thresholded phi, over min(|x|, |y|) (paper section 3.3)."""

    name = "word_hungarian"

    def _score_present(self, simple_words: list[np.ndarray], complex_words: list[np.ndarray]) -> np.ndarray:
        scores = np.empty((len(simple_words), len(complex_words)), dtype=np.float32)  # (m, n)
        for i, x_words in enumerate(simple_words):
            for j, y_words in enumerate(complex_words):
                scores[i, j] = hungarian_alignment(threshold_token_similarity(x_words @ y_words.T, self.theta))
        return scores


class WordMoversSimilarity(WordAlignmentMeasure):
    """1 - WMD / 2 over uniform bags of unit word vectors (paper section 3.4); ``theta`` is unused."""

    name = "word_movers"

    def _score_present(self, simple_words: list[np.ndarray], complex_words: list[np.ndarray]) -> np.ndarray:
        scores = np.empty((len(simple_words), len(complex_words)), dtype=np.float32)  # (m, n)
        for i, x_words in enumerate(simple_words):
            for j, y_words in enumerate(complex_words):
                scores[i, j] = word_movers_similarity(x_words, y_words)
        return scores


@dataclass(frozen=True)
class WordAlignmentConfig:
    """Options shared by the word-alignment measures, as :func:`build_measure` receives them."""

    token_source: TokenSource = "static"
    theta: float = DEFAULT_THETA
    batch_size: int = 32


def build_word_alignment_measure(name: str, encoder: Any, **options: Any) -> SimilarityMeasure:
    """The word-alignment measure ``name`` over ``encoder.model`` (a SentenceTransformer)."""
    config = WordAlignmentConfig(**options)
    model = getattr(encoder, "model", encoder)
    vectorizer = TokenVectorizer(model, source=config.token_source, batch_size=config.batch_size)
    if name == "word_average":
        return AverageAlignment(vectorizer, theta=config.theta)
    if name.startswith("word_max"):
        direction = name.removeprefix("word_max").removeprefix("_") or "symmetric"
        return MaxAlignment(vectorizer, theta=config.theta, direction=direction)
    if name == "word_hungarian":
        return HungarianAlignment(vectorizer, theta=config.theta)
    if name == "word_movers":
        return WordMoversSimilarity(vectorizer, theta=config.theta)
    raise ValueError(f"unknown word-alignment measure {name!r}")
