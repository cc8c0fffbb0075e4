"""What a block trace says about caching it: footprint, mix, the LRU miss-ratio curve and the
hot-data ratio (L-SIZE-4: measure the real workload before sizing a cache)."""

from __future__ import annotations

import contextlib
import functools
import queue
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from advisor.workload import bcachesim, exact, mrc, smq, streams, timeline
from advisor.workload.jit import compile_loop
from advisor.workload.periods import Periods
from advisor.workload.streams import SEQUENTIAL_CUTOFF, StreamDetector
from advisor.workload.traces import (
    MSR,
    CsvLayout,
    Format,
    ImportStats,
    Requests,
    Trace,
    TraceError,
    cachewise_records,
    detect_format,
    iter_cachewise,
    load_trace,
    read_cachewise_meta,
)

ANALYSIS_SCHEMA = "cachewise.analysis/1"
MIN_BLOCK = 4096
CHUNK = 64 * 1024  # dm-cache's chunk for caches up to about 64 GiB (lvm2's default rule)
STREAM_REQUESTS = 8_000_000  # longer cachewise traces are analysed in chunks, by SHARDS
# A trace where first touches (compulsory misses) are more than this share of the accesses is
# too short to judge: it cannot show whether its blocks come back.
COLD_LIMIT = 0.3
SIZE_BUCKETS = (4096, 8192, 16384, 32768, 65536, 131072, 262144, 524288, 1 << 20)
# lvm2 keeps a cache pool under this many chunks (M-CHUNK-1): a pool larger than about 61 GiB gets
# chunks larger than CHUNK, and a trace that touches more chunks than this could be given one.
LVM_MAX_CHUNKS = 1_000_000
# dm-cache's smq policy is replayed over traces of up to this many chunk-sized pieces (about
# 3 microseconds each in CPython, twice at each of SMQ_SIZES sizes); longer ones keep the LRU
# chunk curve.
SMQ_PIECES = 200_000
SMQ_SIZES = 5
SMQ_SMALLEST = 16  # chunks: a 1 MiB cache
# A replay's settled passes are counted in this many windows of equal length as well (hours of a
# day), with the trace's requests in each: what a closed loop weighs (advisor.advice.profile).
REPLAY_WINDOWS = 24
# bcache is replayed over traces of up to this many 4 KiB blocks (about 4 microseconds a request
# in CPython, twice at each of SMQ_SIZES sizes), in make-bcache's default 512 KiB buckets, from
# the smallest cache the kernel takes in them (513 buckets).
BCACHE_BLOCKS = 200_000
BCACHE_SMALLEST = 513 * bcachesim.BUCKET


# Block accesses analysed at once (8 bytes each, and a few arrays of them): a larger expansion
# means a trace of huge requests at a small block size.
MAX_ACCESSES = 200_000_000
# Traces of at least this many requests (not bypassed) have their exact curves made by the
# compiled passes of advisor.workload.exact; shorter ones by mrc's relabelling and stack
# distances (the same curves), which compile one loop instead of five past 20,000 accesses.
COMPILED_PASSES_FROM = 200_000


def to_blocks(requests: Requests, block_size: int) -> mrc.Blocks:
    """Split each request into the cache blocks it touches, in order."""
    return blocks_per_request(requests, block_size)[0]


def blocks_per_request(requests: Requests, block_size: int) -> tuple[mrc.Blocks, npt.NDArray[np.int64] | None]:
    """to_blocks, and how many blocks each request touches (None: one each)."""
    first: mrc.Blocks = (requests["offset"] // np.uint64(block_size)).view(np.int64)  # offsets < 2^60
    # The usual trace has every request within one block: then the first blocks are the blocks.
    # Checked a slice at a time, so the check costs no second array of the trace's length.
    for at in range(0, len(requests), FEED_CHUNK):
        part = requests[at : at + FEED_CHUNK]
        last = (part["offset"] + np.maximum(part["length"], 1).astype(np.uint64) - np.uint64(1)) // np.uint64(
            block_size
        )
        if not np.array_equal(last.view(np.int64), first[at : at + FEED_CHUNK]):
            break
    else:
        return first, None
    del first
    offset = requests["offset"].astype(np.int64)
    first = offset // block_size
    offset += np.maximum(requests["length"], 1)
    offset -= 1
    offset //= block_size  # now each request's last block
    counts = offset - first + 1
    del offset
    if int(counts.sum()) > MAX_ACCESSES:
        raise TraceError(
            f"its {len(requests):,} requests make {int(counts.sum()):,} accesses of {block_size} bytes, "
            f"more than the {MAX_ACCESSES:,} analysed at once",
            code="too-many-accesses",
        )
    starts = np.repeat(np.cumsum(counts) - counts, counts)
    blocks: mrc.Blocks = np.repeat(first, counts) + (np.arange(int(counts.sum()), dtype=np.int64) - starts)
    return blocks, counts


@dataclass(frozen=True)
class CoarseCurve:
    """The chunk curve again at a coarser chunk, the kind lvm2 gives a pool past 61 GiB."""

    chunk_size: int
    sizes_blocks: list[int]  # in chunks of chunk_size
    hit_ratio: list[float]
    steady_hit_ratio: list[float]
    read_hit_ratio: list[float]
    read_steady_hit_ratio: list[float]
    footprint_blocks: int


