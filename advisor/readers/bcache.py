"""bcache's sysfs files, read and parsed into a dataclass.

A backing device (and its bcacheN) has a ``bcache/`` directory in sysfs with ``state``,
``cache_mode`` (``[writethrough] writeback writearound none``), sizes printed by the kernel's
``bch_hprint`` (``0.0k``, ``8.7M``: powers of 1024, at least one unit step) and statistics
under ``stats_total/``, ``stats_day/``, ``stats_hour/`` and ``stats_five_minute/``. A cache
device's directory has ``set`` (a link to the cache set). Fixture: every file of a lab bcache
pair in tests/fixtures/lab-scan/bcache-sysfs.tsv and tests/fixtures/lab-readers/.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

# What discovery keeps of each bcache directory (RawSystem), and the links it follows.
DISCOVERY_FILES = ("state", "cache_mode", "dirty_data", "backing_dev_uuid", "backing_dev_name", "label", "running")
LINKS = ("set", "cache", "dev")
STATS_PERIODS = ("stats_total", "stats_day", "stats_hour", "stats_five_minute")
STATS_FILES = ("cache_hits", "cache_misses", "cache_bypass_hits", "cache_bypass_misses", "cache_miss_collisions")
STATE_FILES = (
    "state",
    "cache_mode",
    "dirty_data",
    "sequential_cutoff",
    "writeback_percent",
    "writeback_rate",
    "writeback_running",
    "running",
    "label",
    "backing_dev_uuid",
    "backing_dev_name",
)
HPRINT_UNITS = "kMGTPEZY"


def hprint_bytes(text: str | None) -> int | None:
    """The kernel's bch_hprint text back to a number: '8.7M' -> 9122611, '0.0k' -> 0, '512' -> 512."""
    if text is None:
        return None
    match = re.fullmatch(r"\s*(-?\d+(?:\.\d+)?)\s*([kMGTPEZY]?)\s*", text)
    if match is None:
        return None
    scale = 1024 ** (HPRINT_UNITS.index(match[2]) + 1) if match[2] else 1
    return int(float(match[1]) * scale)


def hprint(value: int) -> str:
    """A number as the kernel's bch_hprint prints it (drivers/md/bcache/util.c): divided by 1024
    at least once and while it has more than three digits, with one digit of the remainder after
    the point: 4194304 -> '4.0M', 0 -> '0.0k', 512 -> '0.5k'. The inverse of :func:`hprint_bytes`
    only to that one digit, so a value set in bytes is compared with sysfs in this form."""
    q, unit, rest = abs(value), 0, 0
    while True:
        unit += 1
        rest, q = q & 1023, q >> 10
        if q < 1000:
            break
    return f"{'-' if value < 0 else ''}{q}.{rest * 10 // 1024}{'?kMGTPEZY'[unit]}"


def selected(choices: str | None) -> str | None:
    """'[writethrough] writeback writearound none' -> 'writethrough'."""
    if not choices:
        return None
    match = re.search(r"\[([^\]]+)\]", choices)
    return match.group(1) if match else choices.strip()


def _read(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace").strip()
    except OSError:
        return None


def read_files(directory: Path, names: tuple[str, ...], links: tuple[str, ...] = ()) -> dict[str, str]:
    """The named files of a sysfs directory that can be read (values stripped), and the targets'
    base names of the named links."""
    out: dict[str, str] = {}
    for name in names:
        value = _read(directory / name)
        if value is not None:
            out[name] = value
    for name in links:
        target = directory / name
        if target.is_symlink():
            out[name] = os.path.basename(os.readlink(target))
    return out


@dataclass(frozen=True)
class Stats:
    hits: int
    misses: int
    bypass_hits: int
    bypass_misses: int

    @property
    def hit_ratio(self) -> float | None:
        total = self.hits + self.misses
        return self.hits / total if total else None


@dataclass(frozen=True)
class BcacheState:
    """A backing device as its bcache directory describes it."""

    state: str | None  # "clean", "dirty", "no cache", "inconsistent"
    cache_mode: str | None
    dirty_bytes: int | None
    sequential_cutoff_bytes: int | None
    writeback_percent: int | None
    writeback_rate_bytes: int | None  # per second
    running: bool | None
    stats: dict[str, Stats]  # by period: "stats_total", "stats_day", ...
    writeback_running: bool | None = None  # False: writeback switched off, dirty data cannot go down

    @property
    def clean(self) -> bool:
        return self.state in ("clean", "no cache")

    @classmethod
    def parse(cls, files: Mapping[str, str]) -> BcacheState:
        """From {relative file name: contents}, as :func:`read_files` returns them."""
        stats = {}
        for period in STATS_PERIODS:
            values = [_int(files.get(f"{period}/{name}")) for name in STATS_FILES[:4]]
            if all(v is not None for v in values):
                stats[period] = Stats(*values)  # type: ignore[arg-type]
        running = files.get("running")
        writeback_running = files.get("writeback_running")
        return cls(
            state=files.get("state"),
            cache_mode=selected(files.get("cache_mode")),
            dirty_bytes=hprint_bytes(files.get("dirty_data")),
            sequential_cutoff_bytes=hprint_bytes(files.get("sequential_cutoff")),
            writeback_percent=_int(files.get("writeback_percent")),
            writeback_rate_bytes=hprint_bytes(files.get("writeback_rate")),
            running=None if running is None else running == "1",
            stats=stats,
            writeback_running=None if writeback_running is None else writeback_running == "1",
        )


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def read_state(bcache_dir: Path) -> BcacheState | None:
    """The state of the backing device whose sysfs ``bcache/`` directory this is; None if gone."""
    if not bcache_dir.is_dir():
        return None
    names = STATE_FILES + tuple(f"{p}/{n}" for p in STATS_PERIODS for n in STATS_FILES[:4])
    return BcacheState.parse(read_files(bcache_dir, names))
