"""Capture unit-test fixtures from the real tools in the lab guest.

    python -m tests.vm.capture_fixtures

Boots the lab with the discovery scenario (tests/vm/guest/scan.sh) and copies what the real
tools printed into tests/fixtures/lab-scan/, with versions.txt naming the kernel and tool
versions. README.md there lists the commands that produced each file.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from tests.lab.test_scan_lab import DISKS
from tests.vm.lab import Lab

FILES = [
    "raw-noudev.json", "raw-udev.json", "lvs.json", "pvs.json", "lsblk-noudev.json", "lsblk-udev.json",
    "bcache-super-show.txt", "bcache-sysfs.tsv", "make-bcache.txt", "versions.txt", "scan-udev.json",
    "scan-noudev.json",
]
DEST = Path(__file__).resolve().parents[1] / "fixtures" / "lab-scan"


def main() -> int:
    source = Path(sys.argv[1]) if len(sys.argv) > 1 else None
    if source is None:
        run = Lab(DISKS).run("scan.sh", timeout=900)
        if run.returncode != 0:
            print((run.out / "scenario.log").read_text()[-4000:])
            return 1
        source = run.out
    DEST.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        shutil.copy(source / name, DEST / name)
        print(f"captured {DEST / name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
