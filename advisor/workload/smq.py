"""dm-cache's smq policy replayed over a block trace, as the kernel runs it.

Written from the kernel's own code (mainline drivers/md/dm-cache-policy-smq.c and the parts
of drivers/md/dm-cache-target.c that call it, read in 2026), not from a description of it, and
checked against the counters of the lab's 6.1 kernel (tests/unit/test_smq.py):

- three multi-level queues of 64 LRU lists (oldest at the head): the *hotspot* queue of
  larger blocks (16 chunks, halved while all of them together would cover more than the origin) that
  records misses, and the *clean* and *dirty* queues of cached chunks;
- a read or write that misses updates the hotspot queue: a hotspot block is moved up
  ``hotspot_level_jump`` levels at its first access in a tick (the hit bits are cleared every
  tick), to the back of its level otherwise; a new one enters at the bottom, replacing the
  oldest of the lowest level when all are in use;
- it is promoted when its hotspot block's level is at least the promote level. Every tick
  (dm-cache's waker, once a second) the promote level is set from how often the hotspot
  queue's accesses fell in its top quarter: below 1/16 of them 48, below 1/8 32, else 0. The
  kernel computes ``threshold_level = max(threshold_level, NR_HOTSPOT_LEVELS)``, so the
  cache's own hit ratio and whether it has free chunks never change the level (kept here);
- a promotion needs a free chunk. With none, smq queues a *demotion* instead (the oldest clean
  chunk of the bottom 32 levels, or, when there is none, the writeback of a dirty one) as long
  as fewer than 25% of the chunks are free or being demoted, and the miss that asked is not
  promoted: when full, a promotion follows a demotion;
- a promoted chunk enters the top level of the clean queue (dirty when a writeback cache's
  write covered the whole chunk, which is promoted at once while chunks are free); a hit
  moves a chunk up one level once per cache period (60 s); every period the queues are
  redistributed so that each level holds its share;
- a writeback cache cleans its dirty chunks only when dm-cache calls it idle: no I/O for a
  second and ``migration_threshold`` at least one chunk (dm-cache-target.c,
  spare_migration_bandwidth); the dirty queue's sentinels, moved every 10 s, mark which
  dirty chunks are old enough to be cleaned when it is busy.

Simplified, and said so: background work (promotions, demotions, writebacks) completes at
once, where the kernel copies the chunk first (about a request's time on a disk); a bio is
split at chunk boundaries as dm-cache splits it, and every piece is one lookup as in the
kernel's counters; discards are not modelled; the hash tables' order does not matter and is
not kept; the clean queue's demote sentinels are left out because nothing reads them (the
demotion crosses them and clean chunks are requeued without them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from advisor.workload.timeline import ReadHitRatio, columns

NR_LEVELS = 64  # NR_HOTSPOT_LEVELS and NR_CACHE_LEVELS
HIT_THRESHOLD = NR_LEVELS * 3 // 4  # stats_init: a hotspot access at level 48 or above is a "hit"
HOTSPOT_TOP_LEVELS = 8
TICK_S = 1.0  # dm-cache's waker calls the policy's tick every COMMIT_PERIOD (HZ)
WRITEBACK_PERIOD_S = 10.0
CACHE_PERIOD_S = 60.0
IDLE_S = 1.0  # iot_idle_for(&cache->tracker, HZ)
NIL = -1
GOLDEN_RATIO_32 = 0x61C88647

Mode = Literal["writethrough", "writeback"]


def hotspot_geometry(cache_blocks: int, block_sectors: int, origin_sectors: int) -> tuple[int, int]:
    """calc_hotspot_params: (chunks per hotspot block, number of hotspot blocks)."""
    size = block_sectors * 16
    count = max(cache_blocks // 4, 1024)
    while size > block_sectors and size * count > origin_sectors:
        size //= 2
    return size // block_sectors, count


def random_level(cblock: int) -> int:
    """The level a mapping loaded without a hint enters at: hash_32(cblock, 9) & 63."""
    return (((cblock * GOLDEN_RATIO_32) & 0xFFFFFFFF) >> (32 - 9)) & (NR_LEVELS - 1)


class _Space:
    """The entries' fields, one list each (struct entry), shared by the queues."""

    def __init__(self, size: int) -> None:
        self.prev = [NIL] * size
        self.next = [NIL] * size
        self.level = [0] * size
        self.sentinel = [False] * size
        self.dirty = [False] * size
        self.oblock = [0] * size


