"""Exact LRU curves of a long trace in a few compiled passes over its requests, no sort.

- The requests' blocks are numbered by first touch with a hash table (_relabel), read straight
  from the request records, bypassed requests skipped: no array of block numbers, no argsort.
- Each access is classed by the first curve size it hits in (mrc.size_classes' class) with
  markers at the curve's sizes, and the classes are counted by hundredth of the trace as they
  come (_marker_curve): the LRU stack is a linked list cut into buckets at the sizes, and an
  access at depth d in bucket j moves the last block of each bucket above it down one, so it
  costs j steps, few under skew. The curve, the steady curve and their read curves all come
  from those counts (mrc.curve_from_histograms).
- A trace with little reuse (more than MARKER_STEPS steps an access on average) is classed
  from its stack distances instead, by a Fenwick tree over the accesses' last positions,
  renumbered when full so that it stays about twice the footprint (_fenwick_classes), and its
  classes counted by one more pass (_histograms).

Measured on bench/bench_analyze.py's 10 million 4 KiB Zipf requests (450 thousand blocks, 150
thousand chunks) on this 2-core machine, quiet: the two block sizes side by side in 0.79 s (at
4 KiB 0.35 s numbering the blocks and 0.39 s classing and counting, 8 marker steps an access; at
64 KiB 0.21 s and 0.34 s, 10 steps), where the block arrays, mrc's relabelling by sort, its stack
distances and curve passes took 5.6 s one after the other. A trace whose footprint is most of
its accesses pays for the hash table's misses instead: 1.5 million accesses to 1.2 million
blocks took 0.4 s against 0.3 s.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from advisor.workload import mrc
from advisor.workload.jit import compile_loop
from advisor.workload.traces import Requests

# Average marker steps an access past which a trace is classed by the Fenwick tree: a step costs
# about 3 ns, a Fenwick access 40 to 90 ns.
MARKER_STEPS = 24
CHECK_EVERY = 1 << 16  # accesses between the marker pass's looks at its cost
# Fibonacci hashing: a block's slot is the top bits of its product with this, unsigned (the top
# bits of a signed shift would copy the sign: a table of any size had only 2^24 home slots).
HASH = np.uint64(0x9E3779B97F4A7C15)


def _count(
    offset: npt.NDArray[np.uint64],
    length: npt.NDArray[np.uint32],
    keep: npt.NDArray[np.uint8],
    shift: int,
    out: npt.NDArray[np.int64],
) -> None:  # pragma: no cover - compiled
    """out = [requests kept, block accesses, requests spanning more than one block]; ``keep``
    empty keeps every request."""
    kept = accesses = spanning = 0
    every = keep.shape[0] == 0
    for i in range(offset.shape[0]):
        if every or keep[i]:
            first = np.int64(offset[i]) >> shift
            last = (np.int64(offset[i]) + max(int(length[i]), 1) - 1) >> shift
            kept += 1
            accesses += int(last - first) + 1
            if last != first:
                spanning += 1
    out[0] = kept
    out[1] = accesses
    out[2] = spanning


# The numbering's state between calls (_number): blocks numbered, requests kept, block accesses,
# requests spanning more than one block, and (looking up only) blocks not found.
DISTINCT, REQUESTS, ACCESSES, SPANNING, MISSING = range(5)
# The marker pass's state between calls (_marker_curve): the stack's top and bottom blocks, its
# depth, the steps taken and accesses seen so far; and the counting's (_histograms' too): the unit
# being counted, its slice, the blocks first touched, the sizes filled.
HEAD, BOTTOM, DEPTH, STEPS, SEEN, UNIT, SLICE, TOUCHED, FILLED = range(9)


def _number(
    offset: npt.NDArray[np.uint64],
    length: npt.NDArray[np.uint32],
    keep: npt.NDArray[np.uint8],
    shift: int,
    table: npt.NDArray[np.int64],
    state: npt.NDArray[np.int64],
    load: int,
    dense: npt.NDArray[np.int32],
    per: npt.NDArray[np.int32],
) -> npt.NDArray[np.int64]:  # pragma: no cover - compiled
    """Number the blocks of the kept requests 0, 1, ... in the order they are first touched,
    across calls: ``table`` holds (block, number) pairs by open addressing, at most ``load``
    quarters full, and is returned (a new one, twice the room, when it grew); ``state`` the
    counts (DISTINCT ...). ``dense`` (when not empty) gets each access's number, ``per`` (when
    not empty) each kept request's block count. ``load`` 0 looks up only: a block not in the
    table gets -1 and is counted in state[MISSING]."""
    every = keep.shape[0] == 0
    cap = table.shape[0] // 2
    mask = cap - 1
    bits = 0
    while (1 << bits) < cap:
        bits += 1
    distinct = state[DISTINCT]
    at = 0
    r = 0
    for i in range(offset.shape[0]):
        if not (every or keep[i]):
            continue
        first = np.int64(offset[i]) >> shift
        last = (np.int64(offset[i]) + max(int(length[i]), 1) - 1) >> shift
        if per.shape[0]:
            per[r] = last - first + 1
        r += 1
        state[ACCESSES] += last - first + 1
        if last != first:
            state[SPANNING] += 1
        for b in range(first, last + 1):
            h = np.int64((np.uint64(b) * HASH) >> np.uint64(64 - bits)) if bits else 0
            while True:
                k = table[2 * h]
                if k == b:
                    v = table[2 * h + 1]
                    break
                if k == -1 and load == 0:
                    v = -1
                    state[MISSING] += 1
                    break
                if k == -1:
                    v = distinct
                    table[2 * h] = b
                    table[2 * h + 1] = v
                    distinct += 1
                    if 4 * distinct > load * cap:  # rehash into twice the room
                        old = table
                        cap *= 2
                        mask = cap - 1
                        bits += 1
                        table = np.full(2 * cap, -1, np.int64)
                        for j in range(old.shape[0] // 2):
                            key = old[2 * j]
                            if key != -1:
                                g = np.int64((np.uint64(key) * HASH) >> np.uint64(64 - bits))
                                while table[2 * g] != -1:
                                    g = (g + 1) & mask
                                table[2 * g] = key
                                table[2 * g + 1] = old[2 * j + 1]
                    break
                h = (h + 1) & mask
            if dense.shape[0]:
                dense[at] = v
            at += 1
    state[DISTINCT] = distinct
    state[REQUESTS] += r
    return table


def _marker_curve(
    dense: npt.NDArray[np.int32],
    sizes: npt.NDArray[np.int64],
    budget: int,
    per: npt.NDArray[np.int32],
    reads: npt.NDArray[np.uint8],
    by_request: bool,
    edges: npt.NDArray[np.int64],
    hist: npt.NDArray[np.int64],
    read_hist: npt.NDArray[np.int64],
    fill_at: npt.NDArray[np.int64],
    node: npt.NDArray[np.int32],
    tail: npt.NDArray[np.int32],
    state: npt.NDArray[np.int64],
) -> bool:  # pragma: no cover - compiled
    """Class each access and count the classes as _histograms does, in one pass, and each
    block's accesses (``node``'s last column), across calls that each end at a request's end.
    An access's class is the index of the first size it hits in (a block at depth d of the LRU
    stack hits in caches of more than d blocks), len(sizes) when it hits in none, len(sizes) +
    1 for a first touch. Bucket j holds depths sizes[j-1] .. sizes[j]-1; ``tail[j]`` is its
    deepest block once the stack reaches it. A block's links, bucket and count are one row of
    ``node`` (towards the top, towards the bottom, bucket or -1, count): a step down a bucket
    reads one cache line, not two. False (the counts unfinished) when the steps pass
    ``budget`` an access on average."""
    nsizes = sizes.shape[0]
    cold = nsizes + 1
    n = dense.shape[0]
    head, bottom, depth, steps, seen = state[HEAD], state[BOTTOM], state[DEPTH], state[STEPS], state[SEEN]
    unit, slice_, touched, filled = state[UNIT], state[SLICE], state[TOUCHED], state[FILLED]
    # The unit being counted (a request, or an access): its request r, the accesses of r still
    # to come, and with by_request its class so far and first touches.
    r = 0
    left = per[0] if per.shape[0] else 1
    c = new = 0
    for i in range(n):
        if (seen + i) % CHECK_EVERY == 0 and seen + i >= 4 * CHECK_EVERY and steps > budget * (seen + i):
            return False
        b = dense[i]
        j = node[b, 2]
        node[b, 3] += 1
        x = j
        if j < 0:  # a first touch: every full bucket passes its deepest block down
            j = 0
            while j < nsizes and sizes[j] <= depth:
                j += 1
            x = cold
        if b != head:
            steps += j
            for k in range(j):
                t = tail[k]
                node[t, 2] = k + 1
                tail[k] = node[t, 0] if sizes[k] > 1 else b
            if node[b, 2] < 0:
                depth += 1
                if bottom < 0:
                    bottom = b
                if j < nsizes and sizes[j] == depth:
                    tail[j] = bottom
            else:
                p = node[b, 0]
                if j < nsizes and tail[j] == b:
                    tail[j] = p
                q = node[b, 1]
                node[p, 1] = q
                if q >= 0:
                    node[q, 0] = p
                else:
                    bottom = p
            node[b, 0] = -1
            node[b, 1] = head
            if head >= 0:
                node[head, 0] = b
            head = b
            node[b, 2] = 0
        if x > c:
            c = x
        if x == cold:
            new += 1
        left -= 1
        if by_request and left:
            continue
        read = reads[r]
        if not left:
            r += 1
            left = per[r] if per.shape[0] and r < per.shape[0] else 1
        while unit >= edges[slice_ + 1]:
            slice_ += 1
        hist[slice_, c] += 1
        if read:
            read_hist[slice_, c] += 1
        if new:
            touched += new
            while filled < nsizes and sizes[filled] <= touched:
                fill_at[filled] = unit
                filled += 1
        unit += 1
        c = new = 0
    state[HEAD], state[BOTTOM], state[DEPTH], state[STEPS], state[SEEN] = head, bottom, depth, steps, seen + n
    state[UNIT], state[SLICE], state[TOUCHED], state[FILLED] = unit, slice_, touched, filled
    return True


def _fenwick_classes(
    dense: npt.NDArray[np.int32],
    sizes: npt.NDArray[np.int64],
    out: npt.NDArray[np.int16],
    last: npt.NDArray[np.int32],
    owner: npt.NDArray[np.int32],
    tree: npt.NDArray[np.int32],
    counts: npt.NDArray[np.int64],
    state: npt.NDArray[np.int64],
) -> None:  # pragma: no cover - compiled
    """_marker_curve's classes from each access's stack distance, across calls: the blocks
    whose last access lies between this block's last access and now, counted by a Fenwick
    tree (``tree``) over positions (``owner``: whose last access each is; ``last``: each
    block's, -1 before its first). The positions are renumbered 0 .. live-1 in order whenever
    they run out, so the tree need be only about twice the footprint, not the trace. ``counts``
    gets each block's accesses; ``state``: [blocks seen, next position]."""
    nsizes = sizes.shape[0]
    room = owner.shape[0]
    live, pos = state[0], state[1]
    for t in range(dense.shape[0]):
        if pos == room:
            kept = 0
            for q in range(room):
                o = owner[q]
                if o >= 0:
                    owner[q] = -1
                    owner[kept] = o
                    last[o] = kept
                    kept += 1
            tree[:] = 0
            for q in range(1, room + 1):  # a tree of ones at 1 .. kept, built in place
                if q <= kept:
                    tree[q] += 1
                up = q + (q & -q)
                if up <= room:
                    tree[up] += tree[q]
            pos = kept
        b = dense[t]
        counts[b] += 1
        p = last[b]
        if p < 0:
            out[t] = nsizes + 1
            live += 1
        else:
            s = 0
            i = p + 1
            while i > 0:
                s += tree[i]
                i -= i & -i
            out[t] = np.searchsorted(sizes, live - s, side="right")  # live - s: marks after p
            i = p + 1
            while i <= room:
                tree[i] -= 1
                i += i & -i
            owner[p] = -1
        i = pos + 1
        while i <= room:
            tree[i] += 1
            i += i & -i
        owner[pos] = b
        last[b] = pos
        pos += 1
    state[0], state[1] = live, pos


def _histograms(
    classes: npt.NDArray[np.int16],
    per: npt.NDArray[np.int32],
    reads: npt.NDArray[np.uint8],
    by_request: bool,
    sizes: npt.NDArray[np.int64],
    edges: npt.NDArray[np.int64],
    hist: npt.NDArray[np.int64],
    read_hist: npt.NDArray[np.int64],
    fill_at: npt.NDArray[np.int64],
    state: npt.NDArray[np.int64],
) -> None:  # pragma: no cover - compiled
    """Count the units' classes by slice of the units (edges), across calls that each end at a
    request's end (``state`` as _marker_curve's): a unit is a request (``by_request``: its
    class the largest of its blocks', a first touch when any is) or an access (of its
    request's kind). ``read_hist`` counts the reads alone; ``fill_at[j]`` is the unit during
    which the sizes[j]-th distinct block is first touched (-1: never)."""
    nsizes = sizes.shape[0]
    cold = nsizes + 1
    unit, slice_, touched, j = state[UNIT], state[SLICE], state[TOUCHED], state[FILLED]
    a = 0
    for r in range(reads.shape[0]):
        m = per[r] if per.shape[0] else 1
        read = reads[r]
        for _ in range(1 if by_request else m):
            c = new = 0
            for _ in range(m if by_request else 1):
                x = classes[a]
                a += 1
                if x == cold:
                    new += 1
                if x > c:
                    c = x
            while unit >= edges[slice_ + 1]:
                slice_ += 1
            hist[slice_, c] += 1
            if read:
                read_hist[slice_, c] += 1
            if new:
                touched += new
                while j < nsizes and sizes[j] <= touched:
                    fill_at[j] = unit
                    j += 1
            unit += 1
    state[UNIT], state[SLICE], state[TOUCHED], state[FILLED] = unit, slice_, touched, j


def _tally(dense: npt.NDArray[np.int32], counts: npt.NDArray[np.int64]) -> None:  # pragma: no cover - compiled
    for i in range(dense.shape[0]):
        counts[dense[i]] += 1


RECORDS = "uint64[:], uint32[:], uint8[:], int64"


@functools.cache
def _tally_compiled() -> Any:
    return compile_loop(_tally, "void(int32[:], int64[:])", lambda f: f(np.zeros(1, np.int32), np.zeros(1, np.int64)))


@functools.cache
def _count_compiled() -> Any:
    return compile_loop(
        _count,
        f"void({RECORDS}, int64[:])",
        lambda f: f(np.zeros(1, np.uint64), np.ones(1, np.uint32), np.zeros(0, np.uint8), 12, np.zeros(3, np.int64)),
    )


@functools.cache
def _number_compiled() -> Any:
    return compile_loop(
        _number,
        f"int64[:]({RECORDS}, int64[:], int64[:], int64, int32[:], int32[:])",
        lambda f: f(
            np.zeros(1, np.uint64),
            np.ones(1, np.uint32),
            np.zeros(0, np.uint8),
            12,
            np.full(4, -1, np.int64),
            np.zeros(5, np.int64),
            2,
            np.zeros(1, np.int32),
            np.zeros(0, np.int32),
        ),
    )


@functools.cache
def _markers_compiled() -> Any:
    return compile_loop(
        _marker_curve,
        "boolean(int32[:], int64[:], int64, int32[:], uint8[:], boolean, int64[:], int64[:, :], int64[:, :], "
        "int64[:], int32[:, :], int32[:], int64[:])",
        lambda f: f(
            np.zeros(1, np.int32),
            np.ones(1, np.int64),
            MARKER_STEPS,
            np.zeros(0, np.int32),
            np.ones(1, np.uint8),
            True,
            np.array([0, 1], np.int64),
            np.zeros((1, 3), np.int64),
            np.zeros((1, 3), np.int64),
            np.full(1, -1, np.int64),
            _nodes(1),
            np.full(1, -1, np.int32),
            _marker_state(),
        ),
    )


@functools.cache
def _fenwick_compiled() -> Any:
    return compile_loop(
        _fenwick_classes,
        "void(int32[:], int64[:], int16[:], int32[:], int32[:], int32[:], int64[:], int64[:])",
        lambda f: f(
            np.zeros(1, np.int32),
            np.ones(1, np.int64),
            np.zeros(1, np.int16),
            np.full(1, -1, np.int32),
            np.full(2, -1, np.int32),
            np.zeros(3, np.int32),
            np.zeros(1, np.int64),
            np.zeros(2, np.int64),
        ),
    )


@functools.cache
def _histograms_compiled() -> Any:
    return compile_loop(
        _histograms,
        "void(int16[:], int32[:], uint8[:], boolean, int64[:], int64[:], int64[:, :], int64[:, :], int64[:], int64[:])",
        lambda f: f(
            np.zeros(1, np.int16),
            np.zeros(0, np.int32),
            np.ones(1, np.uint8),
            True,
            np.ones(1, np.int64),
            np.array([0, 1], np.int64),
            np.zeros((1, 3), np.int64),
            np.zeros((1, 3), np.int64),
            np.zeros(1, np.int64),
            _marker_state(),
        ),
    )


def load() -> None:
    """Compile or load every loop here: in the main thread (advisor.workload.jit keeps signals
    there), before the passes run in others."""
    _count_compiled()
    _number_compiled()
    _tally_compiled()
    _markers_compiled()
    _fenwick_compiled()
    _histograms_compiled()


def _nodes(distinct: int) -> npt.NDArray[np.int32]:
    node = np.empty((distinct, 4), np.int32)
    node[:, :3] = -1
    node[:, 3] = 0
    return node


def _marker_state() -> npt.NDArray[np.int64]:
    state = np.zeros(9, np.int64)
    state[HEAD] = state[BOTTOM] = -1
    return state


@dataclass(frozen=True)
class Counted:
    """What the requests kept make at a block size: requests, block accesses, and how many
    requests span more than one block."""

    requests: int
    accesses: int
    spanning: int


@dataclass(frozen=True)
class Pass:
    """One block size's exact curve, and the blocks behind it: each distinct block (in the
    order first touched) and its access count."""

    curve: mrc.Curve
    ids: npt.NDArray[np.int64]
    counts: npt.NDArray[np.int64]
    accesses: int


def _keep(keep: npt.NDArray[np.bool_] | None) -> npt.NDArray[np.uint8]:
    return np.zeros(0, np.uint8) if keep is None else keep.view(np.uint8)


def count(requests: Requests, block_size: int, keep: npt.NDArray[np.bool_] | None) -> Counted:
    """How many blocks of ``block_size`` the requests kept (``keep``; None: all) touch."""
    out = np.zeros(3, np.int64)
    _count_compiled()(requests["offset"], requests["length"], _keep(keep), block_size.bit_length() - 1, out)
    return Counted(int(out[0]), int(out[1]), int(out[2]))


class Numbering:
    """A block size's blocks numbered 0, 1, ... in the order first touched, over any number of
    calls (_number): a hash table of ``load`` quarters full at most."""

    def __init__(self, block_size: int, load: int = 2) -> None:
        self.block_size = block_size
        self.shift = block_size.bit_length() - 1
        self.load = load
        self.table = np.full(2 << 16, -1, np.int64)
        self.state = np.zeros(5, np.int64)

    def feed(
        self,
        requests: Requests,
        keep: npt.NDArray[np.bool_] | None,
        dense: npt.NDArray[np.int32] | None = None,
        per: npt.NDArray[np.int32] | None = None,
    ) -> None:
        """Number the blocks of the requests kept (None: all); ``dense`` gets each access's
        number, ``per`` each kept request's block count."""
        none = np.zeros(0, np.int32)
        self.table = _number_compiled()(
            requests["offset"],
            requests["length"],
            _keep(keep),
            self.shift,
            self.table,
            self.state,
            self.load,
            none if dense is None else dense,
            none if per is None else per,
        )

    def lookup(
        self, requests: Requests, keep: npt.NDArray[np.bool_] | None, counted: Counted
    ) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int32]] | None:
        """The numbers of the kept requests' accesses, and each one's block count (empty
        when none spans two blocks), for blocks numbered already: ``counted`` is count()'s.
        None when a block was never numbered (the requests are not the ones numbered)."""
        dense = np.empty(counted.accesses, np.int32)
        per = np.empty(counted.requests if counted.spanning else 0, np.int32)
        state = np.zeros(5, np.int64)
        _number_compiled()(
            requests["offset"], requests["length"], _keep(keep), self.shift, self.table, state, 0, dense, per
        )
        return None if state[MISSING] else (dense, per)

    @property
    def distinct(self) -> int:
        return int(self.state[DISTINCT])

    @property
    def counted(self) -> Counted:
        return Counted(int(self.state[REQUESTS]), int(self.state[ACCESSES]), int(self.state[SPANNING]))

    def ids(self) -> npt.NDArray[np.int64]:
        """Each number's block."""
        keys, numbers = self.table[0::2], self.table[1::2]
        used = keys != -1
        ids = np.empty(self.distinct, np.int64)
        ids[numbers[used]] = keys[used]
        return ids


