"""The dataset card (README.md) of an export: what is in it, counted while the files are written.

:class:`CardStatistics` sees each document pair once, as the writers do, and keeps only
counters, so its memory does not grow with the project: the agreement figures come from
running counts (:class:`~annotation.export.agreement_counts.AgreementCounts`), and the unique
sentences are counted by PostgreSQL (:class:`UniqueSentences`). The card holds no export
time and no job id, so re-exporting the same state gives the same card; it lists the SHA-256
of every data file instead, which identifies the contents.
"""

from __future__ import annotations

import hashlib
import uuid
from collections import Counter
from dataclasses import dataclass, field

from django.db import DatabaseError, connection

from annotation.adjudication.agreement import SCOPE_SHOWN, prf_from_confusion
from annotation.export.agreement_counts import AgreementCounts
from annotation.export.models import empty_splits
from annotation.export.selection import STATUSES, PairExport
from annotation.export.simplification import PHENOMENA
from annotation.labels import LABELS
from models_ml.data.splits import SPLITS

SIDES = ("simple", "complex")


class UniqueSentences:
    """Sentences of the exported sentence pairs, unique by (whitespace-normalised) text, per side, with their tokens.

    The set of texts seen grows with the project, so it lives in a temporary table of this
    database session rather than in the process: a 12-byte digest of each sentence's text
    (computed here, so "unique" means exactly what it always meant: the same text after
    :func:`~annotation.export.selection.clean_text`) with its whitespace token count, inserted
    FLUSH_ROWS at a time (the only buffer); a duplicate is ignored, and :meth:`totals` reads
    the count and token sum per side. :meth:`close` drops the table.
    """

    FLUSH_ROWS = 2000

    def __init__(self) -> None:
        self.table: str | None = None
        self.pending: dict[tuple[int, bytes], int] = {}  # (side index, digest) -> tokens, not yet inserted

    def add(self, side: str, text: str) -> None:
        key = (SIDES.index(side), hashlib.blake2b(text.encode(), digest_size=12).digest())
        if key not in self.pending:
            self.pending[key] = len(text.split())
            if len(self.pending) >= self.FLUSH_ROWS:
                self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        rows, self.pending = self.pending, {}
        with connection.cursor() as cursor:
            if self.table is None:
                self.table = f"export_sentences_{uuid.uuid4().hex}"
                cursor.execute(
                    f"CREATE TEMPORARY TABLE {self.table} (side smallint, digest bytea, tokens integer, PRIMARY KEY (side, digest))"
                )
            cursor.execute(
                f"INSERT INTO {self.table} (side, digest, tokens) SELECT * FROM unnest(%s::smallint[], %s::bytea[], %s::integer[]) "
                "ON CONFLICT DO NOTHING",
                [[side for side, _ in rows], [digest for _, digest in rows], list(rows.values())],
            )

    def totals(self) -> dict[str, tuple[int, int]]:
        """Side -> (unique sentences, their tokens)."""
        self.flush()
        result = dict.fromkeys(SIDES, (0, 0))
        if self.table is not None:
            with connection.cursor() as cursor:
                cursor.execute(f"SELECT side, count(*), coalesce(sum(tokens), 0) FROM {self.table} GROUP BY side")
                for side, count, tokens in cursor.fetchall():
                    result[SIDES[side]] = (int(count), int(tokens))
        return result

    def close(self) -> None:
        self.pending = {}
        if self.table is None:
            return
        table, self.table = self.table, None
        try:
            with connection.cursor() as cursor:
                cursor.execute(f"DROP TABLE IF EXISTS {table}")
        except DatabaseError:  # a transaction already failed: the error being raised matters, the table ends with the session
            pass


