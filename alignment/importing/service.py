"""The import service: parsed files into Documents, Paragraphs and Sentences, atomically per file.

A file either goes in whole or not at all; the other files of the same import
still go in. Re-importing identical content is a no-op (the content hash is
unique per corpus), and new documents are paired with the other levels of
their article at the end.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.db import DatabaseError, IntegrityError, connection, transaction
from django.db.models import Value

from alignment.copying import copy_rows
from alignment.importing.cleaning import ImportFormatError
from alignment.importing.layout import PARAGRAPH_MODE_LABELS
from alignment.importing.parsing import ParsedFile, SplitLimits, parsed_files
from alignment.importing.readers import FILE_SUFFIXES, ImportOptions, ParsedDocument
from alignment.importing.segment import DocumentLayout
from alignment.jobs.database import commit_without_flush, database_lost
from alignment.level_order import corpus_level_order_settle, level_order_check_against_pairs
from alignment.models import Corpus, Document, Paragraph, Sentence
from alignment.services import document_pairs_sync

ANALYZE_AFTER_DOCUMENTS = 100  # an import call that stored this many documents refreshes the table's statistics
SENTENCE_COLUMNS = ("document_id", "paragraph_id", "index", "index_in_paragraph", "text", "char_start", "char_end")


@dataclass
class FileImportResult:
    file: str
    documents_created: int = 0
    documents_unchanged: int = 0
    sentences_created: int = 0
    control_characters_removed: int = 0
    punctuation_repaired: int = 0
    paragraph_mode: str = ""  # text format: the mode its paragraphs were read with (what "auto" found)
    warnings: list[str] = field(default_factory=list)
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass
class ImportReport:
    files: list[FileImportResult] = field(default_factory=list)
    pairs_created: int = 0
    direction: list[str] = field(default_factory=list)  # the level order the pairs follow, and why (LevelOrder.notes)
    language_note: str = ""  # for an import that detected the language: what it found, and how sure it was
    stopped: bool = False  # stopped on request before its last file (the files done are imported and paired)

    @property
    def errors(self) -> list[FileImportResult]:
        return [f for f in self.files if not f.ok]

    @property
    def warnings(self) -> list[str]:
        return [w for f in self.files for w in f.warnings]

    @property
    def documents_created(self) -> int:
        return sum(f.documents_created for f in self.files)

    @property
    def documents_unchanged(self) -> int:
        return sum(f.documents_unchanged for f in self.files)

    @property
    def sentences_created(self) -> int:
        return sum(f.sentences_created for f in self.files)

    @property
    def control_characters_removed(self) -> int:
        return sum(f.control_characters_removed for f in self.files)

    @property
    def paragraph_modes(self) -> list[tuple[str, int]]:
        """How many imported text files were read in each paragraph mode: [("each line is a paragraph", 3), ...]."""
        counts = Counter(f.paragraph_mode for f in self.files if f.ok and f.paragraph_mode)
        return [(PARAGRAPH_MODE_LABELS[mode], count) for mode, count in counts.most_common()]

    @property
    def punctuation_repaired(self) -> int:
        return sum(f.punctuation_repaired for f in self.files)


def import_paths(path: Path, options: ImportOptions) -> list[Path]:
    """The files an import of ``path`` reads: the file itself, or the folder's files of the format, sorted."""
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise FileNotFoundError(f"{path}: no such file or folder")
    suffixes = FILE_SUFFIXES[options.format]
    return sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in suffixes)


def corpus_import_files(
    *,
    corpus: Corpus,
    files: Iterable[tuple[str, bytes]],
    options: ImportOptions,
    on_file_done: Callable[[FileImportResult], None] | None = None,
    stop: Callable[[], bool] | None = None,
) -> ImportReport:
    """Import ``(name, bytes)`` files into ``corpus``; one failing file does not stop the others. ``stop`` (asked
    before each file): once it says so, the files left are not imported (``report.stopped``); those done are paired.

    Then the corpus's level order is settled (``options.level_order``, the existing pairs, known
    schemes, else readability; :mod:`alignment.level_order`) and the pairs made. ServiceError on
    ``level_order``, before any file is read, when that order would turn existing pairs round.
    """
    if options.level_order:
        level_order_check_against_pairs(corpus, options.level_order)
    report = ImportReport()
    split = parsed_files(
        files, options, split_limits(), processes=settings.IMPORT_SPLIT_PROCESSES, min_files=settings.IMPORT_SPLIT_MIN_FILES
    )
    with closing(split):  # stopped early (a cancel, a time slice): the helper processes' queued files are dropped
        for parsed in split:
            if stop is not None and stop():
                report.stopped = True
                break
            result = _import_one_file(corpus=corpus, parsed=parsed)
            report.files.append(result)
            if on_file_done:
                on_file_done(result)
    if report.documents_created >= ANALYZE_AFTER_DOCUMENTS:
        with connection.cursor() as cursor:  # fresh statistics, or the planner takes a new corpus for empty (_store_document)
            cursor.execute("ANALYZE alignment_document")
    with transaction.atomic():
        locked = Corpus.objects.select_for_update().get(pk=corpus.pk)  # one import at a time decides and pairs
        report.direction = corpus_level_order_settle(corpus=locked, requested=options.level_order).notes
        report.pairs_created = document_pairs_sync(corpus=locked)
    corpus.level_order = locked.level_order
    return report


