"""The doctor: what is wrong with the caches and the SSDs under them, each finding with
its cause and its fix.

A source judges a :class:`~advisor.health.look.Look` (what was read, once) and returns findings
(advisor/health/findings.py). The sources here: the caches' state (failed, read-only metadata,
needs_check, a degraded mirror, I/O errors), dirty data that does not go down, the kernel memory a
dm-writecache takes, the SSDs' wear and the days they have left at the write rate the watch
measured, and what could not be read. Boot readiness (advisor/health/boot.py) and tunables that
drifted (advisor/health/tunables.py) are their own modules' findings, registered in
:data:`MORE_SOURCES`.

Each finding's fix names a plan kind of the recipes' registry with its options (a front end
builds and previews that plan), or a command, or words when the fix is the admin's to make.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from advisor.disks.caches import mirror_legs
from advisor.disks.devices import Caching, InactiveLv
from advisor.disks.discovery import inactive_failure
from advisor.disks.gate import WRITECACHE_ENTRY_BYTES, WRITECACHE_HIGH_WATERMARK, WRITECACHE_MEMORY_SHARE
from advisor.health.boot import readiness
from advisor.health.findings import Finding, Fix, Severity, exit_code, sentences, worst
from advisor.health.look import NO_SMARTCTL, CacheLook, Look, SsdLook
from advisor.units import duration, human_size
from advisor.watch.figures import stall_causes
from advisor.watch.sampler import Sample

sentences(
    {
        "cache-failed": "{subject} has failed: the kernel no longer uses its cache ({why})",
        "cache-read-only": "{subject}'s cache metadata is read-only: the kernel stopped changing the cache "
        "after a metadata error",
        "cache-needs-check": "{subject}'s cache metadata is marked needs_check: it must be checked before it is "
        "activated again",
        "cache-degraded": "{subject}'s cache is degraded: {why}",
        "cache-inactive": "{subject} is a cached LV that is not active",
        "cache-inconsistent": "{subject} was started without its cache while the cache held dirty data: what is "
        "on {backing} may be corrupt",
        "cache-io-errors": "{subject}'s {part} device has {errors} recent I/O errors (bcache disables the cache "
        "at {limit})",
        "dirty-stuck": "{subject} has held {dirty} of dirty data ({share:.0%} of its cache) without it going down "
        "for {stuck}",
        "writecache-memory": "{subject}'s dm-writecache keeps about {memory} of kernel memory for its {blocks:,} "
        "blocks, {share:.0%} of this machine's {ram}",
        "ssd-worn": "{subject} has used {used}% of its rated endurance ({written} written)",
        "ssd-days-left": "{subject} has about {days:.0f} days of endurance left at the {rate} a day its caches "
        "write to it",
        "doctor-unread": "could not read {what}: {why}",
        "cache-started-without-set": "{subject} runs without a cache: bcache started it without its cache set, "
        "which is gone",
        "ssd-wear-unknown": "how long {subject} lasts is not known: {why}",
        "dirty-after-unclean-stop": "{subject} counts {dirty} of its cached data dirty ({mode})",
    }
)


@dataclass(frozen=True)
class Settings:
    """Doctor's thresholds (the front ends may set the first two)."""

    stuck_seconds: float = 3600.0  # dirty data not reaching a new low for this long is stuck
    dirty_share: float = 0.2  # ... when it is at least this share of the cache
    stuck_critical_seconds: float = 86400.0
    wear_warning: int = 80  # SMART percentage used
    wear_critical: int = 95
    days_warning: float = 180.0
    days_critical: float = 30.0
    memory_critical_share: float = 0.5  # lvm2 warns when a writecache takes half the memory


@dataclass(frozen=True)
class CacheHealth:
    """One cache's health in numbers, for the Prometheus export and the JSON."""

    name: str
    kind: str
    failed: bool = False
    read_only: bool = False
    needs_check: bool = False
    degraded: bool = False
    io_errors: int | None = None
    dirty_stuck_seconds: float | None = None  # None: not stuck (or no recorded samples to tell)
    writecache_memory_bytes: int | None = None

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class SsdHealth:
    name: str
    devnode: str
    caches: tuple[str, ...]
    percentage_used: int | None
    data_written_bytes: int | None
    write_rate_bytes: float | None
    rate_source: str
    days_left: float | None

    def to_json(self) -> dict[str, Any]:
        return {**self.__dict__, "caches": list(self.caches)}


