"""A watch of caches as both front ends follow it: each tick samples every cache once, derives
its figures, hands the samples to a recorder in batches (thinning old ones once an hour), and
says when to stop: after a number of samples or a duration, once a flush is clean, or when the
cache is gone. The CLI's watch command prints the ticks; the Warm-up screen draws them."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from advisor.errors import CachewiseError
from advisor.prediction import Prediction
from advisor.watch.figures import STALL_SECONDS, Figures, Tracker
from advisor.watch.sampler import CacheRef, Sample, SampleSource

# Writes samples (and, when asked, thins old ones); the warning when the history cannot be written.
Recorder = Callable[[list[Sample], bool], CachewiseError | None]


@dataclass
class Tick:
    """One round of sampling: each cache's sample with its figures, the figures whose flush
    stalled with this tick (shown once per stall), and why the watch ends here, if it does."""

    figures: list[tuple[Sample, Figures]]
    stalled: list[Figures] = field(default_factory=list)
    clean: bool = False  # following a flush: no dirty data is left
    gone: bool = False  # no cache left to sample (uncached, detached, removed)


class Session:
    BATCH_SECONDS = 10.0
    THIN_SECONDS = 3600.0

    def __init__(
        self,
        sampler: SampleSource,
        refs: list[CacheRef],
        predictions: Mapping[str, Prediction | None],
        recorder: Recorder | None = None,
        stall_seconds: float | None = None,
    ) -> None:
        self.sampler, self.refs, self.recorder = sampler, refs, recorder
        self.trackers: dict[str, Tracker] = {
            r.name: Tracker(predictions.get(r.name), stall_seconds=stall_seconds or STALL_SECONDS) for r in refs
        }
        self.pending: list[Sample] = []
        self.last_write = self.last_thin = -self.THIN_SECONDS  # the first batch thins
        self.warning: CachewiseError | None = None  # the first history warning met
        self._stalled: set[str] = set()

    def replay(self, past: list[Sample]) -> list[Figures]:
        """Figures for samples recorded earlier (a restarted screen's past), in time order."""
        return [self.trackers[s.target].add(s) for s in past if s.target in self.trackers]

    def step(self) -> list[tuple[Sample, Figures]]:
        samples = self.sampler.sample(self.refs)
        out = [(s, self.trackers[s.target].add(s)) for s in samples]
        if self.recorder is not None:
            self.pending.extend(samples)
            now = time.monotonic()
            if now - self.last_write >= self.BATCH_SECONDS:
                self.last_write = now
                thin = now - self.last_thin >= self.THIN_SECONDS
                if thin:
                    self.last_thin = now
                self.flush(thin=thin)
        return out

    def flush(self, thin: bool = False) -> CachewiseError | None:
        """Record the samples not yet recorded; the warning when the history cannot be written."""
        pending, self.pending = self.pending, []
        if self.recorder is None or (not pending and not thin):
            return None
        warning = self.recorder(pending, thin)
        self.warning = self.warning or warning
        return warning

    def tick(self, until_clean: bool = False) -> Tick:
        figures = self.step()
        tick = Tick(figures, gone=not figures)
        for _sample, fig in figures:
            if fig.stall is not None and fig.target not in self._stalled:
                tick.stalled.append(fig)
            (self._stalled.add if fig.stall is not None else self._stalled.discard)(fig.target)
            # bcache says "dirty" until its writeback thread has finished, after dirty_data is 0.
            if until_clean and not fig.dirty_bytes and fig.state != "dirty":
                tick.clean = True
        return tick

    def follow(
        self,
        interval: float,
        count: int | None = None,
        duration: float | None = None,
        until_clean: bool = False,
        wait: Callable[[float], bool] | None = None,
    ) -> Iterator[Tick]:
        """Ticks every ``interval`` seconds (a slow tick delays the next, never bunches them),
        until ``count`` samples, ``duration`` seconds, a clean flush (``until_clean``), no cache
        left, or ``wait`` returning True (cancelled). Unrecorded samples are recorded at the end."""

        def sleep(seconds: float) -> bool:
            time.sleep(seconds)
            return False

        wait = wait or sleep
        start = next_at = time.monotonic()
        taken = 0
        try:
            while True:
                tick = self.tick(until_clean)
                taken += len(tick.figures)
                yield tick
                if tick.gone or tick.clean:
                    return
                if (count and taken >= count) or (duration is not None and time.monotonic() - start >= duration):
                    return
                next_at = max(next_at + interval, time.monotonic())
                if wait(max(0.0, next_at - time.monotonic())):
                    return
        finally:
            self.flush()
