"""Miss-ratio curve speed, memory and accuracy against libCacheSim, measured in one run.

    python -m bench.bench_mrc

The trace: bounded Zipf(1.2), 10 million 4 KiB requests over 2.5 million blocks (seeded).
cachewise computes the whole LRU curve (cache sizes from 0.1% to 100% of the footprint, 50
or more) in one pass of exact stack distances; libCacheSim (PyPI `libcachesim`) simulates one
LRU cache per size, so it runs here at every tenth size and its time per size is scaled to
the whole curve for the speed ratio. Targets (issue 4): exact mode at most 15 s and SHARDS
mode at most 2 s for the whole curve, peak memory at most 1 GB; mean absolute hit-ratio
error against libCacheSim at most 1e-6 (exact) and 0.005 (SHARDS). Then a 100-million-request
trace, generated and fed in chunks of 10 million, in SHARDS mode: at most 20 s, with the
peak memory of that run alone (a separate process).
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

from advisor.workload import mrc

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


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def stream_100m() -> None:
    """Run in its own process, so its peak memory is its own."""
    rng = np.random.default_rng(2)
    cdf = np.cumsum(np.arange(1, N_BLOCKS + 1, dtype=np.float64) ** -1.2)
    cdf /= cdf[-1]
    perm = rng.permutation(N_BLOCKS)
    total = 100_000_000
    sampler = mrc.ShardsSampler(mrc.shards_rate(total))
    mrc.exact_curve(np.arange(100, dtype=np.int64), np.arange(1, 5, dtype=np.int64))  # compile first
    spent = 0.0
    seen = np.zeros(N_BLOCKS, dtype=bool)
    for _ in range(total // 10_000_000):
        chunk = perm[np.searchsorted(cdf, rng.random(10_000_000))].astype(np.int64)
        start = time.perf_counter()
        sampler.feed(chunk)
        seen[chunk] = True
        spent += time.perf_counter() - start
    start = time.perf_counter()
    curve = sampler.curve(mrc.default_sizes(int(seen.sum())))
    spent += time.perf_counter() - start
    print(
        f"SHARDS, 100,000,000 requests fed in chunks of 10 million: {spent:.2f} s (target 20 s), "
        f"{curve.samples} samples at rate {curve.rate:.4f}, {len(curve.sizes)} sizes, "
        f"peak memory of that process {peak_mib():,.0f} MiB (trace generation included)"
    )


def main() -> None:
    if sys.argv[1:] == ["--stream-100m"]:
        stream_100m()
        return
    trace = zipf_trace(N_REQUESTS, N_BLOCKS, 1.2, seed=1)
    footprint = len(np.unique(trace))
    sizes = mrc.default_sizes(footprint)
    mrc.exact_curve(trace[:1000], sizes[:3])  # compile (or load the cached compilation) first
    start = time.perf_counter()
    curve = mrc.exact_curve(trace, sizes)
    exact_s = time.perf_counter() - start
    exact_peak = peak_mib()
    start = time.perf_counter()
    shards = mrc.lru_curve(trace, sizes, "shards")
    shards_s = time.perf_counter() - start
    sample = list(range(0, len(sizes), 10)) + [len(sizes) - 1]
    sample_sizes = [int(sizes[i]) for i in sample]
    try:
        theirs, lcs_s = libcachesim_hit_ratios(trace, sample_sizes)
    except ImportError:
        print("libcachesim is not installed (pip install 'cachewise[bench]'); accuracy not checked")
        theirs, lcs_s = [], 0.0
    print(f"trace: Zipf(1.2), {N_REQUESTS:,} requests over {N_BLOCKS:,} blocks, footprint {footprint:,} blocks")
    print(f"{'cache blocks':>13} {'libCacheSim':>12} {'exact':>10} {'SHARDS':>10}")
    exact_err, shards_err = [], []
    for i, size in enumerate(sample_sizes):
        ours, sampled = float(curve.hit_ratio[sample[i]]), float(shards.hit_ratio[sample[i]])
        peer = f"{theirs[i]:12.6f}" if theirs else f"{'-':>12}"
        if theirs:
            exact_err.append(abs(ours - theirs[i]))
            shards_err.append(abs(sampled - theirs[i]))
        print(f"{size:13,d} {peer} {ours:10.6f} {sampled:10.6f}")
    print(
        f"exact:  whole curve ({len(sizes)} sizes) in {exact_s:.2f} s (target 15 s), "
        f"peak memory {exact_peak:,.0f} MiB (target 1024, trace generation included)"
    )
    print(
        f"SHARDS: whole curve in {shards_s:.2f} s (target 2 s), {shards.samples} samples at rate {shards.rate:.3f}; "
        f"against exact at all {len(sizes)} sizes: mean absolute error "
        f"{np.abs(shards.hit_ratio - curve.hit_ratio).mean():.4f}"
    )
    if theirs:
        per_size = lcs_s / len(sample_sizes)
        whole = per_size * len(sizes)
        print(
            f"libCacheSim LRU: {per_size:.2f} s per size ({N_REQUESTS / per_size / 1e6:.1f} M requests/s); "
            f"the whole curve would take {whole:.1f} s"
        )
        print(
            f"speed ratio, libCacheSim whole curve / cachewise: exact {whole / exact_s:.1f}x, "
            f"SHARDS {whole / shards_s:.1f}x"
        )
        print(
            f"mean absolute error against libCacheSim: exact {np.mean(exact_err):.2e} (target 1e-6), "
            f"SHARDS {np.mean(shards_err):.4f} (target 0.005)"
        )
    subprocess.run([sys.executable, "-m", "bench.bench_mrc", "--stream-100m"], check=True)


if __name__ == "__main__":
    main()
