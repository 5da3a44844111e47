"""Shared fixtures: user personas and small corpora written for the tests."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from alignment.importing.readers import ImportOptions
from alignment.importing.service import corpus_import_files
from alignment.services import corpus_get_or_create
from tests.scheduling import FileOrGroupScheduling, longest_first, node_ids_set

SAMPLE_ADV = (
    "The city council approved a new tram line on Tuesday. It will connect the harbour with the university.\n"
    "\n"
    "Construction begins in spring and is expected to last three years. Residents welcomed the decision.\n"
    "\n"
    "Critics argue that the cost, estimated at 400 million euros, is too high.\n"
)
SAMPLE_ELE = (
    "The city will build a new tram line. It will go from the harbour to the university.\n"
    "\n"
    "Work starts in spring. It will take three years.\n"
    "\n"
    "Some people think it costs too much.\n"
)


def pytest_configure(config: pytest.Config) -> None:
    """Passwords are hashed with MD5 in the test process: Django's PBKDF2 takes 0.4 s a hash on a 2-core machine, and
    most tests make users or log one in, so it cost minutes of the suite. The hash's strength is not under test; the
    processes a test starts (gunicorn, workers, ``runapp``) keep the real hashers, and PBKDF2 stays listed so that a
    hash made by one of them still verifies here."""
    from django.conf import settings

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher", *settings.PASSWORD_HASHERS]
    _flush_by_delete()
    _static_files_listed_once()


MIGRATE_MADE_TABLES = frozenset({"django_content_type", "auth_permission"})


def _flush_by_delete() -> None:
    """A transactional test (a live server, a real worker) ends with Django's flush: one ``TRUNCATE`` of the 60
    tables, 0.25-0.5 s on a 2-core machine, since PostgreSQL gives each table (and each of its indexes) new files;
    ``DELETE`` of the few rows a test leaves takes 5 ms. Foreign keys are not checked while it runs
    (``session_replication_role``, for this transaction only, which needs a superuser: the embedded server's user is
    one; any other keeps ``TRUNCATE``). A flush that resets sequences keeps ``TRUNCATE … RESTART IDENTITY``.

    The ``DELETE`` also keeps the content types and permissions ``migrate`` made (no test makes or deletes any), so the
    flush need not send ``post_migrate`` to make them again: 18 queries per app and 0.1 s of every flush."""
    from django.core.management.commands import flush
    from django.db import connections
    from django.db.backends.postgresql.operations import DatabaseOperations

    truncate = DatabaseOperations.sql_flush
    post_migrate = flush.emit_post_migrate_signal

    def sql_flush(self, style, tables, *, reset_sequences=False, allow_cascade=False):
        self.connection.flush_kept_migrate_rows = False
        if not tables or reset_sequences or not _superuser(self.connection):
            return truncate(self, style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade)
        self.connection.flush_kept_migrate_rows = True
        deletes = [f"DELETE FROM {self.quote_name(table)};" for table in tables if table not in MIGRATE_MADE_TABLES]
        return ["SET LOCAL session_replication_role = replica;", *deletes, "SET LOCAL session_replication_role = DEFAULT;"]

    def emit_post_migrate_signal(verbosity, interactive, db, **kwargs):
        if not getattr(connections[db], "flush_kept_migrate_rows", False):
            post_migrate(verbosity, interactive, db, **kwargs)

    DatabaseOperations.sql_flush = sql_flush
    flush.emit_post_migrate_signal = emit_post_migrate_signal


def _static_files_listed_once() -> None:
    """WhiteNoise lists and stats every static file (Django's finders: ours, the admin's, DRF's, the API docs')
    whenever a middleware chain is built, and Django's test client builds one per client, so per test that makes a
    request: about 80 s of a profiled run of the suite. The files do not change while the tests run, so each
    configuration's listing is made once and handed to later chains (the same ``StaticFile`` objects the scan made)."""
    from django.conf import settings
    from whitenoise.middleware import WhiteNoiseMiddleware

    scan = WhiteNoiseMiddleware.add_files_from_finders
    listings: dict[tuple, dict] = {}

    def add_files_from_finders(self):
        whitenoise = sorted((name, repr(getattr(settings, name))) for name in dir(settings) if name.startswith("WHITENOISE_"))
        key = (
            self.static_prefix, self.max_age, self.allow_all_origins, self.charset, self.index_file, repr(whitenoise),
            tuple(map(str, settings.STATICFILES_DIRS)), tuple(settings.STATICFILES_FINDERS), tuple(settings.INSTALLED_APPS),
        )  # fmt: skip
        if key not in listings:
            before = dict(self.files)
            scan(self)
            listings[key] = {url: file for url, file in self.files.items() if before.get(url) is not file}
        self.files.update(listings[key])

    WhiteNoiseMiddleware.add_files_from_finders = add_files_from_finders


