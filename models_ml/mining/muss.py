"""MUSS-style paraphrase mining over one collection of documents, with ACCESS attributes per pair.

Restates seed 004 (Martin et al., *MUSS*, LREC 2022), section 3.1 and appendix A.1, and
``docs/algorithms.md`` section 5:

1. every run of adjacent sentences of at most ``max_chars`` characters is a *sequence*; noisy
   ones (more than ``max_punctuation`` punctuation) are dropped. The paper's second noise filter,
   a kenlm 3-gram language-model score, is not implemented (no language model ships here);
2. every sequence is a query against the whole collection: its ``k`` nearest sequences by cosine,
   kept when ``1 - cosine < max_distance`` and the Artetxe & Schwenk (2019) ratio margin is at least
   ``min_margin``;
3. filters drop near-identical pairs, containment, pairs from the same document (which covers
   overlapping windows) and sequences of evaluation sets;
4. every kept pair gets the four ACCESS control attributes (Martin et al., 2020, as MUSS uses them).

The exact kNN (``models_ml.mining.knn.top_k``) keeps memory at O(n x d) for the vectors plus O(n x k)
for the neighbour lists. A mining job is sharded by ``query_range``: every shard builds the same
sequence list and neighbour lists, and the symmetric de-duplication rule depends only on those,
so the union of the shards' pairs equals the unsharded result.
"""

from __future__ import annotations

import collections.abc as cabc
import sys
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from rapidfuzz.distance import Levenshtein

from models_ml.mining.copies import comparable as _comparable
from models_ml.mining.knn import Neighbours, encode_all, top_k
from models_ml.mining.types import Encode, MinedPair, MiningDocument

__all__ = [
    "MussConfig",
    "Sequence",
    "access_attributes",
    "candidate_sequences",
    "dependency_tree_depth",
    "is_noisy",
    "load_dependency_parser",
    "mine_muss",
    "ratio_margin",
    "rejection_reason",
    "replace_only_levenshtein_similarity",
    "sequences",
    "word_rank_score",
]

DependencyParser = Callable[[str], Any]  # text -> a spaCy-like Doc: .sents, each with .root and tokens' .children

WORD_RANK_VOCABULARY = 100_000  # MUSS ranks words within the 10^5 most frequent (its FastText vocabulary)
STOP_WORD_COUNT = 100  # the language's most frequent words stand in for a stop-word list (see word_rank_score)


@dataclass(frozen=True)
class MussConfig:
    """Settings of one MUSS mining job.

    max_distance: absolute bound on ``1 - cosine`` (a pair is kept when strictly under it). The paper's
    bound (L2 < 0.05) is for compressed LASER vectors and does not transfer; with all-MiniLM-L6-v2,
    paraphrases measured here score 0.85-0.95 cosine, while same-topic sentences that say something
    different ("the council approved / rejected the budget") score 0.6-0.7, so 0.25 (cosine > 0.75)
    separates them.
    min_margin: ratio-margin threshold (kept when >= it). 1.06 is the threshold of LASER bitext mining
    (CCMatrix; WikiMatrix used 1.04); a paraphrase with k dissimilar neighbours scores far above it,
    a sequence among many equally close neighbours (boilerplate, hubs) scores about 1.0 and is dropped.
    min_levenshtein: pairs whose normalised case-insensitive character Levenshtein distance is below
    it are near-identical and dropped (paper: distance >= 20% is required).
    language: ISO 639-1 code for ``wordfreq`` and the optional spaCy parser.
    encode_batch: sequences per ``encode`` call.
    """

    max_chars: int = 300
    max_punctuation: float = 0.10
    k: int = 8
    max_distance: float = 0.25
    min_margin: float = 1.06
    min_levenshtein: float = 0.20
    language: str = "en"
    encode_batch: int = 256

    def __post_init__(self) -> None:
        if self.max_chars < 1:
            raise ValueError(f"max_chars must be >= 1, got {self.max_chars}")
        if not 0.0 <= self.max_punctuation <= 1.0:
            raise ValueError(f"max_punctuation must be in [0, 1], got {self.max_punctuation}")
        if self.k < 1:
            raise ValueError(f"k must be >= 1, got {self.k}")
        if not 0.0 < self.max_distance <= 2.0:
            raise ValueError(f"max_distance bounds 1 - cosine and must be in (0, 2], got {self.max_distance}")
        if self.min_margin <= 0.0:
            raise ValueError(f"min_margin must be > 0, got {self.min_margin}")
        if not 0.0 <= self.min_levenshtein <= 1.0:
            raise ValueError(f"min_levenshtein must be in [0, 1], got {self.min_levenshtein}")
        if not self.language.strip():
            raise ValueError(f"language must be a language code such as 'en', got {self.language!r}")
        if self.encode_batch < 1:
            raise ValueError(f"encode_batch must be >= 1, got {self.encode_batch}")