class _Queue:
    """struct queue: 64 doubly linked lists, the oldest entry at each head; sentinels are
    entries that mark a time in a list and are not counted."""

    def __init__(self, space: _Space, top_levels: int = 0, in_top_levels: int = 0) -> None:
        self.s = space
        self.head = [NIL] * NR_LEVELS
        self.tail = [NIL] * NR_LEVELS
        self.count = [0] * NR_LEVELS  # entries per level, sentinels not counted
        self.nr_elts = 0
        self.last_target_nr_elts = 0
        self.top_levels = top_levels
        self.in_top_levels = in_top_levels
        self.target = [0] * NR_LEVELS

    # the lists (l_*)
    def _add_tail(self, level: int, e: int) -> None:
        s, t = self.s, self.tail[level]
        s.next[e], s.prev[e] = NIL, t
        if t != NIL:
            s.next[t] = e
        else:
            self.head[level] = e
        self.tail[level] = e
        if not s.sentinel[e]:
            self.count[level] += 1

    def _add_head(self, level: int, e: int) -> None:
        s, h = self.s, self.head[level]
        s.prev[e], s.next[e] = NIL, h
        if h != NIL:
            s.prev[h] = e
        else:
            self.tail[level] = e
        self.head[level] = e
        if not s.sentinel[e]:
            self.count[level] += 1

    def _add_before(self, level: int, old: int, e: int) -> None:
        s = self.s
        p = s.prev[old]
        if p == NIL:
            self._add_head(level, e)
            return
        s.prev[e], s.next[e] = p, old
        s.next[p] = e
        s.prev[old] = e
        if not s.sentinel[e]:
            self.count[level] += 1

    def _del(self, level: int, e: int) -> None:
        s = self.s
        p, n = s.prev[e], s.next[e]
        if p != NIL:
            s.next[p] = n
        else:
            self.head[level] = n
        if n != NIL:
            s.prev[n] = p
        else:
            self.tail[level] = p
        if not s.sentinel[e]:
            self.count[level] -= 1

    def _pop_tail(self, level: int) -> int:
        s, e = self.s, self.tail[level]
        while e != NIL:
            if not s.sentinel[e]:
                self._del(level, e)
                return e
            e = s.prev[e]
        return NIL

    # the queue (q_*)
    def push(self, e: int) -> None:
        if not self.s.sentinel[e]:
            self.nr_elts += 1
        self._add_tail(self.s.level[e], e)

    def push_front(self, e: int) -> None:
        if not self.s.sentinel[e]:
            self.nr_elts += 1
        self._add_head(self.s.level[e], e)

    def push_before(self, old: int, e: int) -> None:
        if not self.s.sentinel[e]:
            self.nr_elts += 1
        self._add_before(self.s.level[e], old, e)

    def delete(self, e: int) -> None:
        self._del(self.s.level[e], e)
        if not self.s.sentinel[e]:
            self.nr_elts -= 1

    def peek(self, max_level: int, cross_sentinels: bool) -> int:
        """q_peek: the oldest entry of the lowest populated level below ``max_level``."""
        s = self.s
        for level in range(min(max_level, NR_LEVELS)):
            e = self.head[level]
            while e != NIL:
                if s.sentinel[e]:
                    if not cross_sentinels:
                        break
                    e = s.next[e]
                    continue
                return e
        return NIL

    def pop(self) -> int:
        e = self.peek(NR_LEVELS, True)
        if e != NIL:
            self.delete(e)
        return e

    def _set_targets_subrange(self, nr_elts: int, begin: int, end: int) -> None:
        levels = end - begin
        per, remainder = (nr_elts // levels, nr_elts % levels) if levels else (0, 0)
        for level in range(begin, end):
            self.target[level] = per + 1 if level < begin + remainder else per

    def _set_targets(self) -> None:
        if self.last_target_nr_elts == self.nr_elts:
            return
        self.last_target_nr_elts = self.nr_elts
        if self.top_levels > NR_LEVELS:
            self._set_targets_subrange(self.nr_elts, 0, NR_LEVELS)
            return
        below = NR_LEVELS - self.top_levels
        self._set_targets_subrange(self.in_top_levels, below, NR_LEVELS)
        rest = self.nr_elts - self.in_top_levels if self.in_top_levels < self.nr_elts else 0
        self._set_targets_subrange(rest, 0, below)

    def _redist_pop_from(self, level: int) -> int:
        s = self.s
        for lv in range(level, NR_LEVELS):
            e = self.head[lv]
            while e != NIL:
                if not s.sentinel[e]:
                    self._del(s.level[e], e)
                    return e
                e = s.next[e]
        return NIL

    def redistribute(self) -> None:
        """q_redistribute: each level brought to its target count, pulling the oldest entries
        down from the levels above and pushing the newest up."""
        self._set_targets()
        s = self.s
        for level in range(NR_LEVELS - 1):
            target = self.target[level]
            while self.count[level] < target:
                e = self._redist_pop_from(level + 1)
                if e == NIL:
                    break
                s.level[e] = level
                self._add_tail(level, e)
            while self.count[level] > target:
                e = self._pop_tail(level)
                if e == NIL:
                    break
                s.level[e] = level + 1
                self._add_tail(level + 1, e)

    def requeue(self, e: int, extra_levels: int, s1: int = NIL, s2: int = NIL) -> None:
        """q_requeue: ``e`` to the back of the level ``extra_levels`` up, swapping down the
        oldest entry there (placed before sentinel s1 or s2 when they are given)."""
        s = self.s
        new_level = min(NR_LEVELS - 1, s.level[e] + extra_levels)
        if extra_levels and s.level[e] < NR_LEVELS - 1:
            passed = 0
            de = self.head[new_level]
            while de != NIL and s.sentinel[de]:
                passed += 1
                de = s.next[de]
            if de != NIL:
                self.delete(de)
                s.level[de] = s.level[e]
                if s1 != NIL and passed == 0:
                    self.push_before(s1, de)
                elif s1 != NIL and passed == 1:
                    self.push_before(s2, de)
                else:
                    self.push(de)
        self.delete(e)
        s.level[e] = new_level
        self.push(e)


@dataclass
class Counters:
    """dm-cache's status counters for the replay (per piece of a bio split at chunk edges)."""

    read_hits: int = 0
    read_misses: int = 0
    write_hits: int = 0
    write_misses: int = 0
    promotions: int = 0
    demotions: int = 0
    writebacks: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


class Smq:
    """One smq policy with its cache: ``lookup`` for each piece of I/O, ``advance`` for time."""

    def __init__(
        self,
        cache_blocks: int,
        block_sectors: int,
        origin_sectors: int,
        mode: Mode = "writethrough",
        migration_threshold: int = 2048,
        start: float = 0.0,
    ) -> None:
        if cache_blocks < 1 or block_sectors < 1:
            raise ValueError("a cache needs at least one chunk of at least one sector")
        self.cache_blocks = cache_blocks
        self.block_sectors = block_sectors
        self.writeback = mode == "writeback"
        self.migration_threshold = migration_threshold
        self.per_hotspot, self.nr_hotspot = hotspot_geometry(cache_blocks, block_sectors, origin_sectors)
        sentinels = 2 * NR_LEVELS  # the dirty queue's two sets of writeback sentinels
        self.s = s = _Space(sentinels + self.nr_hotspot + cache_blocks)
        self.wb_sentinel_base = 0
        self.hotspot_base = sentinels
        self.cache_base = sentinels + self.nr_hotspot
        for i in range(sentinels):
            s.sentinel[i] = True
        in_top = min(self.nr_hotspot // NR_LEVELS, cache_blocks // self.per_hotspot)
        self.hotspot = _Queue(s, HOTSPOT_TOP_LEVELS, in_top)
        self.clean = _Queue(s)
        self.dirty = _Queue(s)
        self.free_hotspot = list(range(self.cache_base - 1, self.hotspot_base - 1, -1))
        self.free_cache = list(range(self.cache_base + cache_blocks - 1, self.cache_base - 1, -1))
        self.table: dict[int, int] = {}  # oblock -> entry
        self.hotspot_table: dict[int, int] = {}  # hotspot block -> entry
        self.hotspot_hit = bytearray(self.nr_hotspot)
        self.cache_hit = bytearray(cache_blocks)
        self.hs_hits = self.hs_misses = 0  # hotspot_stats
        self.level_jump = 1
        self.read_promote_level = self.write_promote_level = NR_LEVELS  # until the first tick
        self.current_wb = False
        for which in (False, True):  # sentinels_init: both sets, one after the other
            self.current_wb = which
            for level in range(NR_LEVELS):
                sentinel = self._wb_sentinel(level, which)
                s.level[sentinel] = level
                self.dirty.push(sentinel)
        self.next_tick = start + TICK_S
        self.next_writeback_period = start + WRITEBACK_PERIOD_S
        self.next_cache_period = start
        self.last_io = start
        self.counters = Counters()
        self.timeline: list[tuple[float, int, int]] = []  # (tick time, read hits, read misses)

    # --- entries ---------------------------------------------------------------------------
    def _wb_sentinel(self, level: int, which: bool) -> int:
        return self.wb_sentinel_base + (level if which else NR_LEVELS + level)

    def _queue(self, e: int) -> _Queue:
        return self.dirty if self.s.dirty[e] else self.clean

    @property
    def resident(self) -> int:
        return self.cache_blocks - len(self.free_cache)

    @property
    def dirty_blocks(self) -> int:
        return self.dirty.nr_elts

    def load(self, oblocks: npt.ArrayLike, dirty: bool = False) -> None:
        """smq_load_mapping for each origin block, without hints: a cache that already holds
        other data when the trace starts (cblocks in order, each at its random level)."""
        for ob in np.asarray(oblocks, dtype=np.int64).tolist():
            if not self.free_cache or ob in self.table:
                continue
            e = self.free_cache.pop()
            s = self.s
            s.oblock[e], s.dirty[e] = ob, dirty and self.writeback
            s.level[e] = random_level(e - self.cache_base)
            self.table[ob] = e
            self._queue(e).push_front(e)

    # --- the policy's tick -----------------------------------------------------------------
    def advance(self, now: float) -> None:
        """Every tick up to ``now``: the waker's policy_tick and its migration worker. After two
        cache periods without I/O nothing changes from one tick to the next (no stats, no hit
        bits, the queues at their targets, nothing dirty): such ticks are skipped, phase kept."""
        while self.next_tick <= now:
            t = self.next_tick
            quiet = t - self.last_io > 2 * CACHE_PERIOD_S + 2 * TICK_S and not self.dirty.nr_elts
            if quiet:
                skip = int((now - t) // TICK_S)
                if skip > 0:
                    t += skip * TICK_S
                    self.next_cache_period = max(self.next_cache_period, t)
                    self.next_writeback_period = max(self.next_writeback_period, t)
            self._tick(t)
            if self.writeback and t - self.last_io >= IDLE_S and self.block_sectors <= self.migration_threshold:
                while self.dirty.nr_elts:  # idle: smq would clean everything
                    self._writeback(cross_sentinels=True)
            c = self.counters
            if not self.timeline or self.timeline[-1][1:] != (c.read_hits, c.read_misses):
                self.timeline.append((t, c.read_hits, c.read_misses))
            self.next_tick = t + TICK_S

    def _tick(self, now: float) -> None:
        if now >= self.next_writeback_period:  # update_sentinels
            self.next_writeback_period = now + WRITEBACK_PERIOD_S
            self.current_wb = not self.current_wb
            for level in range(NR_LEVELS):
                sentinel = self._wb_sentinel(level, self.current_wb)
                self.dirty.delete(sentinel)
                self.dirty.push(sentinel)
        # end_hotspot_period (every tick: the waker's period is a little over HZ)
        self.hotspot_hit = bytearray(self.nr_hotspot)
        assess = self._assess()
        threshold = NR_LEVELS // (4 if assess == 0 else 2 if assess == 1 else 1)
        self.read_promote_level = self.write_promote_level = NR_LEVELS - threshold
        self.level_jump = 4 if assess == 0 else 2 if assess == 1 else 1
        self.hotspot.redistribute()
        self.hs_hits = self.hs_misses = 0
        if now >= self.next_cache_period:  # end_cache_period
            self.cache_hit = bytearray(self.cache_blocks)
            self.dirty.redistribute()
            self.clean.redistribute()
            self.next_cache_period = now + CACHE_PERIOD_S

    def _assess(self) -> int:
        """stats_assess of the hotspot queue: 0 poor, 1 fair, 2 well."""
        total = self.hs_hits + self.hs_misses
        confidence = (self.hs_hits << 8) // total if total else 0
        return 0 if confidence < 16 else 1 if confidence < 32 else 2

    # --- lookups ---------------------------------------------------------------------------
    def lookup(self, oblock: int, write: bool, whole: bool, now: float) -> bool:
        """One piece of a bio (within one chunk) at time ``now``: True for a hit. ``whole``:
        the piece covers the chunk (a writeback cache may then promote it without a copy)."""
        self.advance(now)
        self.last_io = now
        c = self.counters
        e = self.table.get(oblock, NIL)
        if e != NIL:
            if write:
                c.write_hits += 1
            else:
                c.read_hits += 1
            self._requeue(e)
            if write and self.writeback and not self.s.dirty[e]:
                self._set_dirty(e, True)
            return True
        if write:
            c.write_misses += 1
        else:
            c.read_misses += 1
        hs = self._update_hotspot(oblock)
        fast = write and whole and self.writeback  # optimisable_bio
        if write:
            promote = (fast and bool(self.free_cache)) or (hs != NIL and self.s.level[hs] >= self.write_promote_level)
        else:
            promote = hs != NIL and self.s.level[hs] >= self.read_promote_level
        if promote:
            self._promote(oblock, dirty=fast)
        return False

    def _requeue(self, e: int) -> None:
        i = e - self.cache_base
        if self.cache_hit[i]:
            return
        self.cache_hit[i] = 1
        if not self.s.dirty[e]:
            self.clean.requeue(e, 1)
            return
        level = self.s.level[e]
        self.dirty.requeue(
            e, 1, self._wb_sentinel(level, not self.current_wb), self._wb_sentinel(level, self.current_wb)
        )

    def _set_dirty(self, e: int, dirty: bool) -> None:
        self._queue(e).delete(e)
        self.s.dirty[e] = dirty
        self._queue(e).push(e)

    def _update_hotspot(self, oblock: int) -> int:
        hb = oblock // self.per_hotspot
        s = self.s
        e = self.hotspot_table.get(hb, NIL)
        if e != NIL:
            if s.level[e] >= HIT_THRESHOLD:
                self.hs_hits += 1
            else:
                self.hs_misses += 1
            i = e - self.hotspot_base
            first = not self.hotspot_hit[i]
            self.hotspot_hit[i] = 1
            self.hotspot.requeue(e, self.level_jump if first else 0)
            return e
        self.hs_misses += 1
        if self.free_hotspot:
            e = self.free_hotspot.pop()
            s.level[e] = 0
        else:
            e = self.hotspot.pop()
            if e == NIL:
                return NIL
            del self.hotspot_table[s.oblock[e]]
            self.hotspot_hit[e - self.hotspot_base] = 0
        s.oblock[e] = hb
        self.hotspot.push(e)
        self.hotspot_table[hb] = e
        return e

    # --- background work, completed at once -----------------------------------------------
    def _promote(self, oblock: int, dirty: bool) -> None:
        """queue_promotion, and the promotion's completion: the chunk enters the top level."""
        if not self.free_cache:
            # !free_target_met: no chunk is free and, background work being done at once, none
            # is being demoted, so fewer than 25% (FREE_TARGET) are free or on their way out
            self._demote()
            return
        e = self.free_cache.pop()
        s = self.s
        s.oblock[e], s.level[e], s.dirty[e] = oblock, NR_LEVELS - 1, dirty
        self.table[oblock] = e
        self._queue(e).push(e)
        self.counters.promotions += 1

    def _demote(self) -> None:
        e = self.clean.peek(NR_LEVELS // 2, True)
        if e == NIL:
            if self.dirty.nr_elts:  # !clean_target_met(idle=true): clean one first
                self._writeback(cross_sentinels=False)
            return
        self.clean.delete(e)
        del self.table[self.s.oblock[e]]
        self.free_cache.append(e)
        self.counters.demotions += 1

    def _writeback(self, cross_sentinels: bool) -> None:
        e = self.dirty.peek(NR_LEVELS, cross_sentinels)
        if e == NIL:
            return
        self.dirty.delete(e)
        self.s.dirty[e] = False
        self.clean.push(e)
        self.counters.writebacks += 1


@dataclass
class Replay(ReadHitRatio):
    """What the kernel's counters would show after the trace, and at each tick."""

    counters: Counters
    resident: int
    dirty: int
    cache_blocks: int
    times: npt.NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))
    read_hits: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, np.int64))
    read_misses: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, np.int64))

    def as_dict(self) -> dict[str, Any]:
        return {
            **self.counters.as_dict(),
            "resident": self.resident,
            "dirty": self.dirty,
            "cache_blocks": self.cache_blocks,
            "read_hit_ratio": self.read_hit_ratio,
        }


