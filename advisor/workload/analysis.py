"""What a block trace says about caching it: footprint, mix, the LRU miss-ratio curve and the
hot-data ratio (L-SIZE-4: measure the real workload before sizing a cache)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from advisor.workload import mrc
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
SIZE_BUCKETS = (4096, 8192, 16384, 32768, 65536, 131072, 262144, 524288, 1 << 20)


# Block accesses analysed at once (8 bytes each, and a few arrays of them): a larger expansion
# means a trace of huge requests at a small block size.
MAX_ACCESSES = 200_000_000


def to_blocks(requests: Requests, block_size: int) -> mrc.Blocks:
    """Split each request into the cache blocks it touches, in order."""
    first: mrc.Blocks = (requests["offset"] // np.uint64(block_size)).view(np.int64)  # offsets < 2^60
    # The usual trace has every request within one block: then the first blocks are the blocks.
    # Checked a slice at a time, so the check costs no second array of the trace's length.
    for at in range(0, len(requests), FEED_CHUNK):
        part = requests[at:at + FEED_CHUNK]
        last = (part["offset"] + np.maximum(part["length"], 1).astype(np.uint64) - np.uint64(1)) // np.uint64(block_size)
        if not np.array_equal(last.view(np.int64), first[at:at + FEED_CHUNK]):
            break
    else:
        return first
    del first
    offset = requests["offset"].astype(np.int64)
    first = offset // block_size
    offset += np.maximum(requests["length"], 1)
    offset -= 1
    offset //= block_size  # now each request's last block
    counts = offset - first + 1
    del offset
    if int(counts.sum()) > MAX_ACCESSES:
        raise TraceError(f"its {len(requests):,} requests make {int(counts.sum()):,} accesses of {block_size} bytes, "
                         f"more than the {MAX_ACCESSES:,} analysed at once; give a larger --block-size")
    starts = np.repeat(np.cumsum(counts) - counts, counts)
    blocks: mrc.Blocks = np.repeat(first, counts) + (np.arange(int(counts.sum()), dtype=np.int64) - starts)
    return blocks


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
    hot_shares: list[float]
    hot_footprint_fraction: list[float]
    hot_blocks: list[int]
    zipf_alpha: float | None
    # The LRU curve again at dm-cache's smallest chunk (CHUNK), when block_size is smaller: a chunk
    # is cached whole, so this is the curve an lvmcache follows (empty when not computed).
    chunk_size: int | None
    chunk_curve_sizes_blocks: list[int]
    chunk_curve_hit_ratio: list[float]
    chunk_footprint_blocks: int
    lines: int
    skipped_lines: int
    bad_lines: int
    bad_examples: list[str]
    schema: str = ANALYSIS_SCHEMA

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


FEED_CHUNK = 1 << 20  # requests summarised at a time


class _Summary:
    """Everything but the curve, accumulated chunk by chunk (bounded by the footprint)."""

    def __init__(self) -> None:
        self.requests = self.accesses = self.reads = self.writes = self.read_bytes = self.write_bytes = 0
        self.sequential = 0
        self.t_min, self.t_max = np.inf, -np.inf
        self.sizes = np.zeros(len(SIZE_BUCKETS) + 1, np.int64)
        self._ids = np.zeros(0, np.int64)
        self._counts = np.zeros(0, np.int64)
        self._last_end: int | None = None

    def feed(self, req: Requests, blocks: mrc.Blocks) -> None:
        """Add a chunk of requests and the blocks they touch."""
        if not len(req):
            return
        self.feed_requests(req)
        self.feed_blocks(len(blocks), *np.unique(blocks, return_counts=True))

    def feed_requests(self, req: Requests) -> None:
        """The request-level figures of a chunk: mix, bytes, sizes, sequential share, times;
        a slice at a time, so that the temporaries stay small beside a long trace."""
        for at in range(0, len(req), FEED_CHUNK):
            self._feed_requests(req[at:at + FEED_CHUNK])

    def _feed_requests(self, req: Requests) -> None:
        if not len(req):
            return
        writes = req["write"].astype(bool)
        lengths = req["length"].astype(np.int64)
        self.requests += len(req)
        self.writes += int(np.count_nonzero(writes))
        self.reads += len(req) - int(np.count_nonzero(writes))
        self.write_bytes += int(lengths[writes].sum())
        self.read_bytes += int(lengths.sum()) - int(lengths[writes].sum())
        del writes
        ends = req["offset"].astype(np.int64)
        first_offset = int(ends[0])
        ends += lengths
        self.sizes += np.bincount(np.searchsorted(np.asarray(SIZE_BUCKETS), lengths, side="left"),
                                  minlength=len(SIZE_BUCKETS) + 1)
        del lengths
        self.sequential += int(np.count_nonzero(req["offset"][1:] == ends[:-1]))
        if self._last_end is not None and first_offset == self._last_end:
            self.sequential += 1
        self._last_end = int(ends[-1])
        del ends
        self.t_min, self.t_max = min(self.t_min, float(req["t"].min())), max(self.t_max, float(req["t"].max()))

    def feed_blocks(self, accesses: int, ids: mrc.Blocks, counts: npt.NDArray[np.int64]) -> None:
        """A chunk's block accesses: how many, and each distinct block's count."""
        self.accesses += accesses
        if not len(self._ids):
            self._ids, self._counts = ids, counts.astype(np.int64, copy=False)
            return
        merged, index = np.unique(np.concatenate([self._ids, ids]), return_inverse=True)
        self._counts = np.bincount(index, weights=np.concatenate([self._counts, counts]),
                                   minlength=len(merged)).astype(np.int64)
        self._ids = merged

    def counts(self) -> npt.NDArray[np.int64]:
        return self._counts

    def histogram(self) -> dict[str, int]:
        labels = [f"<= {e // 1024} KiB" for e in SIZE_BUCKETS] + [f"> {SIZE_BUCKETS[-1] // 1024} KiB"]
        return {label: int(c) for label, c in zip(labels, self.sizes, strict=True) if c}


def _check_block_size(block_size: int) -> None:
    if block_size < 512 or block_size & (block_size - 1):
        raise ValueError(f"block size must be a power of two of at least 512 bytes, not {block_size}")


def _result(summary: _Summary, curve: mrc.Curve, block_size: int, source: str, source_format: str,
            stats: ImportStats, chunk: tuple[mrc.Curve, int] | None = None) -> Analysis:
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
        sequential_share=round(summary.sequential / max(summary.requests - 1, 1), 4),
        size_histogram=summary.histogram(),
        footprint_blocks=len(counts),
        footprint_bytes=len(counts) * block_size,
        curve_mode=curve.mode,
        curve_sample_rate=curve.rate,
        curve_sizes_blocks=[int(s) for s in curve.sizes],
        curve_hit_ratio=[round(float(h), 6) for h in curve.hit_ratio],
        hot_shares=list(hot.shares),
        hot_footprint_fraction=[round(f, 6) for f in hot.footprint_fraction],
        hot_blocks=list(hot.blocks_needed),
        zipf_alpha=mrc.zipf_exponent(counts),
        chunk_size=CHUNK if chunk is not None else None,
        chunk_curve_sizes_blocks=[int(x) for x in chunk[0].sizes] if chunk is not None else [],
        chunk_curve_hit_ratio=[round(float(h), 6) for h in chunk[0].hit_ratio] if chunk is not None else [],
        chunk_footprint_blocks=chunk[1] if chunk is not None else 0,
        lines=stats.lines,
        skipped_lines=stats.skipped,
        bad_lines=stats.bad,
        bad_examples=list(stats.examples),
    )


def analyze(trace: Trace, block_size: int = MIN_BLOCK, mode: Literal["auto", "exact", "shards"] = "auto") -> Analysis:
    """Analyse a trace held in memory."""
    return _analyze(trace, block_size, mode, release=False)


def _analyze(trace: Trace, block_size: int, mode: Literal["auto", "exact", "shards"], release: bool) -> Analysis:
    """analyze(); with ``release`` the trace's requests are dropped once their blocks are known
    (its caller has no further use for them), which keeps 10 million requests' 210 MB out of
    the peak."""
    _check_block_size(block_size)
    summary = _Summary()
    summary.feed_requests(trace.requests)
    chunks = to_blocks(trace.requests, CHUNK) if block_size < CHUNK else None
    blocks = to_blocks(trace.requests, block_size)
    if release:
        trace.requests = trace.requests[:0].copy()  # a fresh array: a slice would keep the whole alive
    shards = mode == "shards" or (mode == "auto" and len(blocks) > mrc.EXACT_LIMIT)
    if shards:
        summary.feed_blocks(len(blocks), *np.unique(blocks, return_counts=True))
        curve = mrc.lru_curve(blocks, mrc.default_sizes(len(summary.counts())), "shards")
    else:
        # Exact: the one relabelling serves the footprint counts and the stack distances.
        ids, dense, counts = mrc.relabel(blocks)
        summary.feed_blocks(len(blocks), ids, counts)
        del blocks
        curve = mrc.exact_curve_dense(dense, len(ids), mrc.default_sizes(len(ids)))
        del dense
    chunk = _chunk_curve(chunks, "shards" if shards else "exact") if chunks is not None else None
    return _result(summary, curve, block_size, trace.path, trace.source_format, trace.stats, chunk)


def _chunk_curve(chunks: mrc.Blocks, mode: Literal["exact", "shards"]) -> tuple[mrc.Curve, int]:
    """The LRU curve over dm-cache chunks, and how many distinct chunks were touched."""
    if mode == "shards":
        distinct = len(np.unique(chunks))
        return mrc.lru_curve(chunks, mrc.default_sizes(distinct), "shards"), distinct
    ids, dense, _ = mrc.relabel(chunks)
    del chunks
    return mrc.exact_curve_dense(dense, len(ids), mrc.default_sizes(len(ids))), len(ids)


def analyze_stream(chunks: Iterable[Requests], expected_requests: int, block_size: int, source: str,
                   source_format: str, stats: ImportStats) -> Analysis:
    """Analyse a trace too long to hold, chunk by chunk, with a SHARDS curve: memory follows
    the footprint and the sample, not the trace."""
    _check_block_size(block_size)
    summary = _Summary()
    sampler: mrc.ShardsSampler | None = None
    chunk_sampler: mrc.ShardsSampler | None = None
    chunk_ids = np.zeros(0, np.int64)
    for part in chunks:
        blocks = to_blocks(part, block_size)
        if sampler is None:
            per_request = len(blocks) / max(len(part), 1)
            sampler = mrc.ShardsSampler(mrc.shards_rate(int(expected_requests * per_request)))
            chunk_sampler = mrc.ShardsSampler(mrc.shards_rate(expected_requests)) if block_size < CHUNK else None
        summary.feed(part, blocks)
        sampler.feed(blocks)
        if chunk_sampler is not None:
            in_chunks = to_blocks(part, CHUNK)
            chunk_sampler.feed(in_chunks)
            chunk_ids = np.union1d(chunk_ids, in_chunks)
    if sampler is None:
        raise ValueError("the trace holds no requests")
    curve = sampler.curve(mrc.default_sizes(len(summary.counts())))
    chunk = ((chunk_sampler.curve(mrc.default_sizes(len(chunk_ids))), len(chunk_ids))
             if chunk_sampler is not None else None)
    return _result(summary, curve, block_size, source, source_format, stats, chunk)


def analyze_path(path: Path, block_size: int = MIN_BLOCK, mode: Literal["auto", "exact", "shards"] = "auto",
                 fmt: Format = "auto", layout: CsvLayout = MSR) -> tuple[Analysis, dict[str, Any]]:
    """Analyse a trace file of any supported format: (analysis, the trace's own metadata).
    Long cachewise traces are read in chunks with a SHARDS curve, in bounded memory."""
    if fmt == "auto" and path.is_file():
        fmt = detect_format(path)
    records = cachewise_records(path) if fmt == "cachewise" else 0
    if records > STREAM_REQUESTS and mode != "exact":
        stats = ImportStats(lines=records, requests=records)
        return (analyze_stream(iter_cachewise(path), records, block_size, str(path), fmt, stats),
                read_cachewise_meta(path))
    trace = load_trace(path, fmt, layout)
    return _analyze(trace, block_size, mode, release=True), trace.meta