@dataclass(frozen=True)
class Sequence:
    """A run of adjacent sentences ``[start, end)`` of one document, joined by single spaces."""

    doc_id: str
    start: int
    end: int
    text: str

    @property
    def sentence_indices(self) -> tuple[int, ...]:
        return tuple(range(self.start, self.end))


def sequences(document: MiningDocument, max_chars: int) -> list[Sequence]:
    """Every window of adjacent sentences whose joined text has at most ``max_chars`` characters.

    Sentences are stripped and joined by one space. All windows are listed, single sentences
    included, ordered by start then end: [s0], [s0 s1], ..., [s1], [s1 s2], ... A sentence longer
    than ``max_chars`` is no sequence and no window spans it; an empty (whitespace-only) sentence
    breaks runs the same way, so no two windows have the same sentences with different texts.
    """
    if max_chars < 1:
        raise ValueError(f"max_chars must be >= 1, got {max_chars}")
    stripped = [sentence.strip() for sentence in document.sentences]
    found: list[Sequence] = []
    for start, first in enumerate(stripped):
        if not first or len(first) > max_chars:
            continue
        text = first
        found.append(Sequence(document.doc_id, start, start + 1, text))
        for end in range(start + 1, len(stripped)):
            following = stripped[end]
            if not following or len(text) + 1 + len(following) > max_chars:
                break  # longer windows from this start only grow
            text = f"{text} {following}"
            found.append(Sequence(document.doc_id, start, end + 1, text))
    return found


def is_noisy(text: str, max_punctuation: float) -> bool:
    """True when more than ``max_punctuation`` of the non-space characters are punctuation.

    Punctuation is every Unicode category P* character (so it works beyond ASCII: « » „ “ ¿ 。).
    A text without non-space characters is noisy: there is nothing to mine in it.
    """
    if not 0.0 <= max_punctuation <= 1.0:
        raise ValueError(f"max_punctuation must be in [0, 1], got {max_punctuation}")
    visible = len(text) - sum(map(str.isspace, text))
    if not visible:
        return True
    punctuation = sum(map(_punctuation().__contains__, text))  # no space is punctuation: counting all of text is the same
    return punctuation / visible > max_punctuation


@lru_cache(maxsize=1)
def _punctuation() -> frozenset[str]:
    """Every Unicode category P* character (about 800; 0.4 s once per process), so that counting them is a set lookup per character."""
    return frozenset(char for char in map(chr, range(sys.maxunicode + 1)) if unicodedata.category(char).startswith("P"))


def candidate_sequences(documents: cabc.Sequence[MiningDocument], config: MussConfig) -> list[Sequence]:
    """The deterministic list of non-noisy sequences of all documents (document order, then window order).

    ``mine_muss``'s ``query_range`` indexes this list; the app calls it to size the shards.
    """
    seen: set[str] = set()
    found: list[Sequence] = []
    for document in documents:
        if document.doc_id in seen:
            raise ValueError(f"document id {document.doc_id!r} occurs twice; MUSS needs unique document ids")
        seen.add(document.doc_id)
        found.extend(s for s in sequences(document, config.max_chars) if not is_noisy(s.text, config.max_punctuation))
    return found


