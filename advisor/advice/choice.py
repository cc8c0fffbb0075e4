"""The choice: from the inputs and the workload profile, a :class:`Decision` of codes, numbers
and configurations, for advisor.advice.explain to word (what to record next is the one phrase
it carries, RECORD_LONGER, which the plan's refusal quotes too).

1. The safety gate's refusals that bar every backend: don't cache.
2. The slow device is already flash, or the fast one is not fast: don't cache.
3. The data fits on the SSD: move it there (T-SIZE-3).
4. Very large datasets, sequential streams, data written once: don't cache; first touches that
   dominate the trace: can't judge yet, with the range; an SSD too small for the hot data, or
   no hot spots: don't cache.
5. Every backend and mode is a candidate with a configuration (sized from its curve's knee, the
   hot data and its write bursts, within the SSD) and a speed-up on one basis; the fastest that
   nothing blocks is chosen (writeback only when clearly faster); when none gains enough,
   don't cache with the real cause. Only candidates that can be planned are offered besides.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np

from advisor.advice.config import BLOCK, RECORD_LONGER, CacheConfig, Warmup
from advisor.advice.lvmrules import LVM_EXTENT, MAX_CHUNKS, lvm_space, round_down, round_up
from advisor.advice.model import Cause, DeviceFacts, FileSystem, Inputs, RecommendError, Uncertain, Verdict
from advisor.advice.profile import Profile, profile
from advisor.advice.thesis import Gain, tables
from advisor.advice.traits import TRAITS, Traits, traits, warmup_unit
from advisor.advice.workloads import WorkloadType
from advisor.backends import BACKENDS, Mode
from advisor.backends import BackendId as Backend
from advisor.backends import backend as backend_of
from advisor.disks.gate import Barrier, writecache_max_bytes
from advisor.errors import next_step
from advisor.units import MiB

WRITE_ONCE_READS = 0.2  # a trace of first touches with fewer reads than this writes data once,
WRITE_ONCE_FIRST_TOUCHES = 0.9  # when this share of its accesses or more are first touches
HOT_SPOT_SHARE = 0.25  # hot spots: the data serving HOT_SHARE of the I/O is at most this share of the data
MOVE_FILL = 0.80  # data up to this share of the SSD "fits" (room for growth and overprovisioning)
MIN_CACHE = 256 * MiB
MIN_GAIN = 1.10  # below this expected speed-up, caching is not worth its risk and complexity
WRITEBACK_MARGIN = 1.20  # writeback must beat writethrough by this much to be preferred
SEQUENTIAL = 0.7  # this share of sequential I/O or more: streams a disk serves as well
FEW_HITS = 0.3  # the best cache serving fewer reads than this (of a mostly-read load) is not worth it


def version_tuple(text: str | None) -> tuple[int, ...]:
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


@dataclass(frozen=True)
class Situation:
    """The inputs as the choice reads them."""

    inp: Inputs
    prof: Profile
    fs: FileSystem
    data_bytes: int
    fast_bytes: int  # usable fast capacity (the smaller of a mirrored pair)
    redundant: bool  # discovery saw every fast device redundant
    writeback_allowed: bool
    slow_has_data: bool
    mirror_pool: bool = False  # two unmirrored SSDs that an LVM plan can mirror (raid1)

    @property
    def room(self) -> int:
        """The fast space a cache (or the data) may take: the SSD, or the budget set aside."""
        return min(self.fast_bytes, self.inp.cache_budget_bytes or self.fast_bytes)


Basis = Literal["latency", "streams", "thesis", "thesis-share", "thesis-cap", "thesis-elsewhere"]


@dataclass(frozen=True)
class Speedup:
    """An expected speed-up and its basis, in numbers: the latency model (one basis for every
    candidate), the thesis's factor where its hardware matches (whole, or for the share of the
    hot data's hits the cache gets), the model capped by the thesis's loss, or the model with
    the thesis's factor set aside as measured on other hardware."""

    factor: float
    basis: Basis
    findings: tuple[str, ...]
    workload: WorkloadType | None = None
    fs: str = "any"  # the file system of the thesis's figure
    measured: float = 0.0  # the thesis's factor
    held: float = 1.0  # the share of the thesis's hot-data hits this cache gets
    model: float = 0.0  # the latency model's factor
    bypassed: float = 0.0  # of the requests: streams the cache lets through
    writes_at_disk: bool = False  # a writeback whose writes still cost the disk (dm-cache)
    absorbed: float = 1.0  # of the writes: those that stay at the SSD's speed
    writes_per_s: float = 0.0
    disk_writes_per_s: float = 0.0
    measured_mode: str = ""  # the mode of the thesis's figure, when it is another mode's


