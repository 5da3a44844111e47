"""The CRF's hyper-parameters, apart from :mod:`models_ml.aligning.crf`: an aligner's config can be read, checked and
stored (by a web request creating a run, say) without importing torch, which costs a process two seconds."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CRFConfig:
    """Hyper-parameters; plain data so it can be stored next to a checkpoint."""

    max_span: int = 3  # longest run of complex sentences one state may cover
    hidden_size: int = 32  # hidden units of the transition FFNN
    null_emission_init: float = 0.5  # starting null threshold, mid-scale for cosines and probabilities

    def __post_init__(self) -> None:
        if self.max_span < 1:
            raise ValueError(f"CRFConfig.max_span must be >= 1, got {self.max_span}")
        if self.hidden_size < 1:
            raise ValueError(f"CRFConfig.hidden_size must be >= 1, got {self.hidden_size}")
