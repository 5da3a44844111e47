"""The DEplain-web gold format: documents.csv (sentences joined by ``|||``) + alignments.csv (one group a row).

Sentence ids are placed on document positions by their text; rows that cannot be placed are
left out and reported (``GoldPair.unplaced_rows``), or raise with ``strict=True``. Errors name
the file and line.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from models_ml.data.io import AlignmentGroup, GoldPair

__all__ = ["read_deplain", "unplaced_summary"]

_DEPLAIN_ALIGNMENTS = ("aligned", "identical")


_QUOTES = str.maketrans({"„": '"', "“": '"', "”": '"', "«": '"', "»": '"', "‚": "'", "‘": "'", "’": "'"})


def _normalise_text(text: str) -> str:
    """Text as gold rows and documents are compared: no whitespace at all, typographic quotes made plain.

    Gold rows join a group's sentences with one space, two, or none (a sentence that is only
    "?" or starts with a quote), so only the characters between the spaces are compared.
    """
    return "".join(text.translate(_QUOTES).split())


def _text_matches(text: str, sentences: Sequence[str], count: int) -> list[tuple[int, ...]]:
    """Every increasing tuple of ``count`` positions whose sentences, concatenated, equal ``text``.

    Texts come from :func:`_normalise_text` (no whitespace). A group's sentences need not
    be adjacent in the document (a skipped sentence), hence the search over tuples; empty
    sentences are never members. Text prefixes prune it, so it stays linear in practice.
    """
    found: list[tuple[int, ...]] = []

    def extend(rest: str, chosen: tuple[int, ...], start: int) -> None:
        if len(chosen) == count:
            if not rest:
                found.append(chosen)
            return
        last = len(chosen) == count - 1
        for position in range(start, len(sentences)):
            sentence = sentences[position]
            if not sentence:
                continue
            if last and rest == sentence:
                extend("", (*chosen, position), position + 1)
            elif not last and rest.startswith(sentence):
                extend(rest[len(sentence) :], (*chosen, position), position + 1)

    extend(text, (), 0)
    return found


@dataclass
class _DeplainRow:
    """One alignments.csv row, parsed: where it is, its (paragraph, sentence) ids and texts per side."""

    where: str
    pair_id: str
    complex_ids: list[tuple[int, int]]
    simple_ids: list[tuple[int, int]]
    complex_text: str
    simple_text: str
    identical: bool


def _parse_deplain_ids(raw: str, pair_id: str, level: str, where: str) -> list[tuple[int, int]]:
    """Sentence ids of one side of a row, in order, each once (real files sometimes list one twice)."""
    ids: list[tuple[int, int]] = []
    for part in raw.split("|"):
        pieces = part.strip().rsplit("-", 3)
        if len(pieces) != 4 or not all(p.isdigit() for p in pieces[1:]):
            raise ValueError(f"{where}: malformed sentence id {part!r}, expected pair-level-paragraph-sentence")
        if pieces[0] != pair_id or pieces[1] != level:
            raise ValueError(f"{where}: sentence id {part!r} should start with {pair_id}-{level}-")
        sentence_id = (int(pieces[2]), int(pieces[3]))
        if sentence_id not in ids:
            ids.append(sentence_id)
    return ids


class _Unplaced(Exception):
    """A gold row that cannot be placed on the document's sentences; the message says why."""


def _deplain_positions(
    rows: list[tuple[list[tuple[int, int]], str, str]], sentences: list[str], file: Path, side: str
) -> tuple[dict[tuple[int, int], int], dict[str, str]]:
    """Map one side's (paragraph, sentence) ids to positions in its ``|||`` sentence list.

    The ids come from a segmentation that differs from the list (paragraph numbers have gaps,
    sentence numbers sometimes skip), so no arithmetic rule holds; the order is preserved,
    though. Texts are compared after :func:`_normalise_text` (whitespace runs, spaces before
    punctuation, typographic quotes). Each id gets the positions consistent with the text of
    every row it occurs in, and ids sorted by (paragraph, sentence) take the earliest strictly
    increasing positions.

    Returns (id -> position, unplaced) where unplaced maps a row's ``where`` to the reason it
    could not be placed; such a row's ids constrain nothing, so one odd row never moves the others.
    """
    normalised = [_normalise_text(s) for s in sentences]
    unplaced: dict[str, str] = {}
    candidates: dict[tuple[int, int], set[int]] = {}
    for ids, text, where in rows:
        matches = _text_matches(_normalise_text(text), normalised, len(ids))
        if not matches:
            unplaced[where] = f"the {side} text does not match sentences of the document in {file}"
            continue
        narrowed = {}
        for slot, sentence_id in enumerate(ids):
            positions = {match[slot] for match in matches}
            narrowed[sentence_id] = candidates.get(sentence_id, positions) & positions
        conflict = next((sentence_id for sentence_id, found in narrowed.items() if not found), None)
        if conflict is not None:
            unplaced[where] = f"{side} sentence {conflict} matches different texts in different rows"
            continue
        candidates.update(narrowed)
    assigned: dict[tuple[int, int], int] = {}
    previous = -1
    for sentence_id in sorted(candidates):
        later = [p for p in candidates[sentence_id] if p > previous]
        if later:
            previous = assigned[sentence_id] = min(later)
    for ids, text, where in rows:
        if where in unplaced:
            continue
        if any(i not in assigned for i in ids):
            unplaced[where] = f"{side} sentence(s) cannot be placed in document order"
        elif "".join(normalised[assigned[i]] for i in ids) != _normalise_text(text):
            unplaced[where] = f"the {side} sentences cannot be placed consistently with the other rows"
    return assigned, unplaced


