"""Rich renderables for the headless CLI (tables printed once, no live display)."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from advisor.devices import Device, Inventory

STATE_STYLE = {"free": "green", "has-data": "yellow", "in-use": "red"}


def human_size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if value < 1024 or unit == "PiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


def rotational_word(dev: Device) -> str:
    return {True: "yes", False: "no", None: "?"}[dev.rotational]


def devices_table(inv: Inventory, show_all: bool = False) -> Table:
    table = Table(title=f"Block devices on {inv.hostname}", title_justify="left", expand=False)
    table.add_column("Device", no_wrap=True)
    table.add_column("Kind")
    table.add_column("Size", justify="right")
    table.add_column("Bus")
    table.add_column("Rot")
    table.add_column("Identity")
    table.add_column("Role")
    table.add_column("State")
    for depth, dev in inv.tree(show_all):
        name = Text(("  " * depth) + ("└ " if depth else "") + dev.name)
        table.add_row(
            name,
            dev.kind,
            human_size(dev.size_bytes),
            dev.transport or "",
            rotational_word(dev),
            dev.stable_path or dev.identity or "",
            dev.role,
            Text(dev.in_use_reason, style=STATE_STYLE[dev.state]),
        )
    return table
