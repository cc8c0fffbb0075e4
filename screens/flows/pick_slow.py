"""Add and Plan only, step 1: the slow device the cache goes in front of."""

from __future__ import annotations

from textual import on
from textual.widgets import DataTable

from advisor.disks.devices import Device
from advisor.disks.eligibility import slow_candidates, slow_refusal
from advisor.errors import CachewiseError
from screens.flows.picking import PickStep


class PickSlow(PickStep):
    """Step 1: the slow device the cache goes in front of, a disk, partition or LV."""

    STEP = "Slow device"
    HELP = (
        "Choose the slow device to put a cache in front of: a hard disk, a partition, or an LVM LV (lvmcache "
        "attaches to an LV in place, with its data; bcache needs a device it may format). ↑↓ move, Enter "
        "chooses. What cannot take a cache (a device already in a cache, a disk with partitions: choose one) is "
        "listed greyed below the rest, with the reason on the Highlighted line; an LVM PV is not listed (its LV is)."
    )

    def intro(self) -> str:
        return "Which device is slow? Choose the hard disk, partition or LV to put the cache in front of (Enter)."

    def choices(self) -> list[tuple[Device, CachewiseError | None]]:
        inv = self.flow.inventory
        return [(d, slow_refusal(inv, d)) for d in slow_candidates(inv)]

    @on(DataTable.RowSelected, "#pick")
    def _chosen(self, _event: DataTable.RowSelected) -> None:
        dev = self.current
        if dev is None or self.refused(dev):
            return
        self.flow.slow = dev
        self.nav.step(self.flow, "Fast device")