def _read_csv(path: Path, required: Sequence[str]) -> list[tuple[int, dict[str, str]]]:
    """Rows of a CSV file with their line numbers; ValueError when a required column is missing."""
    with path.open(encoding="utf-8-sig", newline="") as handle:
        reader = csv.DictReader(handle)
        missing = [column for column in required if column not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{path}: missing column(s) {', '.join(missing)}")
        return [(reader.line_num, row) for row in reader]


def _rows_by_pair(alignments_path: Path, documents_path: Path, known_pairs: set[str]) -> dict[str, list[_DeplainRow]]:
    """The rows of alignments.csv by pair id, ids parsed; ValueError naming the line of an unknown pair, label or id."""
    alignment_rows = _read_csv(alignments_path, ("pair_id", "original", "simplification", "original_id", "simplification_id", "alignment"))
    by_pair: dict[str, list[_DeplainRow]] = {}
    for line, row in alignment_rows:
        where = f"{alignments_path}, line {line}"
        pair_id = row["pair_id"].strip()
        if pair_id not in known_pairs:
            raise ValueError(f"{where}: pair_id {pair_id!r} is not in {documents_path}")
        if row["alignment"] not in _DEPLAIN_ALIGNMENTS:
            raise ValueError(f"{where}: unknown alignment {row['alignment']!r}, expected one of {_DEPLAIN_ALIGNMENTS}")
        by_pair.setdefault(pair_id, []).append(
            _DeplainRow(
                where=where,
                pair_id=pair_id,
                complex_ids=_parse_deplain_ids(row["original_id"], pair_id, "1", where),
                simple_ids=_parse_deplain_ids(row["simplification_id"], pair_id, "0", where),
                complex_text=row["original"],
                simple_text=row["simplification"],
                identical=row["alignment"] == "identical",
            )
        )
    return by_pair


def read_deplain(documents_csv: str | Path, alignments_csv: str | Path, *, strict: bool = False) -> list[GoldPair]:
    """Read DEplain-web style gold alignments (documents.csv + alignments.csv).

    documents.csv holds each pair's sentences joined by ``|||`` (``original`` = complex,
    ``simplification`` = simple). alignments.csv holds one group per row with sentence ids
    ``pair-level-paragraph-sentence`` (level 1 complex, 0 simple) joined by ``|`` and the
    group's texts joined by a space. Ids are mapped to list positions by their normalised
    text (see :func:`_deplain_positions`); an id listed twice in a row counts once.
    ``identical`` rows become "aligned" groups flagged ``identical=True``. Pairs keep the
    order of documents.csv and its optional ``domain``; there are no paragraph breaks.

    Real gold files have rows that still cannot be placed (a text that is not in the
    document). By default such a row is left out and reported in its pair's
    ``unplaced_rows`` ("file, line N: reason"; :func:`unplaced_summary` counts them); with
    ``strict=True`` the first one raises ValueError. A malformed file (missing column,
    unknown pair, bad id or label) always raises ValueError naming the line.
    """
    documents_path, alignments_path = Path(documents_csv), Path(alignments_csv)
    documents = _read_csv(documents_path, ("pair_id", "original", "simplification"))
    by_pair = _rows_by_pair(alignments_path, documents_path, {row["pair_id"] for _, row in documents})
    pairs = []
    for _, document in documents:
        pair_id = document["pair_id"].strip()
        complex_sentences = document["original"].split("|||")
        simple_sentences = document["simplification"].split("|||")
        rows = by_pair.get(pair_id, [])
        complex_at, complex_unplaced = _deplain_positions(
            [(r.complex_ids, r.complex_text, r.where) for r in rows], complex_sentences, documents_path, "complex"
        )
        simple_at, simple_unplaced = _deplain_positions(
            [(r.simple_ids, r.simple_text, r.where) for r in rows], simple_sentences, documents_path, "simple"
        )
        unplaced = {**simple_unplaced, **complex_unplaced}
        groups, unplaced_rows = [], []
        for r in rows:
            if r.where in unplaced:
                if strict:
                    raise ValueError(f"{r.where}: {unplaced[r.where]}")
                unplaced_rows.append(f"{r.where}: {unplaced[r.where]}")
                continue
            group = AlignmentGroup(
                complex=tuple(sorted(complex_at[i] for i in r.complex_ids)),
                simple=tuple(sorted(simple_at[i] for i in r.simple_ids)),
                label="aligned",
                identical=r.identical,
            )
            if group not in groups:
                groups.append(group)
        domain = (document.get("domain") or "").strip()  # optional column
        pairs.append(GoldPair(pair_id, complex_sentences, simple_sentences, groups, None, None, None, unplaced_rows, domain))
    return pairs


def unplaced_summary(pairs: Sequence[GoldPair]) -> str | None:
    """One line counting the gold rows left out as unplaceable, then each of them; None when there are none."""
    rows = [row for pair in pairs for row in pair.unplaced_rows]
    if not rows:
        return None
    affected = sum(1 for pair in pairs if pair.unplaced_rows)
    return "\n".join([f"{len(rows)} gold row(s) in {affected} pair(s) could not be placed and were left out:", *rows])
