"""One vocabulary for the aligner behind suggestions, runs, versions and exports.

Every page, job card, API answer and export names a model through :func:`model_label`, so the
same weights never go by two names ("untrained" on one page, "default model" on the next):

- **the shipped default model**: the trained model in ``models_ml/default_model`` (the default
  ``ALIGNER_MODEL_DIR``); another ``ALIGNER_MODEL_DIR`` is *the configured default model (NAME)*;
- **the hand-calibrated MiniLM aligner**: no trained weights, the CRF's hand-set scale on MiniLM
  cosine (what "untrained" meant); on another measure *the hand-calibrated aligner on MEASURE*;
- **vN**: a project's own trained version (``MODEL_DIR/project-<id>/v<N>``);
- *mined pairs (mining job #N)*: a mining job's pairs sent to a project, not an aligner at all.

``AlignmentRun.model_version`` keeps the exact directory and checksum for provenance; this is the
name people read next to it. What leaves the server (pages, the API, exports) shows that version without the
server's directories (:func:`public_model_version`): "default_model (sha256 …)", "project-3/v2 (sha256 …)", so an
export is byte-identical wherever the app is installed.
"""

from __future__ import annotations

import re
from pathlib import Path

from django.conf import settings

from models_ml.aligning.aligner_config import LEARNED, LEXICAL_MEASURES
from models_ml.data.checkpoint import DEFAULT_MODEL_DIR
from models_ml.similarity.encoders import DEFAULT_ENCODER

SHIPPED_DEFAULT = "the shipped default model"
HAND_CALIBRATED = "the hand-calibrated MiniLM aligner"
# Names stored before this vocabulary (a version's training base, its baseline), read as today's names.
_STORED_NAMES = {"untrained": HAND_CALIBRATED, "untrained aligner": HAND_CALIBRATED, "default model": SHIPPED_DEFAULT}
_VERSION_DIR = re.compile(r"project-\d+/v(\d+)$")


def model_label(
    *, model_dir: str = "", version: int | None = None, measure: str = "", encoder: str = "", mining_job: int | None = None
) -> str:
    """The name of an aligner: by its model directory, a project version's number, or (without weights) its measure."""
    if mining_job is not None:
        return f"mined pairs (mining job #{mining_job})"
    if version is not None:
        return f"v{version}"
    if not model_dir:
        return _hand_calibrated(measure, encoder)
    path = Path(model_dir).resolve()
    if path == DEFAULT_MODEL_DIR.resolve():
        return SHIPPED_DEFAULT
    if settings.ALIGNER_MODEL_DIR and path == Path(settings.ALIGNER_MODEL_DIR).resolve():
        return f"the configured default model ({path.name})"
    found = _VERSION_DIR.search(path.as_posix())
    if found:
        return f"v{found.group(1)}"
    return f"the model in {path.name}"


_VERSION_TEXT = re.compile(r"^(?P<path>.+) \(sha256 (?P<checksum>[0-9a-f]+)\)$")


def model_dir_name(model_dir: str | Path) -> str:
    """A model directory by its name alone: ``project-3/v2`` for a project's version, else its last part."""
    posix = str(model_dir).replace("\\", "/")  # a directory named on Windows too
    found = _VERSION_DIR.search(posix)
    return found.group(0) if found else posix.rstrip("/").rsplit("/", 1)[-1]


def public_model_version(stored: str | None) -> str | None:
    """A stored ``model_version`` ("/srv/app/models_ml/default_model (sha256 …)") without the server's directories;
    a text of another form ("untrained (hand-calibrated)", "mined by …") as it is."""
    found = _VERSION_TEXT.match(stored or "")
    if found is None or "/" not in found["path"] and "\\" not in found["path"]:
        return stored
    return f"{model_dir_name(found['path'])} (sha256 {found['checksum']})"


def _hand_calibrated(measure: str, encoder: str) -> str:
    if not measure or measure == LEARNED:  # "learned" without a model cannot run; the default config is MiniLM cosine
        return HAND_CALIBRATED
    if measure in LEXICAL_MEASURES:
        return f"the hand-calibrated aligner on {measure}"
    if encoder in ("", DEFAULT_ENCODER) or "minilm" in encoder.lower():
        return HAND_CALIBRATED if measure == "embedding_cosine" else f"the hand-calibrated MiniLM aligner on {measure}"
    return f"the hand-calibrated aligner on {measure} ({encoder})"


def run_model_label(run) -> str:
    """The name of the aligner an :class:`~alignment.models.AlignmentRun` ran (from its stored config)."""
    config = run.config or {}
    aligner = config.get("aligner") or {}
    return model_label(
        model_dir=config.get("model_dir") or "",
        measure=str(aligner.get("measure") or ""),
        encoder=str(aligner.get("encoder") or ""),
        mining_job=config.get("mining_job"),
    )


def stored_model_label(name: str) -> str:
    """A model name stored before this vocabulary ("untrained", "default model"), in today's words; others as stored."""
    return _STORED_NAMES.get(name, name)