@dataclass(frozen=True)
class Blocker:
    """Why a candidate cannot be the recommendation as things stand."""

    code: Literal[
        "writeback-risk",
        "needs-reformat",
        "too-old",
        "mostly-reads",
        "not-measured",
        "tool-missing",
        "refused",
        "needs-migration",
    ]
    barrier: Barrier | None = None  # the gate's refusal (refused, needs-migration)
    mirror_pool: bool = False  # writeback-risk: two SSDs the backend cannot mirror itself
    tool: str = ""  # tool-missing: the Versions field of the package


@dataclass(frozen=True)
class Candidate:
    config: CacheConfig  # speedup_basis is the explanation's to word
    speedup: Speedup
    blockers: tuple[Blocker, ...]
    # The size the curve asked for, when it passed lvm2's chunk threshold for no more read hits
    # and the cache was held to the largest pool of the finer chunk (0: not held).
    held_from: int = 0

    @property
    def traits(self) -> Traits:
        return traits(self.config.backend)

    @property
    def speed(self) -> float:
        return self.config.expected_speedup or 0.0


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    cause: Cause
    situation: Situation
    candidates: tuple[Candidate, ...]
    chosen: Candidate | None = None
    offered: tuple[Candidate, ...] = ()  # the other caches that can be planned, fastest first
    uncertain: Uncertain | None = None
    barred: tuple[Barrier, ...] = ()  # the gate's refusals that bar every backend
    not_fast: DeviceFacts | None = None  # the fast device that is not fast
    best_hit: float = 0.0  # the best read hit ratio of a plannable cache
    top: Candidate | None = None  # the best cache possible as things stand, when it gains too little
    best_blocked: Candidate | None = None  # the best cache, whatever blocks it
    moves: tuple[Barrier, ...] = ()  # what moving the data would lift
    judged_by_chunks: bool = False  # first touches dominate at 4 KiB, not in dm-cache's chunks


def thesis_hardware(slow: DeviceFacts) -> bool:
    """Whether the slow device is an array like the thesis's (8 disks in RAID 10 behind a
    controller cache): a RAID 10 of four disks or more, as discovery saw it. Its measured factors
    are speed-ups over that array; a single disk is another baseline."""
    return slow.disks >= 4 and "raid10" in (slow.redundancy or "")


