"""The import workflow: find or create the corpus, import the files, queue embedding and alignment.

One service for every way in: the Import page's background job, ``manage.py import_corpus``
and the demo set-up. A corpus created for an import that stored no document is removed
again, so a failed import never leaves an empty corpus behind.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.db import transaction

from alignment import selectors, services
from alignment.aligning.service import alignment_run_for_new_pairs
from alignment.errors import ServiceError
from alignment.importing.cleaning import ImportFormatError
from alignment.importing.language import LANGUAGE_DETECT, language_detect
from alignment.importing.readers import ImportOptions, read_file
from alignment.importing.service import FileImportResult, ImportReport, corpus_import_files
from alignment.models import AlignmentRun, Corpus, EmbeddingRun


@dataclass(frozen=True)
class CorpusTarget:
    """The corpus an import goes into: the one called ``name``, or a new one with these settings."""

    name: str
    language: str
    owner: AbstractBaseUser
    description: str = ""
    pairing: str = Corpus.Pairing.ALL
    level_order: list[str] | None = None
    is_shared: bool = False
    metadata: dict = field(default_factory=dict)


@dataclass
class ImportProgress:
    """What an interrupted earlier attempt of the same import did, for a resumed background job."""

    corpus_created: bool = False
    files_done: list[FileImportResult] = field(default_factory=list)


@dataclass
class ImportOutcome:
    """What an import did: the report, the corpus (None when a new one got nothing and was removed) and what was queued."""

    report: ImportReport
    corpus: Corpus | None
    corpus_created: bool
    corpus_removed: bool = False
    embedding_run: EmbeddingRun | None = None
    alignment_run: AlignmentRun | None = None


def import_target_check(*, user: AbstractBaseUser, name: str, language: str) -> Corpus | None:
    """The existing corpus ``name`` that ``user`` may add to, or None for a new one.

    ServiceError on ``corpus_name`` when it is someone else's (without confirming that a private corpus
    exists), on ``language`` when it is in another language: sentence splitting and encoders depend on it.
    LANGUAGE_DETECT (empty) matches any corpus: the import then keeps the corpus's language.
    """
    corpus = selectors.corpus_for_import(user, name)
    if corpus is not None and language != LANGUAGE_DETECT and corpus.language != language:
        raise ServiceError(f"corpus {corpus.name!r} is in {corpus.language!r}, not {language!r}", field="language")
    return corpus


def import_corpus_get_or_create(*, target: CorpusTarget, for_user: AbstractBaseUser | None = None) -> tuple[Corpus, bool]:
    """The target corpus, created if missing; ``for_user``: an existing corpus must be theirs (staff: any)."""
    if for_user is not None:
        import_target_check(user=for_user, name=target.name, language=target.language)
    return services.corpus_get_or_create(
        name=target.name, language=target.language, owner=target.owner, description=target.description,
        pairing=target.pairing, level_order=target.level_order, is_shared=target.is_shared, metadata=target.metadata,
    )  # fmt: skip


def import_corpus_remove_if_empty(*, corpus: Corpus) -> bool:
    """Remove a corpus created for an import that stored nothing; False when it has documents (another import's too)."""
    with transaction.atomic():
        locked = Corpus.objects.select_for_update().filter(pk=corpus.pk).first()
        if locked is None or locked.documents.exists():
            return False
        locked.delete()
    return True


@dataclass(frozen=True)
class ImportLanguage:
    """The language an import goes in, the note the report gives about it, and the files to import."""

    code: str
    note: str
    files: Iterable[tuple[str, bytes]]  # the same files: those read for the sample are put back in front


def import_language_settle(
    *, target: CorpusTarget, files: Iterable[tuple[str, bytes]], options: ImportOptions, for_user: AbstractBaseUser | None
) -> ImportLanguage:
    """The language given; for LANGUAGE_DETECT the existing corpus's, or the one detected in a new corpus's first files.

    Only the files the sample needs are read ahead (usually the first), so a worker still holds one file at a time;
    a file that cannot be read adds nothing to the sample and gets its error from the import itself.
    """
    if target.language != LANGUAGE_DETECT:
        return ImportLanguage(target.language, "", files)
    existing = (
        selectors.corpus_for_import(for_user, target.name) if for_user is not None else Corpus.objects.filter(name=target.name).first()
    )
    if existing is not None:
        return ImportLanguage(existing.language, f"language: the corpus's own, {existing.language!r}", files)
    read_ahead: list[tuple[str, bytes]] = []
    rest = iter(files)
    guess = language_detect(_document_texts(rest, read_ahead, options))
    return ImportLanguage(guess.code, guess.note, itertools.chain(read_ahead, rest))


def _document_texts(files: Iterator[tuple[str, bytes]], read_ahead: list[tuple[str, bytes]], options: ImportOptions) -> Iterator[str]:
    """Each parsed document's text, file by file; every file taken from ``files`` is kept in ``read_ahead``."""
    for name, data in files:
        read_ahead.append((name, data))
        try:
            parsed = read_file(name, data, options)
        except ImportFormatError:
            continue
        for document in parsed:
            paragraphs = document.paragraphs or [" ".join(sentences) for sentences in document.sentences or []]
            yield "\n\n".join(paragraphs)


@dataclass(frozen=True)
class QueuedJobs:
    embedding_run: EmbeddingRun | None
    alignment_run: AlignmentRun | None


def import_jobs_queue(
    *, corpus: Corpus, report: ImportReport, created_by: AbstractBaseUser | None, embed: bool = True, align: bool = True
) -> QueuedJobs:
    """Queue embedding when documents were created and an alignment run over the new pairs (on commit)."""
    embedding_run = alignment_run = None
    if embed and report.documents_created:
        embedding_run = services.embedding_run_create(corpus=corpus, encoder_name=settings.ENCODER_MODEL, created_by=created_by)
    if align and report.pairs_created:
        alignment_run = alignment_run_for_new_pairs(corpus=corpus, created_by=created_by)
    return QueuedJobs(embedding_run, alignment_run)


def corpus_import_and_queue(
    *,
    target: CorpusTarget,
    files: Iterable[tuple[str, bytes]],
    options: ImportOptions,
    for_user: AbstractBaseUser | None = None,
    created_by: AbstractBaseUser | None = None,
    embed: bool = True,
    align: bool = True,
    on_file_done: Callable[[FileImportResult], None] | None = None,
    on_corpus: Callable[[Corpus, bool], None] | None = None,
    earlier: ImportProgress | None = None,
    stop: Callable[[], bool] | None = None,
) -> ImportOutcome:
    """Import ``(name, bytes)`` files into the target corpus and queue its embedding and alignment.

    ``for_user``: the person importing; an existing corpus must be theirs. ``created_by`` is
    recorded on the queued runs. ``on_corpus(corpus, created)`` runs once the corpus is found
    or created, ``on_file_done(result)`` after each file. ``earlier``: the files an interrupted
    attempt already imported (``files`` then holds only the rest); they count in the report.
    Queueing is idempotent (an active embedding run is reused, pairs in a queued run count as
    covered), so a resumed attempt never adds a second active run. ValueError (nothing stored)
    when the corpus is refused. ``target.language`` LANGUAGE_DETECT: see :func:`import_language_settle`;
    the report's ``language_note`` says what it found. ``stop``: see :func:`corpus_import_files`; an import
    stopped so queues no runs (the corpus page starts them).
    """
    earlier = earlier or ImportProgress()
    language = import_language_settle(target=target, files=files, options=options, for_user=for_user)
    target, options, files = replace(target, language=language.code), replace(options, language=language.code), language.files
    corpus, created = import_corpus_get_or_create(target=target, for_user=for_user)
    created = created or earlier.corpus_created
    if on_corpus is not None:
        on_corpus(corpus, created)
    report = corpus_import_files(corpus=corpus, files=files, options=options, on_file_done=on_file_done, stop=stop)
    report.files[:0] = earlier.files_done
    report.language_note = language.note
    if created and not report.documents_created and import_corpus_remove_if_empty(corpus=corpus):
        return ImportOutcome(report=report, corpus=None, corpus_created=True, corpus_removed=True)
    go_on = not report.stopped
    queued = import_jobs_queue(corpus=corpus, report=report, created_by=created_by, embed=embed and go_on, align=align and go_on)
    return ImportOutcome(
        report=report, corpus=corpus, corpus_created=created,
        embedding_run=queued.embedding_run, alignment_run=queued.alignment_run,
    )  # fmt: skip
