"""Human-readable sizes, shared by the CLI tables and the TUI."""

from __future__ import annotations


def human_size(n: int) -> str:
    """1073741824 -> '1.0 GiB' (binary units, one decimal; bytes as a whole number)."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if value < 1023.95 or unit == "PiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover - the loop always returns
