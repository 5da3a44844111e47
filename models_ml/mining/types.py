"""Shared types of pseudo-parallel mining (LHA in ``models_ml.mining.lha``, MUSS in ``models_ml.mining.muss``).

A mined item links one or more consecutive-or-not sentences of a source document to sentences
of a target document (n:m), with the similarity that found it and the features the filters and
the researcher's browser use. Mining never needs a database: documents come in as sentence
lists, vectors from an ``Encode`` callable (unit-norm float32 rows).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

__all__ = ["Encode", "MinedPair", "MiningDocument"]

Encode = Callable[[Sequence[str]], np.ndarray]  # sentences -> (n, d) unit-norm float32


@dataclass(frozen=True)
class MiningDocument:
    doc_id: str
    sentences: list[str]


@dataclass(frozen=True)
class MinedPair:
    """One mined item. source / target: sentence indices in their documents (sorted, 0-based).

    score: the item's similarity (LHA: mean cosine of its neighbour links; MUSS: the ratio margin);
    doc_score: the document pair's cosine (LHA), None otherwise; features: filter values and ACCESS
    attributes by name (None when not computable, e.g. no dependency parser installed).
    """

    method: str
    source_doc: str
    target_doc: str
    source: tuple[int, ...]
    target: tuple[int, ...]
    source_text: str
    target_text: str
    score: float
    doc_score: float | None = None
    features: dict[str, float | None] = field(default_factory=dict)

    def as_dict(self) -> dict:
        data = asdict(self)
        data["source"], data["target"] = list(self.source), list(self.target)
        return data