@dataclass
class CardStatistics:
    pairs: Counter = field(default_factory=Counter)  # split -> document pairs
    complete_pairs: int = 0
    labels: dict[str, Counter] = field(default_factory=lambda: {split: Counter() for split in SPLITS})
    statuses: Counter = field(default_factory=Counter)
    phenomena: Counter = field(default_factory=Counter)
    simplification_total: int = 0
    simplification_kept: int = 0
    agreement: AgreementCounts = field(default_factory=AgreementCounts)
    provenance: Counter = field(default_factory=Counter)  # annotator labels by "recorded" / "backfilled" / "none"
    sources: Counter = field(default_factory=Counter)  # annotator labels by source (human, suggestion, bulk, ...)
    suggestion_runs: Counter = field(default_factory=Counter)  # (run id, model) -> annotator labels made with its suggestions
    sentences: UniqueSentences = field(default_factory=UniqueSentences)
    sentence_totals: dict[str, tuple[int, int]] | None = None  # set by finish()

    def add(self, exported: PairExport, split: str, phenomena: Counter) -> None:
        self.pairs[split] += 1
        self.complete_pairs += exported.complete
        self.phenomena.update(phenomena)
        for item in exported.items:
            self.labels[split][item.label] += 1
            self.statuses[item.status] += 1
            self.sentences.add("simple", item.simple.text)
            self.sentences.add("complex", item.complex.text)
            self.agreement.add((item.simple.pk, item.complex.pk), item.labels)
            for annotation in item.annotations:
                suggestion = annotation["suggestion"]
                self.provenance[suggestion["provenance"] if suggestion else "none"] += 1
                self.sources[annotation["source"]] += 1
                if suggestion and suggestion["kind"] == "stored":
                    self.suggestion_runs[(suggestion["run_id"], suggestion["model"] or "")] += 1

    def finish(self) -> None:
        """Read what the database counted; call once every pair is added, before :func:`render_card`."""
        self.sentence_totals = self.sentences.totals()

    def close(self) -> None:
        self.sentences.close()

    @property
    def items(self) -> int:
        return sum(sum(counter.values()) for counter in self.labels.values())

    def unique_sentences(self, side: str) -> tuple[int, float]:
        """(unique sentences, average tokens) of a side."""
        if self.sentence_totals is None:
            raise RuntimeError("CardStatistics.finish() must run before the card is rendered")
        count, tokens = self.sentence_totals[side]
        return count, tokens / count if count else 0.0


def _number(value: float | None, reason: str | None = None) -> str:
    if value is not None:
        return f"{value:.3f}"
    reason = reason or "no data"
    return reason if reason.startswith("undefined") else f"undefined ({reason})"


def _agreement_lines(statistics: CardStatistics) -> list[str]:
    if not statistics.agreement.annotators:
        return ["No annotator labels behind the exported items (agreement is undefined)."]
    report = statistics.agreement.report(scope=SCOPE_SHOWN)
    lines = [
        (
            "Scope: the exported sentence pairs (not the agreement page's shown candidates, so the figures differ from "
            "it), each annotator's current label (an annotator who marked a document pair done counts the items they left "
            "unlabelled as not aligned, as the review page does):"
        ),
        "",
        f"- annotators: {len(report.annotators)}; items with two or more labels: {report.items}",
        f"- Fleiss' kappa: {_number(report.fleiss, report.fleiss_undefined)} over {report.fleiss_items} items every annotator labelled",
        f"- Krippendorff's alpha (nominal): {_number(report.krippendorff_alpha, report.krippendorff_undefined)} "
        f"over the {report.items} items with two or more labels",
    ]
    for index, ((a, b), value) in enumerate(sorted(report.cohen.items())):
        if index == 20:
            lines.append(f"- … and {len(report.cohen) - 20} more annotator pairs")
            break
        f1 = prf_from_confusion(report.confusion(a, b)).f1
        lines.append(
            f"- {a} / {b}: Cohen's kappa {_number(value, report.cohen_undefined.get((a, b)))}, alignment F1 (Task 1) "
            f"{_number(f1, 'undefined: no link')} over the {report.cohen_items[(a, b)]} items both labelled"
        )
    return lines


def _labels_lines(statistics: CardStatistics) -> list[str]:
    """The card's sections about the labels themselves: how far annotators agree, and which suggestions they saw."""
    return [
        "## Agreement", "", *_agreement_lines(statistics), "",
        "## Suggestions behind the labels", "", *_provenance_lines(statistics), "",
    ]  # fmt: skip


