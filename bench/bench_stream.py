"""An exact analysis of a trace too long to hold: 100 million requests over 10 million blocks.

    python -m bench.bench_stream [--requests N] [--blocks N]

The trace (issue 31): a cachewise trace file of 100 million 4 KiB requests (2.1 GB), 30% of
them writes: 90% drawn Zipf(1.0) over 10 million blocks laid over a 40 GiB region, the other
10% a first touch of every one of those blocks in a random order spread over the whole trace
(a cold tail a backup walks), so the footprint is exactly 10 million blocks. It is written to
a temporary file first (not timed). Then, each in its own process so that its peak memory is
its own, `cachewise analyze --mode exact` (two readings of the file: advisor.workload.analysis
analyze_stream_exact) and, as the peer measured in the same run, the SHARDS stream that `auto`
uses on such a trace (one reading, a sampled curve). Targets: the exact analysis in at most
60 s and 1 GB peak memory (resident set, VmHWM); the SHARDS curve's mean absolute hit-ratio error
against the exact one is printed beside.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from advisor.workload.traces import REQUEST, write_header

PIECE = 10_000_000  # requests generated at a time


def generate(path: Path, requests: int, blocks: int, seed: int = 31) -> None:
    """The trace described above, written in pieces (its generation holds about 1 GB)."""
    rng = np.random.default_rng(seed)
    cdf = np.cumsum(np.arange(1, blocks + 1, dtype=np.float64) ** -1.0)
    cdf /= cdf[-1]
    layout = rng.permutation(blocks).astype(np.uint64)  # rank -> block: the hot blocks scattered
    tail = rng.permutation(blocks).astype(np.uint64)  # the order the cold walk touches them
    walk = np.sort(rng.choice(requests, size=blocks, replace=False))  # where in the trace it does
    walked = 0
    with path.open("wb") as fh:
        write_header(fh, {"device": "/dev/bench", "size_bytes": blocks * 4096, "generator": "bench_stream"})
        for first in range(0, requests, PIECE):
            n = min(PIECE, requests - first)
            req = np.zeros(n, REQUEST)
            req["t"] = (first + np.arange(n)) * 1e-3
            req["offset"] = layout[np.searchsorted(cdf, rng.random(n))] * 4096
            here = walk[(walk >= first) & (walk < first + n)]
            req["offset"][here - first] = tail[walked : walked + len(here)] * 4096
            walked += len(here)
            req["length"] = 4096
            req["write"] = rng.random(n) < 0.3
            req.tofile(fh)


def peak_mib() -> float:
    """This process's peak resident set (VmHWM): getrusage's ru_maxrss would carry the parent's
    peak (the trace's generation) over the exec that started it."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def measure(path: Path, mode: str) -> None:
    """Run in its own process: analyse, print one JSON line of figures."""
    from advisor.workload import analysis, exact

    exact.load()  # compiled (or loaded from numba's cache) before the clock starts
    analysis._tally_compiled()
    start = time.perf_counter()
    result, _ = analysis.analyze_path(path, 4096, mode)  # type: ignore[arg-type]
    spent = time.perf_counter() - start
    print(
        json.dumps(
            {
                "mode": result.curve_mode,
                "seconds": spent,
                "peak_mib": peak_mib(),
                "requests": result.requests,
                "footprint": result.footprint_blocks,
                "chunk_footprint": result.chunk_footprint_blocks,
                "sizes": result.curve_sizes_blocks,
                "hit": result.curve_hit_ratio,
            }
        )
    )


def run(path: Path, mode: str) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-m", "bench.bench_stream", "--measure", str(path), mode],
        check=True,
        capture_output=True,
        text=True,
    )
    figures: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=100_000_000)
    parser.add_argument("--blocks", type=int, default=10_000_000)
    parser.add_argument("--measure", nargs=2, metavar=("TRACE", "MODE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        measure(Path(args.measure[0]), args.measure[1])
        return
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        path = Path(tmp) / "long.cwtrace"
        start = time.perf_counter()
        generate(path, args.requests, args.blocks)
        print(
            f"trace: {args.requests:,} requests over {args.blocks:,} blocks, {path.stat().st_size / 1e9:.2f} GB, "
            f"written in {time.perf_counter() - start:.1f} s"
        )
        exact_run = run(path, "exact")
        shards_run = run(path, "shards")
    hit_exact = np.asarray(exact_run["hit"])
    hit_shards = np.asarray(shards_run["hit"])
    exact_s, shards_s = float(str(exact_run["seconds"])), float(str(shards_run["seconds"]))
    error = np.abs(hit_shards - hit_exact).mean() if len(hit_shards) == len(hit_exact) else float("nan")
    print(
        f"exact, streamed: {exact_s:.1f} s (target 60 s), peak memory {exact_run['peak_mib']:,.0f} MiB "
        f"(target 1024); footprint {exact_run['footprint']:,} blocks, {exact_run['chunk_footprint']:,} 64 KiB "
        f"chunks, {len(hit_exact)} curve sizes"
    )
    print(
        f"SHARDS, streamed (the peer, same file): {shards_s:.1f} s, peak memory {shards_run['peak_mib']:,.0f} MiB; "
        f"time exact / SHARDS {exact_s / shards_s:.2f}; SHARDS' mean absolute hit-ratio error against the exact "
        f"curve {error:.4f}"
    )


if __name__ == "__main__":
    main()
