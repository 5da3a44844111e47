#!/usr/bin/env bash
# Install into .venv, start the embedded database, set up the demo, collect static files, run the workers
# (WORKER_PROCESSES, at a lower CPU priority than the pages: WORKER_NICE) and the web server (gunicorn,
# WEB_CONCURRENCY processes forked from one that loaded the app; DEV_SERVER=1: runserver with autoreload).
# Ctrl-C stops everything. Set DATABASE_URL to use your own PostgreSQL (with pgvector) instead.
set -euo pipefail
. "$(dirname "$0")/_venv.sh" requirements.txt
exec .venv/bin/python manage.py runapp "${ADDRPORT:-127.0.0.1:8000}"
