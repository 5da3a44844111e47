"""Nearest sentences of a collection for each query sentence: dense, lexical or hybrid retrieval, searched exactly.

Why three: the default encoder (MiniLM) is English. On German DEplain-web (``bench/deplain_retrieval.py``),
character 3-gram TF-IDF finds a simple sentence's gold complex partner more often than MiniLM (recall@10
.700 against .522) and no fusion with MiniLM beats it, so ``lexical`` is the default; with a multilingual
encoder (USE multilingual v3) the weighted sum beats both views (recall@10 .730 against .700 and .654).

* ``dense``: cosine of the encoder's unit vectors (what mining searches with today).
* ``lexical``: cosine of character 3-gram TF-IDF vectors (:func:`models_ml.similarity.measures.char_trigrams`,
  the aligner's C3G measure) hashed into :data:`LEXICAL_DIMENSIONS` columns and cut to the
  :data:`MAX_LEXICAL_NONZEROS` heaviest, so each fits a pgvector ``sparsevec`` that an HNSW index takes.
* ``hybrid``: both, fused either by a weighted sum of the two cosines (exact over all keys) or by
  reciprocal-rank fusion (Cormack, Clarke & Büttcher 2009) of each view's ``rrf_depth`` best.

The search is exact (numpy / scipy sparse products, :func:`models_ml.mining.knn.top_k_blocks`); memory
is one (query_chunk x key_chunk) score block plus the running best lists, whatever the collection size.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from models_ml.mining.knn import Neighbours, normalise, top_k_blocks
from models_ml.similarity.measures import validate_sentences

__all__ = [
    "DEFAULT_FUSION",
    "DEFAULT_RETRIEVAL",
    "FUSIONS",
    "LEXICAL_DIMENSIONS",
    "MAX_LEXICAL_NONZEROS",
    "RETRIEVALS",
    "LexicalVectoriser",
    "RetrievalConfig",
    "document_frequency",
    "reciprocal_rank_fusion",
    "retrieve",
]

RETRIEVALS = ("dense", "lexical", "hybrid")
FUSIONS = ("rrf", "weighted")
DEFAULT_RETRIEVAL = "lexical"  # measured best with the default encoder on German (see above)
DEFAULT_FUSION = "weighted"  # beat RRF with each of the three encoders measured
# 2^20 columns: hash collisions are rare among the ~10^4-10^5 distinct 3-grams of a language, and
# pgvector's sparsevec allows up to 10^9 dimensions.
LEXICAL_DIMENSIONS = 2**20
# pgvector's HNSW index takes sparse vectors of at most 1,000 non-zeros; a sentence has about one
# 3-gram per character, so only sentences longer than ~1,000 characters lose their lightest 3-grams.
MAX_LEXICAL_NONZEROS = 1000

Encode = Callable[[list[str]], np.ndarray]  # sentences -> (n, d) vectors


@dataclass(frozen=True)
class RetrievalConfig:
    """Which retrieval, and for ``hybrid`` how the two views are fused.

    dense_weight: the weighted sum's share of the dense cosine (the lexical cosine gets the rest); 0.3 was
    the best of 0.1-0.7 for USE multilingual v3 on DEplain-web dev (chosen there, so that figure is optimistic).
    rrf_constant: RRF's k in 1 / (k + rank), 60 as in the paper; rrf_depth: how many of each view's
    best enter the fusion (at least the k asked for). query_chunk x key_chunk bounds the score block.
    """

    retrieval: str = DEFAULT_RETRIEVAL
    fusion: str = DEFAULT_FUSION
    dense_weight: float = 0.3
    rrf_constant: int = 60
    rrf_depth: int = 100
    query_chunk: int = 256
    key_chunk: int = 16384

    def __post_init__(self) -> None:
        if self.retrieval not in RETRIEVALS:
            raise ValueError(f"unknown retrieval {self.retrieval!r}; known: {', '.join(RETRIEVALS)}")
        if self.fusion not in FUSIONS:
            raise ValueError(f"unknown fusion {self.fusion!r}; known: {', '.join(FUSIONS)}")
        if not 0.0 <= self.dense_weight <= 1.0:
            raise ValueError(f"dense_weight must be in [0, 1], got {self.dense_weight}")
        if self.rrf_constant < 0 or min(self.rrf_depth, self.query_chunk, self.key_chunk) < 1:
            raise ValueError("rrf_constant must be >= 0 and rrf_depth, query_chunk, key_chunk >= 1")

    @property
    def uses_encoder(self) -> bool:
        return self.retrieval != "lexical"


@dataclass(frozen=True)
class LexicalVectoriser:
    """Character 3-gram TF-IDF, hashed: ``idf`` (LEXICAL_DIMENSIONS,) float32 per hashed column.

    Term frequency is the raw count and IDF the smoothed ``log((1 + N) / (1 + df)) + 1`` of
    :class:`models_ml.similarity.measures.TfidfCosine`, fitted on the collection searched (N of its
    sentences); a 3-gram the collection lacks gets the largest IDF. It changes no query's ranking,
    as it only scales that query's vector.
    """

    idf: np.ndarray

    @classmethod
    def fit(cls, collection: Sequence[str]) -> LexicalVectoriser:
        sentences = validate_sentences(collection, "collection")
        return cls.from_document_frequency(document_frequency(sentences), len(sentences))

    @classmethod
    def from_document_frequency(cls, frequency: np.ndarray, count: int) -> LexicalVectoriser:
        """From (LEXICAL_DIMENSIONS,) counts of sentences holding each hashed 3-gram, over ``count`` sentences."""
        if frequency.shape != (LEXICAL_DIMENSIONS,) or count < 0 or (count and int(frequency.max()) > count):
            raise ValueError(f"need ({LEXICAL_DIMENSIONS},) document frequencies of at most {count} sentences, got {frequency.shape}")
        idf = np.log((1.0 + count) / (1.0 + frequency)) + 1.0
        return cls(idf.astype(np.float32))

    def to_bytes(self) -> bytes:
        """The IDF, compressed (only the columns some sentence holds differ from the largest value)."""
        top = self.idf.max()
        columns = np.flatnonzero(self.idf < top).astype(np.int32)
        buffer = io.BytesIO()
        np.savez_compressed(buffer, columns=columns, values=self.idf[columns], top=np.float32(top))
        return buffer.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> LexicalVectoriser:
        with np.load(io.BytesIO(bytes(data))) as stored:
            idf = np.full(LEXICAL_DIMENSIONS, stored["top"], dtype=np.float32)
            idf[stored["columns"]] = stored["values"]
        return cls(idf)

    def transform(self, sentences: Sequence[str]) -> sparse.csr_matrix:
        """(n, LEXICAL_DIMENSIONS) float32, rows of unit length (blank sentences: zero rows), <= MAX_LEXICAL_NONZEROS each."""
        weighted = _hashed_counts(validate_sentences(sentences, "sentences"))  # (n, D) counts
        weighted.data *= self.idf[weighted.indices]  # tf x idf, entry by entry
        weighted = _keep_heaviest(weighted, MAX_LEXICAL_NONZEROS)
        norms = np.sqrt(np.asarray(weighted.multiply(weighted).sum(axis=1)).ravel())  # (n,)
        inverse = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
        return sparse.csr_matrix(sparse.diags(inverse.astype(np.float32)) @ weighted, dtype=np.float32)


def document_frequency(sentences: Sequence[str]) -> np.ndarray:
    """(LEXICAL_DIMENSIONS,) int64: how many of ``sentences`` hold each hashed 3-gram; sums over batches to a collection's."""
    counts = _hashed_counts(list(sentences))  # (n, D): csr rows hold each column once
    return np.bincount(counts.indices, minlength=LEXICAL_DIMENSIONS).astype(np.int64)