@dataclass(frozen=True)
class Report:
    """What doctor found: the findings, worst first, each source's by its name, and the numbers."""

    findings: tuple[Finding, ...]
    caches: tuple[CacheHealth, ...]
    ssds: tuple[SsdHealth, ...]
    unread: tuple[tuple[str, str], ...]
    by_source: dict[str, tuple[Finding, ...]] = field(default_factory=dict)
    live: bool = True

    @property
    def worst(self) -> str:
        return worst(self.findings)

    @property
    def exit_code(self) -> int:
        return exit_code(self.findings)


# A source's findings, or None when it had nothing to judge (its facts were not read): it is then
# left out of the report's by_source, and the export writes no gauge for it.
Source = Callable[[Look, Settings], Iterable[Finding] | None]

# -- the caches' state --


def _vglv(cache: CacheLook) -> str | None:
    return cache.name if "/" in cache.name else None


def _remove(cache: CacheLook, how: str) -> Fix:
    """The plan that removes the cache (flushing first), for a device cachewise can remove."""
    device = cache.device.devnode if cache.device is not None else cache.name
    return Fix(how, plan="remove", options={"device": device if cache.kind == "bcache" else cache.name})


def _mode(cache: CacheLook) -> str | None:
    """writethrough or writeback: the sample's, else what discovery says (a snapshot has no sample)."""
    if cache.kind == "dm-writecache":
        return "writeback"
    if cache.sample is not None and cache.sample.mode:
        return cache.sample.mode
    dev = cache.device
    if dev is not None and dev.bcache is not None:
        return dev.bcache.cache_mode
    if dev is not None and dev.caching is not None and dev.caching.mode:  # discovery's, where it reads one
        return dev.caching.mode
    state = dev.caching.state if dev is not None and dev.caching is not None else ""
    return next((m for m in ("writeback", "writethrough", "passthrough") if state.startswith(m)), None)


def _failed_why(cache: CacheLook) -> str:
    """The kernel's word for a failed cache: its status line's ("Fail", "error 1"), or what
    discovery saw (a snapshot has no status line)."""
    dm = cache.dm
    if dm is not None and dm.said:
        return dm.said
    bcache = cache.device.bcache if cache.device is not None else None
    return "its cache set is gone" if bcache is not None else "its SSD is gone"


def _gone(caching: Caching | None) -> bool:
    """Discovery found the cache failed, or its only SSD gone (not one leg of a mirror)."""
    return caching is not None and (caching.failed or (bool(caching.missing) and not caching.degraded))


def _raid_parts(look: Look, cache: CacheLook) -> list[str]:
    """The VG/LV of each raid1 sub-LV under a cached LV (its cache pool's data and metadata)."""
    inv, dev = look.inventory, cache.device
    if inv is None or dev is None:
        return []
    return sorted(
        f"{sub.lvm.vg}/{sub.lvm.lv.strip('[]')}" for sub in mirror_legs(inv, dev) if sub.lvm is not None and sub.lvm.lv
    )


def cache_state(look: Look, settings: Settings) -> list[Finding]:
    out: list[Finding] = []
    for cache in look.caches:
        out += _state_of(look, cache)
    for lv in look.inventory.inactive if look.inventory is not None else ():
        out.append(_inactive(lv))
    return out