def speedup(s: Situation, t: Traits, mode: Mode, hit: float) -> Speedup:
    """The expected speed-up of a cache with read hit ratio ``hit``: the latency model; the
    thesis's measured factor instead where its hardware matches; held to the thesis's figure
    where it measured no gain or a loss (what the model cannot see: metadata, flushes)."""
    kind, gains = s.prof.kind, tables().gains
    # A writeback that writes every dirty chunk to the disk anyway does the disk's work of a
    # writethrough (T-LVM-1): where only writethrough was measured, that figure holds for it too.
    modes: tuple[Mode, ...] = (mode, "writethrough") if mode == "writeback" and t.dirty_share is None else (mode,)
    if kind is not None:
        # Other file systems borrow the ext4 figures (the thesis measured ext4 and XFS).
        for measured, fs in ((m, f) for m in modes for f in (s.fs if s.fs != "other" else "ext4", "any")):
            gain = gains.get((kind, fs, t.id, measured))
            if gain is None:
                continue
            other: Mode | Literal[""] = measured if measured != mode else ""
            if gain.streams:
                return Speedup(gain.factor, "streams", gain.findings, kind, fs, gain.factor, measured_mode=other)
            if thesis_hardware(s.inp.slow):
                held = _held_share(s, t, hit)
                factor = gain.factor if held >= 1.0 else _scaled_gain(gain.factor, held)
                basis: Basis = "thesis" if held >= 1.0 else "thesis-share"
                return Speedup(factor, basis, gain.findings, kind, fs, gain.factor, held, measured_mode=other)
            model = _latency_speedup(s, t, mode, hit)
            if gain.factor < MIN_GAIN:
                cap = min(model.factor, gain.factor)
                return _as(model, cap, "thesis-cap", gain.findings + model.findings, gain, fs, other)
            return _as(model, model.factor, "thesis-elsewhere", model.findings + gain.findings, gain, fs, other)
    return _latency_speedup(s, t, mode, hit)


def _as(
    model: Speedup, factor: float, basis: Basis, findings: tuple[str, ...], gain: Gain, fs: str, mode: str
) -> Speedup:
    """The latency model's speed-up, set beside the thesis's factor ``gain`` (measured on ``fs``
    in ``mode``)."""
    return replace(
        model, factor=factor, basis=basis, findings=findings, measured=gain.factor, fs=fs, measured_mode=mode
    )


def _latency_speedup(s: Situation, t: Traits, mode: Mode, hit: float) -> Speedup:
    # The disk's time per request. Reads hit with the predicted ratio. Writes: writethrough waits
    # for the disk; a cache whose dirty data may sit on the SSD (bcache writeback, dm-writecache)
    # takes every write there and writes it back merged, in disk order. dm-cache writeback sends
    # writes to uncached chunks straight to the disk and writes each dirty chunk back later, so
    # the disk does the same work as in writethrough: the thesis measured it no faster (T-LVM-1:
    # +23% writeback, +26% writethrough on ext4) with the HDD still busy (T-LVM-3).
    ts, tf = s.inp.slow.latency, min(f.latency for f in s.inp.fast)
    r = s.prof.read_share
    read_hit = hit if t.backend.caches_reads else 0.0
    read_cost = read_hit * tf + (1 - read_hit) * ts
    at_ssd = mode == "writeback" and t.dirty_share is not None
    write_cost = tf if at_ssd else ts
    # A write-back cache absorbs writes at the SSD's speed only as fast as the disk takes them
    # back in the long run: past that, dirty data sits at bcache's cutoffs or dm-writecache's
    # high watermark and the writes wait for the disk. The disk takes about 1000/ts writes a
    # second (no credit for writeback's merging); the measured write rate says how many come.
    absorbed = 1.0
    writes_per_s = s.prof.write_rate or 0.0
    if at_ssd and writes_per_s > 0:
        absorbed = min(1.0, (1000.0 / ts) / writes_per_s)
        write_cost = absorbed * tf + (1 - absorbed) * ts
    # Streams the cache lets through are served by the disk whatever the cache holds: they are
    # charged at its cost.
    b = s.prof.bypassed_share if t.bypasses_streams else 0.0
    cost = b * ts + (1 - b) * (r * read_cost + (1 - r) * write_cost)
    gain = ts / cost if cost > 0 else 1.0
    cites: tuple[str, ...] = ("T-DEV-1",)
    if b > 0:
        cites += ("T-SEQ-1",)
    at_disk = mode == "writeback" and t.dirty_share is None
    if at_disk:
        cites += t.dirty_findings
    if absorbed < 1.0:
        cites += t.dirty_findings
    return Speedup(
        gain,
        "latency",
        cites,
        s.prof.kind,
        bypassed=b,
        writes_at_disk=at_disk,
        absorbed=absorbed,
        writes_per_s=writes_per_s,
        disk_writes_per_s=1000.0 / ts,
        model=gain,
    )


