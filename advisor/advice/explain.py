"""The explanation: a :class:`~advisor.advice.choice.Decision` worded as a
:class:`~advisor.advice.model.Recommendation`: the summary, each reason with the findings it
rests on, the warnings, the alternatives with their trade-offs, the curves, and the next steps
as actions (each front end words them: no command or flag is named here)."""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import Any

import numpy as np

from advisor.advice.choice import (
    HOT_SPOT_SHARE,
    Blocker,
    Candidate,
    Decision,
    Situation,
    Speedup,
    drain_rate,
    overhead,
    version_tuple,
    write_need,
)
from advisor.advice.config import CacheConfig
from advisor.advice.lvmrules import MAX_CHUNKS, lvm_chunk_size
from advisor.advice.model import CurveView, DeviceFacts, Option, Reason, Recommendation, Uncertain
from advisor.advice.profile import HOT_SHARE, KNEE_SHARE, Profile, curve_knee
from advisor.advice.traits import DM_CACHE_CHUNK, LVMCACHE_TRAITS, TRAITS, Traits, traits
from advisor.advice.workloads import WORKLOADS
from advisor.backends import BackendId as Backend
from advisor.backends import backend as backend_of
from advisor.disks.gate import WRITECACHE_HIGH_WATERMARK, writecache_memory
from advisor.errors import Next, next_step
from advisor.units import KiB, cache_size, duration, latency

# Verdicts the devices decide, whatever the workload: a trace would not change them.
DEVICES_DECIDE = ("gate", "already-flash", "fast-not-fast", "fits-on-ssd")

# The findings a refusal of the safety gate rests on, by its code.
GATE_FINDINGS: dict[str, tuple[str, ...]] = {
    "owned-by-other-system": ("G-OWN-1",),
    "stacked-on-cache": ("M-LVM-1",),
    "bcache-part": ("G-BC-1",),
    "snapshot-origin": ("M-LVM-1",),
    "md-member": ("M-LVM-1",),
    "lvm-pv": ("M-LVM-1",),
    "thin-lv": ("M-THIN-1",),
    "thin-pool": ("M-THIN-1",),
    "lv-snapshot": ("M-LVM-1",),
    "lv-segtype": ("M-LVM-1",),
    "lv-hidden": ("M-LVM-1",),
    "not-on-lvm": ("T-LVM-2",),
    "not-an-lv-yet": ("M-LVM-1",),
    "bcache-needs-block": ("G-BC-1",),
    "bcache-in-use": ("G-BC-1",),
    "bcache-cache-too-small": ("G-BC-1",),
    "writecache-memory": ("K-WC-1",),
}


def explain(d: Decision) -> Recommendation:
    s = d.situation
    inp, prof = s.inp, s.prof
    reasons: list[Reason] = list(prof.reasons)
    warnings = [_unprobed(x) for x in (inp.slow, *inp.fast) if x.class_source != "probe"]
    next_steps: list[Next] = [
        next_step("probe-device", device=x.path) for x in (inp.slow, *inp.fast) if x.class_source != "probe"
    ]
    if prof.source == "model" and d.cause not in DEVICES_DECIDE:
        next_steps.insert(0, next_step("record-trace"))
    if d.judged_by_chunks:
        warnings.append(
            Reason(
                f"At 4 KiB, {100 * prof.cold_share:.0f}% of the trace's accesses are first touches; at "
                f"dm-cache's {(prof.chunk_bytes or 0) // KiB} KiB chunks only {100 * prof.chunk_cold_share:.0f}%: "
                "the chunk curve dm-cache's prediction follows is judged from chunks that came back, bcache's "
                "4 KiB one could not be.",
                ("L-SIZE-4",),
            )
        )
    summary, more = _verdict(d)
    reasons += more
    config = None
    if d.chosen is not None:
        config = worded(d.chosen)
        warnings += _warnings(s, config)
    if d.verdict == "cant-judge":
        next_steps.insert(0, next_step("record-longer"))
    runner_ups = [Option("cache", worded(c), _option_summary(c), _tradeoff(c), c.speedup.findings) for c in d.offered]
    if d.verdict == "cache":
        runner_ups.append(
            Option(
                "dont-cache",
                None,
                "no cache: HDD performance, nothing to fail or wear",
                "gives up the speed-up",
                ("T-MODE-2",),
            )
        )
    return Recommendation(
        d.verdict,
        summary,
        config,
        tuple(reasons),
        tuple(warnings),
        tuple(runner_ups),
        _curve(s),
        _inputs(s),
        backend_curves=_backend_curves(d),
        gate=tuple(b.to_json() for x in (inp.slow, *inp.fast) for b in x.barriers),
        cause=d.cause,
        uncertain=d.uncertain,
        next=tuple(next_steps),
    )


