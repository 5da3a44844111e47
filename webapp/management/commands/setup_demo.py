"""``manage.py setup_demo``: migrate, create the demo accounts, import and queue embedding of the demo corpus."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from webapp.demo import demo_accounts_ensure, demo_corpus_import, demo_project_ensure


class Command(BaseCommand):
    help = "Set up the demo idempotently and print the login credentials."

    def handle(self, *args, **options) -> None:
        call_command("migrate", interactive=False, verbosity=0)
        try:
            credentials = demo_accounts_ensure(settings.STATE_DIR)
        except ValueError as error:  # a demo password the validators refuse
            raise CommandError(str(error)) from None
        manager = get_user_model().objects.get(username="manager")
        corpus, report = demo_corpus_import(owner=manager)
        self.stdout.write(
            f"Demo corpus {corpus.name!r}: {report.documents_created} documents imported, {report.documents_unchanged} already there."
        )
        project = demo_project_ensure(corpus=corpus, manager=manager, annotator=get_user_model().objects.get(username="annotator"))
        self.stdout.write(f"Demo annotation project {project.name!r}: the annotator has {project.assignments.count()} pairs to label.")
        self.stdout.write(self.style.SUCCESS("Log in with:"))
        for credential in credentials:
            self.stdout.write(f"  {credential.role:<16} username: {credential.username:<10} password: {credential.password}")
