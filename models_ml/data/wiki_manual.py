"""The Wiki-Manual / Newsela-Manual gold format (Jiang et al. 2020): one TSV row per sentence pair.

Rows become :class:`~models_ml.data.io.GoldPair` document pairs with 0-based sentence indices;
a malformed row is a ValueError naming the file and line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from models_ml.data.io import GoldPair, connected_groups

__all__ = ["read_wiki_manual_tsv"]

_WIKI_LABELS = {"aligned": "aligned", "partialAligned": "partial", "notAligned": None}


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
