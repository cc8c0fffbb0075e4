"""Capture unit-test fixtures from the real tools in the lab guest.

    python -m tests.vm.capture_fixtures

Boots the lab with the discovery scenario (tests/vm/guest/scan.sh) and copies what the real
tools printed into tests/fixtures/lab-scan/, with versions.txt naming the kernel and tool
versions. README.md there lists the commands that produced each file.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from tests.lab.test_scan_lab import DISKS
from tests.vm.lab import GuestRun, Lab

FILES = [
    "raw-noudev.json", "raw-udev.json", "lvs.json", "pvs.json", "lsblk-noudev.json", "lsblk-udev.json",
    "bcache-super-show.txt", "bcache-sysfs.tsv", "make-bcache.txt", "versions.txt", "scan-udev.json",
    "scan-noudev.json",
]
DEST = Path(__file__).resolve().parents[1] / "fixtures" / "lab-scan"


def capture(boot: Callable[[], GuestRun], files: Sequence[str], dest: Path) -> int:
    """Copy ``files`` into ``dest`` from the out/ directory named on the command line, or from a
    fresh boot (``boot``)."""
    source = Path(sys.argv[1]) if len(sys.argv) > 1 else None
    if source is None:
        run = boot()
        if run.returncode != 0:
            print((run.out / "scenario.log").read_text()[-4000:])
            return 1
        source = run.out
    dest.mkdir(parents=True, exist_ok=True)
    for name in files:
        shutil.copy(source / name, dest / name)
        print(f"captured {dest / name}")
    return 0


def main() -> int:
    return capture(lambda: Lab(DISKS).run("scan.sh", timeout=900), FILES, DEST)


if __name__ == "__main__":
    raise SystemExit(main())
