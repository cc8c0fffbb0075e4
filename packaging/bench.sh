#!/usr/bin/env bash
# Run the benchmarks in bench/ (speed and memory targets live here, not in unit tests).
set -euo pipefail
cd "$(dirname "$0")/.."
. packaging/common.sh
venv_python
.venv/bin/python -m pip install -q -e '.[test,lab,bench]'
for bench in bench/bench_*.py; do
  echo "== ${bench}"
  .venv/bin/python -m "bench.$(basename "${bench}" .py)"
done
