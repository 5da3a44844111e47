"""Sentence splitting on all of OneStopEnglish: fragments, odd sentences and speed.

    .venv/bin/python bench/sentence_splitting.py [--examples 5] [--save FILE] [--compare FILE]

Reads the 567 documents as the OneStopEnglish import does (``text`` format, one paragraph per
line, level header dropped; decoding and cleaning included but not timed), splits every paragraph
with ``layout_from_paragraphs`` and prints: documents, sentences, sentences with no letter (only
punctuation, digits or symbols), sentences starting with a lowercase letter, sentences starting
with a domain tail (``com``, ``org``, ...), sentences under 3 characters, paragraphs with a
character (not whitespace) in no sentence, a few examples of each, and the seconds and KB/s of the splitting alone.

``--save FILE`` writes every document's sentences as JSON; ``--compare FILE`` reads such a file
(from another version of the splitter) and prints how many documents are split differently, with
the differing sentences of the first few: run ``--save before.json`` on the old version, then
``--compare before.json`` on the new one. The file holds the corpus's text: keep it out of the
repository. Needs ../shared/data/onestopenglish; no database.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from difflib import SequenceMatcher
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED = REPO_ROOT.parent / "shared" / "data" / "onestopenglish"
DOMAIN_TAILS = ("com", "org", "net", "edu", "gov", "co", "uk", "io", "info")
DOMAIN_TAIL_START = re.compile(rf"^\.?({'|'.join(DOMAIN_TAILS)})\b")
HAS_LETTER = re.compile(r"[^\W\d_]")


def read_documents(folder: Path) -> dict[str, list[str]]:
    """Paragraphs per file, read exactly as ``import_corpus --paragraph-mode line --drop-level-header`` does."""
    from alignment.importing.readers import ImportOptions, read_file

    options = ImportOptions(format="text", paragraph_mode="line", drop_level_header=True)
    documents = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() == ".txt"):
        name = str(path.relative_to(folder))
        (parsed,) = read_file(name, path.read_bytes(), options)
        documents[name] = parsed.paragraphs
    return documents


def main() -> None:
    """Long because it is one measurement script read top to bottom: each step prints its figures as it goes."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", type=int, default=5, help="examples printed per kind of odd sentence")
    parser.add_argument("--save", type=Path, help="write every document's sentences to this JSON file")
    parser.add_argument("--compare", type=Path, help="a file written by --save: count the documents split differently")
    args = parser.parse_args()
    if not SHARED.exists():
        sys.exit(f"{SHARED} is missing: this benchmark needs ../shared/data/onestopenglish beside the checkout.")
    sys.path.insert(0, str(REPO_ROOT))
    from alignment.importing.segment import layout_from_paragraphs

    documents = read_documents(SHARED)
    characters = sum(len(p) for paragraphs in documents.values() for p in paragraphs)
    start = time.perf_counter()
    split = {name: layout_from_paragraphs(paragraphs, language="en") for name, paragraphs in documents.items()}
    seconds = time.perf_counter() - start

    kinds: dict[str, list[tuple[str, str]]] = {
        "no letter (punctuation/digits only)": [],
        "starting with a lowercase letter": [],
        "starting with a domain tail (com, org, ...)": [],
        "under 3 characters": [],
    }
    sentences: dict[str, list[str]] = {}
    losing = []  # paragraphs with a character (not whitespace) in no sentence
    for name, layout in split.items():
        for paragraph, text in zip(layout.paragraphs, documents[name]):
            if "".join(s.text for s in paragraph.sentences).replace(" ", "") != "".join(text.split()):
                losing.append(f"{name}: …{text[-60:]!r}")
        texts = [s.text for p in layout.paragraphs for s in p.sentences]
        sentences[name] = texts
        for i, text in enumerate(texts):
            context = f"{name}: …{texts[i - 1][-40:]!r} | {text[:60]!r}" if i else f"{name}: {text[:60]!r}"
            if not HAS_LETTER.search(text):
                kinds["no letter (punctuation/digits only)"].append((text, context))
            if text[:1].islower():
                kinds["starting with a lowercase letter"].append((text, context))
            if DOMAIN_TAIL_START.match(text):
                kinds["starting with a domain tail (com, org, ...)"].append((text, context))
            if len(text) < 3:
                kinds["under 3 characters"].append((text, context))

    total = sum(len(texts) for texts in sentences.values())
    print(f"documents {len(split)}, paragraphs {sum(len(p) for p in documents.values()):,}, sentences {total:,}")
    print(f"splitting {characters / 1000:,.0f} KB took {seconds:.2f} s: {characters / 1000 / seconds:,.0f} KB/s")
    print(f"\nparagraphs with characters left out of every sentence: {len(losing)}")
    for context in losing[: args.examples]:
        print(f"    {context}")
    for label, found in kinds.items():
        print(f"\nsentences {label}: {len(found)}")
        for _, context in found[: args.examples]:
            print(f"    {context}")

    if args.save:
        args.save.write_text(json.dumps(sentences, ensure_ascii=False, indent=0))
        print(f"\nsentences written to {args.save}")
    if args.compare:
        other = json.loads(args.compare.read_text())
        differing = [name for name in sentences if other.get(name) != sentences[name]]
        print(f"\ndocuments split differently from {args.compare}: {len(differing)} of {len(sentences)}")
        for name in differing[: args.examples * 4]:
            matcher = SequenceMatcher(a=other.get(name, []), b=sentences[name], autojunk=False)
            for tag, a0, a1, b0, b1 in matcher.get_opcodes():
                if tag != "equal":
                    print(f"  {name}:\n    before {other[name][a0:a1]!r}\n    after  {sentences[name][b0:b1]!r}")


if __name__ == "__main__":
    main()
