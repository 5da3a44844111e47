"""``manage.py flip_pairs --corpus NAME``: turn a corpus's level pairs round (the corpus page's *Flip direction*)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser

from alignment.models import Corpus
from alignment.pairs_flip import corpus_pairs_flip


class Command(BaseCommand):
    help = (
        "Reverse the direction of a corpus's level pairs: each pair's simple document becomes its complex one, the level "
        "order is reversed and the pairs are aligned again. Refused, changing nothing, while annotation uses the pairs."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--corpus", required=True, help="The corpus's name.")
        parser.add_argument("--no-align", action="store_true", help="Do not queue an alignment run of the flipped pairs.")

    def handle(self, *args, **options) -> None:
        corpus = Corpus.objects.filter(name=options["corpus"]).first()
        if corpus is None:
            raise CommandError(f"--corpus: no corpus called {options['corpus']!r}")
        try:
            outcome = corpus_pairs_flip(corpus=corpus, align=not options["no_align"])
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            f"Flipped {outcome.pairs_flipped} pair(s) of corpus {corpus.name!r}: level order (most complex first) was "
            f"{', '.join(outcome.order_before)}, is now {', '.join(outcome.order_after)}; "
            f"{outcome.results_removed} alignment result(s) of the old direction removed."
        )
        if outcome.alignment_run is not None:
            run = outcome.alignment_run
            self.stdout.write(f"Alignment of the {run.pairs_total} flipped pair(s) queued as alignment run #{run.pk}.")
