"""Remove, step 1: the cached device to take the cache from, with its dirty data now."""

from __future__ import annotations

import asyncio

from rich.text import Text
from textual import on, work
from textual.coordinate import Coordinate
from textual.widgets import DataTable, Static

from advisor.backends import listed
from advisor.disks.devices import Device
from advisor.disks.eligibility import caches_unknown, removable
from advisor.errors import CachewiseError
from advisor.units import human_size
from cachewise.core import discover, plans, watch
from recipes.removal import RemoveOptions
from screens.flows.model import Flow
from screens.flows.picking import PickStep
from screens.phrases import TUI


class PickCached(PickStep):
    """Remove, step 1: the cached device to take the cache from."""

    STEP = "Cached device"
    HELP = (
        f"The caches cachewise can remove: {listed('and')}. Each shows its mode "
        "and its dirty data, which is written back to the slow device before the cache is detached. Enter "
        "previews the plan; nothing runs before you type the device's name."
    )

    def intro(self) -> str:
        return "Which cache goes? Dirty data is flushed to the slow device first, with a countdown (Enter)."

    def __init__(self, flow: Flow) -> None:
        super().__init__(flow)
        self.dirty: dict[str, str] = {}  # cache name (VG/LV, bcacheN) -> its dirty data, as the kernel says now

    def columns(self) -> tuple[str, ...]:
        return ("Device", "Size", "Cache", "State", "Dirty")

    @staticmethod
    def cache_name(dev: Device) -> str:
        return f"{dev.lvm.vg}/{dev.lvm.lv}" if dev.lvm is not None and dev.lvm.lv else dev.name

    def row(self, dev: Device) -> tuple[object, ...]:
        c = dev.caching
        assert c is not None
        dirty = self.dirty.get(self.cache_name(dev))
        if dirty is None:  # not read (yet): what discovery saw (bcache's dirty_data), else a wait
            seen = dev.bcache.dirty_bytes if dev.bcache is not None else None
            dirty = (
                ("none" if seen == 0 else human_size(seen))
                if seen is not None
                else ("not in the snapshot" if self.core.replay else "not reported" if self.dirty else "reading…")
            )
        return self.greyed(
            dev,
            (
                self.name_cell(dev),
                human_size(dev.size_bytes),
                c.kind,
                Text(c.state, style="bold red" if c.degraded or c.failed else ""),
                dirty,
            ),
        )

    def fill(self) -> None:
        super().fill()
        if self.devices and not self.core.replay:  # a snapshot's caches are not here to read
            self._read_dirty()

    @work(thread=True, group="dirty", exclusive=True, description="read each cache's dirty data", exit_on_error=False)
    def _read_dirty(self) -> None:
        found = {}
        for ref, sample in watch.status(self.core).rows:
            if sample is None:
                found[ref.name] = "unreadable"
            elif sample.dirty_bytes is not None:
                found[ref.name] = human_size(sample.dirty_bytes) if sample.dirty_bytes else "none"
        self.app.call_from_thread(self._dirty_read, found)

    def _dirty_read(self, found: dict[str, str]) -> None:
        self.dirty = found
        table = self.query_one("#pick", DataTable)
        last = len(self.columns()) - 1
        for i, dev in enumerate(self.devices):
            table.update_cell_at(Coordinate(i, last), self.row(dev)[-1])

    def choices(self) -> list[tuple[Device, CachewiseError | None]]:
        """Every cache; a mirror that lost one SSD is not offered: it is repaired first."""
        out: list[tuple[Device, CachewiseError | None]] = []
        for dev in removable(self.flow.inventory):
            c = dev.caching
            degraded = c is not None and c.degraded and not c.failed
            why = CachewiseError("mirror-degraded", trouble=c.trouble, next=list(c.next)) if c and degraded else None
            out.append((dev, why))
        return out

    def empty(self) -> str:
        unknown = caches_unknown(self.flow.inventory)
        if unknown:
            return (
                f"cachewise could not read which caches this machine has ({unknown}), so it cannot say there are "
                "none. Start it as root (sudo cachewise) to remove one. Esc goes back."
            )
        return f"this machine has no {listed()} cache cachewise can remove. Esc goes back."

    def on_screen_resume(self) -> None:
        """Back from a removal: the list shows what is cached now, once the disks are read again."""
        if not getattr(self, "_shown", False):  # the first showing: the list is fresh
            self._shown = True
            return
        if self.is_mounted:
            self.query_one("#pick", DataTable).clear()
            self.devices = []
            self.query_one("#pick-current", Static).update(Text("Reading the caches again…", style="dim"))
            self._rescan()

    @work(group="rescan", exclusive=True, description="rescan after a removal", exit_on_error=False)
    async def _rescan(self) -> None:
        self.flow.inventory = await asyncio.to_thread(discover.scan, self.core)
        self.fill()

    @on(DataTable.RowSelected, "#pick")
    def _chosen(self, _event: DataTable.RowSelected) -> None:
        dev = self.current
        if dev is None or self.refused(dev):
            return
        try:
            plan = plans.make(
                self.core, self.flow.inventory, "remove", RemoveOptions(device=dev.devnode, free_ssd=True)
            )
        except CachewiseError as exc:
            if exc.code == "rescue-loses-data":  # a dead SSD held writes: asked, then planned with the loss named
                self._rescue(dev, exc)
                return
            self.refuse(exc)
            return
        self.nav.apply(plan, flow=self.flow)

    @work(group="rescue", exclusive=True, description="ask before a rescue that loses data", exit_on_error=False)
    async def _rescue(self, dev: Device, why: CachewiseError) -> None:
        question = (
            f"{self.label(dev)}: {TUI.sentence(why)}\n\nTake the cache off anyway? The origin then runs on its own "
            "without those blocks; a backup restores them. The preview that follows says it again."
        )
        if not await self.nav.ask_accept_loss(question):
            return
        options = RemoveOptions(device=dev.devnode, free_ssd=True, accept_data_loss=True)
        try:
            plan = plans.make(self.core, self.flow.inventory, "remove", options)
        except CachewiseError as exc:
            self.refuse(exc)
            return
        self.nav.apply(plan, flow=self.flow)