def _hashed_counts(sentences: list[str]) -> sparse.csr_matrix:
    """(n, D) float32 counts of each sentence's hashed character 3-grams (``measures.char_trigrams``), in canonical order:
    the same matrix as scikit-learn's ``HashingVectorizer(analyzer=char_trigrams, alternate_sign=False, norm=None)``
    (tested), built in numpy. Each 3-gram becomes one integer of its three code points, hashed on the arrays
    (:func:`_trigram_columns`). The per-3-gram Python of scikit-learn's path was most of a hybrid job's lexical
    preparation (6 s per 30,000 sentences of 220 characters; docs/benchmarks.md "Mining at scale")."""
    padded = [f" {text} " if text else "" for text in (" ".join(sentence.lower().split()) for sentence in sentences)]
    lengths = np.fromiter(map(len, padded), dtype=np.int64, count=len(padded))  # (n,) characters, 0 or >= 3
    grams = np.maximum(lengths - 2, 0)  # (n,) 3-grams per sentence
    if not grams.sum():
        return sparse.csr_matrix((len(padded), LEXICAL_DIMENSIONS), dtype=np.float32)
    points = np.frombuffer("".join(padded).encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)  # (characters,)
    ends = np.cumsum(lengths)  # (n,)
    starts = np.repeat(ends - lengths, grams) + (np.arange(grams.sum()) - np.repeat(np.cumsum(grams) - grams, grams))  # (g,)
    keys = points[starts] << np.uint64(42) | points[starts + 1] << np.uint64(21) | points[starts + 2]  # (g,) code points < 2^21
    indptr = np.concatenate([[0], np.cumsum(grams)])
    columns = np.concatenate([_trigram_columns(keys[start : start + HASH_CHUNK]) for start in range(0, len(keys), HASH_CHUNK)])
    counts = sparse.csr_matrix((np.ones(len(keys), dtype=np.float32), columns, indptr), shape=(len(padded), LEXICAL_DIMENSIONS))
    counts.sum_duplicates()  # sorts each row's columns and adds a 3-gram's repeats (and hash collisions)
    return counts


