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
echo "== pytest: unit, TUI, package and lab tiers"
pytest -v --durations=5 tests/unit tests/tui tests/package tests/lab "$@"
