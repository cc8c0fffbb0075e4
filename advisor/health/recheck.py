"""The re-check after deployment: does a cache still fit its workload?

From the kernel's counters the history kept since the cache was made (watch and doctor record
them), the prediction it was made with, and, when there is one, a trace or capture of the same
days, the re-check says what to do: keep it, grow or shrink it, change its mode, remove it, or
that it cannot judge yet (with the range the counters allow). Each verdict gives its reasons
with their sources and names the plan that carries it out; the application core makes the plan.

What is compared is the read hit ratio: the kernel counts read and write hits apart, and a write
"hit" of a cache in writeback is no read served from the SSD.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np

from advisor.advice.lvmrules import LVM_EXTENT, round_up
from advisor.advice.model import Reason
from advisor.advice.profile import Profile, curve_knee
from advisor.backends import Backend
from advisor.prediction import Prediction
from advisor.units import duration, human_size
from advisor.watch.sampler import Sample

Action = Literal["keep", "grow", "shrink", "mode", "remove", "cant-judge"]

MIN_LOOKUPS = 500  # read lookups the counters must have seen before a hit ratio is judged
WIDE = 0.20  # a 95% interval wider than this: the counters cannot tell yet
AGREE = 0.10  # the trace's curve and the kernel agree within this at the cache's size
GAIN = 0.05  # a bigger cache must add at least this much read hit ratio to be worth growing
GROW_FACTOR = 1.25  # and be at least this much bigger
SHRINK_FACTOR = 0.5  # a cache this much smaller that loses under SHRINK_LOSS is worth shrinking to
SHRINK_LOSS = 0.02
USELESS = 0.05  # a read hit ratio under this at the largest size the SSD holds: no cache helps
FEW_WRITES = 0.05  # a writeback cache whose workload writes less than this share gains nothing by it
FULL = 0.95  # used over capacity from here on: the cache is full


@dataclass(frozen=True)
class Observed:
    """The read hit ratio the kernel counted over a stretch of the cache's life, with its 95%
    interval (Wilson's), and how full and dirty the cache was at its end."""

    since: float
    until: float
    read_lookups: int
    read_hit_ratio: float
    low: float
    high: float
    fill: float | None
    dirty_bytes: int | None
    reads_only: bool = True  # False: the kernel counts no reads apart (bcache), every lookup is taken


@dataclass(frozen=True)
class Situation:
    """What the re-check is given about one cache."""

    target: str
    backend: Backend
    capacity_bytes: int  # the cache's size now
    mode: str | None
    samples: Sequence[Sample]  # the kernel's counters over time, oldest first
    made_at: float | None = None
    prediction: Prediction | None = None
    profile: Profile | None = None  # from a trace or capture of the same days
    room_bytes: int | None = None  # the largest cache its SSD(s) can hold (None: not known)
    now: float | None = None


@dataclass(frozen=True)
class Verdict:
    target: str
    backend: str
    action: Action
    summary: str  # one sentence
    reasons: tuple[Reason, ...]
    capacity_bytes: int
    mode: str | None
    observed: Observed | None = None
    predicted: float | None = None  # what the cache was made with
    curve_now: float | None = None  # the trace's read hit ratio at the cache's size
    size_bytes: int | None = None  # the size to grow or shrink to
    curve_at_size: float | None = None
    new_mode: str | None = None
    range: tuple[float, float] | None = None  # can't judge yet: where the read hit ratio lies
    plan: str | None = None  # the plan kind that carries it out, and its options
    options: dict[str, Any] = field(default_factory=dict)
    how: str = ""  # what to do when cachewise makes no plan for it

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["reasons"] = [{"text": r.text, "findings": list(r.findings)} for r in self.reasons]
        data["range"] = list(self.range) if self.range else None
        return data


def cited(reason: Reason) -> str:
    """A reason with its findings, as both front ends show it: "text [L-SIZE-4, C-FILL-1]"."""
    return reason.text + (f" [{', '.join(reason.findings)}]" if reason.findings else "")


def wilson(hits: int, total: int, z: float = 1.96) -> tuple[float, float]:
    """The 95% interval of a ratio of ``hits`` in ``total`` (Wilson's score interval)."""
    if total <= 0:
        return 0.0, 1.0
    p = hits / total
    d = 1 + z * z / total
    mid = (p + z * z / (2 * total)) / d
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / d
    return max(0.0, mid - half), min(1.0, mid + half)


def _counts(s: Sample, reads: bool) -> tuple[int, int] | None:
    if reads:
        return (s.read_hits, s.read_misses) if s.read_hits is not None and s.read_misses is not None else None
    return (s.hits, s.misses) if s.hits is not None and s.misses is not None else None


def observed(samples: Sequence[Sample], since: float = 0.0) -> Observed | None:
    """The read hit ratio from the kernel's cumulative counters, from the last sample at or before
    ``since`` (the baseline) to the newest: the sum of each step's growth, a step whose counters
    went back (a cache made again, a reboot) counted from zero. Samples of another cache of the
    same name (another kind or size than the newest) are left out. bcache counts no reads apart:
    its lookups of every kind are taken (``reads_only`` False). None without two samples."""
    ordered = sorted(samples, key=lambda s: s.t)
    if not ordered:
        return None
    last = ordered[-1]
    same = [x for x in ordered if x.kind == last.kind and x.capacity_bytes == last.capacity_bytes]
    reads = _counts(last, True) is not None
    rows = [(x, c) for x in same if (c := _counts(x, reads)) is not None]
    base = max((i for i, (x, _) in enumerate(rows) if x.t <= since), default=0)
    rows = rows[base:]
    if len(rows) < 2:
        return None
    hits = misses = 0
    for (_, (h0, m0)), (_, (h1, m1)) in zip(rows, rows[1:], strict=False):
        reset = h1 < h0 or m1 < m0
        hits += h1 if reset else h1 - h0
        misses += m1 if reset else m1 - m0
    total = hits + misses
    low, high = wilson(hits, total)
    fill = last.used_bytes / last.capacity_bytes if last.used_bytes is not None and last.capacity_bytes else None
    return Observed(
        rows[0][0].t, last.t, total, hits / total if total else 0.0, low, high, fill, last.dirty_bytes, reads
    )


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def recheck(s: Situation) -> Verdict:
    """What to do with the cache, and why."""
    now = s.now if s.now is not None else (s.samples[-1].t if s.samples else 0.0)
    predicted = s.prediction.hit_ratio if s.prediction else None
    # Judged once warm: from the prediction's 95% warm-up time after the cache was made (the
    # last sample before it is the baseline); the samples are the cache's since it was made.
    warm_from = (s.made_at or 0.0) + ((s.prediction.seconds_95 or 0.0) if s.prediction else 0.0)
    warming = s.made_at is not None and warm_from > now
    obs = observed([x for x in s.samples if x.t >= (s.made_at or 0.0)], 0.0 if warming else warm_from)
    base = {
        "target": s.target,
        "backend": s.backend.id,
        "capacity_bytes": s.capacity_bytes,
        "mode": s.mode,
        "observed": obs,
        "predicted": predicted,
    }
    reasons: list[Reason] = []
    if obs is not None:
        reasons.append(
            Reason(
                f"The kernel counted {obs.read_lookups:,} {'read lookups' if obs.reads_only else 'lookups'} "
                f"over {duration(obs.until - obs.since)}"
                + ("" if obs.reads_only else " (it counts reads and writes together)")
                + ": "
                f"{_pct(obs.read_hit_ratio)} were served by the cache (95% interval "
                f"{100 * obs.low:.1f}-{100 * obs.high:.1f}%)"
                + (f", predicted {_pct(predicted)}" if predicted is not None else "")
                + (f"; the cache is {_pct(obs.fill)} full" if obs.fill is not None else "")
                + "."
            )
        )
    if warming:
        reasons.append(
            Reason(
                f"It is still warming up: 95% of its hot data should be in within {duration(warm_from - now)}.",
                ("C-FILL-1",),
            )
        )
        return _cant_judge(s, obs, predicted, reasons, base, "Can't judge yet: the cache is still warming up.")
    prof = s.profile
    if prof is None:
        return _without_trace(s, obs, predicted, reasons, base)
    return _with_trace(s, prof, obs, predicted, reasons, base)


def _cant_judge(
    s: Situation, obs: Observed | None, predicted: float | None, reasons: list[Reason], base: dict[str, Any], why: str
) -> Verdict:
    rng = (obs.low, obs.high) if obs is not None else None
    text = why + (f" The read hit ratio lies between {_pct(rng[0])} and {_pct(rng[1])}." if rng else "")
    return Verdict(
        **base,
        action="cant-judge",
        summary=text,
        reasons=tuple(reasons),
        range=rng,
        how=f"Let it run under its usual workload, then re-check; a capture of the same days (cachewise capture "
        f"start {s.target}) lets the re-check size it.",
    )


def _without_trace(
    s: Situation, obs: Observed | None, predicted: float | None, reasons: list[Reason], base: dict[str, Any]
) -> Verdict:
    if obs is None or obs.read_lookups < MIN_LOOKUPS or obs.high - obs.low > WIDE:
        seen = f"{obs.read_lookups:,}" if obs is not None else "no"
        return _cant_judge(s, obs, predicted, reasons, base, f"Can't judge yet: the kernel has counted {seen} reads.")
    hot = s.prediction.hot_bytes if s.prediction else None
    full = obs.fill is not None and obs.fill >= FULL
    short = predicted is not None and obs.high < predicted - AGREE
    if short and full and hot and hot > s.capacity_bytes * GROW_FACTOR:
        size = _fit(s, int(hot * 1.1))
        if size > s.capacity_bytes * GROW_FACTOR / 1.1:
            reasons.append(
                Reason(
                    f"It is full and serves fewer reads than predicted; the hot data it was sized for was "
                    f"{human_size(hot)}, more than its {human_size(s.capacity_bytes)}.",
                    ("L-SIZE-4", "C-FILL-1"),
                )
            )
            return _resize(s, "grow", size, None, obs, predicted, None, reasons, base)
    if short:
        reasons.append(
            Reason(
                "It serves fewer reads than predicted: the workload may have changed. A capture of a few days "
                "(cachewise capture start) shows whether a bigger cache would help.",
                ("L-SIZE-4",),
            )
        )
        return _cant_judge(
            s, obs, predicted, reasons, base, "Can't judge yet: the counters alone cannot tell what size would fit."
        )
    return _mode_or_keep(s, None, obs, predicted, None, reasons, base)


def _fit(s: Situation, size: int) -> int:
    """``size`` in whole LVM extents, or the most the SSD holds."""
    size = round_up(size, LVM_EXTENT)
    return min(size, s.room_bytes) if s.room_bytes else size


def _hit(s: Situation, prof: Profile, size: float) -> float:
    """The trace's read hit ratio at ``size``: a full cache's, or, when first touches are most of
    the trace (it cannot show that the data comes back), as traced, every first touch a miss."""
    return prof.hit_of(s.backend.id, size, reads=True, raw=prof.too_short_for(s.backend.id))


def _with_trace(
    s: Situation,
    prof: Profile,
    obs: Observed | None,
    predicted: float | None,
    reasons: list[Reason],
    base: dict[str, Any],
) -> Verdict:
    b = s.backend.id
    now_hit = _hit(s, prof, s.capacity_bytes)
    base = {**base, "curve_now": now_hit}
    most = s.room_bytes or max(s.capacity_bytes, int(prof.footprint_bytes))
    best_hit = _hit(s, prof, most)
    sizes, _ = prof.curve_of(b)
    knee = curve_knee(*prof.curve_of(b)) if len(sizes) else 0
    wanted = _fit(s, max(knee, prof.hot_bytes, 1))
    wanted_hit = _hit(s, prof, wanted)
    text = (
        f"The trace of the same days predicts {_pct(now_hit)} of reads served at the cache's "
        f"{human_size(s.capacity_bytes)}, {_pct(wanted_hit)} at {human_size(wanted)} "
        f"(its hot data {human_size(prof.hot_bytes)}), {_pct(best_hit)} at the most the SSD holds "
        f"({human_size(most)})."
    )
    reasons.append(Reason(text, ("L-SIZE-4", "L-SIZE-1")))
    counted = obs is not None and obs.read_lookups >= MIN_LOOKUPS
    if not len(sizes) or prof.too_short_for(b):
        # The trace cannot show whether the data comes back. Only when the kernel, over enough
        # reads, also saw almost none come back is that evidence; else the counters judge alone.
        if obs is not None and counted and obs.read_hit_ratio < USELESS and best_hit < USELESS:
            reasons.append(
                Reason(
                    f"Most of the trace's reads are first touches, and the kernel served under {_pct(USELESS)} of "
                    f"reads: the data read does not come back, so no size would serve many (at most "
                    f"{_pct(best_hit)} at {human_size(most)}).",
                    ("L-SIZE-4", "T-SIZE-3"),
                )
            )
            return _remove(
                s, base, reasons, "Remove it: the data it is given is read once, so it serves almost no reads."
            )
        reasons.append(
            Reason(
                "Most of the trace's reads are first touches: it cannot show whether the data comes back, so it "
                "sizes nothing; a longer capture of the cache's usual days can.",
                ("L-SIZE-4",),
            )
        )
        return _without_trace(s, obs, predicted, reasons, {**base, "curve_now": None})
    if obs is not None and counted:
        if abs(obs.read_hit_ratio - now_hit) > AGREE:
            reasons.append(
                Reason(
                    f"The trace's curve ({_pct(now_hit)}) and the kernel ({_pct(obs.read_hit_ratio)}) disagree by "
                    f"more than {_pct(AGREE)} at the cache's own size: a cache still warming, or a trace of other "
                    "days. Neither sizes it until they agree.",
                    ("L-SIZE-4",),
                )
            )
            return _cant_judge(
                s, obs, predicted, reasons, base, "Can't judge yet: the trace and the kernel's counters disagree."
            )
        reasons.append(Reason(f"The trace's curve and the kernel agree within {_pct(AGREE)} at this size."))
    elif obs is None or not counted:
        seen = f"{obs.read_lookups:,}" if obs is not None else "no"
        reasons.append(
            Reason(f"The kernel has counted {seen} reads since the cache warmed up: the trace alone sizes it.")
        )
    if best_hit < USELESS and obs is not None and counted and obs.read_hit_ratio < 2 * USELESS:
        reasons.append(
            Reason(
                f"Even a cache of {human_size(most)} would serve under {_pct(USELESS)} of reads: the data read does "
                "not come back often enough to be worth caching.",
                ("L-SIZE-4", "T-SIZE-3"),
            )
        )
        return _remove(
            s,
            base,
            reasons,
            f"Remove it: it serves few reads and no size would serve many more ({_pct(best_hit)} at most).",
        )
    if wanted > s.capacity_bytes * GROW_FACTOR and wanted_hit - now_hit >= GAIN:
        return _resize(s, "grow", wanted, wanted_hit, obs, predicted, now_hit, reasons, base)
    smaller = _smallest_as_good(s, prof, now_hit)
    if smaller is not None and smaller < s.capacity_bytes * SHRINK_FACTOR:
        smaller_hit = _hit(s, prof, smaller)
        reasons.append(
            Reason(
                f"A cache of {human_size(smaller)} serves as many reads (within {_pct(SHRINK_LOSS)}); the rest of "
                "the SSD can serve something else.",
                ("L-SIZE-4",),
            )
        )
        return _resize(s, "shrink", smaller, smaller_hit, obs, predicted, now_hit, reasons, base)
    return _mode_or_keep(s, prof, obs, predicted, now_hit, reasons, base)


def _remove(s: Situation, base: dict[str, Any], reasons: list[Reason], summary: str) -> Verdict:
    return Verdict(
        **base, action="remove", summary=summary, reasons=tuple(reasons), plan="remove", options={"device": s.target}
    )


def _smallest_as_good(s: Situation, prof: Profile, now_hit: float) -> int | None:
    """The smallest size (in LVM extents of 4 MiB, with a tenth to spare) whose predicted read hit
    ratio is within SHRINK_LOSS of the cache's own, searched on a geometric grid below it."""
    for size in np.geomspace(LVM_EXTENT, max(s.capacity_bytes, LVM_EXTENT), 96):
        if _hit(s, prof, float(size)) >= now_hit - SHRINK_LOSS:
            spared = round_up(size * 1.1, LVM_EXTENT)
            return spared if spared < s.capacity_bytes else None
    return None


def _resize(
    s: Situation,
    action: Action,
    size: int,
    size_hit: float | None,
    obs: Observed | None,
    predicted: float | None,
    now_hit: float | None,
    reasons: list[Reason],
    base: dict[str, Any],
) -> Verdict:
    gain = (
        f", {_pct(size_hit)} of reads served instead of {_pct(now_hit)}"
        if size_hit is not None and now_hit is not None
        else ""
    )
    plan, options, how = None, {}, ""
    if s.backend.id == "lvmcache":
        plan, options = "lvmcache-resize", {"lv": s.target, "size": size}
        reasons.append(
            Reason(
                "lvm2 cannot resize a cache pool in place: the plan takes the cache off (dirty blocks written back "
                "first) and attaches one of the new size on the same SSD, which warms up again.",
                ("M-SAME-VG-1", "D-WARM-1"),
            )
        )
    else:
        how = (
            f"cachewise makes no resize plan for {s.backend.label}: remove the cache ({s.backend.remover}) and make "
            f"it again at {human_size(size)}."
        )
    return Verdict(
        **base,
        action=action,
        summary=f"{action.capitalize()} it to {human_size(size)}{gain}.",
        reasons=tuple(reasons),
        size_bytes=size,
        curve_at_size=size_hit,
        plan=plan,
        options=options,
        how=how,
    )


def _mode_or_keep(
    s: Situation,
    prof: Profile | None,
    obs: Observed | None,
    predicted: float | None,
    now_hit: float | None,
    reasons: list[Reason],
    base: dict[str, Any],
) -> Verdict:
    writes = 1.0 - prof.read_share if prof is not None else None
    if s.mode == "writeback" and writes is not None and writes < FEW_WRITES and "writethrough" in s.backend.modes:
        reasons.append(
            Reason(
                f"It is in writeback, but only {_pct(writes)} of the requests write: writeback gains them little and "
                "loses them with the SSD; writethrough serves the same reads.",
                ("T-MODE-1", "T-MODE-2"),
            )
        )
        mode_plan = "lvmcache-mode" if s.backend.id == "lvmcache" else None
        return Verdict(
            **base,
            action="mode",
            summary="Switch it to writethrough: it sees almost no writes.",
            reasons=tuple(reasons),
            new_mode="writethrough",
            plan=mode_plan,
            options={"lv": s.target, "mode": "writethrough"} if mode_plan == "lvmcache-mode" else {},
            how=""
            if mode_plan
            else f"echo writethrough > /sys/block/{s.target.removeprefix('/dev/')}/bcache/cache_mode",
        )
    held = (
        f", as predicted ({_pct(predicted)})" if predicted is not None and obs and obs.high >= predicted - AGREE else ""
    )
    return Verdict(
        **base,
        action="keep",
        summary=f"Keep it: its size fits the workload{held}.",
        reasons=tuple(reasons),
    )