def _held_share(s: Situation, t: Traits, hit: float) -> float:
    """How much of the thesis's setting a cache reproduces: its predicted hit ratio against
    the hit ratio at its curve's knee (the thesis's caches held their hot data), at most 1."""
    _, hits = s.prof.curve_of(t.id)
    at_knee = s.prof.hit_of(t.id, s.prof.knee_of(t.id), reads=True) if len(hits) else 0.0
    return min(1.0, hit / at_knee) if at_knee > 0 else 0.0


def _scaled_gain(gain: float, share: float) -> float:
    """A measured speed-up for the part of the I/O it applies to (Amdahl): the rest runs as
    it did uncached."""
    return 1.0 / ((1.0 - share) + share / gain)


def overhead(s: Situation, t: Traits) -> float:
    """SSD space per byte of hot data: T-SIZE-1's average factor, unless the backend's own curve
    was measured (dm-cache's chunk curve already holds what caching whole chunks costs)."""
    return 1.0 if s.prof.chunked(t.id) else t.space_overhead


def limit(s: Situation, t: Traits) -> int:
    """The largest cache of this backend the SSD (and the budget, and for dm-writecache the
    machine's memory) allows."""
    most = t.limit(s.fast_bytes)
    if s.inp.cache_budget_bytes:
        most = min(most, s.inp.cache_budget_bytes)
    if t.indexes_in_memory:
        # dm-writecache keeps an entry per block in kernel memory: its size is held to a share of it.
        cap = writecache_max_bytes(s.inp.memory_bytes, writecache_block(s))
        most = min(most, round_down(cap, LVM_EXTENT)) if cap is not None else most
    return most


def write_need(s: Situation, t: Traits, mode: Mode) -> int:
    """The cache a write-back cache needs for the trace's write bursts: the largest backlog of
    written data the disk would have had, taking writes back at about 1000/ts a second of 4 KiB,
    over the share of the cache that may be dirty (dm-writecache's high watermark, bcache's 40%
    cutoff). 0 without a trace, or for a cache that does not hold writes back."""
    rates, backlog = s.prof.write_backlog
    if not rates or mode != "writeback" or t.dirty_share is None:
        return 0
    need = float(np.interp(np.log(drain_rate(s)), np.log(rates), backlog))
    return int(need / t.dirty_share)


def drain_rate(s: Situation) -> float:
    """Bytes a second the slow disk takes back written data at: 1000/ts writes of 4 KiB."""
    return 1000.0 / s.inp.slow.latency * BLOCK


def size(s: Situation, t: Traits, mode: Mode = "writethrough") -> tuple[int, int, bool]:
    """(cache size, SSD space, bounded by the SSD) for a backend: the knee of its curve, and at
    least the hot data (what serves 90% of the I/O), so a cache the SSD has room for never ends
    smaller than the hot data it is said to hold; a write-back cache, at least what its write
    bursts need (a cache of writes alone: that alone)."""
    hot = s.prof.hot_bytes * (1.0 if s.prof.chunked(t.id) else overhead(s, t))
    burst = write_need(s, t, mode)
    if not t.backend.caches_reads and s.prof.write_backlog[0]:
        wanted = float(max(burst, MIN_CACHE))  # sized from the writes, not the read curve
    else:
        wanted = max(s.prof.knee_of(t.id) * overhead(s, t), hot, burst, MIN_CACHE, t.smallest)
    most = limit(s, t)
    cache = min(round_up(wanted, t.size_unit), most)
    return cache, t.space(cache), cache < round_up(wanted, t.size_unit)


def writecache_block(s: Situation) -> int:
    """lvm2's writecache block size: 512 bytes under an XFS made with 512-byte sectors (M-SECT-1)."""
    return 512 if s.inp.slow.logical_sector_size < 4096 and s.fs == "xfs" else 4096


