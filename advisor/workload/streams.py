"""Sequential streams in a trace, found the way bcache finds them.

A request continues a stream when it starts where one of the recently seen requests ended,
not only where the previous request ended: four interleaved sequential readers are 100%
sequential, not 0%. The detector follows bcache's ``check_should_bypass`` (drivers/md/bcache/
request.c): it remembers the end of the last 64 streams (``RECENT_IO``), forgets one 5 s after
its last request, keeps each stream's running byte count, and a request whose stream has
reached ``sequential_cutoff`` (4 MiB by default) bypasses the cache. Per-task averages and
congestion bypass are not modelled: a trace carries no task.

dm-cache's smq has no cutoff, but it promotes only blocks it sees again (R-WARM-1: reads done
once are never promoted), so a single pass of a long stream, such as a nightly backup, does
not displace its hot data either. Both backends' curves are therefore computed over the I/O
that is not bypassed, and the bypassed share is reported apart (docs/workload.md).
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from advisor.units import BCACHE_SEQUENTIAL_CUTOFF
from advisor.workload.jit import compile_loop
from advisor.workload.traces import Requests

RECENT = 64  # bcache's RECENT_IO
EXPIRE_S = 5.0  # bcache forgets a stream 5 s after its last request
SEQUENTIAL_CUTOFF = BCACHE_SEQUENTIAL_CUTOFF
INTERPRETED_LIMIT = 200_000  # requests in all; till then slices are scanned in Python (0.1 s), not compiled


SLOTS = 256  # the compiled scan's hash table of stream ends (a quarter full at most)


def _scan(
    t: npt.NDArray[np.float64],
    offset: npt.NDArray[np.int64],
    length: npt.NDArray[np.int64],
    ends: npt.NDArray[np.int64],
    seq: npt.NDArray[np.int64],
    seen: npt.NDArray[np.float64],
    links: npt.NDArray[np.int64],
    table: npt.NDArray[np.int64],
    cutoff: int,
    expire: float,
    out: npt.NDArray[np.int8],
) -> None:  # pragma: no cover - compiled
    """For each request: out 0 (starts a stream), 1 (continues one), 2 (continues one that has
    reached the cutoff: bypassed).

    State, carried from one call to the next: RECENT entries, each a stream's end (-1: free),
    bytes so far and last time; ``links`` holds their least-recently-used order as a doubly
    linked list (prev at [e], next at [RECENT + e], head and tail at the end); ``table`` maps a
    stream's end to its entry by open addressing (key at [2i], entry at [2i + 1], key -1:
    empty), so a request costs a few probes, not a pass over all entries. _scan_interpreted is
    the same algorithm with Python's dict and OrderedDict."""
    n = offset.shape[0]
    count = ends.shape[0]
    slots = table.shape[0] // 2
    mask = slots - 1
    head_at = 2 * count
    keys = np.empty(2, np.int64)
    hits = np.empty(2, np.int64)
    for r in range(n):
        start = offset[r]
        end = start + length[r]
        now = t[r]
        keys[0] = start
        keys[1] = end
        for k in range(2):  # the entries ending at this request's start and at its end
            x = keys[k] >> 9
            x ^= x >> 17
            x *= -7046029254386353131
            i = (x >> 40) & mask
            hits[k] = -1
            while table[2 * i] != -1:
                if table[2 * i] == keys[k]:
                    hits[k] = table[2 * i + 1]
                    break
                i = (i + 1) & mask
        found = hits[0]
        dup = hits[1]
        removed = 0  # keys leaving the table: at most two
        if found >= 0 and now < seen[found] + expire:
            entry = found
            keys[0] = start
            removed = 1
            total = seq[entry] + length[r]
            kind = 1
        else:
            entry = links[head_at]  # the least recently used entry (free ones come first)
            if ends[entry] != -1:
                keys[0] = ends[entry]
                removed = 1
            total = length[r]
            kind = 0
        if dup >= 0 and dup != entry:
            keys[removed] = end
            removed += 1
            ends[dup] = -1
            # A freed entry goes to the head of the list, to be reused first.
            if links[head_at] != dup:
                p, q = links[dup], links[count + dup]
                links[count + p] = q
                if q >= 0:
                    links[q] = p
                else:
                    links[head_at + 1] = p
                links[dup] = -1
                links[count + dup] = links[head_at]
                links[links[head_at]] = dup
                links[head_at] = dup
        for k in range(removed):  # deletion with backward shift keeps every probe chain whole
            x = keys[k] >> 9
            x ^= x >> 17
            x *= -7046029254386353131
            i = (x >> 40) & mask
            while table[2 * i] != keys[k]:
                i = (i + 1) & mask
            j = i
            while True:
                j = (j + 1) & mask
                if table[2 * j] == -1:
                    break
                x = table[2 * j] >> 9
                x ^= x >> 17
                x *= -7046029254386353131
                home = (x >> 40) & mask
                if (i <= j and (home <= i or home > j)) or (i > j and home <= i and home > j):
                    table[2 * i] = table[2 * j]
                    table[2 * i + 1] = table[2 * j + 1]
                    i = j
            table[2 * i] = -1
        x = end >> 9
        x ^= x >> 17
        x *= -7046029254386353131
        i = (x >> 40) & mask
        while table[2 * i] != -1:
            i = (i + 1) & mask
        table[2 * i] = end
        table[2 * i + 1] = entry
        ends[entry] = end
        seq[entry] = total
        seen[entry] = now
        if links[head_at + 1] != entry:  # to the tail: the most recently used
            p, q = links[entry], links[count + entry]
            if p >= 0:
                links[count + p] = q
            else:
                links[head_at] = q
            links[q] = p
            tail = links[head_at + 1]
            links[count + tail] = entry
            links[entry] = tail
            links[count + entry] = -1
            links[head_at + 1] = entry
        out[r] = 2 if cutoff > 0 and total >= cutoff else kind