HASH_CHUNK = 1 << 20  # 3-grams hashed at a time: 12 bytes each of UTF-8 and a few of their words


def _trigram_columns(keys: np.ndarray) -> np.ndarray:
    """(g,) int32 columns scikit-learn's HashingVectorizer gives the 3-grams of three 21-bit code points packed in each
    of ``keys`` (g,): |murmurhash3_32(their UTF-8 bytes, seed 0)| mod D, the hash computed on the arrays (an ASCII
    3-gram, most of them, is three bytes: one tail, no block). A dict of the hashes of a batch's distinct 3-grams
    (np.unique, then scikit-learn's hash a 3-gram) needed scikit-learn imported, 1.8 s in a fresh worker, and took
    1.4 s for 40,000 sentences of 220 characters once warm, against 0.6 s here."""
    mask = np.uint64((1 << 21) - 1)
    ascii_ = ((keys >> np.uint64(42)) < 0x80) & ((keys >> np.uint64(21) & mask) < 0x80) & ((keys & mask) < 0x80)  # (g,)
    h = np.empty(len(keys), dtype=np.uint32)
    short = keys[ascii_]
    tail = ((short >> np.uint64(42)) | (short >> np.uint64(21) & mask) << np.uint64(8) | (short & mask) << np.uint64(16)).astype(np.uint32)
    h[ascii_] = _scrambled(tail) ^ np.uint32(3)
    h[~ascii_] = _murmur_unmixed(keys[~ascii_])
    h ^= h >> 16
    h *= np.uint32(0x85EBCA6B)
    h ^= h >> 13
    h *= np.uint32(0xC2B2AE35)
    h ^= h >> 16
    return (np.abs(h.view(np.int32).astype(np.int64)) % LEXICAL_DIMENSIONS).astype(np.int32)


