"""`cachewise analyze` of a 10-million-line fio iolog end to end, beside libCacheSim reading the
same text, measured in one run.

    python -m bench.bench_analyze [--repeat N] [--json]

The trace: a fio iolog version 3 (timestamps, 70% reads), 10 million 4 KiB requests drawn from
a bounded Zipf(1.2) over 2.5 million blocks (seeded), about 400 MB of text. Measured:
- `cachewise analyze FILE --json` as a user runs it (a new process: Python start-up, reading the
  text, the exact LRU curves at 4 KiB and at dm-cache's 64 KiB chunks, the hot-data ratio, the
  analysis recorded in a history database with the trace's sha256), wall time and peak memory
  (the child's ru_maxrss), once with numba's cache empty (the first run on a machine compiles the
  loops), then warm N times (3 by default), each run beside one of libCacheSim's;
- libCacheSim (PyPI `libcachesim`) parsing the same text with its CSV reader (space-delimited,
  the offset as the object id) and simulating one LRU cache, at the curve's size nearest a
  tenth of the footprint: its time, and its hit ratio against cachewise's at that size;
- `cachewise recommend --trace FILE` against the lab's discovery snapshot, end to end.
Printed: the medians of the warm analyses and of libCacheSim's runs, the median of the runs'
ratios (analysis / libCacheSim, each pair measured back to back), the largest peak of all the
analyses; --json adds them as one JSON object. Timings on these 2-core machines move with
whatever else runs (a lab guest, another engineer's tests): compare the ratio, not the seconds.

Targets (issue 31): the warm analysis in no more time than libCacheSim's one LRU size (ratio at
or below 1.0) and at most 600 MB; the recommendation at most 10 s.
Measured 2026-11-27, three runs of the bench on a quiet machine (medians): warm analysis 2.05 s,
libCacheSim 2.74 s, ratio 0.74 (0.72 to 0.76), peak 577 MiB (the cold run's, numba compiling;
505 MiB warm), cold 9.0 s, recommend 1.9 to 3.2 s. On a busy machine (a CI run's tests on
both cores) three runs gave ratios of 1.12, 1.16 and 1.24 (warm 3.3 s, libCacheSim 2.85 s, peak
564 MiB): the analysis needs the second core, which libCacheSim does not, so it loses more when
that core is taken (it uses about 3.1 s of CPU to libCacheSim's 2.8 s).
How (issue 31): the iolog's usual line read in one go, no newline count first, 4 MiB blocks;
the request figures and the stream detector on a second thread following the reader; the
exact curves by compiled passes over the request records (advisor/workload/exact.py: blocks
numbered by a hash table, classes at the curve's sizes by bucket markers counted as they come),
4 KiB and 64 KiB side by side on two threads; the sha256 for the history made beside; numba
loaded with the garbage collector held off and its objects frozen at exit; numpy's huge-page
advice held off. The analysis's JSON is the same to the byte (tests/unit/test_exact.py).
History: issue 31 found 5.3 s against libCacheSim's 2.4 s (2.2x). Targets before it (issue 13):
the analysis at most 7 s and 600 MB, chunk curve included; the recommendation at most 10 s.
Measured then, with the read curves and the write backlog (issue 26): 6.6 s and 568 MiB with
libCacheSim at 2.5 s in the same run (2.67x its one size); later, on a slower hour of this
machine, 8.0 s and 585 MiB with libCacheSim at 3.0 s (2.66x): the ratio holds. Before the read
curves: 6.8 s and 554 MiB, recommend 6.6 s (6.0 s and 5.5 s before the stream detector and the
steady curves). Before the compiled reader (advisor/workload/fastparse.py) the analysis took
24.9 s and 868 MB, 19 s of it in the Python line reader.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

N_REQUESTS = 10_000_000
N_BLOCKS = 2_500_000
REPO = Path(__file__).resolve().parents[1]
SNAPSHOT = REPO / "tests" / "fixtures" / "lab-scan" / "raw-udev.json"


def write_iolog(path: Path, n: int = N_REQUESTS, seed: int = 5) -> None:
    rng = np.random.default_rng(seed)
    cdf = np.cumsum(np.arange(1, N_BLOCKS + 1, dtype=np.float64) ** -1.2)
    cdf /= cdf[-1]
    blocks = rng.permutation(N_BLOCKS)[np.searchsorted(cdf, rng.random(n))]
    times = np.cumsum(rng.integers(50, 400, n))
    writes = rng.random(n) < 0.3
    with path.open("w") as fh:
        fh.write("fio version 3 iolog\n0 /dev/sdb add\n0 /dev/sdb open\n")
        for at in range(0, n, 1_000_000):
            part = zip(
                times[at : at + 1_000_000].tolist(),
                writes[at : at + 1_000_000].tolist(),
                blocks[at : at + 1_000_000].tolist(),
                strict=True,
            )
            fh.write("".join(f"{t} /dev/sdb {'write' if w else 'read'} {b * 4096} 4096\n" for t, w, b in part))
        fh.write(f"{int(times[-1])} /dev/sdb close\n")


def timed_child(argv: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """(wall seconds, peak MiB, stdout) of a command run as its own process: os.wait4 gives that
    one child's resource usage."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} failed: {err.read()[-2000:]}")
        return seconds, usage.ru_maxrss / 1024, out.read()


