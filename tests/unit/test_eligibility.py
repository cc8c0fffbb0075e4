"""Which devices the guided flows offer for each part, and why a device is refused, without a
screen: on the lab's real discovery snapshots."""

from __future__ import annotations

from advisor.disks.collect import RawSystem
from advisor.disks.devices import Inventory
from advisor.disks.discovery import build_inventory
from advisor.disks.eligibility import fast_candidates, fast_refusal, probe_key, removable, slow_candidates, slow_refusal
from screens.phrases import TUI
from tests.conftest import FIXTURES


def lab(name: str) -> Inventory:
    return build_inventory(RawSystem.load(FIXTURES / name))


def refusals(inv: Inventory) -> dict[str, str | None]:
    out = {}
    for d in slow_candidates(inv):
        r = slow_refusal(inv, d)
        out[d.name] = r.code if r else None
    return out


def test_the_slow_device_may_be_a_disk_partition_or_lv_and_a_cached_one_is_refused_with_its_reason() -> None:
    inv = lab("lab-scan/raw-udev.json")
    found = refusals(inv)
    assert found["dm-1"] is None and found["sda"] is None  # an LV, a free disk
    assert found["bcache0"] == found["sdd"] == "slow-cached"  # a cache is there already
    assert found["sdc"] == "slow-partitioned" and found["sdc1"] == "slow-in-use"
    assert not any(d.lvm and d.lvm.role == "pv" for d in slow_candidates(inv)), "a PV is never offered: its LV is"
    cached = slow_refusal(inv, next(d for d in inv.devices if d.name == "bcache0"))
    assert cached is not None and "Remove a cache on the start screen" in TUI.word(cached)


def test_layers_that_are_not_caches_are_refused_with_what_can_be_done_instead() -> None:
    inv = lab("lab-caches/raw-layers.json")
    found = refusals(inv)
    assert found["dm-0"] == "slow-cached" and found["sde1"] == found["sde2"] == "slow-is-layer"
    zfs = slow_refusal(inv, next(d for d in inv.devices if d.name == "sde1"))
    assert zfs is not None and "L2ARC" in TUI.word(zfs)


def test_the_fast_side_is_free_and_never_the_slow_device_or_what_it_is_built_on() -> None:
    inv = lab("lab-scan/raw-udev.json")
    lv = next(d for d in inv.devices if d.name == "dm-1")  # labvg/data, on sdb
    fast = [d.name for d in fast_candidates(inv, lv)]
    assert "sdb" not in fast and "dm-1" not in fast and "nvme0n1" in fast
    assert "sdc" not in fast, "a disk with partitions: one of them is offered instead"
    busy = next(d for d in inv.devices if d.name == "sdc1")
    refusal = fast_refusal(inv, [busy])
    assert refusal is not None and refusal.code == "fast-in-use"
    assert fast_refusal(inv, [next(d for d in inv.devices if d.name == "nvme0n1")]) is None


def test_removable_caches_are_listed_once_and_probes_follow_identity() -> None:
    assert [d.name for d in removable(lab("lab-caches/raw-layers.json"))] == ["dm-0", "dm-4"]
    assert [d.name for d in removable(lab("lab-scan/raw-udev.json"))] == ["bcache0"]  # not its backing sdd
    nvme = next(d for d in lab("lab-scan/raw-udev.json").devices if d.name == "nvme0n1")
    assert probe_key(nvme) == nvme.identity != nvme.name
