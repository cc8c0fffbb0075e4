"""Sizes, durations and rates: parsed from what people type, formatted for what they read.

The one place for units, shared by the CLI, the TUI, recipes and reasons. Parsers raise
:class:`UnitError` (a ValueError) with a sentence naming the text that was not understood.
"""

from __future__ import annotations

import math
import re

from advisor.errors import Described, codes

KiB, MiB, GiB, TiB = 1 << 10, 1 << 20, 1 << 30, 1 << 40
# bcache's default sequential_cutoff: streams longer than this bypass the cache (the analysis,
# the recommendation and the bcache recipe all start from it).
BCACHE_SEQUENTIAL_CUTOFF = 4 * MiB
SIZE_SUFFIX = {"": 0, "k": 10, "m": 20, "g": 30, "t": 40}
DURATION_SUFFIX = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
MAX_DURATION = 31 * 86400


codes({"bad-unit": "{why}"})


class UnitError(Described, ValueError):
    """Text that is not a size, duration or rate."""

    CODE = "bad-unit"


MAX_SIZE = 1 << 60  # 1 EiB: far beyond any disk; larger numbers are typing mistakes


def parse_size(text: str, minimum: int = 1, maximum: int = MAX_SIZE) -> int:
    """'4k', '32KiB', '1g', '65536' -> bytes (binary multiples), between ``minimum`` and
    ``maximum``."""
    match = re.fullmatch(r"\s*(\d{1,20})\s*([kmgt]?)(i?b)?\s*", text.lower())
    if match is None:
        raise UnitError(f"not a size: {text!r} (use 4k, 256m, 40g or a number of bytes)")
    value = int(match[1]) << SIZE_SUFFIX[match[2]]
    if value < minimum:
        raise UnitError(
            f"{text.strip()} is too small (at least {human_size(minimum)})"
            if minimum > 1
            else f"a size of {text.strip()} is zero"
        )
    if value > maximum:
        raise UnitError(f"{text.strip()} is too large (at most {human_size(maximum)})")
    return value


def parse_duration(text: str) -> float:
    """'90', '90s', '10m', '2h', '7d' -> seconds (more than zero)."""
    match = re.fullmatch(r"\s*(\d{1,9}(?:\.\d{1,9})?)\s*([smhd]?)\s*", text.lower())
    if match is None or float(match[1]) <= 0:
        raise UnitError(f"not a duration: {text!r} (use 90s, 10m, 2h or 7d)")
    seconds = float(match[1]) * DURATION_SUFFIX[match[2]]
    if seconds > MAX_DURATION:
        raise UnitError(f"{text.strip()} is longer than {MAX_DURATION // 86400:.0f} days")
    return seconds


def human_size(n: int) -> str:
    """1073741824 -> '1.0 GiB' (binary units, one decimal; bytes as a whole number)."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if value < 1023.95 or unit == "PiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover - the loop always returns


def cache_size(n: float) -> str:
    """A cache or data size in a sentence: '1.5 GiB' from a GiB up, else whole MiB ('256 MiB')."""
    if n >= GiB:
        return f"{n / GiB:.1f} GiB"
    return f"{n / MiB:.0f} MiB"


def latency(ms: float) -> str:
    """A latency in the unit that fits it: 4.16 -> '4.16 ms', 0.057 -> '57 µs', 0.0085 -> '8.5 µs'
    (flash reads in tens of microseconds, which '0.00 ms' would hide)."""
    if ms >= 1:
        return f"{ms:,.2f} ms"
    us = ms * 1000
    return f"{us:.0f} µs" if us >= 10 else f"{us:.1f} µs"


def duration(seconds: float | None) -> str:
    """90 -> '90 s', 600 -> '10 min', 10800 -> '3.0 h', 10 days -> '10 days'; None -> 'unknown'."""
    if seconds is None or math.isnan(seconds):
        return "unknown"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 3 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.0f} days"


def rate(per_second: float, what: str = "IOPS") -> str:
    """12345.6 -> '12,346 IOPS'; with what='/s', '12,346/s'."""
    return f"{per_second:,.0f}{'' if what.startswith('/') else ' '}{what}"
