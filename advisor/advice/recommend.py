"""The recommendation engine: backend, cache size, mode and tunables, each with its reasons.

Pure domain code. :func:`recommend` takes what was measured (probes, a workload analysis) or
declared (a workload class from the thesis, a hot-data ratio), the platform (file system,
LVM, mirrored SSDs, tool and kernel versions) and returns a :class:`Recommendation` whose
every decision cites finding ids from advisor/data/findings.toml. Nothing here runs a
command; :mod:`advisor.advice.facts` gathers the inputs.

How it decides (docs/recommend.md has the long form):
1. A profile of the workload: measured (curve, mix, rate) or modelled (a Zipf popularity
   curve calibrated so the hot fraction of the data receives 90% of the I/O, L-SIZE-1).
2. "Put the data on the SSD" when the data fits (T-SIZE-3); "don't cache" when the slow
   device is not slow, the I/O is sequential (T-SEQ-1) or has no hot spots (L-SIZE-4).
3. Every backend and mode is a candidate with an expected speed-up: the thesis's measured
   factors for its workload classes, else a latency model from the predicted hit ratio.
   Candidates that need a reformat, writeback without redundancy, or a tool that is missing
   are not chosen but stay as runner-ups with that trade-off.
4. The chosen cache is sized at the curve's knee (the smallest size reaching 90% of the
   achievable hit ratio) times the backend's space overhead (T-SIZE-1), bounded by the SSD;
   chunk and metadata follow lvm2's own rules (M-CHUNK-1, M-META-1).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

import numpy as np

from advisor.advice.config import BLOCK, RECORD_LONGER, CacheConfig, Warmup
from advisor.advice.findings import finding
from advisor.advice.lvmrules import LVM_EXTENT, MAX_CHUNKS, lvm_max_cache, lvm_space, round_down, round_up
from advisor.advice.workloads import WORKLOADS, WorkloadType
from advisor.backends import BACKENDS, Mode
from advisor.backends import BackendId as Backend
from advisor.backends import backend as backend_of
from advisor.disks.gate import WRITECACHE_HIGH_WATERMARK, Barrier, writecache_max_bytes, writecache_memory
from advisor.errors import CachewiseError, codes, next_step
from advisor.readers.smart import Endurance
from advisor.units import BCACHE_SEQUENTIAL_CUTOFF, KiB, MiB, cache_size, duration
from advisor.workload import mrc
from advisor.workload.analysis import COLD_LIMIT, Analysis

RECOMMEND_SCHEMA = "cachewise.recommend/1"

Verdict = Literal["cache", "move-to-ssd", "dont-cache", "cant-judge"]
# Why the verdict is what it is, as a code (recommend --json "cause"): the real cause of a "don't
# cache", or why it cannot judge yet.
Cause = Literal[
    "",
    "gate",
    "already-flash",
    "fast-not-fast",
    "fits-on-ssd",
    "very-large-datasets",
    "sequential",
    "write-once",
    "first-touches",
    "ssd-too-small",
    "no-hot-spots",
    "gains-too-little",
    "blocked",
]
WRITE_ONCE_READS = 0.2  # a trace of first touches with fewer reads than this writes data once,
WRITE_ONCE_FIRST_TOUCHES = 0.9  # when this share of its accesses or more are first touches
DeviceClass = Literal["hdd", "ssd", "nvme", "unknown"]
FileSystem = Literal["ext4", "xfs", "other"]

KNEE_SHARE = 0.90  # of the achievable hit ratio
HOT_SHARE = 0.90  # the "hot set" serves this share of the I/O (L-SIZE-1, L-SIZE-2)
HOT_SPOT_SHARE = 0.25  # hot spots: the data serving HOT_SHARE of the I/O is at most this share of the data
MOVE_FILL = 0.80  # data up to this share of the SSD "fits" (room for growth and overprovisioning)
MIN_CACHE = 256 * MiB
MIN_GAIN = 1.10  # below this expected speed-up, caching is not worth its risk and complexity
WRITEBACK_MARGIN = 1.20  # writeback must beat writethrough by this much to be preferred

# Space the backend needs on the SSD for the same hot data (T-SIZE-1: LVM cache 3.5x bcache).
SPACE_OVERHEAD: dict[Backend, float] = {"lvmcache": 3.5, "lvmcache-writecache": 1.0, "bcache": 1.0}
# Chance a read miss promotes its block: (while the cache has free entries, once it is full).
# bcache caches on first read (L-WARM-2). dm-cache's smq (kernel 6.1, 64 KiB chunks, default
# migration_threshold of 2048 sectors), measured by the lab's accuracy suite (docs/accuracy.md)
# over ten read runs: 0.30 to 0.43 of read misses promoted a chunk while the cache filled
# (mean 0.37), 0.054 to 0.080 once it was full (mean 0.065; each promotion then pairs with a
# demotion). R-WARM-1's pre-4.12 smq matched 1/8.
PROMOTION: dict[Backend, tuple[float, float]] = {"lvmcache": (0.37, 0.065), "bcache": (1.0, 1.0)}
DM_CACHE_CHUNK = 64 * KiB  # the unit dm-cache promotes, when the trace gave no chunk size
# bcache defaults (T-SEQ-1) and its superblock/journal/bucket headroom on the cache device.
BCACHE_WRITEBACK_PERCENT = 10
BCACHE_WRITE_CUTOFF = 0.40  # bcache caches writes back only below 40% of its buckets in use (K-BC-2)
BCACHE_RESERVE = 0.02
# Latencies when a device was not probed (T-DEV-1), in ms.
TYPICAL_LATENCY_MS: dict[DeviceClass, float] = {"hdd": 4.16, "ssd": 0.057, "nvme": 0.020, "unknown": 4.16}


# Speed-ups the thesis measured for its workload classes: (workload, fs, backend, mode) ->
# (factor over uncached, findings). "any" fs applies to both. Only figures measured for that
# workload and file system are here: T-LVM-1's all-test averages are not a database's figure,
# and T-DB-1 gives lvmcache's only for writethrough on XFS. Missing entries fall back to the
# latency model. A factor holds where the thesis's cache held the hot data; a cache predicted
# to hold less gets a share of it (_scaled_gain).
Key = tuple[WorkloadType, str, Backend, Mode]
MEASURED_GAIN: dict[Key, tuple[float, tuple[str, ...]]] = {
    ("database", "ext4", "bcache", "writeback"): (29.0, ("T-DB-1",)),  # the write figure; reads 55x
    ("database", "xfs", "bcache", "writeback"): (21.0, ("T-DB-1",)),  # reads 44x
    ("database", "any", "bcache", "writethrough"): (10.0, ("T-BC-2",)),
    ("database", "xfs", "lvmcache", "writethrough"): (0.982, ("T-DB-1",)),
    ("database-fsync", "ext4", "bcache", "writeback"): (3.57, ("T-DB-2",)),
    ("database-fsync", "xfs", "bcache", "writeback"): (3.10, ("T-DB-2",)),
    ("database-fsync", "any", "bcache", "writethrough"): (0.95, ("T-DB-2",)),
    ("database-fsync", "any", "lvmcache", "writethrough"): (0.95, ("T-DB-2",)),
    ("database-fsync", "any", "lvmcache", "writeback"): (0.95, ("T-DB-2",)),
    ("very-small-files", "ext4", "lvmcache", "writeback"): (1.67, ("T-SMALL-1",)),
    ("very-small-files", "ext4", "lvmcache", "writethrough"): (0.95, ("T-SMALL-1",)),
    ("very-small-files", "ext4", "bcache", "writethrough"): (0.95, ("T-SMALL-1",)),
    ("very-small-files", "ext4", "bcache", "writeback"): (0.95, ("T-SMALL-1",)),
    ("very-small-files", "xfs", "lvmcache", "writethrough"): (0.52, ("T-SMALL-1",)),
    ("very-small-files", "xfs", "bcache", "writethrough"): (0.52, ("T-SMALL-1",)),
    ("very-small-files", "xfs", "lvmcache", "writeback"): (1.0, ("T-SMALL-1",)),
    ("very-small-files", "xfs", "bcache", "writeback"): (1.13, ("T-SMALL-1",)),
    ("mixed-files", "any", "lvmcache", "writethrough"): (1.28, ("T-MIX-1",)),
    ("mixed-files", "any", "lvmcache", "writeback"): (1.32, ("T-MIX-1",)),
    ("mixed-files", "any", "bcache", "writethrough"): (1.03, ("T-MIX-1", "T-SEQ-1")),
    ("mixed-files", "any", "bcache", "writeback"): (1.05, ("T-MIX-1", "T-SEQ-1")),
    ("large-files", "any", "lvmcache", "writethrough"): (1.0, ("T-SEQ-1", "T-DEV-1")),
    ("large-files", "any", "lvmcache", "writeback"): (1.0, ("T-SEQ-1", "T-DEV-1")),
    ("large-files", "any", "bcache", "writethrough"): (1.0, ("T-SEQ-1",)),
    ("large-files", "any", "bcache", "writeback"): (1.0, ("T-SEQ-1",)),
}


# --- inputs ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class DeviceFacts:
    path: str
    size_bytes: int
    device_class: DeviceClass
    class_source: Literal["probe", "kernel flag", "declared"] = "declared"
    latency_ms: float | None = None  # probe's median 4 KiB random read at queue depth 1
    logical_sector_size: int = 512
    identity: str | None = None
    vg: str | None = None  # the VG it is a PV of, or the LV's VG
    is_lv: bool = False
    has_data: bool = False  # a file system or other signature
    fs_type: str | None = None
    endurance: Endurance | None = None
    redundancy: str | None = None  # what discovery saw that keeps its data on two devices ("md raid1 array md0")
    cached: str | None = None  # the cache it already belongs to ("it is a bcache device ...")
    disks: int = 1  # the whole disks under it (an array's members)
    # What the safety gate (advisor.disks.gate) found against each backend for this device in
    # its part (slow or fast), from what discovery knows of it and of what is stacked on it.
    barriers: tuple[Barrier, ...] = ()

    @property
    def latency(self) -> float:
        return self.latency_ms if self.latency_ms is not None else TYPICAL_LATENCY_MS[self.device_class]


@dataclass(frozen=True)
class Versions:
    kernel: str | None = None
    lvm2: str | None = None
    bcache_tools: str | None = None


@dataclass(frozen=True)
class Inputs:
    slow: DeviceFacts
    fast: tuple[DeviceFacts, ...]
    analysis: Analysis | None = None
    workload: WorkloadType | None = None
    hot_fraction: float | None = None  # declared: this share of the data serves 90% of I/O
    read_share: float | None = None  # declared
    filesystem: FileSystem | None = None  # default: the slow device's file system
    data_bytes: int | None = None  # the dataset; default: the slow device's size
    fast_mirrored: bool = (
        False  # the user says the fast devices are (or will be) mirrored: not seen, so a risk accepted
    )
    accept_writeback_risk: bool = False
    reformat_ok: bool = False  # the slow device's data may be moved off and back (bcache)
    cache_budget_bytes: int | None = None  # at most this much SSD space for the cache
    read_iops: float | None = None  # declared read rate, for warm-up time without a trace
    versions: Versions = field(default_factory=Versions)
    memory_bytes: int | None = None  # the machine's memory (dm-writecache keeps an entry per block in it)


# --- outputs --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reason:
    text: str
    findings: tuple[str, ...] = ()


@dataclass(frozen=True)
class Option:
    verdict: Verdict
    config: CacheConfig | None
    summary: str
    tradeoff: str
    findings: tuple[str, ...]


@dataclass(frozen=True)
class CurveView:
    source: str  # "trace" or "model", and for a backend's curve how it was made
    sizes_bytes: list[int]
    hit_ratio: list[float]
    knee_bytes: int
    achievable_hit_ratio: float
    hot_bytes: int  # data serving HOT_SHARE of the I/O
    # How the curve was counted: "exact" (every 4 KiB block of the trace), "shards" (a spatial
    # sample of the blocks, at sample_rate, scaled back) or "model" (no trace: a Zipf curve).
    mode: str = "model"
    sample_rate: float = 1.0


@dataclass(frozen=True)
class Uncertain:
    """What a "can't judge yet" could not judge, and the range it can give for the cache it
    would otherwise recommend: the low ends count every first touch of the trace as a miss for
    good, the high ends assume the blocks come back (a full cache's steady hit ratio)."""

    backend: str
    mode: str
    hit_ratio: tuple[float, float] | None  # reads served by the cache (None: a write cache)
    speedup: tuple[float, float]
    size_bytes: tuple[int, int]  # the curve's knee as traced, up to all the room the SSD gives it
    first_touch_share: float
    record: str  # what to record before asking again


@dataclass(frozen=True)
class Recommendation:
    verdict: Verdict
    summary: str
    config: CacheConfig | None
    reasons: tuple[Reason, ...]
    warnings: tuple[Reason, ...]
    runner_ups: tuple[Option, ...]
    curve: CurveView | None
    inputs: dict[str, Any]
    schema: str = RECOMMEND_SCHEMA
    # Each cache backend's predicted hit-ratio curve (by SSD bytes given to the cache), so the
    # choice between them can be seen: bcache follows the 4 KiB curve, lvmcache the chunk curve
    # measured from a trace (else the 4 KiB curve over T-SIZE-1's 3.5x space).
    backend_curves: dict[str, CurveView] = field(default_factory=dict)
    # What the safety gate found on the devices given: each barrier's code, the backends it bars,
    # whether moving the data lifts it, and its sentence.
    gate: tuple[dict[str, Any], ...] = ()
    cause: Cause = ""
    uncertain: Uncertain | None = None

    @property
    def cited(self) -> list[str]:
        """Every finding id cited, in order of first citation."""
        ids: list[str] = []
        for r in (*self.reasons, *self.warnings, *(Reason(o.summary, o.findings) for o in self.runner_ups)):
            ids += [f for f in r.findings if f not in ids]
        return ids

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["findings"] = {fid: {"text": finding(fid).text, "source": finding(fid).citation} for fid in self.cited}
        return out


codes(
    {
        "no-workload": "there is neither a trace nor a declared workload",
        "bad-hot-fraction": "the hot fraction must be between 0 and 1, not {value}",
        "no-fast": "no fast device was given",
        "slow-is-fast": "the same device is named twice; the slow and fast devices must differ",
        "already-cached": "{path} is already cached: {how}. cachewise does not stack a second cache on the first",
        "fast-already-cached": "{path} is already part of a cache: {how}",
        "no-data-size": "the size of the data on {path} is unknown",
    }
)


class RecommendError(CachewiseError, ValueError):
    """The inputs cannot give a recommendation: ``code`` says which input is missing or wrong,
    so each front end can ask for it in its own terms."""


# --- the workload profile -------------------------------------------------------------------


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

    def too_short_for(self, backend: Backend) -> bool:
        """Whether first touches dominate the curve this backend follows (then the trace cannot
        show whether the data comes back)."""
        share = self.chunk_cold_share if self.chunked(backend) else self.cold_share
        return self.source == "trace" and share > COLD_LIMIT

    def chunked(self, backend: Backend) -> bool:
        """Whether the backend's prediction comes from the measured chunk curve."""
        return backend == "lvmcache" and self.chunk_hits is not None and len(self.chunk_hits) > 0

    def curve_of(self, backend: Backend) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
        """(sizes in bytes, hit ratios) the backend follows: the chunk curve for an lvmcache when
        the trace gave one, else the 4 KiB curve."""
        if self.chunked(backend):
            assert self.chunk_sizes_bytes is not None and self.chunk_hits is not None
            return self.chunk_sizes_bytes, self.chunk_hits
        return self.sizes_bytes, self.hits

    def hit_of(self, backend: Backend, size_bytes: float, raw: bool = False, reads: bool = False) -> float:
        """The predicted hit ratio of a cache holding ``size_bytes``; ``raw``: as traced, every
        first touch a miss; ``reads``: of the reads alone, as the kernel's read counters count
        (the trace's read curve; without one, every access is taken alike)."""
        sizes, hits = self.curve_of(backend)
        chunked = self.chunked(backend)
        if reads:
            steady, traced = (
                (self.chunk_read_hits, self.chunk_raw_read_hits)
                if chunked
                else (
                    self.read_hits,
                    self.raw_read_hits,
                )
            )
            if steady is not None and len(steady) == len(hits):
                hits = steady
                if raw and traced is not None and len(traced) == len(hits):
                    hits = traced
                raw = False
        if raw:
            traced = self.chunk_raw_hits if chunked else self.raw_hits
            hits = traced if traced is not None and len(traced) == len(hits) else hits
        # Below the curve's first size, straight down to nothing at nothing (the true curve is
        # concave, so this errs low), never a step to zero.
        return float(np.interp(size_bytes, np.concatenate([[0.0], sizes]), np.concatenate([[0.0], hits])))

    def knee_of(self, backend: Backend) -> int:
        sizes, hits = self.curve_of(backend)
        target = KNEE_SHARE * (float(hits.max()) if len(hits) else 0.0)
        return int(sizes[int(np.argmax(hits >= target))])

    @property
    def achievable(self) -> float:
        return float(self.hits.max()) if len(self.hits) else 0.0

    def knee(self) -> int:
        """The knee of the 4 KiB curve (bcache's, and every backend's without a chunk curve)."""
        return self.knee_of("bcache")


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


def _steady(steady: list[float], raw: list[float]) -> np.ndarray[Any, Any]:
    """The curve a cache in service follows: each size's hit ratio once full (exact curves),
    else the LRU curve as measured (SHARDS, first touches counted as misses)."""
    return np.asarray(steady if steady else raw, dtype=np.float64)


def profile(inp: Inputs, data_bytes: int) -> Profile:
    a = inp.analysis
    if a is not None and a.curve_sizes_blocks:
        reads = a.read_requests / max(a.requests, 1)
        shares = dict(zip(a.hot_shares, a.hot_blocks, strict=True))
        hot_blocks = shares.get(HOT_SHARE, a.footprint_blocks)
        rate = a.block_accesses * reads / a.duration_s if a.duration_s > 0 else inp.read_iops
        hot_pct = 100 * hot_blocks / max(a.footprint_blocks, 1)
        chunked = bool(a.chunk_size and a.chunk_curve_sizes_blocks)
        text = (
            f"Measured from the trace {a.source}: {a.requests:,} requests, {100 * reads:.0f}% reads, "
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
        return Profile(
            kind=inp.workload,
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
            reasons=(Reason(text, ("L-SIZE-4", "T-SEQ-1", "R-WARM-1") if a.bypassed_requests else ("L-SIZE-4",)),),
        )
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


# --- sizing ---------------------------------------------------------------------------------


def _version_tuple(text: str | None) -> tuple[int, ...]:
    if not text:
        return ()
    parts: list[int] = []
    for piece in text.replace("-", ".").split("."):
        digits = "".join(ch for ch in piece if ch.isdigit())
        if not digits or digits != piece[: len(digits)]:
            if digits:
                parts.append(int(digits))
            break
        parts.append(int(digits))
    return tuple(parts)


# --- candidates -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Context:
    inp: Inputs
    prof: Profile
    fs: str
    data_bytes: int
    fast_bytes: int  # usable fast capacity (the smaller of a mirrored pair)
    redundant: bool
    writeback_allowed: bool
    slow_has_data: bool
    mirror_pool: bool = False  # two unmirrored SSDs that an LVM plan can mirror (raid1)


def thesis_hardware(slow: DeviceFacts) -> bool:
    """Whether the slow device is an array like the thesis's (8 disks in RAID 10 behind a
    controller cache): a RAID 10 of four disks or more, as discovery saw it. Its measured factors
    are speed-ups over that array; a single disk is another baseline."""
    return slow.disks >= 4 and "raid10" in (slow.redundancy or "")


def _speedup(ctx: _Context, backend: Backend, mode: Mode, hit: float) -> tuple[float, str, tuple[str, ...]]:
    """The expected speed-up and its basis: the latency model, one basis for every candidate;
    the thesis's measured factor instead where its hardware matches (thesis_hardware). Where the
    thesis measured no gain or a loss for the workload class (small files, fsync), what the
    latency model cannot see (metadata, flushes), the speed-up is held to that."""
    kind = ctx.prof.kind
    if kind is not None and backend != "lvmcache-writecache":
        # Other file systems borrow the ext4 figures (the thesis measured ext4 and XFS).
        for fs in (ctx.fs if ctx.fs != "other" else "ext4", "any"):
            if (kind, fs, backend, mode) in MEASURED_GAIN:
                gain, ids = MEASURED_GAIN[(kind, fs, backend, mode)]
                fs_note = "" if fs == "any" else f" on {fs}"
                if kind == "large-files":  # not a measured factor: streams gain nothing from a cache
                    return (
                        gain,
                        (
                            "sequential streams: the disk streams them at 175 MB/s, cached or not, and bcache "
                            "bypasses them"
                        ),
                        ids,
                    )
                label = f"{WORKLOADS[kind].label}{fs_note}"
                if thesis_hardware(ctx.inp.slow):
                    held = _held_share(ctx, backend, hit)
                    if held >= 1.0:
                        return gain, f"measured in the thesis for {label}, on an array like this one", ids
                    return (
                        _scaled_gain(gain, held),
                        f"the thesis's {gain:g}x for {label}, on an array like this one, for the {held:.0%} of the "
                        "hot data's hits this cache is predicted to get",
                        ids,
                    )
                model, basis, cites = _latency_speedup(ctx, backend, mode, hit)
                if gain < MIN_GAIN:
                    return (
                        min(model, gain),
                        f"the thesis measured {gain:g}x for {label} (the latency model, {model:.2g}x, cannot see "
                        "what this workload costs besides its reads and writes)",
                        ids + cites,
                    )
                return (
                    model,
                    f"{basis}; the thesis's {gain:g}x for {label} was measured on 8 disks in RAID 10 behind a "
                    "controller cache, not on hardware like this",
                    cites + ids,
                )
    return _latency_speedup(ctx, backend, mode, hit)


def _latency_speedup(ctx: _Context, backend: Backend, mode: Mode, hit: float) -> tuple[float, str, tuple[str, ...]]:
    # Latency model: the disk's time per request. Reads hit with the predicted ratio. Writes:
    # writethrough waits for the disk; bcache writeback and dm-writecache take every write on the
    # SSD and write it back merged, in disk order. dm-cache writeback sends writes to uncached
    # chunks straight to the disk and writes each dirty chunk back later, so the disk does the
    # same work as in writethrough: the thesis measured it no faster (T-LVM-1: +23% writeback,
    # +26% writethrough on ext4) with the HDD still busy (T-LVM-3).
    ts, tf = ctx.inp.slow.latency, min(f.latency for f in ctx.inp.fast)
    r = ctx.prof.read_share
    read_hit = hit if backend != "lvmcache-writecache" else 0.0
    read_cost = read_hit * tf + (1 - read_hit) * ts
    write_cost = tf if mode == "writeback" and backend != "lvmcache" else ts
    # A write-back cache absorbs writes at the SSD's speed only as fast as the disk takes them
    # back in the long run: past that, dirty data sits at bcache's cutoffs or dm-writecache's
    # high watermark and the writes wait for the disk. The disk takes about 1000/ts writes a
    # second (no credit for writeback's merging); the measured write rate says how many come.
    absorbed = 1.0
    writes_per_s = ctx.prof.write_rate
    if write_cost == tf and writes_per_s and writes_per_s > 0:
        absorbed = min(1.0, (1000.0 / ts) / writes_per_s)
        write_cost = absorbed * tf + (1 - absorbed) * ts
    # Streams the cache lets through (bcache's sequential_cutoff; smq promotes nothing read once)
    # are served by the disk whatever the cache holds: they are charged at its cost.
    b = ctx.prof.bypassed_share if backend != "lvmcache-writecache" else 0.0  # dm-writecache bypasses no stream
    cost = b * ts + (1 - b) * (r * read_cost + (1 - r) * write_cost)
    gain = ts / cost if cost > 0 else 1.0
    basis = "latency model from the predicted hit ratio and the devices' latency"
    cites: tuple[str, ...] = ("T-DEV-1",)
    if b > 0:
        basis += f", the {b:.0%} of requests in streams the cache lets through at the disk's"
        cites += ("T-SEQ-1",)
    if backend == "lvmcache" and mode == "writeback":
        basis += "; dm-cache writeback still writes every dirty chunk to the disk, so writes count at disk speed"
        cites += ("T-LVM-1", "T-LVM-3")
    if absorbed < 1.0:
        basis += (
            f"; the trace writes {writes_per_s:.0f} times a second and the disk takes back about {1000.0 / ts:.0f}, so "
            f"only {absorbed:.0%} of the writes stay at the SSD's speed once the cache holds all the dirty data it may"
        )
        cites += ("K-BC-2",) if backend == "bcache" else ("K-WC-1",)
    return gain, basis, cites


def _held_share(ctx: _Context, backend: Backend, hit: float) -> float:
    """How much of the thesis's setting a cache reproduces: its predicted hit ratio against
    the hit ratio at its curve's knee (the thesis's caches held their hot data), at most 1."""
    _, hits = ctx.prof.curve_of(backend)
    at_knee = ctx.prof.hit_of(backend, ctx.prof.knee_of(backend), reads=True) if len(hits) else 0.0
    return min(1.0, hit / at_knee) if at_knee > 0 else 0.0


def _scaled_gain(gain: float, share: float) -> float:
    """A measured speed-up for the part of the I/O it applies to (Amdahl): the rest runs as
    it did uncached."""
    return 1.0 / ((1.0 - share) + share / gain)


def _overhead(ctx: _Context, backend: Backend) -> float:
    """SSD space per byte of hot data: T-SIZE-1's average factor, unless the backend's own curve
    was measured (dm-cache's chunk curve already holds what caching whole chunks costs)."""
    return 1.0 if ctx.prof.chunked(backend) else SPACE_OVERHEAD[backend]


def _limit(ctx: _Context, backend: Backend) -> int:
    """The largest cache of this backend the SSD (and the budget, and for dm-writecache the
    machine's memory) allows."""
    if backend == "bcache":
        limit = round_down(ctx.fast_bytes * (1 - BCACHE_RESERVE), MiB)
    else:
        limit = lvm_max_cache(ctx.fast_bytes)
    if ctx.inp.cache_budget_bytes:
        limit = min(limit, ctx.inp.cache_budget_bytes)
    if backend == "lvmcache-writecache":
        # dm-writecache keeps an entry per block in kernel memory: its size is held to a share of it.
        cap = writecache_max_bytes(ctx.inp.memory_bytes, _writecache_block(ctx))
        limit = min(limit, round_down(cap, LVM_EXTENT)) if cap is not None else limit
    return limit


def _write_need(ctx: _Context, backend: Backend, mode: Mode) -> int:
    """The cache a write-back cache needs for the trace's write bursts: the largest backlog of
    written data the disk would have had, taking writes back at about 1000/ts a second of 4 KiB,
    over the share of the cache that may be dirty (dm-writecache's high watermark, bcache's 40%
    cutoff). 0 without a trace, or for a cache that does not hold writes back."""
    rates, backlog = ctx.prof.write_backlog
    if not rates or mode != "writeback" or backend == "lvmcache":
        return 0
    drain = 1000.0 / ctx.inp.slow.latency * BLOCK
    need = float(np.interp(np.log(drain), np.log(rates), backlog))
    dirty_share = WRITECACHE_HIGH_WATERMARK / 100 if backend == "lvmcache-writecache" else BCACHE_WRITE_CUTOFF
    return int(need / dirty_share)


def _size(ctx: _Context, backend: Backend, mode: Mode = "writethrough") -> tuple[int, int, bool]:
    """(cache size, SSD space, bounded by the SSD) for a backend: the knee of its curve, and at
    least the hot data (what serves 90% of the I/O), so a cache the SSD has room for never ends
    smaller than the hot data it is said to hold; a write-back cache, at least what its write
    bursts need (dm-writecache: that alone, it caches no reads)."""
    hot = ctx.prof.hot_bytes * (1.0 if ctx.prof.chunked(backend) else _overhead(ctx, backend))
    burst = _write_need(ctx, backend, mode)
    if backend == "lvmcache-writecache" and ctx.prof.write_backlog[0]:
        wanted = float(max(burst, MIN_CACHE))  # sized from the writes, not the read curve
    else:
        wanted = max(ctx.prof.knee_of(backend) * _overhead(ctx, backend), hot, burst, MIN_CACHE)
    limit = _limit(ctx, backend)
    unit = MiB if backend == "bcache" else LVM_EXTENT
    size = min(round_up(wanted, unit), limit)
    bounded = size < round_up(wanted, unit)
    space = size if backend == "bcache" else (lvm_space(size)[2] if backend == "lvmcache" else size + LVM_EXTENT)
    return size, space, bounded


def _writecache_block(ctx: _Context) -> int:
    """lvm2's writecache block size: 512 bytes under an XFS made with 512-byte sectors (M-SECT-1)."""
    return 512 if ctx.inp.slow.logical_sector_size < 4096 and ctx.fs == "xfs" else 4096


def warmup(prof: Profile, backend: Backend, effective: int, hit: float, chunk: int | None = None) -> Warmup | None:
    """How long a cache of ``effective`` bytes takes to fill with the hot data (None for
    dm-writecache, which caches writes only); dm-cache promotes whole ``chunk``s."""
    if backend == "lvmcache-writecache" or hit <= 0:
        return None
    p, p_full = PROMOTION[backend]
    unit = (chunk or prof.chunk_bytes or DM_CACHE_CHUNK) if backend == "lvmcache" else BLOCK
    hot = max(1, min(effective, prof.footprint_bytes) // unit)
    # C-FILL-1: under uniform reads of N hot blocks, N reads cache 63%, 3N cache 95%; only the
    # share `hit` of all reads goes to those blocks, and each promotes with probability p. Counted
    # in read requests, as the kernel and fio count them: a request of several 4 KiB blocks reads
    # them all at once (and touches about one dm-cache chunk).
    per = max(prof.blocks_per_request, 1.0)
    accesses = per if unit == BLOCK else 1.0  # block (or chunk) accesses per request
    reads_63 = hot / p / hit / accesses
    reads_95 = 3 * hot / p / hit / accesses
    full_63 = hot / p_full / hit / accesses
    rate = prof.read_rate / per if prof.read_rate else None  # read requests per second
    ids = ("C-FILL-1", "R-WARM-1") if backend == "lvmcache" else ("C-FILL-1", "L-WARM-2")
    return Warmup(
        hot,
        int(reads_63),
        int(reads_95),
        round(reads_63 / rate, 1) if rate else None,
        round(reads_95 / rate, 1) if rate else None,
        p,
        ids,
        unit,
        p_full,
        int(full_63),
        round(full_63 / rate, 1) if rate else None,
    )


def _config(ctx: _Context, backend: Backend, mode: Mode) -> CacheConfig:
    size, space, bounded = _size(ctx, backend, mode)
    effective = int(size / _overhead(ctx, backend))
    hit = ctx.prof.hit_of(backend, effective, reads=True)  # reads: what the kernel's read counters show
    every = ctx.prof.hit_of(backend, effective)  # every access, reads and writes
    r = ctx.prof.read_share
    write_hit = min(1.0, max(0.0, (every - r * hit) / (1 - r))) if r < 1 else None
    gain, basis, _ = _speedup(ctx, backend, mode, hit)
    cfg = CacheConfig(
        backend=backend,
        mode=mode,
        size_bytes=size,
        effective_bytes=effective,
        fast_space_bytes=space,
        predicted_hit_ratio=round(hit, 4) if backend != "lvmcache-writecache" else None,
        predicted_write_hit_ratio=round(write_hit, 4)
        if write_hit is not None and backend != "lvmcache-writecache"
        else None,
        expected_speedup=round(gain, 2),
        speedup_basis=basis,
        warmup=warmup(ctx.prof, backend, effective, hit, lvm_space(size)[0] if backend == "lvmcache" else None),
        bounded_by_ssd=bounded,
        needs_reformat=backend == "bcache" and ctx.slow_has_data,
        mirrored_pool=(
            ctx.mirror_pool and mode == "writeback" and backend.startswith("lvmcache") and not ctx.writeback_allowed
        ),
    )
    if backend == "lvmcache":
        chunk, meta, _ = lvm_space(size)
        cfg = replace(cfg, chunk_size_bytes=chunk, metadata_size_bytes=meta, spare_metadata_bytes=meta, policy="smq")
    elif backend == "lvmcache-writecache":
        cfg = replace(cfg, writecache_block_size=_writecache_block(ctx))
    else:
        cfg = replace(
            cfg,
            sequential_cutoff_bytes=BCACHE_SEQUENTIAL_CUTOFF,
            policy="lru",
            writeback_percent=BCACHE_WRITEBACK_PERCENT if mode == "writeback" else 0,
        )
    return cfg


@dataclass(frozen=True)
class Blocker:
    """Why a candidate cannot be the recommendation as things stand."""

    code: Literal[
        "writeback-risk",
        "needs-reformat",
        "too-old",
        "mostly-reads",
        "not-measured",
        "lvm2-missing",
        "bcache-tools-missing",
        "refused",
        "needs-migration",
    ]
    text: str


# The findings a refusal of the safety gate rests on, by its code.
GATE_FINDINGS: dict[str, tuple[str, ...]] = {
    "owned-by-other-system": ("G-OWN-1",),
    "stacked-on-cache": ("M-LVM-1",),
    "bcache-part": ("G-BC-1",),
    "snapshot-origin": ("M-LVM-1",),
    "md-member": ("M-LVM-1",),
    "lvm-pv": ("M-LVM-1",),
    "thin-lv": ("M-THIN-1",),
    "thin-pool": ("M-THIN-1",),
    "lv-snapshot": ("M-LVM-1",),
    "lv-segtype": ("M-LVM-1",),
    "lv-hidden": ("M-LVM-1",),
    "not-on-lvm": ("T-LVM-2",),
    "not-an-lv-yet": ("M-LVM-1",),
    "bcache-needs-block": ("G-BC-1",),
    "bcache-cache-too-small": ("G-BC-1",),
    "writecache-memory": ("K-WC-1",),
}


def _gate(inp: Inputs, backend: Backend) -> list[Barrier]:
    """What the safety gate found against this backend on the devices given."""
    b = backend_of(backend)
    return [x for d in (inp.slow, *inp.fast) for x in d.barriers if x.bars(b)]


def barred_everywhere(inp: Inputs) -> list[Barrier]:
    """The refusals that bar every backend: no cache at all can be set up with these devices."""
    return [x for d in (inp.slow, *inp.fast) for x in d.barriers if not x.migrate and all(x.bars(b) for b in BACKENDS)]


def _blockers(ctx: _Context, backend: Backend, mode: Mode) -> list[Blocker]:
    """Why this candidate cannot be the recommendation as things stand (empty: it can)."""
    inp, why = ctx.inp, list[Blocker]()
    for barrier in _gate(inp, backend):
        why.append(Blocker("needs-migration" if barrier.migrate else "refused", barrier.what))
    if mode == "writeback" and not ctx.writeback_allowed and not (ctx.mirror_pool and backend.startswith("lvmcache")):
        text = "writeback needs mirrored SSDs or an explicit acceptance of the risk"
        if ctx.mirror_pool:
            text = (
                "writeback needs a redundant fast side, and bcache cannot mirror the two SSDs itself (an md RAID1 "
                "under it would; cachewise never creates one)"
            )
        why.append(Blocker("writeback-risk", text))
    if backend == "bcache" and ctx.slow_has_data and not inp.reformat_ok:
        why.append(Blocker("needs-reformat", "bcache needs a reformat of the slow device (move the data off and back)"))
    if backend == "lvmcache-writecache":
        lvm_ok = _version_tuple(inp.versions.lvm2) >= (2, 3) or not inp.versions.lvm2
        kernel_ok = _version_tuple(inp.versions.kernel) >= (4, 18) or not inp.versions.kernel
        if not (lvm_ok and kernel_ok):
            why.append(Blocker("too-old", "writecache needs lvm2 2.03 and kernel 4.18"))
        if ctx.prof.read_share > 0.5:
            why.append(Blocker("mostly-reads", "writecache caches only writes, and this workload is mostly reads"))
        elif ctx.prof.kind is not None and any(k[0] == ctx.prof.kind for k in MEASURED_GAIN):
            why.append(
                Blocker("not-measured", "the thesis measured lvmcache and bcache for this workload, not dm-writecache")
            )
    if backend.startswith("lvmcache") and inp.versions.lvm2 == "":
        why.append(Blocker("lvm2-missing", "lvm2 is not installed"))
    if backend == "bcache" and inp.versions.bcache_tools == "":
        why.append(Blocker("bcache-tools-missing", "bcache-tools is not installed"))
    return why


def _candidates(ctx: _Context) -> list[tuple[CacheConfig, list[Blocker]]]:
    out = []
    modes: tuple[Mode, ...] = ("writethrough", "writeback")
    backends: tuple[Backend, ...] = ("lvmcache", "bcache")
    for backend in backends:
        for mode in modes:
            out.append((_config(ctx, backend, mode), _blockers(ctx, backend, mode)))
    out.append((_config(ctx, "lvmcache-writecache", "writeback"), _blockers(ctx, "lvmcache-writecache", "writeback")))
    return out


def _tradeoff(cfg: CacheConfig, blockers: list[Blocker]) -> str:
    bits = [b.text for b in blockers]
    if cfg.backend == "bcache" and not cfg.needs_reformat:
        bits.append("bcache owns the whole backing device (its superblock); removal needs a detach")
    if cfg.backend == "lvmcache":
        bits.append("in place, attached and removed with lvconvert")
    return "; ".join(bits)


# --- the recommendation ---------------------------------------------------------------------


def recommend(inp: Inputs) -> Recommendation:
    if not inp.fast:
        raise RecommendError("no-fast", next=[next_step("name-fast")])
    slow = inp.slow
    paths = [slow.path, *(f.path for f in inp.fast)]
    if len(set(paths)) != len(paths):
        raise RecommendError("slow-is-fast")
    if slow.cached:
        raise RecommendError(
            "already-cached",
            path=slow.path,
            how=slow.cached,
            next=[
                next_step("watch", target=slow.path),
                next_step(
                    "remove-cache", device=slow.path, recipe="lvmcache-uncache" if slow.is_lv else "bcache-detach"
                ),
            ],
        )
    for f in inp.fast:
        if f.cached:
            raise RecommendError("fast-already-cached", path=f.path, how=f.cached, next=[next_step("free-ssd")])
    data_bytes = inp.data_bytes or slow.size_bytes
    if data_bytes <= 0:
        raise RecommendError("no-data-size", path=slow.path, next=[next_step("give-data-size")])
    fs_raw = (inp.filesystem or slow.fs_type or "other").lower()
    fs: FileSystem = fs_raw if fs_raw in ("ext4", "xfs") else "other"  # type: ignore[assignment]
    # Redundancy from what discovery saw, never from the number of devices named: two SSDs
    # given side by side are two single points of failure until something mirrors them.
    redundant = all(f.redundancy for f in inp.fast)
    mirror_planned = inp.fast_mirrored and len(inp.fast) >= 2
    # Two plain SSDs that nothing mirrors: an LVM plan can mirror the cache across them (raid1).
    mirror_pool = (
        len(inp.fast) == 2
        and not redundant
        and not inp.fast_mirrored
        and not any(f.is_lv or f.redundancy for f in inp.fast)
    )
    fast_bytes = (
        min(f.size_bytes for f in inp.fast) if (redundant or mirror_planned or mirror_pool) else inp.fast[0].size_bytes
    )
    prof = profile(inp, data_bytes)
    ctx = _Context(
        inp,
        prof,
        fs,
        data_bytes,
        fast_bytes,
        redundant,
        writeback_allowed=redundant or inp.accept_writeback_risk or inp.fast_mirrored,
        slow_has_data=slow.has_data,
        mirror_pool=mirror_pool,
    )
    reasons: list[Reason] = list(prof.reasons)
    warnings: list[Reason] = []
    curve = CurveView(
        prof.source,
        [int(s) for s in prof.sizes_bytes],
        [round(float(h), 6) for h in prof.hits],
        prof.knee(),
        round(prof.achievable, 6),
        prof.hot_bytes,
        prof.curve_mode,
        prof.sample_rate,
    )
    summary_inputs = {
        "slow": slow.path,
        "fast": [f.path for f in inp.fast],
        "filesystem": fs,
        "data_bytes": data_bytes,
        "workload": inp.workload or ("measured" if prof.source == "trace" else "zipf"),
        "fast_mirrored": inp.fast_mirrored,
        "accept_writeback_risk": inp.accept_writeback_risk,
        "reformat_ok": inp.reformat_ok,
        "fast_usable_bytes": fast_bytes,
        "versions": asdict(inp.versions),
        "device_classes": {d.path: f"{d.device_class} ({d.class_source})" for d in (slow, *inp.fast)},
    }
    for d in (slow, *inp.fast):
        if d.class_source != "probe":
            warnings.append(
                Reason(
                    f"{d.path} was not probed; its class ({d.device_class}) comes from the "
                    f"{d.class_source}, which USB bridges and RAID controllers get wrong. "
                    "Probe it (a few seconds of read-only fio) to measure it.",
                    ("T-DEV-1",),
                )
            )
    candidates = _candidates(ctx)
    runner_ups: list[Option] = []

    def done(
        verdict: Verdict,
        summary: str,
        config: CacheConfig | None,
        cause: Cause = "",
        uncertain: Uncertain | None = None,
    ) -> Recommendation:
        chosen = config
        for cfg, blockers in sorted(candidates, key=lambda c: -(c[0].expected_speedup or 0)):
            if chosen is not None and (cfg.backend, cfg.mode) == (chosen.backend, chosen.mode):
                continue
            if cfg.backend == "lvmcache-writecache" and any(b.code == "mostly-reads" for b in blockers):
                continue
            if any(b.code in ("refused", "needs-migration") for b in blockers):
                continue  # only what can be planned (from this recommendation, on these devices) is offered
            _, _, ids = _speedup(ctx, cfg.backend, cfg.mode, cfg.predicted_hit_ratio or 0.0)
            hit = f", predicted hit ratio {cfg.predicted_hit_ratio:.0%}" if cfg.predicted_hit_ratio is not None else ""
            runner_ups.append(
                Option(
                    "cache",
                    cfg,
                    f"{cfg.label}: about {cfg.expected_speedup:g}x ({cfg.speedup_basis}){hit}",
                    _tradeoff(cfg, blockers),
                    ids,
                )
            )
        if verdict == "cant-judge":
            runner_ups.clear()  # nothing is offered until the workload can be judged
        if verdict == "cache":
            runner_ups.append(
                Option(
                    "dont-cache",
                    None,
                    "no cache: HDD performance, nothing to fail or wear",
                    "gives up the speed-up",
                    ("T-MODE-2",),
                )
            )
        return Recommendation(
            verdict,
            summary,
            config,
            tuple(reasons),
            tuple(warnings),
            tuple(runner_ups),
            curve,
            summary_inputs,
            backend_curves=_backend_curves(ctx),
            gate=tuple(b.to_json() for d in (slow, *inp.fast) for b in d.barriers),
            cause=cause,
            uncertain=uncertain,
        )

    # 0. The safety gate: another system owns the data, lvm2 or the kernel would refuse every
    # backend, or the devices are parts of a cache already.
    barred = barred_everywhere(inp)
    if barred:
        reasons += [Reason(f"{b.what}.", GATE_FINDINGS.get(b.code, ("M-LVM-1",))) for b in barred]
        return done("dont-cache", f"Don't cache here: {barred[0].what}.", None, "gate")

    # 1. The slow device is not slow, or the fast one is not fast.
    if slow.device_class in ("ssd", "nvme"):
        reasons.append(
            Reason(
                f"{slow.path} {_measured(slow)}; an SSD cache in front of it gains little.",
                ("T-DEV-1",),
            )
        )
        return done("dont-cache", f"Don't cache: {slow.path} is already flash.", None, "already-flash")
    for f in inp.fast:
        if f.device_class in ("hdd", "unknown") or f.latency >= slow.latency / 4:
            reasons.append(
                Reason(
                    f"{f.path} {_measured(f)}, not much faster than {slow.path} ({_measured(slow)}).",
                    ("T-DEV-1",),
                )
            )
            return done("dont-cache", f"Don't cache: {f.path} is not a fast device.", None, "fast-not-fast")

    # 2. The data fits on the SSD (or in the part of it set aside): move it (T-SIZE-3).
    room = min(fast_bytes, inp.cache_budget_bytes or fast_bytes)
    if data_bytes <= MOVE_FILL * room:
        reasons.append(
            Reason(
                f"The data ({cache_size(data_bytes)}) fits in {cache_size(room)} of SSD: put it there instead of "
                "caching it. Every read and write then runs at SSD speed, with no warm-up and no cache "
                "to fail.",
                ("T-SIZE-3", "T-DEV-2"),
            )
        )
        if len(inp.fast) >= 2 and not ctx.redundant:
            reasons.append(
                Reason("Mirror the two SSDs (md RAID1 or an LVM raid1 LV) to keep the data redundant.", ("T-MODE-1",))
            )
        return done(
            "move-to-ssd", f"Don't cache: move the data ({cache_size(data_bytes)}) onto the SSD.", None, "fits-on-ssd"
        )

    # 3. The thesis's very large datasets, sequential streams and workloads without hot spots
    # gain nothing.
    if prof.kind == "very-large-datasets" and prof.source == "model":
        reasons.append(
            Reason(
                "Very large datasets were found not worth SSD caching: their hot part does not fit an "
                "affordable SSD, and the cached setups studied held single to double digit TB. A trace "
                "of your workload (cachewise trace) would show whether it has hot spots after all.",
                ("T-SIZE-3", "L-SIZE-4"),
            )
        )
        return done(
            "dont-cache", "Don't cache: very large datasets gain little from an SSD cache.", None, "very-large-datasets"
        )
    if prof.sequential_share >= 0.7:
        reasons.append(
            Reason(
                f"{100 * prof.sequential_share:.0f}% of the I/O is sequential: hard disks stream well "
                "(175 MB/s for 7200 rpm) and bcache bypasses such streams by design.",
                ("T-SEQ-1", "T-DEV-1"),
            )
        )
        return done("dont-cache", "Don't cache: the workload is sequential streams.", None, "sequential")
    # First touches dominate the trace: whether those blocks come back cannot be seen in it.
    if prof.too_short and prof.read_share < WRITE_ONCE_READS and prof.cold_share >= WRITE_ONCE_FIRST_TOUCHES:
        reasons.append(
            Reason(
                f"{100 * prof.cold_share:.0f}% of the trace's accesses are first touches and only "
                f"{100 * prof.read_share:.0f}% are reads: data written once and not read back (a backup target, "
                "a log) gains nothing from a cache, which would only wear the SSD.",
                ("L-SIZE-4", "T-DEV-3"),
            )
        )
        return done("dont-cache", "Don't cache: the data is written once and not read back.", None, "write-once")
    if prof.too_short:
        uncertain = _uncertain(ctx, candidates)
        if uncertain is None and prof.chunk_hits is not None:
            warnings.append(
                Reason(
                    f"At 4 KiB, {100 * prof.cold_share:.0f}% of the trace's accesses are first touches; at "
                    f"dm-cache's {(prof.chunk_bytes or 0) // KiB} KiB chunks only {100 * prof.chunk_cold_share:.0f}%: "
                    "the chunk curve dm-cache's prediction follows is judged from chunks that came back, bcache's "
                    "4 KiB one could not be.",
                    ("L-SIZE-4",),
                )
            )
        if uncertain is not None:
            reasons.append(Reason(_uncertain_text(uncertain), ("L-SIZE-4",)))
            return done(
                "cant-judge",
                "Can't judge yet: most of the trace is first touches, so it cannot show whether the data comes back.",
                None,
                "first-touches",
                uncertain,
            )
    plannable = [(c, b) for c, b in candidates if not any(x.code == "refused" for x in b)] or candidates
    best_hit = max(c.predicted_hit_ratio or 0.0 for c, _ in plannable)
    if best_hit < 0.3 and prof.read_share >= 0.5:
        if prof.hot_bytes <= HOT_SPOT_SHARE * data_bytes:  # the hot spots are there; they do not fit
            need = prof.hot_bytes
            reasons.append(
                Reason(
                    f"The hot data ({cache_size(need)}, serving {100 * HOT_SHARE:.0f}% of the I/O) is "
                    f"{need / max(room, 1):.0f}x the room this SSD gives a cache ({cache_size(room)}): the largest "
                    f"cache would serve only {best_hit:.1%} of reads. An SSD of {cache_size(need)} or more would "
                    "hold it.",
                    ("L-SIZE-2", "L-SIZE-3"),
                )
            )
            return done(
                "dont-cache", "Don't cache with this SSD: it is too small for the hot data.", None, "ssd-too-small"
            )
        reasons.append(
            Reason(
                f"Even the largest cache this SSD allows would serve only {best_hit:.0%} of reads, and "
                f"{100 * HOT_SHARE:.0f}% of the I/O spreads over {cache_size(prof.hot_bytes)} of the "
                f"{cache_size(data_bytes)} of data: the workload has no hot spots a cache can hold.",
                ("L-SIZE-4", "L-SIZE-3"),
            )
        )
        return done("dont-cache", "Don't cache: the workload has too few hot spots.", None, "no-hot-spots")

    # 4. Choose among the candidates that can be done as things stand.
    allowed = [(c, b) for c, b in candidates if not b]
    allowed.sort(key=lambda cb: -(cb[0].expected_speedup or 0))
    if not allowed or (allowed[0][0].expected_speedup or 0) < MIN_GAIN:
        best_blocked = max(plannable, key=lambda cb: cb[0].expected_speedup or 0)
        why = "; ".join(b.text for b in best_blocked[1]) or "it gains too little"
        if allowed:
            top = allowed[0][0]
            reasons.append(
                Reason(
                    f"The best cache possible as things stand, {top.label}, is expected to give "
                    f"{top.expected_speedup:g}x ({top.speedup_basis}): not worth a cache's risk and "
                    "complexity.",
                    _speedup(ctx, top.backend, top.mode, top.predicted_hit_ratio or 0)[2],
                )
            )
        reasons.append(
            Reason(
                f"{best_blocked[0].label} would give about {best_blocked[0].expected_speedup:g}x "
                f"({best_blocked[0].speedup_basis}), but {why}.",
                _speedup(ctx, best_blocked[0].backend, best_blocked[0].mode, best_blocked[0].predicted_hit_ratio or 0)[
                    2
                ],
            )
        )
        if prof.kind == "very-small-files" and fs == "ext4":
            reasons.append(
                Reason(
                    "For creating many small files, moving from ext4 to XFS gave 4 to 7x whatever the cache.",
                    ("T-SMALL-1",),
                )
            )
        # What moving the data would open up (the lvm caches, once it is in an LV).
        moves = {b.what: b for d in (slow, *inp.fast) for b in d.barriers if b.migrate}
        reasons += [Reason(f"{what}.", GATE_FINDINGS.get(b.code, ("M-LVM-1",))) for what, b in moves.items()]
        return done(
            "dont-cache",
            "Don't cache: no cache that can be set up here is expected to help this workload.",
            None,
            "gains-too-little" if allowed else "blocked",
        )
    chosen = allowed[0][0]
    wt = next((c for c, _ in allowed if c.backend == chosen.backend and c.mode == "writethrough"), None)
    if (
        chosen.mode == "writeback"
        and wt is not None
        and (chosen.expected_speedup or 0) < WRITEBACK_MARGIN * (wt.expected_speedup or 0)
    ):
        chosen = wt
    ids = _speedup(ctx, chosen.backend, chosen.mode, chosen.predicted_hit_ratio or 0.0)[2]
    reasons.append(
        Reason(f"{chosen.label} is expected to give about {chosen.expected_speedup:g}x ({chosen.speedup_basis}).", ids)
    )
    reasons += _backend_reasons(ctx, chosen)
    reasons += _mode_reasons(ctx, chosen)
    reasons += _size_reasons(ctx, chosen)
    warnings += _warnings(ctx, chosen)
    summary = (
        f"Cache with {chosen.label}, {cache_size(chosen.size_bytes)} on the SSD"
        + (f", predicted hit ratio {chosen.predicted_hit_ratio:.0%}" if chosen.predicted_hit_ratio is not None else "")
        + "."
    )
    return done("cache", summary, chosen)


def _measured(d: DeviceFacts) -> str:
    """How a device's class is known: measured by a probe, or only from the kernel's flag (with
    the typical latency the model then assumes)."""
    if d.class_source == "probe":
        return f"measured as {d.device_class.upper()} ({d.latency:.3f} ms median read)"
    return (
        f"is {d.device_class.upper()} by the {d.class_source}, not measured "
        f"(a typical {d.device_class.upper()} reads in {d.latency:.3f} ms)"
    )


def _uncertain(ctx: _Context, candidates: list[tuple[CacheConfig, list[Blocker]]]) -> Uncertain | None:
    """The range for the cache that would be chosen, between first touches lost for good and
    first touches that come back; None when no cache could be set up anyway, or when the curve
    the chosen one follows is judged from data that came back (dm-cache's chunks often are)."""
    allowed = sorted((c for c, b in candidates if not b), key=lambda c: -(c.expected_speedup or 0))
    if not allowed or not ctx.prof.too_short_for(allowed[0].backend):
        return None
    cfg = allowed[0]
    hi_size = _limit(ctx, cfg.backend)
    if cfg.predicted_hit_ratio is not None:
        low = ctx.prof.hit_of(cfg.backend, cfg.effective_bytes, raw=True, reads=True)
        high = ctx.prof.hit_of(cfg.backend, hi_size / _overhead(ctx, cfg.backend), reads=True)
        hit: tuple[float, float] | None = (round(low, 4), round(max(high, low), 4))
    else:
        low = high = 0.0
        hit = None
    s_low = _speedup(ctx, cfg.backend, cfg.mode, low)[0]
    s_high = _speedup(ctx, cfg.backend, cfg.mode, max(high, low))[0]
    return Uncertain(
        cfg.backend,
        cfg.mode,
        hit,
        (round(min(s_low, s_high), 2), round(max(s_low, s_high), 2)),
        (cfg.size_bytes, max(hi_size, cfg.size_bytes)),
        round(ctx.prof.chunk_cold_share if ctx.prof.chunked(cfg.backend) else ctx.prof.cold_share, 4),
        RECORD_LONGER,
    )


def _uncertain_text(u: Uncertain) -> str:
    label = f"{backend_of(u.backend).label} {u.mode}"
    hit = f"from {u.hit_ratio[0]:.0%} to {u.hit_ratio[1]:.0%} of reads, " if u.hit_ratio is not None else ""
    return (
        f"{100 * u.first_touch_share:.0f}% of the trace's accesses are first touches: it cannot show whether those "
        f"blocks come back. {label} of {cache_size(u.size_bytes[0])} to {cache_size(u.size_bytes[1])} would serve "
        f"{hit}about {u.speedup[0]:g}x to {u.speedup[1]:g}x, depending on that. Record {u.record}, and ask again."
    )


def _backend_reasons(ctx: _Context, cfg: CacheConfig) -> list[Reason]:
    out = []
    slow = ctx.inp.slow
    if cfg.backend.startswith("lvmcache"):
        if slow.is_lv:
            out.append(
                Reason(
                    f"{slow.path} is already an LV in VG {slow.vg}: lvmcache attaches in place, no "
                    "reformat, and detaches the same way.",
                    ("T-LVM-2", "M-SAME-VG-1"),
                )
            )
        else:
            out.append(
                Reason("lvmcache needs the data on an LV; the SSD joins the same VG.", ("T-LVM-2", "M-SAME-VG-1"))
            )
        if cfg.backend == "lvmcache-writecache":
            out.append(Reason("The workload is mostly writes: dm-writecache absorbs them on the SSD.", ("M-WC-1",)))
    else:
        if cfg.needs_reformat:
            out.append(
                Reason(
                    f"bcache needs its own superblock on {slow.path}: back the data up, make-bcache, "
                    "restore (you allowed a reformat).",
                    ("T-LVM-2",),
                )
            )
        else:
            out.append(
                Reason(
                    f"{slow.path} holds no data, so bcache can be set up without moving anything; it was "
                    "the fastest cache in the thesis.",
                    ("T-BC-1", "T-BC-2"),
                )
            )
    return out


def _mode_reasons(ctx: _Context, cfg: CacheConfig) -> list[Reason]:
    if cfg.mode == "writethrough":
        if ctx.mirror_pool and cfg.backend.startswith("lvmcache"):
            return [
                Reason(
                    "Writethrough: writeback would not be much faster for this workload, and it would need the "
                    "cache mirrored on both SSDs (LVM raid1), which halves their space; writethrough loses "
                    "nothing if an SSD fails.",
                    ("T-MODE-1", "T-MODE-2"),
                )
            ]
        if ctx.writeback_allowed:
            return [
                Reason(
                    "Writethrough: writeback would not be much faster for this workload, and writethrough "
                    "loses nothing if the SSD fails.",
                    ("T-MODE-1", "T-MODE-2"),
                )
            ]
        return [
            Reason(
                "Writethrough: the SSD holds no data that is not also on the disk, so an SSD failure only "
                "costs speed. Writeback needs a redundant fast side (an md RAID1 array or an LVM raid1 LV; "
                f"seen: {_seen_redundancy(ctx.inp.fast)}) or your explicit acceptance of the risk.",
                ("T-MODE-1", "T-MODE-2"),
            )
        ]
    inp = ctx.inp
    if cfg.mirrored_pool:
        why = (
            f"the plan mirrors the cache on both SSDs ({' and '.join(f.path for f in inp.fast)}) as LVM raid1, so "
            "either can fail without losing a dirty block; each SSD holds a whole copy, so the cache is as big as "
            "the smaller one (lvmcache(7), RAID1 cache device)"
        )
    elif ctx.redundant:
        why = (
            "the fast side is redundant as discovered ("
            + "; ".join(f"{f.path}: {f.redundancy}" for f in inp.fast)
            + ")"
        )
    elif inp.fast_mirrored:
        why = (
            "you said the fast devices are (or will be) mirrored, which cachewise did not see: "
            + _seen_redundancy(inp.fast)
            + "; until they are, dirty data is lost if one SSD fails"
        )
    else:
        why = "you accepted the risk of losing dirty data if the SSD fails (" + _seen_redundancy(inp.fast) + ")"
    return [Reason(f"Writeback: {why}.", ("T-MODE-1",))]


def _seen_redundancy(fast: tuple[DeviceFacts, ...]) -> str:
    """What discovery saw of the fast side's redundancy, for a reason's text."""
    if len(fast) >= 2:
        return f"{len(fast)} separate devices ({', '.join(f.path for f in fast)}), no mirror between them"
    return f"{fast[0].path} is a single device"


def _backend_curves(ctx: _Context) -> dict[str, CurveView]:
    prof, out = ctx.prof, dict[str, CurveView]()
    backends: tuple[Backend, ...] = ("bcache", "lvmcache")
    for backend in backends:
        sizes, hits = prof.curve_of(backend)
        overhead = _overhead(ctx, backend)
        if prof.chunked(backend):
            source = f"{prof.source}, {(prof.chunk_bytes or 0) // KiB} KiB chunks"
        elif backend == "lvmcache":
            source = f"{prof.source}, x{SPACE_OVERHEAD['lvmcache']:g} space (T-SIZE-1)"
        else:
            source = prof.source
        out[backend] = CurveView(
            source,
            [int(x) for x in sizes * overhead],
            [round(float(h), 6) for h in hits],
            int(prof.knee_of(backend) * overhead),
            round(float(hits.max()) if len(hits) else 0.0, 6),
            prof.hot_bytes,
            prof.curve_mode,
            prof.sample_rate,
        )
    return out


def _size_reasons(ctx: _Context, cfg: CacheConfig) -> list[Reason]:
    prof = ctx.prof
    knee = prof.knee()
    which = "measured" if prof.source == "trace" else "modelled"
    out = [
        Reason(
            f"The {which} curve's knee is {cache_size(knee)}: the smallest cache reaching {100 * KNEE_SHARE:.0f}% "
            f"of the achievable hit ratio ({prof.achievable:.0%}).",
            ("L-SIZE-4",) if prof.source == "trace" else ("L-SIZE-1",),
        )
    ]
    burst = _write_need(ctx, cfg.backend, cfg.mode)
    if burst:
        writecache = cfg.backend == "lvmcache-writecache"
        share = "its high watermark (50%)" if writecache else "bcache's 40% write cutoff"
        backlog = int(burst * (WRITECACHE_HIGH_WATERMARK / 100 if writecache else BCACHE_WRITE_CUTOFF))
        drain = 1000.0 / ctx.inp.slow.latency * BLOCK
        out.append(
            Reason(
                f"The trace's write bursts would leave up to {cache_size(backlog)} "
                f"written and not yet on the disk (taking writes back at about {cache_size(int(drain))}/s): at "
                f"{share}, a cache of {cache_size(burst)} or more holds them"
                + (", and the size follows from that alone." if writecache else "."),
                ("K-WC-1",) if writecache else ("K-BC-2",),
            )
        )
    if cfg.backend == "lvmcache" and prof.chunked("lvmcache"):
        chunk_knee = prof.knee_of("lvmcache")
        ratio = chunk_knee / knee if knee else 1.0
        out.append(
            Reason(
                f"dm-cache caches whole {(prof.chunk_bytes or 0) // KiB} KiB chunks, so the size and hit ratio "
                f"come from the trace's curve at that granularity: its knee is {cache_size(chunk_knee)}, "
                f"{ratio:.1f}x the {cache_size(knee)} at 4 KiB (the thesis measured 3.5x on its workload; "
                "this one is measured).",
                ("T-SIZE-1", "M-CHUNK-1"),
            )
        )
    elif cfg.backend == "lvmcache":
        out.append(
            Reason(
                f"dm-cache needs about {SPACE_OVERHEAD['lvmcache']:g}x the SSD space bcache needs for the "
                f"same hot data, so {cache_size(cfg.size_bytes)} holds about {cache_size(cfg.effective_bytes)} of it.",
                ("T-SIZE-1",),
            )
        )
    if cfg.backend == "lvmcache":
        out.append(
            Reason(
                f"Chunk {cfg.chunk_size_bytes // KiB if cfg.chunk_size_bytes else 0} KiB and metadata "
                f"{cache_size(cfg.metadata_size_bytes or 0)} (plus a spare of the same size) as lvm2 computes them; "
                f"{cache_size(cfg.fast_space_bytes)} of the SSD in all.",
                ("M-CHUNK-1", "M-META-1"),
            )
        )
    if cfg.backend == "bcache":
        out.append(
            Reason(
                "sequential_cutoff 4 MiB keeps streams from evicting the hot data; writeback_percent "
                f"{cfg.writeback_percent}.",
                ("T-SEQ-1",),
            )
        )
    if cfg.bounded_by_ssd:
        out.append(
            Reason(
                f"The knee needs more than the SSD offers; the cache uses what there is "
                f"({cache_size(cfg.size_bytes)}).",
                ("T-SIZE-2",),
            )
        )
    if cfg.predicted_hit_ratio is not None:
        basis = ("L-SIZE-4",) if prof.source == "trace" else ("L-SIZE-2",)
        out.append(Reason(f"Predicted hit ratio at this size: {cfg.predicted_hit_ratio:.0%}.", basis))
    if cfg.warmup is not None:
        w = cfg.warmup
        when = (
            f", about {duration(w.seconds_63)} and {duration(w.seconds_95)} at the measured read rate"
            if w.seconds_63 is not None and w.seconds_95 is not None
            else ""
        )
        slow_fill = ""
        if cfg.backend == "lvmcache" and w.reads_63_full is not None:
            after = f" (about {duration(w.seconds_63_full)})" if w.seconds_63_full is not None else ""
            slow_fill = (
                f" dm-cache promotes about {w.promotion_probability:.0%} of read misses while it has free "
                f"chunks and {w.promotion_probability_full:.1%} once full, so a cache full of older data "
                f"takes about {w.reads_63_full:,} reads{after} to reach 63%."
            )
        out.append(
            Reason(
                f"Warm-up: about {w.reads_63:,} reads bring 63% of the hot data into the cache and "
                f"{w.reads_95:,} reads 95%{when}.{slow_fill}",
                w.findings,
            )
        )
    return out


def _warnings(ctx: _Context, cfg: CacheConfig) -> list[Reason]:
    inp, out = ctx.inp, []
    kernel = _version_tuple(inp.versions.kernel)
    if cfg.backend == "lvmcache" and kernel and kernel < (4, 12):
        out.append(
            Reason(
                f"Kernel {inp.versions.kernel} predates 4.12: its dm-cache smq policy stays near HDD speed "
                "once the cache is full of older data. Upgrade the kernel, or prefer bcache.",
                ("L-WARM-1",),
            )
        )
    big = max(f.logical_sector_size for f in inp.fast)
    if big > inp.slow.logical_sector_size:
        out.append(
            Reason(
                f"The SSD has {big}-byte logical sectors and {inp.slow.path} {inp.slow.logical_sector_size}-"
                "byte ones: a file system made with 512-byte sectors may not mount through the cache. Check "
                "the file system's sector size (xfs_info, tune2fs) before attaching.",
                ("M-SECT-1",),
            )
        )
    # Against the cache's size, as in the experiment cited: a 4 GiB dm-cache dipped only where the
    # hot 10% (4.8 GiB) passed 4 GiB, although T-SIZE-1's 3.5x would make it hold about 1.2 GiB.
    # What the workload touches is its footprint, not the device's size (L-SIZE-3 below).
    if ctx.prof.hot_bytes > cfg.size_bytes:
        out.append(
            Reason(
                f"The hot data ({cache_size(ctx.prof.hot_bytes)}, serving {100 * HOT_SHARE:.0f}% of the I/O) is "
                f"larger than the cache ({cache_size(cfg.size_bytes)}): expect periodic dips to HDD speed.",
                ("L-SIZE-2",),
            )
        )
    if ctx.prof.footprint_bytes >= 8 * cfg.size_bytes:
        out.append(
            Reason(
                f"The workload touches {ctx.prof.footprint_bytes / cfg.size_bytes:.0f}x the cache's size: "
                "averages will look good but the slowest 1% of requests can be slightly worse than the bare "
                "disk.",
                ("L-SIZE-3",),
            )
        )
    if ctx.prof.kind == "very-small-files" and ctx.fs == "ext4":
        out.append(
            Reason("Creating many small files on ext4: caching can make it slower; XFS gave 4 to 7x.", ("T-SMALL-1",))
        )
    if not ctx.slow_has_data:
        out.append(
            Reason(
                f"{inp.slow.path} holds no file system yet: make it and load the data first (mkfs writes "
                "its tables through the cache and leaves it full of cold data), then attach the cache.",
                ("D-WARM-1",),
            )
        )
    chunk = cfg.chunk_size_bytes or 0
    if cfg.backend == "lvmcache" and chunk > (ctx.prof.chunk_bytes or DM_CACHE_CHUNK):
        measured = (ctx.prof.chunk_bytes or DM_CACHE_CHUNK) // KiB
        out.append(
            Reason(
                f"lvm2 gives a cache pool of {cache_size(cfg.size_bytes)} chunks of {chunk // KiB} KiB (it keeps pools "
                f"under 1,000,000 chunks), larger than the {measured} KiB the curve was "
                f"{'measured' if ctx.prof.chunked('lvmcache') else 'modelled'} in: each chunk promoted carries more "
                f"cold data, so the predicted hit ratio is an upper bound. A pool of "
                f"{cache_size(MAX_CHUNKS * measured * KiB)} or less keeps {measured} KiB chunks.",
                ("M-CHUNK-1",),
            )
        )
    if cfg.backend == "lvmcache-writecache":
        block = cfg.writecache_block_size or 4096
        memory = f"about {cache_size(writecache_memory(cfg.size_bytes, block))} of kernel memory"
        if inp.memory_bytes:
            memory += f" of this machine's {cache_size(inp.memory_bytes)}"
        out.append(
            Reason(
                f"dm-writecache starts writing back only when {WRITECACHE_HIGH_WATERMARK}% of its blocks are in use: "
                f"up to {cache_size(cfg.size_bytes * WRITECACHE_HIGH_WATERMARK // 100)} of written data may be "
                f"dirty on the SSD before the disk has it, and its {block}-byte blocks take {memory}.",
                ("K-WC-1",),
            )
        )
    if cfg.mode == "writeback":
        for f in inp.fast:
            e = f.endurance
            if e is not None and e.percentage_used is not None and e.percentage_used >= 80:
                out.append(
                    Reason(
                        f"{f.path} has used {e.percentage_used}% of its rated endurance (SMART); writeback "
                        "writes every write to it.",
                        ("T-DEV-3",),
                    )
                )
            elif e is None or e.rating != "enterprise":
                out.append(
                    Reason(
                        f"Writeback wears {f.path}: check its rated endurance (TBW or DWPD). Consumer SSDs "
                        "are advisable only for writethrough.",
                        ("T-DEV-3",),
                    )
                )
            held = (
                "the SSDs hold the only copies of dirty data, and a mirror does not help when both lose power at once"
                if cfg.mirrored_pool
                else "the SSD holds the only copy of dirty data"
            )
            out.append(
                Reason(
                    f"Power-loss protection of {f.path}: unknown (neither SMART nor the kernel reports it). "
                    f"In writeback {held}, so an SSD that loses acknowledged writes on power failure loses "
                    "them for good: check its data sheet.",
                    ("T-MODE-1",),
                )
            )
    return out
