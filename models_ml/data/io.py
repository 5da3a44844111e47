"""Alignment groups and gold document pairs, sentence files, and the CLI's JSON-lines group format.

Everything here returns plain dataclasses with 0-based sentence indices within one document
pair, so evaluation and training never see a file format. The gold readers are one module
per format (:mod:`models_ml.data.wiki_manual`, :mod:`models_ml.data.deplain`). Every reader
fails with a ValueError that names the file and, where there is one, the line.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from numbers import Integral
from pathlib import Path

from models_ml.labels import LINKED_LABELS

__all__ = [
    "AlignmentGroup",
    "GoldPair",
    "read_groups_jsonl",
    "read_sentences_file",
    "write_groups_jsonl",
]

LABELS = LINKED_LABELS  # a gold group links its sentences: aligned or partial


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


def read_known_links(path: str | Path, m: int, n: int) -> dict[int, tuple[int, ...]]:
    """Known links for clamped decoding (``align --fixed``): simple sentence -> its complex sentences.

    One group a line in the align output's format (``label`` and ``score`` optional and not
    used); ``"complex": []`` says its simple sentences are known to be unaligned. ValueError
    naming the file and line: not JSON, not a group, an index outside the documents (m simple,
    n complex sentences), or a simple sentence in two known groups.
    """
    path = Path(path)
    links: dict[int, tuple[int, ...]] = {}
    first_line: dict[int, int] = {}
    with path.open(encoding="utf-8-sig") as handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            where = f"{path}, line {line_number}"
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"{where}: not valid JSON ({error.msg})") from None
            if not isinstance(record, dict) or "complex" not in record or "simple" not in record:
                raise ValueError(f"{where}: expected a group object with 'complex' and 'simple' lists")
            sides = {}
            for key, size in (("complex", n), ("simple", m)):
                values = record[key]
                if not isinstance(values, list) or any(not isinstance(i, int) or isinstance(i, bool) for i in values):
                    raise ValueError(f"{where}: {key} must be a list of sentence indices")
                outside = [i for i in values if not 0 <= i < size]
                if outside:
                    raise ValueError(f"{where}: {key} sentence(s) {outside} outside 0..{size - 1} (the file has {size})")
                sides[key] = tuple(sorted(set(values)))
            if not sides["simple"]:
                raise ValueError(f"{where}: a known group needs at least one simple sentence")
            for simple in sides["simple"]:
                if simple in links:
                    raise ValueError(f"{where}: simple sentence {simple} is already in the known group of line {first_line[simple]}")
                links[simple], first_line[simple] = sides["complex"], line_number
    return links