def ratio_margin(cos_xy: float | np.ndarray, mean_knn_x: float | np.ndarray, mean_knn_y: float | np.ndarray) -> float | np.ndarray:
    """Artetxe & Schwenk (2019) ratio margin: cos(x, y) / ((mean_knn_x + mean_knn_y) / 2).

    mean_knn_*: mean cosine of x (of y) to its own k nearest neighbours. Scalars or broadcastable
    arrays. The denominator is clamped at 1e-6 so that neighbourhoods with a non-positive mean
    (possible only in tiny collections) give a large margin instead of a sign flip.
    """
    denominator = np.maximum((np.asarray(mean_knn_x, dtype=np.float64) + np.asarray(mean_knn_y, dtype=np.float64)) / 2.0, 1e-6)
    margin = np.asarray(cos_xy, dtype=np.float64) / denominator
    return float(margin) if margin.ndim == 0 else margin


def rejection_reason(
    source: Sequence, target: Sequence, *, min_levenshtein: float, exclude: frozenset[str] | set[str] = frozenset()
) -> str | None:
    """Why a mined pair is dropped, or None when it passes every filter (seed 004, appendix A.1).

    Checked in this order: "same_document" (same doc_id; this also removes overlapping windows,
    as the paper does), "excluded" (either text, case-folded with collapsed whitespace, equals a
    text of ``exclude``, already in that form: the evaluation sets), "contained" (one case-folded
    text is a substring of the other), "near_identical" (normalised Levenshtein distance of the
    case-folded texts, edits / longer length, below ``min_levenshtein``).
    """
    if source.doc_id == target.doc_id:
        return "same_document"
    a, b = _comparable(source.text), _comparable(target.text)
    if a in exclude or b in exclude:
        return "excluded"
    if a in b or b in a:
        return "contained"
    if Levenshtein.normalized_distance(a, b) < min_levenshtein:
        return "near_identical"
    return None


# ACCESS attributes ---------------------------------------------------------------------------


def replace_only_levenshtein_similarity(source: str, target: str) -> float:
    """1 - (replace operations in an optimal character alignment) / min(len(source), len(target)).

    MUSS (footnote 8 and ``get_replace_only_levenshtein_similarity`` in its code) keeps the
    replacements of the Levenshtein edit script and gives insertions and deletions weight 0, so
    the attribute does not repeat the length ratio. Case-sensitive, as in MUSS. The edit script
    is rapidfuzz's; where several optimal scripts exist the replacement count may differ from
    python-Levenshtein's by the choice of alignment. Two empty texts have similarity 1.
    """
    shorter = min(len(source), len(target))
    if shorter == 0:
        return 1.0
    replacements = sum(tag == "replace" for tag, _, _ in Levenshtein.editops(source, target).as_list())
    return 1.0 - replacements / shorter


@lru_cache(maxsize=8)
def _word_ranks(language: str) -> dict[str, int] | None:
    """Rank (0 = most frequent) of the language's WORD_RANK_VOCABULARY most frequent words; None if wordfreq lacks it."""
    import wordfreq

    if language not in wordfreq.available_languages():
        return None
    return {word: rank for rank, word in enumerate(wordfreq.top_n_list(language, WORD_RANK_VOCABULARY))}


@lru_cache(maxsize=8)
def _content_log_ranks(language: str) -> dict[str, float] | None:
    """log(1 + rank) of the ranked content words (a letter, not among the STOP_WORD_COUNT most frequent): word_rank_score's table."""
    ranks = _word_ranks(language)
    if ranks is None:
        return None
    return {word: float(np.log1p(rank)) for word, rank in ranks.items() if rank >= STOP_WORD_COUNT and any(char.isalpha() for char in word)}


def _third_quartile(values: list[float]) -> float:
    """``np.quantile(values, 0.75)`` bit for bit without its per-call cost (80 us, more than the rest of a text): NumPy's
    linear method, virtual index (n - 1) * 0.75 (exact in binary), and its ``_lerp``, from the upper value when the weight
    is at least 0.5. ``values`` must not be empty."""
    ordered = sorted(values)
    position = (len(ordered) - 1) * 0.75
    below = int(position)
    weight = position - below
    low, high = ordered[below], ordered[min(below + 1, len(ordered) - 1)]
    difference = high - low
    return high - difference * (1 - weight) if weight >= 0.5 else low + difference * weight


