"""The workload profile: what the advice knows of the workload, measured from a trace (the
miss-ratio curves, 4 KiB and in dm-cache's chunks, steady and as traced, of every access and of
the reads; the mix, rates, streams and write bursts) or modelled from a declared class (a Zipf
curve calibrated so the hot fraction of the data receives 90% of the I/O, L-SIZE-1)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from advisor.advice.config import BLOCK
from advisor.advice.lvmrules import lvm_chunk_size
from advisor.advice.model import Inputs, Reason, RecommendError
from advisor.advice.traits import traits
from advisor.advice.workloads import WORKLOADS, WorkloadType
from advisor.backends import BackendId as Backend
from advisor.errors import next_step
from advisor.units import MiB, cache_size, duration, latency
from advisor.workload import mrc
from advisor.workload.analysis import CHUNK, COLD_LIMIT, Analysis

KNEE_SHARE = 0.90  # of the achievable hit ratio
# A stretch of the trace whose requests kept the slow disk busy this share of its time (requests
# a second times the disk's measured latency) was held back by the disk: a closed loop (Q-LOOP-1).
BOUND = 0.8
# A replayed size this close to the size asked about is that size: a capture's sizes are
# rounded to whole chunks of its sample and scaled back (a 70 MiB cache at 1/64 is 17.5 chunks
# of the sample, replayed as 18: 2.9% more), and a bcache takes 98% of its SSD.
EXACT_SIZE = 0.05
# The replays count once a second (dm-cache's tick): windows shorter than this cannot be told
# apart (a trace of a few milliseconds, or one without times), and are not weighed.
MIN_WINDOW_S = 2.0
HOT_SHARE = 0.90  # the "hot set" serves this share of the I/O (L-SIZE-1, L-SIZE-2)


@dataclass(frozen=True)
class Curves:
    """One granularity's curves: sizes in bytes, the steady hit ratios and those as traced (first
    touches counted as misses), of every access and of the reads alone (None: not measured)."""

    chunk_bytes: int
    sizes_bytes: np.ndarray[Any, Any]
    hits: np.ndarray[Any, Any]
    raw_hits: np.ndarray[Any, Any] | None
    read_hits: np.ndarray[Any, Any] | None
    raw_read_hits: np.ndarray[Any, Any] | None

    def hit(self, size_bytes: float, raw: bool, reads: bool) -> float:
        hits = self.hits
        if reads and self.read_hits is not None and len(self.read_hits) == len(hits):
            hits = self.read_hits
            if raw and self.raw_read_hits is not None and len(self.raw_read_hits) == len(hits):
                hits = self.raw_read_hits
        elif raw and self.raw_hits is not None and len(self.raw_hits) == len(hits):
            hits = self.raw_hits
        # Below the curve's first size, straight down to nothing at nothing (the true curve is
        # concave, so this errs low), never a step to zero.
        return float(np.interp(size_bytes, np.concatenate([[0.0], self.sizes_bytes]), np.concatenate([[0.0], hits])))


@dataclass(frozen=True)
class Profile:
    kind: WorkloadType | None
    read_share: float
    sequential_share: float
    sizes_bytes: np.ndarray[Any, Any]
    hits: np.ndarray[Any, Any]
    source: Literal["trace", "model"]
    hot_bytes: int
    footprint_bytes: int
    read_rate: float | None  # 4 KiB block reads per second
    reasons: tuple[Reason, ...]
    # The trace's curve at dm-cache's chunk size (a chunk is cached whole), when measured.
    chunk_sizes_bytes: np.ndarray[Any, Any] | None = None
    chunk_hits: np.ndarray[Any, Any] | None = None
    chunk_bytes: int | None = None
    # From a trace: first touches as a share of its accesses (the curves here leave them out:
    # a warm cache has paid them), whether they dominate, and the bytes in bypassed streams.
    cold_share: float = 0.0
    too_short: bool = False
    bypassed_bytes: int = 0
    # The curves as traced, first touches counted as misses (the low end of a "can't judge yet").
    raw_hits: np.ndarray[Any, Any] | None = None
    chunk_raw_hits: np.ndarray[Any, Any] | None = None
    curve_mode: str = "model"
    sample_rate: float = 1.0
    chunk_cold_share: float = 0.0
    bypassed_share: float = 0.0  # of the requests: streams a cache lets through, at the disk's cost
    blocks_per_request: float = 1.0  # 4 KiB blocks a request touches, on average
    write_rate: float | None = None  # write requests per second the cache takes (a trace's)
    # The trace's write bursts: the largest backlog of written bytes at each drain rate (bytes/s).
    write_backlog: tuple[list[float], list[int]] = ([], [])
    # The curves over the reads alone (steady, and as traced), 4 KiB and in chunks, when measured.
    read_hits: np.ndarray[Any, Any] | None = None
    raw_read_hits: np.ndarray[Any, Any] | None = None
    chunk_read_hits: np.ndarray[Any, Any] | None = None
    chunk_raw_read_hits: np.ndarray[Any, Any] | None = None
    # The chunk curves at coarser chunks, for pools lvm2 gives larger chunks (coarsest last).
    coarse: tuple[Curves, ...] = ()
    # dm-cache's smq policy replayed over the trace (Analysis.smq_*): sizes in bytes, the read hit
    # ratio each settled at (NaN: not settled within the trace) and seconds to 63% of it (NaN: none).
    smq_sizes_bytes: np.ndarray[Any, Any] | None = None
    smq_read_hits: np.ndarray[Any, Any] | None = None
    smq_t63: np.ndarray[Any, Any] | None = None
    # bcache replayed over the trace (Analysis.bcache_*), alike: sizes in bytes, the read hit
    # ratio of the reads it does not bypass (NaN: not settled), seconds to 63% of it (NaN: none).
    bcache_sizes_bytes: np.ndarray[Any, Any] | None = None
    bcache_read_hits: np.ndarray[Any, Any] | None = None
    bcache_t63: np.ndarray[Any, Any] | None = None
    # per replayed size, the read hit ratio of each pass its value was read over (unweighed;
    # Analysis.smq_read_hit_days, bcache_read_hit_days)
    smq_days: tuple[tuple[float, ...], ...] = ()
    bcache_days: tuple[tuple[float, ...], ...] = ()

    def too_short_for(self, backend: Backend) -> bool:
        """Whether first touches dominate the curve this backend follows (then the trace cannot
        show whether the data comes back)."""
        share = self.chunk_cold_share if self.chunked(backend) else self.cold_share
        return self.source == "trace" and share > COLD_LIMIT

    def chunked(self, backend: Backend) -> bool:
        """Whether the backend's prediction comes from the measured chunk curve."""
        return traits(backend).promotes_chunks and self.chunk_hits is not None and len(self.chunk_hits) > 0

    def curve_of(self, backend: Backend) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
        """(sizes in bytes, hit ratios) the backend follows: the chunk curve for an lvmcache when
        the trace gave one, else the 4 KiB curve."""
        if self.chunked(backend):
            assert self.chunk_sizes_bytes is not None and self.chunk_hits is not None
            return self.chunk_sizes_bytes, self.chunk_hits
        return self.sizes_bytes, self.hits

    def curves_for(self, backend: Backend, size_bytes: float) -> Curves:
        """The curves a cache of this backend holding ``size_bytes`` follows: 4 KiB blocks, or
        for an lvmcache the trace's chunk curve at the chunk lvm2 gives a pool of that size (the
        nearest measured at or above it; the coarsest when none was measured that coarse)."""
        if not self.chunked(backend):
            return Curves(BLOCK, self.sizes_bytes, self.hits, self.raw_hits, self.read_hits, self.raw_read_hits)
        assert self.chunk_sizes_bytes is not None and self.chunk_hits is not None
        lvm_chunk = lvm_chunk_size(int(size_bytes))
        if self.coarse and lvm_chunk > (self.chunk_bytes or 0):
            return next((c for c in self.coarse if lvm_chunk <= c.chunk_bytes), self.coarse[-1])
        return Curves(
            self.chunk_bytes or 0,
            self.chunk_sizes_bytes,
            self.chunk_hits,
            self.chunk_raw_hits,
            self.chunk_read_hits,
            self.chunk_raw_read_hits,
        )

    def hit_of(self, backend: Backend, size_bytes: float, raw: bool = False, reads: bool = False) -> float:
        """The predicted hit ratio of a cache holding ``size_bytes``; ``raw``: as traced, every
        first touch a miss; ``reads``: of the reads alone, as the kernel's read counters count
        (the trace's read curve; without one, every access is taken alike). An lvmcache's or a
        bcache's steady read hit ratio comes from the kernel's policy replayed over the trace
        where it settled (replayed_read_hit)."""
        if reads and not raw:
            replayed = self.replayed_read_hit(backend, size_bytes)
            if replayed is not None:
                return replayed
        return self.curves_for(backend, size_bytes).hit(size_bytes, raw, reads)

    def replay_of(
        self, backend: Backend
    ) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]] | None:
        """(sizes in bytes, settled read hit ratios, seconds to 63%) of the replay through this
        backend's kernel code, when the trace was replayed through it."""
        by = traits(backend).replayed_by
        if by == "bcachesim":
            sizes, hits, t63 = self.bcache_sizes_bytes, self.bcache_read_hits, self.bcache_t63
        elif by == "smq":
            sizes, hits, t63 = self.smq_sizes_bytes, self.smq_read_hits, self.smq_t63
        else:
            return None
        if sizes is None or hits is None or t63 is None or not len(sizes):
            return None
        return sizes, hits, t63

    def replayed_days(self, backend: Backend, size_bytes: float) -> tuple[tuple[float, ...], ...]:
        """Of each replayed size the prediction at ``size_bytes`` is read from (itself, within
        EXACT_SIZE, or the two around it: _replayed_at), the read hit ratio of each pass it was
        read over, before any weighing: one (the second pass), or more where the passes moved
        up and down (none where it did not settle). Empty without a replay there."""
        replay = self.replay_of(backend)
        days = self.bcache_days if traits(backend).replayed_by == "bcachesim" else self.smq_days
        if replay is None or len(days) != len(replay[0]):
            return ()
        return tuple(days[i] for i in _read_from(replay[0], size_bytes))

    def _replayed_at(self, backend: Backend, size_bytes: float, column: int) -> float | None:
        """A column of the replay (1: read hit ratio, 2: seconds to 63%) at ``size_bytes``,
        itself where it was replayed (the nearest size, within EXACT_SIZE), else between the two sizes replayed
        around it (beyond the last: the last); None when the trace
        was not replayed through this backend, the size is below the smallest replayed (smq's
        1 MiB; bcache's smallest cache in its default buckets), an lvmcache of that size does not
        get CHUNK chunks, or either value is missing."""
        replay = self.replay_of(backend)
        if replay is None:
            return None
        sizes, values = replay[0], replay[column]
        if traits(backend).promotes_chunks and lvm_chunk_size(int(size_bytes)) != CHUNK:
            return None
        at = _read_from(sizes, size_bytes)
        if not at or np.isnan(values[list(at)]).any():
            return None
        if len(at) == 1:
            return float(values[at[0]])
        return float(np.interp(size_bytes, sizes[list(at)], values[list(at)]))

    def replayed_read_hit(self, backend: Backend, size_bytes: float) -> float | None:
        """The read hit ratio the backend's kernel code settled at, replayed over the trace, for a
        cache of ``size_bytes`` (None: no replay there; the curves stand)."""
        return self._replayed_at(backend, size_bytes, 1)

    def replayed_seconds_63(self, backend: Backend, size_bytes: float) -> float | None:
        """Seconds the replay took to reach 63% of its settled read hit ratio from empty."""
        if self.replayed_read_hit(backend, size_bytes) is None:
            return None
        return self._replayed_at(backend, size_bytes, 2)

    def knee_of(self, backend: Backend) -> int:
        return curve_knee(*self.curve_of(backend))

    @property
    def achievable(self) -> float:
        return float(self.hits.max()) if len(self.hits) else 0.0

    def knee(self) -> int:
        """The knee of the 4 KiB curve (bcache's, and every backend's without a chunk curve)."""
        return curve_knee(self.sizes_bytes, self.hits)