def _inactive(lv: InactiveLv) -> Finding:
    """A cached LV that is not active: lvm2 refused it (a part on a missing PV, as after a reboot
    with its SSD dead), or it was deactivated."""
    kind = lv.kind
    facts = {"kind": kind, "mode": lv.mode, "why": "lvm2 will not activate it: its SSD is missing"}
    if lv.origin_missing:
        return Finding(
            "cache-inactive",
            "critical",
            lv.name,
            {"kind": kind, "mode": lv.mode},
            "a part of its origin (the slow device) is on a PV lvm2 cannot find, so lvm2 will not activate it; "
            "its cache is not the part that is missing, so removing the cache would not bring it back",
            Fix("bring the missing disk back (pvs names the PV lvm2 cannot find by its UUID)"),
        )
    if lv.partial:
        return Finding(
            "cache-failed",
            "critical",
            lv.name,
            facts,
            inactive_failure(lv).sentence(),
            Fix(
                "take the cache off the inactive LV so it comes up on its origin; the removal plan says what is "
                "and is not on the origin before it runs",
                plan="remove",
                options={"device": lv.name},
            ),
        )
    return Finding(
        "cache-inactive",
        "warning",
        lv.name,
        {"kind": kind, "mode": lv.mode},
        "it was deactivated, or lvm2 could not activate it (at boot, or when asked): nothing on it is reachable",
        Fix("activate it; lvm2 says why if it cannot", command=("lvchange", "-ay", lv.name)),
    )


def _state_of(look: Look, cache: CacheLook) -> list[Finding]:
    out: list[Finding] = []
    name, dm, caching = cache.name, cache.dm, cache.device.caching if cache.device else None
    writeback = _mode(cache) == "writeback"
    # Discovery says the same from lvm2's reports (advisor/disks/failure.py): either counts, and a
    # cache whose only SSD is gone (missing, not a mirror's one leg) has failed too.
    failed = (dm is not None and dm.failed) or _gone(caching)
    if failed:
        mode = _mode(cache)
        lost = {
            "writeback": "in writeback, blocks written only to the cache are not on the origin and are lost with it",
            "writethrough": "in writethrough the origin holds every write, so nothing is lost",
        }.get(
            mode or "",
            "in writethrough nothing is lost; in writeback, blocks written only to the cache are lost with it",
        )
        out.append(
            Finding(
                "cache-failed",
                "critical",
                name,
                {"why": _failed_why(cache), "kind": cache.kind, "mode": mode},
                # discovery's explanation of what the kernel did, where it has one (advisor/disks/failure.py)
                caching.trouble
                if caching is not None and caching.trouble
                else f"the cache device stopped answering (a dead or pulled SSD, or its I/O errors); {lost}",
                _remove(
                    cache,
                    "take the cache off so the origin runs on its own; the removal plan says what is and "
                    "is not on the origin before it runs",
                ),
            )
        )
    elif (dm is not None and dm.read_only) or (caching is not None and caching.read_only):
        out.append(
            Finding(
                "cache-read-only",
                "critical",
                name,
                {"kind": cache.kind},
                "writing the cache's metadata failed (an I/O error on the metadata device, or it is full); the "
                "cache still serves I/O but promotes and writes back nothing",
                Fix(
                    "stop its users and deactivate it; lvm2 runs cache_check when it is activated again, and "
                    "refuses with the reason if the metadata is damaged",
                    command=("lvchange", "-an", name),
                ),
            )
        )
    if not failed and ((dm is not None and dm.needs_check) or (caching is not None and caching.needs_check)):
        out.append(
            Finding(
                "cache-needs-check",
                "warning",
                name,
                {"kind": cache.kind},
                "the kernel met a metadata error and set the needs_check flag; lvm2 will not activate the cache "
                "after a reboot unless cache_check (thin-provisioning-tools) passes",
                Fix(
                    "deactivate it when its users can stop, so lvm2 checks the metadata (cache_check) as it "
                    "activates it again",
                    command=("lvchange", "-an", name),
                ),
            )
        )
    if caching is not None and caching.degraded and not failed:
        parts = _raid_parts(look, cache)
        repair = ", then ".join(f"lvconvert --repair {p}" for p in parts)
        out.append(
            Finding(
                "cache-degraded",
                "critical" if writeback else "warning",
                name,
                {
                    "why": "one SSD of its mirror is missing" if parts else "a device under it is missing",
                    "mirrored": bool(parts),
                    "parts": parts,
                    "writeback": writeback,
                },
                "the cache runs on the mirror's other SSD alone, with no copy left"
                + ("; it holds blocks written only to the cache (writeback)" if writeback else "")
                if parts
                else "LVM reports the cached LV partial: a PV under it is missing",
                Fix(
                    "put a new SSD in, then repair the mirror onto it with the plan (it joins the volume group, "
                    f"{repair} copies the surviving leg over, and the lost PV leaves); remove the cache only "
                    "after that",
                    plan="cache-repair",
                    options={"lv": name},
                    needs=("ssd",),
                )
                if parts
                else Fix("bring the missing device back, or replace it and repair the LV (lvconvert --repair)"),
            )
        )
    bcache = cache.device.bcache if cache.device else None
    state = cache.sample.state if cache.sample else (bcache.state if bcache else None)
    mode = (cache.sample.mode if cache.sample else None) or (bcache.cache_mode if bcache else None)
    if state == "inconsistent" and mode == "writethrough":
        # what a writethrough rescue leaves (recipes/bcache.py): nothing was dirty, nothing lost
        out.append(
            Finding(
                "cache-started-without-set",
                "info",
                name,
                {},
                "its cache's SSD was lost and the device was started without it (a rescue); in writethrough "
                "nothing was dirty, so nothing is missing",
                Fix("attach a new cache (plan bcache-detach, then make a new cache) or keep it uncached"),
            )
        )
    elif state == "inconsistent":
        backing = bcache.backing_device if bcache and bcache.backing_device else "the backing device"
        out.append(
            Finding(
                "cache-inconsistent",
                "critical",
                name,
                {"backing": backing},
                "bcache was forced to run without its cache set while dirty data was in it",
                Fix("check the file system on it (fsck or xfs_repair) and restore what it lost from a backup"),
            )
        )
    out += _all_dirty(cache)
    out += _io_errors(cache)
    return out