def _murmur_unmixed(keys: np.ndarray) -> np.ndarray:
    """murmurhash3_32 (x86, seed 0) of each key's three code points' UTF-8 bytes, up to its final mix (the caller's)."""
    mask = np.uint64((1 << 21) - 1)
    utf8 = np.zeros((len(keys), 12), dtype=np.uint32)  # (g, 12) the 3-gram's bytes, then zeros
    length = np.zeros(len(keys), dtype=np.int64)  # (g,) its bytes
    rows = np.arange(len(keys))
    for shift in (42, 21, 0):
        point = ((keys >> np.uint64(shift)) & mask).astype(np.uint32)  # (g,)
        size = 1 + (point >= 0x80) + (point >= 0x800) + (point >= 0x10000)  # (g,) its UTF-8 bytes
        lead = np.select([size == 1, size == 2, size == 3], [point, 0xC0 | point >> 6, 0xE0 | point >> 12], 0xF0 | point >> 18)
        for byte in range(4):  # byte b of a code point of n bytes: the lead, then continuation bytes of 6 bits each
            value = np.where(byte == 0, lead, 0x80 | (point >> (6 * np.maximum(size - 1 - byte, 0)).astype(np.uint32)) & 0x3F)
            used = byte < size
            utf8[rows[used], (length + byte)[used]] = value[used]
        length += size
    h = np.zeros(len(keys), dtype=np.uint32)  # murmurhash3_32, x86 variant, seed 0
    for block in range(3):
        word = utf8[:, 4 * block] | utf8[:, 4 * block + 1] << 8 | utf8[:, 4 * block + 2] << 16 | utf8[:, 4 * block + 3] << 24
        mixed = _rotate(_scrambled(word) ^ h, 13) * np.uint32(5) + np.uint32(0xE6546B64)
        h = np.where(4 * (block + 1) <= length, mixed, h)
    start = length // 4 * 4  # (g,) the tail's first byte: its 1-3 bytes, little-endian
    tail = np.zeros(len(keys), dtype=np.uint32)
    for byte in range(3):
        present = start + byte < length
        tail |= np.where(present, utf8[rows, np.minimum(start + byte, 11)] << (8 * byte), 0).astype(np.uint32)
    h = np.where(length % 4 > 0, h ^ _scrambled(tail), h)
    return h ^ length.astype(np.uint32)


def _scrambled(block: np.ndarray) -> np.ndarray:
    """murmur3's scramble of a 4-byte block (or of the tail): times c1, rotated by 15, times c2."""
    return _rotate(block * np.uint32(0xCC9E2D51), 15) * np.uint32(0x1B873593)


def _rotate(value: np.ndarray, bits: int) -> np.ndarray:
    return (value << np.uint32(bits) | value >> np.uint32(32 - bits)).astype(np.uint32)


def _keep_heaviest(matrix: sparse.csr_matrix, limit: int) -> sparse.csr_matrix:
    """Each row cut to its ``limit`` largest entries (ties: the lower column), so it fits a sparsevec index."""
    lengths = np.diff(matrix.indptr)  # (n,) entries per row
    if matrix.nnz == 0 or lengths.max() <= limit:
        return matrix
    keep = np.ones(matrix.nnz, dtype=bool)  # (nnz,)
    for row in np.flatnonzero(lengths > limit):
        start, stop = matrix.indptr[row], matrix.indptr[row + 1]
        order = np.lexsort((matrix.indices[start:stop], -matrix.data[start:stop]))  # heaviest first
        keep[start + order[limit:]] = False
    kept_per_row = np.bincount(np.repeat(np.arange(matrix.shape[0]), lengths)[keep], minlength=matrix.shape[0])  # (n,)
    indptr = np.concatenate([[0], np.cumsum(kept_per_row)])
    return sparse.csr_matrix((matrix.data[keep], matrix.indices[keep], indptr), shape=matrix.shape)


