"""A replay's read counters over time, as the kernel's would be sampled: the read hit ratio from
a time on, over the last third of a span, and the time to a share of a steady ratio. For the
simulators (advisor.workload.smq, advisor.workload.bcachesim), each recording its counters once a
second when they moved."""

from __future__ import annotations

from typing import Protocol

import numpy as np
import numpy.typing as npt


class ReadCounters(Protocol):
    @property
    def read_hits(self) -> int: ...

    @property
    def read_misses(self) -> int: ...


class Replay(Protocol):
    """A replay's final read counters, and their values at each tick they moved."""

    @property
    def counters(self) -> ReadCounters: ...

    @property
    def times(self) -> npt.NDArray[np.float64]: ...

    @property
    def read_hits(self) -> npt.NDArray[np.int64]: ...

    @property
    def read_misses(self) -> npt.NDArray[np.int64]: ...


class ReadHitRatio:
    """A replay's read hit ratio over the whole trace, from its final counters."""

    counters: ReadCounters

    @property
    def read_hit_ratio(self) -> float | None:
        c = self.counters
        total = c.read_hits + c.read_misses
        return c.read_hits / total if total else None


def columns(
    ticks: list[tuple[float, int, int]],
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """A simulator's (time, read hits, read misses) ticks as the Replay's three arrays."""
    line = np.asarray(ticks, dtype=np.float64).reshape(-1, 3)
    return line[:, 0], line[:, 1].astype(np.int64), line[:, 2].astype(np.int64)


WINDOW_S = 10.0  # the warm-up is judged on the read hit ratio of the last 10 s, as the watch does


def steady_read_hit_ratio(r: Replay, start: float, end: float) -> float | None:
    """The replay's read hit ratio over the last third of [start, end]: what a cache started
    empty came to within the trace (the accuracy runs judge the kernel on the same third)."""
    return read_hit_ratio_since(r, start + (end - start) * 2 / 3)


def read_hit_ratio_since(r: Replay, start: float) -> float | None:
    """The replay's read hit ratio from ``start`` on: its final counters less those of the last
    tick at or before ``start`` (ticks are recorded only when the counters moved)."""
    return read_hit_ratio_between(r, start, float("inf"))


TICK_S = 1.0  # both simulators record their counters once a second of the trace's time


def counted_at(r: Replay, at: float) -> tuple[int, int]:
    """(read hits, read misses) the replay had counted by ``at``: the last tick at or before it
    (ticks are recorded only when the counters moved); its final counters from a tick's length
    past its last tick on (the requests after the last tick came within a tick of it)."""
    if not len(r.times) or at >= float(r.times[-1]) + TICK_S:
        return r.counters.read_hits, r.counters.read_misses
    i = int(np.searchsorted(r.times, at, side="right")) - 1
    return (int(r.read_hits[i]), int(r.read_misses[i])) if i >= 0 else (0, 0)


def read_hit_ratio_between(r: Replay, start: float, end: float) -> float | None:
    """The replay's read hit ratio over [start, end) as its ticks counted it (None: no reads)."""
    if not len(r.times):
        return None
    h0, m0 = counted_at(r, start)
    h1, m1 = counted_at(r, end)
    total = (h1 - h0) + (m1 - m0)
    return (h1 - h0) / total if total else None


def seconds_to_share(r: Replay, start: float, steady: float, share: float = 1 - float(np.exp(-1))) -> float | None:
    """Seconds from ``start`` until the read hit ratio over the last WINDOW_S first reaches
    ``share`` of ``steady`` (None: not within the trace)."""
    goal = share * steady
    for i in range(len(r.times)):
        # the counters WINDOW_S earlier: the last tick recorded by then (ticks are recorded only
        # when the counters moved), or nothing before the first
        j = int(np.searchsorted(r.times, r.times[i] - WINDOW_S, side="right")) - 1
        dh = int(r.read_hits[i] - (r.read_hits[j] if j >= 0 else 0))
        dm = int(r.read_misses[i] - (r.read_misses[j] if j >= 0 else 0))
        if dh + dm and dh / (dh + dm) >= goal:
            return float(r.times[i] - start)
    return None
