"""Shared start-up for bench scripts: Django on a throw-away embedded database (unless DATABASE_URL is set)."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from urllib.parse import quote

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"


def setup_django(*, keep: str = "") -> None:
    """Django on a throw-away embedded database; with ``keep`` (a folder), on one kept there after the run (stopped,
    not deleted), so that a bench's database can be looked into: ``STATE_DIR=<keep> .venv/bin/python manage.py ...``."""
    sys.path.insert(0, str(REPO_ROOT))
    os.chdir(REPO_ROOT)
    if not os.environ.get("DATABASE_URL"):
        os.environ["STATE_DIR"] = str(Path(keep).resolve()) if keep else tempfile.mkdtemp(prefix="aligner-bench-")
        os.environ["EMBEDDED_DB_DELETE_ON_EXIT"] = "0" if keep else "1"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", interactive=False, verbosity=0)


def require_shared(name: str) -> Path:
    path = SHARED_DATA / name
    if not path.exists():
        sys.exit(f"{path} is missing: this benchmark needs ../shared/data/{name} beside the checkout.")
    return path


def bench_owner():
    from django.contrib.auth import get_user_model

    owner, _ = get_user_model().objects.get_or_create(username="bench", defaults={"is_superuser": True, "is_staff": True})
    return owner


def database_url() -> str:
    """DATABASE_URL of the database this process uses, for worker and server subprocesses."""
    from django.db import connection

    params = connection.settings_dict
    host = quote(str(params["HOST"]), safe="") if str(params["HOST"]).startswith("/") else params["HOST"]
    port = f":{params['PORT']}" if params.get("PORT") else ""
    password = f":{quote(params['PASSWORD'])}" if params.get("PASSWORD") else ""
    return f"postgresql://{params['USER']}{password}@{host}{port}/{params['NAME']}"


def settle(tables: list[str] | None = None) -> None:
    """PostgreSQL's background work on the rows just written or deleted done now, outside a bench's clock, rather than by
    autovacuum during the next timed run on the same cores: ``VACUUM (ANALYZE)`` of ``tables`` (None: the whole
    database), then a ``CHECKPOINT`` where the role may."""
    import contextlib

    from django.db import DatabaseError, connection

    with connection.cursor() as cursor:
        cursor.execute("VACUUM (ANALYZE)" + (" " + ", ".join(tables) if tables else ""))
        with contextlib.suppress(DatabaseError):  # a DATABASE_URL whose role may not (pg_checkpoint): the vacuum is most of it
            cursor.execute("CHECKPOINT")
