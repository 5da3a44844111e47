"""Import existing gold alignments (Wiki-Manual TSV, DEplain CSVs) as a pre-labelled project.

Each gold document pair becomes a complex and a simple document of a new corpus (article
``gold-<n>``, levels adv → ele, the gold's sentences one per line so indices stay exactly
the gold's), one document pair, a completed assignment of the importing user, and one label
event per linked sentence pair with source ``import``. Unlinked sentence pairs are not
aligned, as in the gold. Training snapshots count imported pairs as gold. All or nothing:
any problem rolls the whole import back.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from alignment.importing.readers import ImportOptions
from alignment.importing.service import corpus_import_files
from alignment.models import DocumentPair
from alignment.services import corpus_get_or_create
from annotation import labels, selectors, services
from annotation.models import AnnotationProject, Assignment, LabelEvent
from models_ml.data.io import GoldPair


@dataclass
class GoldImportReport:
    project: AnnotationProject
    pairs: int
    labels: int


def _presplit(sentences: list[str], paragraphs: list[int] | None, where: str) -> bytes:
    lines: list[str] = []
    for index, sentence in enumerate(sentences):
        text = " ".join(sentence.split())
        if not text:
            raise ValueError(f"{where}: sentence {index} is empty")
        if index and paragraphs is not None and paragraphs[index] != paragraphs[index - 1]:
            lines.append("")
        lines.append(text)
    return ("\n".join(lines) + "\n").encode()


def gold_import(*, project_name: str, corpus_name: str, language: str, owner: AbstractBaseUser, pairs: list[GoldPair]) -> GoldImportReport:
    """Create corpus documents, a project and import-source labels for ``pairs``; ValueError names the problem."""
    if AnnotationProject.objects.filter(name=project_name).exists():
        raise ValueError(f"a project named {project_name!r} exists already; choose another --project")
    with transaction.atomic():
        corpus, created = corpus_get_or_create(name=corpus_name, language=language, owner=owner)
        if not created and corpus.documents.exists():
            raise ValueError(f"corpus {corpus_name!r} exists and has documents; gold is imported into a new corpus")
        files = []
        for number, pair in enumerate(pairs, start=1):
            where = f"gold pair {pair.pair_id}"
            files.append((f"gold-{number:05d}-adv.txt", _presplit(pair.complex_sentences, pair.complex_paragraphs, f"{where}, complex")))
            files.append((f"gold-{number:05d}-ele.txt", _presplit(pair.simple_sentences, pair.simple_paragraphs, f"{where}, simple")))
        report = corpus_import_files(corpus=corpus, files=files, options=ImportOptions(format="presplit"))
        if report.errors:
            raise ValueError("; ".join(f"{result.file}: {result.error}" for result in report.errors[:3]))
        stored = {
            p.complex_document.external_id: p
            for p in DocumentPair.objects.filter(corpus=corpus).select_related("complex_document", "simple_document")
        }
        project = services.project_create(name=project_name, corpus=corpus, created_by=owner, overlap=1, pairs=list(stored.values()))
        services.membership_set(project=project, user=owner, role="manager")
        events = []
        now = timezone.now()
        for number, pair in enumerate(pairs, start=1):
            document_pair = stored[f"gold-{number:05d}"]
            simple_ids = list(document_pair.simple_document.sentences.order_by("index").values_list("pk", flat=True))
            complex_ids = list(document_pair.complex_document.sentences.order_by("index").values_list("pk", flat=True))
            if (len(simple_ids), len(complex_ids)) != (len(pair.simple_sentences), len(pair.complex_sentences)):
                raise ValueError(
                    f"gold pair {pair.pair_id}: stored {len(simple_ids)} simple / {len(complex_ids)} complex sentences, "
                    f"the gold has {len(pair.simple_sentences)} / {len(pair.complex_sentences)}"
                )
            if pair.domain:  # kept with the complex document: training reports its figures per domain
                document = document_pair.complex_document
                document.source = {**document.source, "domain": pair.domain}
                document.save(update_fields=["source"])
            Assignment.objects.create(project=project, pair=document_pair, annotator=owner, completed_at=now)
            if pair.links is not None:  # the source's own 1:1 links: a group's other sentence pairs stay unlinked
                links = {(s, c): label for c, s, label in pair.links}
            else:
                links = {(s, c): g.label for g in pair.groups for s in g.simple for c in g.complex}
            events += [
                LabelEvent(
                    project=project,
                    pair=document_pair,
                    annotator=owner,
                    simple_sentence_id=simple_ids[s],
                    complex_sentence_id=complex_ids[c],
                    new_label=label,
                    source=LabelEvent.Source.IMPORT,
                )  # fmt: skip
                for (s, c), label in sorted(links.items())
            ]
        LabelEvent.objects.bulk_create(events, batch_size=2000)
        labels.assignments_recount(project, annotator_id=owner.pk)
        selectors.figures_warm(project, items=len(events))
    return GoldImportReport(project=project, pairs=len(pairs), labels=len(events))
