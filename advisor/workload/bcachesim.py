"""bcache replayed over a block trace, as the kernel runs it.

Written from the kernel's own code (mainline drivers/md/bcache/request.c, alloc.c, super.c and
writeback.[ch], read in 2026; the parts that matter here are unchanged since Linux 5.14), not
from a description of it, and checked against the counters of the lab's 6.1 kernel
(tests/unit/test_bcachesim.py):

- **what bypasses the cache** (check_should_bypass): everything while more than 95% of the
  buckets are in use (dirty or metadata); writes of a writearound cache; otherwise sequential
  I/O. The device keeps 64 recent I/Os, each the end of a run and its length, forgotten after
  5 s without a continuation; an I/O that starts where one ended continues it, any other takes
  the least recently used. A task's sequential size is its run's, or the average of its earlier
  runs (an exponentially weighted average of weight 8) if that is larger; at
  ``sequential_cutoff`` (4 MiB) or more the I/O goes to the disk (kernels before 4.18 kept a
  synchronous write of a writeback cache in it; 6.1 does not);
- **a read** looks every block up: a found block's bucket gets its priority back (32768);
  a read missing anything counts as a miss (``stats_total/cache_misses``), and only its first
  missing run, at most 1 MiB, is read into the cache (cached_dev_cache_miss); a bypassed read
  is looked up too but never inserted, and counts in ``cache_bypass_hits``/``_misses``;
- **a write** not bypassed is written into the cache (dirty in writeback mode while at most 40%
  of the buckets are in use, or 70% for a synchronous write: should_writeback); a bypassed write
  invalidates what the cache held of its range;
- **buckets** (512 KiB unless made otherwise) are filled in order from the free list; every
  ``nbuckets x bucket size / 1024`` sectors of cached I/O each bucket's priority drops by one
  (bch_rescale_priorities); when the allocator's free_inc list is empty it invalidates the
  4 x free buckets with the lowest ``(prio - min_prio + (32768 - min_prio) / 8) x live
  sectors``, never a dirty one, and all their data goes at once (free = nbuckets rounded up to a
  power of two / 1024, the free lists as cache_alloc sizes them). The journal, the prio buckets,
  the btree and the reserves the allocator keeps full are never data;
- **writeback** of dirty data in LBA order at the rate the PD controller sets every 5 s
  (proportional term 1/40 of the dirty data above ``writeback_percent``, integral term
  1/10000, at least 8 sectors/s), and at full speed from the 6th update without I/O.

Simplified, and said so: one open bucket takes all insertions (the kernel keeps one per task
and per sequential run); btree nodes are counted as full as 2/3 for the cache's whole capacity;
a bucket's live sectors are exact at once (the kernel learns them at its next garbage
collection, every 1/16 of the cache inserted); moving garbage collection and congestion
bypass (2 ms read / 20 ms write latency thresholds on the SSD) are not modelled; a trace does
not say which task issued a request, so each sequential run is taken as its own task and the
other requests as one more (a program alternating small files with large ones is not
recognised); block-aligned I/O is assumed (the bcache block is the device's sector).
"""

from __future__ import annotations

import math
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from advisor.workload.timeline import ReadHitRatio, columns

BLOCK = 4096  # the index's unit here: traces are 4 KiB-aligned
SECTOR = 512
BUCKET = 512 * 1024  # make-bcache's default bucket
INITIAL_PRIO = 32768
RECENT_IO = 64
SEQUENTIAL_EXPIRY_S = 5.0
SEQUENTIAL_CUTOFF = 4 << 20
CUTOFF_CACHE_ADD = 95
CUTOFF_WRITEBACK = 40
CUTOFF_WRITEBACK_SYNC = 70
MAX_INSERT_BLOCKS = (256 * 4096) // BLOCK  # BIO_MAX_VECS x PAGE_SECTORS sectors: 1 MiB
WRITEBACK_PERCENT = 10
WRITEBACK_UPDATE_S = 5.0
P_TERM_INVERSE = 40
I_TERM_INVERSE = 10000
RATE_MINIMUM_SECTORS = 8
IDLE_UPDATES = 6  # set_at_max_writeback_rate: the 6th rate update without I/O (one device)
KEY_BYTES = 24  # an extent's bkey with one pointer
BTREE_NODE_MAX = 256 * 1024  # BTREE_MAX_PAGES
BTREE_FILL = 2 / 3
TICK_S = 1.0  # the timeline's step

