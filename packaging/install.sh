#!/usr/bin/env bash
# Install cachewise into .venv in this checkout: bash packaging/install.sh && .venv/bin/cachewise
set -euo pipefail
cd "$(dirname "$0")/.."
. packaging/common.sh
venv_python
.venv/bin/python -m pip install -q .
echo "installed: $(.venv/bin/cachewise --version) in $(pwd)/.venv; run .venv/bin/cachewise"