def _read_from(sizes: np.ndarray[Any, Any], size_bytes: float) -> tuple[int, ...]:
    """The replayed sizes a value at ``size_bytes`` is read from: the nearest, where it is this
    size itself (within EXACT_SIZE); else the two around it (beyond the last: the last); none
    below the smallest (the advice sizes no bcache below it: Traits.smallest)."""
    nearest = int(np.argmin(np.abs(sizes - size_bytes)))
    if abs(sizes[nearest] - size_bytes) <= EXACT_SIZE * size_bytes:
        return (nearest,)
    if size_bytes < sizes[0]:
        return ()
    at = int(np.searchsorted(sizes, size_bytes, side="left"))
    return (len(sizes) - 1,) if at >= len(sizes) else (max(at - 1, 0), at)


def curve_knee(sizes: np.ndarray[Any, Any], hits: np.ndarray[Any, Any]) -> int:
    """The smallest size reaching KNEE_SHARE of the curve's highest hit ratio."""
    target = KNEE_SHARE * (float(hits.max()) if len(hits) else 0.0)
    return int(sizes[int(np.argmax(hits >= target))])


def zipf_alpha_for_hot_fraction(items: int, hot_fraction: float, share: float = HOT_SHARE) -> float:
    """The Zipf exponent under which the hottest ``hot_fraction`` of ``items`` receives
    ``share`` of the references (L-SIZE-1 calibrates fio's zipf:1.2 to 10% -> 90%)."""
    lo, hi = 0.0, 4.0
    for _ in range(40):
        mid = (lo + hi) / 2
        if mrc.zipf_hot_items(mid, items, share) / items > hot_fraction:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def _curve(values: list[float]) -> np.ndarray[Any, Any] | None:
    return np.asarray(values, dtype=np.float64) if values else None


