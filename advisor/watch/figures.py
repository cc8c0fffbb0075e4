"""Figures derived from a cache's samples: hit ratios, fill, IOPS, warm-up ETA, flush progress
and stalls, and the prediction they are compared with.

A :class:`Tracker` takes one cache's samples in time order and returns :class:`Figures` for
each. Rates are taken over a sliding window (``window`` seconds) so one quiet second does not
swing them. Counters that went backwards (the cache was reloaded, bcache was re-registered)
start a new baseline instead of giving negative rates.
"""

from __future__ import annotations

from collections import deque
from dataclasses import asdict, dataclass
from typing import Any

from advisor.prediction import Prediction
from advisor.watch.sampler import Io, Sample

__all__ = ["STALL_SECONDS", "Figures", "FlushMeter", "Prediction", "Stall", "Tracker"]

# A flush has stalled when dirty data is left and has not gone down for this long.
STALL_SECONDS = 30.0
# The fill has settled when it grew by less than this share of the cache over the window.
STEADY_FILL_GROWTH = 0.002


@dataclass(frozen=True)
class Stall:
    """Dirty data that has stopped going down, with the likely causes and what to do."""

    seconds: float
    causes: tuple[str, ...]


@dataclass(frozen=True)
class Figures:
    t: float
    target: str
    kind: str
    mode: str | None
    state: str
    hit_ratio: float | None  # over the last interval
    hit_ratio_total: float | None  # since watching began
    # The hit ratio over the last step the counters moved, and how long ago that was: bcache folds
    # its counters into stats_total every few seconds, so most intervals see none move.
    hit_ratio_last: float | None
    hit_ratio_age_seconds: float | None
    read_hit_ratio: float | None  # over the last interval (dm-cache, writecache)
    fill: float | None  # used / capacity
    used_bytes: int | None
    capacity_bytes: int | None
    fill_rate_bytes: float | None  # per second, over the window
    promotion_rate_bytes: float | None  # dm-cache: blocks promoted per second, in bytes
    iops: float | None  # asked of the cached device
    cache_iops: float | None  # served by the cache device (including promotions and write-back)
    origin_iops: float | None
    dirty_bytes: int | None
    flush_rate_bytes: float | None  # dirty bytes written back per second (positive while it falls)
    flush_eta_seconds: float | None
    stall: Stall | None
    warmup: str  # "filling", "steady", "full", "unknown"
    warmup_eta_seconds: float | None  # to the predicted (or observed) steady state
    predicted_hit_ratio: float | None
    predicted_eta_seconds: float | None  # the model's own time left, before correction
    trouble: str = ""  # what is wrong with the cache (a failed cache, a dead SSD), as the sample says

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _ratio(hits: float, total: float) -> float | None:
    return hits / total if total > 0 else None


def _delta(new: int | None, old: int | None) -> int | None:
    if new is None or old is None or new < old:
        return None
    return new - old


def _ios(io: Io | None) -> int | None:
    return None if io is None else io.reads + io.writes


@dataclass(frozen=True)
class FlushProgress:
    rate: float | None  # units written back per second, over the window (positive while it falls)
    eta_seconds: float | None
    stalled_seconds: float | None  # dirty data left and no new low for STALL_SECONDS or more


class FlushMeter:
    """Dirty data counting down: its rate, the time left, and whether it has stalled."""

    def __init__(self, window: float = 10.0, stall_seconds: float = STALL_SECONDS) -> None:
        self.window = window
        self.stall_seconds = stall_seconds
        self.points: deque[tuple[float, int]] = deque()
        self.low: tuple[float, int] | None = None  # when dirty data last reached a new low

    def add(self, t: float, dirty: int) -> FlushProgress:
        self.points.append((t, dirty))
        while len(self.points) > 2 and t - self.points[0][0] > self.window:
            self.points.popleft()
        t0, d0 = self.points[0]
        rate = (d0 - dirty) / (t - t0) if t > t0 else None
        eta = dirty / rate if rate and rate > 0 and dirty else (0.0 if not dirty else None)
        if not dirty or self.low is None or dirty < self.low[1]:
            self.low = None if not dirty else (t, dirty)
            return FlushProgress(rate, eta, None)
        waited = t - self.low[0]
        return FlushProgress(rate, eta, waited if waited >= self.stall_seconds else None)


