"""Watch: every cache on this machine, one sample of each (status), or a session following some
of them live, with what the recommendation behind each predicted."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, replace

from advisor.errors import CachewiseError, codes, next_step
from advisor.history import History
from advisor.prediction import Prediction
from advisor.watch.sampler import CacheRef, Sample
from advisor.watch.session import Session
from cachewise.core.context import Core, Refused

codes({"snapshot-has-no-caches": "a saved snapshot has no live caches to read"})


def _live(core: Core) -> None:
    if core.replay and not core.recorded:
        raise Refused("snapshot-has-no-caches", next=[next_step("run-on-machine")])


def caches(core: Core) -> list[CacheRef]:
    """Every cache on this machine (dm-cache, dm-writecache, bcache)."""
    _live(core)
    return core.sampler().caches()


def target(core: Core, name: str) -> CacheRef:
    """The cache ``name`` names (VG/LV, bcacheN or its backing device); WatchError for none."""
    _live(core)
    return core.sampler().find(name)


def made(core: Core, ref: CacheRef) -> tuple[float | None, Prediction | None]:
    """When cachewise last made a cache on this device (None: not by cachewise, or not recorded),
    and what the recommendation behind it predicted (None: it was made without one). Only the
    newest cache made on the device counts: an older one's prediction is not this cache's."""
    if core.recording is not None:
        p = core.recording.prediction(ref)
        return (p.applied_at if p else None), p
    found: list[tuple[float, Prediction | None]] = []

    def read(hist: History) -> None:
        for made_on, made_at, predicted in hist.made_caches():
            real = os.path.basename(os.path.realpath(made_on)) if made_on.startswith("/") else made_on
            if real in (ref.device, ref.origin, ref.name):
                found.append((made_at, predicted))
                return

    core.record(read)
    if not found:
        return None, None
    made_at, predicted = found[0]
    return made_at, replace(predicted, applied_at=predicted.applied_at or made_at) if predicted else None


def prediction(core: Core, ref: CacheRef) -> Prediction | None:
    """What the recommendation behind this cache predicted, when cachewise made it from one:
    the newest cache recorded on the same device."""
    return made(core, ref)[1]


@dataclass(frozen=True)
class Status:
    """Every cache found with one sample of it (None when it could not be read), and what could
    not be looked at: when ``unread`` is not empty, the caches listed may not be all there are."""

    rows: list[tuple[CacheRef, Sample | None]]
    unread: tuple[str, ...] = ()


def status(core: Core) -> Status:
    refs = caches(core)
    unread = tuple(core.sampler().unread)
    by_name = {s.target: s for s in core.sampler().sample(refs)}
    return Status([(ref, by_name.get(ref.name)) for ref in refs], unread)


def session(core: Core, refs: list[CacheRef], record: bool = True, stall_seconds: float | None = None) -> Session:
    """A watch of these caches, recording their samples in the history unless ``record`` is
    False. A flush with no progress for ``stall_seconds`` is a stall."""

    def recorder(samples: list[Sample], thin: bool) -> CachewiseError | None:
        def write(h: History) -> None:
            h.record_samples(samples)
            if thin:
                h.thin_samples(time.time())

        return core.record(write)

    if core.recording is not None and stall_seconds is None:
        stall_seconds = core.recording.stall_seconds  # a recording is judged as the watch that made it was
    predictions = {ref.name: prediction(core, ref) for ref in refs}
    keep = record and core.state_dir is not None
    return Session(core.sampler(), refs, predictions, recorder if keep else None, stall_seconds)


def recorded_samples(core: Core, ref: CacheRef, since: float) -> list[Sample]:
    """Samples of this cache recorded since ``since`` (a restarted Warm-up screen's past)."""
    found: list[Sample] = []
    core.record(lambda h: found.extend(h.samples(ref.name, since)))
    return found