def _scan_interpreted(
    t: list[float],
    offset: list[int],
    length: list[int],
    recent: OrderedDict[int, tuple[int, float]],
    cutoff: int,
    expire: float,
) -> list[int]:
    """_scan for short traces, in plain Python (a dict, not 64 comparisons per request):
    ``recent`` maps each stream's end to (bytes so far, last time), least recently used first."""
    out = []
    for now, start, size in zip(t, offset, length, strict=True):
        end = start + size
        hit = recent.get(start)
        if hit is not None and now < hit[1] + expire:
            del recent[start]
            total, kind = hit[0] + size, 1
        else:
            if len(recent) >= RECENT:
                recent.popitem(last=False)
            total, kind = size, 0
        recent.pop(end, None)
        recent[end] = (total, now)
        out.append(2 if cutoff > 0 and total >= cutoff else kind)
    return out


def _slot(key: int) -> int:
    """The compiled scan's home slot for a stream end (its hash, in Python's integers)."""
    x = key >> 9
    x ^= x >> 17
    x = (x * -7046029254386353131) & ((1 << 64) - 1)
    x = x - (1 << 64) if x >= 1 << 63 else x
    return (x >> 40) & (SLOTS - 1)


def _insert(table: npt.NDArray[np.int64], key: int, entry: int) -> None:
    i = _slot(key)
    while table[2 * i] != -1:
        i = (i + 1) & (SLOTS - 1)
    table[2 * i], table[2 * i + 1] = key, entry


@functools.cache
def _compiled() -> Callable[..., None]:
    def warm(f: Callable[..., None]) -> None:
        f(
            np.zeros(1),
            np.zeros(1, np.int64),
            np.ones(1, np.int64),
            *_State().scan_args(),
            1,
            EXPIRE_S,
            np.zeros(1, np.int8),
        )

    compiled: Callable[..., None] = compile_loop(
        _scan,
        "void(float64[:], int64[:], int64[:], int64[:], int64[:], float64[:], int64[:], int64[:], int64, "
        "float64, int8[:])",
        warm,
    )
    return compiled


def load() -> None:
    """Compile or load the scan now: in the main thread, before another runs it."""
    _compiled()