# Fewer used blocks than this, all dirty, are a small cache's ordinary writeback, not a sign.
ALL_DIRTY_BLOCKS = 64


def _all_dirty(cache: CacheLook) -> list[Finding]:
    """dm-cache counting every cached block dirty, as it may after an unclean stop (lvm2#141: the
    dirty bitset is not trusted, so each block is written back once), or any dirty block in
    writethrough (where the kernel writes every write to the origin at once)."""
    s = cache.sample
    if cache.kind != "dm-cache" or s is None or not s.dirty_bytes or not s.used_bytes or not s.block_bytes:
        return []
    blocks = s.used_bytes // s.block_bytes
    if not (s.mode == "writethrough" or (s.dirty_bytes >= s.used_bytes and blocks >= ALL_DIRTY_BLOCKS)):
        return []
    return [
        Finding(
            "dirty-after-unclean-stop",
            "info",
            cache.name,
            {
                "dirty": human_size(s.dirty_bytes),
                "dirty_bytes": s.dirty_bytes,
                "used_bytes": s.used_bytes,
                "mode": s.mode,
            },
            (
                "dm-cache counts dirty blocks in writethrough, which it does after an unclean stop (or a switch "
                "from writeback made without lvm2, before its flush ended)"
                if s.mode == "writethrough"
                else "every cached block is counted dirty: after an unclean stop (a crash or power cut) dm-cache "
                "may count all of them dirty until each is written back once (lvm2#141), or the workload dirtied "
                "them all"
            )
            + "; the cache writes them back to the origin by itself, and a flush before a removal takes as long "
            "as writing the whole of it (the removal plan's estimate counts them)",
            Fix("nothing to do; let it write back before removing or resizing the cache"),
        )
    ]


# bcache's default io_error_limit (bcache.rst: errors decay by io_error_halflife).
BCACHE_ERROR_LIMIT = 64


def _io_errors(cache: CacheLook) -> list[Finding]:
    out = []
    limit = int(cache.sample.raw.get("io_error_limit", BCACHE_ERROR_LIMIT)) if cache.sample else BCACHE_ERROR_LIMIT
    for part, errors in sorted(cache.io_errors.items()):
        if errors <= 0:
            continue
        out.append(
            Finding(
                "cache-io-errors",
                "critical" if part == "cache" and errors >= limit // 2 else "warning",
                cache.name,
                {"part": part, "errors": errors, "limit": limit},
                f"the {part} device fails some reads or writes; bcache counts them and stops using the cache "
                "when they reach the limit",
                _remove(
                    cache,
                    "check the device's SMART and its cabling; if it keeps failing, take the cache off "
                    "while it can still write its dirty data back",
                )
                if part == "cache"
                else Fix("check the backing disk's SMART and its cabling (smartctl -a)"),
            )
        )
    return out