def warmup(prof: Profile, backend: Backend, effective: int, hit: float, chunk: int | None = None) -> Warmup | None:
    """How long a cache of ``effective`` bytes takes to fill with the hot data (None for a cache
    of writes alone); dm-cache promotes whole ``chunk``s."""
    t = traits(backend)
    promotion = t.promotion
    if promotion is None or hit <= 0:
        return None
    p, p_full = promotion.free, promotion.full
    unit = warmup_unit(t, chunk or prof.chunk_bytes)
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
    return Warmup(
        hot,
        int(reads_63),
        int(reads_95),
        round(reads_63 / rate, 1) if rate else None,
        round(reads_95 / rate, 1) if rate else None,
        p,
        promotion.findings,
        unit,
        p_full,
        int(full_63),
        round(full_63 / rate, 1) if rate else None,
    )


def configure(s: Situation, t: Traits, mode: Mode) -> Candidate:
    """The candidate of this backend and mode: its configuration, speed-up and blockers."""
    cache, space, bounded = size(s, t, mode)
    wanted = 0
    most = chunk_threshold(s, t)
    if most and cache > most and s.prof.hit_of(t.id, most, reads=True) >= s.prof.hit_of(t.id, cache, reads=True):
        # Past lvm2's threshold the pool gets coarser chunks, measured to serve no more reads than
        # the largest pool of the finer ones: that one is the cache.
        wanted, cache, space = cache, most, t.space(most)
    effective = int(cache / overhead(s, t))
    hit = s.prof.hit_of(t.id, effective, reads=True)  # reads: what the kernel's read counters show
    every = s.prof.hit_of(t.id, effective)  # every access, reads and writes
    curve_read = s.prof.curves_for(t.id, effective).hit(effective, False, True)  # the same curve as `every`
    r = s.prof.read_share
    write_hit = min(1.0, max(0.0, (every - r * curve_read) / (1 - r))) if r < 1 else None
    gain = speedup(s, t, mode, hit)
    reads = t.backend.caches_reads
    cfg = CacheConfig(
        backend=t.id,
        mode=mode,
        size_bytes=cache,
        effective_bytes=effective,
        fast_space_bytes=space,
        predicted_hit_ratio=round(hit, 4) if reads else None,
        predicted_write_hit_ratio=round(write_hit, 4) if write_hit is not None and reads else None,
        expected_speedup=round(gain.factor, 2),
        warmup=_replayed(
            warmup(s.prof, t.id, effective, hit, lvm_space(cache)[0] if t.promotes_chunks else None),
            s.prof.replayed_seconds_63(t.id, effective),
        ),
        bounded_by_ssd=bounded,
        needs_reformat=t.own_superblock and s.slow_has_data,
        mirrored_pool=s.mirror_pool and mode == "writeback" and t.on_lvm and not s.writeback_allowed,
    )
    return Candidate(t.tunables(cfg, writecache_block(s)), gain, tuple(blockers(s, t, mode)), wanted)


def _replayed(w: Warmup | None, seconds: float | None) -> Warmup | None:
    """The warm-up model with the replay's time to 63% beside it, when the trace was replayed
    through the backend's kernel code (smq for an lvmcache, bcache's own)."""
    return replace(w, simulated_seconds_63=seconds) if w is not None and seconds is not None else w


def chunk_threshold(s: Situation, t: Traits) -> int:
    """The largest pool lvm2 gives the chunk the trace's curve was measured in (under
    MAX_CHUNKS of them), when the trace also measured coarser chunks to compare it with; 0 else."""
    if not (t.promotes_chunks and s.prof.chunked(t.id) and s.prof.coarse and s.prof.chunk_bytes):
        return 0
    return round_down(MAX_CHUNKS * s.prof.chunk_bytes, t.size_unit)


def gate(inp: Inputs, backend: Backend) -> list[Barrier]:
    """What the safety gate found against this backend on the devices given."""
    b = backend_of(backend)
    return [x for d in (inp.slow, *inp.fast) for x in d.barriers if x.bars(b)]


