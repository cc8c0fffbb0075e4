"""A capture across time: its windows, its days and how much of one day's hot data the next
day touches again, and its phases, found and named (issue 31).

The capture's sample (advisor/workload/capfile.py) is cut into windows of the clock: hours for
a capture of two days or more (Counter Stacks' windows, Wires et al., OSDI '14: the curve of
each window and of any run of them), otherwise about 24 windows of a round number of seconds,
so that a capture of minutes has phases too. A window no run of the capture covered (the
machine was off) is kept as a gap, never read as a quiet time.

For each window: the requests a second (its sampled requests, each standing for the requests
its clock hour counted over those the hour kept: an hour's window has the hour's exact count),
and from the sample the read share, the share of bytes that continue a sequential stream (as
classed at capture time from every request), the footprint, the share of its block accesses
to blocks the capture touches more than once (data a cache can serve again, whatever the
window's length), the share of its accesses to blocks that earlier windows touched (the
same data, or new), and the read hit ratio of a cache started empty at the window's start, at a few sizes.

Each window has a kind, in this order: quiet (less than one request and 256 KiB a second), scan (streams
carry at least half its bytes), writes (at least 70% of its requests write), hot set (at least
half its accesses are to data touched again), or little reuse. Consecutive windows of a kind
are a phase; a hot set whose accesses go mostly to data new to the capture (less than 30% to
data touched by the end of the last hot window: a set that began within a scan's last window is
still new) begins a new phase, and a run of such windows is a moving set. With two days or more,
a phase of at most half a day whose kind is found at the same hours on at least half of the days
(and on two), and of a kind found in at most half the capture's windows (not what the days are
made of), is named daily.

These figures describe the workload; the cache's predictions stay the whole capture's curves
(advisor/workload/sampled.py), which this module does not change.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from advisor.workload import mrc
from advisor.workload.streams import StreamDetector

DAY = 86400.0
HOUR = 3600.0
ROUND_SECONDS = (10, 15, 20, 30, 60, 120, 300, 600, 900, 1800)
SHORT_WINDOWS = 24  # a capture shorter than two days is cut in about this many windows
MIN_COVERED_S = 1.0  # a window covered for less is a gap
MIN_KEPT = 50  # sampled requests a short capture's window holds on average, at least
QUIET_IOPS = 1.0
QUIET_BYTES = 256 << 10  # a second: a window is quiet below both
SCAN_SHARE = 0.5
WRITES_SHARE = 0.7
HOT_REUSE = 0.5
NEW_BELOW = 0.3  # a hot window with less of its blocks touched before holds new data
DAILY_ON = 0.5  # a kind at the same hours on at least this share of the days (and two) is daily
HOT_ACCESS_SHARE = 0.8  # a day's hot blocks: the fewest that took this share of its accesses
CURVE_POINTS = 8
BLOCK = 4096

QUIET, SCAN, WRITES, HOT, MOVING, NEW_HOT, LITTLE = (
    "quiet",
    "scan",
    "writes",
    "hot set",
    "moving set",
    "new hot set",
    "little reuse",
)


@dataclass(frozen=True)
class Window:
    start: float  # epoch seconds
    seconds: float
    captured_seconds: float  # of them, those a run of the capture covered (0: a gap)
    requests: int  # every request, estimated from the sample
    iops: float  # over the captured seconds
    read_share: float
    sequential_share: float  # of the bytes
    footprint_bytes: int
    reuse: float  # of its accesses, those to blocks the capture touches more than once
    seen_before: float  # of its accesses, those to blocks an earlier window touched
    kind: str
    read_hit_ratio: list[float]  # a cache empty at the window's start, at Periods.sizes_bytes


@dataclass(frozen=True)
class Phase:
    kind: str
    start: float
    end: float
    name: str  # its kind and its time ("scan Tue 02:00-03:00, daily (6 of 7 days)")
    daily: str | None  # "02:00-03:00 (6 of 7 days)" when it recurs at those hours
    windows: int
    iops: float
    read_share: float
    sequential_share: float
    footprint_bytes: int  # the data it touched, all its windows together


@dataclass(frozen=True)
class Day:
    start: float  # local midnight
    requests: int
    footprint_bytes: int
    read_hit_ratio: list[float]  # a cache empty at midnight, at Periods.sizes_bytes
    hot_carried: float | None  # of the day before's hot blocks, the share this day touched again
    reread: float | None  # of this day's accesses, the share to blocks the day before touched


@dataclass(frozen=True)
class Periods:
    window_seconds: float
    first: float
    last: float
    captured_seconds: float
    sizes_bytes: list[int]
    windows: list[Window]
    phases: list[Phase]
    days: list[Day]

    @property
    def hours(self) -> float:
        """The hours the capture ran (the time between its runs left out)."""
        return self.captured_seconds / HOUR


def window_seconds(span: float, kept: int | None = None) -> float:
    """Hours for two days or more, else about SHORT_WINDOWS windows of a round length, long enough
    to hold MIN_KEPT sampled requests on average (``kept`` in all): a window the sample left
    empty would read as quiet."""
    if span >= 2 * DAY:
        return HOUR
    want = max(span / SHORT_WINDOWS, MIN_KEPT * span / kept if kept else 0.0)
    return float(next((s for s in ROUND_SECONDS if s >= want), HOUR))


def _runs(summaries: list[dict[str, Any]], t: npt.NDArray[np.float64]) -> list[tuple[float, float]]:
    """The spans the capture ran, overlapping ones merged: each run from its start (the
    recorder's, the ``run`` of its hours: idle time after it is quiet, not a gap) to its last
    request; the sample's span when no hour was summarised."""
    spans: dict[str, tuple[float, float]] = {}
    for h in summaries:
        first, last, run = h.get("first"), h.get("last"), h.get("run")
        if isinstance(first, float | int) and isinstance(last, float | int):
            lo = min(float(first), float(run)) if isinstance(run, float | int) else float(first)
            was = spans.get(str(run), (lo, float(last)))
            spans[str(run)] = (min(was[0], lo), max(was[1], float(last)))
    if not spans:
        return [(float(t[0]), float(t[-1]))] if len(t) else []
    merged: list[tuple[float, float]] = []
    for lo, hi in sorted(spans.values()):
        if merged and lo <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
        else:
            merged.append((lo, hi))
    return merged


def _blocks(
    reqs: npt.NDArray[Any],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], npt.NDArray[np.bool_]]:
    """Each request's 4 KiB blocks, in order, with the request's time and whether it reads."""
    first = (reqs["offset"] // np.uint64(BLOCK)).astype(np.int64)
    last = (
        (reqs["offset"] + np.maximum(reqs["length"], 1).astype(np.uint64) - np.uint64(1)) // np.uint64(BLOCK)
    ).astype(np.int64)
    per = last - first + 1
    starts = np.cumsum(per) - per
    within = np.arange(int(per.sum()), dtype=np.int64) - np.repeat(starts, per)
    return np.repeat(first, per) + within, np.repeat(reqs["t"], per), np.repeat(reqs["write"] == 0, per)


def _kind(iops: float, throughput: float, sequential: float, writes: float, reuse: float) -> str:
    if iops < QUIET_IOPS and throughput < QUIET_BYTES:
        return QUIET
    if sequential >= SCAN_SHARE:
        return SCAN
    if writes >= WRITES_SHARE:
        return WRITES
    return HOT if reuse >= HOT_REUSE else LITTLE


class _Sample:
    """The capture's sample, ready to be cut by time: its requests, its cached requests' 4 KiB
    blocks (numbered), and the hours' counts of every request."""

    def __init__(self, requests: npt.NDArray[Any], rate: float, summaries: list[dict[str, Any]]) -> None:
        self.rate = rate
        self.requests = requests
        self.t = requests["t"].astype(np.float64)
        self.lengths = requests["length"].astype(np.float64)
        self.sequential = requests["stream"] != StreamDetector.START
        cached = requests[requests["stream"] != StreamDetector.BYPASSED]
        self.cached_t = cached["t"].astype(np.float64)
        self.cached_reads = cached["write"] == 0
        self.cached_read_t = self.cached_t[self.cached_reads]  # the sampled reads a cache sees
        self.blocks, self.bt, self.reads = _blocks(cached)
        _, self.first_at, self.inverse = np.unique(self.blocks, return_index=True, return_inverse=True)
        self.touches = np.bincount(self.inverse, minlength=len(self.first_at))  # each block's accesses, all told
        footprint = max(1, len(self.first_at))
        self.sizes = np.unique(np.geomspace(max(1, footprint / 128), footprint, CURVE_POINTS).round().astype(np.int64))
        # the hours' counts of every request, and of the reads a cache sees (not bypassed)
        self.counted: dict[float, int] = {}
        self.counted_reads: dict[float, int] = {}
        for h in summaries:
            if isinstance(h.get("start"), float | int):
                at = float(h["start"])
                self.counted[at] = self.counted.get(at, 0) + int(h.get("requests", 0))
                cached_reads = int(h.get("reads", 0)) - int(h.get("bypassed_reads", 0))
                self.counted_reads[at] = self.counted_reads.get(at, 0) + cached_reads
        total = sum(self.counted.values())
        self.per = total / len(requests) if total > 0 else 1 / rate  # every request a sampled one stands for

    def span(self, times: npt.NDArray[np.float64], lo: float, hi: float) -> slice:
        return slice(int(np.searchsorted(times, lo)), int(np.searchsorted(times, hi)))

    def counted_between(
        self, counts: dict[float, int], times: npt.NDArray[np.float64], lo: float, hi: float
    ) -> float | None:
        """What the hours ``counts`` counted over [lo, hi): an hour wholly inside counts whole,
        an hour that lo or hi cuts (a day in a time zone half an hour off UTC's hours, like
        India's) by the share of its sampled ``times`` inside (of its time, when it sampled
        none). None when no counted hour meets [lo, hi)."""
        total, met = 0.0, False
        for h, count in counts.items():
            a, b = max(lo, h), min(hi, h + HOUR)
            if a >= b:
                continue
            met = True
            if (a, b) == (h, h + HOUR):
                total += count
                continue
            whole, inside = self.span(times, h, h + HOUR), self.span(times, a, b)
            sampled = whole.stop - whole.start
            total += count * ((inside.stop - inside.start) / sampled if sampled else (b - a) / HOUR)
        return total if met else None

    def hit_ratios(self, lo: float, hi: float) -> list[float]:
        """The read hit ratio of a cache empty at ``lo`` until ``hi``, at each of the sizes; with
        SHARDS_adj's correction (as sampled.py's) when [lo, hi) is whole hours the capture counted:
        the sample's reads there against the hours' reads x rate."""
        kept = self.span(self.bt, lo, hi)
        blocks, reads = self.blocks[kept], self.reads[kept]
        if not len(blocks) or not reads.any():
            return []
        curve = mrc.exact_curve(blocks, self.sizes, reads)
        assert curve.read_hit_ratio is not None
        ratios = [float(x) for x in curve.read_hit_ratio]
        counted = self.counted_between(self.counted_reads, self.cached_read_t, lo, hi)
        expected = (counted or 0.0) * self.rate
        sampled = int(np.count_nonzero(self.cached_reads[self.span(self.cached_t, lo, hi)]))
        if counted is not None and expected > 0 and sampled > 0:
            ratios = [min(1.0, max(0.0, (v * sampled + expected - sampled) / expected)) for v in ratios]
        return [round(v, 4) for v in ratios]

    def window(self, lo: float, hi: float, covered: float) -> Window:
        part, kept = self.span(self.t, lo, hi), self.span(self.bt, lo, hi)
        n = part.stop - part.start
        ids = self.inverse[kept]
        nbytes = float(self.lengths[part].sum())
        # its sampled requests, each standing for the requests its clock hour counted over the
        # ones it kept (a hot unit in or out of the sample moves an hour's share of the sample,
        # never its counts): a window that is an hour gets the hour's exact count
        hour = math.floor(lo / HOUR) * HOUR
        in_hour = self.span(self.t, hour, hour + HOUR)
        kept_in_hour = in_hour.stop - in_hour.start
        stands = self.counted[hour] / kept_in_hour if self.counted.get(hour) and kept_in_hour else self.per
        iops = n * stands / covered if covered > 0 else 0.0
        read_share = float(np.count_nonzero(self.requests["write"][part] == 0)) / n if n else 0.0
        seq = float(self.lengths[part][self.sequential[part]].sum()) / nbytes if nbytes else 0.0
        reuse = float(np.count_nonzero(self.touches[ids] > 1)) / len(ids) if len(ids) else 0.0
        seen = self.seen(lo, hi, lo)
        # a window a run covered for less than MIN_COVERED_S (a run's first or last instant) is a
        # gap: a request or two over a moment would read as a burst
        kind = _kind(iops, nbytes * stands / covered, seq, 1 - read_share, reuse) if covered >= MIN_COVERED_S else ""
        return Window(
            lo,
            hi - lo,
            round(covered, 3),
            round(n * stands),
            round(iops, 3),
            round(read_share, 4),
            round(seq, 4),
            self.footprint(lo, hi),
            round(reuse, 4),
            round(seen, 4),
            kind,
            self.hit_ratios(lo, hi),
        )

    def seen(self, lo: float, hi: float, before: float) -> float:
        """Of the accesses in [lo, hi), the share to blocks first touched before ``before``."""
        kept = self.span(self.bt, lo, hi)
        ids = self.inverse[kept]
        cut = int(np.searchsorted(self.bt, before))
        return float(np.count_nonzero(self.first_at[ids] < cut)) / len(ids) if len(ids) else 0.0

    def footprint(self, lo: float, hi: float) -> int:
        """The bytes of the device's data touched in [lo, hi), from the sample."""
        return round(len(np.unique(self.inverse[self.span(self.bt, lo, hi)])) * BLOCK / self.rate)

    def day(self, lo: float, hi: float, before: npt.NDArray[np.int64] | None) -> Day:
        ids = self.inverse[self.span(self.bt, lo, hi)]
        carried = reread = None
        if before is not None and len(before) and len(ids):
            counts = np.bincount(before)
            ranked = np.argsort(-counts, kind="stable")  # the day before's blocks, most touched first
            taken = np.cumsum(counts[ranked])
            hot = ranked[: int(np.searchsorted(taken, HOT_ACCESS_SHARE * taken[-1])) + 1]
            carried = round(float(np.count_nonzero(np.isin(hot, ids))) / len(hot), 4)
            reread = round(float(np.count_nonzero(np.isin(ids, before))) / len(ids), 4)
        counted = self.counted_between(self.counted, self.t, lo, hi)
        part = self.span(self.t, lo, hi)
        requests = round(counted) if counted is not None else round((part.stop - part.start) * self.per)
        return Day(lo, requests, self.footprint(lo, hi), self.hit_ratios(lo, hi), carried, reread)


def periods(
    requests: npt.NDArray[Any],
    rate: float,
    summaries: list[dict[str, Any]],
    local: Callable[[float], time.struct_time] = time.localtime,
) -> Periods | None:
    """The capture's windows, phases and days (None: no sampled request). ``requests`` are the
    capture's (capfile.CAPTURED, in time order), sampled at ``rate``; ``local`` gives the
    clock the phases are named in (the machine's own by default)."""
    if not len(requests):
        return None
    sample = _Sample(requests, rate, summaries)
    runs = _runs(summaries, sample.t)
    first, last = min(runs[0][0], float(sample.t[0])), max(runs[-1][1], float(sample.t[-1]))
    step = window_seconds(last - first, len(requests))
    origin = math.floor(first / step) * step
    count = max(1, math.ceil((last - origin) / step + 1e-9))
    windows = []
    for w in range(count):
        lo, hi = origin + w * step, origin + (w + 1) * step
        windows.append(sample.window(lo, hi, sum(max(0.0, min(hi, b) - max(lo, a)) for a, b in runs)))
    days = _days(sample, runs, local)
    return Periods(
        step,
        first,
        last,
        round(sum(b - a for a, b in runs), 3),
        [round(int(s) * BLOCK / rate) for s in sample.sizes],
        windows,
        _phases(windows, step, len(days), local, sample.footprint, sample.seen),
        days,
    )


def _local_day(when: float, local: Callable[[float], time.struct_time]) -> float:
    """The local midnight that begins ``when``'s day (as epoch seconds), also on a day the clock
    changed since midnight (then the hours since midnight are not the time since it)."""
    tm = local(when)
    start = when - (tm.tm_hour * 3600 + tm.tm_min * 60 + tm.tm_sec + (when % 1))
    return start + (tm.tm_gmtoff - local(start).tm_gmtoff)


def _days(sample: _Sample, runs: list[tuple[float, float]], local: Callable[[float], time.struct_time]) -> list[Day]:
    """The calendar days of a capture that ran on two of them or more (none otherwise)."""
    if runs[-1][1] - runs[0][0] < 2 * DAY:
        return []
    starts = [_local_day(runs[0][0], local)]
    while starts[-1] + DAY < runs[-1][1]:
        # the next local midnight (a day of 23 or 25 hours when the clock changes)
        starts.append(_local_day(starts[-1] + DAY + 2 * HOUR, local))
    days: list[Day] = []
    before: npt.NDArray[np.int64] | None = None
    for lo, hi in zip(starts, [*starts[1:], starts[-1] + DAY], strict=True):
        ids = sample.inverse[sample.span(sample.bt, lo, hi)]
        if not len(ids):
            before = None
            continue
        days.append(sample.day(lo, hi, before))
        before = ids
    return days


def _clock(when: float, step: float, local: Callable[[float], time.struct_time]) -> str:
    tm = local(when)
    return time.strftime("%H:%M" if step >= 60 else "%H:%M:%S", tm)


def _phases(
    windows: list[Window],
    step: float,
    ndays: int,
    local: Callable[[float], time.struct_time],
    footprint: Callable[[float, float], int],
    seen: Callable[[float, float, float], float],
) -> list[Phase]:
    groups: list[list[tuple[Window, bool]]] = []  # each window, and whether its hot data is new
    current: list[tuple[Window, bool]] = []
    hot_until: float | None = None  # the end of the last hot window
    for w in windows:
        if not w.kind:  # a gap: the capture was not running
            current = []
            continue
        # New data: against what the capture had touched by the end of the last hot window, not
        # just before this one (a hot set that began within a scan's last window is still new)
        new = w.kind == HOT and hot_until is not None and seen(w.start, w.start + w.seconds, hot_until) < NEW_BELOW
        if w.kind == HOT:
            hot_until = w.start + w.seconds
        if current and current[0][0].kind == w.kind and not (new and not current[-1][1]):
            current.append((w, new))  # the same kind; a new hot set only goes on a run of new ones
            continue
        current = [(w, new)]
        groups.append(current)
    daily = _daily_hours(windows, local) if ndays >= 2 else {}
    background: dict[str, int] = {}  # each kind's captured windows
    for w in windows:
        if w.kind:
            background[w.kind] = background.get(w.kind, 0) + 1
    captured_windows = sum(background.values())
    out: list[Phase] = []
    for group in groups:
        g = [w for w, _ in group]
        news = sum(1 for _, new in group if new)
        kind = g[0].kind
        if kind == HOT and group[0][1]:
            kind = MOVING if news >= 2 and 2 * news >= len(g) else NEW_HOT
        start, end = g[0].start, g[-1].start + g[-1].seconds
        span = f"{_clock(start, step, local)}-{_clock(end, step, local)}"
        found = [daily.get((g[0].kind, local(w.start).tm_hour), 0) for w in g]
        recurs = None
        if (
            daily
            and end - start <= DAY / 2
            and background.get(g[0].kind, 0) <= DAILY_ON * captured_windows  # not what the days are made of
            and min(found) >= max(2, math.ceil(DAILY_ON * ndays))
        ):
            recurs = f"{span} ({min(found)} of {ndays} days)"
        when = span
        if ndays >= 2:
            day_of = time.strftime("%a", local(start))
            ends_on = time.strftime("%a", local(end))
            to = f"{ends_on} " if ends_on != day_of else ""
            when = f"{day_of} {_clock(start, step, local)}-{to}{_clock(end, step, local)}"

        captured = sum(w.captured_seconds for w in g)
        requests = sum(w.requests for w in g)
        out.append(
            Phase(
                kind,
                start,
                end,
                f"{kind} {when}" + (f", daily {recurs}" if recurs else ""),
                recurs,
                len(g),
                round(requests / captured, 3) if captured else 0.0,
                round(sum(w.read_share * w.requests for w in g) / requests, 4) if requests else 0.0,
                round(sum(w.sequential_share * w.requests for w in g) / requests, 4) if requests else 0.0,
                footprint(start, end),
            )
        )
    return out


def _daily_hours(windows: list[Window], local: Callable[[float], time.struct_time]) -> dict[tuple[str, int], int]:
    """How many days each (kind, hour of the day) was found on."""
    seen: dict[tuple[str, int], set[tuple[int, int, int]]] = {}
    for w in windows:
        if w.kind:
            tm = local(w.start)
            seen.setdefault((w.kind, tm.tm_hour), set()).add((tm.tm_year, tm.tm_mon, tm.tm_mday))
    return {k: len(v) for k, v in seen.items()}
