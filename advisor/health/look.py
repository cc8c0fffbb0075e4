"""What ``doctor`` looks at, read once: every cache with its kernel status, its samples (now and
recorded by the watch), its bcache error counts and the SSDs under it with their SMART wear.

Reading is kept apart from judging (advisor/health/doctor.py judges a :class:`Look`), so a test
builds a Look from captured outputs and a saved snapshot gives one without this machine. What
could not be read is kept as a fact (``unread``): doctor says it instead of guessing.

Formats: ``dmsetup status`` of dm-cache and dm-writecache, whose health (fail mode, read-only
metadata, needs_check, a writecache's error number) advisor/readers/dmstatus.py's ``health``
reads; bcache's ``io_errors`` in the backing device's and the cache device's ``bcache/``
directories (bcache.rst; decayed by io_error_halflife); ``smartctl -j -a``
(advisor/readers/smart.py).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from advisor.disks.devices import Device, Inventory
from advisor.health import boot, tunables
from advisor.health.boot import BootFacts
from advisor.health.findings import Finding
from advisor.readers.dmstatus import Health, health
from advisor.readers.smart import Endurance, parse_smartctl
from advisor.runner import CommandError, CommandRunner
from advisor.watch.sampler import SECTOR, CacheRef, Sample, SampleSource

# How far back doctor reads the watch's samples: the write rate over a week, a flush over a day.
HISTORY_SECONDS = 7 * 86400


@dataclass(frozen=True)
class CacheLook:
    """One cache as doctor read it. ``device`` is its device in discovery's inventory (the
    cached LV or the bcacheN) when discovery saw it."""

    name: str  # "labvg/data", "bcache0"
    kind: str  # "dm-cache", "dm-writecache", "bcache"
    ref: CacheRef | None = None  # None: known from a saved snapshot only
    sample: Sample | None = None
    status_line: str | None = None  # dm targets: `dmsetup status`'s line, as read
    past: tuple[Sample, ...] = ()  # recorded samples, oldest first (the watch's and doctor's own)
    io_errors: dict[str, int] = field(default_factory=dict)  # bcache: {"backing": n, "cache": n}
    device: Device | None = None
    ssds: tuple[str, ...] = ()  # kernel names of the disks under its cache device

    @property
    def dm(self) -> Health | None:
        """The health its status line says (advisor/readers/dmstatus.py), for a dm target."""
        return health(self.status_line) if self.status_line else None


@dataclass(frozen=True)
class SsdLook:
    """An SSD under one or more caches, with its SMART wear and the rate the caches write to it."""

    name: str  # kernel name: "sdc", "nvme0n1"
    devnode: str
    caches: tuple[str, ...]
    endurance: Endurance | None = None
    write_rate_bytes: float | None = None  # per second
    rate_source: str = ""  # "sampler" (the recorded samples) or "smart" (its lifetime average)
    wear_unknown: str = ""  # why its wear is not known though nothing failed: no wear reported, or no smartctl


@dataclass(frozen=True)
class Look:
    """Everything doctor read, once, with what it could not read and why."""

    now: float
    live: bool  # this machine (False: a saved snapshot)
    root: bool
    inventory: Inventory | None
    caches: tuple[CacheLook, ...] = ()
    ssds: tuple[SsdLook, ...] = ()
    memory_bytes: int | None = None
    unread: tuple[tuple[str, str], ...] = ()  # (what, why)
    boot: BootFacts | None = None  # what activation at boot needs (None: not read, a snapshot)
    drift: tuple[Finding, ...] | None = None  # bcache tunables unlike their files (None: not read)


def disks_under(inv: Inventory, name: str | None) -> tuple[str, ...]:
    """The whole disks a device is built on (its partitions' disks, an LV's PVs, a RAID's legs)."""
    out: list[str] = []
    seen: set[str] = set()
    todo = [name] if name else []
    while todo:
        current = todo.pop()
        dev = inv.by_name(current)
        if dev is None or current in seen:
            continue
        seen.add(current)
        if dev.kind == "disk":
            out.append(dev.name)
        todo += list(dev.slaves) + ([dev.parent] if dev.parent else [])
    return tuple(sorted(set(out)))


def cache_devices(inv: Inventory) -> dict[str, Device]:
    """The caches discovery found, by the name the sampler gives them (VG/LV, bcacheN)."""
    out: dict[str, Device] = {}
    for dev in inv.devices:
        caching = dev.caching
        if caching is None or caching.kind not in ("lvmcache", "dm-writecache", "bcache"):
            continue
        if dev.lvm is not None and dev.lvm.role == "lv" and dev.lvm.segtype in ("cache", "writecache"):
            out[f"{dev.lvm.vg}/{dev.lvm.lv}"] = dev
        elif dev.bcache is not None and (dev.bcache.cache_set_uuid or caching.failed):
            # a bcacheN with its cache set; one whose set is gone; a backing device whose set is
            # gone and whose bcacheN the kernel stopped (by its own name)
            if dev.bcache.role == "bcache" or (dev.bcache.role == "backing" and not dev.bcache.bcache_device):
                out[dev.name] = dev
    return out


KINDS = {"cache": "dm-cache", "writecache": "dm-writecache"}


def _kind_of(dev: Device) -> str:
    if dev.bcache is not None:
        return "bcache"
    return KINDS.get(dev.lvm.segtype or "", "dm-cache") if dev.lvm is not None else "dm-cache"


def write_rate(samples: Iterable[Sample]) -> tuple[float, float] | None:
    """Bytes written to the cache device per second over recorded samples, and the seconds they
    span: the positive steps of its write counter (a reboot resets it) over the time they cover."""
    written = span = 0.0
    previous: Sample | None = None
    for s in samples:
        if previous is not None and s.cache_io is not None and previous.cache_io is not None and s.t > previous.t:
            step = s.cache_io.write_sectors - previous.cache_io.write_sectors
            if step >= 0:
                written += step * SECTOR
                span += s.t - previous.t
        previous = s
    return (written / span, span) if span > 0 else None


# The sampler's rate is used once its samples span this long; before, SMART's lifetime average.
RATE_SPAN_SECONDS = 3600.0


def _smart(runner: CommandRunner, devnode: str) -> tuple[Endurance | None, str]:
    """The SSD's wear, or why it could not be read."""
    if runner.which("smartctl") is None:
        return None, NO_SMARTCTL
    try:
        out = runner.run(["smartctl", "-j", "-a", devnode], timeout=30, check=False)
    except CommandError as exc:
        return None, exc.what
    wear = parse_smartctl(out.stdout)
    if wear is None:
        return None, NO_WEAR
    return wear, ""


NO_WEAR = "SMART reports neither the share of its endurance used nor the data written"
NO_SMARTCTL = "smartctl is not installed (the smartmontools package)"


def _dm_status(runner: CommandRunner) -> tuple[dict[str, str], str]:
    """Every device-mapper device's status line by its name, or why it could not be read."""
    if runner.which("dmsetup") is None:
        return {}, "dmsetup is not installed (the dmsetup package)"
    try:
        out = runner.run(["dmsetup", "status"], timeout=10, check=False)
    except CommandError as exc:
        return {}, exc.what
    if out.returncode != 0:
        said = out.stderr.strip().splitlines()[-1] if out.stderr.strip() else f"exit code {out.returncode}"
        return {}, f"`dmsetup status` failed ({said})"
    lines = {}
    for line in out.stdout.splitlines():
        name, sep, rest = line.partition(": ")
        if sep and rest.strip():
            lines[name] = rest.strip()
    return lines, ""


def _io_errors(ref: CacheRef) -> dict[str, int]:
    """bcache's decayed error counts of the backing device and of the cache device."""
    out: dict[str, int] = {}
    places = {"backing": ref.bcache_dir, "cache": os.path.join(ref.set_dir, "cache0") if ref.set_dir else None}
    for part, folder in places.items():
        if folder is None:
            continue
        try:
            out[part] = int(Path(folder, "io_errors").read_text().strip())
        except (OSError, ValueError):
            continue
    return out


Past = Callable[[str, float], list[Sample]]


def gather(
    runner: CommandRunner,
    sampler: SampleSource,
    inventory: Inventory | None,
    past: Past,
    now: float,
    root: bool,
    only: str | None = None,
    boot_facts: Callable[[], BootFacts] | None = None,
    drift: Callable[[], list[Finding]] | None = None,
) -> Look:
    """Read this machine: the caches the sampler finds (``only``: the one of that name), their
    status, samples and errors, the SSDs under them and their wear; and, looking at the whole
    machine, what activation at boot needs and the bcache tunables that drifted (``boot_facts``
    and ``drift`` read them; tests hand their own)."""
    unread: list[tuple[str, str]] = []
    refs = sampler.caches()
    unread += [("device-mapper caches", why) for why in sampler.unread]
    if only is not None:
        refs = [sampler.find(only)]
    samples = {s.target: s for s in sampler.sample(refs)}
    status: dict[str, str] = {}
    if any(r.dm_name for r in refs):
        status, why = _dm_status(runner)
        if why:
            unread.append(("the device-mapper caches' status", why))
    devices = cache_devices(inventory) if inventory is not None else {}
    caches = []
    for ref in refs:
        recorded = tuple(s for s in past(ref.name, now - HISTORY_SECONDS) if s.t < now)
        dev = devices.get(ref.name)
        under = disks_under(inventory, ref.cache) if inventory is not None else ()
        caches.append(
            CacheLook(
                ref.name,
                ref.kind,
                ref,
                samples.get(ref.name),
                status.get(ref.dm_name or ""),
                recorded,
                _io_errors(ref) if ref.kind == "bcache" else {},
                dev,
                under,
            )
        )
    ssds = _ssds(runner, inventory, caches, root, unread)
    return Look(
        now,
        True,
        root,
        inventory,
        tuple(caches),
        ssds,
        inventory.memory_bytes if inventory is not None else None,
        tuple(unread),
        (boot_facts or (lambda: boot.read_facts(runner)))() if only is None else None,
        tuple((drift or tunables.drift)()) if only is None else None,
    )


def _ssds(
    runner: CommandRunner,
    inventory: Inventory | None,
    caches: list[CacheLook],
    root: bool,
    unread: list[tuple[str, str]],
) -> tuple[SsdLook, ...]:
    users: dict[str, list[CacheLook]] = {}
    for cache in caches:
        for disk in cache.ssds:
            users.setdefault(disk, []).append(cache)
    out = []
    for disk, on in sorted(users.items()):
        dev = inventory.by_name(disk) if inventory is not None else None
        devnode = dev.devnode if dev is not None else f"/dev/{disk}"
        wear, why = (None, "SMART needs root") if not root else _smart(runner, devnode)
        unknown = why if why in (NO_WEAR, NO_SMARTCTL) else ""
        if why and not unknown:  # no wear reported, or no smartmontools (only recommended): nothing failed
            unread.append((f"the wear of {devnode}", why))
        measured = [write_rate(c.past + ((c.sample,) if c.sample else ())) for c in on]
        spans = [m for m in measured if m is not None]
        rate: float | None = None
        source = ""
        if spans and min(span for _, span in spans) >= RATE_SPAN_SECONDS:
            rate, source = sum(r for r, _ in spans), "sampler"
        elif wear is not None and wear.data_written_bytes and wear.power_on_hours:
            rate, source = wear.data_written_bytes / (wear.power_on_hours * 3600), "smart"
        out.append(SsdLook(disk, devnode, tuple(c.name for c in on), wear, rate, source, wear_unknown=unknown))
    return tuple(out)


def from_snapshot(inventory: Inventory, now: float) -> Look:
    """A saved snapshot: the caches discovery found, with neither their live status, their samples
    nor their SSDs' SMART, which are the machine's and were not saved."""
    caches = tuple(
        CacheLook(name, _kind_of(dev), device=dev, ssds=()) for name, dev in sorted(cache_devices(inventory).items())
    )
    unread = (("the caches' live status, samples and SSD wear", "this is a saved snapshot, not a live machine"),)
    return Look(now, False, inventory.root, inventory, caches, (), inventory.memory_bytes, unread)
