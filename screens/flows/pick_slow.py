"""Add and Plan only, step 1: the slow device the cache goes in front of."""

from __future__ import annotations

from textual import on
from textual.widgets import DataTable

from advisor.disks.devices import Device
from advisor.disks.eligibility import slow_candidates, slow_refusal
from screens.flows.steps import DeviceStep


class PickSlow(DeviceStep):
    """Step 1: the slow device the cache goes in front of, a disk, partition or LV."""

    STEP = "Slow device"
    HELP = (
        "Choose the slow device to put a cache in front of: a hard disk, a partition, or an LVM LV (lvmcache "
        "attaches to an LV in place, with its data; bcache needs a device it may format). ↑↓ move, Enter "
        "chooses. A device already in a cache, an LVM PV (choose its LV) or a disk with partitions (choose one) "
        "is refused with the reason."
    )

    def intro(self) -> str:
        return "Which device is slow? Choose the hard disk, partition or LV to put the cache in front of (Enter)."

    def candidates(self) -> list[Device]:
        return slow_candidates(self.flow.inventory)

    @on(DataTable.RowSelected, "#pick")
    def _chosen(self, _event: DataTable.RowSelected) -> None:
        dev = self.current
        if dev is None:
            return
        refusal = slow_refusal(self.flow.inventory, dev)
        if refusal is not None:
            self.refuse(refusal)
            return
        self.flow.slow = dev
        self.nav.step(self.flow, "Fast device")
