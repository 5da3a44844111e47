"""Readers for gold alignments and sentence files, and the CLI's JSON-lines group format.

Everything here returns plain dataclasses with 0-based sentence indices within one document
pair, so evaluation and training never see a file format. Every reader fails with a
ValueError that names the file and, where there is one, the line.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from numbers import Integral
from pathlib import Path

__all__ = [
    "AlignmentGroup",
    "GoldPair",
    "read_deplain",
    "read_groups_jsonl",
    "read_sentences_file",
    "read_wiki_manual_tsv",
    "unplaced_summary",
    "write_groups_jsonl",
]

LABELS = ("aligned", "partial")
_WIKI_LABELS = {"aligned": "aligned", "partialAligned": "partial", "notAligned": None}
_DEPLAIN_ALIGNMENTS = ("aligned", "identical")


@dataclass(frozen=True)
class AlignmentGroup:
    """An n:m alignment: complex sentence indices, simple sentence indices, and a label.

    label: "aligned" (same meaning, perhaps simplified) or "partial" (shared content, one
    side has a clause the other lacks). score: the aligner's confidence, None for gold.
    Indices are stored sorted, without repeats, as plain ints (NumPy integers are accepted).
    identical: the gold annotators marked the sentences as copies (DEplain); the paper
    excludes such pairs from its figures, DEplain's published figures include them.
    """

    complex: tuple[int, ...]
    simple: tuple[int, ...]
    label: str = "aligned"
    score: float | None = None
    identical: bool = False

    def __post_init__(self) -> None:
        if self.label not in LABELS:
            raise ValueError(f"label must be one of {LABELS}, got {self.label!r}")
        if not self.complex or not self.simple:
            raise ValueError(f"an alignment group needs sentences on both sides, got {self.complex} / {self.simple}")
        for name in ("complex", "simple"):
            side = getattr(self, name)
            if any(not isinstance(i, Integral) or isinstance(i, bool) or i < 0 for i in side):
                raise ValueError(f"sentence indices must be non-negative integers, got {name}={side}")
            # Canonical form (sorted, unique, plain int) so that equal groups compare equal
            # whether they come from a file, NumPy or a list.
            object.__setattr__(self, name, tuple(sorted({int(i) for i in side})))


@dataclass
class GoldPair:
    """One document pair with its gold groups; paragraph lists are None when the source has none."""

    pair_id: str
    complex_sentences: list[str]
    simple_sentences: list[str]
    groups: list[AlignmentGroup]
    complex_paragraphs: list[int] | None
    simple_paragraphs: list[int] | None
    # The source's own 1:1 (complex, simple, label) links (Wiki-Manual): importing them keeps each link's label.
    links: list[tuple[int, int, str]] | None = None
    # Gold rows that could not be placed on the sentences and were left out ("file, line N: reason").
    unplaced_rows: list[str] = field(default_factory=list)
    domain: str = ""  # the source's domain (DEplain's ``domain`` column), "" when unknown


def connected_groups(links: Iterable[tuple[int, int, str]]) -> list[AlignmentGroup]:
    """Merge 1:1 (complex, simple, label) links into n:m groups by connected components.

    A component is "partial" if any of its links is partial. Groups are ordered by their
    first complex, then first simple sentence.
    """
    parent: dict[tuple[str, int], tuple[str, int]] = {}

    def find(node: tuple[str, int]) -> tuple[str, int]:
        parent.setdefault(node, node)
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    link_list = list(links)
    for complex_index, simple_index, _ in link_list:
        root_a, root_b = find(("c", complex_index)), find(("s", simple_index))
        if root_a != root_b:
            parent[root_a] = root_b
    members: dict[tuple[str, int], tuple[set[int], set[int], set[str]]] = {}
    for complex_index, simple_index, label in link_list:
        complex_set, simple_set, labels = members.setdefault(find(("c", complex_index)), (set(), set(), set()))
        complex_set.add(complex_index)
        simple_set.add(simple_index)
        labels.add(label)
    groups = [
        AlignmentGroup(tuple(sorted(c)), tuple(sorted(s)), "partial" if "partial" in labels else "aligned")
        for c, s, labels in members.values()
    ]
    return sorted(groups, key=lambda group: (group.complex[0], group.simple[0]))


def _parse_wiki_id(raw: str, where: str) -> tuple[str, str, int, int]:
    """Split ``article-level-paragraph-sentence`` from the right (articles may contain hyphens)."""
    parts = raw.rsplit("-", 3)
    if len(parts) != 4 or not parts[0]:
        raise ValueError(f"{where}: malformed sentence id {raw!r}, expected article-level-paragraph-sentence")
    article, level, paragraph, sentence = parts
    if not (level.isdigit() and paragraph.isdigit() and sentence.isdigit()):
        raise ValueError(f"{where}: malformed sentence id {raw!r}, level/paragraph/sentence must be numbers")
    return article, level, int(paragraph), int(sentence)


@dataclass
class _WikiDocument:
    """Sentences of one side of one pair while reading: (paragraph, sentence) -> text."""

    sentences: dict[tuple[int, int], str]

    def add(self, key: tuple[int, int], text: str, where: str) -> None:
        known = self.sentences.setdefault(key, text)
        if known != text:
            raise ValueError(f"{where}: sentence {key} appears earlier with a different text")

    def ordered(self) -> tuple[list[str], list[int], dict[tuple[int, int], int]]:
        """Sentences by (paragraph, sentence), dense 0-based paragraph numbers, and id -> index."""
        keys = sorted(self.sentences)
        paragraph_rank = {p: rank for rank, p in enumerate(sorted({p for p, _ in keys}))}
        return (
            [self.sentences[key] for key in keys],
            [paragraph_rank[p] for p, _ in keys],
            {key: index for index, key in enumerate(keys)},
        )


def read_wiki_manual_tsv(path: str | Path) -> list[GoldPair]:
    """Read a Wiki-Manual / Newsela-Manual TSV (Jiang et al. 2020) into document pairs.

    Columns: label (aligned | partialAligned | notAligned), simple id, complex id, simple
    sentence, complex sentence, optional GLEU. Rows are grouped into pairs by (complex
    article, complex level, simple article, simple level); pair_id is
    ``"{complex article}-{level}|{simple article}-{level}"``. Sentences are ordered by
    (paragraph, sentence) and paragraphs renumbered 0..k-1 without gaps. notAligned rows only
    contribute sentences; aligned/partial rows are 1:1 links merged into n:m groups.
    """
    path = Path(path)
    documents: dict[tuple[str, str, str, str], tuple[_WikiDocument, _WikiDocument, list]] = {}
    with path.open(encoding="utf-8-sig", newline="") as handle:
        for line_number, line in enumerate(handle, start=1):
            line = line.rstrip("\r\n")
            if not line.strip():
                continue
            where = f"{path}, line {line_number}"
            fields = line.split("\t")
            if len(fields) not in (5, 6):
                raise ValueError(f"{where}: expected 5 or 6 tab-separated columns, found {len(fields)}")
            label_raw, simple_id, complex_id, simple_text, complex_text = fields[:5]
            if label_raw not in _WIKI_LABELS:
                raise ValueError(f"{where}: unknown label {label_raw!r}, expected one of {sorted(_WIKI_LABELS)}")
            if len(fields) == 6 and fields[5].strip():
                try:
                    float(fields[5])
                except ValueError:
                    raise ValueError(f"{where}: GLEU score {fields[5]!r} is not a number") from None
            s_article, s_level, s_par, s_sent = _parse_wiki_id(simple_id, where)
            c_article, c_level, c_par, c_sent = _parse_wiki_id(complex_id, where)
            complex_doc, simple_doc, links = documents.setdefault(
                (c_article, c_level, s_article, s_level), (_WikiDocument({}), _WikiDocument({}), [])
            )
            complex_doc.add((c_par, c_sent), complex_text, where)
            simple_doc.add((s_par, s_sent), simple_text, where)
            label = _WIKI_LABELS[label_raw]
            if label is not None:
                links.append(((c_par, c_sent), (s_par, s_sent), label))
    pairs = []
    for (c_article, c_level, s_article, s_level), (complex_doc, simple_doc, links) in documents.items():
        complex_sentences, complex_paragraphs, complex_index = complex_doc.ordered()
        simple_sentences, simple_paragraphs, simple_index = simple_doc.ordered()
        indexed = [(complex_index[c], simple_index[s], label) for c, s, label in links]
        groups = connected_groups(indexed)
        pairs.append(
            GoldPair(
                pair_id=f"{c_article}-{c_level}|{s_article}-{s_level}",
                complex_sentences=complex_sentences,
                simple_sentences=simple_sentences,
                groups=groups,
                complex_paragraphs=complex_paragraphs,
                simple_paragraphs=simple_paragraphs,
                links=indexed,
            )
        )
    return pairs


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
    alignment_rows = _read_csv(alignments_path, ("pair_id", "original", "simplification", "original_id", "simplification_id", "alignment"))
    by_pair: dict[str, list[_DeplainRow]] = {}
    known_pairs = {row["pair_id"] for _, row in documents}
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


def write_groups_jsonl(path: str | Path, groups: Iterable[AlignmentGroup]) -> None:
    """Write groups in the CLI format, one JSON object a line:
    ``{"complex": [...], "simple": [...], "label": ..., "score": float}`` (score left out when None).
    """
    with Path(path).open("w", encoding="utf-8") as handle:
        for group in groups:
            record: dict[str, object] = {"complex": list(group.complex), "simple": list(group.simple), "label": group.label}
            if group.score is not None:
                record["score"] = float(group.score)
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")


def read_groups_jsonl(path: str | Path) -> list[AlignmentGroup]:
    """Read the CLI format written by :func:`write_groups_jsonl`; blank lines are skipped, score is optional."""
    path = Path(path)
    groups = []
    with path.open(encoding="utf-8-sig") as handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            where = f"{path}, line {line_number}"
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"{where}: not valid JSON ({error.msg})") from None
            if not isinstance(record, dict):
                raise ValueError(f"{where}: expected a JSON object")  # bad file content, not a bad argument
            missing = [key for key in ("complex", "simple", "label") if key not in record]
            if missing:
                raise ValueError(f"{where}: missing key(s) {', '.join(missing)}")
            score = record.get("score")
            if score is not None and (isinstance(score, bool) or not isinstance(score, int | float) or math.isnan(score)):
                raise ValueError(f"{where}: score must be a number, got {score!r}")
            for key in ("complex", "simple"):
                if not isinstance(record[key], list):
                    raise ValueError(f"{where}: {key} must be a list of sentence indices")  # as above
            try:
                groups.append(
                    AlignmentGroup(
                        complex=tuple(record["complex"]),
                        simple=tuple(record["simple"]),
                        label=record["label"],
                        score=None if score is None else float(score),
                    )
                )
            except ValueError as error:
                raise ValueError(f"{where}: {error}") from None
    return groups


def read_sentences_file(path: str | Path) -> tuple[list[str], list[int]]:
    """Read one sentence a line; a blank line ends a paragraph and is not a sentence.

    Returns (sentences, 0-based paragraph index per sentence). Several blank lines count as
    one break, and blank lines at the start or end start no paragraph. UTF-8, with or without
    a byte-order mark; other encodings and files without sentences raise ValueError.
    """
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ValueError(f"{path}: not valid UTF-8 (byte {error.start}): {error.reason}") from None
    sentences: list[str] = []
    paragraphs: list[int] = []
    paragraph = 0
    pending_break = False
    # str.splitlines would also split on form feeds and other controls found in real files.
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        stripped = line.strip()
        if not stripped:
            pending_break = bool(sentences)
            continue
        if pending_break:
            paragraph += 1
            pending_break = False
        sentences.append(stripped)
        paragraphs.append(paragraph)
    if not sentences:
        raise ValueError(f"{path}: the file holds no sentences")
    return sentences, paragraphs
