"""An import large enough is split by helper processes ahead of the worker: the same documents, errors and order."""

from __future__ import annotations

import multiprocessing
import time

import pytest

from alignment.importing.parsing import ParsedFile, SplitLimits, parsed_files
from alignment.importing.readers import ImportOptions
from alignment.importing.service import corpus_import_files
from alignment.models import Document
from alignment.services import corpus_get_or_create

LIMITS = SplitLimits(budget_seconds=60, max_sentences=1_000)


def article(number: int) -> list[tuple[str, bytes]]:
    adv = f"Article {number} begins here. Dr. Smith said the tram costs {number} euros.\n\nIt opens in May. People wait."
    ele = f"Article {number} is short. The tram costs {number} euros.\n\nIt opens in May."
    return [(f"A{number}-adv.txt", adv.encode()), (f"A{number}-ele.txt", ele.encode())]


def files_with_errors() -> list[tuple[str, bytes]]:
    files = [f for number in range(6) for f in article(number)]
    files.insert(3, ("Empty-adv.txt", b"   \n\n"))  # no document in it
    files.insert(7, ("Long-adv.txt", " ".join(f"Sentence {k} ends." for k in range(1_200)).encode()))  # over max_sentences
    return files


def summary(parsed: list[ParsedFile]) -> list[tuple[str, str, list[list[str]]]]:
    return [
        (p.name, p.error, [[s.text for paragraph in layout.paragraphs for s in paragraph.sentences] for _, layout in p.documents])
        for p in parsed
    ]


def test_helper_processes_give_what_the_worker_gives_in_the_same_order() -> None:
    files, options = files_with_errors(), ImportOptions(format="text")
    here = list(parsed_files(files, options, LIMITS, processes=0, min_files=1))
    helped = list(parsed_files(files, options, LIMITS, processes=2, min_files=1))
    assert summary(helped) == summary(here)
    assert [p.name for p in helped] == [name for name, _ in files]
    errors = {p.name: p.error for p in helped if p.error}
    assert errors["Empty-adv.txt"] == "Empty-adv.txt: empty document: no text after cleaning"
    assert "1,200 sentences; a document may have at most 1,000" in errors["Long-adv.txt"]
    assert len(errors) == 2


def test_too_few_files_are_split_here_without_a_helper(monkeypatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("no helper process for a small import")

    monkeypatch.setattr("alignment.importing.parsing.ProcessPoolExecutor", refuse)
    parsed = list(parsed_files(article(1), ImportOptions(format="text"), LIMITS, processes=2, min_files=3))
    assert [p.name for p in parsed] == ["A1-adv.txt", "A1-ele.txt"] and not any(p.error for p in parsed)


def test_an_import_split_by_helpers_stores_what_one_split_here_stores(settings, owner) -> None:
    settings.IMPORT_SPLIT_MIN_FILES, settings.IMPORT_MAX_DOCUMENT_SENTENCES = 4, LIMITS.max_sentences
    stored = {}
    for processes in (0, 1):
        settings.IMPORT_SPLIT_PROCESSES = processes
        corpus, _ = corpus_get_or_create(name=f"split by {processes}", language="en", owner=owner)
        report = corpus_import_files(corpus=corpus, files=files_with_errors(), options=ImportOptions(format="text"))
        documents = Document.objects.filter(corpus=corpus).order_by("external_id", "level")
        stored[processes] = (
            [(f.file, f.error, f.documents_created, f.sentences_created) for f in report.files],
            [(d.external_id, d.level, list(d.sentences.order_by("index").values_list("text", flat=True))) for d in documents],
            report.pairs_created,
        )
    assert stored[1] == stored[0]
    files, documents, pairs = stored[1]
    assert (len(files), len(documents), pairs) == (14, 12, 6)
    assert [name for name, error, _, _ in files if error] == ["Empty-adv.txt", "Long-adv.txt"]


def test_an_import_stopped_early_lets_its_helpers_go(settings, owner) -> None:
    settings.IMPORT_SPLIT_MIN_FILES, settings.IMPORT_SPLIT_PROCESSES = 2, 1
    corpus, _ = corpus_get_or_create(name="stopped", language="en", owner=owner)

    class Stop(Exception):
        pass

    def stop_after_two(result) -> None:
        if Document.objects.filter(corpus=corpus).count() >= 2:
            raise Stop  # as a cancel or the end of a time slice does (alignment/importing/workflow.py)

    files = [f for number in range(20) for f in article(number)]
    with pytest.raises(Stop):
        corpus_import_files(corpus=corpus, files=files, options=ImportOptions(format="text"), on_file_done=stop_after_two)
    assert Document.objects.filter(corpus=corpus).count() == 2
    deadline = time.monotonic() + 10
    while multiprocessing.active_children() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not multiprocessing.active_children()
