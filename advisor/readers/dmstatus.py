"""``dmsetup status`` lines of dm-cache and dm-writecache targets, parsed into dataclasses.

Formats from the kernel's Documentation/admin-guide/device-mapper/cache.rst and
writecache.rst; fixtures captured in the lab (tests/fixtures/lab-recommend/dmsetup-status-cache.txt,
tests/fixtures/lab-readers/). ``dmsetup status NAME`` prints one line per target:
``<start> <length> <target> <target's own fields>``.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.errors import Described, codes
from advisor.runner import CommandError, CommandRunner

codes({"dm-status-unreadable": "{why}"})


class StatusError(Described, ValueError):
    """The line is not a status line of the expected target."""

    CODE = "dm-status-unreadable"


def _fields(line: str, target: str) -> list[str]:
    fields = line.split()
    if len(fields) < 3 or fields[2] != target:
        raise StatusError(f"not a {target} status line: {line.strip()[:80]!r}")
    return fields[3:]


def _bad(target: str, exc: Exception, line: str) -> StatusError:
    return StatusError(f"a {target} status line with missing or bad fields ({exc}): {line.strip()[:120]!r}")


def _ratio(text: str) -> tuple[int, int]:
    used, _, total = text.partition("/")
    return int(used), int(total)


@dataclass(frozen=True)
class CacheStatus:
    """A dm-cache target's counters. Blocks are cache blocks (chunks) of ``block_sectors``."""

    length_sectors: int
    metadata_block_sectors: int
    metadata_used: int
    metadata_total: int
    block_sectors: int
    used_blocks: int
    total_blocks: int
    read_hits: int
    read_misses: int
    write_hits: int
    write_misses: int
    demotions: int
    promotions: int
    dirty: int
    features: tuple[str, ...]
    core_args: dict[str, str]
    policy: str
    policy_args: dict[str, str]
    metadata_mode: str
    needs_check: bool

    @property
    def mode(self) -> str:
        """writethrough, writeback or passthrough (the feature the table was loaded with)."""
        return next((f for f in self.features if f in ("writethrough", "writeback", "passthrough")), "writethrough")

    @classmethod
    def parse(cls, line: str) -> CacheStatus:
        f = _fields(line, "cache")
        try:
            md_used, md_total = _ratio(f[1])
            used, total = _ratio(f[3])
            at = 11
            features = tuple(f[at + 1 : at + 1 + int(f[at])])
            at += 1 + len(features)
            core = f[at + 1 : at + 1 + int(f[at])]
            at += 1 + len(core)
            policy = f[at]
            policy_args = f[at + 2 : at + 2 + int(f[at + 1])]
            at += 2 + len(policy_args)
            return cls(
                int(line.split()[1]),
                int(f[0]),
                md_used,
                md_total,
                int(f[2]),
                used,
                total,
                int(f[4]),
                int(f[5]),
                int(f[6]),
                int(f[7]),
                int(f[8]),
                int(f[9]),
                int(f[10]),
                features,
                dict(zip(core[::2], core[1::2], strict=False)),
                policy,
                dict(zip(policy_args[::2], policy_args[1::2], strict=False)),
                f[at],
                f[at + 1] == "needs_check" if len(f) > at + 1 else False,
            )
        except (IndexError, ValueError) as exc:
            raise _bad("cache", exc, line) from None


@dataclass(frozen=True)
class WritecacheStatus:
    """A dm-writecache target's counters (blocks of the cache's block size). Kernels before 5.15
    report only the first four fields; the statistics are None there."""

    error: int
    total_blocks: int
    free_blocks: int
    writeback_blocks: int
    read_blocks: int | None = None
    read_hits: int | None = None
    write_blocks: int | None = None
    write_hits_uncommitted: int | None = None
    write_hits_committed: int | None = None
    write_bypass: int | None = None
    write_allocated: int | None = None
    write_freelist_blocked: int | None = None
    flushes: int | None = None
    discards: int | None = None

    @property
    def used_blocks(self) -> int:
        """Blocks holding data not yet written back or kept for reads (dirty, in writecache)."""
        return self.total_blocks - self.free_blocks

    @classmethod
    def parse(cls, line: str) -> WritecacheStatus:
        f = _fields(line, "writecache")
        try:
            numbers = [int(x) for x in f[:14]]
        except ValueError as exc:
            raise StatusError(f"a writecache status line with bad fields ({exc}): {line.strip()[:120]!r}") from None
        if len(numbers) < 4:
            raise StatusError(f"a writecache status line with missing fields: {line.strip()[:120]!r}")
        return cls(*numbers)