def worded(c: Candidate) -> CacheConfig:
    """The candidate's configuration with the basis of its speed-up in words."""
    return replace(c.config, speedup_basis=basis(c.speedup))


def basis(sp: Speedup) -> str:
    """The basis of a speed-up, as the reasons and the alternatives give it."""
    label = ""
    if sp.workload is not None:
        label = WORKLOADS[sp.workload].label + ("" if sp.fs == "any" else f" on {sp.fs}")
        if sp.measured_mode:
            label += f" in {sp.measured_mode}, whose disk work this writeback repeats"
    if sp.basis == "streams":
        return "sequential streams: the disk streams them at 175 MB/s, cached or not, and bcache bypasses them"
    if sp.basis == "thesis":
        return f"measured in the thesis for {label}, on an array like this one"
    if sp.basis == "thesis-share":
        return (
            f"the thesis's {sp.measured:g}x for {label}, on an array like this one, for the {sp.held:.0%} of the "
            "hot data's hits this cache is predicted to get"
        )
    if sp.basis == "thesis-cap":
        return (
            f"the thesis measured {sp.measured:g}x for {label} (the latency model, {sp.model:.2g}x, cannot see "
            "what this workload costs besides its reads and writes)"
        )
    text = "latency model from the predicted hit ratio and the devices' latency"
    if sp.bypassed > 0:
        text += f", the {sp.bypassed:.0%} of requests in streams the cache lets through at the disk's"
    if sp.writes_at_disk:
        text += "; dm-cache writeback still writes every dirty chunk to the disk, so writes count at disk speed"
    if sp.absorbed < 1.0:
        text += (
            f"; the trace writes {sp.writes_per_s:.0f} times a second and the disk takes back about "
            f"{sp.disk_writes_per_s:.0f}, so only {sp.absorbed:.0%} of the writes stay at the SSD's speed once the "
            "cache holds all the dirty data it may"
        )
    if sp.basis == "thesis-elsewhere":
        text += (
            f"; the thesis's {sp.measured:g}x for {label} was measured on 8 disks in RAID 10 behind a controller "
            "cache, not on hardware like this"
        )
    return text


def blocker(b: Blocker, c: Candidate) -> str:
    """Why a candidate cannot be the recommendation, in a clause."""
    t = c.traits
    if b.barrier is not None:
        return b.barrier.what
    if b.code == "writeback-risk":
        if b.mirror_pool:
            return (
                f"writeback needs a redundant fast side, and {t.backend.label} cannot mirror the two SSDs itself (an "
                "md RAID1 under it would; cachewise never creates one)"
            )
        return "writeback needs mirrored SSDs or an explicit acceptance of the risk"
    if b.code == "needs-reformat":
        return f"{t.backend.label} needs a reformat of the slow device (move the data off and back)"
    if b.code == "too-old":
        needs = " and ".join(f"{name} {least}" for name, least in t.needs)
        return f"{t.backend.family.removeprefix('dm-')} needs {needs}"
    if b.code == "mostly-reads":
        return f"{t.backend.family.removeprefix('dm-')} caches only writes, and this workload is mostly reads"
    if b.code == "not-measured":
        measured = " and ".join(x.id for x in TRAITS if x.backend.caches_reads)
        return f"the thesis measured {measured} for this workload, not {t.backend.family}"
    if b.code == "tool-missing":
        return f"{b.tool.replace('_', '-')} is not installed"
    raise ValueError(f"no words for the blocker {b.code!r}")


def _tradeoff(c: Candidate) -> str:
    bits = [blocker(b, c) for b in c.blockers]
    if c.traits.living_with and not c.config.needs_reformat:
        bits.append(c.traits.living_with)
    return "; ".join(bits)


def _option_summary(c: Candidate) -> str:
    cfg = worded(c)
    hit = f", predicted hit ratio {cfg.predicted_hit_ratio:.0%}" if cfg.predicted_hit_ratio is not None else ""
    return f"{cfg.label}: about {cfg.expected_speedup:g}x ({cfg.speedup_basis}){hit}"


def _unprobed(x: DeviceFacts) -> Reason:
    return Reason(
        f"{x.path} was not probed; its class ({x.device_class}) comes from the {x.class_source}, which USB bridges "
        "and RAID controllers get wrong. A probe (a few seconds of read-only fio) measures it.",
        ("T-DEV-1",),
    )


