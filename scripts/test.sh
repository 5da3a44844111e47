#!/usr/bin/env bash
# Install the app and its test tools into .venv, make sure Chromium is there, lint, run the whole test suite in parallel.
set -euo pipefail
. "$(dirname "$0")/_venv.sh" requirements-dev.txt
if [ ! -x /usr/bin/chromium ]; then
  echo "Installing Debian's Chromium for the browser tests..."
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
echo "Lint (ruff) and layering contracts (import-linter), configured in pyproject.toml..."
.venv/bin/ruff check --quiet .
.venv/bin/ruff format --check . || { echo "ruff format would change the files listed: run .venv/bin/ruff format ."; exit 1; }
.venv/bin/lint-imports --no-cache >/dev/null || .venv/bin/lint-imports --no-cache
# Bytecode is written and kept even where the environment says not to (PYTHONDONTWRITEBYTECODE, which this project's
# development machines set): otherwise every xdist worker and every process a test starts compiles the app and the
# tests from source again (7 s of each worker's collection, 0.4 s of each Django process's start). Ignored by git.
unset PYTHONDONTWRITEBYTECODE
.venv/bin/python -m compileall -q -j0 webapp alignment annotation models_ml >/dev/null
# One pytest-xdist worker per core (at most 8; TEST_WORKERS overrides, and a later -n in the arguments wins), each with
# its own embedded PostgreSQL, state directory and Chromium (CONTRIBUTING.md, "Running tests").
workers="${TEST_WORKERS:-$(nproc)}"
[ "$workers" -le 8 ] || workers=8
exec .venv/bin/python -m pytest -n "$workers" "$@"
