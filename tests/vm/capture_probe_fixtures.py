"""Capture fio JSON from the lab's probe scenario as unit-test fixtures.

    python -m tests.vm.capture_probe_fixtures [OUT_DIR]

OUT_DIR is a kept probe run (tests/vm/last-probe-run, written by tests/lab/test_probe_lab.py);
without it, the lab is booted. Writes tests/fixtures/lab-probe/: one fio JSON per disk, as
fio printed it, and devices.json with each disk's kernel facts and what the disk really is in
the lab (the ground truth the classifier is tested against).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.lab.test_probe_lab import DISKS, EXPECTED
from tests.vm.lab import Lab

DEST = Path(__file__).resolve().parents[1] / "fixtures" / "lab-probe"
WWN_SERIAL = {"wwn:0x5000c500a1b2c3d4": "HDD0001"}


def main() -> int:
    if len(sys.argv) > 1:
        out = Path(sys.argv[1])
    else:
        run = Lab(DISKS).run("probe.sh", timeout=900)
        if run.returncode != 0:
            return 1
        out = run.out
    DEST.mkdir(parents=True, exist_ok=True)
    devices = {}
    for row in json.loads((out / "history-probes.json").read_text()):
        result = row["result"]
        identity = result["identity"]
        serial = WWN_SERIAL.get(identity, identity.split(":", 1)[1])
        if serial in devices or not result["complete"]:
            continue
        (DEST / f"fio-{serial}.json").write_text(json.dumps(row["fio"], indent=1) + "\n")
        devices[serial] = {
            "kernel_rotational": result["kernel_rotational"],
            "transport": result["transport"],
            "size_bytes": result["size_bytes"],
            "zero_reads": result["zero_reads"],
            "truth": EXPECTED.get(serial, "never-written disk"),
        }
        print(f"captured fio-{serial}.json")
    (DEST / "devices.json").write_text(json.dumps(devices, indent=1, sort_keys=True) + "\n")
    (DEST / "fio-version.txt").write_text((out / "fio-version.txt").read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
