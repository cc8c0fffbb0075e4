"""Discovery speed: how long `cachewise scan` takes, and how it grows with many devices.

    python -m bench.bench_discovery

Prints the live scan time on this machine (full and quick collect), and build time for a
lab snapshot replicated to a few hundred devices (a large JBOD), per device. The TUI must
show the Disks screen within 2 s and a hot-plugged disk within 2 s; these figures show the
margin.
"""

from __future__ import annotations

import copy
import statistics
import time
import tracemalloc
from pathlib import Path

from advisor.disks.collect import RawSystem, collect
from advisor.disks.discovery import build_inventory

LAB = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "lab-scan" / "raw-udev.json"


def timed(fn, repeat: int = 5) -> float:  # type: ignore[no-untyped-def]
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def replicate(raw: RawSystem, copies: int) -> RawSystem:
    big = copy.deepcopy(raw)
    big.blocks = []
    for i in range(copies):
        for block in raw.blocks:
            b = copy.deepcopy(block)
            b.name = f"{block.name}-{i}"
            b.devnum = f"{block.devnum}-{i}"
            b.parent = f"{block.parent}-{i}" if block.parent else None
            b.holders = [f"{h}-{i}" for h in block.holders]
            b.slaves = [f"{s}-{i}" for s in block.slaves]
            big.blocks.append(b)
    return big


def main() -> None:
    full = timed(lambda: collect(), repeat=3)
    last = collect()
    quick = timed(lambda: collect(tools=False, reuse=last), repeat=5)
    inv = build_inventory(last)
    print(f"live scan on this machine ({len(inv.devices)} block devices):")
    print(f"  full collect + build   {full * 1000:8.1f} ms")
    print(f"  quick collect (no tools) {quick * 1000:6.1f} ms")
    raw = RawSystem.load(LAB)
    print(f"build_inventory on the lab snapshot replicated ({len(raw.blocks)} devices per copy):")
    print(f"  {'devices':>8} {'ms':>9} {'us/device':>10} {'peak MiB':>9}")
    for copies in (1, 10, 40):
        big = replicate(raw, copies)
        tracemalloc.start()
        seconds = timed(lambda big=big: build_inventory(big), repeat=3)  # type: ignore[misc]
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        n = len(big.blocks)
        print(f"  {n:8d} {seconds * 1000:9.2f} {seconds / n * 1e6:10.1f} {peak / 2**20:9.2f}")


if __name__ == "__main__":
    main()