def _nan_curve(values: list[float | None]) -> np.ndarray[Any, Any]:
    return np.asarray([np.nan if v is None else v for v in values], dtype=np.float64)


def _steady(steady: list[float], raw: list[float]) -> np.ndarray[Any, Any]:
    """The curve a cache in service follows: each size's hit ratio once full (exact curves),
    else the LRU curve as measured (SHARDS, first touches counted as misses)."""
    return np.asarray(steady if steady else raw, dtype=np.float64)


def closed_loop(
    a: Analysis,
    settled: np.ndarray[Any, Any],
    hits: list[list[int]],
    misses: list[list[int]],
    slow_ms: float,
    fast_ms: float,
) -> tuple[np.ndarray[Any, Any], int]:
    """A replay's settled read hit ratios (one per size, NaN: not settled) as the kernel would
    count them through the cache (Q-LOOP-1), and the number of the trace's windows held back by
    the disk. In a window whose requests kept the disk busy (BOUND), the requests come faster
    through the cache by the latency model's factor at the window's own read hit ratio (its
    reads at the mix of SSD and disk latency, its writes at the disk's), so its read hits and
    misses count that many times; other windows count once. The window's hit ratio counts the
    replay's lookups (dm-cache's 64 KiB pieces: a large read that misses counts as many misses,
    which keeps the factor low) and its read share the requests. The count of windows is 0 when
    no size was weighed: without windows (or windows shorter than MIN_WINDOW_S), none busy, no
    settled size, or latencies that give no gain; the ratios are then returned as they are."""
    seconds = a.replay_window_seconds
    if seconds < MIN_WINDOW_S or not 0 < fast_ms < slow_ms or len(hits) != len(settled) or len(misses) != len(settled):
        return settled, 0
    requests = np.asarray(a.replay_window_requests, dtype=np.float64)
    reads = np.asarray(a.replay_window_reads, dtype=np.float64)
    bound = requests / seconds * slow_ms / 1000.0 >= BOUND
    if not bound.any():
        return settled, 0
    read_share = np.divide(reads, requests, out=np.ones_like(requests), where=requests > 0)
    out = settled.copy()
    weighed = False
    for i, (h, m) in enumerate(zip(hits, misses, strict=True)):
        h_w, n_w = np.asarray(h, dtype=np.float64), np.asarray(h, dtype=np.float64) + np.asarray(m, dtype=np.float64)
        if np.isnan(settled[i]) or len(n_w) != len(requests):
            continue
        ratio = np.divide(h_w, n_w, out=np.zeros_like(h_w), where=n_w > 0)
        cost = read_share * (ratio * fast_ms + (1 - ratio) * slow_ms) + (1 - read_share) * slow_ms
        weight = np.where(bound, slow_ms / cost, 1.0)
        total = float((weight * n_w).sum())
        if total > 0:
            out[i] = round(float((weight * h_w).sum()) / total, 6)
            weighed = True
    return out, int(bound.sum()) if weighed else 0


