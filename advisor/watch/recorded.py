"""Samples recorded earlier, played back as if the caches were live: the demo's scenes
(recorded in the lab) and a user's own recording of a watch, one JSON object a line.

A :class:`RecordedSampler` answers as the live :class:`~advisor.watch.sampler.Sampler` does
(the caches, one found by name, a sample of each), so the Warm-up screen and the sessions run
unchanged. Each call to :meth:`RecordedSampler.sample` hands out the next recorded sample of
each cache, its time shifted so that the recording starts when the playback did: the counters
and the time between samples are the kernel's, so every rate, hit ratio and countdown is the
one the machine showed. After its last sample a recording holds still: the same counters, the
clock going on, as a cache nobody uses.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, get_args

from advisor.errors import Described, codes, next_step
from advisor.inputs import MiB, Unreadable, parse_json, read_text
from advisor.prediction import Prediction
from advisor.watch.sampler import CacheKind, CacheRef, Io, Sample, WatchError

codes({"samples-unreadable": "{path} is not a recording of cache samples: {why}"})

SCHEMA = "cachewise.watch/1"  # a watch's samples as JSON lines, one sample a line
DEMO_SCHEMA = "cachewise.demo/1"
MAX_SAMPLES = 200_000  # a day of one cache sampled every half second, with room
MAX_BYTES = 512 * MiB
MAX_GAP = 3600.0  # seconds between two samples of a cache: more is two recordings, not one


class RecordingError(Described):
    """A file of samples that cannot be played back; the message says what is wrong with it."""

    CODE = "samples-unreadable"


@dataclass(frozen=True)
class Recording:
    """One cache's samples in time order, with what the recommendation behind it predicted."""

    ref: CacheRef
    samples: tuple[Sample, ...]
    prediction: Prediction | None = None

    @property
    def interval(self) -> float:
        """The usual time between two samples (the median), in seconds."""
        gaps = [b.t - a.t for a, b in zip(self.samples, self.samples[1:], strict=False) if b.t > a.t]
        return min(max(statistics.median(gaps), 0.05), 60.0) if gaps else 1.0


def _ref_for(sample: Sample) -> CacheRef:
    """What a sample says of its cache: the name it was watched by, and for bcache the backing
    device it reported (a recording has no device-mapper table to read the rest from)."""
    name = sample.target
    device = name  # no kernel name is recorded: the cache's own name stands for it
    origin = sample.raw.get("backing_dev_name") if sample.kind == "bcache" else None
    return CacheRef(sample.kind, name, device, origin or None, None)


TEXTS = ("mode", "state", "policy", "trouble")  # a sample's words; every other field but t, target, kind, raw,
# missing (a list of words) and the Io counts is a count
IOS = ("device_io", "origin_io", "cache_io")
LATEST = 4e9  # seconds since the epoch: a time past 2096 is no recording's


def _count(value: object) -> bool:
    return value is None or (isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 63)


def _sample(data: object, where: str) -> Sample:
    if not isinstance(data, dict):
        raise ValueError(f"{where} is not a sample object")
    kind, t, target = data.get("kind"), data.get("t"), data.get("target")
    if kind not in get_args(CacheKind):
        raise ValueError(f"{where} has no known cache kind ({kind!r})")
    if not isinstance(t, int | float) or isinstance(t, bool) or not (math.isfinite(t) and 0 < t < LATEST):
        raise ValueError(f"{where} has no time")
    if not isinstance(target, str) or not target or len(target) > 200:
        raise ValueError(f"{where} names no cache")
    for name in TEXTS:
        if not (data.get(name) is None or isinstance(data.get(name), str)):
            raise ValueError(f"{where} has a {name} that is not a word ({data.get(name)!r})")
    missing = data.get("missing", [])
    if not (isinstance(missing, list) and all(isinstance(m, str) and 0 < len(m) <= 64 for m in missing)):
        raise ValueError(f"{where} has missing devices that are not names ({missing!r})")
    skip = (*TEXTS, *IOS, "t", "target", "kind", "raw", "missing")
    counts = [f for f in Sample.__dataclass_fields__ if f not in skip]
    for name in counts:
        if not _count(data.get(name)):
            raise ValueError(f"{where} has a {name} that is not a count ({data.get(name)!r})")
    for name in IOS:
        io = data.get(name)
        if io is not None and not (
            isinstance(io, dict) and set(io) == set(Io.__dataclass_fields__) and all(_count(v) for v in io.values())
        ):
            raise ValueError(f"{where} has {name} that is not the kernel's I/O counts")
    raw = data.get("raw", {})
    if not (isinstance(raw, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in raw.items())):
        raise ValueError(f"{where} has raw readings that are not words")
    try:
        return Sample.from_json(data)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where}: {exc}") from None