def retrieve(
    queries: Sequence[str], collection: Sequence[str], k: int, *, config: RetrievalConfig | None = None, encode: Encode | None = None
) -> Neighbours:
    """The k best sentences of ``collection`` for every query, best first: indices (q, k) and scores (q, k).

    ``encode`` turns sentences into vectors (the encoder's ``encode``) and is needed unless the
    retrieval is lexical. Scores: the cosine (dense, lexical), the weighted sum of both cosines, or
    the RRF score. Where the collection has fewer than k sentences, the rest is -1 / -inf. Ties keep
    the lower index, so equal inputs give equal outputs.
    """
    config = config or RetrievalConfig()
    queries, collection = validate_sentences(queries, "query"), validate_sentences(collection, "collection")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if not collection:
        raise ValueError("the collection holds no sentences")
    if config.uses_encoder and encode is None:
        raise ValueError(f"{config.retrieval} retrieval needs an encoder")
    chunks = {"query_chunk": config.query_chunk, "key_chunk": config.key_chunk}
    sizes = (len(queries), len(collection))
    lexical = _lexical_scorer(queries, collection) if config.retrieval != "dense" else None
    dense = _dense_scorer(queries, collection, encode) if config.uses_encoder and encode is not None else None
    if dense is None or lexical is None:
        return top_k_blocks(dense or lexical, *sizes, k, **chunks)  # type: ignore[arg-type]
    if config.fusion == "weighted":
        weight = np.float32(config.dense_weight)
        fused = lambda rows, columns: weight * dense(rows, columns) + (1 - weight) * lexical(rows, columns)  # noqa: E731
        return top_k_blocks(fused, *sizes, k, **chunks)
    depth = max(k, config.rrf_depth)
    rankings = [top_k_blocks(view, *sizes, depth, **chunks).indices for view in (dense, lexical)]
    return reciprocal_rank_fusion(rankings, k, constant=config.rrf_constant)


Scorer = Callable[[slice, slice], np.ndarray]  # (query rows, key columns) -> (rows, columns) float32 scores


def _lexical_scorer(queries: list[str], collection: list[str]) -> Scorer:
    vectoriser = LexicalVectoriser.fit(collection)
    query_vectors = vectoriser.transform(queries)  # (q, D) csr
    key_vectors_t = vectoriser.transform(collection).T.tocsc()  # (D, n): a column slice is one key block
    return lambda rows, columns: (query_vectors[rows] @ key_vectors_t[:, columns]).toarray()  # (qc, kc)


def _dense_scorer(queries: list[str], collection: list[str], encode: Encode) -> Scorer:
    query_vectors = normalise(encode(queries))  # (q, d)
    key_vectors = normalise(encode(collection))  # (n, d)
    if query_vectors.shape != (len(queries), key_vectors.shape[1]) or key_vectors.shape[0] != len(collection):
        raise ValueError(
            f"the encoder returned {query_vectors.shape} and {key_vectors.shape} for {len(queries)} and {len(collection)} sentences"
        )
    return lambda rows, columns: query_vectors[rows] @ key_vectors[columns].T  # (qc, kc)


def reciprocal_rank_fusion(rankings: Sequence[np.ndarray], k: int, *, constant: int = 60) -> Neighbours:
    """Fuse several rankings of the same keys: a key scores sum over rankings of 1 / (constant + rank), rank from 1.

    rankings: (q, depth_r) key indices each, best first, -1 for none. A key missing from a ranking
    gets nothing from it. The k best per query, best first; ties keep the lower index. -1 / -inf pad.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if not rankings or len({len(r) for r in rankings}) != 1:
        raise ValueError("need at least one ranking, all with the same number of queries")
    query_count = len(rankings[0])
    indices = np.full((query_count, k), -1, dtype=np.int64)  # (q, k)
    scores = np.full((query_count, k), -np.inf, dtype=np.float32)  # (q, k)
    contributions = [1.0 / (constant + np.arange(1, r.shape[1] + 1)) for r in rankings]  # (depth_r,) each
    for query in range(query_count):
        keys = np.concatenate([r[query] for r in rankings])  # (sum depth_r,)
        gains = np.concatenate(contributions)
        present = keys >= 0
        found, position = np.unique(keys[present], return_inverse=True)  # sorted keys
        fused = np.bincount(position, weights=gains[present], minlength=len(found))  # (distinct,)
        order = np.lexsort((found, -fused))[:k]  # best first, lower index on ties
        indices[query, : len(order)], scores[query, : len(order)] = found[order], fused[order]
    return Neighbours(indices, scores)
