"""Rich renderables for the headless CLI (tables printed once, no live display)."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from advisor.devices import Device, Inventory
from advisor.probe import ProbeResult
from advisor.units import human_size

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