def trace_profile(
    a: Analysis,
    workload: WorkloadType | None = None,
    read_iops: float | None = None,
    latencies: tuple[float, float] | None = None,
) -> Profile:
    """The profile a trace (or a capture) measured: its curves, hot data, rates and replays.
    ``latencies``: the slow and the fast device's latencies (ms; probed, else their class's
    typical figures), which weigh smq's replayed windows where the disk held a closed loop back
    (closed_loop)."""
    reads = a.read_requests / max(a.requests, 1)
    shares = dict(zip(a.hot_shares, a.hot_blocks, strict=True))
    hot_blocks = shares.get(HOT_SHARE, a.footprint_blocks)
    rate = a.block_accesses * reads / a.duration_s if a.duration_s > 0 else read_iops
    hot_pct = 100 * hot_blocks / max(a.footprint_blocks, 1)
    chunked = bool(a.chunk_size and a.chunk_curve_sizes_blocks)
    drawn = ""
    if a.periods is not None:  # a capture: the hours the sizes are drawn from, and its phases
        p = a.periods
        kinds = sorted({ph.kind for ph in p.phases}, key=[ph.kind for ph in p.phases].index)
        over = f"{p.hours:,.1f} hours over {len(p.days)} days" if p.days else f"{p.hours:,.2f} hours"
        phases = f"; its phases: {', '.join(kinds)}" if kinds else ""
        drawn = f" (a capture of {over}: the sizes are drawn from all of it{phases})"
    text = (
        f"Measured from the trace {a.source}{drawn}: {a.requests:,} requests, {100 * reads:.0f}% reads, "
        f"{100 * a.sequential_share:.0f}% sequential, {hot_pct:.1f}% of the touched data serves "
        f"{100 * HOT_SHARE:.0f}% of the I/O."
    )
    if a.bypassed_requests:
        text += (
            f" {a.bypassed_requests:,} requests ({cache_size(a.bypassed_bytes)}) belong to streams past "
            f"{cache_size(a.sequential_cutoff)}, which a cache lets through to the disk (bcache's "
            "sequential_cutoff; dm-cache promotes nothing read once): they are left out of the curve."
        )
    text += (
        f" {100 * a.cold_miss_share:.1f}% of the rest are first touches: those before a cache of a given "
        "size is full are its warm-up, those after it count as misses, so the predicted hit ratios are a "
        "full cache's."
    )
    smq_hits = _nan_curve(a.smq_read_hit_ratio) if a.smq_sizes_blocks else None
    bcache_hits = _nan_curve(a.bcache_read_hit_ratio) if a.bcache_sizes_bytes else None
    reasons = [Reason(text, ("L-SIZE-4", "T-SEQ-1", "R-WARM-1") if a.bypassed_requests else ("L-SIZE-4",))]
    bound = 0
    # dm-cache's replay alone is weighed: bcache's window counts leave out the reads it bypasses,
    # which a window's read share counts, so a busy window of a stream would be weighed as if the
    # cache served it (its windows are kept in the analysis all the same).
    if latencies is not None and smq_hits is not None:
        slow_ms = latencies[0]
        smq_hits, bound = closed_loop(a, smq_hits, a.smq_window_read_hits, a.smq_window_read_misses, *latencies)
        if bound:
            reasons.append(
                Reason(
                    f"In {bound} of the trace's {len(a.replay_window_requests)} stretches of "
                    f"{duration(a.replay_window_seconds)} its requests kept the disk busy (at the disk's "
                    f"{latency(slow_ms)} a request): a closed loop that waited on the disk. Through the cache its "
                    "requests come faster, so the kernel will count more of those stretches' reads than the trace "
                    "did: dm-cache's replayed read hit ratios weigh each stretch by its predicted speed-up.",
                    ("Q-LOOP-1", "T-DEV-1"),
                )
            )
    return Profile(
        kind=workload,
        read_share=reads,
        sequential_share=a.sequential_share,
        sizes_bytes=np.asarray(a.curve_sizes_blocks, dtype=np.float64) * a.block_size,
        hits=_steady(a.curve_steady_hit_ratio, a.curve_hit_ratio),
        source="trace",
        hot_bytes=hot_blocks * a.block_size,
        footprint_bytes=a.footprint_bytes,
        read_rate=rate,
        chunk_sizes_bytes=(
            np.asarray(a.chunk_curve_sizes_blocks, dtype=np.float64) * a.chunk_size
            if chunked and a.chunk_size
            else None
        ),
        chunk_hits=_steady(a.chunk_curve_steady_hit_ratio, a.chunk_curve_hit_ratio) if chunked else None,
        chunk_bytes=a.chunk_size,
        cold_share=a.cold_miss_share,
        too_short=a.too_short,
        bypassed_bytes=a.bypassed_bytes,
        raw_hits=np.asarray(a.curve_hit_ratio, dtype=np.float64),
        curve_mode=a.curve_mode,
        chunk_cold_share=a.chunk_cold_miss_share,
        bypassed_share=a.bypassed_requests / max(a.requests, 1),
        blocks_per_request=a.block_accesses / max(a.requests - a.bypassed_requests, 1),
        write_rate=a.write_requests / a.duration_s if a.duration_s > 0 else None,
        write_backlog=(a.write_drain_rates, a.write_backlog_bytes),
        read_hits=_curve(a.curve_read_steady_hit_ratio or a.curve_read_hit_ratio),
        raw_read_hits=_curve(a.curve_read_hit_ratio),
        chunk_read_hits=_curve(a.chunk_curve_read_steady_hit_ratio or a.chunk_curve_read_hit_ratio)
        if chunked
        else None,
        chunk_raw_read_hits=_curve(a.chunk_curve_read_hit_ratio) if chunked else None,
        sample_rate=a.curve_sample_rate,
        chunk_raw_hits=np.asarray(a.chunk_curve_hit_ratio, dtype=np.float64) if chunked else None,
        coarse=tuple(
            Curves(
                c.chunk_size,
                np.asarray(c.sizes_blocks, dtype=np.float64) * c.chunk_size,
                _steady(c.steady_hit_ratio, c.hit_ratio),
                _curve(c.hit_ratio),
                _curve(c.read_steady_hit_ratio or c.read_hit_ratio),
                _curve(c.read_hit_ratio),
            )
            for c in sorted(a.coarse_chunk_curves, key=lambda c: c.chunk_size)
        )
        if chunked
        else (),
        smq_sizes_bytes=(
            np.asarray(a.smq_sizes_blocks, dtype=np.float64) * a.smq_chunk_size
            if a.smq_sizes_blocks and a.smq_chunk_size
            else None
        ),
        smq_read_hits=smq_hits,
        smq_t63=_nan_curve(a.smq_seconds_63) if a.smq_sizes_blocks else None,
        smq_days=tuple(tuple(d) for d in a.smq_read_hit_days),
        bcache_sizes_bytes=np.asarray(a.bcache_sizes_bytes, dtype=np.float64) if a.bcache_sizes_bytes else None,
        bcache_read_hits=bcache_hits,
        bcache_t63=_nan_curve(a.bcache_seconds_63) if a.bcache_sizes_bytes else None,
        bcache_days=tuple(tuple(d) for d in a.bcache_read_hit_days),
        reasons=tuple(reasons),
    )


