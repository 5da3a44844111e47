"""``manage.py align --corpus NAME``: queue (or, with --now, run here) an alignment run."""

from __future__ import annotations

import json
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from alignment.aligning import service as aligning
from alignment.models import AlignmentRun, Corpus, DocumentPair


class Command(BaseCommand):
    help = "Align the document pairs of a corpus (or some of them) as an alignment run."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--corpus", required=True, help="Corpus name.")
        parser.add_argument("--pair", type=int, action="append", dest="pairs", help="Document pair id; repeat for several (default: all).")
        parser.add_argument("--measure", help="Measure the CRF aligns with (default: the model's, the learned scorer).")
        parser.add_argument("--measures", help="Comma-separated measures to score every candidate with.")
        parser.add_argument("--paragraph-variant", choices=["newsela", "wikipedia", "none"])
        parser.add_argument(
            "--config", type=Path, help="AlignerConfig as JSON (models_ml.aligning.aligner_config); flags above override it."
        )
        parser.add_argument(
            "--model", default=None,
            help="A trained aligner directory (python -m models_ml train); default: ALIGNER_MODEL_DIR, the shipped "
            "model; 'untrained' for the hand-calibrated aligner. A --measure other than the model's runs untrained.",
        )  # fmt: skip
        parser.add_argument("--now", action="store_true", help="Run in this process instead of queueing for a worker.")
        parser.add_argument("--resume", type=int, metavar="RUN_ID", help="Resume a failed or cancelled run instead of starting one.")
        parser.add_argument("--cancel", type=int, metavar="RUN_ID", help="Cancel a queued or running run.")

    def handle(self, *args, **options) -> None:
        if options["cancel"]:
            run = aligning.alignment_run_cancel(run=self._run(options["cancel"]))
            self.stdout.write(f"Run {run.pk} is {run.status}{' (stops after the pair in flight)' if run.cancel_requested else ''}.")
            return
        if options["resume"]:
            try:
                run = aligning.alignment_run_retry(run=self._run(options["resume"]))
            except ValueError as error:
                raise CommandError(str(error)) from None
        else:
            run = self._create(options)
        self.stdout.write(
            f"Alignment run {run.pk}: {run.pairs_total} pair(s), model: {run.model_label} ({run.model_version}), "
            f"measures {', '.join(run.measures)}."
        )
        if options["now"]:
            self._execute(run)
        else:
            self.stdout.write("Queued; a worker (manage.py procrastinate worker) runs it. Progress: the run's page or --now.")

    def _run(self, run_id: int) -> AlignmentRun:
        run = AlignmentRun.objects.filter(pk=run_id).first()
        if run is None:
            raise CommandError(f"no alignment run with id {run_id}")
        return run

    def _create(self, options: dict) -> AlignmentRun:
        corpus = Corpus.objects.filter(name=options["corpus"]).first()
        if corpus is None:
            raise CommandError(f"no corpus called {options['corpus']!r}")
        config: dict = {}
        if options["config"]:
            try:
                config = json.loads(options["config"].read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
                raise CommandError(f"{options['config']}: cannot read the aligner config ({error})") from None
            if not isinstance(config, dict):
                raise CommandError(f"{options['config']}: the aligner config must be a JSON object")
        if options["measure"]:
            config["measure"] = options["measure"]
        if options["paragraph_variant"]:
            config["paragraph_variant"] = options["paragraph_variant"]
        pairs = None
        if options["pairs"]:
            pairs = list(DocumentPair.objects.filter(pk__in=options["pairs"]))
            missing = sorted(set(options["pairs"]) - {p.pk for p in pairs})
            if missing:
                raise CommandError(f"no document pair with id {', '.join(map(str, missing))}")
        measures = [m.strip() for m in options["measures"].split(",") if m.strip()] if options["measures"] else None
        model = settings.ALIGNER_MODEL_DIR if options["model"] is None else options["model"]
        try:
            return aligning.alignment_run_create(
                corpus=corpus, pairs=pairs, aligner_config=config, measures=measures, model_dir="" if model == "untrained" else model
            )
        except ValueError as error:
            raise CommandError(str(error)) from None

    def _execute(self, run: AlignmentRun) -> None:
        from alignment.aligning.measures import run_measure

        try:
            run = aligning.alignment_run_execute(run_id=run.pk, build_measure=run_measure, device=settings.ENCODER_DEVICE)
        except Exception as error:  # the run records it; the command reports it
            raise CommandError(f"run {run.pk} failed: {type(error).__name__}: {error}") from None
        counts = ", ".join(f"{label} {count}" for label, count in sorted(run.label_counts.items()))
        rate = f"{run.pairs_per_second:.2f} pairs/s" if run.pairs_per_second else "no pairs"
        self.stdout.write(
            self.style.SUCCESS(
                f"Run {run.pk} {run.status}: {run.pairs_done} pairs, {run.candidates_written} candidates ({counts}), {rate}."
            )
        )
