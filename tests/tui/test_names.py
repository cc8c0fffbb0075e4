"""Devices named one way in the TUI (issue 30): the stable name (VG/LV, the by-id name) with the
kernel name beside it, in the pick lists and the confirmation; the pick lists offer only what can
be planned and grey the rest with its reason (the SSD list offers no hard disk, no mounted
partition, no bcachefs member); the confirmation accepts any of the target's names, completes
them, and refuses every other device's."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from rich.text import Text
from textual.widgets import DataTable, Input, Static

from advisor.disks.collect import RawSystem
from advisor.disks.devices import Caching, Inventory
from advisor.disks.discovery import build_inventory
from advisor.disks.eligibility import fast_choices
from cachewise.core import Core
from recipes.lvmcache import CacheSpec, lvmcache_attach
from screens.app import CachewiseApp
from screens.apply import ApplyScreen
from screens.flows.pick_fast import PickFast
from screens.flows.pick_slow import PickSlow
from screens.names import device_label, fold, label, names
from tests.tui.test_apply_screen import FakeExecutor
from tests.tui.test_disks_screen import FakeDiscovery, lab_inventory
from tests.tui.test_fit import assert_fits
from tests.tui.test_same_recommendation import RAW

SIZES = [(80, 24), (200, 55)]


def test_the_stable_name_short_with_the_kernel_name_beside_it() -> None:
    inv = lab_inventory()
    by = {d.name: d for d in inv.devices}
    assert device_label(by["dm-1"], inv) == "labvg/data (dm-1)"
    assert device_label(by["nvme0n1"], inv) == "nvme-QEMU_NVMe_Ctrl_NVME0001 (nvme0n1)"
    assert device_label(by["dm-0"], inv) == "mapper/labplain (dm-0)"  # never taken for a kernel name
    assert device_label(by["loop0"], inv) == "loop0"  # nothing stable: the kernel name alone
    # Short as long as it stays unique: when another device answers to it, the whole path.
    assert label("/dev/disk/by-id/ata-X_1", "/dev/sdb", taken={"ata-X_1"}) == "/dev/disk/by-id/ata-X_1 (sdb)"
    assert names("/dev/labvg/data", "/dev/dm-1") == ("/dev/labvg/data", "labvg/data", "/dev/dm-1", "dm-1")
    folded = fold("scsi-0QEMU_QEMU_HARDDISK_PART0001-part1 (sdc1)", 24)
    assert folded.replace("\n", " ").split() == ["scsi-0QEMU_QEMU_", "HARDDISK_PART0001-part1", "(sdc1)"]
    assert max(map(len, folded.splitlines())) <= 24 and folded.splitlines()[0].endswith("_")


def test_the_ssd_side_offers_only_free_ssds_and_says_why_not_for_the_rest() -> None:
    inv = lab_inventory()
    lv = inv.by_name("dm-1")
    why = {d.name: (r.code if r else None) for d, r in fast_choices(inv, lv)}
    assert [n for n, code in why.items() if code is None] == ["nvme0n1", "sdg"]
    assert why["sda"] == why["sdf"] == "fast-rotational"  # hard disks, as the kernel says
    assert why["sdc1"] == "fast-in-use" and why["sdb"] == "fast-holds-slow" and why["sdc"] == "fast-partitioned"
    # A probe that measured it an SSD beats the kernel's flag; one that measured it a disk refuses it.
    ssd = type("P", (), {"classification": type("C", (), {"device_class": "ssd", "reason": "fast"})()})()
    hdd = type("P", (), {"classification": type("C", (), {"device_class": "hdd", "reason": "4 ms reads"})()})()
    sda, sdg = inv.by_name("sda"), inv.by_name("sdg")
    assert sda is not None and sdg is not None and sda.identity and sdg.identity
    measured = {d.name: r for d, r in fast_choices(inv, lv, {sda.identity: ssd, sdg.identity: hdd})}  # type: ignore[dict-item]
    refused = measured["sdg"]
    assert measured["sda"] is None and refused is not None and "4 ms reads" in refused.what


def with_bcachefs_member(inv: Inventory, name: str) -> Inventory:
    """``name`` made a bcachefs member, which blkid does not name (free, to a first look)."""
    dev = inv.by_name(name)
    assert dev is not None and dev.state == "free"
    member = dataclasses.replace(dev, caching=Caching("bcachefs", "bcachefs member", "file system member",
                                                      "add the SSD with bcachefs device add"))
    return dataclasses.replace(inv, devices=tuple(member if d is dev else d for d in inv.devices))


def cells(table: DataTable[object], row: int) -> list[str]:
    return [c.plain if isinstance(c, Text) else str(c) for c in table.get_row_at(row)]


@pytest.mark.parametrize("size", SIZES)
async def test_pick_lists_name_devices_one_way_and_grey_what_cannot_be_planned(size: tuple[int, int],
                                                                              tmp_path: Path) -> None:
    inv = with_bcachefs_member(lab_inventory(), "sdg")
    app = CachewiseApp(Core(FakeDiscovery(inv), executor=FakeExecutor(), state_dir=tmp_path, live=False),
                       watch_hotplug=False, start=True)
    async with app.run_test(size=size) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.press("enter")  # Add an SSD cache
        await app.workers.wait_for_complete()
        await pilot.pause()
        slow = app.screen
        assert isinstance(slow, PickSlow)
        await assert_fits(app, pilot)
        table = slow.query_one("#pick", DataTable)
        for i, dev in enumerate(slow.devices):  # every row named one way; the offered ones first
            assert "".join(cells(table, i)[0].split()) == "".join(device_label(dev, inv).split())  # folded or not
            assert (dev in slow.offered) == (i < len(slow.offered))
            assert (cells(table, i)[-1] == "not offered") == (dev not in slow.offered)
        bcache = next(i for i, d in enumerate(slow.devices) if d.name == "bcache0")
        table.move_cursor(row=bcache)
        await pilot.pause()
        current = str(slow.query_one("#pick-current", Static).content)
        assert "(bcache0)" in current and "not offered" in current and "already cached" in current
        await pilot.press("enter")  # refused with its reason, the step stays
        await pilot.pause()
        assert app.screen is slow and any("already cached" in n.message for n in app._notifications)
        table.move_cursor(row=next(i for i, d in enumerate(slow.devices) if d.name == "dm-1"))
        await pilot.pause()
        assert "labvg/data (dm-1)" in str(slow.query_one("#pick-current", Static).content)
        await pilot.press("enter")
        await pilot.pause()
        fast = app.screen
        assert isinstance(fast, PickFast)
        await assert_fits(app, pilot)
        assert "labvg/data (dm-1)" in str(fast.query_one("#pick-intro", Static).content)
        # No hard disk, no mounted partition, no bcachefs member, nothing the LV is on is offered.
        assert [d.name for d in fast.offered] == ["nvme0n1"]
        greyed = {d.name for d in fast.devices} - {"nvme0n1"}
        assert {"sda", "sdf", "sdc1", "sdb", "sdg"} <= greyed
        for name, why in (("sdg", "bcachefs"), ("sdc1", "mounted"), ("sda", "hard disk")):
            row = next(i for i, d in enumerate(fast.devices) if d.name == name)
            fast.query_one("#pick", DataTable).move_cursor(row=row)
            await pilot.pause()
            current = str(fast.query_one("#pick-current", Static).content)
            assert f"({name})" in current and "not offered" in current and why in current, current
            assert "free" not in cells(fast.query_one("#pick", DataTable), row)  # never labelled free
            await pilot.press("space")  # cannot be marked either
            await pilot.pause()
            assert fast.marked == [] and app.screen is fast
        await pilot.press("enter")  # Enter on a greyed one: refused, the step stays
        await pilot.pause()
        assert app.screen is fast and any("hard disk" in n.message for n in app._notifications)


@pytest.mark.parametrize("size", SIZES)
async def test_the_confirmation_accepts_the_targets_names_completes_them_and_refuses_others(
        size: tuple[int, int], tmp_path: Path) -> None:
    inv = lab_inventory()
    plan = lvmcache_attach(inv, "labvg/data", "nvme0n1", CacheSpec(256 << 20))
    executor = FakeExecutor()
    app = CachewiseApp(Core(FakeDiscovery(inv), executor=executor, state_dir=tmp_path, live=False),
                       watch_hotplug=False)
    async with app.run_test(size=size) as pilot:
        await app.workers.wait_for_complete()
        screen = ApplyScreen(plan)
        await app.push_screen(screen)
        for _ in range(200):  # the checks pass; the run waits for the name (its worker does not end)
            await pilot.pause(0.02)
            if screen.checked:
                break
        hint = str(screen.query_one("#confirm-hint", Static).content)
        assert "labvg/data (dm-1)" in hint and "/dev/labvg/data" not in hint
        await assert_fits(app, pilot)
        box = screen.query_one("#confirm-name", Input)
        box.focus()
        for other in ("nvme0n1", "/dev/nvme0n1", plan.roles()["ssd"], "sdb", "labvg/dat"):  # another device's
            box.value = other
            await pilot.press("enter")
            await pilot.pause()
            assert "did not match labvg/data (dm-1)" in str(screen.query_one("#apply-status", Static).content)
        assert executor.applied == []
        box.value = ""
        await pilot.press(*"lab")
        await pilot.pause()
        assert box._suggestion == "labvg/data"  # offered as the rest of the name, greyed
        await pilot.press("right")  # taken
        assert box.value == "labvg/data"
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert len(executor.applied) == 1 and screen.outcome == "done"


@pytest.mark.parametrize("typed", ["dm-1", "/dev/dm-1", "/dev/labvg/data", "labvg/data"])
async def test_any_name_of_the_target_confirms(typed: str, tmp_path: Path) -> None:
    inv = lab_inventory()
    plan = lvmcache_attach(inv, "labvg/data", "nvme0n1", CacheSpec(256 << 20))
    executor = FakeExecutor()
    app = CachewiseApp(Core(FakeDiscovery(inv), executor=executor, state_dir=tmp_path, live=False),
                       watch_hotplug=False)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = ApplyScreen(plan)
        await app.push_screen(screen)
        await pilot.pause()
        screen.query_one("#confirm-name", Input).value = typed
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert len(executor.applied) == 1, typed


def test_a_snapshots_pick_lists_are_named_the_same_way(tmp_path: Path) -> None:
    inv = build_inventory(RawSystem.load(RAW))
    labels = {d.name: device_label(d, inv) for d in inv.devices}
    assert labels["sda"] == "wwn-0x5000c500a1b2c3d4 (sda)" and labels["dm-1"] == "labvg/data (dm-1)"
