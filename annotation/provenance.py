"""Which suggestions an annotator saw when they made a label: recorded on each :class:`LabelEvent`.

A label made on the annotation screen, in the queue or through the API records the project's
suggestion run at that moment (``LabelEvent.suggestion_run``) and, as text that outlives the run,
``LabelEvent.suggestion``::

    {"run_id": 12, "model": "the shipped default model", "model_version": "<dir> (sha256 …)",
     "kind": "stored", "basis": "recorded"}

- ``kind`` says what was shown: ``stored`` (the run's stored candidates for the pair), ``none`` (the
  project had no suggestion run, or the run had not aligned the pair: no suggestions), ``unknown``
  (a backfilled event from before any run we know of), ``refreshed`` (the run's model re-decoded the
  pair on the screen with the annotator's earlier labels of it clamped, :mod:`annotation.labelling.refresh`:
  the suggestion shown was that one, not the stored one; ``decoded`` says so in words).
- ``basis`` says how we know: ``recorded`` when the label was saved, ``backfilled`` by migration 0012
  for events made before (the project's suggestion run at the time, judged by when each run the
  project switched to finished: a best guess).

Adjudications and imported labels record nothing (``{}``): no suggestion was on the reviewer's page or
behind an import. The export cites this per label (:mod:`annotation.export.selection`).
"""

from __future__ import annotations

from typing import Any

from alignment.errors import ServiceError
from alignment.models import AlignedPair, AlignmentRun, DocumentPair
from annotation.models import AnnotationProject

STORED = "stored"
NONE = "none"
UNKNOWN = "unknown"
RECORDED = "recorded"
BACKFILLED = "backfilled"
REFRESHED = "refreshed"
KEPT_FROM = "kept_from"  # run config: pair id -> the run whose rows were copied in for it (annotation.training.resuggest)


def origin_run(run: AlignmentRun, pair_id: int) -> AlignmentRun:
    """The run whose model made ``run``'s suggestions for the pair: ``run`` itself, or the run an automatic
    adaptation's re-suggestion copied a started pair's rows from (their scores and model are that run's)."""
    origin = (run.config or {}).get(KEPT_FROM, {}).get(str(pair_id))
    return AlignmentRun.objects.filter(pk=origin).first() or run if origin else run


SHOWN = (STORED, REFRESHED)  # what a screen may say it showed for the label it sends


def shown_check(value: str) -> str:
    """The ``suggestions`` field of a label write: "" or "stored" (the run's), or "refreshed"; ValueError otherwise."""
    value = (value or STORED).strip()
    if value not in SHOWN:
        raise ServiceError(f"suggestions: {value[:40]!r} is not one of {', '.join(SHOWN)}", field="suggestions")
    return value


def suggestion_provenance(project: AnnotationProject, pair: DocumentPair, *, shown: str = STORED) -> dict[str, Any]:
    """``LabelEvent`` fields for a label made now on ``pair``: ``suggestion_run`` and ``suggestion``.

    ``shown`` REFRESHED: the screen showed the run's suggestions re-decoded from the annotator's labels.
    """
    run: AlignmentRun | None = project.suggestion_run
    if run is None:
        return {
            "suggestion_run": None,
            "suggestion": {"run_id": None, "model": None, "model_version": None, "kind": NONE, "basis": RECORDED},
        }
    aligned = AlignedPair.objects.filter(run=run, pair=pair).exists()
    run = origin_run(run, pair.pk)  # the run whose model made what the screen shows
    suggestion = {
        "run_id": run.pk,
        "model": run.model_label,
        "model_version": run.model_version_public,  # no server directory in what labels carry into exports
        "kind": (REFRESHED if shown == REFRESHED else STORED) if aligned else NONE,
        "basis": RECORDED,
    }
    if suggestion["kind"] == REFRESHED:
        suggestion["decoded"] = "re-decoded on the screen with the annotator's earlier labels of the pair clamped"
    return {"suggestion_run": run if aligned else None, "suggestion": suggestion}


def shown_provenance(project: AnnotationProject, pair: DocumentPair, shown: str, source: str) -> dict[str, Any]:
    """A label write's provenance fields when the screen says it showed refreshed suggestions (``shown``, checked);
    else {}: ``LabelEvent.save`` records the stored run's. Only an annotator's own labels record what they saw."""
    if shown_check(shown) == REFRESHED and source in ("human", "suggestion"):
        return suggestion_provenance(project, pair, shown=REFRESHED)
    return {}
