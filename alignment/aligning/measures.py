"""The measures and the encoder as this deployment's settings run them, for alignment runs, training and promotion.

Jobs and commands pass :func:`run_measure` to the services as their ``build_measure``, so the
services themselves never read the encoder settings.
"""

from __future__ import annotations

from django.conf import settings

from models_ml.similarity.encoders import load_sentence_encoder


def app_encoder(name: str):
    """The encoder ``name`` as the settings run it: device, backend (torch / ONNX / OpenVINO), threads, export cache."""
    return load_sentence_encoder(
        name, device=settings.ENCODER_DEVICE, allow_download=settings.ENCODER_ALLOW_DOWNLOAD, backend=settings.ENCODER_BACKEND,
        cache_dir=str(settings.ENCODER_CACHE_DIR), threads=settings.ENCODER_THREADS,
    )  # fmt: skip


def run_measure(name: str, aligner, *, cross_encoder_dir: str = "") -> object:
    """Measures for alignment runs: lexical ones need nothing, the others share the configured encoder.

    cross_encoder_dir: the run's own fine-tuned pair classifier (a model version's), else CROSS_ENCODER_MODEL_DIR.
    """
    from models_ml.aligning.aligner_config import LEARNED, LEXICAL_MEASURES
    from models_ml.similarity.measures import build_measure

    if name == LEARNED:  # the aligner's own pair scorer (its parameters are in its config), vectors from the encoder below
        scorer = aligner.measure
        if aligner.uses_encoder and scorer.encoder is None:
            scorer.encoder = app_encoder(aligner.config.encoder)
        return scorer
    if name in LEXICAL_MEASURES:
        return build_measure(name)
    if name == "cross_encoder":
        return build_measure(name, device=settings.ENCODER_DEVICE, model_dir=cross_encoder_dir or settings.CROSS_ENCODER_MODEL_DIR)
    return build_measure(name, encoder=app_encoder(aligner.config.encoder))