class Tracker:
    """Figures for one cache from its samples, in time order."""

    def __init__(
        self, prediction: Prediction | None = None, window: float = 10.0, stall_seconds: float = STALL_SECONDS
    ) -> None:
        self.prediction = prediction
        self.window = window
        self.stall_seconds = stall_seconds
        self.first: Sample | None = None
        self.previous: Sample | None = None
        self.recent: deque[Sample] = deque()
        self.flush = FlushMeter(window, stall_seconds)
        self.moved: Sample | None = None  # the sample at which hits or misses last changed
        self.last_hit: tuple[float, float] | None = None  # (hit ratio over that step, when)

    def add(self, s: Sample) -> Figures:
        prev = self.previous
        if self.first is None or (s.hits is not None and self.first.hits is not None and s.hits < self.first.hits):
            self.first, prev = s, None
            self.recent.clear()
            self.moved, self.last_hit = s, None
        self.recent.append(s)
        while len(self.recent) > 2 and s.t - self.recent[0].t > self.window:
            self.recent.popleft()
        old = self.recent[0]
        span = s.t - old.t
        self.previous = s

        def interval_ratio(hits: str, misses: str, since: Sample | None) -> float | None:
            if since is None:
                return None
            dh = _delta(getattr(s, hits), getattr(since, hits))
            dm = _delta(getattr(s, misses), getattr(since, misses))
            return None if dh is None or dm is None else _ratio(dh, dh + dm)

        def rate(get: Any) -> float | None:
            if span <= 0:
                return None
            d = _delta(get(s), get(old))
            return None if d is None else d / span

        fill = s.used_bytes / s.capacity_bytes if s.used_bytes is not None and s.capacity_bytes else None
        fill_rate = rate(lambda x: x.used_bytes)
        promo = rate(lambda x: None if x.promotions is None or x.block_bytes is None else x.promotions * x.block_bytes)
        flush = self.flush.add(s.t, s.dirty_bytes) if s.dirty_bytes is not None else FlushProgress(None, None, None)
        stall = Stall(flush.stalled_seconds, stall_causes(s, old)) if flush.stalled_seconds is not None else None
        warmup, eta, model_eta = self._warmup(s, fill, fill_rate, promo)
        if s is not self.moved and (step := interval_ratio("hits", "misses", self.moved)) is not None:
            self.moved, self.last_hit = s, (step, s.t)
        return Figures(
            t=s.t,
            target=s.target,
            kind=s.kind,
            mode=s.mode,
            state=s.state,
            hit_ratio=interval_ratio("hits", "misses", prev),
            hit_ratio_total=interval_ratio("hits", "misses", self.first) if s is not self.first else None,
            hit_ratio_last=self.last_hit[0] if self.last_hit else None,
            hit_ratio_age_seconds=s.t - self.last_hit[1] if self.last_hit else None,
            read_hit_ratio=interval_ratio("read_hits", "read_misses", prev),
            fill=fill,
            used_bytes=s.used_bytes,
            capacity_bytes=s.capacity_bytes,
            fill_rate_bytes=fill_rate,
            promotion_rate_bytes=promo,
            iops=rate(lambda x: _ios(x.device_io)),
            cache_iops=rate(lambda x: _ios(x.cache_io)),
            origin_iops=rate(lambda x: _ios(x.origin_io)),
            dirty_bytes=s.dirty_bytes,
            flush_rate_bytes=flush.rate,
            flush_eta_seconds=flush.eta_seconds,
            stall=stall,
            warmup=warmup,
            warmup_eta_seconds=eta,
            predicted_hit_ratio=self.prediction.hit_ratio if self.prediction else None,
            predicted_eta_seconds=model_eta,
            trouble=s.trouble,
        )

    def _warmup(
        self, s: Sample, fill: float | None, fill_rate: float | None, promo: float | None
    ) -> tuple[str, float | None, float | None]:
        """(state, ETA to the steady state, the model's own ETA). The steady state is the
        predicted hot data (capped by the cache) when a prediction is known, else a full cache;
        the ETA divides what is left by the observed promotion (or fill) rate."""
        if fill is None or s.capacity_bytes is None or s.used_bytes is None:
            return "unknown", None, None
        p = self.prediction
        model_eta = None
        if p is not None and p.seconds_95 is not None and p.applied_at is not None:
            model_eta = max(0.0, p.seconds_95 - (s.t - p.applied_at))
        target = min(s.capacity_bytes, p.hot_bytes) if p is not None and p.hot_bytes else s.capacity_bytes
        if s.used_bytes >= target * 0.95:
            return ("full" if fill >= 0.95 else "steady"), 0.0, model_eta
        speed = promo if promo else fill_rate
        span = s.t - self.recent[0].t
        if span >= self.window / 2 and (fill_rate or 0) < STEADY_FILL_GROWTH * s.capacity_bytes / self.window:
            if not speed:
                return "steady", None, model_eta
        if not speed:
            return "filling", model_eta, model_eta
        return "filling", (target - s.used_bytes) / speed, model_eta


