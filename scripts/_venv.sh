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
  pip=(.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-compile)
  "${pip[@]}" --upgrade pip
  # torch first, alone and exact: its CPU build is found locally, and nothing later can pull the CUDA build.
  "${pip[@]}" "$(grep -E '^torch==' requirements.txt)"
  "${pip[@]}" -r "$1"
  # pip would byte-compile the 19,000 installed files one by one (110 s of the install on 2 cores); compileall uses
  # every core (73 s), and leaves out the packages' own test folders, which nothing imports (4,000 files: 53 s). A
  # file some package ships that does not compile is only left uncompiled, as pip leaves it.
  .venv/bin/python -m compileall -q -j0 -x '/tests?/' "$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" >/dev/null 2>&1 || true
  echo "$wanted" > "$stamp"
fi