class BlockCounts:
    """Each distinct block's accesses over any number of chunks, in the order first touched: a
    Numbering and a count a number (about 30 bytes a block, no sort)."""

    def __init__(self, block_size: int) -> None:
        self.numbering = Numbering(block_size, load=3)
        self._counts = np.zeros(1 << 16, np.int64)

    def feed(self, requests: Requests, accesses: int) -> None:
        """Count the blocks of ``requests`` (``accesses`` of them: count()'s)."""
        dense = np.empty(accesses, np.int32)
        self.numbering.feed(requests, None, dense)
        if self.numbering.distinct > len(self._counts):
            grown = np.zeros(max(2 * len(self._counts), self.numbering.distinct), np.int64)
            grown[: len(self._counts)] = self._counts
            self._counts = grown
        _tally_compiled()(dense, self._counts)

    def counts(self) -> npt.NDArray[np.int64]:
        return self._counts[: self.numbering.distinct]


class Classing:
    """One block size's exact curve counted over calls that each end at a request's end: by
    the marker pass, or (``fenwick``) by stack distances, for ``distinct`` blocks numbered
    already and ``units`` units (requests with ``by_request``, else block accesses) in all."""

    def __init__(self, distinct: int, units: int, accesses: int, by_request: bool, fenwick: bool = False) -> None:
        self.sizes = mrc.default_sizes(distinct)
        self.units = units
        self.by_request = by_request
        self.fenwick = fenwick
        self.edges = np.linspace(0, units, mrc.STEADY_SLICES + 1).astype(np.int64)
        self.hist = np.zeros((mrc.STEADY_SLICES, len(self.sizes) + 2), np.int64)
        self.read_hist = np.zeros_like(self.hist)
        self.fill_at = np.full(len(self.sizes), -1, np.int64)
        self.state = _marker_state()
        if fenwick:
            room = 1
            while room < min(2 * distinct + 1024, accesses + 1):
                room *= 2
            self.last = np.full(distinct, -1, np.int32)
            self.owner = np.full(room, -1, np.int32)
            self.tree = np.zeros(room + 1, np.int32)
            self.counts = np.zeros(distinct, np.int64)
            self.fenwick_state = np.zeros(2, np.int64)
        else:
            self.node = _nodes(distinct)
            self.tail = np.full(len(self.sizes), -1, np.int32)

    def feed(self, dense: npt.NDArray[np.int32], per: npt.NDArray[np.int32], reads: npt.NDArray[np.bool_]) -> bool:
        """Count the accesses ``dense`` of requests whose block counts are ``per`` (empty:
        one each) and kinds ``reads``. False when the marker pass gave up (too many steps an
        access): count them all again with ``fenwick``."""
        kinds = reads.view(np.uint8)
        if not self.fenwick:
            return bool(
                _markers_compiled()(
                    dense,
                    self.sizes,
                    MARKER_STEPS,
                    per,
                    kinds,
                    self.by_request,
                    self.edges,
                    self.hist,
                    self.read_hist,
                    self.fill_at,
                    self.node,
                    self.tail,
                    self.state,
                )
            )
        classes = np.empty(len(dense), np.int16)
        _fenwick_compiled()(
            dense, self.sizes, classes, self.last, self.owner, self.tree, self.counts, self.fenwick_state
        )
        _histograms_compiled()(
            classes,
            per,
            kinds,
            self.by_request,
            self.sizes,
            self.edges,
            self.hist,
            self.read_hist,
            self.fill_at,
            self.state,
        )
        return True

    def curve(self) -> mrc.Curve:
        return mrc.curve_from_histograms(self.sizes, self.hist, self.read_hist, self.fill_at, self.units)

    def block_counts(self) -> npt.NDArray[np.int64]:
        """Each block's accesses."""
        return self.counts if self.fenwick else self.node[:, 3].astype(np.int64)


