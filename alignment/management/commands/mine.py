"""``manage.py mine start|watch|cancel|list``: mining jobs (LHA, MUSS) from the shell, with the start page's settings."""

from __future__ import annotations

from time import sleep

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.management.base import BaseCommand, CommandError, CommandParser, OutputWrapper
from django.db.models import Q
from tqdm import tqdm

from alignment.errors import ServiceError
from alignment.mining.models import MinedPair, MiningJob
from alignment.mining.starting import FORMS, mining_job_start, mining_job_stop
from alignment.models import Corpus

BAR = "{desc}: {percentage:3.0f}%|{bar:30}| {n_fmt}/{total_fmt} {unit} [{elapsed}{postfix}]"
FLAGS = {"source_corpus": "--corpus", "target_corpus": "--target", "method": "--method"}  # the rest: --set NAME=VALUE


def _settings_help() -> str:
    """The settings of each method by the forms' field names, with the values a setting left out takes."""
    lines = []
    for method, form in FORMS.items():
        fields = [(name, field) for name, field in form.base_fields.items() if name not in FLAGS]
        names = [name if field.initial is None else f"{name} (default {field.initial})" for name, field in fields]
        names = [f"{name} (default: the corpus's, en or de; else en)" if name.startswith("language") else name for name in names]
        lines.append(f"{method.upper()} settings: {', '.join(names)}.")
    return " ".join(lines) + " An empty value (--set theta_s=) means what an emptied field on the start page means."


class _Raw:
    """tqdm redraws its line with a leading carriage return; Django's stdout wrapper would end every write with a newline."""

    def __init__(self, out: OutputWrapper) -> None:
        self.out = out

    def write(self, text: str) -> None:
        self.out.write(text, ending="")

    def flush(self) -> None:
        self.out.flush()


class Command(BaseCommand):
    help = "Start, watch, cancel and list mining jobs (LHA, MUSS) with the settings of the corpus page's Mine pairs form."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True, metavar="{start,watch,cancel,list}")
        start = actions.add_parser("start", help="Check the settings and queue a job.", description=_settings_help())
        start.add_argument("--corpus", required=True, help="The source corpus (MUSS: the corpus mined), by name or id.")
        start.add_argument("--method", choices=list(FORMS), default="lha", help="lha (default) or muss.")
        start.add_argument("--target", help="LHA: the target corpus, in the other style, by name or id.")
        start.add_argument(
            "--set", action="append", default=[], dest="settings", metavar="NAME=VALUE",
            help="A setting by the form's field name (k_documents=3, theta_s=0.7, k=8...); repeat for several.",
        )  # fmt: skip
        start.add_argument(
            "--user", help="Start it as this user: refused unless they may (the source corpus's owner or staff); the job "
            "is theirs and takes one of their lanes. Default: nobody's (the shell), as manage.py align does.",
        )  # fmt: skip
        start.add_argument("--watch", action="store_true", help="Then watch it as `mine watch` does.")
        start.add_argument("--interval", type=float, default=2.0, help="--watch: seconds between looks (default 2).")
        watch = actions.add_parser("watch", help="Draw a job's progress until it ends: exit 0 when it succeeded, else 1.")
        watch.add_argument("job_id", type=int)
        watch.add_argument("--interval", type=float, default=2.0, help="Seconds between looks at the database (default 2).")
        cancel = actions.add_parser("cancel", help="Cancel a job: its shards stop after the document in flight.")
        cancel.add_argument("job_id", type=int)
        cancel.add_argument("--user", help="Cancel as this user: refused unless they may (the source corpus's owner or staff).")
        listing = actions.add_parser("list", help="The newest jobs, one a line.")
        listing.add_argument("--corpus", help="Only jobs with this corpus as source or target (name or id).")
        listing.add_argument("--status", choices=list(MiningJob.Status.values))
        listing.add_argument("--method", choices=list(FORMS))
        listing.add_argument("--limit", type=int, default=20, help="At most this many (default 20).")

    def handle(self, *args, **options) -> None:
        if options.get("interval") is not None and not options["interval"] > 0:
            raise CommandError(f"--interval: {options['interval']} is not a number of seconds above 0")
        getattr(self, f"_{options['action']}")(options)

    def _start(self, options: dict) -> None:
        corpus = _corpus(options["corpus"], "--corpus")
        data = _settings(options["settings"])
        if options["target"] is not None:
            data["target_corpus"] = _corpus(options["target"], "--target").pk
        user = _user(options["user"])
        try:
            job, created = mining_job_start(corpus=corpus, method=options["method"], data=data, user=user)
        except PermissionError as refusal:
            raise CommandError(f"--user {options['user']}: {refusal}") from None
        except ValueError as error:
            raise CommandError(_named(error)) from None
        settings = ", ".join(f"{name} {value}" for name, value in sorted(job.config.items()))
        said = "queued" if created else f"already exists with these settings ({job.status})"
        self.stdout.write(f"Mining job {job.pk} ({job.method.upper()}, {_corpora(job)}) {said}: {settings}.")
        if options["watch"]:
            self._watch_job(job, options["interval"])
        else:
            self.stdout.write(f"A worker (manage.py procrastinate worker) runs it; follow it with: manage.py mine watch {job.pk}")

    def _watch(self, options: dict) -> None:
        self._watch_job(_job(options["job_id"]), options["interval"])

    def _watch_job(self, job: MiningJob, interval: float) -> None:
        """Look at the job's row every ``interval`` seconds (no worker needed here) and redraw its bar until it ends;
        CommandError (exit status 1) unless it succeeded."""
        if job.status == MiningJob.Status.QUEUED:
            self.stdout.write("Queued: it starts when a worker (manage.py procrastinate worker) picks it up.")
        with tqdm(file=_Raw(self.stdout), desc=f"Mining job {job.pk}", unit=job.unit, bar_format=BAR, mininterval=0) as bar:
            while True:
                job.refresh_from_db(fields=["status", "documents_done", "documents_total", "cancel_requested", "error"])
                pairs = MinedPair.objects.filter(job=job).count()
                bar.total, bar.n, bar.unit = job.documents_total or None, job.documents_done, job.unit
                stopping = ", stopping" if job.cancel_requested and job.is_active else ""
                bar.set_postfix_str(f"{job.status}{stopping}, {pairs} pair{'' if pairs == 1 else 's'}", refresh=False)
                bar.refresh()
                if not job.is_active:
                    break
                sleep(interval)
        if job.status == MiningJob.Status.FAILED:
            raise CommandError(f"mining job {job.pk} failed: {job.error}", returncode=1)
        if job.status == MiningJob.Status.CANCELLED:
            raise CommandError(
                f"mining job {job.pk} was cancelled after {job.documents_done} of {job.documents_total} {job.unit}; its "
                f"{pairs} pairs are kept, and starting it again with the same settings resumes it",
                returncode=1,
            )
        self.stdout.write(self.style.SUCCESS(f"Mining job {job.pk} succeeded: {pairs} pairs (its page: /mining/{job.pk}/)."))

    def _cancel(self, options: dict) -> None:
        try:
            job = mining_job_stop(job=_job(options["job_id"]), user=_user(options["user"]))
        except PermissionError as refusal:
            raise CommandError(f"--user {options['user']}: {refusal}") from None
        if job.is_active:
            self.stdout.write(f"Mining job {job.pk} is {job.status}, cancel requested: its shards stop after the document in flight.")
        else:
            self.stdout.write(f"Mining job {job.pk} has ended ({job.status}): nothing to cancel.")

    def _list(self, options: dict) -> None:
        jobs = MiningJob.objects.select_related("source_corpus", "target_corpus").defer("lexical_idf").order_by("-pk")
        if options["corpus"] is not None:
            corpus = _corpus(options["corpus"], "--corpus")
            jobs = jobs.filter(Q(source_corpus=corpus) | Q(target_corpus=corpus))
        jobs = jobs.filter(status=options["status"]) if options["status"] else jobs
        jobs = jobs.filter(method=options["method"]) if options["method"] else jobs
        self.stdout.write(f"{'id':>6}  {'method':<6}  {'status':<9}  {'done':>4}  {'pairs':>7}  corpora")
        for job in jobs[: max(options["limit"], 0)]:
            pairs = job.pairs_found if not job.is_active else MinedPair.objects.filter(job=job).count()
            self.stdout.write(f"{job.pk:>6}  {job.method:<6}  {job.status:<9}  {job.percent:>3}%  {pairs:>7}  {_corpora(job)}")