def _provenance_lines(statistics: CardStatistics) -> list[str]:
    """Which suggestions the labels were made with, and how we know (:mod:`annotation.provenance`)."""
    counts = statistics.provenance
    lines = [
        "Each annotator label in the JSONL names the suggestions it was made with (`suggestion`: run, model, kind and "
        "`provenance`), and an item's `aligner` block is the candidate of that run, not of a later one. Of the "
        f"{sum(counts.values())} annotator labels behind the exported items, {counts['recorded']} carry a provenance "
        f"recorded when they were saved, {counts['backfilled']} a backfilled guess (saved before recording began: the "
        f"project's suggestion run at the time, judged by when its runs finished), and {counts['none']} none (imported "
        "labels: nothing was suggesting).",
    ]
    if statistics.suggestion_runs:
        lines += [
            "",
            *(
                f"- run #{run}, {model or 'model not recorded'}: {n} labels"
                for (run, model), n in sorted(statistics.suggestion_runs.items())
            ),
        ]
    if statistics.sources["bulk"]:
        lines += [
            "",
            f"{statistics.sources['bulk']} of these labels were **bulk accepted** (`source` `bulk`): the annotator accepted "
            "every suggestion of the pair at or above the project's confidence threshold without looking at each, and each "
            "such label's `suggestion.bulk` gives the threshold and the precision the project's own answers estimated there. "
            "Leave them out, or weigh them, where unseen labels matter.",
        ]
    return lines


def _file_lines(statistics: CardStatistics, options: dict) -> list[str]:
    score_filter = (
        f"{options['score_metric'].upper()} in [{options['score_min']:g}, {options['score_max']:g}]" if options["score_metric"] else "none"
    )
    described = {
        "tsv": "- `wiki-manual/<split>.tsv`: label, simple id, complex id, simple sentence, complex sentence; a complete "
        "document pair has a row for every sentence pair (notAligned where nobody linked), other pairs their labelled rows. "
        "As in the CSV, a sentence that starts with `=`, `+`, `-`, `@`, a tab or a carriage return gets a leading `'`, "
        "so a spreadsheet opening the file shows it as text; the JSONL and Parquet files keep every text exactly.",
        "jsonl": "- `jsonl/<split>.jsonl`: one labelled sentence pair a line with full provenance: every annotator's label, "
        "event and the suggestions it was made with, the adjudication, the verification, and the scores and model of the "
        "suggestion run the labels were made with (`aligner`, null where no label was made with a run that proposed the pair).",
        "csv": "- `csv/<split>.csv`: one labelled sentence pair a row, without provenance. For spreadsheets, a text cell "
        "that starts with `=`, `+`, `-`, `@`, a tab or a carriage return gets a leading `'` (OWASP's advice against "
        "formula injection), so a spreadsheet shows it as text; the JSONL and Parquet files keep every text exactly.",
        "parquet": "- `parquet/<split>.parquet`: the same rows as the CSV.",
        "simplification": f"- `simplification/<split>.jsonl`: complex → simple pairs from the groups "
        f"({statistics.simplification_kept} of {statistics.simplification_total} kept; drop identical: "
        f"{'yes' if options['drop_identical'] else 'no'}; score filter: {score_filter}; BLEU is sacrebleu's sentence BLEU, "
        "GLEU Google's sentence GLEU, simple side against complex side, 0-100).",
    }
    return [described[name] for name in options["formats"]]


def _front_matter(corpus, options: dict, licence: str) -> list[str]:
    """Hugging Face dataset-card metadata, so the folder loads as a dataset with its splits."""
    lines = ["---", f"license: {licence if licence and ' ' not in licence else 'other'}", "language:", f"- {corpus.language}"]
    data_format = next((f for f in ("parquet", "csv", "jsonl") if f in options["formats"]), None)
    if data_format:
        lines += ["configs:", "- config_name: default", "  data_files:"]
        for split in SPLITS:
            lines += [f"  - split: {split}", f"    path: {data_format}/{split}.{data_format}"]
    return [*lines, "---", ""]


