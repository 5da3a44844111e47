"""``manage.py import_corpus PATH --format text --corpus NAME --language en``: import with a progress bar."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from alignment.importing.readers import DEFAULT_FILENAME_PATTERN, DEFAULT_LEVEL_HEADER_PATTERN, FORMATS, ImportOptions, file_levels
from alignment.importing.service import import_paths
from alignment.importing.workflow import CorpusTarget, corpus_import_and_queue
from alignment.levels import level_order_parse, level_order_refusal
from alignment.models import Corpus


class Command(BaseCommand):
    help = "Import documents into a corpus from a folder or file (text, csv, jsonl or presplit)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", type=Path, help="A file, or a folder whose files of the format are all imported.")
        parser.add_argument("--format", choices=FORMATS, default="text")
        parser.add_argument("--corpus", required=True, help="Corpus name; created if it does not exist.")
        parser.add_argument("--language", default="en", help='ISO 639-1 code (default en); "" detects a new corpus\'s from its text.')
        parser.add_argument("--owner", help="Username owning a new corpus (default: the first superuser).")
        parser.add_argument("--description", default="")
        parser.add_argument("--shared", action="store_true", help="Make a new corpus visible to every user.")
        parser.add_argument("--pairing", choices=Corpus.Pairing.values, default=Corpus.Pairing.ALL)
        parser.add_argument(
            "--level-order", default="",
            help="Comma-separated levels of the files from most complex to simplest, e.g. adv,int,ele. Without it, known "
            "levels (CEFR, adv/int/ele, numbers, Leichte/Einfache Sprache) follow their scheme, others readability.",
        )  # fmt: skip
        parser.add_argument(
            "--paragraph-mode",
            choices=["blank", "line"],
            default="blank",
            help="text format: a blank line separates paragraphs, or each line is one.",
        )
        parser.add_argument(
            "--filename-pattern",
            default=DEFAULT_FILENAME_PATTERN,
            help="Regex with groups id and level, matched against the file name without extension.",
        )
        parser.add_argument("--drop-level-header", action="store_true", help="Drop a leading line such as 'Intermediate'.")
        parser.add_argument("--level-header-pattern", default=DEFAULT_LEVEL_HEADER_PATTERN)
        parser.add_argument("--max-file-bytes", type=int, default=settings.IMPORT_MAX_FILE_BYTES)
        parser.add_argument("--no-embed", action="store_true", help="Do not queue the embedding job afterwards.")
        parser.add_argument("--no-align", action="store_true", help="Do not queue an alignment run of the new pairs afterwards.")

    def handle(self, *args, **options) -> None:
        import_options, paths, target = self._parse(options)
        progress = tqdm(total=len(paths), unit="file", disable=options["verbosity"] == 0)
        root = options["path"] if options["path"].is_dir() else options["path"].parent

        def files():
            for path in paths:
                progress.set_postfix_str(path.name[:30])
                yield str(path.relative_to(root)), path.read_bytes()

        def on_file_done(result) -> None:
            progress.update(1)
            if result.error:
                progress.write(self.style.ERROR(result.error))
            for warning in result.warnings:
                progress.write(self.style.WARNING(warning))

        try:
            outcome = corpus_import_and_queue(
                target=target, files=files(), options=import_options, on_file_done=on_file_done,
                embed=not options["no_embed"], align=not options["no_align"],
            )  # fmt: skip
        except ValueError as exc:  # the corpus exists in another language
            raise CommandError(str(exc)) from None
        finally:
            progress.close()
        self._report(target, outcome)

    def _parse(self, options) -> tuple[ImportOptions, list, CorpusTarget]:
        """The import options, the files to read and the target corpus, or a CommandError naming what is wrong."""
        try:
            import_options = ImportOptions(
                format=options["format"],
                language=options["language"],
                paragraph_mode=options["paragraph_mode"],
                filename_pattern=options["filename_pattern"],
                drop_level_header=options["drop_level_header"],
                level_header_pattern=options["level_header_pattern"],
                max_file_bytes=options["max_file_bytes"],
                level_order=self._level_order(options["level_order"]),
            )
            paths = import_paths(options["path"], import_options)
            import_options.check_filename_pattern(path.name for path in paths)
            self._check_level_order(import_options, paths)
            target = CorpusTarget(
                name=options["corpus"],
                language=options["language"],
                owner=self._owner(options["owner"]),
                description=options["description"],
                pairing=options["pairing"],
                is_shared=options["shared"],
            )
        except (ValueError, FileNotFoundError) as exc:
            raise CommandError(str(exc)) from None
        if not paths:  # before the corpus is created: a new one would stay empty
            raise CommandError(f"{options['path']}: no {options['format']} files found")
        return import_options, paths, target

    @staticmethod
    def _level_order(text: str) -> tuple[str, ...]:
        try:
            return level_order_parse(text)
        except ValueError as exc:
            raise ValueError(f"--level-order: {exc}") from None

    @staticmethod
    def _check_level_order(import_options: ImportOptions, paths: list[Path]) -> None:
        """ValueError (--level-order: ...) when the order names a level none of the files has."""
        if import_options.level_order:
            found = list(dict.fromkeys(level for path in paths for level in file_levels(path.name, path.read_bytes(), import_options)))
            refusal = level_order_refusal(import_options.level_order, found)
            if refusal:
                raise ValueError(f"--level-order: {refusal}")

    def _report(self, target: CorpusTarget, outcome) -> None:
        report = outcome.report
        self.stdout.write(
            f"{'Created' if outcome.corpus_created else 'Updated'} corpus {target.name!r}: {report.documents_created} documents created, "
            f"{report.documents_unchanged} unchanged, {report.sentences_created} sentences, {report.pairs_created} new pairs; "
            f"{report.control_characters_removed} control characters removed, {report.punctuation_repaired} quote/dash characters repaired."
        )
        if report.language_note:
            self.stdout.write(report.language_note[0].upper() + report.language_note[1:] + ".")
        for note in report.direction:
            self.stdout.write(note)
        if outcome.embedding_run is not None:
            run = outcome.embedding_run
            self.stdout.write(f"Embedding queued as run #{run.pk}; a worker (manage.py procrastinate worker) will process it.")
        if outcome.alignment_run is not None:
            alignment = outcome.alignment_run
            self.stdout.write(f"Alignment of the {alignment.pairs_total} new pair(s) queued as alignment run #{alignment.pk}.")
        if report.errors:
            removed = f"; the new corpus {target.name!r} got nothing and was removed" if outcome.corpus_removed else ""
            raise CommandError(f"{len(report.errors)} of {len(report.files)} files were not imported (see above){removed}.")

    def _owner(self, username: str | None):
        users = get_user_model().objects
        if username:
            try:
                return users.get(username=username)
            except users.model.DoesNotExist:
                raise ValueError(f"--owner: no user called {username!r}") from None
        owner = users.filter(is_superuser=True).order_by("pk").first()
        if owner is None:
            raise ValueError("no superuser exists to own the corpus; create one or pass --owner")
        return owner
