"""Reading and sentence-splitting an import's files, apart from storing them: here, or in helper processes ahead of it.

Splitting (pysbd) is pure Python and took about half of an import's time on one core, so a large import
(``IMPORT_SPLIT_MIN_FILES`` files or more) splits the next files in ``IMPORT_SPLIT_PROCESSES`` other processes
while this one stores the current file: the files come back in their order, each parsed whole or with its error.
Nothing here touches Django or the database, so the helper processes start bare ("spawn": no copy of a worker's
threads or connections) and import only this module's readers.

Memory: at most ``processes * AHEAD_PER_PROCESS`` files are read or parsed ahead of the one being stored.
"""

from __future__ import annotations

import itertools
import multiprocessing
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field

from alignment.importing.cleaning import ImportFormatError
from alignment.importing.readers import ImportOptions, ParsedDocument, read_file
from alignment.importing.segment import DocumentLayout, layout_from_paragraphs, layout_from_sentences

AHEAD_PER_PROCESS = 4  # files each helper process has queued, so it never waits for the next one


@dataclass(frozen=True)
class SplitLimits:
    """The settings splitting obeys, passed in so that helper processes need no Django settings."""

    budget_seconds: float  # IMPORT_SPLIT_BUDGET_SECONDS: pysbd's time per document, then the punctuation fallback
    max_sentences: int  # IMPORT_MAX_DOCUMENT_SENTENCES


@dataclass
class ParsedFile:
    """One file read and split: its documents with their layouts, or the error that refused the whole file."""

    name: str
    documents: list[tuple[ParsedDocument, DocumentLayout]] = field(default_factory=list)
    error: str = ""


def parse_file(name: str, data: bytes, options: ImportOptions, limits: SplitLimits) -> ParsedFile:
    """Read and split one file; bad input comes back as ``error`` (it names the file, and the line where known)."""
    try:
        return ParsedFile(name, [(document, document_layout(document, options, limits)) for document in read_file(name, data, options)])
    except ImportFormatError as exc:
        return ParsedFile(name, error=str(exc))


def document_layout(document: ParsedDocument, options: ImportOptions, limits: SplitLimits) -> DocumentLayout:
    """The document's paragraphs and sentences; ImportFormatError when it has none, or more than the limit."""
    if document.sentences is not None:
        layout = layout_from_sentences(document.sentences)
    else:
        layout = layout_from_paragraphs(document.paragraphs or [], language=options.language, budget_seconds=limits.budget_seconds)
    if layout.sentence_count == 0:
        raise ImportFormatError(
            f"document {document.external_id!r} ({document.level}) has no sentences", file=document.file, line=document.line
        )
    if layout.sentence_count > limits.max_sentences:
        raise ImportFormatError(
            f"document {document.external_id!r} ({document.level}) has {layout.sentence_count:,} sentences; a document may have "
            f"at most {limits.max_sentences:,} (IMPORT_MAX_DOCUMENT_SENTENCES): split it into parts",
            file=document.file,
            line=document.line,
        )
    return layout


def parsed_files(
    files: Iterable[tuple[str, bytes]], options: ImportOptions, limits: SplitLimits, *, processes: int, min_files: int
) -> Iterator[ParsedFile]:
    """``files`` parsed, in order: in this process, or by ``processes`` helper processes when there are ``min_files`` or more.

    Close the iterator (``contextlib.closing``) when stopping early: that cancels the files queued and lets the
    helpers go (a file a helper is splitting finishes within the split budget, unwaited for).
    """
    source = iter(files)
    first = list(itertools.islice(source, max(1, min_files)))
    source = itertools.chain(first, source)
    if processes < 1 or len(first) < min_files:
        for name, data in source:
            yield parse_file(name, data, options, limits)
        return
    pool = ProcessPoolExecutor(max_workers=processes, mp_context=multiprocessing.get_context("spawn"))
    try:
        queued: deque[Future[ParsedFile]] = deque(
            pool.submit(parse_file, name, data, options, limits) for name, data in itertools.islice(source, processes * AHEAD_PER_PROCESS)
        )
        while queued:
            done = queued.popleft().result()
            following = next(source, None)
            if following is not None:
                queued.append(pool.submit(parse_file, *following, options, limits))
            yield done
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