# -- dirty data that does not go down --


def _threshold(s: Sample, settings: Settings) -> float:
    """The dirty share above which a cache that does not flush is stuck: what the kernel keeps dirty
    on purpose (bcache's writeback_percent, dm-writecache's high watermark) is not stuck."""
    share = settings.dirty_share
    if s.kind == "bcache" and s.writeback_percent and s.writeback_running is not False:
        share = max(share, s.writeback_percent / 100 + 0.05)
    if s.kind == "dm-writecache":
        share = max(share, WRITECACHE_HIGH_WATERMARK / 100 + 0.05)
    return share


# Recorded samples further apart than this do not show whether the dirty data went down between.
GAP_SECONDS = 6 * 3600.0


def stuck_seconds(samples: Sequence[Sample], above: float) -> float | None:
    """How long the newest dirty data has stayed at or above ``above`` bytes without a new low:
    over the trailing samples above it (a gap longer than GAP_SECONDS ends them), from the last
    time it went lower to the newest sample. None: not above it now."""
    run: list[Sample] = []
    for s in reversed(samples):
        if s.dirty_bytes is None or s.dirty_bytes < above or (run and run[-1].t - s.t > GAP_SECONDS):
            break
        run.append(s)
    if not run:
        return None
    run.reverse()
    low_t, low = run[0].t, run[0].dirty_bytes or 0
    for s in run[1:]:
        if (s.dirty_bytes or 0) < low:
            low_t, low = s.t, s.dirty_bytes or 0
    return run[-1].t - low_t


def dirty_stuck(look: Look, settings: Settings) -> list[Finding]:
    out = []
    for cache in look.caches:
        samples = [*cache.past, *((cache.sample,) if cache.sample else ())]
        if not samples or samples[-1].dirty_bytes is None or not samples[-1].capacity_bytes:
            continue
        now = samples[-1]
        share = (now.dirty_bytes or 0) / (now.capacity_bytes or 1)
        stuck = stuck_seconds(samples, _threshold(now, settings) * (now.capacity_bytes or 0))
        if stuck is None or stuck < settings.stuck_seconds:
            continue
        since = next((s for s in samples if s.t >= now.t - stuck), samples[0])
        causes = stall_causes(now, since)
        out.append(
            Finding(
                "dirty-stuck",
                "critical" if stuck >= settings.stuck_critical_seconds else "warning",
                cache.name,
                {
                    "dirty": human_size(now.dirty_bytes or 0),
                    "dirty_bytes": now.dirty_bytes,
                    "share": share,
                    "stuck": duration(stuck),
                    "stuck_seconds": stuck,
                    "mode": now.mode,
                    "writeback_percent": now.writeback_percent,
                },
                " ".join(causes) or "the cache writes its dirty data back slower than it is written",
                _flush_fix(cache, now),
            )
        )
    return out


def _flush_fix(cache: CacheLook, now: Sample) -> Fix:
    if cache.kind == "dm-cache" and now.mode == "writeback" and _vglv(cache):
        return Fix(
            "switch it to writethrough, which writes every dirty block back first (or remove the cache)",
            plan="lvmcache-mode",
            options={"lv": cache.name, "mode": "writethrough"},
        )
    return _remove(
        cache,
        "flush and remove the cache (the plan writes every dirty block back first and shows the "
        "countdown); or stop the writers and let it write back",
    )


# -- dm-writecache's memory --


def _entries_memory(cache: CacheLook) -> int | None:
    """The kernel memory a dm-writecache keeps for its entries, from its sample (None: not one)."""
    s = cache.sample
    if cache.kind != "dm-writecache" or s is None or not s.capacity_bytes or not s.block_bytes:
        return None
    return s.capacity_bytes // s.block_bytes * WRITECACHE_ENTRY_BYTES