def _spans(requests: Any, chunk: int) -> tuple[npt.NDArray[np.int64], ...]:
    """Each request's offset, length (at least 1) and first and last chunk."""
    offset = requests["offset"].astype(np.int64)
    length = np.maximum(requests["length"].astype(np.int64), 1)
    return offset, length, offset // chunk, (offset + length - 1) // chunk


def piece_count(requests: Any, chunk: int) -> int:
    """How many pieces pieces() would split the requests into."""
    _, _, first, last = _spans(requests, chunk)
    return int((last - first + 1).sum())


def pieces(requests: Any, chunk: int) -> tuple[npt.NDArray[Any], ...]:
    """A trace's requests split at chunk edges as dm-cache splits bios: (time, chunk, write,
    whole) per piece, in order."""
    offset, length, first, last = _spans(requests, chunk)
    n = last - first + 1
    idx = np.repeat(np.arange(len(n)), n)
    starts = np.cumsum(n) - n
    block = first[idx] + (np.arange(int(n.sum())) - starts[idx])
    lo = np.maximum(offset[idx], block * chunk)
    hi = np.minimum(offset[idx] + length[idx], (block + 1) * chunk)
    whole = (hi - lo) == chunk
    return requests["t"][idx].astype(np.float64), block, requests["write"][idx].astype(bool), whole


