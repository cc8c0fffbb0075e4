"""Add and Plan only, step 2: the SSD(s) that hold the cache."""

from __future__ import annotations

from textual import on
from textual.binding import Binding
from textual.widgets import DataTable

from advisor.disks.devices import Device
from advisor.disks.eligibility import fast_choices, fast_refusal
from advisor.errors import CachewiseError
from screens.flows.model import Flow
from screens.flows.picking import PickStep


class PickFast(PickStep):
    """Step 2: the SSD(s) that hold the cache."""

    STEP = "Fast device"
    BINDINGS = [Binding("space", "toggle_mark", "Mark")]
    HELP = (
        "Choose the SSD (or two, for a mirrored cache) that will hold the cache: Space marks, Enter goes on "
        "with the marked ones (or the highlighted one when none is marked). Whatever is on a device it uses is "
        "destroyed; the preview says so before anything runs. Hard disks, devices in use and what the slow "
        "device is built on are listed greyed below, with the reason on the Highlighted line."
    )

    def __init__(self, flow: Flow) -> None:
        super().__init__(flow)
        self.marked: list[str] = [d.name for d in flow.fast]

    def intro(self) -> str:
        slow = self.flow.slow
        return (
            f"Which SSD caches {self.label(slow) if slow else '?'}? Space marks one or two, Enter goes on "
            "(with the highlighted one when none is marked)."
        )

    def columns(self) -> tuple[str, ...]:
        return ("", *super().columns())

    def row(self, dev: Device) -> tuple[object, ...]:
        return ("●" if dev.name in self.marked else " ", *super().row(dev))

    def choices(self) -> list[tuple[Device, CachewiseError | None]]:
        return fast_choices(self.flow.inventory, self.flow.slow, self.flow.probes)

    def empty(self) -> str:
        return "no free SSD, partition or md array besides the slow device. Esc goes back."

    def action_toggle_mark(self) -> None:
        dev = self.current
        if dev is None or (dev.name not in self.marked and self.refused(dev)):
            return
        if dev.name in self.marked:
            self.marked.remove(dev.name)
        elif len(self.marked) >= 2:
            self.notify("Two SSDs at most (a mirrored cache); unmark one first.", severity="warning")
            return
        else:
            self.marked.append(dev.name)
        row = self.query_one("#pick", DataTable).cursor_row
        self.fill()
        self.query_one("#pick", DataTable).move_cursor(row=row)

    @on(DataTable.RowSelected, "#pick")
    def _chosen(self, _event: DataTable.RowSelected) -> None:
        inv = self.flow.inventory
        names = self.marked or ([self.current.name] if self.current else [])
        fast = [d for d in (inv.by_name(n) for n in names) if d is not None]
        if not fast or any(self.refused(d) for d in fast):
            return
        refusal = fast_refusal(inv, fast)
        if refusal is not None:
            self.refuse(refusal)
            return
        self.flow.fast = fast
        self.nav.step(self.flow, "Measure" if self.flow.kind == "add" else "Workload")
