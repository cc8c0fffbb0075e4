#!/usr/bin/env bash
# The accuracy suite: cachewise's predictions against the real kernel in the lab guest.
# Without arguments: the out-of-sample suite (tests/vm/outofsample.py): the user's loop of trace,
# recommend, plan, apply and a next day, for each workload and backend three times; it keeps each
# finished run under --workdir (default /var/tmp/cachewise-accuracy), so a second call goes on
# where the first stopped, and regenerates docs/accuracy.md. About 3 hours from nothing.
#   --scale    the published lvmcache experiment at 1/16 scale (tests/vm/accuracy.py),
#              docs/accuracy-scale.md, about 15 minutes
#   --oracle   the older suite (tests/vm/accuracy.py): each run predicted from its own fio log,
#              as the calibration runs were made; prints its table
# Other arguments go to the module that runs: the out-of-sample suite takes --runs, --set,
# --workloads, --backends, --seconds, --workdir, --evaluate-only; the older one (--scale, --oracle)
# takes --seconds, --backends, --workloads, --workdir, --evaluate-only.
set -euo pipefail
cd "$(dirname "$0")/.."
. packaging/common.sh
venv_python
.venv/bin/python -m pip install -q -e '.[test,lab]'
export NPY_DISABLE_CPU_FEATURES=X86_V3
args=()
suite=outofsample
for arg in "$@"; do
  case "$arg" in
    --scale) suite=scale; args+=("$arg") ;;
    --oracle) suite=oracle ;;
    *) args+=("$arg") ;;
  esac
done
case $suite in
  scale) exec .venv/bin/python -m tests.vm.accuracy --out docs/accuracy-scale.md "${args[@]}" ;;
  oracle) exec .venv/bin/python -m tests.vm.accuracy "${args[@]}" ;;
  *) exec .venv/bin/python -m tests.vm.outofsample --out docs/accuracy.md --notes docs/accuracy-notes.md "${args[@]}" ;;
esac