def _group(samples: Iterable[Sample], predictions: Mapping[str, Prediction | None]) -> list[Recording]:
    by_target: dict[str, list[Sample]] = {}
    for s in samples:
        by_target.setdefault(s.target, []).append(s)
    out = []
    for target, found in sorted(by_target.items()):
        found.sort(key=lambda s: s.t)
        gap = max((b.t - a.t for a, b in zip(found, found[1:], strict=False)), default=0.0)
        if gap > MAX_GAP:
            raise ValueError(
                f"the samples of {target} have a gap of {gap:.0f} s (a recording is sampled every few seconds)"
            )
        out.append(Recording(_ref_for(found[-1]), tuple(found), predictions.get(target)))
    return out


def parse_json_lines(text: str) -> list[Recording]:
    """The recordings in a watch's JSON lines (one per cache watched)."""
    samples = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = parse_json(line)
        except ValueError as exc:
            raise ValueError(f"line {number} is not JSON ({exc})") from None
        if not isinstance(item, dict) or item.get("schema") != SCHEMA:
            raise ValueError(f"line {number} is not a recorded sample (schema {SCHEMA})")
        samples.append(_sample(item.get("sample"), f"line {number}"))
        if len(samples) > MAX_SAMPLES:
            raise ValueError(f"it holds more than {MAX_SAMPLES} samples")
    if not samples:
        raise ValueError("it holds no sample")
    return _group(samples, {})


def parse_demo(data: object) -> tuple[dict[str, Any], list[Recording]]:
    """A demo scene (schema cachewise.demo/1): its description and raw snapshot, and its
    recordings with their predictions."""
    if not isinstance(data, dict) or data.get("schema") != DEMO_SCHEMA:
        raise ValueError(f"it is not a demo scene (schema {DEMO_SCHEMA})")
    recordings = data.get("recordings")
    if not isinstance(recordings, list) or not recordings:
        raise ValueError("it has no recording")
    samples: list[Sample] = []
    predictions: dict[str, Prediction | None] = {}
    for i, rec in enumerate(recordings):
        if not isinstance(rec, dict) or not isinstance(rec.get("samples"), list):
            raise ValueError(f"recording {i} has no samples")
        found = [_sample(s, f"recording {i}, sample {j}") for j, s in enumerate(rec["samples"])]
        if not found:
            raise ValueError(f"recording {i} has no samples")
        p = rec.get("prediction")
        predictions[found[0].target] = Prediction(**p) if isinstance(p, dict) else None
        samples.extend(found)
    return data, _group(samples, predictions)


def load_json_lines(path: Path) -> list[Recording]:
    """The recordings in a file of a watch's JSON lines."""
    try:
        return parse_json_lines(read_text(path, MAX_BYTES))
    except (OSError, Unreadable, ValueError) as exc:
        raise RecordingError(path=path, why=exc, next=[next_step("record-samples")]) from None


@dataclass
class RecordedSampler:
    """The caches of some recordings, played back one sample a call (see the module's doc)."""

    recordings: list[Recording]
    clock: Callable[[], float] = time.time
    stall_seconds: float | None = None  # the watch that recorded them called a stall after this long
    unread: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.start = self.clock()
        self._next: dict[str, int] = {}

    @property
    def interval(self) -> float:
        """How often to ask for a sample to play the recordings at their own pace."""
        return min(r.interval for r in self.recordings)

    def caches(self) -> list[CacheRef]:
        return sorted((r.ref for r in self.recordings), key=lambda ref: ref.name)

    def find(self, target: str) -> CacheRef:
        wanted = {target, target.removeprefix("/dev/")}
        for ref in self.caches():
            if ref.aliases() & wanted:
                return ref
        names = ", ".join(ref.name for ref in self.caches())
        raise WatchError(
            f"{target} is not among the recorded caches ({names}); nothing was read",
            next=[next_step("name-cache")],
        )

    def prediction(self, ref: CacheRef) -> Prediction | None:
        """What the recommendation behind the recorded cache predicted, its time shifted as the
        samples' are."""
        for rec in self.recordings:
            if rec.ref.name == ref.name and rec.prediction is not None:
                p = rec.prediction
                applied = None if p.applied_at is None else self.start + (p.applied_at - rec.samples[0].t)
                return replace(p, applied_at=applied)
        return None

    def ended(self, ref: CacheRef) -> bool:
        """The recording of this cache has been played to its end."""
        return any(r.ref.name == ref.name and self._next.get(r.ref.name, 0) >= len(r.samples) for r in self.recordings)

    def sample(self, refs: list[CacheRef]) -> list[Sample]:
        names = {ref.name for ref in refs}
        out = []
        for rec in self.recordings:
            if rec.ref.name not in names:
                continue
            i = self._next.get(rec.ref.name, 0)
            self._next[rec.ref.name] = i + 1
            first = rec.samples[0]
            if i < len(rec.samples):
                s = rec.samples[i]
                out.append(replace(s, t=self.start + (s.t - first.t)))
            else:  # held still after the end: the clock goes on, the counters do not
                last = rec.samples[-1]
                extra = (i - len(rec.samples) + 1) * rec.interval
                out.append(replace(last, t=self.start + (last.t - first.t) + extra))
        return out
