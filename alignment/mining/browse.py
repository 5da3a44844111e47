"""Reads for the mined-pair browser: filters, sorting and full-text search over a job's pairs."""

from __future__ import annotations

import math
from dataclasses import dataclass

from django.contrib.postgres.search import SearchQuery, SearchVector
from django.db.models import Q, QuerySet

from alignment.errors import ServiceError
from alignment.mining.models import MinedPair, MiningJob

SORTS = {  # the URL's value -> the order; the values stay as they were so saved links keep working
    "score": ("-score", "pk"),
    "-score": ("score", "pk"),
    "length_ratio": ("length_ratio", "pk"),
    "overlap": ("-overlap", "pk"),
    "doc_score": ("-doc_score", "pk"),
    "position": ("source_document_id", "source_sentences__0", "pk"),  # the first sentence's index, compared as a number
}
SORT_NAMES = {  # what the page calls each order
    "score": "best score first",
    "-score": "lowest score first",
    "length_ratio": "shortest target first (length ratio)",
    "overlap": "most word overlap first",
    "doc_score": "most similar documents first",
    "position": "position in the source documents",
}
SHAPES = ("1:1", "1:n", "n:1", "n:m")
RANGES = ("score", "length_ratio", "overlap", "doc_score")
MAX_QUERY_CHARS = 200
ACCESS = ("char_ratio", "levenshtein_replace_only", "word_rank_ratio", "dependency_depth_ratio")  # MUSS features


class FilterError(ServiceError):
    """A bad browser parameter; the message names it, and so does ``field``."""


@dataclass
class Filters:
    ranges: dict[str, tuple[float | None, float | None]]
    shape: str = ""
    q: str = ""
    sort: str = "score"


def _number(params, name: str) -> float | None:
    raw = (params.get(name) or "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise FilterError(f"{name}: {raw[:64]!r} is not a number", field=name) from None
    if not math.isfinite(value):  # NaN and infinity are not valid JSON, so the features filter would fail in PostgreSQL
        raise FilterError(f"{name}: {raw[:64]!r} is not a finite number", field=name)
    return value


def query_text(params, name: str = "q") -> str:
    """A free-text search parameter: stripped, at most ``MAX_QUERY_CHARS``, no NUL (PostgreSQL text cannot hold it)."""
    text = (params.get(name) or "").strip()
    if "\x00" in text:
        raise FilterError(f"{name}: the search text holds a NUL character", field=name)
    if len(text) > MAX_QUERY_CHARS:
        raise FilterError(f"{name}: the search text is {len(text):,} characters long; the limit is {MAX_QUERY_CHARS}", field=name)
    return text


def filters_from(params) -> Filters:
    ranges = {name: (_number(params, f"{name}_min"), _number(params, f"{name}_max")) for name in RANGES + ACCESS}
    shape = params.get("shape", "") or ""
    if shape and shape not in SHAPES:
        raise FilterError(f"shape: {shape!r} is not one of {', '.join(SHAPES)}", field="shape")
    sort = params.get("sort", "score") or "score"
    if sort not in SORTS:
        orders = "; ".join(f"{key} ({name})" for key, name in SORT_NAMES.items())
        raise FilterError(f"sort: {sort!r} is not an order; orders: {orders}", field="sort")
    return Filters(ranges=ranges, shape=shape, q=query_text(params), sort=sort)


def mined_pairs(job: MiningJob, filters: Filters) -> QuerySet[MinedPair]:
    pairs = MinedPair.objects.filter(job=job)
    for name, (low, high) in filters.ranges.items():
        field = f"features__{name}" if name in ACCESS else name  # ACCESS attributes live in the features JSON
        if low is not None:
            pairs = pairs.filter(**{f"{field}__gte": low})
        if high is not None:
            pairs = pairs.filter(**{f"{field}__lte": high})
    shape = {
        "1:1": Q(source_count=1, target_count=1),
        "1:n": Q(source_count=1, target_count__gt=1),
        "n:1": Q(source_count__gt=1, target_count=1),
        "n:m": Q(source_count__gt=1, target_count__gt=1),
    }.get(filters.shape)
    if shape is not None:
        pairs = pairs.filter(shape)
    if filters.q:
        vector = SearchVector("source_text", "target_text", config="simple")
        pairs = pairs.annotate(search=vector).filter(search=SearchQuery(filters.q, config="simple", search_type="websearch"))
    return pairs.select_related("source_document", "target_document").order_by(*SORTS[filters.sort])