def writecache_memory(look: Look, settings: Settings) -> list[Finding]:
    out: list[Finding] = []
    ram = look.memory_bytes
    for cache in look.caches:
        s, memory = cache.sample, _entries_memory(cache)
        if s is None or memory is None or not s.block_bytes or not ram:
            continue
        blocks = memory // WRITECACHE_ENTRY_BYTES
        share = memory / ram
        if share <= 1 / WRITECACHE_MEMORY_SHARE:
            continue
        out.append(
            Finding(
                "writecache-memory",
                "critical" if share >= settings.memory_critical_share else "warning",
                cache.name,
                {
                    "memory": human_size(memory),
                    "memory_bytes": memory,
                    "blocks": blocks,
                    "share": share,
                    "ram": human_size(ram),
                },
                f"dm-writecache keeps {WRITECACHE_ENTRY_BYTES} bytes of kernel memory for each of its "
                f"{s.block_bytes}-byte blocks, for as long as it is loaded; the rest of the machine has that much "
                "less (lvm2 warns from half)",
                _remove(
                    cache,
                    "remove it and attach a smaller one (or one of 4 KiB blocks when the file system "
                    "allows), which the recommendation sizes to a quarter of the memory",
                ),
            )
        )
    return out


# -- SSD wear --


def days_left(ssd: SsdLook) -> float | None:
    """Days until SMART's percentage used reaches 100 at the measured write rate: the bytes written
    per percent so far, times the percents left, over the bytes written a day."""
    wear = ssd.endurance
    if wear is None or not wear.percentage_used or not wear.data_written_bytes or not ssd.write_rate_bytes:
        return None
    per_percent = wear.data_written_bytes / wear.percentage_used
    left = max(0, 100 - wear.percentage_used) * per_percent
    return left / (ssd.write_rate_bytes * 86400)


def _replacement(look: Look, ssd: SsdLook) -> Fix:
    """How to retire a wearing SSD: the lvmcache it alone holds, on this SSD alone (not a mirror's
    leg), moves to a new SSD (the plan writes its dirty blocks back first); any other cache is
    removed before the SSD wears out."""
    caches = ", ".join(ssd.caches)
    on = {c.name: c for c in look.caches}
    cache = on.get(ssd.caches[0]) if len(ssd.caches) == 1 else None
    if cache is not None and cache.kind == "dm-cache" and len(cache.ssds) <= 1:
        return Fix(
            f"plan its replacement: put a new SSD in, then move the cache of {caches} onto it with the plan (its "
            "dirty blocks are written back first, and the worn SSD leaves the volume group when nothing else is "
            "on it)",
            plan="lvmcache-move",
            options={"lv": ssd.caches[0]},
            needs=("ssd",),
        )
    return Fix(
        f"plan its replacement: a new SSD in the cache's place, or remove the cache ({caches}) before it wears "
        "out; a writeback cache loses its dirty data with it",
        plan="remove",
        options={"device": ssd.caches[0]} if ssd.caches else {},
    )


def ssd_wear(look: Look, settings: Settings) -> list[Finding]:
    out = []
    for ssd in look.ssds:
        wear = ssd.endurance
        if ssd.wear_unknown:
            out.append(
                Finding(
                    "ssd-wear-unknown",
                    "info",
                    ssd.devnode,
                    {"caches": list(ssd.caches), "why": ssd.wear_unknown},
                    "smartctl reads an SSD's wear; emulated disks and many USB bridges pass no wear attributes through",
                    Fix("install smartmontools")
                    if ssd.wear_unknown == NO_SMARTCTL
                    else Fix("read the SSD's wear with its maker's tool, or look at its written data now and then"),
                )
            )
        if wear is None:
            continue
        replace = _replacement(look, ssd)
        used = wear.percentage_used
        written = human_size(wear.data_written_bytes) if wear.data_written_bytes is not None else "unknown"
        if used is not None and used >= settings.wear_warning:
            out.append(
                Finding(
                    "ssd-worn",
                    "critical" if used >= settings.wear_critical else "warning",
                    ssd.devnode,
                    {"used": used, "written": written, "caches": list(ssd.caches)},
                    "flash wears with every write, and a cache writes to its SSD far more than its users write to "
                    "the disk (every promotion is a write)",
                    replace,
                )
            )
        days = days_left(ssd)
        if days is not None and days < settings.days_warning and ssd.write_rate_bytes:
            out.append(
                Finding(
                    "ssd-days-left",
                    "critical" if days < settings.days_critical else "warning",
                    ssd.devnode,
                    {
                        "days": days,
                        "rate": human_size(int(ssd.write_rate_bytes * 86400)),
                        "rate_source": ssd.rate_source,
                        "caches": list(ssd.caches),
                    },
                    f"at the rate {'the watch measured' if ssd.rate_source == 'sampler' else 'SMART averages'} "
                    "it reaches its rated endurance within that time",
                    replace,
                )
            )
    return out