def libcachesim_hit_ratio(path: Path, size: int) -> tuple[float, float]:
    import libcachesim as lcs

    params = lcs.ReaderInitParam(
        delimiter=" ",
        has_header=True,
        has_header_set=True,
        obj_id_is_num=True,
        obj_id_is_num_set=True,
        ignore_obj_size=True,
    )
    params.time_field, params.obj_id_field, params.obj_size_field = 1, 4, 5
    reader = lcs.TraceReader(str(path), lcs.TraceType.CSV_TRACE, params)
    start = time.perf_counter()
    cache = lcs.LRU(cache_size=int(size), hashpower=min(24, max(16, int(size).bit_length() + 1)))
    miss, _ = cache.process_trace(reader)
    return 1.0 - miss, time.perf_counter() - start


def median(values: list[float]) -> float:
    return float(statistics.median(values))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--repeat", type=int, default=3, help="warm analyses, each beside a libCacheSim run (default 3)"
    )
    parser.add_argument("--json", action="store_true", help="also print the figures as one JSON object, last")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "zipf.iolog"
        start = time.perf_counter()
        write_iolog(path)
        print(
            f"trace: {N_REQUESTS:,} lines, {path.stat().st_size / 1e6:.0f} MB, written in "
            f"{time.perf_counter() - start:.1f} s"
        )
        # As a user's install has it: Python's bytecode written once and read after (a shell that
        # says not to write it would make every warm run compile cachewise's modules again).
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["NUMBA_CACHE_DIR"] = str(Path(tmp) / "numba-cache")
        # Recorded as a user's analysis is, in a history database of its own.
        analyze = [sys.executable, "-m", "cachewise", "--state-dir", tmp, "analyze", str(path), "--json"]
        cold_s, cold_mib, _ = timed_child(analyze, env)
        warm: list[tuple[float, float]] = []
        peers: list[float] = []
        for _ in range(max(args.repeat, 1)):  # each warm analysis beside a libCacheSim run, in turn
            warm_s, warm_mib, out = timed_child(analyze, env)
            result = json.loads(out)
            sizes, hits = result["curve_sizes_blocks"], result["curve_hit_ratio"]
            pick = min(range(len(sizes)), key=lambda i: abs(sizes[i] - result["footprint_blocks"] / 10))
            lcs_hit, lcs_s = libcachesim_hit_ratio(path, sizes[pick])
            warm.append((warm_s, warm_mib))
            peers.append(lcs_s)
        recommend = [
            sys.executable,
            "-m",
            "cachewise",
            "--state-dir",
            tmp,
            "recommend",
            "--slow",
            "/dev/labvg/data",
            "--fast",
            "/dev/nvme0n1",
            "--trace",
            str(path),
            "--from-raw",
            str(SNAPSHOT),
            "--json",
        ]
        rec_s, rec_mib, _ = timed_child(recommend, env)
    warm_s = median([w[0] for w in warm])
    lcs_s = median(peers)
    ratio = median([w[0] / p for w, p in zip(warm, peers, strict=True)])
    peak = max([cold_mib] + [w[1] for w in warm])
    runs = f"median of {len(warm)}" if len(warm) > 1 else "one run"
    print(f"cachewise analyze, numba cache empty: {cold_s:5.1f} s, {cold_mib:4.0f} MiB peak")
    print(f"cachewise analyze, warm:              {warm_s:5.1f} s, {max(w[1] for w in warm):4.0f} MiB peak  ({runs})")
    print(f"libCacheSim, same text, one LRU size: {lcs_s:5.1f} s  ({runs})")
    print(f"ratio analyze / libCacheSim:          {ratio:5.2f}  (median of the runs' ratios; target 1.0)")
    print(f"peak memory:                          {peak:5.0f} MiB  (the largest of the runs; target 600)")
    print(
        f"hit ratio at {sizes[pick]:,} blocks: cachewise {hits[pick]:.6f}, libCacheSim {lcs_hit:.6f} "
        f"(difference {abs(hits[pick] - lcs_hit):.2e})"
    )
    print(f"cachewise recommend --trace:          {rec_s:5.1f} s, {rec_mib:4.0f} MiB peak  (target 10 s)")
    ok = ratio <= 1.0 and peak <= 600 and rec_s <= 10 and abs(hits[pick] - lcs_hit) < 1e-4
    print("targets met" if ok else "TARGETS MISSED")
    if args.json:
        figures = {
            "analyze_cold_s": round(cold_s, 3),
            "analyze_warm_s": [round(w[0], 3) for w in warm],
            "libcachesim_s": [round(p, 3) for p in peers],
            "ratio": round(ratio, 3),
            "peak_mib": round(peak, 1),
            "recommend_s": round(rec_s, 3),
            "hit_ratio_difference": abs(hits[pick] - lcs_hit),
            "targets_met": ok,
        }
        print(json.dumps(figures))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
