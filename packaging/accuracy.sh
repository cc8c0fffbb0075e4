#!/usr/bin/env bash
# The accuracy suite: cachewise's predictions against the real kernel in the lab guest
# (tests/vm/accuracy.py). Without arguments it regenerates docs/accuracy.md; with --scale,
# docs/accuracy-scale.md (the published lvmcache experiment at 1/16 scale). Other arguments go
# to `python -m tests.vm.accuracy` (--seconds, --backends, --workloads, --workdir).
set -euo pipefail
cd "$(dirname "$0")/.."
. packaging/common.sh
venv_python
.venv/bin/python -m pip install -q -e '.[test,lab]'
out=docs/accuracy.md
for arg in "$@"; do [ "$arg" = --scale ] && out=docs/accuracy-scale.md; done
exec .venv/bin/python -m tests.vm.accuracy --out "$out" "$@"