@lru_cache(maxsize=4096)
def word_rank_score(text: str, language: str) -> float | None:
    """ACCESS lexical complexity: the third quartile of log(1 + rank) of the text's content words.

    As in ACCESS/MUSS: content words only, words outside the ranked vocabulary ignored, and
    log(1 + vocabulary size) when no word is left. Ranks come from ``wordfreq`` (MUSS used the
    order of FastText's vocabulary, 10^5 words). Tokens are ``wordfreq.tokenize``'s; content words
    are tokens with a letter that are not among the language's STOP_WORD_COUNT most frequent
    words, which stand in for a stop-word list (none ships for every language). None when
    wordfreq has no list for the language. Cached per text: a sequence is in several pairs.
    """
    import wordfreq

    log_ranks = _content_log_ranks(language)
    if log_ranks is None:
        return None
    found = [log_ranks[token] for token in wordfreq.tokenize(text, language) if token in log_ranks]
    if not found:
        return float(np.log1p(len(_word_ranks(language))))
    return _third_quartile(found)


@lru_cache(maxsize=8)
def load_dependency_parser(language: str) -> DependencyParser | None:
    """A spaCy pipeline with a dependency parser for ``language``, or None when there is none.

    spaCy is optional: without it (or without an installed ``<lang>_core_{web,news}_{sm,md,lg}``
    model that has a parser) the dependency-depth attribute is absent (None), never guessed.
    """
    try:
        import spacy
    except ImportError:
        return None
    for kind in ("web", "news"):
        for size in ("sm", "md", "lg"):
            try:
                nlp = spacy.load(f"{language}_core_{kind}_{size}")
            except (OSError, ImportError, ValueError):
                continue
            if "parser" in getattr(nlp, "pipe_names", ()):
                return nlp
    return None


def dependency_tree_depth(parsed: Any) -> int:
    """Depth of the deepest dependency tree among the sentences of a parsed text (ACCESS's DepTreeDepth).

    ``parsed``: a spaCy-like Doc; a tree of one token has depth 0; no sentence gives 0.
    """

    def subtree_depth(node: Any) -> int:
        children = list(node.children)
        return 0 if not children else 1 + max(subtree_depth(child) for child in children)

    return max((subtree_depth(sentence.root) for sentence in parsed.sents), default=0)


def access_attributes(source: str, target: str, language: str) -> dict[str, float | None]:
    """The four ACCESS control attributes of a (source, target) pair, target relative to source.

    char_ratio: len(target) / len(source); levenshtein_replace_only: see
    :func:`replace_only_levenshtein_similarity`; word_rank_ratio: word_rank_score(target) /
    word_rank_score(source); dependency_depth_ratio: depth(target) / depth(source) with a spaCy
    parser. A ratio is None where it is not computable: no parser installed, no wordfreq list for
    the language, an empty source, or a source tree of depth 0.
    """
    attributes: dict[str, float | None] = {
        "char_ratio": len(target) / len(source) if source else None,
        "levenshtein_replace_only": replace_only_levenshtein_similarity(source, target),
        "word_rank_ratio": None,
        "dependency_depth_ratio": None,
    }
    source_rank, target_rank = word_rank_score(source, language), word_rank_score(target, language)
    if source_rank is not None and target_rank is not None and source_rank > 0:
        attributes["word_rank_ratio"] = target_rank / source_rank
    parser = load_dependency_parser(language)
    if parser is not None:
        source_depth = dependency_tree_depth(parser(source))
        if source_depth > 0:
            attributes["dependency_depth_ratio"] = dependency_tree_depth(parser(target)) / source_depth
    return attributes


# Mining --------------------------------------------------------------------------------------