def _verdict(d: Decision) -> tuple[str, list[Reason]]:
    """The summary and the reasons of the verdict."""
    s = d.situation
    inp, prof, slow = s.inp, s.prof, s.inp.slow
    if d.cause == "gate":
        barred = d.barred
        return f"Don't cache here: {barred[0].what}.", [
            Reason(f"{b.what}.", GATE_FINDINGS.get(b.code, ("M-LVM-1",))) for b in barred
        ]
    if d.cause == "already-flash":
        return f"Don't cache: {slow.path} is already flash.", [
            Reason(f"{slow.path} {_measured(slow)}; an SSD cache in front of it gains little.", ("T-DEV-1",))
        ]
    if d.cause == "fast-not-fast" and d.not_fast is not None:
        f = d.not_fast
        return f"Don't cache: {f.path} is not a fast device.", [
            Reason(f"{f.path} {_measured(f)}, not much faster than {slow.path} ({_measured(slow)}).", ("T-DEV-1",))
        ]
    if d.cause == "fits-on-ssd":
        out = [
            Reason(
                f"The data ({cache_size(s.data_bytes)}) fits in {cache_size(s.room)} of SSD: put it there instead of "
                "caching it. Every read and write then runs at SSD speed, with no warm-up and no cache to fail.",
                ("T-SIZE-3", "T-DEV-2"),
            )
        ]
        if len(inp.fast) >= 2 and not s.redundant:
            out.append(
                Reason("Mirror the two SSDs (md RAID1 or an LVM raid1 LV) to keep the data redundant.", ("T-MODE-1",))
            )
        return f"Don't cache: move the data ({cache_size(s.data_bytes)}) onto the SSD.", out
    if d.cause == "very-large-datasets":
        return "Don't cache: very large datasets gain little from an SSD cache.", [
            Reason(
                "Very large datasets were found not worth SSD caching: their hot part does not fit an "
                "affordable SSD, and the cached setups studied held single to double digit TB. A trace "
                "of your workload would show whether it has hot spots after all.",
                ("T-SIZE-3", "L-SIZE-4"),
            )
        ]
    if d.cause == "sequential":
        return "Don't cache: the workload is sequential streams.", [
            Reason(
                f"{100 * prof.sequential_share:.0f}% of the I/O is sequential: hard disks stream well "
                "(175 MB/s for 7200 rpm) and bcache bypasses such streams by design.",
                ("T-SEQ-1", "T-DEV-1"),
            )
        ]
    if d.cause == "write-once":
        return "Don't cache: the data is written once and not read back.", [
            Reason(
                f"{100 * prof.cold_share:.0f}% of the trace's accesses are first touches and only "
                f"{100 * prof.read_share:.0f}% are reads: data written once and not read back (a backup target, "
                "a log) gains nothing from a cache, which would only wear the SSD.",
                ("L-SIZE-4", "T-DEV-3"),
            )
        ]
    if d.cause == "first-touches" and d.uncertain is not None:
        return (
            "Can't judge yet: most of the trace is first touches, so it cannot show whether the data comes back.",
            [Reason(uncertain_text(d.uncertain), ("L-SIZE-4",))],
        )
    if d.cause == "ssd-too-small":
        need = prof.hot_bytes
        return "Don't cache with this SSD: it is too small for the hot data.", [
            Reason(
                f"The hot data ({cache_size(need)}, serving {100 * HOT_SHARE:.0f}% of the I/O) is "
                f"{need / max(s.room, 1):.0f}x the room this SSD gives a cache ({cache_size(s.room)}): the largest "
                f"cache would serve only {d.best_hit:.1%} of reads. An SSD of {cache_size(need)} or more would "
                "hold it.",
                ("L-SIZE-2", "L-SIZE-3"),
            )
        ]
    if d.cause == "no-hot-spots":
        return "Don't cache: the workload has too few hot spots.", [
            Reason(
                f"Even the largest cache this SSD allows would serve only {d.best_hit:.0%} of reads, and "
                f"{100 * HOT_SHARE:.0f}% of the I/O spreads over {cache_size(prof.hot_bytes)} of the "
                f"{cache_size(s.data_bytes)} of data (hot spots would be {100 * HOT_SPOT_SHARE:.0f}% of it or "
                "less): the workload has no hot spots a cache can hold.",
                ("L-SIZE-4", "L-SIZE-3"),
            )
        ]
    if d.cause in ("gains-too-little", "blocked") and d.best_blocked is not None:
        return "Don't cache: no cache that can be set up here is expected to help this workload.", _too_little(d)
    assert d.chosen is not None
    chosen = worded(d.chosen)
    out = [
        Reason(
            f"{chosen.label} is expected to give about {chosen.expected_speedup:g}x ({chosen.speedup_basis}).",
            d.chosen.speedup.findings,
        )
    ]
    out += _backend_reasons(s, chosen)
    out += _mode_reasons(s, chosen)
    out += _size_reasons(s, chosen)
    if d.chosen.held_from:
        prof, wanted = s.prof, d.chosen.held_from
        finer, coarser = prof.chunk_bytes or 0, prof.curves_for(chosen.backend, wanted).chunk_bytes
        out.append(
            Reason(
                f"Held to {cache_size(chosen.size_bytes)}, the largest pool lvm2 gives {finer // KiB} KiB chunks: "
                f"the curve asked for {cache_size(wanted)}, where lvm2 would give the pool "
                f"{lvm_chunk_size(wanted) // KiB} KiB chunks, and the trace's curve at {coarser // KiB} KiB chunks "
                f"serves {prof.hit_of(chosen.backend, wanted, reads=True):.0%} of reads there against "
                f"{chosen.predicted_hit_ratio:.0%} here.",
                ("M-CHUNK-1",),
            )
        )
    summary = (
        f"Cache with {chosen.label}, {cache_size(chosen.size_bytes)} on the SSD"
        + (f", predicted hit ratio {chosen.predicted_hit_ratio:.0%}" if chosen.predicted_hit_ratio is not None else "")
        + "."
    )
    return summary, out