def split_limits() -> SplitLimits:
    """The limits on splitting as this deployment's settings give them."""
    return SplitLimits(budget_seconds=settings.IMPORT_SPLIT_BUDGET_SECONDS, max_sentences=settings.IMPORT_MAX_DOCUMENT_SENTENCES)


def _import_one_file(*, corpus: Corpus, parsed: ParsedFile) -> FileImportResult:
    name = parsed.name
    if parsed.error:
        return FileImportResult(file=name, error=parsed.error)
    result = FileImportResult(file=name)
    try:
        with transaction.atomic():
            commit_without_flush()  # a crash before the flush loses the file and the later "files done": imported again
            for document, layout in parsed.documents:
                _store_document(corpus, document, layout, result)
    except ImportFormatError as exc:
        return FileImportResult(file=name, error=str(exc))
    except IntegrityError as exc:  # a concurrent import stored the same document first
        return FileImportResult(file=name, error=f"{name}: conflicts with a document stored meanwhile ({exc.__cause__ or exc})")
    except DatabaseError as exc:  # the database refused a value; the atomic block has undone the file
        if database_lost(exc):
            raise  # not this file's fault: the job is retried, and imports the file then
        return FileImportResult(file=name, error=f"{name}: the database refused the content ({exc.__cause__ or exc})")
    documents = [document for document, _ in parsed.documents]
    result.paragraph_mode = documents[0].paragraph_mode
    for document in documents:
        result.control_characters_removed += document.cleaning.control_characters_removed
        result.punctuation_repaired += document.cleaning.punctuation_repaired
    return result


def _fallback_warning(parsed: ParsedDocument, paragraph: int) -> str:
    return (
        f"{parsed.file}: splitting {parsed.external_id!r} ({parsed.level}) into sentences took over "
        f"{settings.IMPORT_SPLIT_BUDGET_SECONDS:g} s, so from paragraph {paragraph + 1} on it was split "
        "by punctuation alone (the fallback splitter: abbreviations such as 'Dr. Smith' may be split); check those sentences"
    )


def _store_document(corpus: Corpus, parsed: ParsedDocument, layout: DocumentLayout, result: FileImportResult) -> None:
    content_hash = layout.content_hash(external_id=parsed.external_id, level=parsed.level)
    text_hash = layout.text_hash()
    # The three checks below in one round trip, each on its own index (an OR of them made PostgreSQL
    # filter every document of the corpus): 0 = unchanged, 1 = the id and level taken, 2 = the same text.
    base = Document.objects.filter(corpus=corpus)
    checks = [
        base.filter(content_hash=content_hash),
        base.filter(external_id=parsed.external_id, level=parsed.level),
        base.filter(text_hash=text_hash),
    ]
    first, *others = [
        check.order_by().annotate(rank=Value(rank)).values_list("rank", "external_id", "level")[:1] for rank, check in enumerate(checks)
    ]
    found = list(first.union(*others, all=True).order_by("rank")[:1])
    if found and found[0][0] == 0:
        result.documents_unchanged += 1
        return
    if found and found[0][0] == 1:
        raise ImportFormatError(
            f"document {parsed.external_id!r} level {parsed.level!r} is already in the corpus with different content; "
            "delete it first or give the new version another id",
            file=parsed.file,
            line=parsed.line,
        )
    if layout.fallback_from_paragraph is not None:
        result.warnings.append(_fallback_warning(parsed, layout.fallback_from_paragraph))
    if found:
        _, copy_id, copy_level = found[0]
        result.warnings.append(
            f"{parsed.file}: {parsed.external_id!r} ({parsed.level}) has exactly the same text as "
            f"{copy_id!r} ({copy_level}); stored anyway, check the source"
        )
    document = Document.objects.create(
        corpus=corpus,
        external_id=parsed.external_id,
        title=parsed.title or parsed.external_id,
        level=parsed.level,
        raw_text=layout.raw_text,
        content_hash=content_hash,
        text_hash=text_hash,
        source={
            "file": parsed.file,
            "line": parsed.line,
            "encoding": parsed.cleaning.encoding,
            "had_bom": parsed.cleaning.had_bom,
            "control_characters_removed": parsed.cleaning.control_characters_removed,
            "punctuation_repaired": parsed.cleaning.punctuation_repaired,
            "split_fallback_from_paragraph": layout.fallback_from_paragraph,
        },
    )
    count = _store_sentences(document, layout)
    result.documents_created += 1
    result.sentences_created += count


def _store_sentences(document: Document, layout: DocumentLayout) -> int:
    """The document's paragraphs (their ids are needed) and its sentences, streamed by COPY; the sentence count."""
    paragraphs = Paragraph.objects.bulk_create(
        Paragraph(document=document, index=i, char_start=p.char_start, char_end=p.char_end) for i, p in enumerate(layout.paragraphs)
    )
    rows = (
        (document.pk, paragraph.pk, index, j, sentence.text, sentence.char_start, sentence.char_end)
        for index, (paragraph, j, sentence) in enumerate(
            (paragraph, j, sentence)
            for paragraph, paragraph_layout in zip(paragraphs, layout.paragraphs)
            for j, sentence in enumerate(paragraph_layout.sentences)
        )
    )
    count = copy_rows(Sentence, SENTENCE_COLUMNS, rows)
    return count
