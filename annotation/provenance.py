"""Which suggestions an annotator saw when they made a label: recorded on each :class:`LabelEvent`.

A label made on the annotation screen, in the queue or through the API records the project's
suggestion run at that moment (``LabelEvent.suggestion_run``) and, as text that outlives the run,
``LabelEvent.suggestion``::

    {"run_id": 12, "model": "the shipped default model", "model_version": "<dir> (sha256 …)",
     "kind": "stored", "basis": "recorded"}

- ``kind`` says what was shown: ``stored`` (the run's stored candidates for the pair), ``none`` (the
  project had no suggestion run, or the run had not aligned the pair: no suggestions), ``unknown``
  (a backfilled event from before any run we know of). A later kind (``refreshed``: suggestions
  re-decoded in the browser after earlier labels) adds its own keys beside these.
- ``basis`` says how we know: ``recorded`` when the label was saved, ``backfilled`` by migration 0012
  for events made before (the project's suggestion run at the time, judged by when each run the
  project switched to finished: a best guess).

Adjudications and imported labels record nothing (``{}``): no suggestion was on the reviewer's page or
behind an import. The export cites this per label (:mod:`annotation.export.selection`).
"""

from __future__ import annotations

from typing import Any

from alignment.models import AlignedPair, AlignmentRun, DocumentPair
from annotation.models import AnnotationProject

STORED = "stored"
NONE = "none"
UNKNOWN = "unknown"
RECORDED = "recorded"
BACKFILLED = "backfilled"


def suggestion_provenance(project: AnnotationProject, pair: DocumentPair) -> dict[str, Any]:
    """``LabelEvent`` fields for a label made now on ``pair``: ``suggestion_run`` and ``suggestion``."""
    run: AlignmentRun | None = project.suggestion_run
    if run is None:
        return {
            "suggestion_run": None,
            "suggestion": {"run_id": None, "model": None, "model_version": None, "kind": NONE, "basis": RECORDED},
        }
    shown = AlignedPair.objects.filter(run=run, pair=pair).exists()
    return {
        "suggestion_run": run if shown else None,
        "suggestion": {
            "run_id": run.pk,
            "model": run.model_label,
            "model_version": run.model_version,
            "kind": STORED if shown else NONE,
            "basis": RECORDED,
        },
    }