def _too_little(d: Decision) -> list[Reason]:
    s, out = d.situation, list[Reason]()
    best = d.best_blocked
    assert best is not None
    if d.top is not None:
        top = worded(d.top)
        out.append(
            Reason(
                f"The best cache possible as things stand, {top.label}, is expected to give "
                f"{top.expected_speedup:g}x ({top.speedup_basis}): not worth a cache's risk and complexity.",
                d.top.speedup.findings,
            )
        )
    why = "; ".join(blocker(b, best) for b in best.blockers) or "it gains too little"
    cfg = worded(best)
    out.append(
        Reason(
            f"{cfg.label} would give about {cfg.expected_speedup:g}x ({cfg.speedup_basis}), but {why}.",
            best.speedup.findings,
        )
    )
    if s.prof.kind == "very-small-files" and s.fs == "ext4":
        out.append(
            Reason(
                "For creating many small files, moving from ext4 to XFS gave 4 to 7x whatever the cache.",
                ("T-SMALL-1",),
            )
        )
    # What moving the data would open up (the lvm caches, once it is in an LV).
    out += [Reason(f"{b.what}.", GATE_FINDINGS.get(b.code, ("M-LVM-1",))) for b in d.moves]
    return out


def _curve(s: Situation) -> CurveView:
    prof = s.prof
    return CurveView(
        prof.source,
        [int(x) for x in prof.sizes_bytes],
        [round(float(h), 6) for h in prof.hits],
        prof.knee(),
        round(prof.achievable, 6),
        prof.hot_bytes,
        prof.curve_mode,
        prof.sample_rate,
    )


def _inputs(s: Situation) -> dict[str, object]:
    inp, slow = s.inp, s.inp.slow
    return {
        "slow": slow.path,
        "fast": [f.path for f in inp.fast],
        "filesystem": s.fs,
        "data_bytes": s.data_bytes,
        "workload": inp.workload or ("measured" if s.prof.source == "trace" else "zipf"),
        "fast_mirrored": inp.fast_mirrored,
        "fast_redundant": s.redundant,
        "accept_writeback_risk": inp.accept_writeback_risk,
        "reformat_ok": inp.reformat_ok,
        "fast_usable_bytes": s.fast_bytes,
        "versions": asdict(inp.versions),
        "device_classes": {x.path: f"{x.device_class} ({x.class_source})" for x in (slow, *inp.fast)},
    }


def _measured(x: DeviceFacts) -> str:
    """How a device's class is known: measured by a probe, or only from the kernel's flag (with
    the typical latency the model then assumes)."""
    if x.class_source == "probe":
        return f"measured as {x.device_class.upper()} ({latency(x.latency)} median read)"
    return (
        f"is {x.device_class.upper()} by the {x.class_source}, not measured "
        f"(a typical {x.device_class.upper()} reads in {latency(x.latency)})"
    )


def uncertain_text(u: Uncertain) -> str:
    label = f"{backend_of(u.backend).label} {u.mode}"
    hit = f"from {u.hit_ratio[0]:.0%} to {u.hit_ratio[1]:.0%} of reads, " if u.hit_ratio is not None else ""
    return (
        f"{100 * u.first_touch_share:.0f}% of the trace's accesses are first touches: it cannot show whether those "
        f"blocks come back. {label} of {cache_size(u.size_bytes[0])} to {cache_size(u.size_bytes[1])} would serve "
        f"{hit}about {u.speedup[0]:g}x to {u.speedup[1]:g}x, depending on that. Record {u.record}, and ask again."
    )