# -- what could not be read --


def unread(look: Look, settings: Settings) -> list[Finding]:
    severity: Severity = "warning" if look.live else "info"
    how = (
        "run doctor as root, which can read the kernel's cache status and SMART"
        if look.live and not look.root
        else "run doctor on the machine itself"
        if not look.live
        else "install what is missing, or look at the reason"
    )
    return [
        Finding(
            "doctor-unread",
            severity,
            "doctor",
            {"what": what, "why": why},
            "what doctor could not read, it cannot judge: a finding may be missing",
            Fix(how),
        )
        for what, why in look.unread
    ]


# The sources every doctor run asks, by name.
SOURCES: tuple[tuple[str, Source], ...] = (
    ("caches", cache_state),
    ("dirty", dirty_stuck),
    ("writecache-memory", writecache_memory),
    ("wear", ssd_wear),
    ("unread", unread),
)


def boot_readiness(look: Look, settings: Settings) -> list[Finding] | None:
    """Whether every cache comes back at the next boot (advisor/health/boot.py); None when this
    machine's boot facts were not read (a snapshot, one cache named)."""
    return None if look.boot is None else readiness(look.inventory, look.boot)


def tunables_drift(look: Look, settings: Settings) -> list[Finding] | None:
    """bcache tunables whose live value is not their file's (advisor/health/tunables.py)."""
    return None if look.drift is None else list(look.drift)


# The sources other modules own, by the names the Prometheus export reads them by
# (cachewise_boot_ready from "boot", cachewise_tunables_drifted from "tunables").
MORE_SOURCES: tuple[tuple[str, Source], ...] = (("boot", boot_readiness), ("tunables", tunables_drift))


def _health(look: Look, by_source: dict[str, tuple[Finding, ...]]) -> tuple[CacheHealth, ...]:
    stuck = {f.subject: f.facts.get("stuck_seconds") for f in by_source.get("dirty", ())}
    out = []
    for c in look.caches:
        dm, caching = c.dm, c.device.caching if c.device else None
        out.append(
            CacheHealth(
                c.name,
                c.kind,
                failed=(dm is not None and dm.failed) or _gone(caching),
                read_only=(dm is not None and dm.read_only) or bool(caching and caching.read_only),
                needs_check=(dm is not None and dm.needs_check) or bool(caching and caching.needs_check),
                degraded=bool(caching and caching.degraded),
                io_errors=sum(c.io_errors.values()) if c.io_errors else None,
                dirty_stuck_seconds=stuck.get(c.name),
                writecache_memory_bytes=_entries_memory(c),
            )
        )
    inactive = look.inventory.inactive if look.inventory is not None else ()
    out += [CacheHealth(lv.name, lv.kind, failed=lv.partial) for lv in inactive]
    return tuple(out)


def _ssd_health(look: Look) -> tuple[SsdHealth, ...]:
    return tuple(
        SsdHealth(
            s.name,
            s.devnode,
            s.caches,
            s.endurance.percentage_used if s.endurance else None,
            s.endurance.data_written_bytes if s.endurance else None,
            s.write_rate_bytes,
            s.rate_source,
            days_left(s),
        )
        for s in look.ssds
    )


ORDER = {"critical": 0, "warning": 1, "info": 2}


def examine(
    look: Look, settings: Settings | None = None, sources: Sequence[tuple[str, Source]] | None = None
) -> Report:
    """Every source's findings on what was read, the worst first."""
    settings = settings or Settings()
    by_source: dict[str, tuple[Finding, ...]] = {}
    for name, source in sources or (*SOURCES, *MORE_SOURCES):
        found = source(look, settings)
        if found is not None:
            by_source[name] = tuple(found)
    findings = sorted((f for found in by_source.values() for f in found), key=lambda f: ORDER[f.severity])
    return Report(tuple(findings), _health(look, by_source), _ssd_health(look), look.unread, by_source, live=look.live)
