"""Capture the dead-SSD fixtures (tests/fixtures/lab-deadssd/) in the lab.

    python -m tests.vm.capture_deadssd_fixtures [OUT_DIR]

Boots the guest with tests/vm/guest/capture_deadssd.sh (one vCPU, so that it can run beside
another guest), which pulls the cache SSD of each backend under load and records what the
kernel, lvm2, bcache and cachewise said; or takes OUT_DIR, the out/ directory of such a run.
tests/fixtures/lab-deadssd/README.md says what each file holds.
"""

from __future__ import annotations

from pathlib import Path

from tests.vm.capture_fixtures import capture
from tests.vm.lab import HDD, Lab, LabDisk

DISKS = [
    LabDisk(HDD.name, HDD.serial, "4G", HDD.bus, HDD.rotation_rate, 150, HDD.wwn),
    *(LabDisk(f"ssd{x.lower()}", f"SSD{x}001", "256M", rotation_rate=1) for x in "ABC"),
    *(LabDisk(f"ssd{x.lower()}", f"SSD{x}001", "1G", rotation_rate=1) for x in "DE"),
    *(LabDisk(f"ssdf{n}", f"SSDF00{n}", "256M", rotation_rate=1) for n in (1, 2, 3)),
]
FILES: tuple[str, ...] = ("versions.txt",)
DEST = Path(__file__).resolve().parents[1] / "fixtures" / "lab-deadssd"


def main() -> int:
    return capture(lambda: Lab(DISKS, cpus=1).run("capture_deadssd.sh", timeout=3000), FILES, DEST)


if __name__ == "__main__":
    raise SystemExit(main())