Mode = Literal["writethrough", "writeback", "writearound"]


@dataclass(frozen=True)
class Geometry:
    """How a cache device of ``nbuckets`` buckets is shared out (super.c cache_alloc,
    run_cache_set; journal.c)."""

    nbuckets: int
    bucket_blocks: int
    free: int  # RESERVE_NONE's and RESERVE_MOVINGGC's size: roundup_pow_of_two(nbuckets) >> 10
    free_inc: int  # the allocator's batch of invalidated buckets: free << 2
    journal: int  # clamp(nbuckets >> 7, 2, 256); RESERVE_BTREE is as large
    prio: int  # buckets one copy of the priorities takes; RESERVE_PRIO is as large
    btree: int
    data: int  # buckets that may hold data (the free list's included)

    @property
    def metadata(self) -> int:
        """The superblock's and the uuids' buckets, the journal, the priorities and the btree."""
        return 2 + self.journal + self.prio + self.btree


def geometry(cache_bytes: int, bucket_bytes: int = BUCKET) -> Geometry:
    nbuckets = cache_bytes // bucket_bytes
    free = (1 << max(nbuckets - 1, 0).bit_length()) >> 10
    if nbuckets < 2 or free == 0:
        raise ValueError(f"{nbuckets} buckets: the kernel refuses a cache of 512 buckets or fewer")
    journal = min(max(nbuckets >> 7, 2), 256)
    prio = math.ceil(nbuckets / ((bucket_bytes - 40) // 3))  # struct prio_set, 3-byte bucket_disk
    pages = bucket_bytes // 4096  # a btree node: the bucket, past BTREE_MAX_PAGES a quarter of it
    node = 4096 * (max(pages // 4, BTREE_NODE_MAX // 4096) if pages > BTREE_NODE_MAX // 4096 else pages)
    btree = math.ceil(nbuckets * (bucket_bytes // BLOCK) * KEY_BYTES / (node * BTREE_FILL)) + 1
    # the superblock's bucket, the uuids' bucket, the metadata, and the reserves kept full
    held = 1 + 1 + journal + prio + btree + (journal + prio + free)
    return Geometry(nbuckets, bucket_bytes // BLOCK, free, free << 2, journal, prio, btree, max(nbuckets - held, 1))


@dataclass
class Counters:
    """bcache's stats_total for the replay (per request, reads only), and what it did."""

    read_hits: int = 0  # cache_hits
    read_misses: int = 0  # cache_misses
    bypass_hits: int = 0  # cache_bypass_hits
    bypass_misses: int = 0  # cache_bypass_misses
    inserted_blocks: int = 0
    invalidated_buckets: int = 0  # buckets that held data when they were invalidated
    written_back_blocks: int = 0
    bypassed_writes: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


class Bcache:
    """One cached device: ``request`` for each I/O, in time order."""

    def __init__(
        self,
        cache_bytes: int,
        bucket_bytes: int = BUCKET,
        mode: Mode = "writethrough",
        sequential_cutoff: int = SEQUENTIAL_CUTOFF,
        writeback_percent: int = WRITEBACK_PERCENT,
        sync_writes: bool = True,
        start: float = 0.0,
    ) -> None:
        g = self.geometry = geometry(cache_bytes, bucket_bytes)
        self.mode = mode
        self.cutoff_sectors = sequential_cutoff // SECTOR
        self.sync_writes = sync_writes
        self.counters = Counters()
        n = g.data
        self.where: dict[int, int] = {}  # block -> bucket holding it
        self.members: list[list[int]] = [[] for _ in range(n)]
        self.live = np.zeros(n, np.int64)
        # the rescale count at a bucket's last allocation or hit (prio = INITIAL_PRIO less the
        # rescales since); a bucket never used has prio 0, as cache_alloc's zeroed buckets do
        self.touched = np.full(n, -INITIAL_PRIO, np.int64)
        self.dirty_in = np.zeros(n, np.int64)
        self.dirty: set[int] = set()
        self.dirty_buckets = 0
        self.queued = np.zeros(n, bool)  # on the free list or free_inc
        self.free: deque[int] = deque()
        self.open = -1
        self.fill = g.bucket_blocks
        self.rescales = 0
        self.min_prio: int | None = 0  # c->min_prio: 0 until the first rescale, None: none counted
        self.rescale_every = g.nbuckets * bucket_bytes // SECTOR // 1024
        self.rescale_left = self.rescale_every
        # check_should_bypass: the recent I/Os (run end sector -> [run bytes, expiry]), LRU first
        self.recent: OrderedDict[int, list[float]] = OrderedDict()
        self.tasks: dict[Any, list[int]] = {}  # task -> [sequential_io, sequential_io_avg]
        # writeback
        self.target_blocks = g.nbuckets * g.bucket_blocks * writeback_percent // 100
        self.integral = 0.0
        self.next_update = start + WRITEBACK_UPDATE_S
        self.cursor = 0
        self.idle_updates = 0
        self.timeline: list[tuple[float, int, int]] = []
        self.next_tick = start + TICK_S

    # --- bookkeeping -------------------------------------------------------------------
    @property
    def in_use(self) -> int:
        """gc_stats.in_use: the share of buckets holding metadata or dirty data, in percent (free
        and clean buckets are avail_nbuckets)."""
        g = self.geometry
        return (g.metadata + self.dirty_buckets) * 100 // g.nbuckets

    @property
    def resident_blocks(self) -> int:
        return len(self.where)

    def _rescale(self, sectors: int) -> None:
        """bch_rescale_priorities: every bucket's prio drops by one; min_prio is the lowest of
        those that are not pinned (queued or open) and above 0."""
        self.rescale_left -= sectors
        if self.rescale_left < 0:
            self.rescales += 1
            self.rescale_left += self.rescale_every
            prio = INITIAL_PRIO - (self.rescales - self.touched)
            counted = (prio >= 0) & ~self.queued  # above 0 before this rescale's decrement
            if self.open >= 0:
                counted[self.open] = False
            self.min_prio = int(prio[counted].min()) if counted.any() else None

    def _drop(self, block: int) -> None:
        b = self.where.pop(block)
        self.live[b] -= 1
        if block in self.dirty:
            self._clean(block, b)

    def _clean(self, block: int, b: int) -> None:
        self.dirty.discard(block)
        self.dirty_in[b] -= 1
        if not self.dirty_in[b]:
            self.dirty_buckets -= 1

    def _invalidate(self) -> None:
        """invalidate_buckets_lru: the free_inc buckets of lowest bucket_prio, their data gone."""
        g = self.geometry
        prio = np.maximum(INITIAL_PRIO - (self.rescales - self.touched), 0)
        if self.min_prio is None:  # USHRT_MAX: unsigned arithmetic makes every used bucket heavy
            weight = (prio + INITIAL_PRIO) * self.live
        else:
            weight = (prio - self.min_prio + (INITIAL_PRIO - self.min_prio) // 8) * self.live
        ok = ~self.queued & (self.dirty_in == 0)
        if self.open >= 0:
            ok[self.open] = False
        candidates = np.flatnonzero(ok)
        if not len(candidates):
            return
        take = candidates[np.lexsort((candidates, weight[candidates]))[: g.free_inc]]
        where = self.where
        for b in take.tolist():
            for block in self.members[b]:
                if where.get(block) == b:
                    del where[block]
            if self.live[b]:
                self.counters.invalidated_buckets += 1
            self.members[b] = []
            self.live[b] = 0
            self.touched[b] = self.rescales
            self.queued[b] = True
            self.free.append(b)

    def _open_next(self) -> bool:
        if len(self.free) <= self.geometry.free:  # free_inc is empty: the allocator refills it
            self._invalidate()
        if not self.free:
            return False
        b = self.free.popleft()
        self.queued[b] = False
        self.touched[b] = self.rescales  # bch_bucket_alloc: prio = INITIAL_PRIO
        self.open, self.fill = b, 0
        return True

    def _insert(self, block: int, dirty: bool) -> None:
        if block in self.where:
            self._drop(block)
        if self.fill >= self.geometry.bucket_blocks and not self._open_next():
            return  # every bucket dirty: the write waits in the kernel; here it is not cached
        b = self.open
        self.where[block] = b
        self.members[b].append(block)
        self.live[b] += 1
        self.fill += 1
        self.counters.inserted_blocks += 1
        if dirty:
            self.dirty.add(block)
            if not self.dirty_in[b]:
                self.dirty_buckets += 1
            self.dirty_in[b] += 1

    # --- the sequential detection --------------------------------------------------------
    def _sequential(self, now: float, sector: int, sectors: int, task: Any) -> int:
        """The sectors check_should_bypass compares with the cutoff for this I/O."""
        recent = self.recent
        run = recent.get(sector)
        found = run is not None and now < run[1]
        if found:
            assert run is not None
            del recent[sector]
        else:
            if len(recent) >= RECENT_IO:
                recent.popitem(last=False)
            run = [0.0, 0.0]
        run[0] += sectors
        run[1] = now + SEQUENTIAL_EXPIRY_S
        recent.pop(sector + sectors, None)  # list_move_tail: the entry is the most recent
        recent[sector + sectors] = run
        if task is None:  # each run its own task, the other requests one more
            if found:
                return int(run[0])
            task = "other"
        state = self.tasks.setdefault(task, [0, 0])
        if not found:  # add_sequential: ewma_add(avg, sequential_io, 8, 0)
            state[1] = (state[1] * 7 + state[0]) // 8
        state[0] = int(run[0])
        return max(state[0], state[1])

    def _bypass(self, now: float, sector: int, sectors: int, write: bool, task: Any) -> bool:
        if self.in_use > CUTOFF_CACHE_ADD:
            return True
        if write and self.mode == "writearound":
            return True
        if self.cutoff_sectors and self._sequential(now, sector, sectors, task) >= self.cutoff_sectors:
            return True
        self._rescale(sectors)
        return False

    # --- time ----------------------------------------------------------------------------
    def advance(self, now: float) -> None:
        """Run the writeback and the timeline up to ``now``."""
        while self.next_update <= now:
            self._update_writeback()
            self.next_update += WRITEBACK_UPDATE_S
        if now >= self.next_tick:
            c = self.counters
            if not self.timeline or self.timeline[-1][1:] != (c.read_hits, c.read_misses):
                self.timeline.append((now, c.read_hits, c.read_misses))
            self.next_tick = math.floor(now / TICK_S) * TICK_S + TICK_S

    def _update_writeback(self) -> None:
        if not self.dirty:
            self.idle_updates += 1
            self.integral = 0.0
            return
        self.idle_updates += 1
        if self.idle_updates >= IDLE_UPDATES:  # set_at_max_writeback_rate
            self._write_back(len(self.dirty))
            return
        error = (len(self.dirty) - self.target_blocks) * (BLOCK // SECTOR)
        if error > 0 or self.integral > 0:
            self.integral += error * WRITEBACK_UPDATE_S
        rate = max(error / P_TERM_INVERSE + self.integral / I_TERM_INVERSE, RATE_MINIMUM_SECTORS)
        self._write_back(int(rate * WRITEBACK_UPDATE_S * SECTOR // BLOCK))

    def _write_back(self, blocks: int) -> None:
        """Clean ``blocks`` dirty blocks in LBA order from where the last writeback stopped."""
        if blocks <= 0 or not self.dirty:
            return
        ordered = sorted(self.dirty)
        at = int(np.searchsorted(ordered, self.cursor))
        chosen = (ordered[at:] + ordered[:at])[:blocks]
        for block in chosen:
            self._clean(block, self.where[block])
        self.counters.written_back_blocks += len(chosen)
        self.cursor = chosen[-1] + 1

    # --- I/O -----------------------------------------------------------------------------
    def request(self, now: float, offset: int, length: int, write: bool, task: Any = None) -> None:
        self.advance(now)
        self.idle_updates = 0  # any I/O resets c->idle_counter
        first, last = offset // BLOCK, (offset + max(length, 1) - 1) // BLOCK
        sector, sectors = offset // SECTOR, max(length // SECTOR, 1)
        bypass = self._bypass(now, sector, sectors, write, task)
        c = self.counters
        if write:
            in_use = self.in_use  # should_writeback: never for a write that would be bypassed
            dirty = (
                not bypass
                and self.mode == "writeback"
                and (in_use <= CUTOFF_WRITEBACK or (self.sync_writes and in_use <= CUTOFF_WRITEBACK_SYNC))
            )
            if bypass:
                c.bypassed_writes += 1
                for block in range(first, last + 1):
                    if block in self.where:
                        self._drop(block)
                return
            for block in range(first, last + 1):
                self._insert(block, dirty)
            return
        where, touched, rescales = self.where, self.touched, self.rescales
        missed, fill = False, list[int]()
        block = first
        while block <= last:
            b = where.get(block)
            if b is not None:
                touched[b] = rescales
                block += 1
                continue
            if not missed and not bypass:  # the first missing run, at most 1 MiB, is read in
                while block <= last and len(fill) < MAX_INSERT_BLOCKS and block not in where:
                    fill.append(block)
                    block += 1
            else:
                block += 1
            missed = True
        if bypass:
            if missed:
                c.bypass_misses += 1
            else:
                c.bypass_hits += 1
        elif missed:
            c.read_misses += 1
        else:
            c.read_hits += 1
        for block in fill:
            self._insert(block, False)


@dataclass
class Replay(ReadHitRatio):
    """What the kernel's counters would show after the trace, and each second."""

    counters: Counters
    resident_blocks: int
    dirty_blocks: int
    geometry: Geometry
    times: npt.NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))
    read_hits: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, np.int64))
    read_misses: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, np.int64))


def replay(
    requests: Any,
    cache_bytes: int,
    bucket_bytes: int = BUCKET,
    mode: Mode = "writethrough",
    sequential_cutoff: int = SEQUENTIAL_CUTOFF,
    tasks: npt.ArrayLike | None = None,
    passes: int = 1,
) -> Replay:
    """The trace's requests (traces.REQUEST) through a bcache of ``cache_bytes`` in buckets of
    ``bucket_bytes``, started empty; ``tasks``: who issued each request, when known;
    ``passes``: the trace fed this many times, each just after the one before."""
    t = requests["t"].astype(np.float64)
    start = float(t[0]) if len(t) else 0.0
    span = float(t[-1]) - start + TICK_S if len(t) else 0.0
    cache = Bcache(cache_bytes, bucket_bytes, mode, sequential_cutoff, start=start)
    who = np.asarray(tasks).tolist() if tasks is not None else [None] * len(t)
    fields = (requests["offset"].tolist(), requests["length"].tolist(), requests["write"].astype(bool).tolist(), who)
    request = cache.request
    for k in range(passes):
        for now, offset, length, write, task in zip((t + k * span).tolist(), *fields, strict=True):
            request(now, offset, length, write, task)
    if len(t):
        cache.advance(start + passes * span)
    return Replay(
        cache.counters,
        cache.resident_blocks,
        len(cache.dirty),
        cache.geometry,
        *columns(cache.timeline),
    )