def _backend_reasons(s: Situation, cfg: CacheConfig) -> list[Reason]:
    out, slow, t = [], s.inp.slow, traits(cfg.backend)
    if t.on_lvm:
        if slow.is_lv:
            out.append(
                Reason(
                    f"{slow.path} is already an LV in VG {slow.vg}: lvmcache attaches in place, no "
                    "reformat, and detaches the same way.",
                    ("T-LVM-2", "M-SAME-VG-1"),
                )
            )
        else:
            out.append(
                Reason("lvmcache needs the data on an LV; the SSD joins the same VG.", ("T-LVM-2", "M-SAME-VG-1"))
            )
        if not t.backend.caches_reads:
            out.append(Reason("The workload is mostly writes: dm-writecache absorbs them on the SSD.", ("M-WC-1",)))
    elif cfg.needs_reformat:
        out.append(
            Reason(
                f"bcache needs its own superblock on {slow.path}: back the data up, make-bcache, "
                "restore (you allowed a reformat).",
                ("T-LVM-2",),
            )
        )
    else:
        out.append(
            Reason(
                f"{slow.path} holds no data, so bcache can be set up without moving anything; it was "
                "the fastest cache in the thesis.",
                ("T-BC-1", "T-BC-2"),
            )
        )
    return out


def _mode_reasons(s: Situation, cfg: CacheConfig) -> list[Reason]:
    on_lvm = traits(cfg.backend).on_lvm
    if cfg.mode == "writethrough":
        if s.mirror_pool and on_lvm:
            return [
                Reason(
                    "Writethrough: writeback would not be much faster for this workload, and it would need the "
                    "cache mirrored on both SSDs (LVM raid1), which halves their space; writethrough loses "
                    "nothing if an SSD fails.",
                    ("T-MODE-1", "T-MODE-2"),
                )
            ]
        if s.writeback_allowed:
            return [
                Reason(
                    "Writethrough: writeback would not be much faster for this workload, and writethrough "
                    "loses nothing if the SSD fails.",
                    ("T-MODE-1", "T-MODE-2"),
                )
            ]
        return [
            Reason(
                "Writethrough: the SSD holds no data that is not also on the disk, so an SSD failure only "
                "costs speed. Writeback needs a redundant fast side (an md RAID1 array or an LVM raid1 LV; "
                f"seen: {_seen_redundancy(s.inp.fast)}) or your explicit acceptance of the risk.",
                ("T-MODE-1", "T-MODE-2"),
            )
        ]
    inp = s.inp
    if cfg.mirrored_pool:
        why = (
            f"the plan mirrors the cache on both SSDs ({' and '.join(f.path for f in inp.fast)}) as LVM raid1, so "
            "either can fail without losing a dirty block; each SSD holds a whole copy, so the cache is as big as "
            "the smaller one (lvmcache(7), RAID1 cache device)"
        )
    elif s.redundant:
        why = (
            "the fast side is redundant as discovered ("
            + "; ".join(f"{f.path}: {f.redundancy}" for f in inp.fast)
            + ")"
        )
    elif inp.fast_mirrored:
        why = (
            "you said the fast devices are (or will be) mirrored, which cachewise did not see: "
            + _seen_redundancy(inp.fast)
            + "; until they are, dirty data is lost if one SSD fails"
        )
    else:
        why = "you accepted the risk of losing dirty data if the SSD fails (" + _seen_redundancy(inp.fast) + ")"
    return [Reason(f"Writeback: {why}.", ("T-MODE-1",))]


def _seen_redundancy(fast: tuple[DeviceFacts, ...]) -> str:
    """What discovery saw of the fast side's redundancy, for a reason's text."""
    if len(fast) >= 2:
        return f"{len(fast)} separate devices ({', '.join(f.path for f in fast)}), no mirror between them"
    return f"{fast[0].path} is a single device"


def _backend_curves(d: Decision) -> dict[str, CurveView]:
    """Each read-caching backend's prediction curve by SSD bytes: the curve its candidate's
    predicted hit ratio is read from (at the chosen size for the chosen backend)."""
    s = d.situation
    prof, out = s.prof, dict[str, CurveView]()
    for t in sorted((t for t in TRAITS if t.backend.caches_reads), key=lambda t: t.promotes_chunks):
        mine = [c for c in d.candidates if c.config.backend == t.id]
        if d.chosen is not None and d.chosen.config.backend == t.id:
            mine.insert(0, d.chosen)
        curves = prof.curves_for(t.id, mine[0].config.effective_bytes if mine else 0)
        reads = curves.read_hits is not None and len(curves.read_hits) == len(curves.hits)
        hits = curves.read_hits if reads and curves.read_hits is not None else curves.hits
        scale = overhead(s, t)
        if prof.chunked(t.id):
            grain = f"{curves.chunk_bytes // KiB} KiB chunks"
            source = f"{prof.source}, {grain}"
        elif scale != 1.0:
            grain = f"4 KiB blocks, x{scale:g} space (T-SIZE-1)"
            source = f"{prof.source}, x{scale:g} space (T-SIZE-1)"
        else:
            grain, source = "4 KiB blocks", prof.source
        sizes = curves.sizes_bytes * scale
        if prof.replay_of(t.id) is not None:
            sizes, hits, replayed = _with_replay(prof, t.id, curves.sizes_bytes, hits, scale)
            if replayed:
                grain += f", {_policy(t)} replayed where it settled"
        out[t.id] = CurveView(
            source,
            [int(x) for x in sizes],
            [round(float(h), 6) for h in hits],
            curve_knee(sizes, hits),
            round(float(hits.max()) if len(hits) else 0.0, 6),
            prof.hot_bytes,
            prof.curve_mode,
            prof.sample_rate,
            f"{'read hit ratio' if reads else 'hit ratio'} of a full cache, {grain}",
        )
    return out