def _contents_lines(statistics: CardStatistics, options: dict) -> list[str]:
    """The card's "What is in it" section: statuses, splits and the label counts per split."""
    majority = "; **unadjudicated majority labels are included, with status `majority`**" if options["include_majority"] else ""
    lines = [
        "",
        "## What is in it",
        "",
        "Verified document pairs (every labelled sentence pair with its final label), adjudicated sentence pairs of "
        f"pairs not yet verified, and imported gold{majority}. Statuses: "
        + ", ".join(f"{status} {statistics.statuses.get(status, 0)}" for status in STATUSES)
        + ".",
        "",
        f"Splits are by document pair (no pair is ever split), seed {options['seed']}, fractions "
        + " / ".join(f"{split} {options['fractions'][split]}" for split in SPLITS)
        + ".",
        "",
        "| split | document pairs | " + " | ".join(LABELS) + " | total |",
        "|---|---:|" + "---:|" * (len(LABELS) + 1),
    ]
    for split in SPLITS:
        counts = statistics.labels[split]
        lines.append(
            f"| {split} | {statistics.pairs[split]} | "
            + " | ".join(str(counts[label]) for label in LABELS)
            + f" | {sum(counts.values())} |"
        )
    totals = Counter()
    for counter in statistics.labels.values():
        totals.update(counter)
    lines += [
        f"| all | {sum(statistics.pairs.values())} | " + " | ".join(str(totals[label]) for label in LABELS) + f" | {statistics.items} |",
        "",
    ]
    empty = empty_splits(options["fractions"], statistics.pairs)
    if empty:
        lines += [
            f"**{' and '.join(empty)} {'is' if len(empty) == 1 else 'are'} empty**: the {sum(statistics.pairs.values())} "
            "document pair(s) exported all fell in the other splits with these fractions and seed. A model trained or "
            "evaluated on this export has nothing there; export again with other shares or another seed.",
            "",
        ]
    return lines


def render_card(*, project, statistics: CardStatistics, options: dict, level_numbers: dict[str, int], files: list[dict]) -> str:
    corpus = project.corpus
    metadata = corpus.metadata or {}
    licence = str(metadata.get("licence") or metadata.get("license") or "")
    lines = _front_matter(corpus, options, licence)
    lines += [
        f"# {project.name}: sentence alignment gold",
        "",
        (
            f"Complex ↔ simple sentence pairs of corpus *{corpus.name}* ({corpus.language}), labelled aligned, partially "
            "aligned or not aligned by the annotation project of the same name."
        ),
        "",
        "## Licence and source",
        "",
        f"- licence: {licence or 'not stated in the corpus metadata'}",
        f"- source: {metadata.get('source') or 'not stated in the corpus metadata'}",
    ]
    lines += [f"- {key}: {metadata[key]}" for key in sorted(metadata) if key not in ("licence", "license", "source")]
    lines += _contents_lines(statistics, options)
    lines += [
        *(
            f"- unique {side} sentences: {count}, average length {average:.1f} tokens"
            for side, (count, average) in ((side, statistics.unique_sentences(side)) for side in SIDES)
        ),
        "  (sentences of the exported sentence pairs, unique by text; tokens split at whitespace)",
        "",
        "## Simplification phenomena",
        "",
        (
            "Counted over groups: aligned and partial links of a document pair joined into connected n:m groups "
            "(Jiang et al. 2020, Table 1). Copying: 1-1 and identical after whitespace normalisation; rephrasing: 1-1 "
            "otherwise; splitting: one complex, several simple sentences; merging: several complex, one simple; fusion: "
            "several on both sides; deletion: complex sentences without any aligned or partial link, counted only in the "
            f"{statistics.complete_pairs} complete (verified or imported) document pairs."
        ),
        "",
        "| " + " | ".join(PHENOMENA) + " |",
        "|" + "---:|" * len(PHENOMENA),
        "| " + " | ".join(str(statistics.phenomena.get(name, 0)) for name in PHENOMENA) + " |",
        "",
        *_labels_lines(statistics),
        "## Files",
        "",
        "Labels: aligned, partial, not_aligned (partialAligned / notAligned in the Wiki-Manual TSV). Sentence ids are "
        "`article-level-paragraph-sentence`; levels are numbered "
        + ", ".join(f"{level} = {n}" for level, n in sorted(level_numbers.items(), key=lambda e: e[1]))
        + ".",
        "",
        *_file_lines(statistics, options),
        "",
        "| file | bytes | sha256 |",
        "|---|---:|---|",
        *(f"| {entry['name']} | {entry['bytes']} | {entry['sha256']} |" for entry in files),
        "",
    ]
    return "\n".join(lines)
