"""What annotators read of the aligner's belief in a suggestion: a 0–1 confidence in the label it predicted.

The candidate's ``score`` is the primary measure's raw value (for the trained pair scorer a
log-odds, whose sign need not agree with the label: the CRF decides from every sentence at
once), so annotators never see it; the researcher's pages show it, named as a raw score. What
annotators see instead:

- **confidence** = the CRF marginal, P(the simple sentence's state covers the complex one), when
  the aligner linked the pair (aligned or partial), and 1 − that when it did not: the
  probability that its label is right, so 1.00 is sure and 0.50 a coin toss, whatever the label;
- **group** when the pair is linked only through its group (neighbours join it into one n:m
  group, while this sentence's own choice lies elsewhere, so its own marginal can be 0): the
  group's score, the mean marginal of its simple sentences' chosen states;
- **not scored** when the pair lies outside the aligned paragraphs (the CRF never decodes there,
  its marginal is 0 by construction): no figure;
- **mined** for a run made from mined pairs: no CRF ran, no figure.

The cases come from :func:`alignment.inspection.marginal_notes`, the one place that decides them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from alignment.inspection import marginal_notes
from alignment.models import AlignmentRun, CandidateAlignment
from annotation.labels import LINKED_LABELS

CRF, GROUP, NOT_SCORED, MINED = "crf", "group", "not scored", "mined"

EXPLANATIONS = {
    CRF: "How sure the aligner is of its label, from 0 to 1 (the CRF's probability): 1.00 is sure, 0.50 a coin toss.",
    GROUP: "Linked through its group: neighbouring sentences join this pair into one group; the figure is the group's confidence.",
    NOT_SCORED: "Not scored: the pair lies outside the aligned paragraphs, where the aligner does not decide. It is listed as a near miss.",
    MINED: "A mined pair: no aligner scored it, so there is no confidence.",
}


@dataclass(frozen=True)
class Confidence:
    value: float | None  # 0–1, in the predicted label; None when the aligner gave no figure
    basis: str  # CRF, GROUP, NOT_SCORED or MINED

    @property
    def text(self) -> str:
        """How the screen and the queue print it: "confidence 0.83", "confidence 0.71 (group)", "not scored"."""
        if self.value is None:
            return "mined, not scored" if self.basis == MINED else "not scored"
        return f"confidence {self.value:.2f}" + (" (group)" if self.basis == GROUP else "")

    @property
    def explanation(self) -> str:
        return EXPLANATIONS[self.basis]

    def as_dict(self) -> dict[str, object]:
        return {"confidence": None if self.value is None else round(self.value, 3), "basis": self.basis}


def _clamped(value: float | None) -> float:
    return min(max(float(value or 0.0), 0.0), 1.0)


def confidence_of(candidate: CandidateAlignment, tag: str | None, *, mined: bool) -> Confidence:
    """One candidate's confidence; ``tag`` is its marginal note ("via group", "not scored" or None)."""
    if mined:
        return Confidence(None, MINED)
    if tag == "not scored":
        return Confidence(None, NOT_SCORED)
    if tag == "via group":
        return Confidence(_clamped(candidate.group_score), GROUP)
    linked = _clamped(candidate.crf_marginal)
    return Confidence(linked if candidate.label in LINKED_LABELS else 1.0 - linked, CRF)


def run_is_mined(run: AlignmentRun | None) -> bool:
    """A run made from mined pairs (annotation.intake.from_mining): its "marginal" is the clipped mining score."""
    return run is not None and "mining_job" in (run.config or {})


def confidences(run: AlignmentRun, candidates: Iterable[CandidateAlignment]) -> dict[int, Confidence]:
    """Candidate id -> confidence, for candidates of one run and one document pair.

    The candidates need ``pair``, ``simple_sentence`` and ``complex_sentence`` loaded (select_related).
    """
    candidates = list(candidates)
    mined = run_is_mined(run)
    notes = {} if mined else marginal_notes(candidates)
    return {
        candidate.pk: confidence_of(candidate, notes[candidate.pk].tag if candidate.pk in notes else None, mined=mined)
        for candidate in candidates
    }