def _replay_finding(t: Traits) -> str:
    return "K-SMQ-1" if t.replayed_by == "smq" else "K-BC-SIM-1"


def _policy(t: Traits) -> str:
    """What the replay ran: dm-cache's smq policy, or bcache's own code."""
    return "smq" if t.replayed_by == "smq" else t.backend.target


def _with_replay(
    prof: Profile, backend: Backend, sizes: np.ndarray[Any, Any], hits: np.ndarray[Any, Any], scale: float
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], bool]:
    """A curve with the replay's read hit ratios put in where the prediction takes them (its
    replayed sizes added, so that the chart between them is the prediction's line): (sizes by
    SSD bytes, hit ratios, whether any came from the replay)."""
    replay = prof.replay_of(backend)
    assert replay is not None
    both = np.unique(np.concatenate([sizes, replay[0]]))
    lru = np.interp(both, np.concatenate([[0.0], sizes]), np.concatenate([[0.0], hits]))
    replayed = [prof.replayed_read_hit(backend, float(x)) for x in both]
    out = np.asarray([lru[i] if r is None else r for i, r in enumerate(replayed)], dtype=np.float64)
    return both * scale, out, any(r is not None for r in replayed)


def _size_reasons(s: Situation, cfg: CacheConfig) -> list[Reason]:
    prof, t = s.prof, traits(cfg.backend)
    knee = prof.knee()
    which = "measured" if prof.source == "trace" else "modelled"
    out = [
        Reason(
            f"The {which} curve's knee is {cache_size(knee)}: the smallest cache reaching {100 * KNEE_SHARE:.0f}% "
            f"of the achievable hit ratio ({prof.achievable:.0%}).",
            ("L-SIZE-4",) if prof.source == "trace" else ("L-SIZE-1",),
        )
    ]
    burst = write_need(s, t, cfg.mode)
    if burst and t.dirty_share is not None:
        alone = not t.backend.caches_reads
        share = (
            f"its high watermark ({100 * t.dirty_share:.0f}%)"
            if alone
            else f"{t.backend.label}'s {100 * t.dirty_share:.0f}% write cutoff"
        )
        out.append(
            Reason(
                f"The trace's write bursts would leave up to {cache_size(int(burst * t.dirty_share))} "
                f"written and not yet on the disk (taking writes back at about {cache_size(int(drain_rate(s)))}/s): "
                f"at {share}, a cache of {cache_size(burst)} or more holds them"
                + (", and the size follows from that alone." if alone else "."),
                t.dirty_findings,
            )
        )
    if t.promotes_chunks and prof.chunked(t.id):
        chunk_knee = prof.knee_of(t.id)
        ratio = chunk_knee / knee if knee else 1.0
        read_at = prof.curves_for(t.id, cfg.effective_bytes).chunk_bytes
        which = "the size and hit ratio come" if read_at == prof.chunk_bytes else "the size comes"
        out.append(
            Reason(
                f"dm-cache caches whole {(prof.chunk_bytes or 0) // KiB} KiB chunks, so {which} "
                f"from the trace's curve at that granularity: its knee is {cache_size(chunk_knee)}, "
                f"{ratio:.1f}x the {cache_size(knee)} at 4 KiB (the thesis measured 3.5x on its workload; "
                "this one is measured).",
                ("T-SIZE-1", "M-CHUNK-1"),
            )
        )
    elif overhead(s, t) != 1.0:
        out.append(
            Reason(
                f"dm-cache needs about {overhead(s, t):g}x the SSD space bcache needs for the "
                f"same hot data, so {cache_size(cfg.size_bytes)} holds about {cache_size(cfg.effective_bytes)} of it.",
                ("T-SIZE-1",),
            )
        )
    if cfg.chunk_size_bytes is not None:
        out.append(
            Reason(
                f"Chunk {cfg.chunk_size_bytes // KiB} KiB and metadata "
                f"{cache_size(cfg.metadata_size_bytes or 0)} (plus a spare of the same size) as lvm2 computes them; "
                f"{cache_size(cfg.fast_space_bytes)} of the SSD in all.",
                ("M-CHUNK-1", "M-META-1"),
            )
        )
    if cfg.sequential_cutoff_bytes is not None:
        out.append(
            Reason(
                f"sequential_cutoff {cache_size(cfg.sequential_cutoff_bytes)} keeps streams from evicting the hot "
                f"data; writeback_percent {cfg.writeback_percent}.",
                ("T-SEQ-1",),
            )
        )
    if cfg.bounded_by_ssd:
        out.append(
            Reason(
                f"The knee needs more than the SSD offers; the cache uses what there is "
                f"({cache_size(cfg.size_bytes)}).",
                ("T-SIZE-2",),
            )
        )
    if cfg.predicted_hit_ratio is not None:
        cited = ("L-SIZE-4",) if prof.source == "trace" else ("L-SIZE-2",)
        if prof.replayed_read_hit(cfg.backend, cfg.effective_bytes) is not None:
            how = (
                f"{t.backend.target}'s smq policy"
                if t.replayed_by == "smq"
                else f"{t.backend.target} (its buckets, its sequential cutoff; reads it bypasses not counted)"
            )
            moved = [d for d in prof.replayed_days(cfg.backend, cfg.effective_bytes) if len(d) > 1]
            days = [x for d in moved for x in d]
            if moved:
                why = (
                    "smq redistributes its queues once a minute of its own clock, which meets each day at another "
                    "moment"
                    if t.replayed_by == "smq"
                    else "the day's phases met the cache in another state each day"
                )
                fed = (
                    f"{max(len(d) for d in moved) + 1} times through {how} as the kernel runs it: the days after "
                    f"the first read {min(days):.0%} to {max(days):.0%} (at the trace's own pace), up and down as "
                    f"{why}, so the prediction is what they read together."
                )
            else:
                fed = (
                    f"twice through {how} as the kernel runs it (the second time, as a next day like the traced "
                    "one would find the cache)."
                )
            out.append(
                Reason(
                    f"Predicted read hit ratio at this size: {cfg.predicted_hit_ratio:.0%}, from the trace replayed "
                    + fed,
                    ("L-SIZE-4", _replay_finding(t)),
                )
            )
        else:
            out.append(Reason(f"Predicted hit ratio at this size: {cfg.predicted_hit_ratio:.0%}.", cited))
    if cfg.warmup is not None:
        w = cfg.warmup
        when = (
            f", about {duration(w.seconds_63)} and {duration(w.seconds_95)} at the measured read rate"
            if w.seconds_63 is not None and w.seconds_95 is not None
            else ""
        )
        slow_fill = ""
        if w.reads_63_full is not None and w.promotion_probability_full != w.promotion_probability:
            after = f" (about {duration(w.seconds_63_full)})" if w.seconds_63_full is not None else ""
            slow_fill = (
                f" {t.backend.target} promotes about {w.promotion_probability:.0%} of read misses while it has free "
                f"chunks and {w.promotion_probability_full:.1%} once full, so a cache full of older data "
                f"takes about {w.reads_63_full:,} reads{after} to reach 63%."
            )
        out.append(
            Reason(
                f"Warm-up: about {w.reads_63:,} reads bring 63% of the hot data into the cache and "
                f"{w.reads_95:,} reads 95%{when}.{slow_fill}",
                w.findings,
            )
        )
        if w.simulated_seconds_63 is not None:
            out.append(
                Reason(
                    f"Replayed through {_policy(t)}, the trace's reads reached 63% of that hit ratio about "
                    f"{duration(w.simulated_seconds_63)} after an empty cache was made (the plan and the history "
                    "keep this as the warm-up prediction).",
                    (_replay_finding(t),),
                )
            )
    return out


