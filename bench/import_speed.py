"""Import speed and memory for files at the size limit: one huge paragraph against ordinary text.

    .venv/bin/python bench/import_speed.py [--bytes N] [--one-pass-kb 100]

Generates three ``text`` files of about ``--bytes`` (default: IMPORT_MAX_FILE_BYTES, 5 MiB):
a single paragraph of ordinary sentences (with abbreviations such as "Mr." and "U.S."),
a single paragraph with no sentence punctuation at all, and a file of ordinary
five-sentence paragraphs. For each it prints the seconds spent splitting into sentences
(``layout_from_paragraphs``), the seconds of the whole import into the database
(``corpus_import_files``: decode, clean, split, store) and the process's peak RSS. Splitting
also shows its CPU seconds, which a busy machine inflates less than the wall-clock seconds.
For comparison it times pysbd in one call over the first ``--one-pass-kb`` KB of the
long paragraph, which is what splitting did before the sliding window.
"""

from __future__ import annotations

import argparse
import time

from _django import bench_owner, setup_django
from _memory import PeakRss

SUBJECTS = ["The council", "Mr. Smith", "Dr. Jones of the U.S. army", "A farmer", "The museum", "Our team"]
VERBS = ["opened", "said that Ms. Brown visited", "measured", "described", "painted", "announced"]
OBJECTS = ["a new bridge", "the old harbour", "three gardens", "the village school", "a small boat"]


def sentence(i: int) -> str:
    end = "?" if i % 11 == 0 else "."
    return f"{SUBJECTS[i % 6]} {VERBS[(i // 6) % 6]} {OBJECTS[(i // 36) % 5]} on day {i}{end}"


def long_paragraph(size: int) -> str:
    parts, length, i = [], 0, 0
    while length < size:
        parts.append(sentence(i))
        length += len(parts[-1]) + 1
        i += 1
    return " ".join(parts)[:size]


def unpunctuated_paragraph(size: int) -> str:
    return " ".join(f"word{i}" for i in range(size // 8))[:size]


def paragraphs_file(size: int) -> str:
    paragraphs, length, i = [], 0, 0
    while length < size:
        paragraphs.append(" ".join(sentence(i + j) for j in range(5)))
        length += len(paragraphs[-1]) + 2
        i += 5
    return "\n\n".join(paragraphs)[:size]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bytes", type=int, default=None, help="file size (default: IMPORT_MAX_FILE_BYTES)")
    parser.add_argument("--one-pass-kb", type=int, default=100, help="KB of the long paragraph given to pysbd in one call")
    args = parser.parse_args()
    setup_django()
    from django.conf import settings

    from alignment.importing.readers import ImportOptions
    from alignment.importing.segment import MAX_SENTENCE_CHARS, SEGMENT_WINDOW_CHARS, _segmenter, layout_from_paragraphs
    from alignment.importing.service import corpus_import_files
    from alignment.services import corpus_get_or_create

    size = args.bytes or settings.IMPORT_MAX_FILE_BYTES
    print(f"file size {size:,} bytes; window {SEGMENT_WINDOW_CHARS} characters, longest sentence {MAX_SENTENCE_CHARS}")
    owner = bench_owner()
    cases = {
        "one paragraph, ordinary sentences": long_paragraph(size),
        "one paragraph, no punctuation": unpunctuated_paragraph(size),
        "ordinary 5-sentence paragraphs": paragraphs_file(size),
    }
    for number, (label, text) in enumerate(cases.items()):
        paragraphs = [p for p in text.split("\n\n") if p]
        start, cpu_start = time.perf_counter(), time.process_time()
        layout = layout_from_paragraphs(paragraphs, language="en")
        split_seconds, split_cpu = time.perf_counter() - start, time.process_time() - cpu_start
        corpus, _ = corpus_get_or_create(name=f"Import bench {number}", language="en", owner=owner)
        with PeakRss() as memory:
            start = time.perf_counter()
            report = corpus_import_files(corpus=corpus, files=[(f"Bench{number}-adv.txt", text.encode())], options=ImportOptions())
            import_seconds = time.perf_counter() - start
        assert not report.errors, report.errors[0].error
        print(
            f"{label:36s} {len(paragraphs):6,} paragraphs {layout.sentence_count:7,} sentences  "
            f"split {split_seconds:6.1f} s (CPU {split_cpu:5.1f} s)  import {import_seconds:6.1f} s  peak RSS {memory.peak / 2**20:6.0f} MiB"
        )
    if args.one_pass_kb:
        sample = long_paragraph(args.one_pass_kb * 1000)
        start = time.perf_counter()
        _segmenter("en").segment(sample)
        print(f"pysbd in one call on {args.one_pass_kb} KB of the long paragraph (the old way): {time.perf_counter() - start:.1f} s")
        start = time.perf_counter()
        layout_from_paragraphs([sample], language="en")
        print(f"the sliding window on the same {args.one_pass_kb} KB: {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