@dataclass(frozen=True)
class Analysis:
    source: str
    source_format: str
    block_size: int
    requests: int
    block_accesses: int
    read_requests: int
    write_requests: int
    read_bytes: int
    write_bytes: int
    duration_s: float
    iops: float
    sequential_share: float
    size_histogram: dict[str, int]
    footprint_blocks: int
    footprint_bytes: int
    curve_mode: str
    curve_sample_rate: float
    curve_sizes_blocks: list[int]
    curve_hit_ratio: list[float]
    # The hit ratio each size settles at once full (mrc.steady_from_distances): what a cache in
    # service sees; empty for a SHARDS curve.
    curve_steady_hit_ratio: list[float]
    hot_shares: list[float]
    hot_footprint_fraction: list[float]
    hot_blocks: list[int]
    zipf_alpha: float | None
    # The LRU curve again at dm-cache's smallest chunk (CHUNK), when block_size is smaller: a chunk
    # is cached whole, so this is the curve an lvmcache follows (empty when not computed).
    chunk_size: int | None
    chunk_curve_sizes_blocks: list[int]
    chunk_curve_hit_ratio: list[float]
    chunk_curve_steady_hit_ratio: list[float]
    chunk_footprint_blocks: int
    # Sequential streams, told apart as bcache does (advisor.workload.streams): requests that
    # continue one of the 64 most recent streams count as sequential, and those of a stream past
    # sequential_cutoff bytes are bypassed. The curves, footprint and hot data cover the rest.
    sequential_cutoff: int
    bypassed_requests: int
    bypassed_bytes: int
    # First touches (compulsory misses) as a share of the curve's accesses: at any size an LRU
    # cache misses these once. A steady cache has paid them in its warm-up; a trace where they
    # dominate is too short to show whether its blocks come back.
    cold_miss_share: float
    chunk_cold_miss_share: float
    too_short: bool  # first touches are more than COLD_LIMIT of the accesses
    lines: int
    skipped_lines: int
    bad_lines: int
    bad_examples: list[str]
    # The curves over the reads alone (hits of reads over reads, writes filling the cache as
    # reads do): what the kernel's read hit counters show. Empty in analyses made before.
    # The largest backlog of written bytes (write_backlog_bytes) a disk taking writes back at
    # each rate (write_drain_rates, bytes/s) would have had: what a write-back cache must hold.
    write_drain_rates: list[float] = field(default_factory=list)
    write_backlog_bytes: list[int] = field(default_factory=list)
    curve_read_hit_ratio: list[float] = field(default_factory=list)
    curve_read_steady_hit_ratio: list[float] = field(default_factory=list)
    chunk_curve_read_hit_ratio: list[float] = field(default_factory=list)
    chunk_curve_read_steady_hit_ratio: list[float] = field(default_factory=list)
    # When the trace touches more chunks than an lvm2 pool of CHUNK-sized chunks holds: the chunk
    # curve at coarser chunks (twice CHUNK, four times, ... up to what lvm2 gives a pool of the
    # whole footprint), so an lvmcache past 61 GiB is predicted at the chunk lvm2 gives it.
    coarse_chunk_curves: list[CoarseCurve] = field(default_factory=list)
    # dm-cache's smq policy replayed over the whole trace (advisor.workload.smq, every request:
    # dm-cache bypasses no stream) at a few cache sizes in CHUNK chunks, each started empty and
    # fed the trace twice (smq_curve): the read hit ratio of the second pass (or, where the passes
    # move up and down, of the second to the fifth together; None where it was still climbing:
    # _settled) and the seconds the first pass took to reach 63% of it. Empty when the
    # trace is longer than SMQ_PIECES pieces, or in analyses made before.
    smq_chunk_size: int | None = None  # CHUNK when replayed
    smq_sizes_blocks: list[int] = field(default_factory=list)
    smq_read_hit_ratio: list[float | None] = field(default_factory=list)
    smq_seconds_63: list[float | None] = field(default_factory=list)
    # per replayed size, the read hit ratio of each pass smq_read_hit_ratio was read over: the
    # second alone (one), or the second to the fifth, which moved up and down (four: _settled);
    # empty where it did not settle
    smq_read_hit_days: list[list[float]] = field(default_factory=list)
    # bcache replayed over the whole trace (advisor.workload.bcachesim: its buckets and their
    # priorities, its sequential cutoff per run, only a read's first missing run read in) at a
    # few cache sizes from the smallest the kernel takes in 512 KiB buckets, each started empty and
    # fed the trace twice: the read hit ratio of the second pass over the reads bcache does not
    # bypass, as stats_total's cache_hits / (cache_hits + cache_misses) (read as smq's are), and
    # the seconds the first pass took to reach 63% of it. Empty when the trace is longer than
    # BCACHE_BLOCKS blocks, or in analyses made before.
    bcache_bucket_size: int | None = None
    bcache_sizes_bytes: list[int] = field(default_factory=list)
    bcache_read_hit_ratio: list[float | None] = field(default_factory=list)
    bcache_seconds_63: list[float | None] = field(default_factory=list)
    bcache_read_hit_days: list[list[float]] = field(default_factory=list)  # as smq_read_hit_days
    # The trace cut into REPLAY_WINDOWS windows of replay_window_seconds from its first request:
    # each window's requests and reads (every one, streams too, as the disk sees them), and at
    # each replayed size the read hits and misses the passes it was read over counted in the same
    # window, summed over those passes (smq_window_read_hits[size][window]). A capture's requests and
    # reads are at full scale, its hits and misses its sample's (their ratio is what is read).
    # Empty when not replayed.
    replay_window_seconds: float = 0.0
    replay_window_requests: list[int] = field(default_factory=list)
    replay_window_reads: list[int] = field(default_factory=list)
    smq_window_read_hits: list[list[int]] = field(default_factory=list)
    smq_window_read_misses: list[list[int]] = field(default_factory=list)
    bcache_window_read_hits: list[list[int]] = field(default_factory=list)
    bcache_window_read_misses: list[list[int]] = field(default_factory=list)
    schema: str = ANALYSIS_SCHEMA
    # A capture's windows, days and phases (advisor.workload.periods); None for a trace, and then
    # left out of the JSON.
    periods: Periods | None = None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        if self.periods is None:
            del data["periods"]
        return data


FEED_CHUNK = 1 << 20  # requests summarised at a time
# Slices of more requests are tallied by a compiled pass (_tally_loop), shorter ones by numpy
# (no compile for a short trace); the same figures.
TALLIED_FROM = 200_000
_SIZE_EDGES = np.asarray(SIZE_BUCKETS, np.int64)
# Drain rates (bytes/s) at which the writes' backlog is measured: 64 KiB/s to 1 GiB/s.
DRAIN_RATES = tuple(float(x) for x in np.geomspace(64 << 10, 1 << 30, 15))
BACKLOG_STEP_S = 0.1


class _Summary:
    """Everything but the curve, accumulated chunk by chunk (bounded by the footprint)."""

    def __init__(self, cutoff: int = SEQUENTIAL_CUTOFF) -> None:
        self.requests = self.accesses = self.reads = self.writes = self.read_bytes = self.write_bytes = 0
        self.sequential = self.bypassed = self.bypassed_bytes = 0
        self.streams = StreamDetector(cutoff)
        self.t_min, self.t_max = np.inf, -np.inf
        self.sizes = np.zeros(len(SIZE_BUCKETS) + 1, np.int64)
        self._ids = np.zeros(0, np.int64)
        self._counts = np.zeros(0, np.int64)
        # The largest backlog of written bytes a disk draining at each of DRAIN_RATES would have
        # (a queue fed by the trace's writes): what a write-back cache must hold to absorb them.
        self.backlog = np.zeros(len(DRAIN_RATES))
        self._written = 0.0  # bytes written before this chunk
        self._lowest = np.full(len(DRAIN_RATES), np.inf)  # min over past writes of (written before it - rate x t)
        self._scratch = (np.empty(0), np.empty(0, np.int64))  # the writes' times and lengths (_tally)

    def _feed_writes(self, t: npt.NDArray[np.float64], lengths: npt.NDArray[np.int64]) -> None:
        # Writes grouped by tenth of a second (each group at its first write's time): the backlog
        # errs by at most a tenth of a second's draining, and a long trace costs little.
        groups = np.floor(t / BACKLOG_STEP_S).astype(np.int64)
        starts = np.flatnonzero(np.concatenate([[True], groups[1:] != groups[:-1]]))
        t, lengths = t[starts], np.add.reduceat(lengths, starts)
        rates = np.asarray(DRAIN_RATES)[:, None]
        after = self._written + np.cumsum(lengths, dtype=np.float64)
        before = after - lengths
        lows = np.minimum(np.minimum.accumulate(before[None, :] - rates * t[None, :], axis=1), self._lowest[:, None])
        self.backlog = np.maximum(self.backlog, (after[None, :] - rates * t[None, :] - lows).max(axis=1))
        self._lowest = lows[:, -1]
        self._written = float(after[-1])

    def feed_requests(self, req: Requests) -> npt.NDArray[np.bool_] | None:
        """The request-level figures of a chunk: mix, bytes, sizes, sequential share, times;
        a slice at a time, so that the temporaries stay small beside a long trace. Returns
        which requests a cache bypasses (None: none)."""
        return _joined(
            [self._feed_requests(req[at : at + FEED_CHUNK]) for at in range(0, len(req), FEED_CHUNK)], len(req)
        )

    def _feed_requests(self, req: Requests) -> npt.NDArray[np.bool_] | None:
        if not len(req):
            return None
        if len(req) > TALLIED_FROM:
            self._tally(req)
        else:
            writes = req["write"].astype(bool)
            lengths = req["length"].astype(np.int64)
            self.requests += len(req)
            self.writes += int(np.count_nonzero(writes))
            self.reads += len(req) - int(np.count_nonzero(writes))
            self.write_bytes += int(lengths[writes].sum())
            self.read_bytes += int(lengths.sum()) - int(lengths[writes].sum())
            if writes.any():
                self._feed_writes(req["t"][writes].astype(np.float64), lengths[writes])
            del writes
            self.sizes += np.bincount(
                np.searchsorted(np.asarray(SIZE_BUCKETS), lengths, side="left"), minlength=len(SIZE_BUCKETS) + 1
            )
            del lengths
            self.t_min, self.t_max = min(self.t_min, float(req["t"].min())), max(self.t_max, float(req["t"].max()))
        kinds = self.streams.classify(req)
        self.sequential += int(np.count_nonzero(kinds))
        bypass: npt.NDArray[np.bool_] = kinds == StreamDetector.BYPASSED
        del kinds
        if not bypass.any():
            return None
        self.bypassed += int(np.count_nonzero(bypass))
        self.bypassed_bytes += int(req["length"][bypass].astype(np.int64).sum())
        return bypass

    def fed(self) -> None:
        """Every request fed: the scratch arrays kept from slice to slice go."""
        self._scratch = (np.empty(0), np.empty(0, np.int64))
        self.streams.fed()

    def _tally(self, req: Requests) -> None:
        """_feed_requests' figures but the streams', in one compiled pass over the records."""
        totals = np.zeros(3, np.int64)
        sizes = np.zeros(len(SIZE_BUCKETS) + 1, np.int64)
        extremes = np.zeros(2)
        if len(self._scratch[0]) < len(req):  # kept from slice to slice: fresh memory is slow
            self._scratch = (np.empty(len(req)), np.empty(len(req), np.int64))
        write_t, write_length = self._scratch
        writes = _tally_compiled()(
            req["t"], req["length"], req["write"], _SIZE_EDGES, sizes, totals, extremes, write_t, write_length
        )
        self.requests += len(req)
        self.writes += writes
        self.reads += len(req) - writes
        self.write_bytes += int(totals[0])
        self.read_bytes += int(totals[1]) - int(totals[0])
        if writes:
            self._feed_writes(write_t[:writes], write_length[:writes])
        self.sizes += sizes
        self.t_min, self.t_max = min(self.t_min, float(extremes[0])), max(self.t_max, float(extremes[1]))

    def feed_blocks(self, accesses: int, ids: mrc.Blocks | None, counts: npt.NDArray[np.int64]) -> None:
        """A chunk's block accesses: how many, and each distinct block's count (``ids``: which
        block each is; None for the whole trace's, fed once)."""
        self.accesses += accesses
        if ids is None:
            self._counts = counts
            return
        if not len(self._ids):
            self._ids, self._counts = ids, counts.astype(np.int64, copy=False)
            return
        merged, index = np.unique(np.concatenate([self._ids, ids]), return_inverse=True)
        self._counts = np.bincount(index, weights=np.concatenate([self._counts, counts]), minlength=len(merged)).astype(
            np.int64
        )
        self._ids = merged

    def counts(self) -> npt.NDArray[np.int64]:
        return self._counts

    def histogram(self) -> dict[str, int]:
        labels = [f"<= {e // 1024} KiB" for e in SIZE_BUCKETS] + [f"> {SIZE_BUCKETS[-1] // 1024} KiB"]
        return {label: int(c) for label, c in zip(labels, self.sizes, strict=True) if c}