def _warnings(s: Situation, cfg: CacheConfig) -> list[Reason]:
    inp, prof, t, out = s.inp, s.prof, traits(cfg.backend), list[Reason]()
    kernel = version_tuple(inp.versions.kernel)
    if t is LVMCACHE_TRAITS and kernel and kernel < (4, 12):
        out.append(
            Reason(
                f"Kernel {inp.versions.kernel} predates 4.12: its dm-cache smq policy stays near HDD speed "
                "once the cache is full of older data. Upgrade the kernel, or prefer bcache.",
                ("L-WARM-1",),
            )
        )
    big = max(f.logical_sector_size for f in inp.fast)
    if big > inp.slow.logical_sector_size:
        out.append(
            Reason(
                f"The SSD has {big}-byte logical sectors and {inp.slow.path} {inp.slow.logical_sector_size}-"
                "byte ones: a file system made with 512-byte sectors may not mount through the cache. Check "
                "the file system's sector size (xfs_info, tune2fs) before attaching.",
                ("M-SECT-1",),
            )
        )
    # Against the cache's size, as in the experiment cited: a 4 GiB dm-cache dipped only where the
    # hot 10% (4.8 GiB) passed 4 GiB, although T-SIZE-1's 3.5x would make it hold about 1.2 GiB.
    # What the workload touches is its footprint, not the device's size (L-SIZE-3 below).
    if prof.hot_bytes > cfg.size_bytes:
        out.append(
            Reason(
                f"The hot data ({cache_size(prof.hot_bytes)}, serving {100 * HOT_SHARE:.0f}% of the I/O) is "
                f"larger than the cache ({cache_size(cfg.size_bytes)}): expect periodic dips to HDD speed.",
                ("L-SIZE-2",),
            )
        )
    if prof.footprint_bytes >= 8 * cfg.size_bytes:
        out.append(
            Reason(
                f"The workload touches {prof.footprint_bytes / cfg.size_bytes:.0f}x the cache's size: "
                "averages will look good but the slowest 1% of requests can be slightly worse than the bare "
                "disk.",
                ("L-SIZE-3",),
            )
        )
    if prof.kind == "very-small-files" and s.fs == "ext4":
        out.append(
            Reason("Creating many small files on ext4: caching can make it slower; XFS gave 4 to 7x.", ("T-SMALL-1",))
        )
    if not s.slow_has_data:
        out.append(
            Reason(
                f"{inp.slow.path} holds no file system yet: make it and load the data first (mkfs writes "
                "its tables through the cache and leaves it full of cold data), then attach the cache.",
                ("D-WARM-1",),
            )
        )
    chunk = cfg.chunk_size_bytes or 0
    measured_chunk = prof.chunk_bytes or DM_CACHE_CHUNK
    read_at = prof.curves_for(t.id, cfg.effective_bytes).chunk_bytes if t.promotes_chunks else 0
    if t.promotes_chunks and chunk > measured_chunk and read_at >= chunk:
        out.append(
            Reason(
                f"lvm2 gives a cache pool of {cache_size(cfg.size_bytes)} chunks of {chunk // KiB} KiB (it keeps pools "
                f"under 1,000,000 chunks): the predicted hit ratio is read from the trace's curve measured at "
                f"{read_at // KiB} KiB chunks"
                + (", the same." if read_at == chunk else f", the nearest measured at or above {chunk // KiB} KiB.")
                + f" A pool of {cache_size(MAX_CHUNKS * measured_chunk)} or less keeps {measured_chunk // KiB} KiB "
                "chunks, which carry less cold data each.",
                ("M-CHUNK-1",),
            )
        )
    elif t.promotes_chunks and chunk > measured_chunk:
        out.append(
            Reason(
                f"lvm2 gives a cache pool of {cache_size(cfg.size_bytes)} chunks of {chunk // KiB} KiB (it keeps pools "
                f"under 1,000,000 chunks), larger than the {measured_chunk // KiB} KiB the curve was "
                f"{'measured' if prof.chunked(t.id) else 'modelled'} in: each chunk promoted carries more "
                f"cold data, so the predicted hit ratio is an upper bound. A pool of "
                f"{cache_size(MAX_CHUNKS * measured_chunk)} or less keeps {measured_chunk // KiB} KiB chunks.",
                ("M-CHUNK-1",),
            )
        )
    if t.indexes_in_memory:
        block = cfg.writecache_block_size or 4096
        memory = f"about {cache_size(writecache_memory(cfg.size_bytes, block))} of kernel memory"
        if inp.memory_bytes:
            memory += f" of this machine's {cache_size(inp.memory_bytes)}"
        out.append(
            Reason(
                f"dm-writecache starts writing back only when {WRITECACHE_HIGH_WATERMARK}% of its blocks are in use: "
                f"up to {cache_size(cfg.size_bytes * WRITECACHE_HIGH_WATERMARK // 100)} of written data may be "
                f"dirty on the SSD before the disk has it, and its {block}-byte blocks take {memory}.",
                ("K-WC-1",),
            )
        )
    if cfg.mode == "writeback":
        for f in inp.fast:
            e = f.endurance
            if e is not None and e.percentage_used is not None and e.percentage_used >= 80:
                out.append(
                    Reason(
                        f"{f.path} has used {e.percentage_used}% of its rated endurance (SMART); writeback "
                        "writes every write to it.",
                        ("T-DEV-3",),
                    )
                )
            elif e is None or e.rating != "enterprise":
                out.append(
                    Reason(
                        f"Writeback wears {f.path}: check its rated endurance (TBW or DWPD). Consumer SSDs "
                        "are advisable only for writethrough.",
                        ("T-DEV-3",),
                    )
                )
            held = (
                "the SSDs hold the only copies of dirty data, and a mirror does not help when both lose power at once"
                if cfg.mirrored_pool
                else "the SSD holds the only copy of dirty data"
            )
            out.append(
                Reason(
                    f"Power-loss protection of {f.path}: unknown (neither SMART nor the kernel reports it). "
                    f"In writeback {held}, so an SSD that loses acknowledged writes on power failure loses "
                    "them for good: check its data sheet.",
                    ("T-MODE-1",),
                )
            )
    return out