def lru_pass(
    requests: Requests,
    block_size: int,
    keep: npt.NDArray[np.bool_] | None,
    reads: npt.NDArray[np.bool_],
    by_request: bool,
    counted: Counted,
) -> Pass:
    """The exact LRU curve of the requests kept (``keep``; None: all) in blocks of
    ``block_size`` (a power of two), and their blocks; ``reads``: which kept requests are
    reads; ``counted``: count()'s answer. ``by_request``: the curve counts requests, a request
    hitting only when all its blocks do (mrc.exact_curve_dense with per_request); else each
    block access counts, of its request's kind. Runs without the GIL but for a moment
    between passes: another block size's pass can run beside it on another thread."""
    numbering = Numbering(block_size)
    per = np.empty(counted.requests if counted.spanning else 0, np.int32)
    dense = np.empty(counted.accesses, np.int32)
    numbering.feed(requests, keep, dense, per)
    ids, distinct = numbering.ids(), numbering.distinct
    del numbering  # its table goes before the classing's arrays come
    units = counted.requests if by_request else counted.accesses
    classing = Classing(distinct, units, counted.accesses, by_request)
    if not classing.feed(dense, per, reads):
        del classing  # the marker pass gave up: a Fenwick tree's classes
        classing = Classing(distinct, units, counted.accesses, by_request, fenwick=True)
        classing.feed(dense, per, reads)
    del dense
    return Pass(classing.curve(), ids, classing.block_counts(), counted.accesses)