def _tally_loop(
    t: npt.NDArray[np.float64],
    length: npt.NDArray[np.uint32],
    write: npt.NDArray[np.uint8],
    edges: npt.NDArray[np.int64],
    sizes: npt.NDArray[np.int64],
    totals: npt.NDArray[np.int64],
    extremes: npt.NDArray[np.float64],
    write_t: npt.NDArray[np.float64],
    write_length: npt.NDArray[np.int64],
) -> int:  # pragma: no cover - compiled
    """Adds to ``sizes`` the requests by size bucket (np.searchsorted(edges, length, "left")),
    puts the bytes written and all bytes in ``totals``, the first and last times in
    ``extremes`` (NaN when any time is, as numpy's min and max give), and the writes' times and
    lengths in ``write_t`` and ``write_length``; returns how many writes."""
    writes = 0
    low = high = t[0]
    nan = False
    for i in range(t.shape[0]):
        size = np.int64(length[i])
        k = 0
        while k < edges.shape[0] and edges[k] < size:
            k += 1
        sizes[k] += 1
        totals[1] += size
        x = t[i]
        if x != x:
            nan = True
        elif x < low:
            low = x
        elif x > high:
            high = x
        if write[i]:
            totals[0] += size
            write_t[writes] = x
            write_length[writes] = size
            writes += 1
    extremes[0] = np.nan if nan else low
    extremes[1] = np.nan if nan else high
    return writes


@functools.cache
def _tally_compiled() -> Any:
    def warm(f: Any) -> None:
        z = np.zeros(1)
        f(
            z,
            np.ones(1, np.uint32),
            np.ones(1, np.uint8),
            _SIZE_EDGES,
            np.zeros(10, np.int64),
            np.zeros(3, np.int64),
            np.zeros(2),
            z.copy(),
            np.zeros(1, np.int64),
        )

    return compile_loop(
        _tally_loop,
        "int64(float64[:], uint32[:], uint8[:], int64[:], int64[:], int64[:], float64[:], float64[:], int64[:])",
        warm,
    )


@contextlib.contextmanager
def _small_pages() -> Iterator[None]:
    """numpy's advice to the kernel to back arrays of 4 MB and more with huge pages held off,
    then as it was. Where the kernel compacts memory to find them when advised (transparent
    huge pages' defrag "madvise", Debian's default), an analysis's few hundred megabytes of fresh
    arrays wait on it: the bench log's warm analysis spent 0.77 s in the kernel with the advice
    and 0.47 s without, and 3.8 s of CPU against 3.5 s (medians of five, alternated)."""
    multiarray = getattr(getattr(np, "_core", None), "multiarray", None) or getattr(np.core, "multiarray", None)
    advise: Callable[[bool], bool] | None = getattr(multiarray, "_set_madvise_hugepage", None)
    if advise is None:
        yield
        return
    was = advise(False)
    try:
        yield
    finally:
        advise(was)


def _joined(masks: list[npt.NDArray[np.bool_] | None], n: int) -> npt.NDArray[np.bool_] | None:
    """The bypass masks of the FEED_CHUNK slices of n requests as one (None: none bypassed)."""
    if not any(m is not None for m in masks):
        return None
    return np.concatenate(
        [m if m is not None else np.zeros(min(FEED_CHUNK, n - i * FEED_CHUNK), bool) for i, m in enumerate(masks)]
    )


class _Follower:
    """Feeds a _Summary the requests a reader has read so far (offer), a FEED_CHUNK slice at a
    time, on a thread of its own while the reader reads on; finish feeds the rest. The slices
    are feed_requests' own, so the figures are the same as from the whole array at the end."""

    def __init__(self, summary: _Summary) -> None:
        self.summary = summary
        self._masks: list[npt.NDArray[np.bool_] | None] = []
        self._fed = 0
        self._queue: queue.SimpleQueue[Requests | None] = queue.SimpleQueue()
        self._failed: BaseException | None = None
        self._thread: threading.Thread | None = None

    def offer(self, requests: Requests) -> None:
        """The requests read so far (the reader's thread: the main one)."""
        if self._thread is None:
            if len(requests) < FEED_CHUNK:
                return
            # The stream detector's loop is loaded here, in the main thread (advisor.workload.jit).
            streams.load()
            _tally_compiled()
            self._thread = threading.Thread(target=self._follow, name="cachewise-summary", daemon=True)
            self._thread.start()
        self._queue.put(requests)

    def _follow(self) -> None:
        try:
            while (requests := self._queue.get()) is not None:
                self._feed(requests, whole=True)
        except BaseException as exc:  # raised again by finish, in the caller's thread
            self._failed = exc

    def _feed(self, requests: Requests, whole: bool) -> None:
        while self._fed + (FEED_CHUNK if whole else 1) <= len(requests):
            self._masks.append(self.summary._feed_requests(requests[self._fed : self._fed + FEED_CHUNK]))
            self._fed += min(FEED_CHUNK, len(requests) - self._fed)

    def stop(self) -> None:
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None

    def finish(self, requests: Requests) -> npt.NDArray[np.bool_] | None:
        """Every request fed: which a cache bypasses (None: none), as feed_requests gives."""
        self.stop()
        if self._failed is not None:
            raise self._failed
        self._feed(requests, whole=False)
        return _joined(self._masks, len(requests))


def _check_block_size(block_size: int) -> None:
    if block_size < 512 or block_size & (block_size - 1):
        raise ValueError(f"block size must be a power of two of at least 512 bytes, not {block_size}")


