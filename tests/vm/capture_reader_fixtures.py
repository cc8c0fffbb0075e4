"""Capture the readers' fixtures (tests/fixtures/lab-readers/) in the lab.

    python -m tests.vm.capture_reader_fixtures

Boots the guest with the scenario tests/vm/guest/capture_readers.sh and copies what it wrote.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.vm.lab import HDD, SATA_SSD, Lab, LabDisk

DEST = Path(__file__).resolve().parents[1] / "fixtures" / "lab-readers"
FILES = ("versions.txt", "lvs-json-std-2.03.16.txt", "lvs-cached.json", "dmsetup-status-cache-writeback.txt",
         "dmsetup-status-writecache.txt", "bcache-sysfs-writeback.json")


def main() -> int:
    disks = [HDD, SATA_SSD, LabDisk("bhdd", "BCB0001", "512M", iops_limit=150),
             LabDisk("bssd", "BCC0001", "384M", rotation_rate=1)]
    run = Lab(disks).run("capture_readers.sh", timeout=900)
    if run.returncode != 0:
        print((run.out / "scenario.log").read_text()[-4000:])
        return 1
    DEST.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        shutil.copy(run.out / name, DEST / name)
        print(f"captured {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
