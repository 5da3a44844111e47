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


# What each measure's number is, for the researcher's pages, which show raw scores (no rescaling).
MEASURE_MEANINGS = {
    "learned": "log-odds that the pair belongs to one group, from the learned pair scorer; unbounded, 0 is even odds",
    "embedding_cosine": "cosine similarity of the two sentence vectors, −1 to 1",
    "tfidf_cosine": "cosine similarity of the TF-IDF word vectors, 0 to 1",
    "char3_tfidf_cosine": "cosine similarity of the character 3-gram TF-IDF vectors, 0 to 1",
    "jaccard": "Jaccard overlap of the two sets of words, 0 to 1",
    "cross_encoder": "the cross-encoder's probability that the pair is aligned or partial, 0 to 1",
}
WORD_ALIGNMENT_MEANING = "similarity from aligning the two sentences' word vectors (cosines of the matched words)"
CRF_MARGINAL_MEANING = "the CRF's probability, 0 to 1, that this simple sentence's state covers this complex sentence"


def measure_meaning(name: str) -> str:
    """What a score of measure ``name`` is, in words ("similarity of … 0 to 1", "log-odds …")."""
    if name == "crf_marginal":
        return CRF_MARGINAL_MEANING
    if name.startswith("word_"):
        return WORD_ALIGNMENT_MEANING
    return MEASURE_MEANINGS.get(name, "similarity score of this measure")
