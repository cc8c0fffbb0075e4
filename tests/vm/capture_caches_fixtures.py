"""Capture discovery fixtures of caches and cache-like layers (tests/fixtures/lab-caches/).

    python -m tests.vm.capture_caches_fixtures [OUT_DIR]

Boots the lab with the scenario of tests/lab/test_caches_lab.py (tests/vm/guest/caches.sh), or
takes OUT_DIR, the out/ directory a run of that test left, and copies the raw discovery
snapshots (`cachewise scan --save-raw`) it saved, with versions.txt. README.md there says what
each snapshot holds.
"""

from __future__ import annotations

from pathlib import Path

from tests.lab.test_caches_lab import SCENARIO
from tests.vm.capture_fixtures import capture
from tests.vm.lab import Lab

FILES = ("raw-writecache.json", "raw-layers.json", "raw-degraded.json", "versions.txt")
DEST = Path(__file__).resolve().parents[1] / "fixtures" / "lab-caches"


def main() -> int:
    return capture(lambda: Lab(list(SCENARIO.disks)).run(SCENARIO.script, timeout=SCENARIO.timeout), FILES, DEST)


if __name__ == "__main__":
    raise SystemExit(main())
