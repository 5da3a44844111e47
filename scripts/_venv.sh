# Shared by run.sh and test.sh: create .venv and install a requirements file when it changed.
# Usage: . scripts/_venv.sh REQUIREMENTS_FILE
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PYTHON="${PYTHON:-python3}"
"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { echo "Python 3.11+ is required (found $($PYTHON --version))" >&2; exit 1; }
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
stamp=".venv/.installed-$(basename "$1")"
wanted="$(cat requirements*.txt | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]; then
  echo "Installing Python packages from $1 into .venv (first run takes a few minutes)..."
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
  # torch first, alone and exact: its CPU build is found locally, and nothing later can pull the CUDA build.
  .venv/bin/python -m pip install --quiet --disable-pip-version-check "$(grep -E '^torch==' requirements.txt)"
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -r "$1"
  echo "$wanted" > "$stamp"
fi