def mine_muss(
    documents: cabc.Sequence[MiningDocument],
    *,
    encode: Encode,
    config: MussConfig,
    query_range: tuple[int, int] | None = None,
    exclude: set[str] | None = None,
    search: Callable[[np.ndarray, int], Neighbours] | None = None,
) -> Iterator[MinedPair]:
    """Mine paraphrase pairs among the sequences of ``documents``; yields each unordered pair once.

    query_range: [begin, end) indices into :func:`candidate_sequences`; only pairs whose emitting
    query lies in it are yielded (None: all). ``end`` beyond the list is clamped, so shards can be
    fixed-size ranges. Every shard encodes the whole collection and computes every sequence's k
    nearest neighbours (exact, bounded memory), since the margin needs each neighbour's own mean.
    exclude: texts of evaluation sets; a pair with either text equal (case- and whitespace-
    insensitively) to one of them is dropped.
    search: the nearest-neighbour search, ``search(vectors (n, d), k)`` -> each row's k nearest rows, itself left
    out (None: exact, :func:`top_k`); a faiss index here mines as an app job searching with it does, so a benchmark
    compares the pipelines, not their indexes.

    De-duplication: a pair {i, j} found from both sides is yielded by the smaller index; the pair
    is always oriented source = smaller index. Cosine, margin and filters are symmetric, so this
    rule needs only the neighbour lists and the union over any sharding equals the unsharded run.
    Order: by emitting query, then neighbour rank. MinedPair.score is the margin, features hold
    "cosine", "margin" and the ACCESS attributes.
    """
    pool = candidate_sequences(documents, config)
    n = len(pool)
    begin, end = (0, n) if query_range is None else query_range
    if begin < 0 or end < begin:
        raise ValueError(f"query_range must be (begin, end) with 0 <= begin <= end, got {query_range}")
    end = min(end, n)
    if begin >= end or n < 2:
        return
    excluded = frozenset(_comparable(text) for text in (exclude or ()))

    vectors = encode_all([s.text for s in pool], encode, config.encode_batch)  # (n, d)
    neighbours, mean_knn = _neighbours(vectors, config.k, search)

    for query in range(begin, end):
        for other in neighbours.indices[query]:
            other = int(other)
            if other < 0:
                continue
            if other < query and bool(np.any(neighbours.indices[other] == query)):
                continue  # the smaller index found this pair too and emits it
            low, high = min(query, other), max(query, other)
            cosine = float(np.dot(vectors[low], vectors[high]))  # one canonical product for both sides
            if 1.0 - cosine >= config.max_distance:
                continue
            margin = float(ratio_margin(cosine, mean_knn[low], mean_knn[high]))
            if margin < config.min_margin:
                continue
            source, target = pool[low], pool[high]
            if rejection_reason(source, target, min_levenshtein=config.min_levenshtein, exclude=excluded) is not None:
                continue
            yield _mined(source, target, cosine, margin, config.language)


def _neighbours(vectors: np.ndarray, k: int, search: Callable[[np.ndarray, int], Neighbours] | None) -> tuple[Neighbours, np.ndarray]:
    """Each row's k nearest other rows (exact unless ``search`` is given) and its mean score to them (n,)."""
    neighbours = search(vectors, k) if search is not None else top_k(vectors, vectors, k, exclude_self=True)  # (n, k)
    found = neighbours.indices >= 0  # (n, k) False where the collection has fewer than k others
    counts = found.sum(axis=1)  # (n,)
    return neighbours, np.where(found, neighbours.scores, 0.0).sum(axis=1) / np.maximum(counts, 1)


def _mined(source: Sequence, target: Sequence, cosine: float, margin: float, language: str) -> MinedPair:
    """The mined item of two candidate sequences: score = margin; features = cosine, margin and ACCESS attributes."""
    features: dict[str, float | None] = {"cosine": cosine, "margin": margin}
    features.update(access_attributes(source.text, target.text, language))
    return MinedPair(
        method="muss",
        source_doc=source.doc_id,
        target_doc=target.doc_id,
        source=source.sentence_indices,
        target=target.sentence_indices,
        source_text=source.text,
        target_text=target.text,
        score=margin,
        doc_score=None,
        features=features,
    )