def _links() -> npt.NDArray[np.int64]:
    """Entries 0 .. RECENT-1 in a row: prev, next, then head and tail."""
    prev = np.arange(-1, RECENT - 1, dtype=np.int64)
    nxt = np.arange(1, RECENT + 1, dtype=np.int64)
    nxt[-1] = -1
    return np.concatenate([prev, nxt, np.array([0, RECENT - 1], np.int64)])


@dataclass
class _State:
    ends: npt.NDArray[np.int64] = field(default_factory=lambda: np.full(RECENT, -1, np.int64))
    seq: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros(RECENT, np.int64))
    seen: npt.NDArray[np.float64] = field(default_factory=lambda: np.full(RECENT, -np.inf))
    links: npt.NDArray[np.int64] = field(default_factory=_links)
    table: npt.NDArray[np.int64] = field(default_factory=lambda: np.full(2 * SLOTS, -1, np.int64))

    def scan_args(
        self,
    ) -> tuple[
        npt.NDArray[np.int64],
        npt.NDArray[np.int64],
        npt.NDArray[np.float64],
        npt.NDArray[np.int64],
        npt.NDArray[np.int64],
    ]:
        return self.ends, self.seq, self.seen, self.links, self.table


class StreamDetector:
    """Feed requests in time order, a slice at a time; each slice gives each request's class."""

    START, CONTINUES, BYPASSED = 0, 1, 2

    def __init__(self, cutoff: int = SEQUENTIAL_CUTOFF) -> None:
        if cutoff < 0:
            raise ValueError(f"the sequential cutoff must be 0 (off) or more bytes, not {cutoff}")
        self.cutoff = cutoff
        self._state = _State()
        self._recent: OrderedDict[int, tuple[int, float]] | None = OrderedDict()  # while interpreted
        # requests classified so far: past INTERPRETED_LIMIT in all, slices are scanned compiled
        # (a capture's stream of small slices would otherwise be interpreted for ever)
        self._fed = 0
        # The compiled scan's columns, kept from one slice to the next: fresh memory for each
        # of a long trace's slices cost more than the copies into them.
        self._columns: tuple[npt.NDArray[np.float64], npt.NDArray[np.int64], npt.NDArray[np.int64]] | None = None

    def classify(self, req: Requests) -> npt.NDArray[np.int8]:
        out = np.zeros(len(req), np.int8)
        if not len(req):
            return out
        self._fed += len(req)
        if self._recent is not None and self._fed <= INTERPRETED_LIMIT:
            t = req["t"].astype(np.float64)  # a trace without times has 0 throughout: nothing expires
            offset = req["offset"].astype(np.int64)
            length = np.maximum(req["length"], 1).astype(np.int64)
            out[:] = _scan_interpreted(
                t.tolist(), offset.tolist(), length.tolist(), self._recent, self.cutoff, EXPIRE_S
            )
            return out
        if self._columns is None or len(self._columns[0]) < len(req):
            self._columns = (np.empty(len(req)), np.empty(len(req), np.int64), np.empty(len(req), np.int64))
        times, starts, sizes = (
            self._columns[0][: len(req)],
            self._columns[1][: len(req)],
            self._columns[2][: len(req)],
        )
        np.copyto(times, req["t"], casting="unsafe")
        np.copyto(starts, req["offset"], casting="unsafe")
        np.maximum(req["length"], 1, out=sizes)
        _compiled()(times, starts, sizes, *self._arrays().scan_args(), self.cutoff, EXPIRE_S, out)
        return out

    def fed(self) -> None:
        """No more slices for a while: the columns kept from one to the next go."""
        self._columns = None

    def _arrays(self) -> _State:
        """The state as arrays for the compiled scan (once a slice is too long to interpret;
        from then on every slice is scanned compiled)."""
        if self._recent is not None:
            s = self._state
            # Free entries first, then the streams from least to most recently used: entry i
            # is i-th in the list as _links() makes it.
            first = RECENT - len(self._recent)
            for i, (end, (total, when)) in enumerate(self._recent.items(), start=first):
                s.ends[i], s.seq[i], s.seen[i] = end, total, when
                _insert(s.table, end, i)
            self._recent = None
        return self._state
