#!/usr/bin/env bash
# The one test command (README "Test"; .ci/run calls exactly this). Installs what the tests
# need, then runs every tier: lint, types, import contract, unit, TUI, and the lab tier.
set -euo pipefail
cd "$(dirname "$0")/.."
. packaging/common.sh

mapfile -t wanted < <(grep -hvE '^\s*(#|$)' packaging/lab-packages.txt packaging/deb-packages.txt)
missing=()
for pkg in "${wanted[@]}"; do
  dpkg-query -W -f '${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "test.sh: installing the Debian packages the lab and package tiers need: ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  elif [ "${CACHEWISE_SKIP_LAB:-0}" = 1 ]; then
    echo "test.sh: lab packages missing (${missing[*]}); CACHEWISE_SKIP_LAB=1, so the lab tier will be skipped."
  else
    echo "test.sh: the lab tier needs these Debian packages: ${missing[*]}." >&2
    echo "Run this command as root to install them, or: sudo apt-get install ${missing[*]}" >&2
    echo "(CACHEWISE_SKIP_LAB=1 runs the other tiers only.)" >&2
    exit 1
  fi
fi

venv_python
.venv/bin/python -m pip install -q -e '.[test,lab]'
export PATH="$(pwd)/.venv/bin:$PATH"

if [ "${CACHEWISE_SKIP_LAB:-0}" != 1 ]; then
  bash packaging/lab-virtiofsd.sh > /dev/null  # builds it once; tests/vm/lab.py asks it for the path
fi

echo "== ruff"
ruff check advisor recipes screens cachewise tests bench
ruff format --check advisor recipes screens cachewise bench
echo "== mypy"
mypy advisor recipes cachewise screens
echo "== import contract (advisor/ and recipes/ never import the UI)"
lint-imports
# The unit and TUI tiers on both cores (pytest-xdist, a test file per worker: 3.4 minutes
# against 8 on one, measured 2026-11-26); then the package and lab tiers in one process, whose
# lab pool starts a guest beside the package tier (tests/lab/conftest.py).
workers=(-n 2 --dist loadfile)
for arg in "$@"; do
  case "$arg" in --collect-only|--co) workers=() ;; esac
done
echo "== pytest: unit and TUI tiers"
status=0
pytest -v "${workers[@]}" tests/unit tests/tui "$@" || status=$?
if [ "$status" != 0 ] && [ "$status" != 5 ]; then  # 5: nothing selected there (a marker)
  exit "$status"
fi
echo "== pytest: package and lab tiers"
pytest -v --durations=5 tests/package tests/lab "$@"
