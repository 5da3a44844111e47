"""A look at an upload before importing it: each file's layout and errors, the first document's sentences.

The Import page's *Preview* runs this inside the web request, so it must stay cheap and store
nothing: every file is read as the import would read it (decoding, cleaning, the format's
reader, the same :class:`ImportFormatError` messages with file and line), but only the first
document is split into sentences, and of it at most ``PREVIEW_SPLIT_CHARS`` characters. Checks
that need the database (a changed document under an existing id) are left to the import.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from alignment.importing.cleaning import ImportFormatError
from alignment.importing.layout import PARAGRAPH_MODE_LABELS, LayoutGuess
from alignment.importing.readers import ImportOptions, ParsedDocument, read_file
from alignment.importing.segment import layout_from_paragraphs, layout_from_sentences
from alignment.levels import Constraint, Readability, level_order_decide, level_pairs, readability_of_text

PREVIEW_PARAGRAPHS = 5  # paragraphs of the first document shown with their sentences
PREVIEW_ARTICLES = 20  # articles whose pairs' direction is listed
# Sentence splitting takes about 4 s per MB: the request splits at most this much of the first document.
PREVIEW_SPLIT_CHARS = 100_000


@dataclass(frozen=True)
class FilePreview:
    """One uploaded file as the import would read it: its documents and detected layout, or its error."""

    file: str
    documents: int = 0
    paragraph_mode: str = ""  # text format: the mode the import would use ("auto" resolved)
    detected_layout: LayoutGuess | None = None
    error: str | None = None

    @property
    def paragraph_mode_label(self) -> str:
        return PARAGRAPH_MODE_LABELS.get(self.paragraph_mode, "")


@dataclass
class DocumentPreview:
    """The first document: its first paragraphs with numbered sentences, and its counts."""

    file: str
    external_id: str
    level: str
    paragraph_count: int
    paragraphs: list[list[tuple[int, str]]] = field(default_factory=list)  # (sentence number, text) per shown paragraph
    sentence_count: int = 0
    counts_complete: bool = True  # False: the document is longer than PREVIEW_SPLIT_CHARS, its start was split

    @property
    def paragraphs_not_shown(self) -> int:
        return self.paragraph_count - len(self.paragraphs)


@dataclass
class DirectionPreview:
    """Which level of each article the import makes the complex side, and why; ``flipped``: the order reversed."""

    order: list[str]
    notes: list[str]
    requested: bool  # the user gave a level order
    articles: list[tuple[str, list[tuple[str, str, str]]]]  # (article, [(complex level, simple level, basis)]) shown
    articles_not_shown: int = 0

    @property
    def flipped(self) -> str:
        return ", ".join(reversed(self.order))

    @property
    def flip_vals(self) -> str:
        return json.dumps({"level_order": self.flipped})

    @property
    def simplest(self) -> str:
        return self.order[-1]


@dataclass
class ImportPreview:
    format: str
    chosen_mode: str
    files: list[FilePreview]
    document: DocumentPreview | None = None
    direction: DirectionPreview | None = None

    @property
    def errors(self) -> list[str]:
        return [f.error for f in self.files if f.error]

    @property
    def document_file(self) -> FilePreview | None:
        return next((f for f in self.files if self.document and f.file == self.document.file and not f.error), None)

    @property
    def documents(self) -> int:
        return sum(f.documents for f in self.files)

    @property
    def detected_modes(self) -> list[tuple[str, int]]:
        """How many readable text files each paragraph mode fits: [("each line is a paragraph", 3), ...]."""
        counts = Counter(f.detected_layout.paragraph_mode for f in self.files if f.detected_layout)
        return [(PARAGRAPH_MODE_LABELS[mode], count) for mode, count in counts.most_common()]

    @property
    def chosen_mode_label(self) -> str:
        return PARAGRAPH_MODE_LABELS.get(self.chosen_mode, "detect it in each file")

    @property
    def suggested_mode_label(self) -> str:
        return PARAGRAPH_MODE_LABELS.get(self.suggested_mode or "", "")

    @property
    def suggested_mode(self) -> str | None:
        """The detected mode of the first document's file when it differs from an explicitly chosen mode, else None."""
        shown = self.document_file
        if self.chosen_mode == "auto" or shown is None or shown.detected_layout is None or shown.detected_layout.modes_agree:
            return None
        detected = shown.detected_layout.paragraph_mode
        return detected if detected != self.chosen_mode else None