@dataclass(frozen=True)
class RaidStatus:
    """A dm-raid target's status (dm-raid.rst): ``<raid_type> <#devices> <health_chars>
    <sync_ratio> <sync_action> <mismatch_cnt> [<data_offset> <journal_char>]``. A health
    character per leg: ``A`` alive and in sync, ``a`` alive and recovering, ``D`` dead."""

    raid_type: str
    legs: str  # the health characters, one per leg: "AA", "AD", "aA"
    synced: int
    total: int
    sync_action: str

    @property
    def dead(self) -> int:
        return self.legs.count("D")

    @property
    def in_sync(self) -> bool:
        return self.synced == self.total and "a" not in self.legs and not self.dead

    @classmethod
    def parse(cls, line: str) -> RaidStatus:
        f = _fields(line, "raid")
        try:
            synced, total = _ratio(f[3])
            if len(f[2]) != int(f[1]) or set(f[2]) - set("AaD"):
                raise ValueError(f"health {f[2]!r} for {f[1]} devices")
            return cls(f[0], f[2], synced, total, f[4])
        except (IndexError, ValueError) as exc:
            raise _bad("raid", exc, line) from None


@dataclass(frozen=True)
class Health:
    """What a dm-cache, dm-writecache or dm-raid status line says of the target's health: the
    kernel's own words in ``said``. A dm-cache that failed prints only ``Fail`` (or ``Error``
    when even its status could not be read; dm-cache-target.c's cache_status); dm-writecache
    prints the error number it stopped on first (writecache.rst); dm-raid a ``D`` per dead leg."""

    failed: bool = False
    read_only: bool = False  # dm-cache's metadata switched to read-only after an error
    needs_check: bool = False  # dm-cache asks for cache_check before its next activation
    error: int = 0  # dm-writecache's error number (-5: EIO)
    dead_legs: int = 0  # dm-raid
    legs: int = 0
    said: str = ""

    @property
    def ok(self) -> bool:
        return not (self.failed or self.read_only or self.needs_check or self.dead_legs)


def health(line: str) -> Health | None:
    """The health in one ``dmsetup status`` line (``<start> <length> <target> ...``) of a cache,
    writecache or raid target; None for other targets and for lines that say nothing readable."""
    fields = line.split()
    if len(fields) < 4:
        return None
    target = fields[2]
    try:
        if target == "cache":
            if fields[3] in ("Fail", "Error"):
                return Health(failed=True, said=fields[3])
            s = CacheStatus.parse(line)
            said = " ".join(
                w for w in (s.metadata_mode if s.metadata_mode == "ro" else "", "needs_check" * s.needs_check) if w
            )
            return Health(read_only=s.metadata_mode == "ro", needs_check=s.needs_check, said=said)
        if target == "writecache":
            error = int(fields[3])
            return Health(failed=error != 0, error=error, said=f"error {error}" if error else "")
        if target == "raid":
            r = RaidStatus.parse(line)
            return Health(dead_legs=r.dead, legs=len(r.legs), said=r.legs if r.dead or not r.in_sync else "")
    except (StatusError, ValueError):
        return None
    return None


def dm_name(vg: str, lv: str) -> str:
    """The device-mapper name lvm2 gives VG/LV (a '-' in either is doubled)."""
    return f"{vg.replace('-', '--')}-{lv.replace('-', '--')}"


def cache_status(runner: CommandRunner, vg: str, lv: str) -> CacheStatus | None:
    """The live dm-cache status of a cached LV, or None when it cannot be read (not cached, gone).

    Read from the kernel, not lvs: lvconvert holds the VG lock while it flushes, and lvs would
    wait for it."""
    try:
        out = runner.run(["dmsetup", "status", dm_name(vg, lv)], timeout=10, check=False)
        return CacheStatus.parse(out.stdout) if out.returncode == 0 else None
    except (CommandError, StatusError):
        return None


def writecache_status(runner: CommandRunner, vg: str, lv: str) -> WritecacheStatus | None:
    """The live dm-writecache status of an LV, or None when it cannot be read (as cache_status)."""
    try:
        out = runner.run(["dmsetup", "status", dm_name(vg, lv)], timeout=10, check=False)
        return WritecacheStatus.parse(out.stdout) if out.returncode == 0 else None
    except (CommandError, StatusError):
        return None
