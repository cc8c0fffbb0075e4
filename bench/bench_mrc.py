"""Miss-ratio curve speed, memory and accuracy against libCacheSim, measured in one run.

    python -m bench.bench_mrc

The trace: bounded Zipf(1.2), 10 million 4 KiB requests over 2.5 million blocks (seeded).
cachewise computes the whole LRU curve (cache sizes from 0.1% to 100% of the footprint, 50
or more) in one pass of exact stack distances; libCacheSim (PyPI `libcachesim`) simulates one
LRU cache per size, so it runs here at every tenth size and its time per size is scaled to
the whole curve for the speed ratio. Targets (issue 4): exact mode at most 15 s, peak memory
at most 1 GB, mean absolute hit-ratio error at most 1e-6. SHARDS mode is not implemented yet.
"""

from __future__ import annotations

import os
import resource
import tempfile
import time

import numpy as np

from advisor import mrc

N_REQUESTS = 10_000_000
N_BLOCKS = 2_500_000


def zipf_trace(n: int, universe: int, alpha: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    cdf = np.cumsum(np.arange(1, universe + 1, dtype=np.float64) ** -alpha)
    cdf /= cdf[-1]
    return rng.permutation(universe)[np.searchsorted(cdf, rng.random(n))].astype(np.int64)


def libcachesim_hit_ratios(trace: np.ndarray, sizes: list[int]) -> tuple[list[float], float]:
    import libcachesim as lcs

    with tempfile.TemporaryDirectory(dir="/dev/shm" if os.path.isdir("/dev/shm") else None) as tmp:
        path = os.path.join(tmp, "trace.bin")
        trace.astype("<u8").tofile(path)
        params = lcs.ReaderInitParam(binary_fmt_str="<Q", ignore_obj_size=True)
        params.obj_id_field = 1  # required: without it the C reader aborts the process
        reader = lcs.TraceReader(path, lcs.TraceType.BIN_TRACE, params)
        hits = []
        start = time.perf_counter()
        for size in sizes:
            cache = lcs.LRU(cache_size=int(size), hashpower=min(24, max(16, int(size).bit_length() + 1)))
            obj_miss, _ = cache.process_trace(reader)
            hits.append(1.0 - obj_miss)
        return hits, time.perf_counter() - start


def main() -> None:
    trace = zipf_trace(N_REQUESTS, N_BLOCKS, 1.2, seed=1)
    footprint = len(np.unique(trace))
    sizes = mrc.default_sizes(footprint)
    mrc.exact_curve(trace[:1000], sizes[:3])  # compile (or load the cached compilation) first
    start = time.perf_counter()
    curve = mrc.exact_curve(trace, sizes)
    exact_s = time.perf_counter() - start
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    sample = list(range(0, len(sizes), 10)) + [len(sizes) - 1]
    sample_sizes = [int(sizes[i]) for i in sample]
    try:
        theirs, lcs_s = libcachesim_hit_ratios(trace, sample_sizes)
    except ImportError:
        print("libcachesim is not installed (pip install 'cachewise[bench]'); accuracy not checked")
        theirs, lcs_s = [], 0.0
    print(f"trace: Zipf(1.2), {N_REQUESTS:,} requests over {N_BLOCKS:,} blocks, footprint {footprint:,} blocks")
    print(f"{'cache blocks':>13} {'cachewise':>10} {'libCacheSim':>12} {'difference':>11}")
    errors = []
    for i, size in enumerate(sample_sizes):
        ours = float(curve.hit_ratio[sample[i]])
        if theirs:
            errors.append(abs(ours - theirs[i]))
            print(f"{size:13,d} {ours:10.6f} {theirs[i]:12.6f} {ours - theirs[i]:11.2e}")
        else:
            print(f"{size:13,d} {ours:10.6f}")
    print(f"cachewise exact: whole curve ({len(sizes)} sizes) in {exact_s:.2f} s (target 15 s), "
          f"peak memory {peak_mib:,.0f} MiB (target 1024)")
    if theirs:
        per_size = lcs_s / len(sample_sizes)
        whole = per_size * len(sizes)
        print(f"libCacheSim LRU: {per_size:.2f} s per size, {N_REQUESTS / per_size / 1e6:.1f} M requests/s; "
              f"the whole curve would take {whole:.1f} s")
        print(f"speed ratio (libCacheSim whole curve / cachewise): {whole / exact_s:.1f}x")
        print(f"mean absolute error: {np.mean(errors):.2e} (target 1e-6); max {np.max(errors):.2e}")


if __name__ == "__main__":
    main()
