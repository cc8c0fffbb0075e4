"""Analysing a capture, which holds a spatial sample of the requests (advisor/workload/capfile.py).

The sample is analysed as any trace is, and every size is then scaled by 1/rate: a cache of
S blocks over the whole device behaves as one of S x rate blocks over the sample (SHARDS,
Waldspurger et al., FAST '15, for LRU; "miniature simulation", Waldspurger et al., USENIX ATC
'17, for other policies, which is how the smq and bcache replays are read). The request
figures (the mix, the bytes, the sequential share, what bcache bypasses) are not estimated from
the sample: the capture counted every request in its hours' summaries. Requests past the
sequential cutoff were marked at capture time, from the whole stream (sampling breaks streams
apart), and are left out of the curves as the analysis of a full trace leaves them out.

What the sample cannot give is left out rather than guessed: the write backlog (it depends on
the exact order of every write) and the coarser chunk curves (computed from the whole footprint).

The capture across time (its windows, phases and days) is advisor/workload/periods.py's, kept in
the analysis' ``periods``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from advisor.workload import capfile, periods
from advisor.workload.analysis import COLD_LIMIT, Analysis, CoarseCurve, analyze
from advisor.workload.streams import StreamDetector
from advisor.workload.traces import REQUEST, ImportStats, Trace


def analyze_capture(
    capture: capfile.Capture, source: str, block_size: int = 4096, mode: Any = "auto", replay_sizes: Sequence[int] = ()
) -> Analysis:
    """The analysis of a capture, at full scale; ``replay_sizes``: cache sizes (bytes, at full
    scale) the replays run at besides their own (analysis.analyze's)."""
    reqs = capture.requests
    every = np.empty(len(reqs), REQUEST)  # the sample as plain requests, streams too (the disk's)
    for name in REQUEST.names or ():
        every[name] = reqs[name]
    plain = every[reqs["stream"] != StreamDetector.BYPASSED]  # those a cache would see
    if not len(plain):
        raise ValueError("the capture holds no sampled requests that a cache would see")
    stats = ImportStats(lines=len(reqs), requests=len(reqs))
    size = capture.meta.get("size_bytes")
    meta = {"size_bytes": size} if isinstance(size, int) and not isinstance(size, bool) and size > 0 else {}
    trace = Trace(plain, "capture", source, stats, meta)
    scaled = [round(b * capture.rate) for b in replay_sizes]  # a cache of S stands as S x rate in the sample
    sample = analyze(trace, block_size, mode, sequential_cutoff=0, disk=every, replay_sizes=scaled)
    return dataclasses.replace(
        scale(sample, capture), periods=periods.periods(capture.requests, capture.rate, capture.summaries)
    )


def _up(n: int | float, rate: float) -> int:
    return round(n / rate)


def scale(a: Analysis, capture: capfile.Capture) -> Analysis:
    """The sample's analysis ``a`` at the whole device's scale (see the module's doc)."""
    rate = capture.rate
    hours = capture.summaries
    total = sum(int(h.get("requests", 0)) for h in hours)
    counted = sum(int(h.get("requests", 0)) - int(h.get("bypassed", 0)) for h in hours)
    # the sample's requests stand for this many each: the counts it holds beside the whole's
    per = counted / a.requests if counted > 0 and a.requests else 1 / rate
    accesses = round(a.block_accesses * per)
    sampled = sum(a.replay_window_requests)
    every = total / sampled if total > 0 and sampled else 1 / rate
    footprint = _up(a.footprint_blocks, rate)
    scaled: dict[str, Any] = {
        "curve_mode": f"sampled ({a.curve_mode})",
        "curve_sample_rate": a.curve_sample_rate * rate,
        "block_accesses": accesses,
        "size_histogram": {k: round(v * per) for k, v in a.size_histogram.items()},
        "footprint_blocks": footprint,
        "footprint_bytes": _up(a.footprint_bytes, rate),
        "curve_sizes_blocks": [_up(x, rate) for x in a.curve_sizes_blocks],
        "hot_blocks": [_up(x, rate) for x in a.hot_blocks],
        "chunk_curve_sizes_blocks": [_up(x, rate) for x in a.chunk_curve_sizes_blocks],
        "chunk_footprint_blocks": _up(a.chunk_footprint_blocks, rate),
        "smq_sizes_blocks": [_up(x, rate) for x in a.smq_sizes_blocks],
        "bcache_sizes_bytes": [_up(x, rate) for x in a.bcache_sizes_bytes],
        # the windows count every sampled request, streams too: each stands for the hours' requests
        # over the sample's
        "replay_window_requests": [round(x * every) for x in a.replay_window_requests],
        "replay_window_reads": [round(x * every) for x in a.replay_window_reads],
        "coarse_chunk_curves": list[CoarseCurve](),
        "write_drain_rates": [],
        "write_backlog_bytes": [],
        "cold_miss_share": round(min(1.0, footprint / accesses), 6) if accesses else 0.0,
        # the sample's share of first touches is distinct / accesses; the whole's is (distinct /
        # rate) / (accesses x per)
        "chunk_cold_miss_share": round(min(1.0, a.chunk_cold_miss_share / (per * rate)), 6) if per else 0.0,
        "too_short": accesses > 0 and footprint / accesses > COLD_LIMIT,
    }
    if total:
        scaled |= _adjusted(a, rate, hours)
        duration = _active_seconds(hours) or a.duration_s
        scaled |= {
            "requests": total,
            "read_requests": sum(int(h.get("reads", 0)) for h in hours),
            "write_requests": sum(int(h.get("writes", 0)) for h in hours),
            "read_bytes": sum(int(h.get("read_bytes", 0)) for h in hours),
            "write_bytes": sum(int(h.get("write_bytes", 0)) for h in hours),
            "sequential_share": sum(int(h.get("sequential", 0)) for h in hours) / total,
            "bypassed_requests": sum(int(h.get("bypassed", 0)) for h in hours),
            "bypassed_bytes": sum(int(h.get("bypassed_bytes", 0)) for h in hours),
            "sequential_cutoff": capfile.CUTOFF,
            "duration_s": duration,
            "iops": total / duration if duration > 0 else 0.0,
        }
    else:  # no hour was summarised (cut short before its first): the sample's counts, scaled
        scaled |= {
            k: _up(getattr(a, k), rate)
            for k in ("requests", "read_requests", "write_requests", "read_bytes", "write_bytes")
        }
        scaled["iops"] = a.iops / rate
    return dataclasses.replace(a, **scaled)


def _adjusted(a: Analysis, rate: float, hours: list[dict[str, Any]]) -> dict[str, Any]:
    """The curves with SHARDS_adj's correction: the sample held ``kept`` requests where the rate
    expected ``expected`` (a hot unit in or out of the sample moves this far); the difference
    is credited to (or taken from) the hits of every size, as a first-bucket count."""

    def count(key: str) -> int:
        return sum(int(h.get(key, 0)) for h in hours)

    expected = (count("requests") - count("bypassed")) * rate
    expected_reads = (count("reads") - count("bypassed_reads")) * rate
    out: dict[str, Any] = {}
    for key, kept, exp in (
        ("curve_hit_ratio", a.requests, expected),
        ("curve_steady_hit_ratio", a.requests, expected),
        ("curve_read_hit_ratio", a.read_requests, expected_reads),
        ("curve_read_steady_hit_ratio", a.read_requests, expected_reads),
    ):
        values = getattr(a, key)
        if values and exp > 0 and kept > 0:
            out[key] = [round(min(1.0, max(0.0, (v * kept + exp - kept) / exp)), 6) for v in values]
    return out


def _active_seconds(hours: list[dict[str, Any]]) -> float:
    """The seconds the capture ran: each run's span from its first request to its last, added up
    (the time between runs, a machine switched off, is not the workload's)."""
    spans: dict[str, tuple[float, float]] = {}
    for h in hours:
        first, last = h.get("first"), h.get("last")
        if not isinstance(first, float) or not isinstance(last, float):
            continue
        run = str(h.get("run"))
        lo, hi = spans.get(run, (first, last))
        spans[run] = (min(lo, first), max(hi, last))
    return sum(hi - lo for lo, hi in spans.values())