def _corpora(job: MiningJob) -> str:
    """What a job mines: "source → target" (LHA), or the one corpus (MUSS)."""
    return job.source_corpus.name if job.method == MiningJob.Method.MUSS else f"{job.source_corpus.name} → {job.target_corpus.name}"


def _named(error: ValueError) -> str:
    """A refusal with the flag it is about: --corpus, --target, --method or --set NAME."""
    field = getattr(error, "field", None)
    if isinstance(error, ServiceError) and field is not None:
        return f"{FLAGS.get(field, f'--set {field}')}: {error}"
    return str(error)


def _settings(pairs: list[str]) -> dict[str, str]:
    settings: dict[str, str] = {}
    for pair in pairs:
        name, equals, value = pair.partition("=")
        name = name.strip()
        if not equals or not name:
            raise CommandError(f"--set {pair!r}: write a setting as NAME=VALUE, e.g. --set k_documents=3")
        if name in FLAGS:
            raise CommandError(f"--set {name}: give it as {FLAGS[name]}")
        if name in settings:
            raise CommandError(f"--set {name}: given twice")
        settings[name] = value.strip()
    return settings


def _corpus(value: str, flag: str) -> Corpus:
    corpus = Corpus.objects.filter(name=value).first()
    if corpus is None and value.isdigit():
        corpus = Corpus.objects.filter(pk=int(value)).first()
    if corpus is None:
        raise CommandError(f"{flag}: no corpus called {value!r}{' or with that id' if value.isdigit() else ''}")
    return corpus


def _user(username: str | None) -> AbstractBaseUser | None:
    if username is None:
        return None
    user = get_user_model().objects.filter(**{get_user_model().USERNAME_FIELD: username}).first()
    if user is None:
        raise CommandError(f"--user: no user called {username!r}")
    return user


def _job(job_id: int) -> MiningJob:
    job = MiningJob.objects.select_related("source_corpus", "target_corpus").defer("lexical_idf").filter(pk=job_id).first()
    if job is None:
        raise CommandError(f"no mining job with id {job_id}")
    return job