def barred_everywhere(inp: Inputs) -> list[Barrier]:
    """The refusals that bar every backend: no cache at all can be set up with these devices."""
    return [x for d in (inp.slow, *inp.fast) for x in d.barriers if not x.migrate and all(x.bars(b) for b in BACKENDS)]


def blockers(s: Situation, t: Traits, mode: Mode) -> list[Blocker]:
    """Why this candidate cannot be the recommendation as things stand (empty: it can)."""
    inp, why = s.inp, list[Blocker]()
    for barrier in gate(inp, t.id):
        why.append(Blocker("needs-migration" if barrier.migrate else "refused", barrier))
    if mode == "writeback" and not s.writeback_allowed and not (s.mirror_pool and t.on_lvm):
        why.append(Blocker("writeback-risk", mirror_pool=s.mirror_pool))
    if t.own_superblock and s.slow_has_data and not inp.reformat_ok:
        why.append(Blocker("needs-reformat"))
    if any(
        getattr(inp.versions, name) and version_tuple(getattr(inp.versions, name)) < version_tuple(least)
        for name, least in t.needs
    ):
        why.append(Blocker("too-old"))
    if not t.backend.caches_reads:
        if s.prof.read_share > 0.5:
            why.append(Blocker("mostly-reads"))
        elif s.prof.kind is not None:
            measured = {k[2] for k in tables().gains if k[0] == s.prof.kind}
            if measured and t.id not in measured:
                why.append(Blocker("not-measured"))
    if getattr(inp.versions, t.tool) == "":
        why.append(Blocker("tool-missing", tool=t.tool))
    return why


def _plannable(c: Candidate) -> bool:
    return not any(b.code in ("refused", "needs-migration") for b in c.blockers)


def situation(inp: Inputs) -> Situation:
    """The inputs checked and read: RecommendError names what is missing or wrong."""
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
    return Situation(
        inp,
        profile(inp, data_bytes),
        fs,
        data_bytes,
        fast_bytes,
        redundant,
        writeback_allowed=redundant or inp.accept_writeback_risk or inp.fast_mirrored,
        slow_has_data=slow.has_data,
        mirror_pool=mirror_pool,
    )


