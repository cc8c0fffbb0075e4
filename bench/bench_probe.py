"""Probe duration per device class and classification accuracy, in the lab guest.

    python -m bench.bench_probe [KEPT_OUT_DIR]

Boots the lab (needs its packages; see README) with the five probe disks of
tests/lab/test_probe_lab.py (two of which lie about being rotational), probes them three
times, and prints wall time per probe by class against the 8 s budget, and how many of the
fifteen probes classified the disk as what it really is.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
from pathlib import Path

from tests.lab.test_probe_lab import EXPECTED, PROBED
from tests.vm.lab import Lab, missing_prerequisites

WWN_SERIAL = {"wwn:0x5000c500a1b2c3d4": "HDD0001"}
BUDGET_S = 8.0


def main() -> int:
    if len(sys.argv) > 1:
        out = Path(sys.argv[1])
    else:
        missing = missing_prerequisites()
        if missing:
            print("bench_probe: skipped, the lab needs: " + "; ".join(missing))
            return 0
        lab = Lab(PROBED)
        lab.create_images()
        for disk in PROBED:
            with lab.image(disk).open("r+b") as fh:
                fh.write(os.urandom(512 << 20))
        run = lab.run("probe_bench.sh", timeout=900)
        if run.returncode != 0:
            print((run.out / "scenario.log").read_text()[-3000:])
            return 1
        out = run.out
    times: dict[str, list[float]] = {}
    right = total = 0
    for path in sorted(out.glob("probe-*.json")):
        for r in json.loads(path.read_text())["results"]:
            serial = WWN_SERIAL.get(r["identity"], r["identity"].split(":", 1)[1])
            truth = EXPECTED[serial]
            times.setdefault(f"{truth} ({serial})", []).append(r["seconds"])
            total += 1
            right += r["classification"]["device_class"] == truth
    print(f"{'disk (what it is)':<22} {'median s':>9} {'max s':>7}  budget {BUDGET_S:g} s")
    for name, values in sorted(times.items()):
        flag = "" if max(values) <= BUDGET_S else "  OVER"
        print(f"{name:<22} {statistics.median(values):9.2f} {max(values):7.2f}{flag}")
    print(f"classification accuracy: {right}/{total} probes ({100 * right / max(total, 1):.0f}%)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
