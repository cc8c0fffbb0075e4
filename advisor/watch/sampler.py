"""What every cache on the host is doing now: one :class:`Sample` per cache per tick.

Sources, each read the cheapest way the kernel offers:

- dm-cache (lvmcache) and dm-writecache: one ``dmsetup table`` when the caches are found (which
  devices are the origin and the cache), then one ``dmsetup status`` per tick for all of them
  (advisor.readers.dmstatus parses the lines). lvm2's names come from the dm names.
- bcache: the backing device's sysfs ``bcache/`` directory (state, cache_mode, dirty_data,
  stats_*, writeback_rate) and its cache set's ``cache_available_percent``; the fill (buckets
  holding data) from the cache device's ``priority_stats``, which walks every bucket in the
  kernel, so it is read only every ``fill_every`` seconds.
- I/O of the origin and the cache device: ``/sys/class/block/NAME/stat``.

Every sample keeps what it was computed from (``raw``), so a test can parse it independently.
Nothing here writes anywhere.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, Protocol

from advisor.disks.failure import Failure
from advisor.errors import Described, codes, next_step
from advisor.readers import bcache as bcache_reader
from advisor.readers import dmstatus
from advisor.readers.dmstatus import CacheStatus, StatusError, WritecacheStatus
from advisor.runner import CommandError, CommandRunner

SECTOR = 512
CacheKind = Literal["dm-cache", "dm-writecache", "bcache"]


codes({"not-a-cache": "{why}"})


class WatchError(Described):
    """The target is not a cache this machine has; the message says what to do."""

    CODE = "not-a-cache"


@dataclass(frozen=True)
class Io:
    """Completed requests and sectors of a block device since boot (/sys/class/block/X/stat)."""

    reads: int
    read_sectors: int
    writes: int
    write_sectors: int

    @classmethod
    def parse(cls, text: str) -> Io | None:
        f = text.split()
        if len(f) < 7:
            return None
        return cls(int(f[0]), int(f[2]), int(f[4]), int(f[6]))


@dataclass(frozen=True)
class CacheRef:
    """A cache found on the host: its kind, the names it goes by, and its devices (kernel names)."""

    kind: CacheKind
    name: str  # what the user calls it: "labvg/data", "bcache0"
    device: str  # the kernel name of the cached device: "dm-3", "bcache0"
    origin: str | None  # the slow device's kernel name
    cache: str | None  # the fast device's kernel name (dm-cache's data device, bcache's cache)
    dm_name: str | None = None  # dm targets: the device-mapper name
    block_bytes: int | None = None  # writecache's block size (dm-cache's comes with each status)
    bcache_dir: str | None = None  # bcache: the backing device's sysfs bcache/ directory
    set_dir: str | None = None  # bcache: the cache set's directory under /sys/fs/bcache
    mode: str | None = None  # dm targets: the mode their table was loaded with
    parts: tuple[str, ...] = ()  # dm targets: kernel names of the cache's own devices (dm-cache's metadata too)

    def aliases(self) -> set[str]:
        names = {self.name, self.device, f"/dev/{self.device}"}
        if self.dm_name:
            names |= {self.dm_name, f"/dev/mapper/{self.dm_name}"}
        if self.kind == "bcache" and self.origin:
            names |= {self.origin, f"/dev/{self.origin}"}
        if "/" in self.name:
            names.add(f"/dev/{self.name}")
        return names


@dataclass(frozen=True)
class Sample:
    """One reading of one cache. Counters are the kernel's, cumulative since the cache started
    (dm) or was registered (bcache); None where the kind has no such counter."""

    t: float  # seconds since the epoch
    target: str
    kind: CacheKind
    mode: str | None
    # "ok", "dirty", or what went wrong (advisor/disks/failure.py: "failed", "gone", "degraded",
    # "read-only", "needs_check"), or bcache's state ("clean", "no cache" ...)
    state: str
    policy: str | None
    capacity_bytes: int | None
    used_bytes: int | None
    dirty_bytes: int | None
    hits: int | None  # read and write hits
    misses: int | None
    read_hits: int | None = None
    read_misses: int | None = None
    write_hits: int | None = None
    write_misses: int | None = None
    bypass_hits: int | None = None
    bypass_misses: int | None = None
    promotions: int | None = None  # cache blocks copied in (dm-cache)
    demotions: int | None = None
    block_bytes: int | None = None  # the cache's block (chunk) size
    writeback_bytes: int | None = None  # dm-writecache: being written back now
    writeback_rate_bytes: int | None = None  # bcache: the writeback rate per second
    writeback_percent: int | None = None  # bcache: dirty share it keeps on purpose
    writeback_running: bool | None = None  # bcache: False when its writeback is switched off
    errors: int | None = None
    device_io: Io | None = None  # the cached device itself: what its users ask for
    origin_io: Io | None = None
    cache_io: Io | None = None
    raw: dict[str, str] = field(default_factory=dict)
    # What is wrong with the cache, in a sentence (advisor/disks/failure.py; '' when all is well),
    # and the devices under its cache that are gone (kernel names).
    trouble: str = ""
    missing: tuple[str, ...] = ()

    @property
    def hit_ratio(self) -> float | None:
        """Hits over all lookups since the cache started (the kernel's own totals)."""
        if self.hits is None or self.misses is None or self.hits + self.misses == 0:
            return None
        return self.hits / (self.hits + self.misses)

    def to_json(self, raw: bool = True) -> dict[str, Any]:
        data = asdict(self)
        if not raw:
            data.pop("raw")
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Sample:
        values = dict(data)
        for key in ("device_io", "origin_io", "cache_io"):
            if isinstance(values.get(key), dict):
                values[key] = Io(**values[key])
        if isinstance(values.get("missing"), list):
            values["missing"] = tuple(values["missing"])
        return cls(**{k: v for k, v in values.items() if k in cls.__dataclass_fields__})


def _devname(sys_root: Path, devnum: str) -> str | None:
    """The kernel name of the block device major:minor ("253:3" -> "dm-3")."""
    link = sys_root / "dev" / "block" / devnum
    try:
        return os.path.basename(os.readlink(link))
    except OSError:
        return None


def _lvm_name(dm_name: str) -> str:
    """ "vg--x-lv" -> "vg-x/lv" (lvm2 doubles each '-' inside the VG and LV names)."""
    parts = re.split(r"(?<!-)-(?!-)", dm_name, maxsplit=1)
    if len(parts) != 2 or not parts[1]:
        return dm_name
    return "/".join(p.replace("--", "-") for p in parts)


def _dm_lines(text: str) -> Iterable[tuple[str, str]]:
    """``dmsetup table`` or ``status`` of every device: (name, the line after "name: ")."""
    for line in text.splitlines():
        name, sep, rest = line.partition(": ")
        if sep and rest.strip():
            yield name, rest


_TARGETS = {"dm-cache": "cache", "dm-writecache": "writecache"}


def _failed(ref: CacheRef, now: float, **more: Any) -> Sample:
    """A failed cache's sample: the kernel gives it no counters."""
    return Sample(now, ref.name, ref.kind, ref.mode, "failed", None, None, None, None, None, None, **more)


def _target(line: str) -> str:
    """The target of a ``dmsetup status`` line ("start length target ...")."""
    words = line.split()
    return words[2] if len(words) > 2 else ""


class SampleSource(Protocol):
    """Where samples come from: this machine's kernel (:class:`Sampler`), or a recording played
    back (advisor/watch/recorded.py)."""

    unread: list[str]

    def caches(self) -> list[CacheRef]: ...
    def find(self, target: str) -> CacheRef: ...
    def sample(self, refs: list[CacheRef]) -> list[Sample]: ...


class Sampler:
    """Finds the caches on the host and reads them. ``sys_root`` is /sys except in tests."""

    def __init__(
        self, runner: CommandRunner, sys_root: Path = Path("/sys"), fill_every: float = 10.0, clock: Any = time.time
    ) -> None:
        self.runner = runner
        self.sys = sys_root
        self.fill_every = fill_every
        self.clock = clock
        self._fill: dict[str, tuple[float, int | None]] = {}  # bcache: when the fill was read, and it
        # What the last look for caches could not read (device-mapper's table): the caches it
        # found are then not all there are.
        self.unread: list[str] = []

    # -- finding caches --

    def caches(self) -> list[CacheRef]:
        """Every dm-cache, dm-writecache and bcache device on the host, in name order (see
        :attr:`unread` for what could not be looked at)."""
        self.unread = []
        return sorted(self._dm_caches() + self._bcaches(), key=lambda c: c.name)

    def _dmsetup(self, what: str) -> str:
        if self.runner.which("dmsetup") is None:
            self.unread.append("device-mapper's tables: dmsetup is not installed")
            return ""
        try:
            out = self.runner.run(["dmsetup", what], timeout=10, check=False)
        except CommandError as exc:
            self.unread.append(f"device-mapper's tables: {exc.what}")
            return ""
        if out.returncode != 0:
            said = out.stderr.strip().splitlines()[-1] if out.stderr.strip() else f"exit code {out.returncode}"
            self.unread.append(f"device-mapper's tables: `dmsetup {what}` failed ({said})")
            return ""
        return out.stdout

    def _dm_caches(self) -> list[CacheRef]:
        found = []
        devices: dict[str, str] | None = None
        for name, line in _dm_lines(self._dmsetup("table")):
            f = line.split()
            if len(f) < 7 or f[2] not in ("cache", "writecache"):
                continue
            devices = self._dm_devices() if devices is None else devices
            device = devices.get(name)
            if f[2] == "cache":  # <metadata dev> <cache dev> <origin dev> <block size> <#features> <features>...
                cache, origin, block = _devname(self.sys, f[4]), _devname(self.sys, f[5]), None
                kind: CacheKind = "dm-cache"
                meta = _devname(self.sys, f[3])
                parts = tuple(p for p in (meta, cache) if p)
                mode = next((m for m in f[8:] if m in ("writethrough", "writeback", "passthrough")), None)
            else:  # <p|s> <origin dev> <cache dev> <block size> ...
                origin, cache, block = _devname(self.sys, f[4]), _devname(self.sys, f[5]), int(f[6])
                kind, parts, mode = "dm-writecache", tuple(p for p in (cache,) if p), "writeback"
            found.append(
                CacheRef(
                    kind,
                    _lvm_name(name),
                    device or name,
                    origin,
                    cache,
                    dm_name=name,
                    block_bytes=block,
                    mode=mode,
                    parts=parts,
                )
            )
        return found

    def _dm_devices(self) -> dict[str, str]:
        """Each device-mapper name's kernel name ("labvg-data" -> "dm-0"), from sysfs."""
        found = {}
        for entry in (self.sys / "block").glob("dm-*"):
            try:
                found[(entry / "dm" / "name").read_text().strip()] = entry.name
            except OSError:
                continue
        return found

    def _bcaches(self) -> list[CacheRef]:
        """Backing devices, registered or not running, by their bcache/ directories (a bcacheN's
        own bcache/ is its backing device's)."""
        found = []
        seen: set[Path] = set()
        for state in sorted((self.sys / "class" / "block").glob("*/bcache/state")):
            # bcacheN's bcache/ is a link to its backing device's own directory, which is listed
            # under the backing device's name too: each backing device once, by its own name (the
            # resolved paths alone did not tell them apart in the lab: status listed bcache0 twice)
            if state.parent.is_symlink():
                continue
            bdir = state.parent.resolve()
            if bdir in seen:
                continue
            seen.add(bdir)
            origin = bdir.parent.name
            dev_link = bdir / "dev"
            device = os.path.basename(os.readlink(dev_link)) if dev_link.is_symlink() else origin
            set_link = bdir / "cache"
            set_dir = str(set_link.resolve()) if set_link.is_symlink() else None
            cache = None
            if set_dir is not None:
                cache0 = Path(set_dir) / "cache0"
                cache = cache0.resolve().parent.name if cache0.is_symlink() else None
            found.append(CacheRef("bcache", device, device, origin, cache, bcache_dir=str(bdir), set_dir=set_dir))
        return found

    def find(self, target: str) -> CacheRef:
        """The cache the user named: an LV (vg/lv, /dev/vg/lv, /dev/mapper/...), a bcacheN or its
        backing device, by any of its names or its /dev path."""
        caches = self.caches()
        wanted = {target, target.removeprefix("/dev/")}
        try:
            if target.startswith("/dev/"):
                wanted.add(os.path.basename(os.path.realpath(target)))
        except OSError:
            pass
        for ref in caches:
            if ref.aliases() & wanted:
                return ref
        names = ", ".join(c.name for c in caches) or "none"
        if self.unread:
            raise WatchError(
                f"{target} is not among the caches cachewise could read ({names}); it could not read "
                f"{'; '.join(self.unread)}; nothing was read",
                next=[next_step("become-root")],
            )
        raise WatchError(
            f"{target} is not a cache on this machine (caches found: {names}); nothing was read",
            next=[next_step("name-cache"), next_step("see-caches")],
        )

    # -- reading them --

    def sample(self, refs: list[CacheRef]) -> list[Sample]:
        """One sample of each cache; caches that are gone are left out."""
        now = self.clock()
        status = dict(_dm_lines(self._dmsetup("status"))) if any(r.dm_name for r in refs) else {}
        out = []
        for ref in refs:
            if ref.kind == "bcache":
                sample = self._bcache(ref, now)
            else:
                line = status.get(ref.dm_name or "")
                target = _target(line) if line else ""
                if target == "error":  # lvm2 or an admin put the error target in its place
                    sample = _failed(
                        ref,
                        now,
                        trouble="its device-mapper table is the error target: every read and write of it fails",
                        raw={"status": (line or "").strip()},
                    )
                elif line and target != _TARGETS[ref.kind]:
                    # the table was loaded as another target: the cache was detached while
                    # watched (the lab's watch saw "0 1048576 linear" after an uncache); the
                    # device is no longer this cache, so it has no sample
                    sample = None
                else:
                    sample = self._dm(ref, line, now) if line else None
                    if line:
                        sample = self._troubled(ref, sample, line, status, now)
            if sample is not None:
                out.append(self._with_io(ref, sample))
        return out

    # -- what went wrong --

    def _gone_under(self, name: str) -> list[str]:
        """The devices under ``name`` that are gone: sysfs keeps a slave's name in slaves/ after
        its disk was deleted (measured on kernel 6.1), so a slave with no device was pulled."""
        gone, todo, seen = [], [name], set()
        while todo:
            current = todo.pop()
            if current in seen:
                continue
            seen.add(current)
            if not (self.sys / "class" / "block" / current).exists():
                gone.append(current)
                continue
            try:
                todo += os.listdir(self.sys / "class" / "block" / current / "slaves")
            except OSError:
                continue
        return gone

    def _dm_name_of(self, kname: str) -> str | None:
        return self._read(self.sys / "class" / "block" / kname / "dm" / "name")

    def _troubled(
        self, ref: CacheRef, sample: Sample | None, line: str, status: dict[str, str], now: float
    ) -> Sample | None:
        """The sample with what went wrong: the target's health (``Fail`` has no counters, so the
        failed cache gets a sample of its own), the devices under its cache that are gone, and
        the legs its mirror lost."""
        health = dmstatus.health(line)
        missing = tuple(sorted({g for part in ref.parts for g in self._gone_under(part)}))
        legs = [
            h
            for h in (dmstatus.health(status.get(self._dm_name_of(p) or "", "")) for p in ref.parts)
            if h is not None and h.legs
        ]
        failure = Failure(
            ref.kind,
            ref.name,
            ref.mode,
            failed=health is not None and health.failed,
            read_only=health is not None and health.read_only,
            needs_check=health is not None and health.needs_check,
            degraded=bool(legs)
            and (bool(missing) or any(h.dead_legs for h in legs))
            and all(h.legs > h.dead_legs for h in legs),
            missing=missing,
            said=health.said if health is not None else "",
        )
        if not failure.any:
            # a status line that did not parse and says nothing wrong (seen in the lab's watch,
            # once, while lvm2 reloaded the table) is no failure: no sample this time, as before
            return sample
        if sample is None:
            sample = _failed(ref, now)
        return replace(
            sample,
            state=failure.state,
            trouble=failure.sentence(),
            missing=missing,
            raw={**sample.raw, "status": line.strip()},
        )

    def _io(self, name: str | None) -> Io | None:
        if name is None:
            return None
        try:
            return Io.parse((self.sys / "class" / "block" / name / "stat").read_text())
        except (OSError, ValueError):
            return None

    def _with_io(self, ref: CacheRef, sample: Sample) -> Sample:
        return replace(
            sample, device_io=self._io(ref.device), origin_io=self._io(ref.origin), cache_io=self._io(ref.cache)
        )

    def _dm(self, ref: CacheRef, line: str, now: float) -> Sample | None:
        try:
            if ref.kind == "dm-cache":
                return self._dm_cache(ref, CacheStatus.parse(line), line, now)
            return self._writecache(ref, WritecacheStatus.parse(line), line, now)
        except StatusError:
            return None

    def _dm_cache(self, ref: CacheRef, s: CacheStatus, line: str, now: float) -> Sample:
        block = s.block_sectors * SECTOR
        state = "dirty" if s.dirty else "ok"  # what went wrong is _troubled's to say
        return Sample(
            now,
            ref.name,
            ref.kind,
            s.mode,
            state,
            s.policy,
            s.total_blocks * block,
            s.used_blocks * block,
            s.dirty * block,
            s.read_hits + s.write_hits,
            s.read_misses + s.write_misses,
            read_hits=s.read_hits,
            read_misses=s.read_misses,
            write_hits=s.write_hits,
            write_misses=s.write_misses,
            promotions=s.promotions,
            demotions=s.demotions,
            block_bytes=block,
            raw={"status": line.strip()},
        )

    def _writecache(self, ref: CacheRef, s: WritecacheStatus, line: str, now: float) -> Sample:
        block = ref.block_bytes or 4096
        state = "dirty" if s.used_blocks else "ok"  # an error is _troubled's to say
        hits = (
            None
            if s.read_hits is None
            else s.read_hits + (s.write_hits_uncommitted or 0) + (s.write_hits_committed or 0)
        )
        misses = (
            None
            if s.read_blocks is None or s.read_hits is None
            else (
                (s.read_blocks - s.read_hits)
                + (s.write_blocks or 0)
                - (s.write_hits_uncommitted or 0)
                - (s.write_hits_committed or 0)
            )
        )
        # dm-writecache keeps only written blocks: everything used is dirty until written back.
        return Sample(
            now,
            ref.name,
            ref.kind,
            "writeback",
            state,
            None,
            s.total_blocks * block,
            s.used_blocks * block,
            s.used_blocks * block,
            hits,
            misses,
            read_hits=s.read_hits,
            read_misses=None if s.read_blocks is None or s.read_hits is None else s.read_blocks - s.read_hits,
            block_bytes=block,
            writeback_bytes=s.writeback_blocks * block,
            errors=s.error,
            raw={"status": line.strip()},
        )

    def _bcache(self, ref: CacheRef, now: float) -> Sample | None:
        assert ref.bcache_dir is not None
        bdir = Path(ref.bcache_dir)
        names = bcache_reader.STATE_FILES + tuple(f"stats_total/{n}" for n in bcache_reader.STATS_FILES[:4])
        files = bcache_reader.read_files(bdir, names)
        if "state" not in files:
            return None
        st = bcache_reader.BcacheState.parse(files)
        total = st.stats.get("stats_total")
        capacity = used = None
        if ref.set_dir is not None and ref.cache is not None:
            size = self._read(self.sys / "class" / "block" / ref.cache / "size")
            capacity = int(size) * SECTOR if size and size.isdigit() else None
            used = self._bcache_used(ref, capacity, now, files)
            available = self._read(Path(ref.set_dir) / "cache_available_percent")
            if available is not None:
                files["cache_available_percent"] = available
        state = st.state or "unknown"
        failure = None
        stale = st.state == "inconsistent" and st.cache_mode != "writethrough"  # writethrough: nothing was dirty
        if stale or (ref.set_dir is None and st.state in ("clean", "dirty")):
            # the set went away (its link with it) while the device kept its state: the SSD is gone
            said = "stopped" if st.running is False and st.state != "inconsistent" else st.state or ""
            failure = Failure("bcache", ref.name, st.cache_mode, failed=True, said=said)
        return Sample(
            now,
            ref.name,
            "bcache",
            st.cache_mode,
            failure.state if failure else state,
            None,
            capacity,
            used,
            st.dirty_bytes,
            total.hits if total else None,
            total.misses if total else None,
            bypass_hits=total.bypass_hits if total else None,
            bypass_misses=total.bypass_misses if total else None,
            writeback_rate_bytes=st.writeback_rate_bytes,
            writeback_percent=st.writeback_percent,
            writeback_running=st.writeback_running,
            raw=files,
            trouble=failure.sentence() if failure else "",
        )

    def _bcache_used(self, ref: CacheRef, capacity: int | None, now: float, files: dict[str, str]) -> int | None:
        """Bytes of the cache holding data (clean, dirty, metadata), from priority_stats's
        "Unused: N%", read at most every ``fill_every`` seconds."""
        when, used = self._fill.get(ref.name, (-1e18, None))
        if now - when >= self.fill_every and capacity is not None:
            text = self._read(Path(ref.set_dir or "") / "cache0" / "priority_stats") or ""
            match = re.search(r"Unused:\s*(\d+)%", text)
            used = capacity * (100 - int(match[1])) // 100 if match else None
            if match:
                files["priority_stats/Unused"] = match[1]
            self._fill[ref.name] = (now, used)
        return used

    @staticmethod
    def _read(path: Path) -> str | None:
        try:
            return path.read_text().strip()
        except OSError:
            return None
