"""``manage.py import_gold``: existing gold alignments (Wiki-Manual TSV, DEplain CSVs) as a pre-labelled project."""

from __future__ import annotations

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.intake.gold_import import gold_import
from models_ml.__main__ import InputError, read_gold


class Command(BaseCommand):
    help = "Import gold alignments into a new corpus and a pre-labelled annotation project (labels with source 'import')."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--gold", required=True, type=Path, help="Wiki-Manual TSV, or DEplain folder / alignments.csv")
        parser.add_argument("--format", required=True, choices=("wiki-manual", "deplain"), dest="gold_format")
        parser.add_argument("--project", required=True, help="name of the new annotation project")
        parser.add_argument("--corpus", help="name of the new corpus (default: the project name)")
        parser.add_argument("--language", default="en", help="ISO 639-1 code of the corpus (default en)")
        parser.add_argument("--user", required=True, help="owner of the corpus and project; the labels are recorded as theirs")

    def handle(self, *args, **options) -> None:
        try:
            user = get_user_model().objects.get(username=options["user"])
        except get_user_model().DoesNotExist:
            raise CommandError(f"no user named {options['user']!r}") from None
        try:
            pairs = read_gold(options["gold"], options["gold_format"], warn=lambda line: self.stderr.write(f"warning: {line}"))
        except InputError as error:
            raise CommandError(str(error)) from None
        try:
            report = gold_import(
                project_name=options["project"], corpus_name=options["corpus"] or options["project"],
                language=options["language"], owner=user, pairs=pairs,
            )  # fmt: skip
        except ValueError as error:
            raise CommandError(f"{options['gold']}: {error}") from None
        self.stdout.write(self.style.SUCCESS(
            f"imported {report.pairs} document pairs with {report.labels} gold links into project {report.project.name!r}"
        ))  # fmt: skip