def _superuser(db) -> bool:
    with db.cursor() as cursor:
        cursor.execute("SELECT current_setting('is_superuser') = 'on'")
        return cursor.fetchone()[0]


def pytest_itemcollected(item: pytest.Item) -> None:
    """The browser tests (tests/e2e) and the tests on real corpora are slow by their kind: the fast lane,
    ``-m "not slow"``, leaves them out. Marked here, at collection, before ``-m`` deselects."""
    if item.path.parent.name == "e2e" or item.get_closest_marker("shared_data"):
        item.add_marker(pytest.mark.slow)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Node ids of their own, and the long units first, for ``pytest -n`` (tests/scheduling.py); every worker collects
    in this same order. After pytest-django's own sort, which it keeps within each rank."""
    node_ids_set(items)
    longest_first(items)


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log) -> FileOrGroupScheduling:
    return FileOrGroupScheduling(config, log)


PROCRASTINATE_TABLES = ("procrastinate_jobs", "procrastinate_events", "procrastinate_periodic_defers", "procrastinate_workers")
UNCONSTRAINED_INDEXES = """
    SELECT index.relname FROM pg_index JOIN pg_class index ON index.oid = pg_index.indexrelid
    JOIN pg_namespace ON pg_namespace.oid = index.relnamespace
    WHERE pg_namespace.nspname = 'public' AND NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conindid = pg_index.indexrelid)
"""


@pytest.fixture(scope="session")
def migrated_indexes(django_db_setup, django_db_blocker) -> frozenset[str]:
    """The indexes the migrations made: those of the schema, as opposed to those the app makes per row at run time."""
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute("SELECT indexname FROM pg_indexes WHERE schemaname = 'public'")
        return frozenset(name for (name,) in cursor.fetchall())


def _transactional(request: pytest.FixtureRequest) -> bool:
    marker = request.node.get_closest_marker("django_db")
    marked = marker is not None and bool(marker.kwargs.get("transaction", marker.args[0] if marker.args else False))
    return marked or any(name in request.fixturenames for name in ("transactional_db", "live_server"))


@pytest.fixture(autouse=True)
def committed_leftovers_removed(request: pytest.FixtureRequest):
    """After a test that commits, remove what its flush leaves: Procrastinate's rows, and the indexes the app made for
    rows it had (an encoder's or a mining job's HNSW).

    A flush empties Django's managed tables only. Procrastinate's tables are not managed: a later test saw the jobs of
    an earlier one (webhook deliveries "queued before commit"). Indexes outlive the rows they were made for: a later
    test whose sequences start again (``reset_sequences``) got the same encoder id, and its 512-d vectors failed under
    the old 384-d index. Both passed or failed with the order xdist gave a worker's tests. Inside a ``db`` test's
    transaction nothing needs doing: everything is rolled back with it.
    """
    migrated = None
    if _transactional(request):
        migrated = request.getfixturevalue("migrated_indexes")
        request.getfixturevalue("transactional_db")  # set up before this fixture ends: torn down after it, database open
    yield
    if migrated is None:
        return
    with connection.cursor() as cursor:
        cursor.execute(f"TRUNCATE {', '.join(PROCRASTINATE_TABLES)} CASCADE")
        cursor.execute(UNCONSTRAINED_INDEXES)  # a primary key or unique constraint's index goes only with its table
        for (name,) in cursor.fetchall():
            if name not in migrated:
                cursor.execute(f'DROP INDEX IF EXISTS "{name}"')


@pytest.fixture
def owner(db):
    return get_user_model().objects.create_user("owner", password="owner-pass-123")


@pytest.fixture
def outsider(db):
    return get_user_model().objects.create_user("outsider", password="outsider-pass-123")


@pytest.fixture
def staff(db):
    return get_user_model().objects.create_user("staff", password="staff-pass-123", is_staff=True)


@pytest.fixture
def corpus(owner):
    corpus, _ = corpus_get_or_create(name="Trams", language="en", owner=owner)
    return corpus


@pytest.fixture
def tram_corpus(corpus):
    """A two-level article imported from the text format: two documents, one pair."""
    files = [("Tram-adv.txt", SAMPLE_ADV.encode()), ("Tram-ele.txt", SAMPLE_ELE.encode())]
    report = corpus_import_files(corpus=corpus, files=files, options=ImportOptions(format="text"))
    assert not report.errors, report.errors
    return corpus
