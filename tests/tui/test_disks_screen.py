"""Headless tests of the Disks screen with a fake discovery backend that replays lab captures."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console
from textual.widgets import DataTable, Static

from advisor.disks.collect import RawSystem
from advisor.disks.devices import Inventory
from advisor.disks.discovery import build_inventory
from advisor.history import DB_NAME, History
from cachewise.core import Core
from screens.app import CachewiseApp
from screens.disks import DevicesChanged, DisksScreen
from tests.conftest import LAB_SCAN


class FakeDiscovery:
    """Returns the given inventories in turn (the last one repeats); counts calls."""

    def __init__(self, *inventories: Inventory, fail: Exception | None = None) -> None:
        self.inventories = list(inventories)
        self.calls: list[bool] = []
        self.changed: list[object] = []
        self.fail = fail

    def scan(self, quick: bool = False, should_stop: object = None, changed: object = None) -> Inventory:
        self.calls.append(quick)
        self.changed.append(changed)
        if self.fail is not None:
            raise self.fail
        return self.inventories.pop(0) if len(self.inventories) > 1 else self.inventories[0]


def lab_inventory() -> Inventory:
    return build_inventory(RawSystem.load(LAB_SCAN / "raw-udev.json"))


def detail_text(app: CachewiseApp) -> str:
    """What the detail pane shows, as plain text."""
    console = Console(width=120, record=True, file=io.StringIO())
    content = app.screen.query_one("#detail", Static).content
    console.print(content)
    return console.export_text()


def table(app: CachewiseApp) -> DataTable[object]:
    return app.screen.query_one("#devices", DataTable)


async def test_disks_screen_lists_devices_grouped_by_disk() -> None:
    inv = lab_inventory()
    app = CachewiseApp(Core(FakeDiscovery(inv), live=False), watch_hotplug=False)
    async with app.run_test(size=(160, 45)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert isinstance(app.screen, DisksScreen)
        keys = [str(k.value) for k in table(app).rows]
        assert keys == [d.name for _, d in inv.tree()]
        assert "devices; " in str(app.screen.query_one("#status", Static).render())


async def test_arrow_keys_move_selection_and_update_detail() -> None:
    inv = lab_inventory()
    app = CachewiseApp(Core(FakeDiscovery(inv), live=False), watch_hotplug=False)
    async with app.run_test(size=(160, 45)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, DisksScreen)
        first = screen.selected_name
        assert first is not None and f"{first} (" in detail_text(app)
        await pilot.press("down")
        second = screen.selected_name
        assert second is not None and second != first
        assert f"{second} (" in detail_text(app) and f"{first} (" not in detail_text(app)
        await pilot.press("up")
        assert screen.selected_name == first


async def test_detail_pane_shows_identity_and_in_use_reason() -> None:
    inv = lab_inventory()
    pv = next(d for d in inv.devices if d.serial == "LVM0001")
    app = CachewiseApp(Core(FakeDiscovery(inv), live=False), watch_hotplug=False)
    async with app.run_test(size=(160, 45)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        keys = [str(k.value) for k in table(app).rows]
        for _ in range(keys.index(pv.name)):
            await pilot.press("down")
        text = detail_text(app)
        assert "serial:LVM0001" in text and "PV of VG labvg" in text
        assert "in use because LVM physical volume of VG labvg" in text


async def test_a_toggles_loop_devices() -> None:
    inv = lab_inventory()
    app = CachewiseApp(Core(FakeDiscovery(inv), live=False), watch_hotplug=False)
    async with app.run_test(size=(160, 45)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert not any(str(k.value).startswith("loop") for k in table(app).rows)
        assert "hidden (h: show them)" in str(app.screen.query_one("#status", Static).content)
        await pilot.press("h")
        assert any(str(k.value).startswith("loop") for k in table(app).rows)
        status = str(app.screen.query_one("#status", Static).content)
        assert "hidden" not in status and "(h: hide them)" in status, "the status line follows the toggle"
        await pilot.press("h")
        assert not any(str(k.value).startswith("loop") for k in table(app).rows)


async def test_hotplug_removal_shows_at_once_then_rescans() -> None:
    inv = lab_inventory()
    hot = next(d for d in inv.devices if d.serial == "HOT0001")
    after = inv.without({hot.name})
    fake = FakeDiscovery(inv, after)
    app = CachewiseApp(Core(fake, live=False), watch_hotplug=False)
    async with app.run_test(size=(160, 45)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert hot.name in table(app).rows
        app.screen.post_message(DevicesChanged([("remove", hot.name)]))
        await pilot.pause()
        assert hot.name not in table(app).rows  # before any rescan finished
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert hot.name not in table(app).rows
        assert True in fake.calls, "a quick scan follows a hot-plug event"
        assert fake.calls[-1] is False, "and a full scan after it"


async def test_hotplug_addition_appears() -> None:
    inv = lab_inventory()
    hot = next(d for d in inv.devices if d.serial == "HOT0001")
    fake = FakeDiscovery(inv.without({hot.name}), inv)
    app = CachewiseApp(Core(fake, live=False), watch_hotplug=False)
    async with app.run_test(size=(160, 45)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert hot.name not in table(app).rows
        app.screen.post_message(DevicesChanged([("add", hot.name)]))
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert hot.name in table(app).rows
        assert {hot.name} in fake.changed, "the quick pass re-reads only the device that changed"


async def test_discovery_failure_is_shown_not_fatal() -> None:
    app = CachewiseApp(Core(FakeDiscovery(lab_inventory(), fail=OSError("sysfs unreadable")), live=False), watch_hotplug=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        text = detail_text(app)
        assert "Discovery failed: sysfs unreadable" in text and "Nothing was changed" in text


async def test_first_scan_is_recorded_in_history(tmp_path: Path) -> None:
    app = CachewiseApp(Core(FakeDiscovery(lab_inventory()), state_dir=tmp_path, live=False), watch_hotplug=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.press("r")
        await app.workers.wait_for_complete()
    with History(tmp_path / DB_NAME) as hist:
        assert len(hist.snapshots()) == 1


async def test_q_quits() -> None:
    app = CachewiseApp(Core(FakeDiscovery(lab_inventory()), live=False), watch_hotplug=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0
