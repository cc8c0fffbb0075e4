"""Capture discovery fixtures of a Proxmox-style thin pool, bare and with its data cached
(tests/fixtures/lab-thin/).

    python -m tests.vm.capture_thin_fixtures [OUT_DIR]

Boots the lab with tests/vm/guest/thin_probe.sh (a VG `pve` on the HDD, a 512 MiB thin pool
`pve/data`, a thin LV with ext4 and files; then a 64 MiB writeback cache pool on the SSD
attached to the thin pool, which lvm2 attaches to its data LV `pve/data_tdata`), or takes
OUT_DIR, the out/ directory such a run left, and copies the raw discovery snapshots it saved
with versions.txt.
"""

from __future__ import annotations

from pathlib import Path

from tests.vm.capture_fixtures import capture
from tests.vm.lab import HDD, SATA_SSD, Lab, LabDisk

FILES = ("raw-thin.json", "raw-cached.json", "versions.txt")
DEST = Path(__file__).resolve().parents[1] / "fixtures" / "lab-thin"
DISKS = [
    LabDisk(HDD.name, HDD.serial, "1G", HDD.bus, HDD.rotation_rate, None, HDD.wwn),
    LabDisk(SATA_SSD.name, SATA_SSD.serial, "256M", SATA_SSD.bus, SATA_SSD.rotation_rate, model=SATA_SSD.model),
]


def main() -> int:
    return capture(lambda: Lab(DISKS).run("thin_probe.sh", timeout=1100), FILES, DEST)


if __name__ == "__main__":
    raise SystemExit(main())