def _result(
    summary: _Summary,
    curve: mrc.Curve,
    block_size: int,
    source: str,
    source_format: str,
    stats: ImportStats,
    chunk: tuple[mrc.Curve, int, int] | None = None,
    coarse: list[CoarseCurve] | None = None,
    dmcache: ReplayCurve | None = None,
    bcache: ReplayCurve | None = None,
    windows: Windows | None = None,
) -> Analysis:
    counts = summary.counts()
    hot = mrc.hot_data(counts)
    duration = summary.t_max - summary.t_min if summary.requests else 0.0
    return Analysis(
        source=source,
        source_format=source_format,
        block_size=block_size,
        requests=summary.requests,
        block_accesses=summary.accesses,
        read_requests=summary.reads,
        write_requests=summary.writes,
        read_bytes=summary.read_bytes,
        write_bytes=summary.write_bytes,
        duration_s=round(duration, 6),
        iops=round(summary.requests / duration, 1) if duration > 0 else 0.0,
        sequential_share=round(summary.sequential / max(summary.requests, 1), 4),
        size_histogram=summary.histogram(),
        footprint_blocks=len(counts),
        footprint_bytes=len(counts) * block_size,
        curve_mode=curve.mode,
        curve_sample_rate=curve.rate,
        curve_sizes_blocks=[int(s) for s in curve.sizes],
        curve_hit_ratio=[round(float(h), 6) for h in curve.hit_ratio],
        curve_steady_hit_ratio=[round(float(h), 6) for h in curve.steady] if curve.steady is not None else [],
        hot_shares=list(hot.shares),
        hot_footprint_fraction=[round(f, 6) for f in hot.footprint_fraction],
        hot_blocks=list(hot.blocks_needed),
        zipf_alpha=mrc.zipf_exponent(counts),
        chunk_size=CHUNK if chunk is not None else None,
        chunk_curve_sizes_blocks=[int(x) for x in chunk[0].sizes] if chunk is not None else [],
        chunk_curve_hit_ratio=[round(float(h), 6) for h in chunk[0].hit_ratio] if chunk is not None else [],
        chunk_curve_steady_hit_ratio=(
            [round(float(h), 6) for h in chunk[0].steady] if chunk is not None and chunk[0].steady is not None else []
        ),
        chunk_footprint_blocks=chunk[1] if chunk is not None else 0,
        sequential_cutoff=summary.streams.cutoff,
        bypassed_requests=summary.bypassed,
        bypassed_bytes=summary.bypassed_bytes,
        cold_miss_share=round(len(counts) / summary.accesses, 6) if summary.accesses else 0.0,
        chunk_cold_miss_share=round(chunk[1] / chunk[2], 6) if chunk is not None and chunk[2] else 0.0,
        too_short=summary.accesses > 0 and len(counts) / summary.accesses > COLD_LIMIT,
        lines=stats.lines,
        skipped_lines=stats.skipped,
        bad_lines=stats.bad,
        bad_examples=list(stats.examples),
        write_drain_rates=list(DRAIN_RATES),
        write_backlog_bytes=[int(b) for b in summary.backlog],
        curve_read_hit_ratio=_listed(curve.read_hit_ratio),
        curve_read_steady_hit_ratio=_listed(curve.read_steady),
        chunk_curve_read_hit_ratio=_listed(chunk[0].read_hit_ratio) if chunk is not None else [],
        chunk_curve_read_steady_hit_ratio=_listed(chunk[0].read_steady) if chunk is not None else [],
        coarse_chunk_curves=coarse or [],
        smq_chunk_size=CHUNK if dmcache else None,
        smq_sizes_blocks=list(dmcache.sizes) if dmcache else [],
        smq_read_hit_ratio=list(dmcache.read_hit_ratio) if dmcache else [],
        smq_seconds_63=list(dmcache.seconds_63) if dmcache else [],
        smq_read_hit_days=dmcache.read_hit_days if dmcache else [],
        bcache_bucket_size=bcachesim.BUCKET if bcache else None,
        bcache_sizes_bytes=list(bcache.sizes) if bcache else [],
        bcache_read_hit_ratio=list(bcache.read_hit_ratio) if bcache else [],
        bcache_seconds_63=list(bcache.seconds_63) if bcache else [],
        bcache_read_hit_days=bcache.read_hit_days if bcache else [],
        replay_window_seconds=windows.seconds if windows else 0.0,
        replay_window_requests=windows.requests if windows else [],
        replay_window_reads=windows.reads if windows else [],
        smq_window_read_hits=dmcache.window_read_hits if dmcache else [],
        smq_window_read_misses=dmcache.window_read_misses if dmcache else [],
        bcache_window_read_hits=bcache.window_read_hits if bcache else [],
        bcache_window_read_misses=bcache.window_read_misses if bcache else [],
    )


@dataclass(frozen=True)
class ReplayCurve:
    sizes: list[int]  # SMQ chunks, or bytes for bcache
    read_hit_ratio: list[float | None]
    seconds_63: list[float | None]
    # per size, the read hits and misses in each of REPLAY_WINDOWS windows of the passes its
    # read hit ratio was read over (the second, or the second to the last: _settled), summed
    window_read_hits: list[list[int]] = field(default_factory=list)
    window_read_misses: list[list[int]] = field(default_factory=list)
    read_hit_days: list[list[float]] = field(default_factory=list)  # per size: Settled.each


@dataclass(frozen=True)
class Windows:
    """The trace cut into REPLAY_WINDOWS windows of ``seconds`` from ``start`` (its first
    request): each window's requests and reads."""

    start: float
    seconds: float
    requests: list[int]
    reads: list[int]


def replay_windows(requests: Requests) -> Windows | None:
    """The requests counted in REPLAY_WINDOWS windows of the span the replays run over (None:
    no requests)."""
    if not len(requests):
        return None
    t = requests["t"]
    start, end = float(t[0]), float(t[-1])
    width = max(end - start, 1e-9) / REPLAY_WINDOWS
    at = np.minimum(((t - start) / width).astype(np.int64), REPLAY_WINDOWS - 1)
    reads = ~requests["write"].astype(bool)
    return Windows(
        start,
        round(width, 6),
        np.bincount(at, minlength=REPLAY_WINDOWS).tolist(),
        np.bincount(at[reads], minlength=REPLAY_WINDOWS).tolist(),
    )


def _windowed(
    r: timeline.Replay, windows: Windows, start: float, day: float, days: range = range(1, 2), passes: int = 2
) -> tuple[list[int], list[int]]:
    """The read hits and misses of passes ``days`` (1: the second) of a replay fed the trace
    ``passes`` times (its requests from ``start`` on, again ``day`` later each time) in each of
    the trace's windows, summed over those passes (their ratios are what is read: a sampled
    window's few reads keep theirs); the last window of the replay's last pass takes all that
    follows, and no window reaches back into the pass before or on into the next (a replay of
    fewer requests than the windows count, bcache's without a capture's streams, may begin
    later or end sooner). The replays count once a second, so an edge takes the reads up to the
    tick before it: up to a second early."""
    hits, misses = [0] * REPLAY_WINDOWS, [0] * REPLAY_WINDOWS
    firsts = [max(windows.start + k * windows.seconds, start) for k in range(REPLAY_WINDOWS)]
    for d in days:
        after = firsts[0] + (d + 1) * day if d < passes - 1 else float("inf")
        counted = [timeline.counted_at(r, min(e + d * day, after)) for e in firsts] + [timeline.counted_at(r, after)]
        for k, (a, b) in enumerate(zip(counted, counted[1:], strict=False)):
            hits[k] += b[0] - a[0]
            misses[k] += b[1] - a[1]
    return hits, misses


SETTLED = 0.05  # read hit ratio by which a replay's second pass may differ and count as settled
AVERAGED_PASSES = 5  # a replay whose second pass did not settle is fed the trace this many times (odd:
# an even number of passes from the second on, which _settled compares in halves)