def profile(inp: Inputs, data_bytes: int) -> Profile:
    a = inp.analysis
    if a is not None and a.curve_sizes_blocks:
        latencies = (inp.slow.latency, min(f.latency for f in inp.fast)) if inp.fast else None
        return trace_profile(a, inp.workload, inp.read_iops, latencies)
    wc = WORKLOADS[inp.workload] if inp.workload else None
    if wc is None and inp.hot_fraction is None:
        raise RecommendError(
            "no-workload",
            next=[next_step("record-trace"), next_step("choose-workload"), next_step("declare-hot-fraction")],
        )
    hot_fraction = inp.hot_fraction if inp.hot_fraction is not None else wc.hot_fraction  # type: ignore[union-attr]
    if not 0 < hot_fraction <= 1:
        raise RecommendError("bad-hot-fraction", value=hot_fraction)
    items = max(data_bytes // BLOCK, 1)
    alpha = zipf_alpha_for_hot_fraction(items, hot_fraction)
    # From 1 MiB up, so that a cache far smaller than the data is read off the curve, not below it.
    small = np.geomspace(MiB // BLOCK, max(items * 0.001, MiB // BLOCK), 20).astype(np.int64)
    sizes = np.unique(np.concatenate([small, mrc.default_sizes(items), [items]]))
    hits = mrc.zipf_lru_curve(alpha, items, sizes)
    read_share = inp.read_share if inp.read_share is not None else (wc.read_share if wc else 1.0)
    label = wc.label if wc else "random I/O"
    return Profile(
        kind=inp.workload,
        read_share=read_share,
        sequential_share=wc.sequential_share if wc else 0.0,
        sizes_bytes=sizes.astype(np.float64) * BLOCK,
        hits=hits,
        source="model",
        hot_bytes=int(hot_fraction * data_bytes),
        footprint_bytes=data_bytes,
        read_rate=inp.read_iops,
        reasons=(
            Reason(
                f"No trace: modelled as {label} over {cache_size(data_bytes)} with {100 * hot_fraction:.0f}% of the "
                f"data serving {100 * HOT_SHARE:.0f}% of the I/O (a Zipf curve, exponent {alpha:.2f}). "
                "A trace of the real workload would be better.",
                ("L-SIZE-1", "L-SIZE-4"),
            ),
        ),
    )
