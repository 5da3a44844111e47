"""``manage.py export --project NAME --output DIR``: write a project's gold dataset export here and now.

The same files, card and zip as an export job from the Exports page, written synchronously
(for scripts and the bench). DIR must not exist or be empty; the files are written to a hidden
sibling folder first and moved into place only when complete.
"""

from __future__ import annotations

import shutil
import time
import uuid
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.export.service import export_options_clean, export_write
from annotation.models import AnnotationProject


class Command(BaseCommand):
    help = "Export a project's verified / adjudicated / imported labels as TSV, JSONL, CSV, Parquet and a simplification set."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True, help="annotation project name")
        parser.add_argument("--output", required=True, type=Path, help="folder to create (must not exist or be empty)")
        parser.add_argument("--formats", default="", help="comma-separated: tsv,jsonl,csv,parquet,simplification (default all)")
        parser.add_argument("--include-majority", action="store_true", help="add the unadjudicated majority, flagged as such")
        parser.add_argument("--seed", type=int, default=0, help="seeds the document-level split (default 0)")
        parser.add_argument("--fractions", default="0.7,0.15,0.15", help="train,dev,test shares summing to 1")
        parser.add_argument("--drop-identical", action="store_true", help="drop identical pairs from the simplification set")
        parser.add_argument("--score-metric", choices=("bleu", "gleu"), help="filter the simplification set by this score")
        parser.add_argument("--score-min", type=float)
        parser.add_argument("--score-max", type=float)

    def handle(self, *args, **options) -> None:
        try:
            project = AnnotationProject.objects.select_related("corpus", "suggestion_run").get(name=options["project"])
        except AnnotationProject.DoesNotExist:
            raise CommandError(f"no project named {options['project']!r}") from None
        output: Path = options["output"]
        if output.exists() and (not output.is_dir() or any(output.iterdir())):
            raise CommandError(f"--output {output}: exists and is not an empty folder")
        try:
            fractions = dict(zip(("train", "dev", "test"), (float(x) for x in options["fractions"].split(",")), strict=True))
        except ValueError:
            raise CommandError(f"--fractions {options['fractions']!r}: give three numbers, train,dev,test") from None
        try:
            cleaned = export_options_clean(
                formats=options["formats"], include_majority=options["include_majority"], seed=options["seed"],
                fractions=fractions, drop_identical=options["drop_identical"], score_metric=options["score_metric"],
                score_min=options["score_min"], score_max=options["score_max"],
            )  # fmt: skip
        except ValueError as error:
            raise CommandError(str(error)) from None
        output.parent.mkdir(parents=True, exist_ok=True)
        staging = output.parent / f".{output.name}-staging-{uuid.uuid4().hex[:8]}"
        staging.mkdir()
        started = time.perf_counter()
        try:
            files = export_write(project=project, options=cleaned, root=staging)
            if output.exists():
                output.rmdir()
            staging.rename(output)
        except ValueError as error:
            raise CommandError(str(error)) from None
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        for entry in files:
            self.stdout.write(f"{output / entry['name']}\t{entry['bytes']}\t{entry['sha256']}")
        self.stdout.write(self.style.SUCCESS(f"exported project {project.name!r} in {time.perf_counter() - started:.1f} s"))
