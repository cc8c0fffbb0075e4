"""Rich renderables for the headless CLI (tables printed once, no live display)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from rich.console import Group
from rich.table import Table
from rich.text import Text

from advisor.devices import Device, Inventory
from advisor.probe import ProbeResult
from advisor.units import human_size

if TYPE_CHECKING:  # numpy stays unloaded for the commands that only print tables
    from advisor.workload import Analysis

STATE_STYLE = {"free": "green", "has-data": "yellow", "in-use": "red"}


def rotational_word(dev: Device) -> str:
    return {True: "yes", False: "no", None: "?"}[dev.rotational]


def devices_table(inv: Inventory, show_all: bool = False) -> Table:
    """Devices grouped by disk; under each name its stable path (or identity) in dim."""
    table = Table(title=f"Block devices on {inv.hostname}", title_justify="left")
    table.add_column("Device / stable path", overflow="fold", ratio=3)
    table.add_column("Size", justify="right", no_wrap=True)
    table.add_column("Bus", no_wrap=True)
    table.add_column("Rot", no_wrap=True)
    table.add_column("Role", ratio=1)
    table.add_column("State", ratio=3)
    for depth, dev in inv.tree(show_all):
        indent = "  " * depth
        cell = Text(indent + ("└ " if depth else "") + dev.name, style="bold")
        where = dev.stable_path or dev.identity
        if where:
            cell.append("\n" + indent + ("  " if depth else "") + where, style="dim")
        table.add_row(
            cell,
            human_size(dev.size_bytes),
            dev.transport or "",
            rotational_word(dev),
            dev.role or dev.kind,
            Text(dev.in_use_reason, style=STATE_STYLE[dev.state]),
        )
    return table


def probe_table(results: list[ProbeResult]) -> Table:
    table = Table(title="Measured devices", title_justify="left")
    table.add_column("Device", no_wrap=True)
    table.add_column("Kernel says", no_wrap=True)
    table.add_column("Measured", no_wrap=True)
    table.add_column("p50 / p99 (QD1)", justify="right", no_wrap=True)
    table.add_column("IOPS (QD32)", justify="right", no_wrap=True)
    table.add_column("Seq MB/s", justify="right", no_wrap=True)
    table.add_column("Why", ratio=1)
    for r in results:
        qd1, qd32, seq = r.phase("randread-qd1"), r.phase("randread-qd32"), r.phase("seqread-1m")
        kernel = {True: "rotational", False: "non-rotational", None: "?"}[r.kernel_rotational]
        c = r.classification
        measured = Text(f"{c.device_class} ({c.confidence})", style="yellow" if c.disagreements else "green")
        lat = f"{qd1.lat_p50_ms:.2f} / {qd1.lat_p99_ms:.2f} ms" if qd1 and qd1.lat_p50_ms and qd1.lat_p99_ms else "-"
        table.add_row(
            r.device, kernel, measured, lat,
            f"{qd32.iops:,.0f}" if qd32 else "-", f"{seq.mbps:,.0f}" if seq else "-", c.reason,
        )
    return table


def curve_plot(sizes: list[int], hits: list[float], block_size: int, width: int = 60, height: int = 11) -> str:
    """The hit-ratio curve as text: cache size (log scale) across, hit ratio up."""
    if not sizes:
        return "(no curve)"
    lo, hi = math.log(sizes[0]), math.log(max(sizes[-1], sizes[0] + 1))
    grid = [[" "] * width for _ in range(height)]
    for size, hit in zip(sizes, hits, strict=True):
        x = min(width - 1, int((math.log(size) - lo) / (hi - lo) * (width - 1))) if hi > lo else 0
        y = min(height - 1, int(hit * (height - 1) + 0.5))
        for yy in range(y + 1):
            grid[height - 1 - yy][x] = "█" if yy == y else (grid[height - 1 - yy][x] if grid[height - 1 - yy][x] != " " else "·")
    lines = []
    for i, row in enumerate(grid):
        label = f"{1 - i / (height - 1):4.0%} " if i % 3 == 0 or i == height - 1 else "      "
        lines.append(label + "".join(row))
    left, right = human_size(sizes[0] * block_size), human_size(sizes[-1] * block_size)
    lines.append("      " + left + " " * max(1, width - len(left) - len(right)) + right)
    lines.append("      cache size (log scale) → LRU hit ratio")
    return "\n".join(lines)


def analysis_report(a: Analysis) -> Group:
    summary = Table.grid(padding=(0, 2))
    summary.add_column(style="bold")
    summary.add_column()
    total = a.read_requests + a.write_requests
    summary.add_row("Trace", f"{a.source} ({a.source_format}, {a.lines:,} lines, {a.bad_lines} malformed)")
    summary.add_row("Requests", f"{a.requests:,} over {a.duration_s:,.1f} s ({a.iops:,.0f} IOPS); "
                    f"{a.read_requests / total:.0%} reads, {a.write_requests / total:.0%} writes")
    summary.add_row("Footprint", f"{human_size(a.footprint_bytes)} ({a.footprint_blocks:,} blocks of {human_size(a.block_size)})")
    summary.add_row("Sequential", f"{a.sequential_share:.0%} of requests continue the previous one")
    summary.add_row("Sizes", ", ".join(f"{k}: {v:,}" for k, v in a.size_histogram.items()))
    hot = ", ".join(f"{s:.0%} of I/O → {f:.1%} of the data ({human_size(n * a.block_size)})"
                    for s, f, n in zip(a.hot_shares, a.hot_footprint_fraction, a.hot_blocks, strict=True))
    summary.add_row("Hot data", hot)
    summary.add_row("Zipf fit", f"alpha ≈ {a.zipf_alpha:.2f}" if a.zipf_alpha is not None else "too few repeated blocks to fit")
    for example in a.bad_examples:
        summary.add_row("Malformed", Text(example, style="yellow"))
    return Group(summary, Text(""), Text(curve_plot(a.curve_sizes_blocks, a.curve_hit_ratio, a.block_size)))
