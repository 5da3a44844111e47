"""How often a model's suggestions are right at each confidence, on documents it was not trained on (``calibration.json``).

Bulk accept (``annotation.labelling.bulk``) estimates the precision of suggestions at a confidence from a project's own
answered suggestions; a project with too few falls back on this file, beside the model's weights. It holds, per
hundredth of confidence, how many of the model's suggestions (aligned or partial) on held-out gold pairs had that
confidence and how many of them were right (the gold label of the pair is the suggested one)::

    {"format": 1, "basis": "document-level 5-fold cross-validation on ...", "bins": {"0.97": [120, 118], ...}}

A suggestion's confidence is the screen's (``annotation.labelling.confidence``): the CRF's marginal belief in the pair
when the sentence's own state covers it, else its group's score (a pair linked through its neighbours). It is listed
in ``checksums.json`` when the model is written, and read only when the checksum matches.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from models_ml.data.checkpoint import CHECKSUMS, read_json, sha256

if TYPE_CHECKING:  # torch comes with the aligner: the web processes that read a calibration never import it
    import numpy as np

    from models_ml.aligning.aligner import Aligner, AlignmentResult
    from models_ml.data.io import GoldPair

CALIBRATION = "calibration.json"
LINKED = ("aligned", "partial")


def suggestion_answers(result: AlignmentResult, pair: GoldPair) -> list[tuple[float, bool]]:
    """(confidence, right) of every suggestion of ``result`` on ``pair``, against the pair's gold groups."""
    gold = {(j, i): group.label for group in pair.groups for j in group.simple for i in group.complex}
    answers = []
    for group in result.groups:
        if group.label not in LINKED:
            continue
        for j in group.simple:
            for i in group.complex:
                own = i in result.chosen_complex[j]
                confidence = float(result.pair_marginals[j, i]) if own else float(group.score or 0.0)
                answers.append((min(max(confidence, 0.0), 1.0), gold.get((j, i)) == group.label))
    return answers


def held_out_answers(aligner: Aligner, pairs: Sequence[GoldPair], similarities: Sequence[np.ndarray | None]) -> list[tuple[float, bool]]:
    """:func:`suggestion_answers` of ``aligner`` on each pair (which it must not have been trained on)."""
    answers: list[tuple[float, bool]] = []
    for pair, similarity in zip(pairs, similarities):
        result = aligner.align(
            pair.complex_sentences, pair.simple_sentences, pair.complex_paragraphs, pair.simple_paragraphs, similarity=similarity
        )
        answers += suggestion_answers(result, pair)
    return answers


def calibration_write(directory: Path, answers: Iterable[tuple[float, bool]], basis: str) -> None:
    """Write ``calibration.json`` into a saved model's directory and add it to its ``checksums.json``."""
    bins: dict[str, list[int]] = {}
    for confidence, right in answers:
        key = f"{math.floor(100 * confidence + 1e-9) / 100:.2f}"  # the hundredth below: a threshold t counts bins >= t
        count = bins.setdefault(key, [0, 0])
        count[0] += 1
        count[1] += int(right)
    text = json.dumps({"format": 1, "basis": basis, "bins": dict(sorted(bins.items()))}, indent=1) + "\n"
    (directory / CALIBRATION).write_text(text, encoding="utf-8")
    checksums = read_json(directory / CHECKSUMS)
    checksums[CALIBRATION] = sha256(directory / CALIBRATION)
    (directory / CHECKSUMS).write_text(json.dumps(checksums, indent=2) + "\n", encoding="utf-8")


def calibration_read(directory: Path) -> tuple[str, list[tuple[float, bool]]] | None:
    """(basis, answers) from a model directory's ``calibration.json``; None when it has none, or its checksum is not the
    one ``checksums.json`` records (an altered file is not trusted). Each answer's confidence is its bin's hundredth."""
    path = directory / CALIBRATION
    try:
        recorded = read_json(directory / CHECKSUMS).get(CALIBRATION)
        if not path.is_file() or recorded != sha256(path):
            return None
        data = read_json(path)
        answers = [
            (float(key), k < right) for key, (count, right) in data["bins"].items() for k in range(int(count))
        ]  # the first ``right`` of each bin right
        return str(data["basis"]), answers
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