def stall_causes(s: Sample, before: Sample) -> tuple[str, ...]:
    """The known reasons dirty data stops going down, those that fit this cache first."""
    causes = []
    writes = None
    if s.device_io is not None and before.device_io is not None and s.t > before.t:
        writes = (_delta(s.device_io.writes, before.device_io.writes) or 0) / (s.t - before.t)
    if s.state in ("failed", "gone", "read-only", "needs_check") or (s.errors or 0) > 0:
        causes.append(
            "the cache device reports errors: its data may be failing. Do not detach it with dirty "
            "data; copy what you can from the cached device first, then see lvmcache(7) or bcache's "
            "documentation on a failed cache."
        )
    if s.kind == "bcache" and s.writeback_running is False:
        causes.append(
            "bcache's writeback is switched off (writeback_running is 0): nothing is written back until "
            f"it is on again: echo 1 > /sys/block/{s.target}/bcache/writeback_running."
        )
    elif (
        s.kind == "bcache"
        and s.mode == "writeback"
        and s.writeback_percent
        and s.capacity_bytes
        and s.dirty_bytes is not None
        and s.dirty_bytes <= s.capacity_bytes * s.writeback_percent / 100
    ):
        causes.append(
            f"bcache keeps up to writeback_percent ({s.writeback_percent}%) of the cache dirty on purpose "
            "and writes back slowly below it. To flush it all: echo 0 > "
            f"/sys/block/{s.target}/bcache/writeback_percent, or switch cache_mode to writethrough."
        )
    if writes is None or writes > 0:
        causes.append(
            "a program keeps writing to the cached device, dirtying blocks as fast as they are written "
            "back. Stop the writers (or unmount the file system) and the count will fall."
        )
    if s.kind == "dm-cache":
        causes.append(
            "dm-cache writes back at most migration_threshold sectors at a time; lvm2's uncache repeats "
            "'Flushing N blocks' until none are left. Raise it with `lvchange --cachesettings "
            f"migration_threshold=16384 {s.target}`, or switch to the cleaner policy (`lvchange --cachepolicy "
            f"cleaner {s.target}`) to write back everything."
        )
    if s.kind == "dm-writecache":
        causes.append(
            "dm-writecache writes back only above its high_watermark until asked: `lvconvert --splitcache "
            f"{s.target}` flushes everything."
        )
    return tuple(causes)
