"""The aligner's configuration: what config.json holds, its validation, and the two calibrations.

Apart from :mod:`models_ml.aligning.aligner` so that the settings (measure, paragraph variant,
CRF size, thresholds) can be read, checked and written without building a CRF. The untrained
calibration these values drive is described in the aligner's module docstring.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from models_ml.aligning.crf_config import CRFConfig
from models_ml.aligning.paragraphs import NewselaParagraphConfig, WikipediaParagraphConfig
from models_ml.similarity.encoders import DEFAULT_ENCODER
from models_ml.similarity.measures import MEASURE_BUILDERS
from models_ml.similarity.pair_scorer import LOGIT_CLIP, ScorerParameters

__all__ = ["LEARNED", "LEXICAL_MEASURES", "PARAGRAPH_VARIANTS", "AlignerConfig", "learned_config"]

PARAGRAPH_VARIANTS = ("none", "newsela", "wikipedia")
LEXICAL_MEASURES = frozenset({"jaccard", "tfidf_cosine", "char3_tfidf_cosine"})  # need no encoder
LEARNED = "learned"  # the pair scorer of models_ml.similarity.pair_scorer; its parameters live in AlignerConfig.scorer

# Paragraph thresholds for *cosine* similarities of the bundled MiniLM (the paper's defaults
# are for fine-tuned BERT probabilities, tau3/tau4 ~ 0.999). Picked by hand so that related
# paragraphs (max cosine ~0.7-0.9) align and unrelated ones (~0.1-0.4) do not; not tuned on
# a dev set yet - re-tune with evaluate.threshold_sweep once gold data is loaded.
COSINE_NEWSELA = NewselaParagraphConfig(tau1=0.3, tau2=0.34, tau3=0.8, tau4=0.7, tau5=0.5)
COSINE_WIKIPEDIA = WikipediaParagraphConfig(tau1=0.6, tau2=0.8, tau3=0.5, tau4=5, tau5=0.8)
# The same rules on the learned scorer's log-odds: a paragraph pair aligns when its simple sentences'
# best pairs are more likely aligned than not on average (tau1), or one pair is very likely (tau3, p > .88).
LOGIT_NEWSELA = NewselaParagraphConfig(tau1=0.0, tau2=0.34, tau3=2.0, tau4=1.0, tau5=0.5)


@dataclass(frozen=True)
class AlignerConfig:
    """Everything needed to rebuild an aligner; stored as config.json next to crf.pt.

    encoder: sentence encoder name for encoder-based measures (referenced, never copied).
    device: "" picks CUDA when present, else e.g. "cpu" / "cuda:0".
    measure: a name known to :func:`models_ml.similarity.measures.build_measure`.
    paragraph_variant: "none" | "newsela" | "wikipedia" (Algorithms 2 / 4 of Jiang et al.).
    newsela / wikipedia: the thresholds of each variant, on the measure's scale (cosine defaults).
    crf: CRF hyper-parameters (max_span 3 by default: merges of up to three complex sentences).
    emission_scale: the CRF sees ``emission_scale * sim``; with raw cosines in [-1, 1] a scale
        of 20 makes a 0.1 cosine gap worth 2 nats, so marginals are confident, not uniform.
    null_score: untrained null emission, in similarity units (the "aligned to nothing" threshold).
    span_bonus: untrained bias of span states of length >= 2, in similarity units: a merge
        wins when the simple sentence's similarity to its weaker complex sentence is within
        ``span_bonus`` of the stronger one.
    partial_threshold: a group whose score (mean CRF marginal of its simple sentences'
        chosen states) is below this is labelled "partial", otherwise "aligned".
    masked_similarity: similarity given to pairs outside aligned paragraphs.
    dense_state_limit: blocks with more CRF states than this are decoded on a pruned lattice.
    beam: span states kept per simple sentence on the pruned lattice.
    scorer: with ``measure="learned"``, the fitted pair scorer (:class:`ScorerParameters` as a
        dict); None until training fits it. Its log-odds are the CRF's similarity, so such a
        config uses ``emission_scale`` 1 and a ``null_score`` in log-odds (see :func:`learned_config`).
    scorer_embedding: whether a scorer fitted from scratch also reads sentence-vector cosines (off: on
        DEplain-web they added nothing that transfers, see bench/deplain_domains.py, and cost the encoder).
    """

    encoder: str = DEFAULT_ENCODER
    device: str = ""
    measure: str = "embedding_cosine"
    paragraph_variant: str = "newsela"
    newsela: NewselaParagraphConfig = COSINE_NEWSELA
    wikipedia: WikipediaParagraphConfig = COSINE_WIKIPEDIA
    crf: CRFConfig = field(default_factory=CRFConfig)
    emission_scale: float = 20.0
    null_score: float = 0.45
    span_bonus: float = 0.12
    partial_threshold: float = 0.5
    masked_similarity: float = -1.0
    dense_state_limit: int = 1500
    beam: int = 32
    scorer: dict[str, Any] | None = None
    scorer_embedding: bool = False

    def __post_init__(self) -> None:
        if self.scorer is not None:
            if self.measure != LEARNED:
                raise ValueError(f"scorer parameters are only read by measure {LEARNED!r}, not {self.measure!r}")
            ScorerParameters.from_dict(self.scorer)  # raises ValueError naming what is wrong
        if self.measure != LEARNED and self.measure not in MEASURE_BUILDERS:
            raise ValueError(
                f"unknown similarity measure {self.measure!r}; known measures: {', '.join(sorted({*MEASURE_BUILDERS, LEARNED}))}"
            )
        if self.paragraph_variant not in PARAGRAPH_VARIANTS:
            raise ValueError(f"paragraph_variant must be one of {PARAGRAPH_VARIANTS}, got {self.paragraph_variant!r}")
        if not self.emission_scale > 0:
            raise ValueError(f"emission_scale must be > 0, got {self.emission_scale}")
        if not 0.0 <= self.partial_threshold <= 1.0:
            raise ValueError(f"partial_threshold must lie in [0, 1], got {self.partial_threshold}")
        if self.beam < 1 or self.dense_state_limit < 1:
            raise ValueError(f"beam and dense_state_limit must be >= 1, got {self.beam} and {self.dense_state_limit}")

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict; nested configs become nested dicts."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AlignerConfig:
        """Inverse of :meth:`to_dict`; missing keys keep their defaults, unknown keys raise ValueError."""
        if not isinstance(data, dict):
            raise ValueError(f"aligner config must be a JSON object, got {type(data).__name__}")  # bad config content, not a bad argument
        nested = {"newsela": NewselaParagraphConfig, "wikipedia": WikipediaParagraphConfig, "crf": CRFConfig}
        values: dict[str, Any] = {}
        known = {f.name for f in fields(cls)}
        for key, value in data.items():
            if key not in known:
                raise ValueError(f"unknown aligner config key {key!r}; known keys: {', '.join(sorted(known))}")
            values[key] = _nested_from_dict(nested[key], value, key) if key in nested else value
        try:
            return cls(**values)
        except TypeError as error:
            raise ValueError(f"bad aligner config: {error}") from None


def learned_config(**overrides: Any) -> AlignerConfig:
    """A config for the learned pair scorer: log-odds emissions (scale 1, null at even odds, no merge
    bonus), single-sentence CRF states, paragraph thresholds on the log-odds scale, pairs outside aligned
    paragraphs at the lowest log-odds; ``overrides`` win."""
    values: dict[str, Any] = {
        "measure": LEARNED, "emission_scale": 1.0, "null_score": 0.0, "span_bonus": 0.0,
        "crf": CRFConfig(max_span=1), "newsela": LOGIT_NEWSELA, "masked_similarity": -LOGIT_CLIP,
    }  # fmt: skip
    return AlignerConfig(**{**values, **overrides})


def _nested_from_dict(config_class: type, value: Any, key: str) -> Any:
    if not isinstance(value, dict):
        raise ValueError(f"aligner config key {key!r} must be an object, got {type(value).__name__}")  # as above
    known = {f.name for f in fields(config_class)}
    for name in value:
        if name not in known:
            raise ValueError(f"unknown aligner config key {key}.{name!r}; known keys: {', '.join(sorted(known))}")
    return config_class(**value)