def replay(
    requests: Any,
    cache_bytes: int,
    chunk: int,
    origin_bytes: int,
    mode: Mode = "writethrough",
    migration_threshold: int = 2048,
    preload: npt.ArrayLike | None = None,
) -> Replay:
    """The trace's requests through an smq cache of ``cache_bytes`` in ``chunk``s in front of an
    origin of ``origin_bytes``; ``preload``: origin chunks already cached when it starts."""
    return replay_pieces(
        pieces(requests, chunk), cache_bytes // chunk, chunk, origin_bytes, mode, migration_threshold, preload
    )


def replay_pieces(
    split: tuple[npt.NDArray[Any], ...],
    cache_blocks: int,
    chunk: int,
    origin_bytes: int,
    mode: Mode = "writethrough",
    migration_threshold: int = 2048,
    preload: npt.ArrayLike | None = None,
) -> Replay:
    """replay() of a trace already split by pieces(), for a cache of ``cache_blocks`` chunks."""
    t, block, write, whole = split
    start = float(t[0]) if len(t) else 0.0
    policy = Smq(max(1, cache_blocks), chunk // 512, max(1, origin_bytes // 512), mode, migration_threshold, start)
    if preload is not None:
        policy.load(preload)
    lookup = policy.lookup
    for now, b, w, full in zip(t.tolist(), block.tolist(), write.tolist(), whole.tolist(), strict=True):
        lookup(b, w, full, now)
    if len(t):
        policy.advance(float(t[-1]))
    return Replay(
        policy.counters,
        policy.resident,
        policy.dirty_blocks,
        policy.cache_blocks,
        *columns(policy.timeline),
    )
