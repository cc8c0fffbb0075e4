"""The capture service over a week at 1,000 IOPS: what it stores, and how long the analysis of
the week takes (issue 31's targets: at most 200 MB, analysed in at most 10 s).

    python -m bench.bench_capture [--hours 168] [--iops 1000] [--json]

A synthetic home server on a 4 TB disk, hour by hour: by day a Zipf(1.1) hot set of 20 GiB
(70% reads) beside a slowly moving set (the week's new files, 2 GiB a day); every night from 2
to 3 a sequential scan of 100 GiB in 1 MiB reads; on Sunday night a second, 200 GiB scan. Each
hour's requests go through the capture's own recorder (advisor/workload/capfile.py: stream
classes from every request, the hours' counts, sampling, framing, the budget), written to a
temporary folder; then `analyze` reads the folder as `cachewise analyze FOLDER` does.

Not measured here: the cost of reading the kernel's trace pipe (that is the capture's
overhead on the I/O it watches, a separate measurement on a loop device).

Measured on this machine (2026-11-27, another engineer's benchmarks running beside it), 168
hours at 1,000 IOPS (604.8 million requests): 667,331 kept at 1/512 (1/256 from the disk's size,
halved once for the sample's size), 5.9 MB stored (0.85 MB a day), the recorder at 9.6 million
requests a second (63 s for the week), the week's analysis in 0.45 s; its footprint 36.5 GB (the
20 GiB hot set and 14 GiB of moving files) and 859 GB bypassed (the scans, 800 GiB). Later the
same day, on a quiet machine, with the records compressed at zlib level 1 and the analysis
across time (168 hourly windows, 7 days and their phases, advisor/workload/periods.py): 6.1 MB
stored (0.9 MB a day), the recorder at 9.4 million requests a second, the analysis in 2.74 s.
On 2026-12-07 (smq's and bcache's replays in the analysis since): 6.05 MB stored, the recorder
at 8.1 million requests a second, the analysis in 3.36 s, and a resume's read of the week's
sampled units (what a capture restarted after a reboot reads before it traces) 0.24 s.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from advisor.workload import capfile, sampled
from advisor.workload.traces import REQUEST

DISK = 4 * 10**12
HOT = 20 << 30
MOVING_PER_DAY = 2 << 30
T0 = 1_790_000_000.0 - 1_790_000_000.0 % 86400  # a midnight


def hour_of_requests(rng: np.random.Generator, hour: int, iops: int) -> np.ndarray[Any, Any]:
    """One hour of the synthetic server's requests, in time order."""
    start = T0 + hour * 3600
    n = iops * 3600
    of_day, day = hour % 24, hour // 24
    scan_bytes = (200 << 30 if day % 7 == 6 else 100 << 30) if of_day == 2 else 0
    scans = min(n // 2, scan_bytes >> 20)
    rest = n - scans
    hot = (rng.zipf(1.1, rest).astype(np.uint64) * np.uint64(2654435761)) % np.uint64(HOT // 4096)
    moving = rng.random(rest) < 0.15
    new_at = np.uint64((HOT + day * MOVING_PER_DAY) // 4096)
    fresh = new_at + rng.integers(0, MOVING_PER_DAY // 4096, rest).astype(np.uint64)
    blocks = np.where(moving, fresh, hot)
    out = np.empty(n, REQUEST)
    out["t"][:rest] = start + np.sort(rng.random(rest)) * 3600
    out["offset"][:rest] = blocks * np.uint64(4096)
    out["length"][:rest] = 4096
    out["write"][:rest] = rng.random(rest) < 0.3
    if scans:
        base = np.uint64(1 << 40)
        out["t"][rest:] = start + np.linspace(0, 3599, scans)
        out["offset"][rest:] = base + np.arange(scans, dtype=np.uint64) * np.uint64(1 << 20)
        out["length"][rest:] = 1 << 20
        out["write"][rest:] = 0
        out = out[np.argsort(out["t"], kind="stable")]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hours", type=int, default=168)
    parser.add_argument("--iops", type=int, default=1000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    folder = Path(tempfile.mkdtemp(prefix="cachewise-bench-capture-"))
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        until = T0 + args.hours * 3600
        clock = [T0]
        meta = {"device": "wwn:bench", "size_bytes": DISK, "until": until}
        limits = capfile.Limits(until, 200 << 20)
        rec = capfile.Recorder(folder, fd, meta, capfile.initial_rate(DISK), limits, clock=lambda: clock[0])
        generating = recording = 0.0
        for hour in range(args.hours):
            t = time.perf_counter()
            reqs = hour_of_requests(rng, hour, args.iops)
            generating += time.perf_counter() - t
            t = time.perf_counter()
            for at in range(0, len(reqs), 600_000):  # ten minutes at a time
                part = reqs[at : at + 600_000]
                rec.add(part)
                clock[0] = float(part["t"][-1])
                rec.tick()
            recording += time.perf_counter() - t
        rec.close("duration")
        os.close(fd)
        stored = capfile.folder_bytes(folder)
        t = time.perf_counter()
        cap = capfile.read_capture(capfile.capture_files(folder))
        analysis = sampled.analyze_capture(cap, str(folder))
        analysing = time.perf_counter() - t
        t = time.perf_counter()  # what a capture resumed after a reboot reads first
        seen = capfile.units_seen(capfile.capture_files(folder), cap.threshold)
        resuming = time.perf_counter() - t
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    result = {
        "hours": args.hours,
        "iops": args.iops,
        "requests": analysis.requests,
        "kept": int(len(cap.requests)),
        "sample_rate": cap.rate,
        "stored_bytes": stored,
        "stored_per_day_bytes": round(stored / args.hours * 24),
        "recorder_seconds": round(recording, 1),
        "recorder_requests_per_s": round(analysis.requests / recording),
        "analysis_seconds": round(analysing, 2),
        "resume_read_seconds": round(resuming, 2),
        "resume_units_seen": len(seen),
        "footprint_bytes": analysis.footprint_bytes,
        "bypassed_bytes": analysis.bypassed_bytes,
        "generator_seconds": round(generating, 1),
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(
            f"{args.hours} h at {args.iops:,} IOPS: {analysis.requests:,} requests, {len(cap.requests):,} kept at "
            f"{cap.rate:.3g}; stored {stored / 1e6:,.1f} MB ({stored / args.hours * 24 / 1e6:,.1f} MB a day); "
            f"recorder {recording:,.1f} s ({analysis.requests / recording:,.0f} requests/s); "
            f"analysis {analysing:.2f} s (targets: 200 MB, 10 s); a resume reads the units seen in {resuming:.2f} s"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