@dataclass(frozen=True)
class Settled:
    """A replay's outcome: the read hit ratio its cache settles at (None: it had not settled),
    the seconds the first pass took to reach 63% of it (None: not within the trace), and the
    read hit ratio of each pass it was read over (the second alone, or the second and those
    after; none where it had not settled)."""

    read_hit_ratio: float | None
    seconds_63: float | None
    each: tuple[float, ...] = ()

    @property
    def days(self) -> range:
        """The passes it was read over (1: the second); the second where it had not settled."""
        return range(1, 1 + max(len(self.each), 1))


def _settled(r: timeline.Replay, start: float, end: float, day: float, passes: int = 2) -> Settled | None:
    """A replay of the trace fed ``passes`` times (two, or AVERAGED_PASSES where two did not
    settle). None: no reads counted. The second pass has settled when its last third is no more
    than SETTLED above the whole pass (not still climbing). A day in phases (a hot set, a
    scan, another hot set) reads higher in its evening than over its whole though it reads the
    same each day: it has settled when the third pass reads as the second did (within SETTLED).
    And its passes may not read alike: smq's queues are redistributed once a minute of the
    cache's own clock, whose moment in the day nobody can know, and in a day of short phases that
    moment decides which phase's chunks the cache keeps. Passes a day apart meet it at different
    moments, and may read 0.2 apart from one day to the next: where the passes from the second
    on move up and down (one reads more than SETTLED / 2 below the pass before it, or their
    later half no more than SETTLED above their earlier half: not a cache still filling, whose
    passes climb one after the other), the cache settles at what they read together, the mean a
    next day can expect. Four passes cannot always tell a climb with a dip from moves up and
    down (0.20, 0.35, 0.33, 0.50 reads as both): the mean is taken then, which errs low by a
    few points where the chunk curve, a full LRU cache's, errs high by twenty and more (the lab's
    next day, docs/recommend.md)."""

    def read(d: int) -> float | None:
        until = start + (d + 1) * day if d < passes - 1 else float("inf")
        return timeline.read_hit_ratio_between(r, start + d * day, until)

    second = read(1)
    if second is None:
        return None
    late = timeline.read_hit_ratio_between(
        r, start + day + (end - start) * 2 / 3, start + 2 * day if passes > 2 else float("inf")
    )
    value: float | None = second
    each: tuple[float, ...] = (second,)
    if late is None or late - second > SETTLED:
        following = [read(d) for d in range(2, passes)]
        value = None
        if following and following[0] is not None and abs(following[0] - second) <= SETTLED:
            value = second
        elif len(following) > 1:
            half = start + (1 + (passes - 1) // 2) * day  # the passes from the second on, in halves
            early = timeline.read_hit_ratio_between(r, start + day, half)
            later = timeline.read_hit_ratio_between(r, half, float("inf"))
            ratios = [second, *following]
            falls = any(
                b is not None and a is not None and b < a - SETTLED / 2
                for a, b in zip(ratios, ratios[1:], strict=False)
            )
            if early is not None and later is not None and (falls or later - early <= SETTLED):
                value = timeline.read_hit_ratio_between(r, start + day, float("inf"))
                each = tuple(x for x in ratios if x is not None)
    t63 = timeline.seconds_to_share(r, start, value if value is not None else second)
    return Settled(
        round(value, 6) if value is not None else None,
        round(t63, 1) if t63 is not None and t63 <= end - start + 1 else None,
        tuple(round(x, 4) for x in each) if value is not None else (),
    )


def smq_curve(
    requests: Requests, origin_bytes: int | None = None, windows: Windows | None = None, also: Sequence[int] = ()
) -> ReplayCurve | None:
    """dm-cache's smq policy replayed over the requests at SMQ_SIZES cache sizes from 1 MiB to
    the chunks the trace touches (None: no requests, or more than SMQ_PIECES pieces). Each cache
    starts empty and is fed the trace twice, the second time just after the first, as the next day
    would be if it were like this one: the read hit ratio of the second pass is what the cache
    settles at, and the time to 63% of it is taken from the first pass, at the trace's own rate
    (_settled). ``origin_bytes``: the traced device's size (a cachewise trace records it; else
    the highest chunk touched stands in: smq's hotspot blocks depend on it below 1 GiB).
    ``also``: cache sizes in bytes to replay as well, where they fall within those sizes (the
    sizes a recommendation will ask about: a budget, an SSD's size)."""
    if not len(requests) or len(requests) > SMQ_PIECES or smq.piece_count(requests, CHUNK) > SMQ_PIECES:
        return None  # (a request is at least one piece: the count is not needed past the budget)
    t, block, write, whole = smq.pieces(requests, CHUNK)
    start, end = float(t[0]), float(t[-1])
    day = end - start + smq.TICK_S
    origin = max(origin_bytes or 0, (int(block.max()) + 1) * CHUNK)

    def fed(n: int, passes: int) -> timeline.Replay:
        days = (
            np.concatenate([t + k * day for k in range(passes)]),
            *(np.tile(x, passes) for x in (block, write, whole)),
        )
        return smq.replay_pieces(days, n, CHUNK, origin)

    top = max(len(np.unique(block)), SMQ_SMALLEST)
    sizes = _sizes(SMQ_SMALLEST, top, [round(b / CHUNK) for b in also])
    return _replayed(sizes, fed, start, end, day, windows)


def bcache_curve(requests: Requests, windows: Windows | None = None, also: Sequence[int] = ()) -> ReplayCurve | None:
    """bcache replayed over the requests at up to SMQ_SIZES cache sizes (in bytes, whole
    buckets) from BCACHE_SMALLEST to a little more than the 4 KiB blocks the trace touches, and
    at the sizes ``also`` (bytes) within them, fed twice as smq_curve's are (None: no requests or
    no reads cached, or more than BCACHE_BLOCKS blocks)."""
    if not len(requests) or len(requests) > BCACHE_BLOCKS or smq.piece_count(requests, bcachesim.BLOCK) > BCACHE_BLOCKS:
        return None  # (counted before the blocks are listed, as smq_curve's pieces are)
    start, end = float(requests["t"][0]), float(requests["t"][-1])
    day = end - start + bcachesim.TICK_S
    footprint = len(np.unique(to_blocks(requests, bcachesim.BLOCK)))
    smallest = BCACHE_SMALLEST // bcachesim.BUCKET
    top = max(-(-footprint * bcachesim.BLOCK * 5 // (4 * bcachesim.BUCKET)), smallest)  # whole buckets, up
    sizes = [b * bcachesim.BUCKET for b in _sizes(smallest, top, [b // bcachesim.BUCKET for b in also])]
    return _replayed(
        sizes, lambda size, passes: bcachesim.replay(requests, size, passes=passes), start, end, day, windows
    )


def _sizes(smallest: int, top: int, asked: list[int]) -> list[int]:
    """The sizes a replay runs at, in its units: SMQ_SIZES from ``smallest`` to ``top`` spread
    evenly in proportion, and those ``asked`` that fall within them."""
    grid = np.geomspace(smallest, top, SMQ_SIZES).round().astype(np.int64)
    within = np.asarray([n for n in asked if smallest <= n <= top], np.int64)
    return [int(n) for n in np.unique(np.concatenate([grid, within]))]


def _replayed(
    sizes: list[int],
    run: Callable[[int, int], timeline.Replay],
    start: float,
    end: float,
    day: float,
    windows: Windows | None = None,
) -> ReplayCurve | None:
    """Each size's replay of the trace fed twice (``run(size, passes)``), settled (_settled; fed
    AVERAGED_PASSES times only where the second pass was not), and the passes it was read over
    cut by ``windows`` (none
    without); None when one counted no reads (none, or every one bypassed)."""
    outcomes = []
    hits, misses = [], []
    for size in sizes:
        replay, passes = run(size, 2), 2
        outcome = _settled(replay, start, end, day)
        if outcome is not None and outcome.read_hit_ratio is None:
            replay, passes = run(size, AVERAGED_PASSES), AVERAGED_PASSES
            outcome = _settled(replay, start, end, day, passes)
        if outcome is None:
            return None
        outcomes.append(outcome)
        if windows is not None:
            h, m = _windowed(replay, windows, start, day, outcome.days, passes)
            hits.append(h)
            misses.append(m)
    return ReplayCurve(
        sizes,
        [o.read_hit_ratio for o in outcomes],
        [o.seconds_63 for o in outcomes],
        hits,
        misses,
        [list(o.each) for o in outcomes],
    )


def _listed(values: npt.NDArray[np.float64] | None) -> list[float]:
    return [round(float(v), 6) for v in values] if values is not None else []


def analyze(
    trace: Trace,
    block_size: int = MIN_BLOCK,
    mode: Literal["auto", "exact", "shards"] = "auto",
    sequential_cutoff: int = SEQUENTIAL_CUTOFF,
    disk: Requests | None = None,
    replay_sizes: Sequence[int] = (),
) -> Analysis:
    """Analyse a trace held in memory. Streams past ``sequential_cutoff`` bytes (0: none) are
    counted apart from the curve, as a cache bypasses them. ``disk``: every request the device
    saw, when the trace holds only those a cache would see (a capture's streams, marked at
    capture time, are left out of its trace): dm-cache bypasses no stream, so its replay and
    the windows take them (None: the trace's own). ``replay_sizes``: cache sizes (bytes) the
    kernels' replays run at besides their own (smq_curve's ``also``)."""
    with _small_pages():
        return _analyze(
            trace, block_size, mode, release=False, cutoff=sequential_cutoff, disk=disk, replay_sizes=replay_sizes
        )


def _analyze(
    trace: Trace,
    block_size: int,
    mode: Literal["auto", "exact", "shards"],
    release: bool,
    cutoff: int = SEQUENTIAL_CUTOFF,
    summarised: tuple[_Summary, npt.NDArray[np.bool_] | None] | None = None,
    disk: Requests | None = None,
    replay_sizes: Sequence[int] = (),
) -> Analysis:
    """analyze(); with ``release`` the trace's requests are dropped once their blocks are known
    (its caller has no further use for them), which keeps 10 million requests' 210 MB out of
    the peak. ``summarised``: the requests already fed to a _Summary of ``cutoff``, and which
    it bypasses; ``disk`` and ``replay_sizes``: as analyze's."""
    _check_block_size(block_size)
    size = trace.meta.get("size_bytes")
    every = trace.requests if disk is None else disk
    windows = replay_windows(every)
    origin = size if isinstance(size, int) and size > 0 else None
    dmcache = smq_curve(every, origin, windows, replay_sizes)
    if dmcache is None and disk is not None:  # the streams took it past its budget: the rest alone
        dmcache = smq_curve(trace.requests, origin, windows, replay_sizes)
    bcache = bcache_curve(trace.requests, windows, replay_sizes)
    if not dmcache and not bcache:
        windows = None
    if summarised is None:
        summary = _Summary(cutoff)
        bypass = summary.feed_requests(trace.requests)
    else:
        summary, bypass = summarised
    summary.fed()
    passes = None
    if mode != "shards" and summary.requests - summary.bypassed >= COMPILED_PASSES_FROM:
        passes = _exact_passes(trace.requests, block_size, bypass, mode == "auto")
    if passes is None:
        curve, chunk, coarse = _curves_from_blocks(trace, block_size, mode, release, summary, bypass)
    else:
        main, chunk_pass = passes
        summary.feed_blocks(main.accesses, main.ids, main.counts)
        curve, chunk, coarse = main.curve, None, []
        if chunk_pass is not None:
            chunk = (chunk_pass.curve, len(chunk_pass.ids), chunk_pass.accesses)
            if chunk[1] > LVM_MAX_CHUNKS:
                cached = trace.requests if bypass is None else trace.requests[~bypass]
                in_chunks, per = blocks_per_request(cached, CHUNK)
                reads = ~cached["write"].astype(bool)
                del cached
                chunk_reads = reads if per is None else np.repeat(reads, per)
                coarse = _coarse_curves(in_chunks, per, chunk_reads, chunk[1], "exact")
        if release:
            trace.requests = trace.requests[:0].copy()
    return _result(
        summary,
        curve,
        block_size,
        trace.path,
        trace.source_format,
        trace.stats,
        chunk,
        coarse,
        dmcache,
        bcache,
        windows,
    )


def _curves_from_blocks(
    trace: Trace,
    block_size: int,
    mode: Literal["auto", "exact", "shards"],
    release: bool,
    summary: _Summary,
    bypass: npt.NDArray[np.bool_] | None,
) -> tuple[mrc.Curve, tuple[mrc.Curve, int, int] | None, list[CoarseCurve]]:
    """The curves (block_size's, CHUNK's, the coarser chunks') from arrays of the trace's block
    numbers: a SHARDS curve, or an exact one of a trace too short for _exact_passes."""
    cached = trace.requests if bypass is None else trace.requests[~bypass]
    del bypass
    reads = ~cached["write"].astype(bool)  # by request
    chunks = blocks_per_request(cached, CHUNK) if block_size < CHUNK else None
    blocks, per_request = blocks_per_request(cached, block_size)
    del cached
    if release:
        trace.requests = trace.requests[:0].copy()  # a fresh array: a slice would keep the whole alive
    shards = mode == "shards" or (mode == "auto" and len(blocks) > mrc.EXACT_LIMIT)
    if shards:
        summary.feed_blocks(len(blocks), *np.unique(blocks, return_counts=True))
        # Requests, as the exact curve counts them (bcache's rule): one counting rule in both modes.
        curve = mrc.lru_curve(
            blocks, mrc.default_sizes(len(summary.counts())), "shards", reads=reads, per_request=per_request
        )
    else:
        # Exact: the one relabelling serves the footprint counts and the stack distances.
        ids, dense, counts = mrc.relabel(blocks)
        summary.feed_blocks(len(blocks), ids, counts)
        del blocks
        curve = mrc.exact_curve_dense(dense, len(ids), mrc.default_sizes(len(ids)), per_request, reads)
        del dense
    chunk, coarse = None, list[CoarseCurve]()
    if chunks is not None:
        in_chunks, per = chunks
        how: Literal["exact", "shards"] = "shards" if shards else "exact"
        chunk_reads = reads if per is None else np.repeat(reads, per)
        chunk = _chunk_curve(in_chunks, how, chunk_reads)
        if chunk[1] > LVM_MAX_CHUNKS:
            coarse = _coarse_curves(in_chunks, per, chunk_reads, chunk[1], how)
    return curve, chunk, coarse


def _exact_passes(
    requests: Requests, block_size: int, bypass: npt.NDArray[np.bool_] | None, auto: bool
) -> tuple[exact.Pass, exact.Pass | None] | None:
    """The exact curves of the requests not bypassed at ``block_size`` and at CHUNK (None when
    block_size is not smaller) by advisor.workload.exact, side by side on two threads; None
    when ``auto`` and they make more than mrc.EXACT_LIMIT block accesses (SHARDS then)."""
    exact.load()
    keep = None if bypass is None else ~bypass
    chunks = exact.count(requests, CHUNK, keep) if block_size < CHUNK else None
    if chunks is not None:
        _check_accesses(chunks, CHUNK)
    blocks = exact.count(requests, block_size, keep)
    _check_accesses(blocks, block_size)
    if auto and blocks.accesses > mrc.EXACT_LIMIT:
        return None
    reads = requests["write"] == 0
    if keep is not None:
        reads = reads[keep]
    if chunks is None:
        return exact.lru_pass(requests, block_size, keep, reads, True, blocks), None
    with ThreadPoolExecutor(1) as beside:
        chunk = beside.submit(exact.lru_pass, requests, CHUNK, keep, reads, False, chunks)
        main = exact.lru_pass(requests, block_size, keep, reads, True, blocks)
        return main, chunk.result()


def _check_accesses(counted: exact.Counted, block_size: int) -> None:
    if counted.accesses > MAX_ACCESSES:
        raise TraceError(
            f"its {counted.requests:,} requests make {counted.accesses:,} accesses of {block_size} bytes, "
            f"more than the {MAX_ACCESSES:,} analysed at once",
            code="too-many-accesses",
        )


def coarse_chunks(footprint_chunks: int) -> list[int]:
    """The coarser chunks to measure for a trace touching ``footprint_chunks`` of CHUNK: doubling
    from 2 x CHUNK until one holds what lvm2 gives a pool of the whole footprint (its chunk keeps
    the pool under LVM_MAX_CHUNKS, in multiples of 32 KiB)."""
    needed = -(-footprint_chunks * CHUNK // LVM_MAX_CHUNKS)
    out, size = [], CHUNK
    while size < needed:
        size *= 2
        out.append(size)
    return out


def _coarse_curves(
    chunks: mrc.Blocks,
    per_request: npt.NDArray[np.int64] | None,
    reads: npt.NDArray[np.bool_],
    footprint_chunks: int,
    mode: Literal["exact", "shards"],
) -> list[CoarseCurve]:
    """The chunk curve at each coarser chunk, from the CHUNK accesses: a request's accesses that
    fall in one coarser chunk are one access of it."""
    starts = None if per_request is None else np.cumsum(per_request) - per_request
    out = []
    for size in coarse_chunks(footprint_chunks):
        coarse = chunks // (size // CHUNK)
        these = reads
        if starts is not None:
            keep = np.ones(len(coarse), dtype=bool)
            keep[1:] = coarse[1:] != coarse[:-1]
            keep[starts] = True
            coarse, these = coarse[keep], reads[keep]
            del keep
        curve, distinct, _ = _chunk_curve(coarse, mode, these)
        del coarse, these
        out.append(
            CoarseCurve(
                size,
                [int(x) for x in curve.sizes],
                _listed(curve.hit_ratio),
                _listed(curve.steady),
                _listed(curve.read_hit_ratio),
                _listed(curve.read_steady),
                distinct,
            )
        )
    return out


def _chunk_curve(
    chunks: mrc.Blocks, mode: Literal["exact", "shards"], reads: npt.NDArray[np.bool_] | None = None
) -> tuple[mrc.Curve, int, int]:
    """The LRU curve over dm-cache chunks, how many distinct chunks were touched, and how many
    chunk accesses there were; ``reads``: which chunk accesses are reads."""
    accesses = len(chunks)
    if mode == "shards":
        distinct = len(np.unique(chunks))
        return mrc.lru_curve(chunks, mrc.default_sizes(distinct), "shards", reads=reads), distinct, accesses
    ids, dense, _ = mrc.relabel(chunks)
    del chunks
    return mrc.exact_curve_dense(dense, len(ids), mrc.default_sizes(len(ids)), reads=reads), len(ids), accesses


def analyze_stream(
    chunks: Iterable[Requests],
    expected_requests: int,
    block_size: int,
    source: str,
    source_format: str,
    stats: ImportStats,
    sequential_cutoff: int = SEQUENTIAL_CUTOFF,
) -> Analysis:
    """Analyse a trace too long to hold, chunk by chunk, with a SHARDS curve: memory follows
    the footprint and the sample, not the trace (each block's count is kept by number in a hash
    table, not merged by sorting at every chunk: bench_stream)."""
    _check_block_size(block_size)
    exact.load()
    summary = _Summary(sequential_cutoff)
    sampler: mrc.ShardsSampler | None = None
    chunk_sampler: mrc.ShardsSampler | None = None
    counted = exact.BlockCounts(block_size)
    chunks_touched = exact.Numbering(CHUNK, load=3)
    accesses = chunk_accesses = 0
    for whole in chunks:
        bypass = summary.feed_requests(whole)
        part = whole if bypass is None else whole[~bypass]
        blocks, per = blocks_per_request(part, block_size)
        reads = ~part["write"].astype(bool)
        if sampler is None:
            per_request = len(blocks) / max(len(part), 1)
            sampler = mrc.ShardsSampler(mrc.shards_rate(int(expected_requests * per_request)))
            chunk_sampler = mrc.ShardsSampler(mrc.shards_rate(expected_requests)) if block_size < CHUNK else None
        counted.feed(part, len(blocks))
        accesses += len(blocks)
        sampler.feed(blocks, reads, per)
        if chunk_sampler is not None:
            in_chunks, per = blocks_per_request(part, CHUNK)
            chunk_sampler.feed(in_chunks, reads if per is None else np.repeat(reads, per))
            chunks_touched.feed(part, None)
            chunk_accesses += len(in_chunks)
    if sampler is None:
        raise ValueError("the trace holds no requests")
    stats.requests = summary.requests
    summary.feed_blocks(accesses, None, counted.counts())
    curve = sampler.curve(mrc.default_sizes(len(summary.counts())))
    chunk = (
        (chunk_sampler.curve(mrc.default_sizes(chunks_touched.distinct)), chunks_touched.distinct, chunk_accesses)
        if chunk_sampler is not None
        else None
    )
    return _result(summary, curve, block_size, source, source_format, stats, chunk)


# A long trace is read this many requests at a time (analyze_stream, analyze_stream_exact), and
# an exact one classed at most this many block accesses at a time (a chunk of large requests is
# cut in pieces); an
# exact analysis of one is refused once it touches more distinct blocks than this: its hash
# table, LRU stack and counts hold 45 to 70 bytes a block (bench_stream: 741 MiB peak for 10
# million).
STREAM_CHUNK = 1 << 20
STREAM_ACCESSES = 1 << 22
EXACT_STREAM_BLOCKS = 25_000_000
# Where a progress callback is given, it hears (what is being done, the share of it done).
Progress = Callable[[str, float], None]


def analyze_stream_exact(
    path: Path,
    block_size: int,
    source_format: str,
    stats: ImportStats,
    sequential_cutoff: int = SEQUENTIAL_CUTOFF,
    progress: Progress | None = None,
) -> Analysis:
    """The exact curves of a cachewise trace too long to hold, read twice in chunks: the first
    reading makes the request figures and numbers the blocks (a hash table that outlives the
    chunks), the second classes each access (advisor.workload.exact's marker pass, or its
    Fenwick tree when the markers give up: then a third). Memory follows the footprint, not
    the trace: 100 million requests over 10 million blocks in about 800 MiB (bench_stream). The two
    block sizes run side by side on two threads. Like analyze_stream, it leaves out the coarser
    chunks' curves and the smq and bcache replays. ``stats`` gets the records left out as bad."""
    _check_block_size(block_size)
    exact.load()
    records = cachewise_records(path)  # read again: a trace still growing is read as it was
    summary = _Summary(sequential_cutoff)
    sizes = [block_size] + ([CHUNK] if block_size < CHUNK else [])
    numberings = [exact.Numbering(size, load=3) for size in sizes]
    kept: list[tuple[int, npt.NDArray[np.uint8] | None]] = []  # each chunk's requests, and those kept (packed)
    told = _Told(progress, records)
    with ThreadPoolExecutor(1) as beside:
        for whole in iter_cachewise(path, STREAM_CHUNK, records, stats):
            bypass = summary.feed_requests(whole)
            keep = None if bypass is None else ~bypass
            kept.append((len(whole), None if keep is None else np.packbits(keep)))
            numbered = [beside.submit(n.feed, whole, keep) for n in numberings[1:]]
            numberings[0].feed(whole, keep)
            for future in numbered:
                future.result()
            _check_footprint(numberings[0])
            told.read(0, "numbering the blocks", len(whole))
        summary.fed()
        if not summary.requests:
            raise ValueError("the trace holds no requests")
        stats.requests = summary.requests
        stop = threading.Event()  # the main pass failed or was interrupted: the other stops too
        chunk_pass = None
        if len(numberings) > 1:
            chunk_pass = beside.submit(_classed, path, records, numberings[1], kept, False, told, 1, stop)
        try:
            main = _classed(path, records, numberings[0], kept, True, told, 0, stop)
        except BaseException:
            stop.set()
            raise
        chunk_classed = chunk_pass.result() if chunk_pass is not None else None
    chunk = None
    if chunk_classed is not None:
        chunk = (chunk_classed.curve(), numberings[1].distinct, numberings[1].counted.accesses)
    accesses = numberings[0].counted.accesses
    del numberings, chunk_classed  # the hash tables go before the figures are made (the peak)
    curve, counts = main.curve(), main.block_counts()
    del main
    summary.feed_blocks(accesses, None, counts)
    del counts
    return _result(summary, curve, block_size, str(path), source_format, stats, chunk)


class _Told:
    """The progress of analyze_stream_exact's passes (one a block size, on two threads), told as
    the one furthest behind among those still running: what it is doing, and how far."""

    def __init__(self, progress: Progress | None, records: int) -> None:
        self.progress, self.records = progress, max(records, 1)
        self.where: dict[int, tuple[str, int]] = {}
        self.lock = threading.Lock()

    def read(self, which: int, what: str, requests: int) -> None:
        """Pass ``which`` read ``requests`` more in doing ``what`` (a new ``what`` starts at 0)."""
        if self.progress is None:
            return
        with self.lock:
            before, done = self.where.get(which, (what, 0))
            self.where[which] = (what, done + requests if before == what else requests)
            stage, behind = min(self.where.values(), key=lambda w: w[1])
            self.progress(stage, behind / self.records)

    def finished(self, which: int) -> None:
        with self.lock:
            self.where.pop(which, None)


class _Stopped(Exception):
    """The other pass stopped: this one ends too."""


def _check_footprint(numbering: exact.Numbering) -> None:
    if numbering.distinct > EXACT_STREAM_BLOCKS:
        raise TraceError(
            f"it touches more than {EXACT_STREAM_BLOCKS:,} distinct blocks of {numbering.block_size} bytes, more "
            f"than an exact analysis holds in memory (about {EXACT_STREAM_BLOCKS * 50 >> 30} GiB)",
            code="footprint-too-large",
        )


def _classed(
    path: Path,
    records: int,
    numbering: exact.Numbering,
    kept: list[tuple[int, npt.NDArray[np.uint8] | None]],
    by_request: bool,
    told: _Told,
    which: int,
    stop: threading.Event,
) -> exact.Classing:
    """The second reading of analyze_stream_exact at one block size: by the marker pass, or by
    the Fenwick tree in a third when the marker pass gives up."""
    classing = _classing_reading(path, records, numbering, kept, by_request, False, told, which, stop)
    if classing is None:  # the markers gave up: the Fenwick tree does not
        classing = _classing_reading(path, records, numbering, kept, by_request, True, told, which, stop)
    assert classing is not None
    told.finished(which)
    return classing


def _classing_reading(
    path: Path,
    records: int,
    numbering: exact.Numbering,
    kept: list[tuple[int, npt.NDArray[np.uint8] | None]],
    by_request: bool,
    fenwick: bool,
    told: _Told,
    which: int,
    stop: threading.Event,
) -> exact.Classing | None:
    counted = numbering.counted
    units = counted.requests if by_request else counted.accesses
    classing = exact.Classing(numbering.distinct, units, counted.accesses, by_request, fenwick)
    what = "counting the curve" + (" again, by stack distances" if fenwick else "")
    for requests, dense, per, reads in _looked_up(path, records, numbering, kept):
        if stop.is_set():
            raise _Stopped
        if not classing.feed(dense, per, reads):
            return None
        told.read(which, what, requests)
    return classing


def _looked_up(
    path: Path, records: int, numbering: exact.Numbering, kept: list[tuple[int, npt.NDArray[np.uint8] | None]]
) -> Iterator[tuple[int, npt.NDArray[np.int32], npt.NDArray[np.int32], npt.NDArray[np.bool_]]]:
    """Each chunk's pieces: (requests, numbers of the kept requests' accesses, their block
    counts, their kinds), at most STREAM_ACCESSES accesses a piece (a chunk of large requests
    is cut at requests); the next chunk read and looked up on another thread while this one is
    classed. TraceError when the trace is not what the first reading read."""

    def pieces(whole: Requests, keep: npt.NDArray[np.bool_] | None) -> list[tuple[int, Any, Any, Any]]:
        counted = exact.count(whole, numbering.block_size, keep)
        if counted.accesses > STREAM_ACCESSES and len(whole) > 1:
            half = len(whole) // 2
            return [
                *pieces(whole[:half], None if keep is None else keep[:half]),
                *pieces(whole[half:], None if keep is None else keep[half:]),
            ]
        looked = numbering.lookup(whole, keep, counted)
        if looked is None:
            raise _changed()
        reads = whole["write"] == 0
        return [(len(whole), *looked, reads if keep is None else reads[keep])]

    def unpacked(whole: Requests, packed: npt.NDArray[np.uint8] | None) -> list[tuple[int, Any, Any, Any]]:
        return pieces(whole, None if packed is None else np.unpackbits(packed, count=len(whole)).view(np.bool_))

    chunks = iter_cachewise(path, STREAM_CHUNK, records)
    with ThreadPoolExecutor(1) as ahead:
        pending = None
        for length, packed in kept:
            whole = next(chunks, None)
            if whole is None or len(whole) != length:
                raise _changed()
            following = ahead.submit(unpacked, whole, packed)
            if pending is not None:
                yield from pending.result()
            pending = following
        if pending is not None:
            yield from pending.result()


def _changed() -> TraceError:
    return TraceError("it changed while it was being read (an exact analysis reads it twice)")


def _told(chunks: Iterator[Requests], records: int, progress: Progress | None) -> Iterator[Requests]:
    """The chunks, with ``progress`` told the share of the ``records`` read after each."""
    done = 0
    for chunk in chunks:
        yield chunk
        done += len(chunk)
        if progress is not None:
            progress("sampling the curve", done / max(records, 1))


def analyze_path(
    path: Path,
    block_size: int = MIN_BLOCK,
    mode: Literal["auto", "exact", "shards"] = "auto",
    fmt: Format = "auto",
    layout: CsvLayout = MSR,
    sequential_cutoff: int = SEQUENTIAL_CUTOFF,
    progress: Progress | None = None,
    replay_sizes: Sequence[int] = (),
) -> tuple[Analysis, dict[str, Any]]:
    """Analyse a trace file of any supported format: (analysis, the trace's own metadata).
    Long cachewise traces are read in chunks, in memory bounded by the footprint: by SHARDS
    (auto, shards) or exactly in two readings (exact); ``progress`` hears how far they are.
    ``replay_sizes``: as analyze's (a trace read in chunks is not replayed)."""
    if fmt == "auto" and path.is_file():
        fmt = detect_format(path)
    records = cachewise_records(path) if fmt == "cachewise" else 0
    if records > STREAM_REQUESTS:
        stats = ImportStats(lines=records, requests=records)
        if mode == "exact":
            result = analyze_stream_exact(path, block_size, fmt, stats, sequential_cutoff, progress)
        else:
            result = analyze_stream(
                _told(iter_cachewise(path, STREAM_CHUNK, records, stats), records, progress),
                records,
                block_size,
                str(path),
                fmt,
                stats,
                sequential_cutoff,
            )
        return result, read_cachewise_meta(path)
    # The request figures (the stream detector's above all) are made as the trace is read, by
    # a thread that follows the reader (the compiled fio reader offers its requests).
    follower = _Follower(_Summary(sequential_cutoff))
    with _small_pages():
        try:
            trace = load_trace(path, fmt, layout, on_requests=follower.offer)
        finally:
            follower.stop()
        summarised = (follower.summary, follower.finish(trace.requests))
        analysis = _analyze(
            trace,
            block_size,
            mode,
            release=True,
            cutoff=sequential_cutoff,
            summarised=summarised,
            replay_sizes=replay_sizes,
        )
    return analysis, trace.meta