def decide(inp: Inputs) -> Decision:
    s = situation(inp)
    prof, slow = s.prof, inp.slow
    candidates = tuple(configure(s, t, mode) for t in TRAITS for mode in sorted(t.backend.modes, key=_mode_order))

    def done(verdict: Verdict, cause: Cause = "", chosen: Candidate | None = None, **more: Any) -> Decision:
        """The decision, with the other caches that can be planned; ``more``: Decision's other fields."""
        offered: list[Candidate] = []
        if verdict != "cant-judge":  # nothing is offered until the workload can be judged
            for c in sorted(candidates, key=lambda c: -c.speed):
                if chosen is not None and (c.config.backend, c.config.mode) == (
                    chosen.config.backend,
                    chosen.config.mode,
                ):
                    continue
                if any(b.code == "mostly-reads" for b in c.blockers):
                    continue  # a cache of writes alone, for a workload of reads
                if _plannable(c):  # only what can be planned (from this recommendation, on these devices)
                    offered.append(c)
        return replace(Decision(verdict, cause, s, candidates, chosen, tuple(offered)), **more)

    barred = barred_everywhere(inp)
    if barred:
        return done("dont-cache", "gate", barred=tuple(barred))
    if slow.device_class in ("ssd", "nvme"):
        return done("dont-cache", "already-flash")
    for f in inp.fast:
        if f.device_class in ("hdd", "unknown") or f.latency >= slow.latency / 4:
            return done("dont-cache", "fast-not-fast", not_fast=f)
    if s.data_bytes <= MOVE_FILL * s.room:
        return done("move-to-ssd", "fits-on-ssd")
    if prof.kind == "very-large-datasets" and prof.source == "model":
        return done("dont-cache", "very-large-datasets")
    if prof.sequential_share >= SEQUENTIAL:
        return done("dont-cache", "sequential")
    if prof.too_short and prof.read_share < WRITE_ONCE_READS and prof.cold_share >= WRITE_ONCE_FIRST_TOUCHES:
        return done("dont-cache", "write-once")
    judged_by_chunks = False
    if prof.too_short:
        uncertain = _uncertain(s, candidates)
        if uncertain is not None:
            return done("cant-judge", "first-touches", uncertain=uncertain)
        judged_by_chunks = prof.chunk_hits is not None
    plannable = [c for c in candidates if not any(b.code == "refused" for b in c.blockers)] or list(candidates)
    best_hit = max(c.config.predicted_hit_ratio or 0.0 for c in plannable)
    if best_hit < FEW_HITS and prof.read_share >= 0.5:
        # The hot spots are there and do not fit, or there are none.
        cause: Cause = "ssd-too-small" if prof.hot_bytes <= HOT_SPOT_SHARE * s.data_bytes else "no-hot-spots"
        return done("dont-cache", cause, best_hit=best_hit, judged_by_chunks=judged_by_chunks)
    allowed = sorted((c for c in candidates if not c.blockers), key=lambda c: -c.speed)
    if not allowed or allowed[0].speed < MIN_GAIN:
        best_blocked = max(plannable, key=lambda c: c.speed)
        moves = {b.what: b for d in (slow, *inp.fast) for b in d.barriers if b.migrate}
        return done(
            "dont-cache",
            "gains-too-little" if allowed else "blocked",
            top=allowed[0] if allowed else None,
            best_blocked=best_blocked,
            moves=tuple(moves.values()),
            best_hit=best_hit,
            judged_by_chunks=judged_by_chunks,
        )
    chosen = allowed[0]
    wt = next(
        (c for c in allowed if c.config.backend == chosen.config.backend and c.config.mode == "writethrough"), None
    )
    if chosen.config.mode == "writeback" and wt is not None and chosen.speed < WRITEBACK_MARGIN * wt.speed:
        chosen = wt
    return done("cache", chosen=chosen, judged_by_chunks=judged_by_chunks, best_hit=best_hit)


def _mode_order(mode: Mode) -> int:
    return 0 if mode == "writethrough" else 1


def _uncertain(s: Situation, candidates: tuple[Candidate, ...]) -> Uncertain | None:
    """The range for the cache that would be chosen, between first touches lost for good and
    first touches that come back; None when no cache could be set up anyway, or when the curve
    the chosen one follows is judged from data that came back (dm-cache's chunks often are)."""
    allowed = sorted((c for c in candidates if not c.blockers), key=lambda c: -c.speed)
    if not allowed or not s.prof.too_short_for(allowed[0].config.backend):
        return None
    c = allowed[0]
    cfg, t = c.config, c.traits
    hi_size = limit(s, t)
    if cfg.predicted_hit_ratio is not None:
        low = s.prof.hit_of(t.id, cfg.effective_bytes, raw=True, reads=True)
        # every first touch coming back: the steady curve (a replay only knows the trace's own)
        high_bytes = hi_size / overhead(s, t)
        high = s.prof.curves_for(t.id, high_bytes).hit(high_bytes, False, True)
        hit: tuple[float, float] | None = (round(low, 4), round(max(high, low), 4))
    else:
        low = high = 0.0
        hit = None
    s_low = speedup(s, t, cfg.mode, low).factor
    s_high = speedup(s, t, cfg.mode, max(high, low)).factor
    return Uncertain(
        t.id,
        cfg.mode,
        hit,
        (round(min(s_low, s_high), 2), round(max(s_low, s_high), 2)),
        (cfg.size_bytes, max(hi_size, cfg.size_bytes)),
        round(s.prof.chunk_cold_share if s.prof.chunked(t.id) else s.prof.cold_share, 4),
        RECORD_LONGER,
    )