def import_preview(
    *, files: Iterable[tuple[str, bytes]], options: ImportOptions, pairing: str = "all",
    constraints: Sequence[Constraint] = (), stored_readability: Callable[[str], Readability] | None = None,
) -> ImportPreview:  # fmt: skip
    """Read ``(name, bytes)`` files as the import would and split the first readable document; nothing is stored.

    The direction follows the import's rules (:func:`~alignment.levels.level_order_decide`): ``constraints``
    from the target corpus and the order asked for (:func:`alignment.level_order.level_order_constraints`),
    readability counted on the files' text, or by ``stored_readability`` for a level only the corpus has.
    """
    preview = ImportPreview(format=options.format, chosen_mode=options.paragraph_mode, files=[])
    articles: dict[str, list[str]] = {}
    readability: dict[str, Readability] = {}
    for name, data in files:
        try:
            documents = read_file(name, data, options)
            if preview.document is None:
                preview.document = _document_preview(documents[0], options)
        except ImportFormatError as exc:
            preview.files.append(FilePreview(file=name, error=str(exc)))
            continue
        for document in documents:
            articles.setdefault(document.external_id, []).append(document.level)
            readability[document.level] = readability.get(document.level, Readability()) + readability_of_text(_text(document))
        first = documents[0]
        preview.files.append(
            FilePreview(file=name, documents=len(documents), paragraph_mode=first.paragraph_mode, detected_layout=first.detected_layout)
        )
    if len(readability) > 1:
        preview.direction = _direction_preview(articles, readability, options, pairing, constraints, stored_readability)
    return preview


def _text(document: ParsedDocument) -> str:
    """The document's text as the import stores it (``Document.raw_text``), for counting readability alike."""
    if document.sentences is not None:
        return "\n\n".join("\n".join(paragraph) for paragraph in document.sentences)
    return "\n\n".join(document.paragraphs or [])


def _direction_preview(
    articles: dict[str, list[str]], readability: dict[str, Readability], options: ImportOptions, pairing: str,
    constraints: Sequence[Constraint], stored_readability: Callable[[str], Readability] | None,
) -> DirectionPreview:  # fmt: skip
    def of_level(level: str) -> Readability:
        return readability[level] if level in readability or stored_readability is None else stored_readability(level)

    decided = level_order_decide(readability, constraints=constraints, readability=of_level)
    shown = []
    for external_id, levels in list(articles.items())[:PREVIEW_ARTICLES]:
        ordered = sorted(set(levels), key=decided.order.index)
        pairs = level_pairs(ordered, adjacent=pairing == "adjacent")
        shown.append((external_id, [(complex_, simple, decided.basis(complex_, simple)) for complex_, simple in pairs]))
    return DirectionPreview(
        order=decided.order, notes=decided.notes, requested=bool(options.level_order), articles=shown,
        articles_not_shown=max(0, len(articles) - PREVIEW_ARTICLES),
    )  # fmt: skip


def _document_preview(document: ParsedDocument, options: ImportOptions) -> DocumentPreview:
    """Split the document's paragraphs up to the character budget; ImportFormatError when it has no sentence."""
    if document.sentences is not None:
        layout = layout_from_sentences(document.sentences)
        paragraph_count, complete = len(document.sentences), True
    else:
        paragraphs = document.paragraphs or []
        paragraph_count, budget, taken = len(paragraphs), PREVIEW_SPLIT_CHARS, []
        for paragraph in paragraphs:
            taken.append(paragraph[:budget])
            budget -= len(paragraph)
            if budget <= 0:
                break
        layout = layout_from_paragraphs(taken, language=options.language)
        complete = len(taken) == paragraph_count and budget >= 0
    preview = DocumentPreview(
        file=document.file, external_id=document.external_id, level=document.level, paragraph_count=paragraph_count,
        sentence_count=layout.sentence_count, counts_complete=complete,
    )  # fmt: skip
    if preview.counts_complete and not preview.sentence_count:  # the import refuses such a file with this message
        raise ImportFormatError(
            f"document {document.external_id!r} ({document.level}) has no sentences", file=document.file, line=document.line
        )
    number = 0
    for paragraph in layout.paragraphs[:PREVIEW_PARAGRAPHS]:
        shown = []
        for sentence in paragraph.sentences:
            number += 1
            shown.append((number, sentence.text))
        preview.paragraphs.append(shown)
    return preview
